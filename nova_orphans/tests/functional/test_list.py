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
"""``allocations list`` classifies every state of the contract correctly."""

import json
import os
import sqlite3
import uuid as uuidlib

import fixtures
from sqlalchemy.engine import url as sa_url

from nova_orphans import exit_codes
from nova_orphans.tests.functional import base

ORPHANS_FOUND = 3
OTHER_PROJECT = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'
OTHER_USER = 'f0e1d2c3b4a5968778695a4b3c2d1e0f'


class ListTestCase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.host1 = self.add_node('host1')
        self.host2 = self.add_node('host2')

    def test_healthy_cloud_lists_nothing(self):
        vm = self.boot('host1', self.host1)
        self.assertEqual((0, []), self.list_json())
        rc, rows = self.list_json('--all')
        self.assertEqual(0, rc)
        self.assertRows([self.row(vm, self.host1, 'active_instance', 'none',
                                  host='host1')], rows)

    def test_instance_forced_to_deleted_in_sql(self):
        # Seed 003: an ERROR instance set to deleted by hand in SQL.
        vm = self.boot('host1', self.host1, vm_state='error')
        self.nova.force_delete_instance('cell1', vm)
        rc, rows = self.list_json()
        self.assertEqual(ORPHANS_FOUND, rc)
        self.assertRows([self.row(vm, self.host1, 'deleted_instance',
                                  'delete_consumer', host='host1')], rows)

    def test_archived_instance(self):
        vm = self.boot('host1', self.host1)
        self.nova.force_delete_instance('cell1', vm)
        self.nova.archive('cell1')
        rc, rows = self.list_json()
        self.assertIn('archived', rows[0]['details'])
        self.assertRows([self.row(vm, self.host1, 'deleted_instance',
                                  'delete_consumer', host='host1')], rows)

    def test_unknown_consumer(self):
        stranger = str(uuidlib.uuid4())
        self.allocate(stranger, self.host2)
        rc, rows = self.list_json()
        self.assertEqual(ORPHANS_FOUND, rc)
        self.assertRows([self.row(stranger, self.host2, 'unknown_consumer',
                                  'delete_consumer', host='host2',
                                  consumer_type='unknown', instance=None)],
                        rows)

    def test_evacuated_source_including_child_provider(self):
        # Seed 000: evacuated from a fenced host that never came back.
        bw = self.add_child(self.host1, 'host1:eth0',
                            {'NET_BW_EGR_KILOBIT_PER_SEC': 10000})
        vm = self.nova.add_instance('cell1', host='host2', node='host2')
        self.allocate(vm, {self.host1: base.FLAVOR,
                           bw: {'NET_BW_EGR_KILOBIT_PER_SEC': 1000},
                           self.host2: base.FLAVOR})
        self.nova.add_migration('cell1', vm, migration_type='evacuation',
                                status='done', source_compute='host1',
                                source_node='host1', dest_compute='host2',
                                dest_node='host2')
        rc, rows = self.list_json('--all')
        self.assertEqual(ORPHANS_FOUND, rc)
        self.assertRows([
            self.row(vm, self.host1, 'evacuated_source', 'remove_provider',
                     host='host1'),
            self.row(vm, bw, 'evacuated_source', 'remove_provider',
                     host='host1', name='host1:eth0', root=self.host1,
                     resources={'NET_BW_EGR_KILOBIT_PER_SEC': 1000}),
            self.row(vm, self.host2, 'active_instance', 'none',
                     host='host2'),
        ], rows)

    def test_evacuation_in_progress_is_not_an_orphan(self):
        vm = self.nova.add_instance('cell1', host='host1', node='host1',
                                    task_state='rebuilding')
        self.allocate(vm, self.host1, self.host2)
        self.nova.add_migration('cell1', vm, migration_type='evacuation',
                                status='pre-migrating',
                                source_compute='host1', source_node='host1',
                                dest_compute='host2', dest_node='host2')
        rc, rows = self.list_json('--all')
        self.assertEqual(0, rc)
        self.assertRows([
            self.row(vm, self.host1, 'active_instance', 'none',
                     host='host1'),
            self.row(vm, self.host2, 'active_migration', 'none',
                     host='host2')], rows)

    def test_failed_cold_migration_leaves_target_allocation(self):
        # Seed 001: the target kept VCPU 30 of 30 after a failed migrate.
        vm = self.nova.add_instance('cell1', host='host1', node='host1',
                                    vm_state='stopped')
        self.allocate(vm, self.host1, self.host2)
        self.nova.add_migration('cell1', vm, migration_type='migration',
                                status='error', source_compute='host1',
                                source_node='host1', dest_compute='host2',
                                dest_node='host2')
        rc, rows = self.list_json()
        self.assertEqual(ORPHANS_FOUND, rc)
        self.assertRows([self.row(vm, self.host2, 'stale_provider',
                                  'remove_provider', host='host2')], rows)

    def test_resize_awaiting_confirm_is_not_an_orphan(self):
        vm = self.nova.add_instance('cell1', host='host2', node='host2',
                                    vm_state='resized')
        mig = self.nova.add_migration(
            'cell1', vm, migration_type='resize', status='finished',
            source_compute='host1', source_node='host1',
            dest_compute='host2', dest_node='host2')
        self.allocate(mig, self.host1)
        self.allocate(vm, self.host2)
        rc, rows = self.list_json('--all')
        self.assertEqual(0, rc)
        self.assertRows([
            self.row(mig, self.host1, 'active_migration', 'none',
                     host='host1', consumer_type='migration', instance=vm),
            self.row(vm, self.host2, 'active_instance', 'none',
                     host='host2')], rows)

    def test_confirmed_migration_keeps_source_allocation(self):
        vm = self.nova.add_instance('cell1', host='host2', node='host2')
        mig = self.nova.add_migration(
            'cell1', vm, migration_type='resize', status='confirmed',
            source_compute='host1', source_node='host1',
            dest_compute='host2', dest_node='host2')
        self.allocate(mig, self.host1)
        self.allocate(vm, self.host2)
        rc, rows = self.list_json()
        self.assertRows([self.row(mig, self.host1, 'finished_migration',
                                  'delete_consumer', host='host1',
                                  consumer_type='migration', instance=vm)],
                        rows)

    def test_failed_migration_returns_to_instance(self):
        vm = self.nova.add_instance('cell1', host='host1', node='host1')
        mig = self.nova.add_migration(
            'cell1', vm, migration_type='migration', status='error',
            source_compute='host1', source_node='host1',
            dest_compute='host2', dest_node='host2')
        self.allocate(mig, self.host1)
        rc, rows = self.list_json()
        self.assertRows([self.row(mig, self.host1, 'finished_migration',
                                  'return_to_instance', host='host1',
                                  consumer_type='migration', instance=vm)],
                        rows)

    def test_shelved_offloaded(self):
        vm = self.nova.add_instance('cell1', vm_state='shelved_offloaded')
        self.allocate(vm, self.host1)
        rc, rows = self.list_json()
        self.assertRows([self.row(vm, self.host1, 'shelved_offloaded',
                                  'delete_consumer', host='host1')], rows)

    def test_missing_allocations(self):
        vm = self.nova.add_instance('cell1', host='host2', node='host2')
        rc, rows = self.list_json()
        self.assertEqual(ORPHANS_FOUND, rc)
        self.assertRows([self.row(vm, self.host2, 'missing_allocations',
                                  'heal', host='host2', resources={})], rows)

    def test_building_and_soft_deleted_are_not_orphans(self):
        queued = str(uuidlib.uuid4())
        self.nova.add_build_request(queued)
        self.allocate(queued, self.host1)
        soft = self.boot('host1', self.host1, vm_state='soft-delete')
        rc, rows = self.list_json('--all')
        self.assertEqual(0, rc)
        self.assertRows([
            # Not in a cell yet: the cell shown is the provider's.
            self.row(queued, self.host1, 'building', 'none', host='host1'),
            self.row(soft, self.host1, 'soft_deleted', 'none',
                     host='host1')], rows)

    def test_sharing_provider_belongs_to_the_instance(self):
        agg = str(uuidlib.uuid4())
        host3 = self.add_node('host3', aggregates=[agg])
        nfs = self.placement.create_provider(
            'nfs', inventory={'DISK_GB': 1000},
            traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[agg])
        vm = self.nova.add_instance('cell1', host='host3', node='host3')
        self.allocate(vm, {host3: {'VCPU': 1, 'MEMORY_MB': 512},
                           nfs: {'DISK_GB': 10}})
        gone = self.nova.add_instance('cell1', host='host3', node='host3',
                                      deleted=True)
        self.allocate(gone, {nfs: {'DISK_GB': 20}})
        rc, rows = self.list_json('--all')
        self.assertRows([
            self.row(vm, host3, 'active_instance', 'none', host='host3',
                     resources={'VCPU': 1, 'MEMORY_MB': 512}),
            self.row(vm, nfs, 'active_instance', 'none', name='nfs',
                     resources={'DISK_GB': 10}),
            self.row(gone, nfs, 'deleted_instance', 'delete_consumer',
                     name='nfs', resources={'DISK_GB': 20}),
        ], rows)

    def test_ironic_node_with_custom_resource_class(self):
        node = str(uuidlib.uuid4())
        rp = self.add_node('ironic', node=node,
                           inventory={'CUSTOM_BAREMETAL_GOLD': 1})
        vm = self.nova.add_instance('cell1', host='ironic', node=node)
        self.allocate(vm, rp, resources={'CUSTOM_BAREMETAL_GOLD': 1})
        self.assertEqual((0, []), self.list_json())
        self.nova.force_delete_instance('cell1', vm)
        rc, rows = self.list_json()
        self.assertRows([self.row(vm, rp, 'deleted_instance',
                                  'delete_consumer', host='ironic', name=node,
                                  resources={'CUSTOM_BAREMETAL_GOLD': 1})],
                        rows)

    def test_other_services_provider_is_unmanaged(self):
        other = self.placement.create_provider(
            'cyborg-fpga', inventory={'CUSTOM_FPGA': 4})
        stranger = str(uuidlib.uuid4())
        self.allocate(stranger, other, resources={'CUSTOM_FPGA': 1})
        rc, rows = self.list_json('--all')
        self.assertEqual(0, rc)
        self.assertRows([self.row(stranger, other, 'unmanaged_provider',
                                  'none', name='cyborg-fpga',
                                  consumer_type='unknown', instance=None,
                                  cell=None,
                                  resources={'CUSTOM_FPGA': 1})], rows)

    def test_consumer_types_and_owner_are_read_from_placement(self):
        stranger = str(uuidlib.uuid4())
        self.allocate(stranger, self.host1, consumer_type='MIGRATION')
        rc, rows = self.list_json()
        self.assertRows([self.row(stranger, self.host1, 'unknown_consumer',
                                  'delete_consumer', host='host1',
                                  consumer_type='migration', instance=None)],
                        rows)

    def test_projects_and_users(self):
        """--project, --user, --group-by project and the projects' metric:
        what each project's quota usage in placement holds of orphans.
        """
        mine = self.boot('host1', self.host1, vm_state='error')
        self.nova.force_delete_instance('cell1', mine)
        live = self.boot('host2', self.host2)
        theirs = self.nova.add_instance(
            'cell1', host='host2', node='host2', project_id=OTHER_PROJECT,
            user_id=OTHER_USER)
        self.allocate(theirs, self.host2, project_id=OTHER_PROJECT,
                      user_id=OTHER_USER)
        self.nova.force_delete_instance('cell1', theirs)
        stranger = str(uuidlib.uuid4())
        self.allocate(stranger, self.host1, self.host2,
                      project_id=OTHER_PROJECT)
        other = dict(project_id=OTHER_PROJECT, user_id=OTHER_USER)
        theirs_row = self.row(theirs, self.host2, 'deleted_instance',
                              'delete_consumer', host='host2', **other)
        stranger_rows = [
            self.row(stranger, rp, 'unknown_consumer', 'delete_consumer',
                     host=host, consumer_type='unknown', instance=None,
                     project_id=OTHER_PROJECT)
            for rp, host in ((self.host1, 'host1'), (self.host2, 'host2'))]
        mine_row = self.row(mine, self.host1, 'deleted_instance',
                            'delete_consumer', host='host1')
        rc, rows = self.list_json('--project', OTHER_PROJECT)
        self.assertEqual(ORPHANS_FOUND, rc)
        self.assertRows([theirs_row] + stranger_rows, rows)
        rc, rows = self.list_json('--project', OTHER_PROJECT, '--user',
                                  OTHER_USER)
        self.assertRows([theirs_row], rows)
        rc, rows = self.list_json('--user', base.USER)
        self.assertRows([mine_row] + stranger_rows, rows)
        rc, rows = self.list_json('--project', base.PROJECT, '--all')
        self.assertRows([mine_row, self.row(live, self.host2,
                                            'active_instance', 'none',
                                            host='host2')], rows)
        self.assertEqual((0, []), self.list_json('--project', 'nobody'))

        rc, rows = self.list_json('--group-by', 'project')
        self.assertEqual(ORPHANS_FOUND, rc)
        self.assertEqual([
            {'project_id': OTHER_PROJECT, 'consumers': 2, 'allocations': 3,
             'resources': {'VCPU': 3, 'MEMORY_MB': 1536, 'DISK_GB': 3}},
            {'project_id': base.PROJECT, 'consumers': 1, 'allocations': 1,
             'resources': {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}}],
            rows)
        rc, out, err = self.manage('allocations', 'list', '--group-by',
                                   'project', '--format', 'csv')
        self.assertEqual((ORPHANS_FOUND, ''), (rc, err))
        self.assertEqual(
            '"project_id","consumers","allocations","resources"\n'
            '"%s",2,3,"VCPU=3,MEMORY_MB=1536,DISK_GB=3"\n'
            '"%s",1,1,"VCPU=1,MEMORY_MB=512,DISK_GB=1"\n' % (
                OTHER_PROJECT, base.PROJECT), out.replace('\r\n', '\n'))
        rc, out, err = self.manage('allocations', 'list', '--group-by',
                                   'project', '--user', OTHER_USER)
        self.assertEqual((ORPHANS_FOUND, ''), (rc, err))
        self.assertEqual([
            '+----------------------------------+-----------+--------+'
            '----------------------------------+',
            '| Project                          | Consumers | Allocs | '
            'Resources                        |',
            '+----------------------------------+-----------+--------+'
            '----------------------------------+',
            '| %s |         1 |      1 | DISK_GB=1, MEMORY_MB=512, '
            'VCPU=1 |' % OTHER_PROJECT,
            '+----------------------------------+-----------+--------+'
            '----------------------------------+',
            '1 orphaned allocation(s) of 1 consumer(s) on 1 resource '
            'provider(s) hold VCPU=1, MEMORY_MB=512, DISK_GB=1.',
            'Projects most affected: %s (1 consumer(s): VCPU=1, '
            'MEMORY_MB=512, DISK_GB=1).' % OTHER_PROJECT,
            'Next: nova-orphans-manage --config-file %s allocations clean '
            '--dry-run --user %s' % (self.conf_file, OTHER_USER)],
            out.splitlines())

        # The metric: every project, whatever the filters show; beyond
        # [nova_orphans] metrics_max_projects, summed as "other".
        def project_resources(*argv, conf_file=None, code=ORPHANS_FOUND):
            rc, out, err = self.manage('allocations', 'list', '--format',
                                       'prometheus', *argv,
                                       conf_file=conf_file)
            self.assertEqual((code, ''), (rc, err))
            return [line for line in out.splitlines()
                    if line.startswith('nova_orphans_project_resources')]

        line = ('nova_orphans_project_resources{project_id="%s",'
                'resource_class="%s"} %s')
        # (The exit code is the project's: nobody's has no orphan.)
        self.assertEqual([
            line % (base.PROJECT, 'DISK_GB', '1.0'),
            line % (base.PROJECT, 'MEMORY_MB', '512.0'),
            line % (base.PROJECT, 'VCPU', '1.0'),
            line % (OTHER_PROJECT, 'DISK_GB', '3.0'),
            line % (OTHER_PROJECT, 'MEMORY_MB', '1536.0'),
            line % (OTHER_PROJECT, 'VCPU', '3.0')],
            project_resources('--project', 'nobody', code=0))
        bounded = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'bounded.conf'), self.placement.endpoint,
            extra={'nova_orphans': {'state_path': self.state_path,
                                    'metrics_max_projects': '1'}})
        self.assertEqual([
            line % (OTHER_PROJECT, 'DISK_GB', '3.0'),
            line % (OTHER_PROJECT, 'MEMORY_MB', '1536.0'),
            line % (OTHER_PROJECT, 'VCPU', '3.0'),
            line % ('other', 'DISK_GB', '1.0'),
            line % ('other', 'MEMORY_MB', '512.0'),
            line % ('other', 'VCPU', '1.0')],
            project_resources(conf_file=bounded))


