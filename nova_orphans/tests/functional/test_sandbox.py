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
"""tools/sandbox --keep without a terminal, stopped by a signal.

While it runs, both front ends read it: nova-orphans-manage through the
databases, openstack through nova's own compute API. Its listing is the
admin guide's first transcript, byte for byte, and the commands it
suggests are the README's and the walkthrough's; and the deleted compute
node it seeds goes through both front ends' provider commands: listed,
cleaned, restored. With --keystone, both front ends authenticate with
the nova.conf and clouds.yaml it prints, through its real keystone.
"""

import configparser
import json
import os
import re
import signal
import subprocess
import sys
import time

import fixtures
from oslotest import base
import requests
import yaml

from nova_orphans.tests.functional.fixtures import keystone
from nova_orphans.tests.functional.fixtures import nova_db
from nova_orphans.tests.functional import test_keystone
from nova_orphans.tests import programs
from nova_orphans.tests import runners
from nova_orphans.tests import state

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
READY = 'Stop it with Ctrl-C, or: kill -TERM '
DOC = os.path.join(ROOT, 'doc', 'source', 'admin', 'sandbox')
# The sandbox seeds the same uuids every run: devstack4's node and
# provider, deleted in nova with a confirmed migration's allocation
# left on it, and the traits of its compute node providers.
DEVSTACK4 = 'c9eb3ee5-db6b-4b00-907e-645bf521835c'
MIGRATION = '6a123be5-b022-4df0-9bda-eb5274f9aadd'
DEVSTACK4_ROW = {
    'uuid': DEVSTACK4, 'name': 'devstack4', 'root_provider': DEVSTACK4,
    'parent_provider': None, 'host': 'devstack4', 'cell': 'cell1',
    'compute_node': DEVSTACK4, 'reason': 'deleted_compute_node',
    'action': 'delete_provider', 'allocations': 1, 'orphan_allocations': 1,
    'details': 'Compute node %s (devstack4 on host devstack4) is deleted in '
               'cell cell1; no cell has it live.' % DEVSTACK4}
# The compute API shows no deleted node: openstack proves it by nova's
# marks on the root (nova 34's OWNER_NOVA, and COMPUTE_NODE), knows its
# host from the migration that names it, and knows no cell.
DEVSTACK4_OSC_ROW = dict(
    DEVSTACK4_ROW, cell=None,
    details='The tree\'s root %s carries OWNER_NOVA and COMPUTE_NODE, '
            'nova\'s mark on its compute nodes, and the compute API, every '
            'cell answering, lists no hypervisor with its uuid: nova '
            'deleted that compute node.' % DEVSTACK4)

# The orphaned allocations the sandbox seeds, as both front ends list
# them: (consumer, provider, reason, action).
ORPHANS = sorted([
    ('9ea750b4-a0d2-4810-bde2-20d259ed24b2', 'devstack1',
     'evacuated_source', 'remove_provider'),
    ('9ea750b4-a0d2-4810-bde2-20d259ed24b2', 'devstack1:eth0',
     'evacuated_source', 'remove_provider'),
    ('0fe342f8-49d1-4f57-9c9d-d69aeb74482c', 'devstack3',
     'unknown_consumer', 'delete_consumer'),
    ('1233649a-80ae-4418-bbca-5b2e35345886', 'devstack3',
     'deleted_instance', 'delete_consumer'),
    ('6f83f898-2a99-4ce6-827e-04cc07dd9b27', 'devstack3',
     'stale_provider', 'remove_provider'),
    (MIGRATION, 'devstack4', 'finished_migration', 'delete_consumer'),
])
TRAITS = {'devstack1': ['COMPUTE_NODE', 'COMPUTE_STATUS_DISABLED',
                        'OWNER_NOVA'],
          'devstack1:eth0': [],
          'devstack2': ['COMPUTE_NODE', 'OWNER_NOVA'],
          'devstack3': ['COMPUTE_NODE', 'OWNER_NOVA'],
          'devstack4': ['COMPUTE_NODE', 'OWNER_NOVA']}


class KeepTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        # Its own temp dir, to see that nothing is left in it; nova's
        # migrated schema is the machine's cache, shared as the tests do.
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.caches = []
        self.share(nova_db.schema_templates())
        self.env = runners.environment(
            TMPDIR=self.tmp,
            XDG_STATE_HOME=self.useFixture(state.StateHome()).path)

    def share(self, cache):
        """The sandbox finds the machine's ``cache`` in its temp dir."""
        os.symlink(cache, os.path.join(self.tmp, os.path.basename(cache)))
        self.caches.append(os.path.basename(cache))

    def spawn(self, *options):
        """``tools/sandbox --keep``, its stdout and stderr one pipe."""
        proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, 'tools', 'sandbox.py'),
             '--keep'] + list(options),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, env=self.env)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        return proc

    def start(self, *options):
        """spawn(), once it is up: (process, what it printed)."""
        proc = self.spawn(*options)
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith(READY):
                break
        out = ''.join(lines)
        self.assertIn(READY + '%d\n' % proc.pid, out)
        return proc, out

    def assert_listing_documented(self, out, conf):
        """The sandbox's listing is the admin guide's 01-list.txt."""
        with open(os.path.join(DOC, '01-list.txt')) as f:
            doc = f.read().replace('/etc/nova/nova.conf', conf).splitlines()
        listed = out.split(' allocations list --format table\n', 1)[1]
        self.assertEqual(doc[1:-1], listed.splitlines()[:len(doc) - 2])
        self.assertEqual(('(exit code 3)', '(exit code 3: orphans found)'),
                         (doc[-1], listed.splitlines()[len(doc) - 2]))

    def assert_commands_documented(self, out, conf):
        """The commands the sandbox suggests are the walkthrough's."""
        with open(os.path.join(ROOT, 'doc', 'source', 'admin',
                               'walkthrough.rst')) as f:
            doc = [line.strip().replace('/tmp/tmpXXXXXXXX/nova.conf', conf)
                   for line in f
                   if line.startswith(('    nova-orphans-manage --config',
                                       '    openstack --os-cloud sandbox'))]
        printed = [line.strip() for line in out.splitlines()
                   if line.startswith(('  nova-orphans-manage --config',
                                       '  openstack --os-cloud sandbox'))]
        self.assertEqual(doc, printed)
        self.assertIn('nova-orphans-manage --config-file %s journals list'
                      % conf, printed)
        self.assertIn('openstack --os-cloud sandbox allocation orphan '
                      'journal list', printed)

    def assert_readme_documented(self, out, conf):
        """The README's example is what the sandbox prints for another
        shell, line for line: the venv, the journal directory, the
        commands (the sandbox's directory shown as /tmp/tmpXXXXXXXX).
        """
        with open(os.path.join(ROOT, 'README.rst')) as f:
            readme = f.read().split('\n    . .venv/bin/activate\n', 1)[1]
        readme = ['. .venv/bin/activate'] + [
            line.strip() for line in readme.split('\n\n', 1)[0].split('\n')]
        printed = out.split('Try, in another shell:\n', 1)[1]
        printed = printed.split('\n("clean" prints', 1)[0].splitlines()
        activate = re.search(r'^  \. (\S+)$', out, re.M).group(1)
        self.assertEqual(readme, [
            line.strip().replace(activate, '.venv/bin/activate').replace(
                os.path.dirname(conf), '/tmp/tmpXXXXXXXX')
            for line in printed])
        self.assertIn('export XDG_STATE_HOME=/tmp/tmpXXXXXXXX/state', readme)

    def config_file(self, out):
        """The nova.conf the commands it suggests name."""
        conf = re.search(r'--config-file (\S+) allocations clean --dry-run',
                         out).group(1)
        self.assertTrue(os.path.isabs(conf), conf)
        return conf

    def stopped(self, proc, signum, conf):
        """Stop the sandbox with ``signum``: nothing of it is left."""
        proc.send_signal(signum)
        rest = proc.stdout.read()
        self.assertEqual(0, proc.wait(timeout=60), rest)
        self.assertEqual(
            'Sandbox stopped (%s); its directories are removed.\n' %
            signal.Signals(signum).name, rest)
        self.assertFalse(os.path.exists(conf))
        self.assertEqual(sorted(self.caches), sorted(os.listdir(self.tmp)))

    def commands(self, out, conf):
        """The commands the sandbox suggests, by the absolute paths it
        prints: (manage, openstack, clouds.yaml), each command a
        function of its arguments giving runners.run_all's (argv,
        environment).
        """
        activate = re.search(r'^  \. (\S+)$', out, re.M).group(1)
        self.assertTrue(os.path.isabs(activate), activate)
        self.assertTrue(os.path.exists(activate), activate)
        bin_dir = os.path.dirname(activate)
        clouds = re.search(r'^  export OS_CLIENT_CONFIG_FILE=(\S+)$', out,
                           re.M).group(1)
        osc_env = dict(self.env, OS_CLIENT_CONFIG_FILE=clouds)

        def manage(*argv):
            return (runners.manage_argv(*argv, conf_file=conf,
                                        bin_dir=bin_dir), self.env)

        def openstack(*argv):
            return (runners.openstack_argv(*argv, '-f', 'json',
                                           cloud='sandbox', bin_dir=bin_dir),
                    osc_env)
        return manage, openstack, clouds

    def assert_orphans(self, allocs, osc_allocs):
        """Both front ends' lists found the seeded orphans."""
        # The same exit code from both front ends: orphans found.
        self.assertEqual(3, allocs[0], allocs[2])
        self.assertEqual((3, ''), (osc_allocs[0], osc_allocs[2]))
        key = (lambda r: (r['consumer'], r['resource_provider_name'],
                          r['reason'], r['action']))
        self.assertEqual(
            (ORPHANS, ORPHANS),
            (sorted(map(key, json.loads(allocs[1]))),
             sorted(map(key, json.loads(osc_allocs[1])))))

    def front_ends(self, out, conf):
        """Both front ends on the kept sandbox: the same allocations, and
        the deleted node's tree listed, cleaned by openstack and restored
        by nova-orphans-manage.
        """
        placement = re.search(r'^ +endpoint: (\S+)$', out, re.M).group(1)
        manage, openstack, _clouds = self.commands(out, conf)
        allocs, providers, osc_allocs, osc_providers = runners.run_all([
            manage('allocations', 'list', '--format', 'json'),
            manage('providers', 'list', '--format', 'json'),
            openstack('allocation', 'orphan', 'list'),
            openstack('resource', 'provider', 'orphan', 'list')])
        self.assert_orphans(allocs, osc_allocs)
        self.assertEqual((3, [DEVSTACK4_ROW], ''),
                         (providers[0], json.loads(providers[1]),
                          providers[2]))
        self.assertEqual((3, [DEVSTACK4_OSC_ROW], ''),
                         (osc_providers[0], json.loads(osc_providers[1]),
                          osc_providers[2]))
        self.assertEqual(TRAITS, self.traits(placement))
        journal = os.path.join(os.path.dirname(conf), 'providers.jsonl')
        [(rc, stdout, stderr)] = runners.run_all([openstack(
            'resource', 'provider', 'orphan', 'clean', '--journal', journal)])
        self.assertEqual((4, [dict(DEVSTACK4_OSC_ROW, outcome='done')]),
                         (rc, json.loads(stdout)), stderr)
        # (What the trees' allocations came to closes a table only, as
        # nova-orphans-manage's.)
        self.assertEqual(
            'Journal: %(journal)s\n'
            'To undo: openstack --os-cloud sandbox allocation orphan restore '
            '--journal '
            '%(journal)s\n' % {'journal': journal}, stderr)
        self.assertNotIn('devstack4', self.traits(placement))
        [(rc, stdout, stderr)] = runners.run_all([
            manage('providers', 'list', '--format', 'json')])
        self.assertEqual((0, [], ''), (rc, json.loads(stdout), stderr))
        [(rc, stdout, stderr)] = runners.run_all([manage(
            'allocations', 'restore', '--journal', journal, '--format',
            'json')])
        self.assertEqual(4, rc, stderr)
        self.assertEqual(
            [(DEVSTACK4, 'done'), (MIGRATION, 'done')],
            [(r.get('uuid') or r['consumer'], r['outcome'])
             for r in json.loads(stdout)])
        # Back as it was, with the COMPUTE_NODE trait openstack proves
        # a deleted node by.
        self.assertEqual(TRAITS, self.traits(placement))
        [(rc, stdout, stderr)] = runners.run_all([
            manage('providers', 'list', '--format', 'json')])
        self.assertEqual((3, [DEVSTACK4_ROW], ''),
                         (rc, json.loads(stdout), stderr))

    @staticmethod
    def traits(placement):
        """{provider name: its traits}, read from placement."""
        def get(path):
            resp = requests.get(placement + path, timeout=30, headers={
                'X-Auth-Token': 'admin',
                'OpenStack-API-Version': 'placement 1.39'})
            resp.raise_for_status()
            return resp.json()
        return {rp['name']: sorted(get('/resource_providers/%s/traits' %
                                       rp['uuid'])['traits'])
                for rp in get('/resource_providers')['resource_providers']}

    def test_sigterm(self):
        """What it prints is the documents' (the listing, the commands,
        the README's example), it serves with its stdin at end of file,
        both front ends read and repair it; then stopped with SIGTERM.
        """
        proc, out = self.start()
        conf = self.config_file(out)
        self.assert_listing_documented(out, conf)
        self.assert_commands_documented(out, conf)
        self.assert_readme_documented(out, conf)
        # Still serving with stdin at end of file.
        time.sleep(1)
        self.assertIsNone(proc.poll())
        compute = re.search(r'compute_endpoint_override: (\S+)', out).group(1)
        self.front_ends(out, conf)
        self.stopped(proc, signal.SIGTERM, conf)
        # nova's compute API went with it.
        self.assertRaises(requests.ConnectionError, requests.get, compute,
                          timeout=10)

    def test_keystone(self):
        """--keystone: placement and nova's compute API behind a real
        keystone, both front ends authenticating with the nova.conf and
        the clouds.yaml it prints (the shipped samples, but for its
        keystone's address and the password); then stopped with SIGINT,
        as Ctrl-C on its terminal stops it.
        """
        # keystone's synced database and keys, as the tests share them.
        self.share(keystone.template())
        proc, out = self.start('--keystone')
        conf = self.config_file(out)
        self.assert_listing_documented(out, conf)
        manage, openstack, clouds = self.commands(out, conf)
        auth_url = re.search(r'^keystone at (\S+) ', out, re.M).group(1)
        placement = re.search(r'^Sandbox cloud: placement at (\S+),', out,
                              re.M).group(1)
        password, _project, _roles = keystone.USERS['nova']

        printed = self.printed(out, 'Its nova.conf (%s):' % conf, conf)
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(printed)
        self.assertEqual(dict(test_keystone.shipped_placement_section(),
                              auth_url=auth_url, password=password),
                         dict(parser['placement']))
        printed = self.printed(out, 'Its clouds.yaml (%s):' % clouds, clouds)
        _name, cloud = keystone.shipped_cloud()
        cloud['auth'].update(auth_url=auth_url, password=password)
        self.assertEqual({'clouds': {'sandbox': cloud}},
                         yaml.safe_load(printed))

        # The printed user's token, its catalog; "admin" is no token.
        user = {'name': cloud['auth']['username'], 'password': password,
                'domain': {'name': keystone.DOMAIN}}
        project = {'name': cloud['auth']['project_name'],
                   'domain': {'name': keystone.DOMAIN}}
        resp = requests.post(auth_url + '/auth/tokens', timeout=30, json={
            'auth': {'identity': {'methods': ['password'],
                                  'password': {'user': user}},
                     'scope': {'project': project}}})
        self.assertEqual(201, resp.status_code, resp.text)
        found = {(service['type'], e['interface'], e['region_id']): e['url']
                 for service in resp.json()['token']['catalog']
                 for e in service['endpoints']
                 if service['type'] in ('placement', 'compute')}
        compute = found.get(('compute', 'internal', keystone.REGION_ONE),
                            '')
        self.assertRegex(compute, r'^http://127\.0\.0\.1:\d+/v2\.1$')
        self.assertEqual({
            (service_type, interface, keystone.REGION_ONE): url
            for service_type, url in (('placement', placement),
                                      ('compute', compute))
            for interface in ('public', 'internal')}, found)
        for url in (placement + '/resource_providers', compute + '/servers'):
            self.assertEqual(401, requests.get(url, timeout=30, headers={
                'X-Auth-Token': 'admin'}).status_code, url)

        self.assert_orphans(*runners.run_all([
            manage('allocations', 'list', '--format', 'json'),
            openstack('allocation', 'orphan', 'list')]))
        self.stopped(proc, signal.SIGINT, conf)
        # Its keystone and nova's compute API went with it.
        for url in (auth_url, compute):
            self.assertRaises(requests.ConnectionError, requests.get, url,
                              timeout=10)

    def test_sigterm_while_keystone_starts(self):
        """Stopped before its keystone has answered: the keystone process
        and its directory go too.
        """
        self.share(keystone.template())
        proc = self.spawn('--keystone')
        deadline = time.monotonic() + 120
        keystone_pid = None
        while keystone_pid is None:
            self.assertLess(time.monotonic(), deadline)
            self.assertIsNone(proc.poll())
            for pid in programs.children(proc.pid):
                with open('/proc/%d/cmdline' % pid, 'rb') as f:
                    if b'OS_KEYSTONE_CONFIG_FILES' in f.read():
                        keystone_pid = pid
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(
            (128 + signal.SIGTERM,
             'Interrupted (SIGTERM); the sandbox is removed.\n'),
            (proc.wait(timeout=60), proc.stdout.read()))
        # Reaped by the sandbox (it was its child), not left running.
        self.assertFalse(os.path.exists('/proc/%d' % keystone_pid))
        self.assertEqual(sorted(self.caches), sorted(os.listdir(self.tmp)))

    def printed(self, out, heading, path):
        """The file the sandbox printed under ``heading``, which is the
        file at ``path``.
        """
        lines = out.split(heading + '\n\n', 1)[1].splitlines()
        block = []
        for line in lines:
            if line and not line.startswith('  '):
                break
            block.append(line[2:])
        text = '\n'.join(block).rstrip('\n') + '\n'
        with open(path) as f:
            self.assertEqual(f.read().rstrip('\n') + '\n', text)
        return text
