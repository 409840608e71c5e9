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

import dataclasses

from oslotest import base

from nova_orphans.engine import classify
from nova_orphans.engine import model
from nova_orphans.engine import provider_rules
from nova_orphans.engine import reasons as r
from nova_orphans.tests.unit import cloud as cloud_mod

DEAD = (r.DELETED_COMPUTE_NODE, r.DELETE_PROVIDER)
LIVE = (r.LIVE_COMPUTE_NODE, r.NONE)
UNMANAGED = (r.UNMANAGED, r.NONE)
UNVERIFIABLE = (r.UNVERIFIABLE, r.NONE)


class ProviderRulesTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.cloud = cloud_mod.Cloud()
        self.host1 = self.cloud.node('host1')

    def dead_node(self, host='host9', **changes):
        rp = self.cloud.node(host, deleted=True)
        nodes = self.cloud.nova.compute_nodes
        nodes[rp] = dataclasses.replace(nodes[rp], **changes)
        return rp

    def rows(self):
        snapshot = self.cloud.snapshot()
        return provider_rules.classify(snapshot,
                                       classify.classify(snapshot))

    def verdicts(self):
        return {f.uuid: (f.reason, f.action) for f in self.rows()}

    def test_keys_are_the_contract(self):
        row = self.rows()[0]
        self.assertEqual(list(model.PROVIDER_KEYS), list(row.to_dict()))
        self.assertEqual(row, model.ProviderFinding.from_dict(row.to_dict()))

    def test_fully_reserved_only_on_live_trees_holding_nothing(self):
        pci = self.cloud.provider('host1_pci', parent=self.host1)
        used = self.cloud.provider('host1_pci2', parent=self.host1)
        self.cloud.alloc(cloud_mod.uuid('vm'), used, CUSTOM_PCI=1)
        dead = self.dead_node()
        other = self.cloud.provider('elsewhere')
        self.cloud.placement.fully_reserved.update({
            pci: ('CUSTOM_PCI',), used: ('CUSTOM_PCI',),
            dead: ('VCPU',), other: ('VCPU',)})
        rows = {f.uuid: f for f in self.rows()}
        self.assertEqual({
            self.host1: LIVE, pci: (r.FULLY_RESERVED, r.NONE), used: LIVE,
            dead: (r.DELETED_COMPUTE_NODE, r.DELETE_PROVIDER),
            other: UNMANAGED},
            {u: (f.reason, f.action) for u, f in rows.items()})
        self.assertTrue(rows[pci].details.startswith(
            'All of its CUSTOM_PCI is reserved and nothing is allocated on '
            'it: capacity nobody holds'), rows[pci].details)

    def test_deleted_node_tree_children_included(self):
        dead = self.dead_node()
        agent = self.cloud.provider('host9:agent', parent=dead)
        pf = self.cloud.provider('host9:agent:eth0', parent=agent)
        stranger = cloud_mod.uuid('stranger')
        self.cloud.alloc(stranger, dead)
        self.cloud.alloc(stranger, pf, CUSTOM_BW=10)
        rows = self.rows()
        self.assertEqual([
            (self.host1, 'host1', self.host1, None, 'host1', 'cell1',
             self.host1) + LIVE + (0, 0),
            (dead, 'host9', dead, None, 'host9', 'cell1', dead) + DEAD +
            (1, 1),
            (agent, 'host9:agent', dead, dead, 'host9', 'cell1', dead) +
            DEAD + (0, 0),
            (pf, 'host9:agent:eth0', dead, agent, 'host9', 'cell1', dead) +
            DEAD + (1, 1),
        ], [tuple(f.to_dict()[k] for k in model.PROVIDER_KEYS[:-1])
            for f in rows])
        self.assertEqual(
            'Compute node %s (host9 on host host9) is deleted in cell '
            'cell1; no cell has it live.' % dead, rows[1].details)
        # Parents before children: deleted the other way round.
        self.assertEqual([dead, agent, pf], provider_rules.tree_roots(
            self.cloud.placement.providers)[dead])

    def test_unknown_consumer_on_deleted_node_is_an_orphan(self):
        # The link: on nova's deleted node, a consumer nova has no trace
        # of is unknown_consumer (repaired before the tree goes) ...
        dead = self.dead_node()
        stranger = cloud_mod.uuid('stranger')
        self.cloud.alloc(stranger, dead)
        self.assertEqual({(stranger, dead): (r.UNKNOWN_CONSUMER,
                                             r.DELETE_CONSUMER)},
                         self.cloud.verdicts())

    def test_unknown_consumer_on_foreign_tree_is_kept(self):
        # ... and on a tree nova never knew, it stays unmanaged_provider,
        # and the tree unmanaged.
        foreign = self.cloud.provider('neutron-agent')
        stranger = cloud_mod.uuid('stranger')
        self.cloud.alloc(stranger, foreign)
        self.assertEqual({(stranger, foreign): (r.UNMANAGED_PROVIDER,
                                                r.NONE)},
                         self.cloud.verdicts())
        self.assertEqual(UNMANAGED, self.verdicts()[foreign])

    def test_archived_node(self):
        dead = self.dead_node(archived=True)
        stranger = cloud_mod.uuid('stranger')
        self.cloud.alloc(stranger, dead)
        rows = {f.uuid: f for f in self.rows()}
        self.assertEqual(DEAD, (rows[dead].reason, rows[dead].action))
        self.assertIn('shadow_compute_nodes', rows[dead].details)
        self.assertEqual(r.UNKNOWN_CONSUMER,
                         self.cloud.verdicts()[(stranger, dead)][0])

    def test_proven_by_trait(self):
        # The evidence the row names: nova 34's OWNER_NOVA, nova 27's
        # COMPUTE_NODE, or both.
        for traits, named in ((('COMPUTE_NODE',), 'COMPUTE_NODE'),
                              (('OWNER_NOVA',), 'OWNER_NOVA'),
                              (('OWNER_NOVA', 'COMPUTE_NODE'),
                               'OWNER_NOVA and COMPUTE_NODE')):
            self.cloud = cloud_mod.Cloud()
            dead = self.dead_node(proven_by_trait=traits, host=None)
            row, = self.rows()
            self.assertEqual(
                DEAD + (None, 'The tree\'s root %s carries %s, nova\'s '
                        'mark on its compute nodes, and the compute API, '
                        'every cell answering, lists no hypervisor with '
                        'its uuid: nova deleted that compute node.' %
                        (dead, named)),
                (row.reason, row.action, row.host, row.details))

    def test_other_services_providers_on_a_deleted_node(self):
        # Cyborg's devices and Blazar's reservation provider are children
        # of the node's root: never nova's, and they keep the tree.
        dead = self.dead_node()
        pci = self.cloud.provider('host9_0000:81:00.0', parent=dead)
        fpga = self.cloud.provider('host9_fpga', parent=dead,
                                   foreign_owner='OWNER_CYBORG')
        blazar = self.cloud.provider('blazar_host9', parent=dead,
                                     foreign_owner='blazar')
        rows = {f.uuid: f for f in self.rows()}
        self.assertEqual({self.host1: LIVE, dead: DEAD, pci: DEAD,
                          fpga: UNMANAGED, blazar: UNMANAGED},
                         self.verdicts())
        self.assertEqual(
            'Compute node %s (host9 on host host9) is deleted in cell '
            'cell1; no cell has it live. Provider(s) %s on the tree are '
            'another service\'s: clean leaves the tree.' % (
                dead, ', '.join(sorted([fpga, blazar]))),
            rows[pci].details)
        self.assertEqual(rows[dead].details, rows[pci].details)
        self.assertEqual(
            'The provider carries OWNER_CYBORG: another service\'s, never '
            'judged nova\'s.', rows[fpga].details)
        self.assertEqual(
            'The provider is Blazar\'s reservation provider '
            '(blazar_<host>): another service\'s, never judged nova\'s.',
            rows[blazar].details)
        self.assertEqual(
            sorted([fpga, blazar]), provider_rules.foreign_in_tree(
                self.cloud.placement.providers, [dead, pci, fpga, blazar]))

    def test_other_services_root_even_with_a_cell_down(self):
        other = self.cloud.provider('accel-host', foreign_owner='OWNER_X')
        self.cloud.add_cell('cell2', readable=False)
        self.assertEqual({self.host1: LIVE, other: UNMANAGED},
                         self.verdicts())

    def test_recreated_node_only_old_tree_goes(self):
        old = self.dead_node('host9')
        new = self.cloud.node('host9')
        self.assertEqual({self.host1: LIVE, old: DEAD, new: LIVE},
                         self.verdicts())

    def test_sharing_and_foreign_are_unmanaged(self):
        nfs = self.cloud.provider('nfs', sharing=True)
        other = self.cloud.provider('cyborg')
        self.assertEqual({self.host1: LIVE, nfs: UNMANAGED,
                          other: UNMANAGED}, self.verdicts())

    def test_down_cell(self):
        # Deleted in a readable cell and live in none: still deleted. A
        # root nova has no record of may be the unread cell's node.
        dead = self.dead_node()
        other = self.cloud.provider('cyborg')
        nfs = self.cloud.provider('nfs', sharing=True)
        self.cloud.add_cell('cell2', readable=False)
        self.assertEqual({self.host1: LIVE, dead: DEAD,
                          other: UNVERIFIABLE, nfs: UNMANAGED},
                         self.verdicts())
        row = {f.uuid: f for f in self.rows()}[dead]
        self.assertEqual(
            'Compute node %s (host9 on host host9) is deleted in cell '
            'cell1; no readable cell has it live. Cell(s) cell2 could not '
            'be read: what they may own on the tree is unverifiable, and '
            'keeps it.' % dead, row.details)

    def test_down_cell_deleted_node_kept_by_what_it_may_own(self):
        # The node's uuid may be live in cell2, its instances' consumers
        # known only there: unverifiable, so they hold the tree. A
        # consumer a readable cell deleted is still an orphan.
        dead = self.dead_node()
        self.cloud.add_cell('cell2', readable=False)
        unknown = cloud_mod.uuid('cell2-vm')
        gone = self.cloud.instance('host9', deleted=True)
        self.cloud.alloc(unknown, dead)
        self.cloud.alloc(gone, dead)
        self.assertEqual({
            (unknown, dead): UNVERIFIABLE,
            (gone, dead): (r.DELETED_INSTANCE, r.DELETE_CONSUMER),
        }, self.cloud.verdicts())
        row = {f.uuid: f for f in self.rows()}[dead]
        self.assertEqual(DEAD + (2, 1), (row.reason, row.action,
                                         row.allocations,
                                         row.orphan_allocations))
        self.assertIn('Allocations of %s on the tree are not orphans' %
                      unknown, row.details)

    def test_node_deleted_in_an_unreadable_cell_is_unverifiable(self):
        # Its only row is in the cell that could not be read: nova has no
        # record of it that can be read.
        self.cloud.add_cell('cell2', readable=False)
        dead = self.dead_node()
        del self.cloud.nova.compute_nodes[dead]
        self.cloud.alloc(cloud_mod.uuid('stranger'), dead)
        row = {f.uuid: f for f in self.rows()}[dead]
        self.assertEqual(UNVERIFIABLE + (None,),
                         (row.reason, row.action, row.compute_node))
        self.assertEqual('The tree\'s root is no compute node of any '
                         'readable cell and cell(s) cell2 could not be '
                         'read.', row.details)

    def test_live_consumer_named_in_details(self):
        dead = self.dead_node()
        vm = self.cloud.instance('host1', task_state='migrating')
        self.cloud.alloc(vm, self.host1)
        self.cloud.alloc(vm, dead)
        row = {f.uuid: f for f in self.rows()}[dead]
        self.assertEqual(DEAD + (1, 0), (row.reason, row.action,
                                         row.allocations,
                                         row.orphan_allocations))
        self.assertIn('Allocations of %s on the tree are not orphans' % vm,
                      row.details)

    def test_scope_takes_whole_trees(self):
        dead = self.dead_node()
        child = self.cloud.provider('host9:pf', parent=dead)
        self.cloud.placement.scope = frozenset([child])
        self.assertEqual([dead, child], [f.uuid for f in self.rows()])


class ForeignOwnerTestCase(base.BaseTestCase):

    def test_owner_traits(self):
        owner = model.foreign_owner
        self.assertEqual('OWNER_CYBORG',
                         owner('dev', 'host1', {'OWNER_CYBORG'}, ()))
        self.assertEqual('OWNER_CYBORG, OWNER_ZUN', owner(
            'dev', None, {'OWNER_NOVA', 'OWNER_ZUN', 'OWNER_CYBORG'}, ()))
        self.assertIsNone(owner('host1', None, {'OWNER_NOVA'}, ()))
        self.assertIsNone(owner('host1', None, (), ()))

    def test_blazar(self):
        owner = model.foreign_owner
        self.assertEqual('blazar', owner('blazar_host1', 'host1', (), ()))
        self.assertEqual('blazar', owner(
            'blazar_host1', 'other', (), {'CUSTOM_RESERVATION_0A1B'}))
        self.assertIsNone(owner('blazar_host1', 'other', (), {'VCPU'}))
        self.assertIsNone(owner('blazar_host1', None, (), ()))
        self.assertIsNone(owner('host1', 'x', (),
                                {'CUSTOM_RESERVATION_0A1B'}))
