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
"""Fast mode (``[placement_database] connection``) finds what the API finds.

The same varied cloud is listed twice: through placement's API, and from
placement's database. The JSON output must be identical, row for row,
for every filter; and the fast mode must not send placement a single
request while listing.
"""

import collections
import json
import os
from unittest import mock
import uuid as uuidlib

from oslo_config import cfg

from nova_orphans.clients import placement as client_mod
from nova_orphans import conf as orphans_conf
from nova_orphans import exit_codes
from nova_orphans.readers import placement_api
from nova_orphans.readers import placement_db
from nova_orphans.readers import second_process
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import nova_db

SHARING = 'MISC_SHARES_VIA_AGGREGATE'
OTHER_PROJECT = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'
OTHER_USER = 'f0e1d2c3b4a5968778695a4b3c2d1e0f'
BIG = {'VCPU': 64, 'MEMORY_MB': 65536, 'DISK_GB': 1000}


class FastModeTestCase(base.FunctionalTestCase):

    CELLS = ('cell1', 'cell2')

    def setUp(self):
        super().setUp()
        self.fast_conf = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'fast.conf'), self.placement.endpoint,
            extra={'nova_orphans': {'state_path': self.state_path,
                                    'cell_timeout': '20'},
                   'placement_database': {
                       'connection': self.placement.db_url}})
        # No placement at all: any request in fast mode's list fails.
        self.offline_conf = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'offline.conf'), 'http://127.0.0.1:9',
            extra={'nova_orphans': {'state_path': self.state_path,
                                    'cell_timeout': '20'},
                   'placement_database': {
                       'connection': self.placement.db_url}})
        self.build_cloud()

    def build_cloud(self):
        nova, placement = self.nova, self.placement
        agg, other_agg = str(uuidlib.uuid4()), str(uuidlib.uuid4())
        h1 = self.add_node('host1', aggregates=[agg], inventory=BIG)
        h2 = self.add_node('host2', inventory=BIG)
        h3 = self.add_node('host3', cell='cell2', aggregates=[other_agg],
                           inventory=BIG)
        bw = self.add_child(h1, 'host1:eth0',
                            {'NET_BW_EGR_KILOBIT_PER_SEC': 10000})
        nfs = placement.create_provider(
            'nfs', inventory={'DISK_GB': 1000}, traits=[SHARING],
            aggregates=[agg])
        placement.create_provider('lonely-share', inventory={'DISK_GB': 10},
                                  traits=[SHARING])
        fpga = placement.create_provider('cyborg-fpga',
                                         inventory={'CUSTOM_FPGA': 4})
        ironic_node = str(uuidlib.uuid4())
        ironic = self.add_node('ironic', node=ironic_node, cell='cell2',
                               inventory={'CUSTOM_BAREMETAL_GOLD': 2})
        self.providers = (h1, h2, h3, bw, nfs, fpga, ironic)

        # Healthy: live instances, one with a nested and a shared part.
        self.boot('host1', h1)
        self.boot('host3', h3, cell='cell2')
        vm = nova.add_instance('cell1', host='host1', node='host1')
        self.allocate(vm, {h1: base.FLAVOR,
                           bw: {'NET_BW_EGR_KILOBIT_PER_SEC': 100},
                           nfs: {'DISK_GB': 5}})
        nova.set_network_info('cell1', vm, [nova_db.vif(allocation=bw)])
        # A port's bandwidth no port claims any more (leaked by nova).
        leaky = nova.add_instance('cell1', host='host1', node='host1')
        self.allocate(leaky, {h1: base.FLAVOR,
                              bw: {'NET_BW_EGR_KILOBIT_PER_SEC': 100}})
        nova.set_network_info('cell1', leaky, [nova_db.vif()])
        bm = nova.add_instance('cell2', host='ironic', node=ironic_node)
        self.allocate(bm, ironic, resources={'CUSTOM_BAREMETAL_GOLD': 1})
        # Another project, typed as nova would at 1.38+.
        typed = nova.add_instance('cell1', host='host2', node='host2',
                                  project_id=OTHER_PROJECT,
                                  user_id=OTHER_USER)
        placement.put_allocations(typed, {h2: base.FLAVOR}, OTHER_PROJECT,
                                  OTHER_USER, consumer_type='INSTANCE')
        # In progress: resize awaiting confirm, evacuation running.
        resized = nova.add_instance('cell1', host='host2', node='host2',
                                    vm_state='resized')
        mig = nova.add_migration(
            'cell1', resized, migration_type='resize', status='finished',
            source_compute='host1', source_node='host1',
            dest_compute='host2', dest_node='host2')
        self.allocate(mig, h1)
        self.allocate(resized, h2)
        evac = nova.add_instance('cell1', host='host1', node='host1',
                                 task_state='rebuilding')
        self.allocate(evac, h1, h2)
        nova.add_migration('cell1', evac, migration_type='evacuation',
                           status='pre-migrating', source_compute='host1',
                           source_node='host1', dest_compute='host2',
                           dest_node='host2')
        # Building, soft-deleted, unmanaged.
        queued = str(uuidlib.uuid4())
        nova.add_build_request(queued)
        self.allocate(queued, h2)
        self.boot('host2', h2, vm_state='soft-delete')
        self.allocate(str(uuidlib.uuid4()), fpga,
                      resources={'CUSTOM_FPGA': 1})

        # Orphans of every reason.
        gone = self.boot('host1', h1, vm_state='error')
        nova.force_delete_instance('cell1', gone)
        shared_gone = nova.add_instance('cell1', host='host1', node='host1',
                                        deleted=True)
        self.allocate(shared_gone, {nfs: {'DISK_GB': 20}})
        self.allocate(str(uuidlib.uuid4()), h2)
        self.other_stranger = str(uuidlib.uuid4())
        placement.put_allocations(self.other_stranger, {h3: base.FLAVOR},
                                  OTHER_PROJECT, OTHER_USER,
                                  consumer_type='MIGRATION')
        moved = nova.add_instance('cell2', host='host3', node='host3')
        self.allocate(moved, h2, h3)
        nova.add_migration('cell2', moved, migration_type='evacuation',
                           status='done', source_compute='host2',
                           source_node='host2', dest_compute='host3',
                           dest_node='host3')
        failed = nova.add_instance('cell1', host='host1', node='host1',
                                   vm_state='stopped')
        self.allocate(failed, h1, h2)
        nova.add_migration('cell1', failed, migration_type='migration',
                           status='error', source_compute='host1',
                           source_node='host1', dest_compute='host2',
                           dest_node='host2')
        confirmed = nova.add_instance('cell1', host='host2', node='host2')
        cmig = nova.add_migration(
            'cell1', confirmed, migration_type='resize', status='confirmed',
            source_compute='host1', source_node='host1',
            dest_compute='host2', dest_node='host2')
        self.allocate(cmig, h1)
        self.allocate(confirmed, h2)
        shelved = nova.add_instance('cell1', vm_state='shelved_offloaded')
        self.allocate(shelved, h1)
        nova.add_instance('cell2', host='host3', node='host3')

    def both(self, *argv):
        """(API mode rows, fast mode rows) of one list command."""
        api = self.list_json(*argv)
        rc, out, err = self.manage('allocations', 'list', '--format', 'json',
                                   *argv, conf_file=self.fast_conf)
        self.assertIn(rc, (0, 3), err)
        return api, (rc, json.loads(out))

    def test_same_findings_as_the_api(self):
        for argv in ([], ['--all'], ['--host', 'host2', '--all'],
                     ['--host', 'host1'],
                     ['--resource-provider', self.providers[0], '--all'],
                     ['--reason', 'missing_allocations'],
                     ['--reason', 'active_instance']):
            api, fast = self.both(*argv)
            self.assertEqual(api, fast, argv)
        # The cloud really is varied: every orphan reason shows up.
        rc, rows = api = self.list_json()
        self.assertEqual(
            {'deleted_instance', 'unknown_consumer', 'evacuated_source',
             'stale_provider', 'finished_migration', 'shelved_offloaded',
             'missing_allocations', 'leaked_port_allocation'},
            {r['reason'] for r in rows})
        self.assertEqual(
            {'active_instance', 'active_migration', 'building',
             'soft_deleted', 'unmanaged_provider'},
            {r['reason'] for r in self.list_json('--all')[1]} -
            {r['reason'] for r in rows})

    def test_same_projects_as_the_api(self):
        """Both readers carry each consumer's project and user: the same
        rows per project and user, the same totals and metric.
        """
        h2, h3 = self.providers[1], self.providers[2]
        api, fast = self.both('--project', OTHER_PROJECT)
        self.assertEqual(api, fast)
        self.assertEqual(exit_codes.ORPHANS_FOUND, api[0])
        self.assertRows([self.row(
            self.other_stranger, h3, 'unknown_consumer', 'delete_consumer',
            host='host3', cell='cell2', consumer_type='migration',
            instance=None, project_id=OTHER_PROJECT, user_id=OTHER_USER)],
            api[1])
        for argv, owners in (
                (['--user', OTHER_USER, '--all'],
                 {(OTHER_PROJECT, OTHER_USER)}),
                (['--project', base.PROJECT, '--host', 'host2', '--all'],
                 {(base.PROJECT, base.USER)})):
            api, fast = self.both(*argv)
            self.assertEqual(api, fast, argv)
            # The other project's live instance is its user's too.
            self.assertEqual(owners, {(r['project_id'], r['user_id'])
                                      for r in api[1]}, argv)
            self.assertIn(h2, {r['resource_provider'] for r in api[1]})

        groups, metrics = [], []
        for conf_file in (self.conf_file, self.fast_conf):
            rc, out, err = self.manage('allocations', 'list', '--group-by',
                                       'project', '--format', 'json',
                                       conf_file=conf_file)
            self.assertEqual((exit_codes.ORPHANS_FOUND, ''), (rc, err))
            groups.append(json.loads(out))
            rc, out, err = self.manage('allocations', 'list', '--format',
                                       'prometheus', conf_file=conf_file)
            self.assertEqual((exit_codes.ORPHANS_FOUND, ''), (rc, err))
            metrics.append([line for line in out.splitlines() if
                            line.startswith('nova_orphans_project_resources')])
        self.assertEqual(groups[0], groups[1])
        self.assertEqual(metrics[0], metrics[1])
        # Every orphan but the other project's stranger is this
        # project's (the leaked port's bandwidth too); heal holds none.
        rows = [r for r in self.list_json()[1] if r['action'] != 'heal']
        mine = collections.Counter()
        for r in rows:
            if r['project_id'] == base.PROJECT:
                mine.update(r['resources'])
        self.assertEqual([
            {'project_id': base.PROJECT,
             'consumers': len({r['consumer'] for r in rows}) - 1,
             'allocations': len(rows) - 1, 'resources': dict(mine)},
            {'project_id': OTHER_PROJECT, 'consumers': 1, 'allocations': 1,
             'resources': base.FLAVOR}], groups[0])
        line = ('nova_orphans_project_resources{project_id="%s",'
                'resource_class="%s"} %.1f')
        self.assertEqual(
            sorted(line % (base.PROJECT, rc, n) for rc, n in mine.items()) +
            sorted(line % (OTHER_PROJECT, rc, n)
                   for rc, n in base.FLAVOR.items()), metrics[0])

    def test_same_findings_with_a_second_process(self):
        # Every provider read (the first three) is read there.
        with mock.patch.object(placement_db, 'SECOND_PROCESS_FROM', 1), \
                mock.patch.object(second_process, 'run',
                                  wraps=second_process.run) as run:
            for argv in ([], ['--all'], ['--reason', 'active_instance'],
                         ['--host', 'host1', '--all']):
                api, fast = self.both(*argv)
                self.assertEqual(api, fast, argv)
        self.assertEqual(3, run.call_count)

    def _allocations(self, threshold):
        reader = placement_db.PlacementDBReader(self.placement.db_url)
        self.addCleanup(reader.close)
        providers = reader.providers()
        with mock.patch.object(placement_db, 'SECOND_PROCESS_FROM',
                               threshold):
            return reader.allocations(providers)

    def test_second_process_reads_what_the_run_reads(self):
        here = self._allocations(None)
        with mock.patch.object(second_process, 'run',
                               wraps=second_process.run) as run:
            there = self._allocations(1)
        self.assertEqual(1, run.call_count)
        self.assertEqual(list(here), list(there))
        self.assertEqual(here.by_consumer, there.by_consumer)
        # Consumers on several providers, grouped alike.
        self.assertTrue(any(isinstance(held, dict)
                            for held in there.by_consumer.values()))

    def test_second_process_that_cannot_start_reads_here(self):
        here = self._allocations(None)
        with mock.patch.object(second_process.sys, 'executable',
                               '/nonexistent/python3'), \
                mock.patch.object(placement_db.LOG, 'warning') as warning:
            there = self._allocations(1)
        self.assertEqual(list(here), list(there))
        self.assertEqual(here.by_consumer, there.by_consumer)
        warning.assert_called_once_with(
            "Reading placement's allocations in a second process failed "
            "(%(why)s); reading them here.",
            {'why': 'could not start /nonexistent/python3: [Errno 2] No '
                    "such file or directory: '/nonexistent/python3'"})

    def test_list_sends_placement_no_request(self):
        rc, out, err = self.manage('allocations', 'list', '--format', 'json',
                                   '--all', conf_file=self.offline_conf)
        self.assertIn(rc, (0, 3), err)
        self.assertEqual(self.list_json('--all'), (rc, json.loads(out)))

    def test_placement_database_that_cannot_be_read_is_incomplete(self):
        if self.nova.mariadb is not None:
            url = self.nova.mariadb.url('no_such_placement')
        else:
            url = 'sqlite:///' + os.path.join(self.tmp, 'no-such-dir',
                                              'placement.sqlite')
        conf = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'broken.conf'), self.placement.endpoint,
            extra={'nova_orphans': {'state_path': self.state_path},
                   'placement_database': {'connection': url}})
        before = self.placement.dump_state()
        for argv in (('list',), ('list', '--format', 'prometheus'),
                     ('clean', '--dry-run'), ('clean',)):
            rc, out, err = self.manage('allocations', *argv, conf_file=conf)
            self.assertEqual(2, rc, (argv, err))
            self.assertEqual('', out, argv)
            self.assertEqual(1, len(err.strip().splitlines()), err)
            self.assertIn('ERROR: The placement database ', err)
            self.assertIn(' could not be read: ', err)
        self.assertEqual(before, self.placement.dump_state())

    def test_reader_matches_api_reader(self):
        conf = cfg.ConfigOpts()
        orphans_conf.register_opts(conf)
        conf(['--config-file', self.conf_file], project='nova')
        api = placement_api.PlacementAPIReader(
            client_mod.PlacementClient.from_conf(conf))
        fast = placement_db.PlacementDBReader(self.placement.db_url)
        # Other services' providers, as each reader finds them: Cyborg's
        # device under a node, Blazar's reservation provider under one
        # (named after it) and one known by its reservation class; not
        # nova's own marked child, nor a blazar_ name and nothing more.
        h1, h2 = self.providers[:2]
        create = self.placement.create_provider
        foreign = {
            create('host1_fpga0', parent=h1, inventory={'FPGA': 1},
                   traits=['OWNER_CYBORG']): 'OWNER_CYBORG',
            create('blazar_host2', parent=h2): 'blazar',
            create('blazar_elsewhere', inventory={
                'CUSTOM_RESERVATION_0A1B2C3D': 1}): 'blazar'}
        create('host2_0000_81_00_0', parent=h2, inventory={'PGPU': 1},
               traits=['OWNER_NOVA'])
        create('blazar_lookalike', parent=h1)
        providers = api.providers()
        self.assertEqual(providers, fast.providers())
        self.assertEqual(foreign, {u: p.foreign_owner
                                   for u, p in providers.items()
                                   if p.foreign_owner is not None})
        key = (lambda a: (a.provider, a.consumer))
        api_allocs = sorted(api.allocations(providers), key=key)
        self.assertEqual(api_allocs,
                         sorted(fast.allocations(providers), key=key))
        consumers = {a.consumer for a in api_allocs}
        records, allocs = api.consumers(consumers)
        fast_records, fast_allocs = fast.consumers(consumers)
        self.assertEqual(set(records), set(fast_records))
        for uuid, record in records.items():
            mine = fast_records[uuid]
            self.assertEqual(
                (record.project_id, record.user_id, record.generation),
                (mine.project_id, mine.user_id, mine.generation))
            self.assertEqual(record.consumer_type,
                             mine.consumer_type or 'unknown')
        strip = (lambda docs: {c: {rp: a['resources'] for rp, a in d.items()}
                               for c, d in docs.items()})
        self.assertEqual(strip(allocs), strip(fast_allocs))


# Placement's database, read in bulk, on MariaDB as production runs it.
FastModeMariaDBTestCase = base.on_mariadb(FastModeTestCase)
