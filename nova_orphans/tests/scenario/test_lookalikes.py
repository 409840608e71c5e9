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
"""Allocations that look orphaned and are not: nothing may touch them.

Operations in progress are paused inside the fake driver (the method
waits for the test to release it), so both tools see nova mid-flight.
"""

from nova.tests.fixtures import NeutronFixture
from oslo_utils.fixture import uuidsentinel as uuids

from nova_orphans.tests.scenario import comparison
from nova_orphans.tests.scenario import cycle

FLAVOR = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
BIG = {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 2}


class LookAlikeTest(cycle.CycleTestCase):

    HOSTS = ('host1', 'host2')

    def setUp(self):
        super().setUp()
        self.rp1, self.rp2 = self.rp_uuids['host1'], self.rp_uuids['host2']

    def migration(self, server):
        row, = self.migration_rows(server['id'])
        self.label(row.uuid, 'migration')
        return row

    @comparison.scenario('resize_unconfirmed')
    def test_resize_awaiting_confirm(self):
        """VERIFY_RESIZE: the migration holds the source until confirmed.

        Also the thread's case 2 (seed 002) before the confirm: nova 34
        refuses to delete the source's compute service (409).
        """
        vm1 = self.boot('vm1', 'host1')
        flavor = self._create_flavor(vcpu=2, memory_mb=1024, disk=2,
                                     ephemeral=0)
        self._resize_server(vm1, flavor)
        mig = self.migration(vm1)
        self.assertEqual('finished', mig.status)
        self.run_cycle([
            self.row(mig.uuid, self.rp1, 'host1', 'active_migration', 'none',
                     FLAVOR, consumer_type='migration', instance=vm1['id']),
            self.row(vm1['id'], self.rp2, 'host2', 'active_instance', 'none',
                     BIG),
        ])
        service = self.force_down('host1')
        resp = self.admin_api.api_delete('/os-services/%s' % service['id'],
                                         check_response_status=[409])
        self.assertIn('in-progress migrations', str(resp.body))

    @comparison.scenario('evacuation_in_progress')
    def test_evacuation_in_progress(self):
        """Paused while the destination spawns the evacuated server."""
        vm1 = self.boot('vm1', 'host1')
        self.force_down('host1')
        gate = self.pause('nova.virt.fake.FakeDriver.spawn')
        self.api.post_server_action(vm1['id'],
                                    {'evacuate': {'host': 'host2'}})
        gate.entered()
        mig = self.migration(vm1)
        self.assertEqual(('evacuation', 'pre-migrating'),
                         (mig.migration_type, mig.status))
        self.run_cycle([
            self.row(vm1['id'], self.rp1, 'host1', 'active_instance', 'none',
                     FLAVOR),
            self.row(vm1['id'], self.rp2, 'host2', 'active_migration',
                     'none', FLAVOR),
        ])
        gate.release()
        self._wait_for_migration_status(vm1, ['done'])

    @comparison.scenario('live_migration_in_progress')
    def test_live_migration_in_progress(self):
        """Paused inside the driver's live_migration."""
        vm1 = self.boot('vm1', 'host1')
        gate = self.pause('nova.virt.fake.FakeDriver.live_migration')
        self.api.post_server_action(vm1['id'], {'os-migrateLive': {
            'host': 'host2', 'block_migration': 'auto'}})
        gate.entered()
        mig = self.migration(vm1)
        self.assertEqual(('live-migration', 'running'),
                         (mig.migration_type, mig.status))
        self.run_cycle([
            self.row(mig.uuid, self.rp1, 'host1', 'active_migration', 'none',
                     FLAVOR, consumer_type='migration', instance=vm1['id']),
            self.row(vm1['id'], self.rp2, 'host2', 'active_migration',
                     'none', FLAVOR),
        ])
        gate.release()
        self._wait_for_migration_status(vm1, ['completed'])

    @comparison.scenario('scheduling')
    def test_scheduled_not_yet_in_cell(self):
        """The scheduler claimed, the instance is not in its cell yet.

        Paused where the conductor creates the instance row: only the
        build request and a cell-less instance mapping know the server.
        The pause is before it targets the cell: nova's harness lets no
        other thread reach another cell (cell0, which nova's API reads)
        while one is inside a cell.
        """
        gate = self.pause('nova.conductor.manager.obj_target_cell')
        vm1 = self.boot('vm1', 'host1', wait=None)
        gate.entered()
        self.assertIsNone(self.instance_row(vm1['id']))
        self.run_cycle([
            self.row(vm1['id'], self.rp1, 'host1', 'building', 'none',
                     FLAVOR),
        ])
        gate.release()
        self._wait_for_state_change(vm1, 'ACTIVE')

    @comparison.scenario('building')
    def test_building(self):
        """Paused while the compute spawns a new server."""
        gate = self.pause('nova.virt.fake.FakeDriver.spawn')
        vm1 = self.boot('vm1', 'host1', wait=None)
        gate.entered()
        self.assertEqual(('building', 'spawning'),
                         tuple(self.instance_row(vm1['id'])[2:4]))
        self.run_cycle([
            self.row(vm1['id'], self.rp1, 'host1', 'building', 'none',
                     FLAVOR),
        ])
        gate.release()
        self._wait_for_state_change(vm1, 'ACTIVE')

    @comparison.scenario('unshelving')
    def test_unshelving(self):
        """Unshelving an offloaded server: paused while it spawns again."""
        vm1 = self.boot('vm1', 'host1')
        self.api.post_server_action(vm1['id'], {'shelve': {}})
        self._wait_for_server_parameter(vm1, {
            'status': 'SHELVED_OFFLOADED', 'OS-EXT-SRV-ATTR:host': None})
        gate = self.pause('nova.virt.fake.FakeDriver.spawn')
        self.api.post_server_action(vm1['id'],
                                    {'unshelve': {'host': 'host1'}})
        gate.entered()
        self.assertEqual(('shelved_offloaded', 'spawning'),
                         tuple(self.instance_row(vm1['id'])[2:4]))
        self.run_cycle([
            self.row(vm1['id'], self.rp1, 'host1', 'active_instance',
                     'none', FLAVOR),
        ])
        gate.release()
        self._wait_for_state_change(vm1, 'ACTIVE')

    @comparison.scenario('soft_deleted')
    def test_soft_deleted(self):
        """Soft-deleted (reclaim_instance_interval > 0): still restorable."""
        self.flags(reclaim_instance_interval=3600)
        vm1 = self.boot('vm1', 'host1')
        self.api.delete_server(vm1['id'])
        self._wait_for_state_change(vm1, 'SOFT_DELETED')
        self.run_cycle([
            self.row(vm1['id'], self.rp1, 'host1', 'soft_deleted', 'none',
                     FLAVOR),
        ])

    @comparison.scenario('bandwidth_port')
    def test_port_bandwidth_on_child_provider(self):
        """A port with a minimum-bandwidth request, as neutron models it.

        The OVS agent and bridge providers are children of the compute
        node (neutron creates them); nova allocates the port's bandwidth
        on the bridge when it boots the server.
        """
        agent = self.post_provider('host1:Open vSwitch agent', self.rp1)
        bridge = self.post_provider('host1:Open vSwitch agent:br-ex',
                                    agent['uuid'])
        self.put_inventory(bridge['uuid'], {
            'NET_BW_IGR_KILOBIT_PER_SEC': 10000,
            'NET_BW_EGR_KILOBIT_PER_SEC': 10000,
        }, traits=['CUSTOM_VNIC_TYPE_NORMAL', 'CUSTOM_PHYSNET2'])
        port = NeutronFixture.port_with_resource_request
        vm1 = self.boot('vm1', 'host1', networks=[{'port': port['id']}])
        self._run_periodics()
        self.run_cycle([
            self.row(vm1['id'], self.rp1, 'host1', 'active_instance', 'none',
                     FLAVOR),
            self.row(vm1['id'], bridge['uuid'], 'host1', 'active_instance',
                     'none', port['resource_request']['resources']),
        ])

    @comparison.scenario('foreign_provider')
    def test_provider_of_another_service(self):
        """Zun registers its container hosts in placement, with VCPU too."""
        vm1 = self.boot('vm1', 'host1')
        zun = self.post_provider('zun-host1')
        self.put_inventory(zun['uuid'], {'VCPU': 8, 'MEMORY_MB': 4096})
        container = self.label(uuids.container1, 'container1')
        used = {'VCPU': 1, 'MEMORY_MB': 256}
        self.put_allocations(container, {zun['uuid']: used},
                             uuids.zun_project, uuids.zun_user)
        self.run_cycle([
            self.row(vm1['id'], self.rp1, 'host1', 'active_instance', 'none',
                     FLAVOR),
            self.row(container, zun['uuid'], None, 'unmanaged_provider',
                     'none', used, consumer_type='unknown', cell=None,
                     project_id=uuids.zun_project, user_id=uuids.zun_user),
        ])

    @comparison.scenario('cell_down')
    def test_cell_database_down(self):
        """cell1's database cannot be read, by the tool or by nova."""
        vm1 = self.boot('vm1', 'host1')
        vm2 = self.boot('vm2', 'host2')
        self.break_cell_for_nova_too('cell1')
        self.run_cycle([
            self.row(vm1['id'], self.rp1, None, 'unverifiable', 'none',
                     FLAVOR),
            self.row(vm2['id'], self.rp2, None, 'unverifiable', 'none',
                     FLAVOR),
        ])
        self.assertIn('cell cell1 could not be read', self.manage_stderr)
