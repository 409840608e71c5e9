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
"""The supported releases: nova 2023.1 to 2026.2, placement 9.0.0 to 16.

For each series, the same cloud on that series' nova schema and served
by that series' placement, each made by the release's own migrations
(see fixtures.releases): the core situations, listed through placement's
API and from placement's database (fast mode), then cleaned and
restored. The rows must be exactly the same on every release.

The documentation's "Supported releases" table names these tests.
"""

import copy
import importlib.metadata
import os
import uuid as uuidlib

from nova_orphans import exit_codes
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import nova_db
from nova_orphans.tests.functional.fixtures import placement
from nova_orphans.tests.functional.fixtures import releases

FLAVOR = base.FLAVOR
BW = {'NET_BW_EGR_KILOBIT_PER_SEC': 1000}
RELEASES = {series: (nova, placement_release)
            for series, nova, placement_release in releases.RELEASES}


class ReleaseTestCase(base.TestCase):
    """One cloud per test, on the releases the test names (start): the
    nova schema and the placement server depend on the release.
    """

    def setUp(self):
        super().setUp()
        self.journal = os.path.join(self.tmp, 'journal.jsonl')

    def start(self, series):
        """nova's databases on the series' nova schema, and its placement.

        The test venv's placement runs in process, as in the rest of the
        suite; older ones each in a process of their own.
        """
        nova, placement_version = RELEASES[series]
        if placement_version == importlib.metadata.version(
                'openstack-placement'):
            server = placement.PlacementServer()
        else:
            server = releases.OldPlacementServer(placement_version)
        self.placement = self.useFixture(server)
        self.nova = self.useFixture(nova_db.NovaDatabases(
            templates=releases.nova_schema(nova)))
        self.conf_file = self.nova_conf(self.placement.endpoint)
        self.fast_conf = self.nova_conf(
            self.placement.endpoint, name='fast.conf',
            placement_database={'connection': self.placement.db_url})

    # The cloud ----------------------------------------------------------

    def seed(self):
        """The core situations; returns the expected ``list --all`` rows
        and the consumers that ``clean`` changes but does not delete.
        """
        nova = self.nova
        h1, h2, h3 = (self.add_node(h) for h in ('host1', 'host2', 'host3'))
        bw = self.add_child(h1, 'host1:eth0',
                            {'NET_BW_EGR_KILOBIT_PER_SEC': 10000})
        row = self.row
        rows = []

        live = self.boot('host3', h3)
        rows.append(row(live, h3, 'active_instance', 'none', host='host3'))
        # Written before an upgrade to 2023.2: no compute_id (every row,
        # on 2023.1, whose schema has no such column).
        upgraded = self.boot('host3', h3)
        instances = nova.table('cell1', 'instances')
        if 'compute_id' in instances.c:
            nova.execute('cell1', instances.update().where(
                instances.c.uuid == upgraded).values(compute_id=None))
        rows.append(row(upgraded, h3, 'active_instance', 'none',
                        host='host3'))

        # Evacuated from host1, whose bandwidth child holds a part too.
        evac = nova.add_instance('cell1', host='host2', node='host2')
        self.allocate(evac, {h1: FLAVOR, bw: BW, h2: FLAVOR})
        nova.add_migration('cell1', evac, migration_type='evacuation',
                           status='done', source_compute='host1',
                           source_node='host1', dest_compute='host2',
                           dest_node='host2')
        rows += [
            row(evac, h1, 'evacuated_source', 'remove_provider',
                host='host1'),
            row(evac, bw, 'evacuated_source', 'remove_provider',
                host='host1', name='host1:eth0', root=h1, resources=BW),
            row(evac, h2, 'active_instance', 'none', host='host2')]

        # A cold migration that failed: the target kept its allocation.
        stale = nova.add_instance('cell1', host='host1', node='host1',
                                  vm_state='stopped')
        self.allocate(stale, h1, h2)
        nova.add_migration('cell1', stale, migration_type='migration',
                           status='error', source_compute='host1',
                           source_node='host1', dest_compute='host2',
                           dest_node='host2')
        rows += [row(stale, h1, 'active_instance', 'none', host='host1'),
                 row(stale, h2, 'stale_provider', 'remove_provider',
                     host='host2')]

        # Deleted in SQL by hand; another one also archived.
        gone = self.boot('host1', h1, vm_state='error')
        nova.force_delete_instance('cell1', gone)
        archived = self.boot('host1', h1)
        nova.force_delete_instance('cell1', archived)
        releases.archive_instance(nova, 'cell1', archived)
        rows += [row(gone, h1, 'deleted_instance', 'delete_consumer',
                     host='host1'),
                 row(archived, h1, 'deleted_instance', 'delete_consumer',
                     host='host1')]

        stranger = str(uuidlib.uuid4())
        self.allocate(stranger, h2)
        rows.append(row(stranger, h2, 'unknown_consumer', 'delete_consumer',
                        host='host2', consumer_type='unknown',
                        instance=None))

        # A confirmed resize whose migration kept the source allocation.
        confirmed = nova.add_instance('cell1', host='host2', node='host2')
        done = nova.add_migration(
            'cell1', confirmed, migration_type='resize', status='confirmed',
            source_compute='host1', source_node='host1',
            dest_compute='host2', dest_node='host2')
        self.allocate(done, h1)
        self.allocate(confirmed, h2)
        rows += [row(done, h1, 'finished_migration', 'delete_consumer',
                     host='host1', consumer_type='migration',
                     instance=confirmed),
                 row(confirmed, h2, 'active_instance', 'none',
                     host='host2')]

        # In progress: a resize awaiting confirmation, a live migration.
        resized = nova.add_instance('cell1', host='host2', node='host2',
                                    vm_state='resized')
        waiting = nova.add_migration(
            'cell1', resized, migration_type='resize', status='finished',
            source_compute='host1', source_node='host1',
            dest_compute='host2', dest_node='host2')
        self.allocate(waiting, h1)
        self.allocate(resized, h2)
        rows += [row(waiting, h1, 'active_migration', 'none', host='host1',
                     consumer_type='migration', instance=resized),
                 row(resized, h2, 'active_instance', 'none', host='host2')]
        moving = nova.add_instance('cell1', host='host1', node='host1',
                                   task_state='migrating')
        running = nova.add_migration(
            'cell1', moving, migration_type='live-migration',
            status='running', source_compute='host1', source_node='host1',
            dest_compute='host3', dest_node='host3')
        self.allocate(running, h1)
        self.allocate(moving, h3)
        rows += [row(running, h1, 'active_migration', 'none', host='host1',
                     consumer_type='migration', instance=moving),
                 row(moving, h3, 'active_migration', 'none', host='host3')]
        # A port's bandwidth nova leaked: no port claims it any more.
        leaky = nova.add_instance('cell1', host='host1', node='host1')
        self.allocate(leaky, {h1: FLAVOR, bw: BW})
        nova.set_network_info('cell1', leaky, [nova_db.vif()])
        rows += [row(leaky, h1, 'active_instance', 'none', host='host1'),
                 row(leaky, bw, 'leaked_port_allocation', 'trim_provider',
                     host='host1', name='host1:eth0', root=h1,
                     resources=BW)]
        return rows, (evac, stale, leaky)

    # The test -----------------------------------------------------------

    def check_release(self, series):
        """list in both modes, clean (fast mode: the bulk re-verification
        reads placement's database too), restore.
        """
        self.start(series)
        expected, trimmed = self.seed()
        orphans = [r for r in expected if r['action'] != 'none']
        for conf_file in (self.conf_file, self.fast_conf):
            rc, rows = self.run_json('allocations', 'list', '--all',
                                     conf_file=conf_file)
            self.assertEqual(exit_codes.ORPHANS_FOUND, rc)
            self.assertRows(copy.deepcopy(expected), rows)

        before = self.placement.dump_state()
        rc, cleaned = self.run_json('allocations', 'clean', '--journal',
                                    self.journal, conf_file=self.fast_conf)
        self.assertEqual(exit_codes.REPAIRED, rc)
        self.assertEqual({'done'}, {r.pop('outcome') for r in cleaned})
        self.assertRows(copy.deepcopy(orphans), cleaned)
        for conf_file in (self.conf_file, self.fast_conf):
            self.assertEqual((exit_codes.SUCCESS, []), self.run_json(
                'allocations', 'list', conf_file=conf_file))

        rc, restored = self.run_json('allocations', 'restore', '--journal',
                                     self.journal)
        self.assertEqual(exit_codes.REPAIRED, rc)
        self.assertEqual({'done'}, {r['outcome'] for r in restored})
        # Placement bumps a generation on every write: a consumer that
        # lived through both (remove_provider, trim_provider) is two on.
        for consumer in trimmed:
            before[consumer]['consumer_generation'] += 2
        self.assertEqual(before, self.placement.dump_state())
        for conf_file in (self.conf_file, self.fast_conf):
            rc, rows = self.run_json('allocations', 'list', '--all',
                                     conf_file=conf_file,
                                     codes=exit_codes.ORPHANS_FOUND)
            self.assertRows(copy.deepcopy(expected), rows)

    def test_2023_1(self):
        self.check_release('2023.1')

    def test_2023_2(self):
        self.check_release('2023.2')

    def test_2024_1(self):
        self.check_release('2024.1')

    def test_2024_2(self):
        self.check_release('2024.2')

    def test_2025_1(self):
        self.check_release('2025.1')

    def test_2025_2(self):
        self.check_release('2025.2')

    def test_2026_1(self):
        self.check_release('2026.1')

    def test_2026_2(self):
        self.check_release('2026.2')