class FilterTestCase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.host1 = self.add_node('host1')
        self.host2 = self.add_node('host2')
        self.gone1 = self.boot('host1', self.host1)
        self.gone2 = self.boot('host2', self.host2)
        self.live = self.boot('host2', self.host2)
        for vm in (self.gone1, self.gone2):
            self.nova.force_delete_instance('cell1', vm)

    def consumers(self, *argv):
        return sorted((r['consumer'], r['resource_provider'])
                      for r in self.list_json(*argv)[1])

    def test_resource_provider(self):
        self.assertEqual([(self.gone1, self.host1)],
                         self.consumers('--resource-provider', self.host1))

    def test_host(self):
        self.assertEqual([(self.gone2, self.host2)],
                         self.consumers('--host', 'host2'))
        self.assertEqual(sorted([(self.gone2, self.host2),
                                 (self.live, self.host2)]),
                         self.consumers('--host', 'host2', '--all'))

    def test_reason(self):
        self.assertEqual([(self.live, self.host2)],
                         self.consumers('--reason', 'active_instance'))
        self.assertEqual([], self.consumers('--reason', 'unknown_consumer'))

    def test_missing_allocations_respects_scope(self):
        healthy = self.nova.add_instance('cell1', host='host1', node='host1')
        self.assertEqual([(healthy, self.host1)],
                         self.consumers('--host', 'host1', '--reason',
                                        'missing_allocations'))
        self.assertEqual([], self.consumers('--host', 'host2', '--reason',
                                            'missing_allocations'))

    def test_table_output(self):
        rc, out, err = self.manage('allocations', 'list')
        self.assertEqual(3, rc)
        lines = [line for line in out.splitlines() if self.gone1 in line]
        self.assertEqual(1, len(lines))
        self.assertIn('deleted_instance', lines[0])
        self.assertIn('DISK_GB=1, MEMORY_MB=512, VCPU=1', lines[0])

    def test_config_dir_is_in_the_command_to_paste(self):
        # oslo.config keeps --config-dir as a list (the table's closing
        # line used to end the run with 255 on it), and only the last of
        # several.
        conf_dir, other = (self.useFixture(fixtures.TempDir()).path
                           for _n in '12')
        with open(os.path.join(conf_dir, 'extra.conf'), 'w') as f:
            f.write('[DEFAULT]\n')
        rc, out, err = self.manage('--config-dir', other, '--config-dir',
                                   conf_dir, 'allocations', 'list',
                                   '--max-width', '0')
        self.assertEqual((3, ''), (rc, err))
        self.assertIn('--config-dir %s --config-dir %s allocations clean' % (
            other, conf_dir), out)
        # The journal records the directory as the cloud's configuration,
        # and restore reads it back.
        before = self.placement.dump_state()
        journal = os.path.join(self.tmp, 'config-dir.jsonl')
        rc, out, err = self.manage('--config-dir', conf_dir, 'allocations',
                                   'clean', '--journal', journal)
        self.assertEqual(4, rc, err)
        rc, out, err = self.manage('--config-dir', conf_dir, 'allocations',
                                   'restore', '--journal', journal)
        self.assertEqual(4, rc, err)
        self.assertEqual(before, self.placement.dump_state())

    def test_bad_input_is_one_line_and_127(self):
        missing = str(uuidlib.uuid4())
        for argv, text in (
                (['--resource-provider', 'nope'], 'not a valid UUID'),
                (['--resource-provider', missing], 'does not exist'),
                (['--host', 'nohost'], 'no compute host nohost'),
                (['--project', ' '], '--project must not be empty')):
            rc, out, err = self.manage('allocations', 'list', *argv)
            self.assertEqual((127, ''), (rc, out), argv)
            self.assertEqual(1, len(err.strip().splitlines()), err)
            self.assertIn(text, err)
            self.assertRanCleanly((rc, out, err))
        # What argparse refuses it says, with its usage.
        for argv, text in (
                (['--reason', 'bogus'], "argument --reason: invalid choice: "
                                        "'bogus'"),
                (['--group-by', 'user'], "argument --group-by: invalid "
                                         "choice: 'user'"),
                (['--format', 'xml'], "argument -f/--format: invalid "
                                      "choice: 'xml'")):
            rc, out, err = self.manage('allocations', 'list', *argv)
            self.assertEqual((127, ''), (rc, out), argv)
            lines = err.splitlines()
            self.assertTrue(lines[0].startswith(
                'usage: nova-orphans-manage allocations list '), err)
            self.assertTrue(lines[-1].startswith(
                'nova-orphans-manage allocations list: error: ' + text), err)
            self.assertRanCleanly((rc, out, err))

    def test_unreadable_config_is_a_config_error(self):
        rc, out, err = self.manage('allocations', 'list',
                                   conf_file='/nonexistent/nova.conf')
        self.assertEqual(7, rc)
        self.assertIn('/nonexistent/nova.conf', err)


