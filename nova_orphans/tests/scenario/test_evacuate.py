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
"""Evacuation from a fenced host that never comes back (admin guide, seed 000).

nova leaves the evacuated server's allocation on the source provider until
the source compute restarts and cleans up. If it never restarts, that
allocation is orphaned: the fix is to remove the source provider from the
consumer's allocations and keep the destination's.
"""

from nova_orphans.tests.scenario import comparison
from nova_orphans.tests.scenario import cycle

FLAVOR = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}


class EvacuateFromDownHostTest(cycle.CycleTestCase):

    def setUp(self):
        super().setUp()
        self.server = self._boot_and_check_allocations(self.flavor, 'host1')
        self.label(self.server['id'], 'vm1')
        self.force_down('host1')
        # Name the target: the scheduler would pick host2 or host3.
        self.server = self._evacuate_server(
            self.server, extra_post_args={'host': 'host2'},
            expected_host='host2')
        self.src, self.dst = self.rp_uuids['host1'], self.rp_uuids['host2']
        self.resources = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}

    def test_source_allocation_is_orphaned(self):
        # The state the guide describes: one consumer, both providers.
        self.assertEqual({self.src: self.resources, self.dst: self.resources},
                         self.get_allocations(self.server['id']))

        # nova's own audit flags the source allocation (the evacuation
        # migration is 'done', the instance is on host2), and only that.
        rc, out = self.run_nova_audit(verbose=True)
        self.assertEqual(3, rc, out)
        self.assertEqual(
            ['Allocations were set against consumer UUID %s but no existing '
             'instances or active migrations are related. '
             % self.server['id'],
             'Allocations for consumer UUID %s on Resource Provider %s can '
             'be deleted: %s' % (self.server['id'], self.src, self.resources),
             'Processed 1 allocation.'],
            out.splitlines())

        # Right after the evacuation nova may still be at it: the source
        # allocation waits for the grace period (rules.unsettled).
        self.assertEqual(
            {self.src: ('in_progress', 'none'),
             self.dst: ('active_instance', 'none')},
            {row['resource_provider']: (row['reason'], row['action'])
             for row in self.list_allocations('--all')})
        self.assertEqual([], self.list_allocations())

        # As an operator finds it later.
        self.age_nova()
        rows = {row['resource_provider']: row
                for row in self.list_allocations('--all')}
        self.assertEqual({self.src, self.dst}, set(rows))
        source, dest = rows[self.src], rows[self.dst]
        self.assertEqual(
            (self.server['id'], 'host1', 'evacuated_source',
             'remove_provider', self.resources),
            (source['consumer'], source['host'], source['reason'],
             source['action'], source['resources']))
        self.assertEqual(('host2', 'active_instance', 'none'),
                         (dest['host'], dest['reason'], dest['action']))

        # Without --all only the orphan is listed.
        self.assertEqual([self.src], [row['resource_provider']
                                      for row in self.list_allocations()])

    def test_templated_cell_mapping(self):
        """Same verdict when cell1's mapping is a template."""
        self.template_cell('cell1')
        self.age_nova()
        self.assertEqual(
            [(self.src, 'evacuated_source')],
            [(row['resource_provider'], row['reason'])
             for row in self.list_allocations()])

    def test_unreadable_cell_is_never_an_orphan(self):
        """Without cell1's database nothing can be proven orphaned."""
        self.break_cell('cell1', 'missing')
        rows = self.list_allocations('--all')
        self.assertEqual(
            {(self.src, 'unverifiable', 'none'),
             (self.dst, 'unverifiable', 'none')},
            {(row['resource_provider'], row['reason'], row['action'])
             for row in rows})
        self.assertIn('cell cell1 could not be read', self.manage_stderr)

    @comparison.scenario('evacuated')
    def test_cycle(self):
        vm1 = self.server['id']
        self.run_cycle([
            self.row(vm1, self.src, 'host1', 'evacuated_source',
                     'remove_provider', FLAVOR),
            self.row(vm1, self.dst, 'host2', 'active_instance', 'none',
                     FLAVOR),
        ])

    def test_service_delete_removes_evacuated_source(self):
        """nova 34 fixed the thread's case 1 (seed 002) by itself.

        Deleting the dead source's compute service removes the
        evacuated servers' allocations there, then the provider: no
        orphan is left for anyone to find.
        """
        service = self.admin_api.get_services(
            host='host1', binary='nova-compute')[0]
        self.admin_api.api_delete('/os-services/%s' % service['id'],
                                  check_response_status=[204])
        self.assertEqual(404, self.placement.get(
            '/resource_providers/%s' % self.src).status)
        self.assertEqual({self.dst: self.resources},
                         self.get_allocations(self.server['id']))
        self.assertEqual([], self.list_allocations())


class EvacuateWithNestedProviderTest(cycle.CycleTestCase):
    """The same, with part of the server on a child of the source node.

    The fake driver reports ``<node>-child`` with CUSTOM_MAGIC, and the
    flavor asks for one: nova's own nested allocation, on both nodes
    after the evacuation. The orphan is the whole source tree.
    """

    compute_driver = 'fake.MediumFakeDriverWithNestedCustomResources'
    HOSTS = ('host1', 'host2')

    @comparison.scenario('evacuated_nested')
    def test_cycle(self):
        flavor = self._create_flavor(
            vcpu=1, memory_mb=512, disk=1, ephemeral=0,
            extra_spec={'resources:CUSTOM_MAGIC': '1'})
        server = self.boot('vm1', 'host1', flavor={'id': flavor})
        self.force_down('host1')
        self._evacuate_server(server, extra_post_args={'host': 'host2'},
                              expected_host='host2')
        child = {h: self._get_provider_uuid_by_name(h + '-child')
                 for h in self.HOSTS}
        vm1, magic = server['id'], {'CUSTOM_MAGIC': 1}
        self.run_cycle([
            self.row(vm1, self.rp_uuids['host1'], 'host1',
                     'evacuated_source', 'remove_provider', FLAVOR),
            self.row(vm1, child['host1'], 'host1', 'evacuated_source',
                     'remove_provider', magic),
            self.row(vm1, self.rp_uuids['host2'], 'host2', 'active_instance',
                     'none', FLAVOR),
            self.row(vm1, child['host2'], 'host2', 'active_instance', 'none',
                     magic),
        ])
