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
"""Functional tests: the real tool against a real placement and nova schema.

Placement is openstack-placement served on 127.0.0.1; the nova databases
are sqlite files whose schema nova's own migrations created. Nothing is
faked: the state is built through placement's API and nova's tables, and
the tool is run through ``nova_orphans.cmd.manage.main`` exactly as the
console script runs it (runners.manage_main), or as the console script
itself (runners).
"""

import json
import os

import fixtures
from oslotest import base

from nova_orphans.tests.functional.fixtures import mariadb
from nova_orphans.tests.functional.fixtures import nova_db
from nova_orphans.tests.functional.fixtures import placement
from nova_orphans.tests import runners
from nova_orphans.tests import state

PROJECT = nova_db.PROJECT
USER = nova_db.USER
FLAVOR = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
INVENTORY = {'VCPU': 8, 'MEMORY_MB': 8192, 'DISK_GB': 100}


class TestCase(runners.Checks, base.BaseTestCase):
    """What every functional test has: no ``OS_*`` variable of the shell
    the tests were started from (runners.environment), a temporary
    directory (``tmp``), a journals' default directory of its own
    (state.StateHome) and a ``state_path`` for nova.conf; and the
    helpers that build state and run the tool, on the cloud a subclass
    sets up (``placement``, ``nova``, ``conf_file``): one per test
    (FunctionalTestCase), one per class (front_ends.FrontEndsTestCase)
    or one per release (test_releases.ReleaseTestCase).
    """

    def setUp(self):
        super().setUp()
        runners.unset_openstack_environment(self)
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.useFixture(state.StateHome())
        self.state_path = os.path.join(self.tmp, 'state')

    def nova_conf(self, placement_endpoint, name='nova.conf', **sections):
        """nova.conf for the tool, in ``tmp``: ``self.nova``'s databases,
        placement at ``placement_endpoint`` (or a whole ``[placement]``
        section), this test's state path, and ``sections`` ({option:
        value} each, added to the section of that name).
        """
        extra = {'nova_orphans': {'state_path': self.state_path,
                                  'cell_timeout': '20'}}
        for section, values in sections.items():
            extra.setdefault(section, {}).update(values)
        return self.nova.write_nova_conf(os.path.join(self.tmp, name),
                                         placement_endpoint, extra=extra)

    # Building state -----------------------------------------------------

    def add_node(self, host, node=None, cell='cell1', inventory=INVENTORY,
                 aggregates=(), deleted=False):
        """A compute node in nova and its root provider in placement."""
        uuid = self.nova.add_compute_node(cell, host, node=node,
                                          deleted=deleted)
        self.placement.create_provider(node or host, uuid=uuid,
                                       inventory=inventory,
                                       aggregates=aggregates)
        return uuid

    def add_child(self, parent, name, inventory):
        return self.placement.create_provider(name, parent=parent,
                                              inventory=inventory)

    def allocate(self, consumer, *providers, resources=FLAVOR,
                 consumer_type=None, project_id=PROJECT, user_id=USER):
        """Allocate ``resources`` on each provider, as nova 34 (untyped)."""
        if providers and isinstance(providers[0], dict):
            allocations = providers[0]
        else:
            allocations = {rp: dict(resources) for rp in providers}
        self.placement.put_allocations(consumer, allocations, project_id,
                                       user_id, consumer_type=consumer_type)

    def boot(self, host, rp, cell='cell1', **kwargs):
        """A live instance on host with its allocation on rp."""
        inst = self.nova.add_instance(cell, host=host, node=host, **kwargs)
        self.allocate(inst, rp)
        return inst

    # Running the tool ---------------------------------------------------

    def manage(self, *argv, conf_file=None):
        """(return code, stdout, stderr) of one in-process run."""
        return runners.manage_main(
            ['--config-file', conf_file or self.conf_file] + list(argv))

    def environment(self):
        """The environment of this test's runs (runners.environment)."""
        return runners.environment()

    def run_one(self, argv, env=None):
        """(return code, stdout, stderr) of the command line ``argv``
        (runners.run), in ``env`` (default: environment()).
        """
        return runners.run(argv, env=env or self.environment())

    def run_json(self, *argv, conf_file=None, codes=None, command=None):
        """(exit code, the JSON it printed: None if nothing) of
        ``nova-orphans-manage ARGV --format json`` run in this process
        (manage), or of the command line ``command`` (run_one: either
        console script, JSON asked for in it); the run ended cleanly
        (assertRanCleanly), with one of ``codes`` if given. Its stderr
        is ``self.stderr``.
        """
        if command is None:
            result = self.manage(*argv, '--format', 'json',
                                 conf_file=conf_file)
        else:
            result = self.run_one(command)
        rc, out, self.stderr = self.assertRanCleanly(result, codes)
        return rc, json.loads(out) if out.strip() else None

    def list_json(self, *argv):
        return self.run_json('allocations', 'list', *argv,
                             codes=(0, 2, 3, 5))

    def row(self, consumer, rp, reason, action, host=None, name=None,
            root=None, resources=FLAVOR, consumer_type='instance',
            instance='same', cell='cell1', project_id=PROJECT,
            user_id=USER):
        """An expected JSON row; ``details`` is checked separately."""
        return {
            'consumer': consumer, 'consumer_type': consumer_type,
            'instance': consumer if instance == 'same' else instance,
            'resource_provider': rp, 'resource_provider_name': name or host,
            'root_provider': root or rp, 'host': host, 'cell': cell,
            'reason': reason, 'action': action, 'resources': dict(resources),
            'project_id': project_id, 'user_id': user_id,
        }

    def assertRows(self, expected, rows):
        for row in rows:
            self.assertIsInstance(row.pop('details'), str)
        key = (lambda r: (r['resource_provider'] or '', r['consumer']))
        self.assertEqual(sorted(expected, key=key), sorted(rows, key=key))