class DownCellTestCase(base.FunctionalTestCase):

    CELLS = ('cell1', 'cell2')

    def test_cell_that_cannot_be_read_makes_consumers_unverifiable(self):
        host1 = self.add_node('host1')
        host2 = self.add_node('host2', cell='cell2')
        gone = self.boot('host1', host1)
        self.nova.force_delete_instance('cell1', gone)
        elsewhere = self.boot('host2', host2, cell='cell2')
        stranger = str(uuidlib.uuid4())
        self.allocate(stranger, host1)
        self.nova.break_cell('cell2')
        rc, rows = self.list_json('--all')
        self.assertEqual(exit_codes.INCOMPLETE_WITH_ORPHANS, rc)
        self.assertRows([
            self.row(gone, host1, 'deleted_instance', 'delete_consumer',
                     host='host1'),
            self.row(stranger, host1, 'unverifiable', 'none', host='host1',
                     consumer_type='unknown', instance=None),
            self.row(elsewhere, host2, 'unverifiable', 'none', name='host2',
                     cell='cell2'),
        ], rows)
        rc, out, err = self.manage('allocations', 'list')
        self.assertEqual(exit_codes.INCOMPLETE_WITH_ORPHANS, rc)
        self.assertIn('WARNING: cell cell2 could not be read', err)

    def test_cell_that_cannot_be_read_is_never_nothing_found(self):
        """No orphan in the cells read is not "no orphans": exit 2."""
        host1 = self.add_node('host1')
        host2 = self.add_node('host2', cell='cell2')
        here = self.boot('host1', host1)
        elsewhere = self.boot('host2', host2, cell='cell2')
        self.nova.break_cell('cell2')
        for fmt in ('json', 'table'):
            rc, out, err = self.manage('allocations', 'list', '--format',
                                       fmt)
            self.assertEqual(exit_codes.INCOMPLETE, rc, err)
            self.assertEqual(1, len(err.strip().splitlines()), err)
            self.assertIn('WARNING: cell cell2 could not be read', err)
        self.assertEqual('[]\n', self.manage(
            'allocations', 'list', '--format', 'json')[1])
        rc, rows = self.list_json('--all')
        self.assertEqual(exit_codes.INCOMPLETE, rc)
        self.assertRows([
            self.row(here, host1, 'active_instance', 'none', host='host1'),
            self.row(elsewhere, host2, 'unverifiable', 'none', name='host2',
                     cell='cell2'),
        ], rows)
        rc, out, err = self.manage('allocations', 'list', '--format',
                                   'prometheus')
        self.assertEqual(exit_codes.INCOMPLETE, rc, err)
        self.assertIn('\nnova_orphans_unreadable_cells 1.0\n', out)

    def test_slow_cell_bounded_by_cell_timeout(self):
        host1 = self.add_node('host1')
        host2 = self.add_node('host2', cell='cell2')
        here = self.boot('host1', host1)
        elsewhere = self.boot('host2', host2, cell='cell2')
        conf_file = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'impatient.conf'), self.placement.endpoint,
            extra={'nova_orphans': {'state_path': self.state_path,
                                    'cell_timeout': '1'}})
        # Another writer holds cell2: every read there waits on sqlite's
        # lock, 5 seconds, longer than the tool gives a cell.
        path = sa_url.make_url(self.nova.cell_urls['cell2']).database
        locker = sqlite3.connect(path, isolation_level=None)
        self.addCleanup(locker.close)
        locker.execute('BEGIN EXCLUSIVE')
        self.addCleanup(locker.execute, 'ROLLBACK')
        rc, out, err = self.manage('allocations', 'list', '--all',
                                   '--format', 'json', conf_file=conf_file)
        self.assertEqual(exit_codes.INCOMPLETE, rc, err)
        self.assertIn('WARNING: cell cell2 could not be read (not read '
                      'within 1 seconds)', err)
        self.assertRows([
            self.row(here, host1, 'active_instance', 'none', host='host1'),
            self.row(elsewhere, host2, 'unverifiable', 'none', name='host2',
                     cell='cell2'),
        ], json.loads(out))

    def test_password_of_unreachable_cell_never_shown(self):
        host1 = self.add_node('host1')
        self.boot('host1', host1)
        self.nova.set_cell_url(
            'cell2', 'mysql+pymysql://nova:Sup3rS3cret@127.0.0.1:9/nova')
        rc, out, err = self.manage('allocations', 'list', '--all',
                                   '--verbose')
        self.assertEqual(exit_codes.INCOMPLETE, rc, err)
        self.assertIn('WARNING: cell cell2 could not be read', err)
        self.assertNotIn('Sup3rS3cret', out + err)


