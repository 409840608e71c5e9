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
"""engine.resting: the providers a finding rests on."""

from oslotest import base

from nova_orphans.engine import model
from nova_orphans.engine import reasons as r
from nova_orphans.engine import resting
from nova_orphans.tests.unit import cloud as cloud_mod

BW = {'NET_BW_EGR_KILOBIT_PER_SEC': 1000}


class RestsOnTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        c = self.cloud = cloud_mod.Cloud()
        self.host1, self.host2 = c.node('host1'), c.node('host2')
        self.child = c.provider('host1-bw', parent=self.host1)
        self.other = c.provider('elsewhere')

    def finding(self, consumer, provider=None):
        return [f for f in self.cloud.findings()
                if f.consumer == consumer and (
                    provider is None or f.resource_provider == provider)]

    def rests_on(self, findings, trees=()):
        return resting.rests_on(self.cloud.snapshot(), findings, trees)

    def test_its_provider_and_wherever_its_consumer_holds(self):
        gone = self.cloud.instance('host1', deleted=True)
        self.cloud.alloc(gone, self.host1)
        self.cloud.alloc(gone, self.other)
        self.cloud.alloc(self.cloud.instance('host2'), self.host2)
        found = self.finding(gone, self.host1)
        self.assertEqual(r.DELETED_INSTANCE, found[0].reason)
        self.assertEqual({self.host1, self.other}, self.rests_on(found))

    def test_a_migration_rests_on_its_instance_and_its_siblings(self):
        vm = self.cloud.instance('host1')
        failed = self.cloud.migration(vm, 'error', 'migration', 'host1',
                                      'host2')
        earlier = self.cloud.migration(vm, 'confirmed', 'migration',
                                       'host2', 'host1')
        self.cloud.alloc(failed, self.host1)
        self.cloud.alloc(vm, self.child, **BW)
        self.cloud.alloc(earlier, self.host2)
        found = self.finding(failed)
        # The instance holds on the source's tree: the migration's is
        # deleted rather than given back (rules.finished_migration).
        self.assertEqual([(r.FINISHED_MIGRATION, r.DELETE_CONSUMER)],
                         [(f.reason, f.action) for f in found])
        self.assertEqual({self.host1, self.child, self.host2},
                         self.rests_on(found))

    def test_an_instance_rests_on_its_migrations(self):
        vm = self.cloud.instance('host2')
        mig = self.cloud.migration(vm, 'confirmed', 'migration', 'host1',
                                   'host2')
        self.cloud.alloc(vm, self.host1)
        self.cloud.alloc(mig, self.host2)
        found = self.finding(vm)
        self.assertEqual(r.STALE_PROVIDER, found[0].reason)
        self.assertEqual({self.host1, self.host2}, self.rests_on(found))

    def test_missing_allocations_rest_on_the_node(self):
        vm = self.cloud.instance('host2')
        found = self.finding(vm)
        self.assertEqual([r.MISSING_ALLOCATIONS],
                         [f.reason for f in found])
        self.assertEqual({self.host2}, self.rests_on(found))

    def test_a_tree_rests_on_each_of_its_providers(self):
        self.assertEqual({self.host1, self.child},
                         self.rests_on([], trees=[self.host1]))
        self.assertEqual(set(), self.rests_on([]))

    def test_what_reading_them_again_corrects(self):
        """A kept read of the source's child shows the instance there:
        the migration's finding is wrong until that child is read again,
        though the finding is not on it.
        """
        vm = self.cloud.instance('host1')
        failed = self.cloud.migration(vm, 'error', 'migration', 'host1',
                                      'host2')
        self.cloud.alloc(failed, self.host1)
        self.cloud.alloc(vm, self.child, **BW)
        found = self.finding(failed)
        self.assertIn(self.child, self.rests_on(found))
        # Read again, the child holds nothing: the instance has nothing
        # of its own on the source, and gets the migration's allocation.
        self.cloud.placement.allocations = [
            a for a in self.cloud.placement.allocations
            if a.provider != self.child]
        self.assertEqual([(r.FINISHED_MIGRATION, r.RETURN_TO_INSTANCE)],
                         [(f.reason, f.action)
                          for f in self.finding(failed)])

    def test_consumers_of(self):
        vm = self.cloud.instance('host1')
        mig = self.cloud.migration(vm, 'error', 'migration', 'host1',
                                   'host2')
        finding = model.Finding(
            consumer=mig, consumer_type=r.MIGRATION, instance=None,
            resource_provider=None, resource_provider_name=None,
            root_provider=None, host=None, cell=None, reason='x',
            action='y', resources={}, project_id=None, user_id=None,
            details='')
        self.assertEqual({mig, vm}, resting.consumers_of(
            self.cloud.nova, [finding]))
