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
"""Provider layouts other than one compute node per host.

nova's fake driver has no sharing-storage or ironic flavour, so each
class here registers a small driver in ``nova.virt.fake`` (nova loads
``compute_driver`` from there) that reports what those drivers report.
"""

import fixtures
from nova.virt import fake
from oslo_utils.fixture import uuidsentinel as uuids

from nova_orphans.tests.scenario import comparison
from nova_orphans.tests.scenario import cycle


class NoLocalDiskDriver(fake.MediumFakeDriver):
    """A compute node whose disk comes from a sharing provider."""

    def update_provider_tree(self, provider_tree, nodename,
                             allocations=None):
        super().update_provider_tree(provider_tree, nodename, allocations)
        inventory = provider_tree.data(nodename).inventory
        provider_tree.update_inventory(nodename, {
            rc: inv for rc, inv in inventory.items() if rc != 'DISK_GB'})


class IronicLikeDriver(fake.FakeDriver):
    """One compute service, two baremetal nodes, a custom class each."""

    def init_host(self, host):
        super().init_host(host)
        self._set_nodes([host + '-node1', host + '-node2'])

    def update_provider_tree(self, provider_tree, nodename,
                             allocations=None):
        provider_tree.update_inventory(nodename, {'CUSTOM_BAREMETAL_GOLD': {
            'total': 1, 'reserved': 0, 'min_unit': 1, 'max_unit': 1,
            'step_size': 1, 'allocation_ratio': 1.0}})


class SharingDiskProviderTest(cycle.CycleTestCase):

    compute_driver = 'fake.NoLocalDiskDriver'
    # One host: booting with host= would add in_tree and leave the
    # sharing provider out (NoValidHost).
    HOSTS = ('host1',)

    def setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.fake.NoLocalDiskDriver', NoLocalDiskDriver))
        super().setUp()
        self.shared = self.post_provider('shared-disk')['uuid']
        self.put_inventory(self.shared, {'DISK_GB': 1000},
                           traits=['MISC_SHARES_VIA_AGGREGATE'],
                           aggregates=[uuids.shared_disk])
        self._set_aggregate(self.rp_uuids['host1'], uuids.shared_disk)

    @comparison.scenario('sharing_provider')
    def test_server_on_shared_disk(self):
        vm1 = self.boot('vm1')
        self._run_periodics()
        self.run_cycle([
            self.row(vm1['id'], self.rp_uuids['host1'], 'host1',
                     'active_instance', 'none',
                     {'VCPU': 1, 'MEMORY_MB': 512}),
            self.row(vm1['id'], self.shared, None, 'active_instance',
                     'none', {'DISK_GB': 1}),
        ])


class IronicLikeNodeTest(cycle.CycleTestCase):

    HOSTS = ('host1',)

    def setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.fake.IronicLikeDriver', IronicLikeDriver))
        super().setUp()
        self.flags(compute_driver='fake.IronicLikeDriver')
        self._start_compute('ironic1')
        self.nodes = {n: self._get_provider_uuid_by_name(n)
                      for n in ('ironic1-node1', 'ironic1-node2')}
        flavor = self._create_flavor(extra_spec={
            'resources:CUSTOM_BAREMETAL_GOLD': '1', 'resources:VCPU': '0',
            'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'})
        self.baremetal = {'id': flavor}

    @comparison.scenario('ironic_custom_rc')
    def test_baremetal_forced_to_deleted(self):
        """Seed 003's runbook on a baremetal node: a custom class only."""
        vm1 = self.boot('vm1', 'ironic1', flavor=self.baremetal,
                        node='ironic1-node1')
        vm2 = self.boot('vm2', 'ironic1', flavor=self.baremetal,
                        node='ironic1-node2')
        self.force_delete_in_sql(vm2['id'])
        self._run_periodics()
        gold = {'CUSTOM_BAREMETAL_GOLD': 1}
        self.run_cycle([
            self.row(vm1['id'], self.nodes['ironic1-node1'], 'ironic1',
                     'active_instance', 'none', gold),
            self.row(vm2['id'], self.nodes['ironic1-node2'], 'ironic1',
                     'deleted_instance', 'delete_consumer', gold),
        ])
