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
"""Moves that ended, or failed, and left allocations behind.

nova cleans up after a failed move itself; each leak here needs that
clean-up to fail too (placement unreachable, the compute dying at that
point), which is injected where nova does it and nowhere else.
"""

from unittest import mock

from nova import exception

from nova_orphans.tests.scenario import comparison
from nova_orphans.tests.scenario import cycle

FLAVOR = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
BIG = {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 2}

# The clean-up nova runs when a move fails on the source: moving the
# migration's allocations back to the instance.
REVERT_FAILS = mock.patch(
    'nova.compute.manager.ComputeManager._revert_allocation',
    return_value=False)
# placement's DELETE /allocations/{consumer} not reaching placement.
DELETE_LOST = mock.patch('nova.scheduler.client.report.SchedulerReportClient.'
                         'delete_allocation_for_instance')


class MigrationTest(cycle.CycleTestCase):

    HOSTS = ('host1', 'host2')

    def setUp(self):
        super().setUp()
        self.vm1 = self.boot('vm1', 'host1')
        self.src, self.dst = self.rp_uuids['host1'], self.rp_uuids['host2']

    def migration(self):
        """The instance's one migration row, labelled 'migration'."""
        row, = self.migration_rows(self.vm1['id'])
        self.label(row.uuid, 'migration')
        return row

    def resize(self):
        flavor = self._create_flavor(vcpu=2, memory_mb=1024, disk=2,
                                     ephemeral=0)
        return self._resize_server(self.vm1, flavor)

    @comparison.scenario('cold_migration_failed')
    def test_cold_migration_failed(self):
        """Seed 001: the copy timed out, the target kept the allocation.

        The instance is back ACTIVE on the source and holds the target;
        its migration (status error) holds the source. The right repair
        gives the source back to the instance and frees the target.
        """
        with mock.patch(
                'nova.virt.fake.FakeDriver.migrate_disk_and_power_off',
                side_effect=exception.InstanceFaultRollback(
                    inner_exception=Exception('disk copy timed out'))), \
                REVERT_FAILS:
            self.api.post_server_action(self.vm1['id'],
                                        {'migrate': {'host': 'host2'}})
            self._wait_for_action_fail_completion(
                self.vm1, 'migrate', 'compute_resize_instance')
        mig = self.migration()
        self.assertEqual(('migration', 'error', 'host1', 'host2'),
                         (mig.migration_type, mig.status,
                          mig.source_compute, mig.dest_compute))
        self.assertEqual(('active', 'host1'), self.instance_row(
            self.vm1['id'])[2:5:2])
        self._run_periodics()   # nova does not fix it by itself

        vm1 = self.vm1['id']
        states = self.run_cycle([
            self.row(mig.uuid, self.src, 'host1', 'finished_migration',
                     'return_to_instance', FLAVOR, consumer_type='migration',
                     instance=vm1),
            self.row(vm1, self.dst, 'host2', 'stale_provider',
                     'remove_provider', FLAVOR),
        ])
        self.assertEqual({vm1: {self.src: FLAVOR}},
                         {c: d['allocations']
                          for c, d in states['cleaned'].items()})

        # After nova's audit --delete the instance holds nothing at all:
        # we report it, and --heal gives it the allocation clean would
        # have given back.
        self.assertEqual({}, self.placement_state())
        rows = self.list_allocations()
        self.assertEqual(
            [(vm1, self.src, 'missing_allocations', 'heal', {})],
            [(r['consumer'], r['resource_provider'], r['reason'],
              r['action'], r['resources']) for r in rows])
        rc, out = self.run_manage('allocations', 'clean', '--heal')
        self.assertEqual(4, rc, out + self.manage_stderr)
        self.assertEqual(states['cleaned'], self.placement_state())

    @comparison.scenario('live_migration_failed')
    def test_live_migration_failed(self):
        """A live migration fails and its rollback cannot move allocations.

        Same picture as seed 001: during a live migration the instance
        holds the destination and its migration the source.
        """
        def fail(driver, context, instance, dest, post_method,
                 recover_method, block_migration=False, migrate_data=None):
            recover_method(context, instance, dest, migrate_data)

        with mock.patch('nova.virt.fake.FakeDriver.live_migration', fail), \
                REVERT_FAILS:
            self.api.post_server_action(self.vm1['id'], {'os-migrateLive': {
                'host': 'host2', 'block_migration': 'auto'}})
            self._wait_for_migration_status(self.vm1, ['failed'])
        mig = self.migration()
        self.assertEqual('live-migration', mig.migration_type)
        self.assertEqual(('active', 'host1'), self.instance_row(
            self.vm1['id'])[2:5:2])

        vm1 = self.vm1['id']
        self.run_cycle([
            self.row(mig.uuid, self.src, 'host1', 'finished_migration',
                     'return_to_instance', FLAVOR, consumer_type='migration',
                     instance=vm1),
            self.row(vm1, self.dst, 'host2', 'stale_provider',
                     'remove_provider', FLAVOR),
        ])

    @comparison.scenario('resize_confirm_leak')
    def test_resize_confirm_leak(self):
        """Confirming a resize does not free the source.

        nova's confirm deletes the migration's allocation on the source;
        that DELETE is lost. The migration is confirmed, its consumer
        still holds the old flavor on the source, through periodics.
        """
        self.resize()
        mig = self.migration()
        with DELETE_LOST:
            self._confirm_resize(self.vm1)
        self._run_periodics()
        self.assertEqual('confirmed', self.migration().status)

        vm1 = self.vm1['id']
        self.run_cycle([
            self.row(mig.uuid, self.src, 'host1', 'finished_migration',
                     'delete_consumer', FLAVOR, consumer_type='migration',
                     instance=vm1),
            self.row(vm1, self.dst, 'host2', 'active_instance', 'none', BIG),
        ])

    @comparison.scenario('resize_revert_failed')
    def test_resize_revert_failed_on_destination(self):
        """A resize revert fails on the destination; the source stays held.

        One driver fault, nothing else: destroying the resized guest on
        the destination fails, the server goes to ERROR there and the
        migration to error, and the migration's allocation of the old
        flavor on the source is never freed, periodics or not.
        """
        self.resize()
        mig = self.migration()
        with mock.patch('nova.virt.fake.FakeDriver.destroy',
                        side_effect=exception.VirtualInterfaceCreateException(
                        )):
            self.api.post_server_action(self.vm1['id'],
                                        {'revertResize': None})
            self._wait_for_state_change(self.vm1, 'ERROR')
        self.assertEqual('error', self.migration().status)
        self.assertEqual(('error', 'host2'), self.instance_row(
            self.vm1['id'])[2:5:2])
        self._run_periodics()

        vm1 = self.vm1['id']
        self.run_cycle([
            self.row(mig.uuid, self.src, 'host1', 'finished_migration',
                     'delete_consumer', FLAVOR, consumer_type='migration',
                     instance=vm1),
            self.row(vm1, self.dst, 'host2', 'active_instance', 'none', BIG),
        ])
