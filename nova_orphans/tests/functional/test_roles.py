#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""The least each command needs, against services enforcing policies.

A real keystone issues project-scoped tokens; placement validates them
through keystonemiddleware and enforces its policies, with scope and
the new defaults (fixtures/placement.py's ``[oslo_policy]``), and in
AuditorTestCase with the shipped sample (etc/policy) loaded as its
policy file. ``nova-orphans-manage`` runs in-process (the base class's
``manage``) with nova.conf's ``[placement]`` naming the user whose
roles are tested (fixtures/keystone.py's USERS).
"""

import os
import re

from nova import policies as nova_policies
from oslotest import base
from placement import policies as placement_policies
import requests
from sqlalchemy.engine import url as sa_url
import yaml

from nova_orphans.clients import policies
from nova_orphans.engine import reasons
from nova_orphans import exit_codes
from nova_orphans.repair import journal as journal_mod
from nova_orphans.tests.functional.fixtures import keystone
from nova_orphans.tests.functional import processes
from nova_orphans.tests.functional import test_keystone
from nova_orphans.tests.functional import test_keystone_osc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
POLICY = os.path.join(ROOT, 'etc', 'policy')
GRANT = ' or role:%s' % keystone.AUDITOR_ROLE


def sample(service):
    """etc/policy/SERVICE-auditor.yaml: {rule: check string}."""
    with open(os.path.join(POLICY, '%s-auditor.yaml' % service)) as f:
        return yaml.safe_load(f)


class PolicySamplesTestCase(base.BaseTestCase):
    """Each sample's rules are the installed release's (placement's and
    nova's), each keeping its default and adding the auditor's role,
    with the default's project scope.
    """

    def check(self, service, registered):
        rules = {r.name: r for r in registered}
        for name, check_str in sample(service).items():
            self.assertIn(name, rules)
            self.assertTrue(check_str.endswith(GRANT), check_str)
            self.assertIn(rules[name].check_str,
                          check_str[:-len(GRANT)].split(' or '), name)
            self.assertEqual(['project'], rules[name].scope_types, name)

    def test_placement(self):
        self.check('placement', placement_policies.list_rules())
        # Never a project rule: placement's handlers check against the
        # caller's own project.
        self.assertNotIn('project_id', str(sample('placement')))
        self.assertEqual(
            {'list', 'show'},
            {name.rsplit(':', 1)[1] for name in sample('placement')})

    def test_nova(self):
        self.check('nova', nova_policies.list_rules())

    def test_roles_table(self):
        """clients/policies.ROLES against the installed releases'
        defaults: placement's are admin or service, nova's admin's
        (context_is_admin; os-migrations:index a project manager's too,
        for its own project only).
        """
        placement = {r.name: r.check_str
                     for r in placement_policies.list_rules()}
        nova = {r.name: r.check_str for r in nova_policies.list_rules()}
        admin = {'rule:context_is_admin', 'role:admin', 'rule:admin_api'}
        for policy, granted in policies.ROLES.items():
            if policy.startswith('placement:'):
                check = placement[policy]
                # A base rule (admin_or_service_api) stands for it.
                check = placement.get(check[len('rule:'):], check)
                self.assertEqual('role:admin or role:service', check,
                                 policy)
                self.assertEqual(policies.ADMIN_OR_SERVICE, granted)
            elif policy in nova:
                check = nova[policy]
                check = nova.get(check[len('rule:'):], check)
                self.assertEqual(policies.ADMIN, granted, policy)
                self.assertTrue(any(a in check for a in admin),
                                (policy, check))
        self.assertEqual('role:admin', nova['context_is_admin'])

    def test_neutron(self):
        """neutron is not installed here: its two read rules, read from
        neutron's neutron/conf/policies/port.py.
        """
        rules = sample('neutron')
        self.assertEqual(['get_port', 'get_port:binding:profile'],
                         sorted(rules))
        for check_str in rules.values():
            self.assertTrue(check_str.endswith(GRANT), check_str)


class RolesBase(test_keystone.KeystoneTestCase):
    """The cloud of test_keystone's tests, and the tool run in-process
    as one user or another.
    """

    def setUp(self):
        super().setUp()
        self.cloud = processes.Cloud(self, deleted=1, strangers=2,
                                     evacuated=1, returned=1, live=1)
        self.before = self.cloud.state()

    def expected_rows(self):
        """(consumer, reason, action) of every orphan of the cloud."""
        cloud = self.cloud
        return sorted(
            [(vm, reasons.DELETED_INSTANCE, reasons.DELETE_CONSUMER)
             for vm in cloud.deleted] +
            [(c, reasons.UNKNOWN_CONSUMER, reasons.DELETE_CONSUMER)
             for c in cloud.strangers] +
            [(vm, reasons.EVACUATED_SOURCE, reasons.REMOVE_PROVIDER)
             for vm in cloud.evacuated] +
            [(mig, reasons.FINISHED_MIGRATION, reasons.RETURN_TO_INSTANCE)
             for _vm, mig in cloud.returned])

    def conf(self, user):
        return self.password_conf(name='%s.conf' % user, user=user)

    def run_tool(self, user, category, action, *argv, rc):
        """``CATEGORY ACTION --format json ARGV`` as ``user`` (run_json),
        ending with ``rc``: its rows and stderr.
        """
        _code, found = self.run_json(category, action, *argv,
                                     conf_file=self.conf(user), codes=rc)
        return found or [], self.stderr

    def rows(self, found):
        return sorted((r['consumer'], r['reason'], r['action'])
                      for r in found)

    def gone_node(self):
        """The provider of a compute node nova deleted with its service,
        placement's tree kept, as nova 27 and later trait it.
        """
        gone = self.add_node('gone')
        self.placement._ok('PUT', '/resource_providers/%s/traits' % gone, {
            'resource_provider_generation': self.placement._ok(
                'GET', '/resource_providers/%s' % gone).json()['generation'],
            'traits': ['COMPUTE_NODE']})
        for table in ('compute_nodes', 'services'):
            self.nova.execute('cell1', "UPDATE %s SET deleted = id WHERE "
                              "host = 'gone'" % table)
        return gone


class ServiceRoleTestCase(RolesBase):
    """Every command of ``nova-orphans-manage`` with a placement user
    holding only ``service``, as nova's own ``[placement]`` user does,
    but without admin.
    """

    USER = 'nova-orphans'

    def test_user_holds_service_only(self):
        _password, project, roles = keystone.USERS[self.USER]
        self.assertEqual((keystone.SERVICE_PROJECT, ('service',)),
                         (project, roles))

    def test_allocations_list_clean_restore(self):
        found, _err = self.run_tool(self.USER, 'allocations', 'list',
                                    rc=exit_codes.ORPHANS_FOUND)
        self.assertEqual(self.expected_rows(), self.rows(found))

        journal = os.path.join(self.tmp, 'journal.jsonl')
        found, _err = self.run_tool(self.USER, 'allocations', 'clean',
                                    '--journal', journal,
                                    rc=exit_codes.REPAIRED)
        self.assertEqual(self.expected_rows(), self.rows(found))
        self.assertEqual({'done'}, {r['outcome'] for r in found})
        self.assertEqual(self.cloud.repaired(self.before),
                         self.cloud.state())
        moved = [vm for vm, _mig in self.cloud.returned]
        self.assertEqual(
            sorted({c for c, _r, _a in self.expected_rows()} | set(moved)),
            sorted({c for e in journal_mod.load(journal).entries
                    for c in e['consumers']}))

        found, _err = self.run_tool(self.USER, 'allocations', 'restore',
                                    '--journal', journal,
                                    rc=exit_codes.REPAIRED)
        self.assertEqual({'done'}, {r['outcome'] for r in found})
        self.assertEqual(self.before, self.cloud.state())

    def test_providers_list_clean_restore(self):
        gone = self.gone_node()
        before = self.placement.providers_state()
        found, _err = self.run_tool(self.USER, 'providers', 'list',
                                    rc=exit_codes.ORPHANS_FOUND)
        self.assertEqual([(gone, reasons.DELETED_COMPUTE_NODE,
                           reasons.DELETE_PROVIDER)],
                         [(r['uuid'], r['reason'], r['action'])
                          for r in found])

        journal = os.path.join(self.tmp, 'providers.jsonl')
        found, _err = self.run_tool(self.USER, 'providers', 'clean',
                                    '--journal', journal,
                                    rc=exit_codes.REPAIRED)
        self.assertEqual([(gone, 'done')],
                         [(r['uuid'], r['outcome']) for r in found])
        self.assertEqual(404, self.placement.request(
            'GET', '/resource_providers/%s' % gone).status_code)

        found, _err = self.run_tool(self.USER, 'providers', 'restore',
                                    '--journal', journal,
                                    rc=exit_codes.REPAIRED)
        self.assertEqual({'done'}, {r['outcome'] for r in found})
        self.assertEqual(before, self.placement.providers_state())

    def test_refused_without_the_role(self):
        """Enforced: the auditor without the sample's overrides, and the
        admin with a system-scoped token, are refused the first read,
        exit code 9, nothing written.
        """
        _found, err = self.run_tool('auditor', 'allocations', 'list',
                                    rc=exit_codes.CREDENTIALS_REFUSED)
        self.assertEqual(
            "ERROR: Placement request GET /resource_providers failed: 403: "
            "placement's policy refused placement:resource_providers:list "
            "(granted by default to the admin or service role, on a "
            "project)", err.strip())
        conf = self.nova_conf(self.system_section(), name='system.conf')
        self.run_json('allocations', 'clean', conf_file=conf,
                      codes=exit_codes.CREDENTIALS_REFUSED)
        self.assertEqual(
            'ERROR: Placement request GET /resource_providers failed: 403: '
            'placement refused placement:resource_providers:list to a token '
            'not scoped to a project: use a project-scoped token (the admin '
            'or service role on a project)', self.stderr.strip())
        self.assertEqual(self.before, self.cloud.state())

        # placement's own answers (request ids aside).
        self.assertEqual((403, {
            'status': 403, 'title': 'Forbidden',
            'code': 'placement.undefined_code',
            'detail': 'Access was denied to this resource.\n\n Policy '
                      'does not allow placement:resource_providers:list to '
                      'be performed.  '}),
            self.placement_answer(self.keystone.token(
                'auditor', keystone.USERS['auditor'][0],
                keystone.SERVICE_PROJECT)))
        self.assertEqual((403, {
            'status': 403, 'title': 'Forbidden',
            'code': 'placement.undefined_code',
            'detail': 'Access was denied to this resource.\n\n '
                      'placement:resource_providers:list  '}),
            self.placement_answer(self.keystone.token(system=True)))

    def system_section(self):
        """``[placement]`` with the admin's system-scoped credentials."""
        section = dict(self.keystone.password_section(),
                       username=keystone.ADMIN,
                       password=keystone.ADMIN_PASSWORD, system_scope='all')
        for name in ('project_name', 'project_domain_name'):
            del section[name]
        return section

    def placement_answer(self, token):
        """(status, the one error) of GET /resource_providers with
        ``token``.
        """
        http = requests.Session()
        # A proxy from the environment must never see the test traffic.
        http.trust_env = False
        self.addCleanup(http.close)
        resp = http.get(
            self.placement.endpoint + '/resource_providers',
            headers={'X-Auth-Token': token,
                     'OpenStack-API-Version': 'placement 1.39'})
        [error] = resp.json()['errors']
        error.pop('request_id')
        return resp.status_code, error


class SelectOnlyTestCase(ServiceRoleTestCase):
    """nova-orphans-manage with database accounts that may only SELECT:
    nova's API and cell databases, and placement's for fast mode, on
    MariaDB as production runs them; placement's user holds only
    ``service``. Every command as with nova's own accounts.
    """

    MARIADB = True
    # Only the commands, again (unittest collects callable tests only).
    test_user_holds_service_only = test_refused_without_the_role = None
    READER = 'orphans_reader'
    READER_PASSWORD = 'reader-secret'

    def setUp(self):
        super().setUp()
        maria = self.nova.mariadb
        urls = dict(self.nova.cell_urls, api=self.nova.api_url,
                    placement=self.placement.db_url)
        self.databases = {name: sa_url.make_url(url).database
                          for name, url in urls.items()}
        maria.execute("CREATE USER IF NOT EXISTS '%s'@'127.0.0.1' "
                      "IDENTIFIED BY '%s'" % (self.READER,
                                              self.READER_PASSWORD))
        for database in self.databases.values():
            maria.execute("GRANT SELECT ON `%s`.* TO '%s'@'127.0.0.1'" % (
                database, self.READER))
        self.addCleanup(maria.execute, "DROP USER '%s'@'127.0.0.1'" %
                        self.READER)
        self.reader = {name: self.as_reader(url)
                       for name, url in urls.items()}
        # The cells' URLs as templates, filled from the [database]
        # connection of the one who reads them (nova does the same).
        for cell in self.nova.cell_urls:
            self.nova.set_cell_url(cell, (
                '{scheme}://{username}:{password}@{hostname}:{port}/%s'
                '?{query}' % self.databases[cell]))

    def as_reader(self, url):
        return sa_url.make_url(url).set(
            username=self.READER, password=self.READER_PASSWORD
        ).render_as_string(hide_password=False)

    def conf(self, user):
        return self.nova_conf(
            dict(test_keystone.shipped_placement_section(),
                 **self.keystone.password_section(user=user)),
            name='%s.conf' % user,
            api_database={'connection': self.reader['api']},
            database={'connection': self.reader[self.nova.local_cell]},
            placement_database={'connection': self.reader['placement']})

    def test_reader_may_only_select(self):
        """The grants are what the tests claim: a write is refused."""
        import pymysql
        maria = self.nova.mariadb
        conn = pymysql.connect(host='127.0.0.1', port=maria.port,
                               user=self.READER,
                               password=self.READER_PASSWORD,
                               database=self.databases['api'],
                               ssl_disabled=True)
        self.addCleanup(conn.close)
        with conn.cursor() as cur:
            cur.execute('SELECT COUNT(*) FROM cell_mappings')
            self.assertEqual((len(self.nova.rows('api', 'cell_mappings')),),
                             cur.fetchone())
            e = self.assertRaises(pymysql.err.OperationalError, cur.execute,
                                  'DELETE FROM cell_mappings')
            self.assertEqual(1142, e.args[0])


class AuditorTestCase(RolesBase):
    """The shipped placement sample loaded by placement: the auditor
    (``orphan-auditor`` only) reads what ``list`` and the dry runs read,
    and every write is refused, exit code 9, placement unchanged.
    """

    PLACEMENT_POLICY = os.path.join(POLICY, 'placement-auditor.yaml')

    def test_user_holds_the_auditor_role_only(self):
        _password, project, roles = keystone.USERS['auditor']
        self.assertEqual((keystone.SERVICE_PROJECT, (keystone.AUDITOR_ROLE,)),
                         (project, roles))

    def test_list_and_dry_runs(self):
        found, _err = self.run_tool('auditor', 'allocations', 'list',
                                    rc=exit_codes.ORPHANS_FOUND)
        self.assertEqual(self.expected_rows(), self.rows(found))
        found, _err = self.run_tool('auditor', 'allocations', 'clean',
                                    '--dry-run', rc=exit_codes.ORPHANS_FOUND)
        self.assertEqual(self.expected_rows(), self.rows(found))
        self.assertEqual(self.before, self.cloud.state())

    def test_clean_refused(self):
        """Every write refused (403): exit code 9, placement unchanged,
        and every entry the journal holds marked as never applied.
        """
        journal = os.path.join(self.tmp, 'journal.jsonl')
        found, err = self.run_tool('auditor', 'allocations', 'clean',
                                   '--journal', journal,
                                   rc=exit_codes.CREDENTIALS_REFUSED)
        self.assertEqual(self.expected_rows(), self.rows(found))
        self.assertEqual({'failed'},
                         {r['outcome'].split(':')[0] for r in found})
        # The deleted, the strangers and the evacuated: PUT each; the
        # finished migration: POST /allocations. Nothing to undo. The
        # PUTs and the POST are sent at once: the errors are numbered in
        # the order their answers came.
        lines = re.sub(r'/allocations/[0-9a-f-]{36}', '/allocations/UUID',
                       err).splitlines()
        self.assertEqual('Journal: %s' % journal, lines[-1])
        self.assertEqual(['Error 1 ', 'Error 2 '],
                         [line[:8] for line in lines[:-1]])
        self.assertEqual(sorted([
            "(4 row(s)): Placement request PUT /allocations/UUID "
            "failed: 403: placement's policy refused "
            "placement:allocations:update (granted by default to the admin "
            "or service role, on a project)",
            "(1 row(s)): Placement request POST /allocations "
            "failed: 403: placement's policy refused "
            "placement:allocations:manage (granted by default to the admin "
            "or service role, on a project)"]),
            sorted(line[8:] for line in lines[:-1]))
        self.assertEqual(self.before, self.cloud.state())
        entries = journal_mod.load(journal).entries
        self.assertEqual(len(self.expected_rows()), len(entries))
        self.assertEqual({False}, {e.get('applied') for e in entries})

    def test_providers_clean_refused(self):
        gone = self.gone_node()
        before = self.placement.providers_state()
        found, _err = self.run_tool('auditor', 'providers', 'list',
                                    rc=exit_codes.ORPHANS_FOUND)
        self.assertEqual([(gone, reasons.DELETED_COMPUTE_NODE,
                           reasons.DELETE_PROVIDER)],
                         [(r['uuid'], r['reason'], r['action'])
                          for r in found])
        journal = os.path.join(self.tmp, 'rp.jsonl')
        found, err = self.run_tool('auditor', 'providers', 'clean',
                                   '--journal', journal,
                                   rc=exit_codes.CREDENTIALS_REFUSED)
        self.assertEqual([(gone, 'failed: error 1')],
                         [(r['uuid'], r['outcome']) for r in found])
        self.assertEqual([
            "Error 1 (1 row(s)): Placement request DELETE "
            "/resource_providers/%s failed: 403: placement's policy refused "
            "placement:resource_providers:delete (granted by default to the "
            "admin or service role, on a project)" % gone,
            'Journal: %s' % journal], err.splitlines())
        self.assertEqual(before, self.placement.providers_state())
        self.assertEqual([False], [e.get('applied') for e in
                                   journal_mod.load(journal).entries])

    def test_restore_refused(self):
        """A journal the service user wrote (the sample leaves it every
        right it had): the auditor's dry run judges it, its restore is
        refused, and the repairs stay.
        """
        journal = os.path.join(self.tmp, 'journal.jsonl')
        self.run_tool('nova-orphans', 'allocations', 'clean', '--journal',
                      journal, rc=exit_codes.REPAIRED)
        repaired = self.cloud.state()
        self.assertEqual(self.cloud.repaired(self.before), repaired)
        consumers = sorted(c for c, _r, _a in self.expected_rows())
        found, _err = self.run_tool('auditor', 'allocations', 'restore',
                                    '--journal', journal, '--dry-run',
                                    rc=exit_codes.ORPHANS_FOUND)
        self.assertEqual([(c, 'skipped: dry run') for c in consumers],
                         sorted((r['consumer'], r['outcome'])
                                for r in found))
        found, err = self.run_tool('auditor', 'allocations', 'restore',
                                   '--journal', journal,
                                   rc=exit_codes.CREDENTIALS_REFUSED)
        self.assertEqual(consumers, sorted(r['consumer'] for r in found))
        self.assertEqual({'failed'},
                         {r['outcome'].split(':')[0] for r in found})
        self.assertIn("403: placement's policy refused "
                      "placement:allocations:", err)
        self.assertNotIn('To undo', err)
        self.assertEqual(repaired, self.cloud.state())


class OpenStackAuditorTestCase(test_keystone_osc.OpenStackBase):
    """``openstack`` as the auditor, placement and nova's compute API
    each loading the shipped sample: list works, clean is refused.
    """

    PLACEMENT_POLICY = os.path.join(POLICY, 'placement-auditor.yaml')
    COMPUTE_POLICY = os.path.join(POLICY, 'nova-auditor.yaml')

    def variables(self, user):
        password, project, _roles = keystone.USERS[user]
        return dict(self.os_variables(), OS_USERNAME=user,
                    OS_PASSWORD=password, OS_PROJECT_NAME=project)

    def rows(self, found):
        return sorted((r['consumer'], r['reason'], r['action'])
                      for r in found)

    def test_list_and_clean(self):
        auditor = self.variables('auditor')
        found = self.openstack(auditor, 'allocation', 'orphan', 'list',
                               rc=exit_codes.ORPHANS_FOUND)
        # What the admin (nova's own user) finds.
        admin = self.openstack(self.os_variables(), 'allocation', 'orphan',
                               'list', rc=exit_codes.ORPHANS_FOUND)
        self.assertEqual(self.orphans,
                         sorted({r['consumer'] for r in found}))
        self.assertEqual(self.rows(admin), self.rows(found))

        # nova shows another project's server by its id (GET
        # /servers/{id}, its actions) only to an admin, whatever its
        # policy says: the auditor's clean would take a live server for
        # gone, and is refused before its journal is opened.
        journal = os.path.join(self.tmp, 'journal.jsonl')
        code, out, err = self.run_openstack(
            auditor, 'allocation', 'orphan', 'clean', '--journal', journal)
        self.assertEqual((exit_codes.CREDENTIALS_REFUSED, ''), (code, out),
                         err)
        self.assertEqual(
            'ERROR: Compute request GET /servers/detail?limit=1&status='
            'DELETED failed: 403 Only administrators may list deleted '
            'instances: nova narrows the reads of a user that is not its '
            'admin (context_is_admin, granted by default to the admin role, '
            'on a project) to its own project, and a clean would take live '
            'servers for gone', err.strip())
        self.assertFalse(os.path.exists(journal))
        self.assertEqual(self.before, self.cloud.state())
        # Its dry run judges as the list did.
        found = self.openstack(auditor, 'allocation', 'orphan', 'clean',
                               '--dry-run', rc=exit_codes.ORPHANS_FOUND)
        self.assertEqual(self.rows(admin), self.rows(found))

    def test_nova_narrows_a_non_admin(self):
        """What nova answers a user that is not its admin: the listings
        of every project refused (403) without the sample, never
        narrowed; with it, the listings whole but another project's
        server by its id not found, and deleted servers refused.
        """
        http = requests.Session()
        http.trust_env = False
        self.addCleanup(http.close)

        def get(user, path):
            password, project, _roles = keystone.USERS[user]
            resp = http.get(self.compute + path, headers={
                'X-Auth-Token': self.keystone.token(user, password,
                                                    project),
                'OpenStack-API-Version': 'compute 2.69'})
            return resp.status_code, resp.json()

        def refused(policy):
            return 403, {'forbidden': {
                'code': 403, 'message': "Policy doesn't allow %s to be "
                "performed." % policy}}

        # A project's member may list its own project's servers.
        self.assertEqual(
            refused('os_compute_api:servers:detail:get_all_tenants'),
            get('demo', '/servers/detail?all_tenants=1'))
        self.assertEqual(refused('os_compute_api:os-migrations:index'),
                         get('demo', '/os-migrations'))
        self.assertEqual(refused('os_compute_api:servers:detail'),
                         get('nova-orphans', '/servers/detail?all_tenants=1'))
        live = self.cloud.live[0]
        status, listed = get('auditor', '/servers/detail?all_tenants=1')
        self.assertEqual(200, status)
        self.assertIn(live, [doc['id'] for doc in listed['servers']])
        self.assertEqual(404, get('auditor', '/servers/%s' % live)[0])
        self.assertEqual(200, get('nova', '/servers/%s' % live)[0])
        self.assertEqual((403, {'forbidden': {
            'code': 403,
            'message': 'Only administrators may list deleted instances'}}),
            get('auditor', '/servers/detail?status=DELETED'))

    def test_nova_refuses_other_roles(self):
        """placement's service role grants nothing in nova: the compute
        API refuses the service-only user (9); and nova's own answer.
        """
        code, _out, err = self.run_openstack(
            self.variables('nova-orphans'), 'allocation', 'orphan', 'list')
        self.assertEqual(exit_codes.CREDENTIALS_REFUSED, code, err)
        self.assertEqual(
            "ERROR: Compute request GET /os-services failed: 403: nova's "
            "policy refused os_compute_api:os-services:list (granted by "
            "default to the admin role, on a project)", err.strip())
        http = requests.Session()
        http.trust_env = False
        self.addCleanup(http.close)
        password, project, _roles = keystone.USERS['nova-orphans']
        resp = http.get(self.compute + '/os-services', headers={
            'X-Auth-Token': self.keystone.token('nova-orphans', password,
                                                project)})
        self.assertEqual((403, {'forbidden': {
            'code': 403, 'message': "Policy doesn't allow "
            "os_compute_api:os-services:list to be performed."}}),
            (resp.status_code, resp.json()))

    def test_system_scoped_token(self):
        """The admin's system-scoped token: placement, asked first,
        refuses it; nova's answer reads as any refusal (the token's
        scope says what to do: unit/clients/test_policies).
        """
        variables = dict(self.os_variables(), OS_USERNAME=keystone.ADMIN,
                         OS_PASSWORD=keystone.ADMIN_PASSWORD,
                         OS_SYSTEM_SCOPE='all')
        for name in ('OS_PROJECT_NAME', 'OS_PROJECT_DOMAIN_NAME'):
            del variables[name]
        code, out, err = self.run_openstack(variables, 'allocation',
                                            'orphan', 'clean')
        self.assertEqual((exit_codes.CREDENTIALS_REFUSED, ''), (code, out),
                         err)
        self.assertEqual(
            'ERROR: Placement request GET /resource_providers failed: 403: '
            'placement refused placement:resource_providers:list to a token '
            'not scoped to a project: use a project-scoped token (the admin '
            'or service role on a project)', err.strip())
        self.assertEqual(self.before, self.cloud.state())
        http = requests.Session()
        http.trust_env = False
        self.addCleanup(http.close)
        resp = http.get(self.compute + '/os-services', headers={
            'X-Auth-Token': self.keystone.token(system=True)})
        self.assertEqual((403, {'forbidden': {
            'code': 403, 'message': "Policy doesn't allow "
            "os_compute_api:os-services:list to be performed."}}),
            (resp.status_code, resp.json()))

    def test_restore_with_service_only(self):
        """A restore reads no nova: placement's service role is enough
        for openstack too.
        """
        journal = os.path.join(self.tmp, 'journal.jsonl')
        self.openstack(self.os_variables(), 'allocation', 'orphan', 'clean',
                       '--journal', journal, rc=exit_codes.REPAIRED)
        self.assertEqual(self.cloud.repaired(self.before),
                         self.cloud.state())
        found = self.openstack(self.variables('nova-orphans'), 'allocation',
                               'orphan', 'restore', '--journal', journal,
                               rc=exit_codes.REPAIRED)
        self.assertEqual({'done'}, {r['outcome'] for r in found})
        self.assertEqual(self.before, self.cloud.state())
