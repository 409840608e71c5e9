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
"""Deleting a compute service whose provider holds allocations (seed 002).

What nova 34 does (``DELETE /os-services/{id}``):

- 409 while servers are on the host or migrations to or from it are in
  progress (``test_lookalikes`` checks the unconfirmed resize);
- evacuated servers' allocations on the host are removed first
  (``test_evacuate``), so they no longer orphan the provider;
- any other allocation makes placement refuse to delete the provider;
  nova ignores that, deletes the service and the compute node, answers
  204 and leaves the provider behind with the allocation: the thread's
  orphaned provider. Checked here, with the leftover of a confirmed
  resize (the thread's case 2, after the confirm).

With ``allocations clean --host`` first, the delete removes the provider
too; after the fact, the same command still finds the leftover (through
the deleted compute node) and the provider can then be deleted.
"""

from unittest import mock

from nova_orphans.tests.scenario import comparison
from nova_orphans.tests.scenario import cycle

FLAVOR = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
BIG = {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 2}


class ServiceDeleteTest(cycle.CycleTestCase):

    HOSTS = ('host1', 'host2')

    def setUp(self):
        super().setUp()
        vm1 = self.boot('vm1', 'host1')
        flavor = self._create_flavor(vcpu=2, memory_mb=1024, disk=2,
                                     ephemeral=0)
        vm1 = self._resize_server(vm1, flavor)
        mig, = self.migration_rows(vm1['id'])
        self.label(mig.uuid, 'migration')
        with mock.patch('nova.scheduler.client.report.'
                        'SchedulerReportClient.'
                        'delete_allocation_for_instance'):
            self._confirm_resize(vm1)
        self.rp1 = self.rp_uuids['host1']
        self.vm1, self.mig = vm1['id'], mig.uuid

    def expected(self):
        return [
            self.row(self.mig, self.rp1, 'host1', 'finished_migration',
                     'delete_consumer', FLAVOR, consumer_type='migration',
                     instance=self.vm1),
            self.row(self.vm1, self.rp_uuids['host2'], 'host2',
                     'active_instance', 'none', BIG),
        ]

    def delete_service(self, host):
        service = self.force_down(host)
        return self.admin_api.api_delete('/os-services/%s' % service['id'],
                                         check_response_status=[204, 409])

    def provider_status(self):
        return self.placement.get('/resource_providers/%s' % self.rp1).status

    def assert_provider_free(self):
        self.assertEqual({}, self.placement.get(
            '/resource_providers/%s/allocations' % self.rp1
        ).body['allocations'])

    @comparison.scenario('service_delete_leftover')
    def test_delete_leaves_the_provider(self):
        """nova 34: 204, service gone, provider kept with the allocation."""
        self.assertEqual(204, self.delete_service('host1').status)
        self.assertEqual(200, self.provider_status())
        self.assertEqual([], self.admin_api.get_services(
            host='host1', binary='nova-compute'))
        expected = self.expected()
        # The compute node row is deleted; the tool still knows its
        # provider from it, so --host still works.
        self.run_cycle(expected, clean_args=('--host', 'host1'),
                       while_clean=self.assert_provider_free, reset=True)

        rc, out = self.run_manage('allocations', 'clean', '--host', 'host1')
        self.assertEqual(4, rc, out + self.manage_stderr)
        self.assertEqual(204, self.placement.delete(
            '/resource_providers/%s' % self.rp1).status)

    @comparison.scenario('service_delete_after_clean')
    def test_clean_first_then_delete(self):
        """clean --host, then the service delete removes the provider too."""
        self.run_cycle(self.expected(), clean_args=('--host', 'host1'),
                       while_clean=self.assert_provider_free, reset=True)
        before = self.get_allocations(self.vm1)

        rc, out = self.run_manage('allocations', 'clean', '--host', 'host1')
        self.assertEqual(4, rc, out + self.manage_stderr)
        self.assertEqual(204, self.delete_service('host1').status)
        self.assertEqual(404, self.provider_status())
        self.assertEqual(before, self.get_allocations(self.vm1))
        self.assertEqual([], self.list_allocations('--all', '--reason',
                                                   'finished_migration'))