class TemplatedCellTestCase(base.FunctionalTestCase):

    TEMPLATED = True

    def test_cell_url_template_filled_from_database_connection(self):
        host1 = self.add_node('host1')
        vm = self.boot('host1', host1)
        self.nova.force_delete_instance('cell1', vm)
        rc, rows = self.list_json()
        self.assertRows([self.row(vm, host1, 'deleted_instance',
                                  'delete_consumer', host='host1')], rows)


class RepeatedCallsTestCase(base.FunctionalTestCase):

    def test_each_call_reads_its_own_config(self):
        host1 = self.add_node('host1')
        vm = self.boot('host1', host1)
        self.assertEqual((0, []), self.list_json())
        self.nova.force_delete_instance('cell1', vm)
        self.assertEqual(ORPHANS_FOUND, self.list_json()[0])
        other = self.useFixture(base.nova_db.NovaDatabases())
        conf = other.write_nova_conf(self.tmp + '/other.conf',
                                     self.placement.endpoint)
        rc, out, err = self.manage('allocations', 'list', '--format', 'json',
                                   '--all', conf_file=conf)
        # In the other cloud host1 is no compute node: nobody's orphan.
        self.assertEqual(0, rc)
        self.assertEqual([('unmanaged_provider', vm)],
                         [(r['reason'], r['consumer'])
                          for r in base.json.loads(out)])
        self.assertEqual(ORPHANS_FOUND, self.list_json()[0])