class UnsupportedSchemaTestCase(base.FunctionalTestCase):
    """A schema the readers do not know ends the run, with exit code 6.

    Whether an older release than 2023.1 or an upgrade that did not
    finish: reading it as an unreadable cell would report allocations as
    unverifiable, and a damaged cell would go unnoticed.
    """

    RANGE = ('nova-orphans reads the databases of nova 27 (2023.1) to '
             '34 (2026.2), each upgraded by its own nova-manage (api_db '
             'sync, db sync).')

    def setUp(self):
        super().setUp()
        self.host1 = self.add_node('host1')
        self.journal = os.path.join(self.tmp, 'journal.jsonl')
        # An orphan a run would otherwise report and delete.
        self.allocate(str(uuidlib.uuid4()), self.host1)
        self.before = self.placement.dump_state()

    def assertUnsupported(self, message):
        for argv in (('list',), ('clean', '--journal', self.journal)):
            rc, out, err = self.manage('allocations', *argv)
            self.assertEqual(exit_codes.UNSUPPORTED_SCHEMA, rc, err)
            self.assertEqual('', out)
            self.assertEqual(['ERROR: %s %s' % (message, self.RANGE)],
                             err.splitlines())
        self.assertFalse(os.path.exists(self.journal))
        self.assertEqual(self.before, self.placement.dump_state())

    def test_cell_missing_a_column_and_a_table(self):
        self.nova.execute('cell1',
                          'ALTER TABLE services DROP COLUMN forced_down')
        self.nova.execute('cell1', 'DROP TABLE shadow_migrations')
        self.assertUnsupported(
            'The database of nova cell cell1 (%s) has no '
            'services.forced_down, shadow_migrations:' %
            self.nova.cell_urls['cell1'])

    def test_api_database_missing_a_table(self):
        self.nova.execute('api', 'DROP TABLE build_requests')
        self.assertUnsupported(
            'The nova API database %s has no build_requests:' %
            self.nova.api_url)

    def test_cell_without_compute_id_reads_as_2023_1(self):
        """Only instances.compute_id may be missing: it is optional."""
        vm = self.boot('host1', self.host1)
        for statement in ('DROP INDEX instances_compute_id_deleted_idx',
                          'ALTER TABLE instances DROP COLUMN compute_id'):
            self.nova.execute('cell1', statement)
        rc, rows = self.list_json('--all')
        self.assertEqual(exit_codes.ORPHANS_FOUND, rc)
        self.assertEqual({(vm, 'active_instance')},
                         {(r['consumer'], r['reason']) for r in rows
                          if r['consumer'] == vm})