class FunctionalTestCase(TestCase):
    """A cloud of its own for each test: placement, and nova's API and
    cell databases (``CELLS``), in sqlite files or on MariaDB.
    """

    CELLS = ('cell1',)
    TEMPLATED = False
    # nova's and placement's databases on this process's MariaDB server
    # rather than in sqlite files (see on_mariadb).
    MARIADB = False
    # The policy overrides placement loads (with keystone_server()).
    PLACEMENT_POLICY = None

    def setUp(self):
        super().setUp()
        maria = placement_url = None
        if self.MARIADB:
            mariadb.require(self)
            maria = mariadb.server()
            placement_url = maria.fresh(mariadb.TEMPLATE_PLACEMENT,
                                        'placement')
        self.placement = self.useFixture(placement.PlacementServer(
            db_url=placement_url, keystone=self.keystone_server(),
            policy_file=self.PLACEMENT_POLICY))
        self.nova = self.useFixture(nova_db.NovaDatabases(
            cells=self.CELLS, templated=self.TEMPLATED, mariadb=maria))
        self.conf_file = self.nova_conf(self.placement.endpoint)

    def keystone_server(self):
        """The fixtures.keystone server placement validates tokens
        against; None: placement is noauth2 (admin_token).
        """
        return None


def on_mariadb(case, *tests):
    """``case`` again, with every database on MariaDB, as production runs.

    nova's API and cell databases and placement's are on this test
    process's MariaDB server (fixtures/mariadb.py). Only ``tests`` are
    run again when named: each costs a second or more there. Assign the
    result to a module-level name for the test loader to find.
    """
    attrs = {'MARIADB': True, '__module__': case.__module__,
             '__doc__': 'The tests of %s, on MariaDB.' % case.__name__}
    if tests:
        unknown = set(tests) - set(dir(case))
        if unknown:
            raise AttributeError('%s has no %s' % (case.__name__,
                                                   ', '.join(sorted(unknown))))
        # unittest's loader collects only callable test_* attributes.
        attrs.update({name: None for name in dir(case)
                      if name.startswith('test') and name not in tests})
    return type(case.__name__.replace('TestCase', '') + 'MariaDBTestCase',
                (case,), attrs)