# The same classifications with nova's databases and placement's on
# MariaDB, as production runs them.
ListMariaDBTestCase = base.on_mariadb(
    ListTestCase, 'test_instance_forced_to_deleted_in_sql',
    'test_archived_instance', 'test_unknown_consumer',
    'test_evacuated_source_including_child_provider',
    'test_failed_cold_migration_leaves_target_allocation',
    'test_resize_awaiting_confirm_is_not_an_orphan',
    'test_building_and_soft_deleted_are_not_orphans',
    'test_missing_allocations', 'test_projects_and_users')
DownCellMariaDBTestCase = base.on_mariadb(
    DownCellTestCase,
    'test_cell_that_cannot_be_read_makes_consumers_unverifiable',
    'test_cell_that_cannot_be_read_is_never_nothing_found',
    'test_password_of_unreachable_cell_never_shown')


class MariaDBReadsTestCase(base.FunctionalTestCase):
    """What the tool sends MariaDB: read-only, one transaction per cell."""

    CELLS = ('cell1', 'cell2')
    MARIADB = True

    def statements(self, *argv):
        """{connection id: [(database, command, argument)]} of one run.

        From the server's general query log, on only while the command
        runs: every connection to nova's databases then is the tool's.
        """
        server = self.nova.mariadb
        server.execute("SET GLOBAL log_output = 'TABLE'")
        server.execute('TRUNCATE TABLE mysql.general_log')
        server.execute('SET GLOBAL general_log = 1')
        try:
            rc, out, err = self.manage('allocations', 'list', *argv)
        finally:
            server.execute('SET GLOBAL general_log = 0')
        self.assertEqual(exit_codes.ORPHANS_FOUND, rc, err)
        by_thread = {}
        for thread, command, argument in server.execute(
                'SELECT thread_id, command_type, CONVERT(argument USING '
                'utf8) FROM mysql.general_log'):
            by_thread.setdefault(thread, []).append((command, argument))
        return {t: s for t, s in by_thread.items()
                if any(c == 'Connect' and ' on nova_' in a for c, a in s)}

    def test_each_cell_is_read_in_one_read_only_transaction(self):
        host1 = self.add_node('host1')
        host2 = self.add_node('host2', cell='cell2')
        self.boot('host1', host1)
        gone = self.boot('host2', host2, cell='cell2')
        self.nova.force_delete_instance('cell2', gone)
        connections = self.statements('--all')
        cells = {}
        for thread, statements in connections.items():
            connect = [a for c, a in statements if c == 'Connect']
            database = connect[0].split(' on ')[1].split()[0]
            cells.setdefault(database, []).append(statements)
            queries = [a.strip().upper() for c, a in statements
                       if c == 'Query']
            # Read-only before the first read of a table.
            first_read = min(i for i, q in enumerate(queries)
                             if '\nFROM ' in q)
            self.assertIn('SET SESSION TRANSACTION READ ONLY',
                          queries[:first_read], (database, queries))
            self.assertEqual([], [q for q in queries if q.split()[0] in (
                'INSERT', 'UPDATE', 'DELETE', 'REPLACE', 'LOCK', 'CREATE',
                'DROP', 'ALTER') or 'FOR UPDATE' in q or
                'LOCK IN SHARE MODE' in q], database)
        self.assertEqual({'nova_api', 'nova_cell0', 'nova_cell1',
                          'nova_cell2'}, set(cells))
        for cell in ('nova_cell1', 'nova_cell2'):
            # The live read of a cell: every table in one transaction
            # (one snapshot), ended before the connection is returned.
            transactions = []
            for statements in cells[cell]:
                current = []
                for command, argument in statements:
                    if command != 'Query':
                        continue
                    if argument.strip().upper() in ('COMMIT', 'ROLLBACK'):
                        transactions.append(current)
                        current = []
                    else:
                        current.append(argument)
                self.assertEqual([], [q for q in current
                                      if 'FROM' in q.upper()], cell)
            # (Later look-ups of single consumers are reads of their own.)
            live = [t for t in transactions if any(
                'FROM instances \nWHERE instances.deleted = 0' in q
                for q in t)]
            self.assertEqual(1, len(live), (cell, transactions))
            for table in ('compute_nodes', 'services', 'instances',
                          'migrations'):
                self.assertTrue(any('FROM %s' % table in q
                                    for q in live[0]), (cell, table, live))
        # Nothing left open on the server.
        self.assertEqual((), self.nova.mariadb.execute(
            'SELECT trx_id FROM information_schema.innodb_trx'))
