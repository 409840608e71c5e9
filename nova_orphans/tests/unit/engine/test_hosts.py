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
"""The host view: each number as placement itself computes it."""

import dataclasses

from oslotest import base

from nova_orphans.engine import hosts
from nova_orphans.engine import reasons as r
from nova_orphans.engine import shapes
from nova_orphans.tests.unit import cloud as cloud_mod

SEED = shapes.from_resources(['VCPU=30', 'MEMORY_MB=741376',
                              'DISK_GB=1638'])
SMALL = shapes.from_resources(['VCPU=1', 'MEMORY_MB=512', 'DISK_GB=1'])
VF = 'SRIOV_NET_VF'
BW = 'NET_BW_EGR_KILOBIT_PER_SEC'


def inv(total, **kw):
    return hosts.Inventory(total=total, **kw)


def node_inventory(vcpu=36, memory=32768, disk=100, **kw):
    return {'VCPU': inv(vcpu, max_unit=vcpu, **kw),
            'MEMORY_MB': inv(memory, max_unit=memory),
            'DISK_GB': inv(disk, max_unit=disk)}


def shape(traits=(), forbidden=(), **resources):
    return shapes.Shape(shapes.plain(resources), resources,
                        frozenset(traits), frozenset(forbidden))


class HostViewTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.cloud = cloud_mod.Cloud()
        self.inventories = {}
        self.traits = {}

    def view(self, *shape_list):
        return hosts.host_view(self.cloud.snapshot(), self.cloud.findings(),
                               self.inventories, shape_list, self.traits)

    def row(self, view, provider):
        found, = [row for row in view.rows if row.provider == provider]
        return found

    def fits(self, provider, *shape_list):
        """[(now, after_clean)] of each shape on ``provider``'s tree."""
        return [(f.now, f.after_clean)
                for f in self.row(self.view(*shape_list), provider).fits]

    def orphan(self, provider, **resources):
        """A consumer nova has no trace of (delete_consumer)."""
        consumer = cloud_mod.uuid('gone')
        self.cloud.alloc(consumer, provider, **resources)
        return consumer


class SeedStoryTestCase(HostViewTestCase):
    """The operator's failed cold migration: the server back on its
    source, its allocation left on the destination.
    """

    def setUp(self):
        super().setUp()
        self.src = self.cloud.node('eli-hda1-010')
        self.dst = self.cloud.node('eli-hda1-016')
        for rp in (self.src, self.dst):
            self.inventories[rp] = {
                'VCPU': inv(30, max_unit=30),
                'MEMORY_MB': inv(772495, reserved=8192, max_unit=772495),
                'DISK_GB': inv(1760, max_unit=1760)}
        vm = self.cloud.instance('eli-hda1-010')
        held = {'VCPU': 30, 'MEMORY_MB': 741376, 'DISK_GB': 1668}
        self.cloud.alloc(vm, self.src, **held)
        self.cloud.alloc(vm, self.dst, **held)

    def test_held_free_and_fits(self):
        view = self.view(SEED, SMALL)
        self.assertEqual([r.STALE_PROVIDER], [
            f.reason for f in self.cloud.findings() if f.is_orphan])
        self.assertEqual([hosts.HostRow(
            host='eli-hda1-016', provider=self.dst,
            provider_name='eli-hda1-016',
            held={'VCPU': 30, 'MEMORY_MB': 741376, 'DISK_GB': 1668},
            free={'VCPU': 0, 'MEMORY_MB': 22927, 'DISK_GB': 92},
            free_after_clean={'VCPU': 30, 'MEMORY_MB': 764303,
                              'DISK_GB': 1760},
            fits=[hosts.Fit(SEED.name, 0, 1), hosts.Fit(SMALL.name, 0, 30)],
            given_back={'eli-hda1-016': {'VCPU': 30, 'MEMORY_MB': 741376,
                                         'DISK_GB': 1668}},
            share=1.0)], view.shown())
        # The source runs the server: nothing held, and every node is a
        # row of the whole view, most held first.
        self.assertEqual([self.dst, self.src],
                         [row.provider for row in view.shown(every=True)])
        src = self.row(view, self.src)
        self.assertEqual(({}, [(0, 0), (0, 0)]),
                         (src.held, [(f.now, f.after_clean)
                                     for f in src.fits]))

    def test_row_as_printed(self):
        row, = self.view(SEED).shown()
        self.assertEqual(hosts.HOST_KEYS, tuple(row.to_dict()))
        self.assertEqual(
            {'host': 'eli-hda1-016', 'provider': self.dst,
             'held': {'VCPU': 30, 'MEMORY_MB': 741376, 'DISK_GB': 1668},
             'free': {'VCPU': 0, 'MEMORY_MB': 22927, 'DISK_GB': 92},
             'free_after_clean': {'VCPU': 30, 'MEMORY_MB': 764303,
                                  'DISK_GB': 1760},
             'fits': [{'shape': 'VCPU=30,MEMORY_MB=741376,DISK_GB=1638',
                       'now': 0, 'after_clean': 1}]},
            row.to_dict())
        self.assertEqual(hosts.FIT_KEYS, tuple(row.to_dict()['fits'][0]))

    def test_summary(self):
        summary = self.view(SEED, SMALL).summary()
        self.assertEqual(hosts.Summary(
            held={'VCPU': 30, 'MEMORY_MB': 741376, 'DISK_GB': 1668},
            shapes=[hosts.ShapeTotal(SEED.name, 0, 1, 1),
                    hosts.ShapeTotal(SMALL.name, 0, 30, 1)]), summary)
        self.assertEqual([1, 30], [t.more for t in summary.shapes])


class CapacityTestCase(HostViewTestCase):

    def setUp(self):
        super().setUp()
        self.host = self.cloud.node('host1')

    def test_capacity_is_placements_floor(self):
        # (7 - 0) * 1.5 = 10.5: placement lets allocations sum to 10.
        self.inventories[self.host] = {'VCPU': inv(7, allocation_ratio=1.5)}
        self.orphan(self.host, VCPU=3)
        row = self.row(self.view(shape(VCPU=1)), self.host)
        self.assertEqual(({'VCPU': 7}, {'VCPU': 10}, [hosts.Fit(
            'VCPU=1', 7, 10)]), (row.free, row.free_after_clean, row.fits))

    def test_reserved_and_ratio(self):
        self.inventories[self.host] = {
            'MEMORY_MB': inv(1000, reserved=100, allocation_ratio=1.1)}
        self.orphan(self.host, MEMORY_MB=500)
        # int((1000 - 100) * 1.1) = 990, of which 500 are used.
        self.assertEqual([(3, 6)],
                         self.fits(self.host, shape(MEMORY_MB=160)))

    def test_over_capacity_is_negative_free_and_no_room(self):
        # A ratio lowered under what is allocated: placement keeps the
        # allocations and accepts no more.
        self.inventories[self.host] = {'VCPU': inv(4)}
        vm = self.cloud.instance('host1')
        self.cloud.alloc(vm, self.host, VCPU=6)
        row = self.row(self.view(shape(VCPU=1)), self.host)
        self.assertEqual(({'VCPU': -2}, [hosts.Fit('VCPU=1', 0, 0)]),
                         (row.free, row.fits))

    def test_units(self):
        self.inventories[self.host] = {
            'VCPU': inv(64, min_unit=2, max_unit=8, step_size=2)}
        self.assertEqual(
            [(32, 32), (0, 0), (0, 0), (0, 0), (8, 8)],
            self.fits(self.host, shape(VCPU=2), shape(VCPU=1),
                      shape(VCPU=3), shape(VCPU=10), shape(VCPU=8)))

    def test_a_class_the_tree_lacks_fits_nothing(self):
        self.inventories[self.host] = node_inventory()
        self.assertEqual([(0, 0)],
                         self.fits(self.host, shape(VCPU=1, VGPU=1)))

    def test_the_least_room_of_the_classes_decides(self):
        self.inventories[self.host] = node_inventory(
            vcpu=36, memory=4096, disk=100)
        self.orphan(self.host, VCPU=1, MEMORY_MB=2048, DISK_GB=1)
        self.assertEqual([(2, 4)], self.fits(
            self.host, shape(VCPU=1, MEMORY_MB=1024, DISK_GB=1)))

    def test_inventory_not_given_is_no_capacity(self):
        self.orphan(self.host, VCPU=1)
        row = self.row(self.view(shape(VCPU=1)), self.host)
        self.assertEqual(({'VCPU': 1}, {}, {}, [hosts.Fit('VCPU=1', 0, 0)]),
                         (row.held, row.free, row.free_after_clean,
                          row.fits))
        self.assertEqual(float('inf'), row.share)


class NestedTestCase(HostViewTestCase):
    """Each class's amount from one provider of the tree; different
    classes from different providers.
    """

    def setUp(self):
        super().setUp()
        self.host = self.cloud.node('host1')
        self.pf1 = self.cloud.provider('host1:pf1', parent=self.host)
        self.pf2 = self.cloud.provider('host1:pf2', parent=self.host)
        self.inventories[self.host] = node_inventory()
        self.inventories[self.pf1] = {VF: inv(3)}
        self.inventories[self.pf2] = {VF: inv(3)}

    def test_an_amount_is_never_split_over_providers(self):
        # 6 VFs free in the tree, but no provider has room for 2 twice.
        self.assertEqual([(2, 2), (6, 6), (0, 0)], self.fits(
            self.host, shape(VCPU=1, **{VF: 2}), shape(VCPU=1, **{VF: 1}),
            shape(VCPU=1, **{VF: 4})))

    def test_free_is_summed_over_the_tree(self):
        self.orphan(self.pf1, **{VF: 2})
        row = self.row(self.view(shape(**{VF: 2})), self.host)
        self.assertEqual(
            ({VF: 2}, 4, 6, {'host1:pf1': {VF: 2}}, [(1, 2)]),
            (row.held, row.free[VF], row.free_after_clean[VF],
             row.given_back, [(f.now, f.after_clean) for f in row.fits]))

    def test_forbidden_trait_excludes_its_provider_only(self):
        self.traits[self.pf1] = frozenset({'CUSTOM_SLOW'})
        self.assertEqual(
            [(1, 1), (36, 36)],
            self.fits(self.host, shape(forbidden=['CUSTOM_SLOW'],
                                       **{VF: 2}),
                      # pf1 gives nothing a VCPU-only server asks for.
                      shape(forbidden=['CUSTOM_SLOW'], VCPU=1)))
        self.traits[self.host] = frozenset({'CUSTOM_SLOW'})
        self.assertEqual([(0, 0)], self.fits(
            self.host, shape(forbidden=['CUSTOM_SLOW'], VCPU=1)))

    def test_required_traits_from_the_providers_taken(self):
        self.traits[self.pf2] = frozenset({'CUSTOM_FAST'})
        self.traits[self.host] = frozenset({'HW_CPU_X86_AVX2'})
        self.assertEqual(
            [(1, 1), (36, 36), (1, 1), (0, 0), (0, 0)],
            self.fits(self.host,
                      shape(['CUSTOM_FAST'], VCPU=1, **{VF: 2}),
                      shape(['HW_CPU_X86_AVX2'], VCPU=1),
                      shape(['HW_CPU_X86_AVX2', 'CUSTOM_FAST'], VCPU=1,
                            **{VF: 3}),
                      # A trait only a provider the server takes nothing
                      # from carries is not the server's.
                      shape(['CUSTOM_FAST'], VCPU=1),
                      shape(['CUSTOM_NOWHERE'], VCPU=1)))

    def test_one_required_trait_split_between_classes(self):
        # Each server needs CUSTOM_X from its VCPU's provider or from
        # its VF's: pf1 carries it for 3 servers, the root for none.
        self.inventories[self.host] = {'VCPU': inv(4)}
        self.traits[self.pf1] = frozenset({'CUSTOM_X'})
        self.assertEqual([(3, 3)], self.fits(
            self.host, shape(['CUSTOM_X'], VCPU=1, **{VF: 1})))
        self.traits[self.host] = frozenset({'CUSTOM_X'})
        self.assertEqual([(4, 4)], self.fits(
            self.host, shape(['CUSTOM_X'], VCPU=1, **{VF: 1})))


class ServersTestCase(base.BaseTestCase):
    """hosts.servers on hand-made slots."""

    def test_one_trait_over_two_classes(self):
        x, none = frozenset({'X'}), frozenset()
        self.assertEqual(7, hosts.servers(
            {'A': [(5, x), (5, none)], 'B': [(3, none), (4, x)]}, {'X'}))
        self.assertEqual(2, hosts.servers(
            {'A': [(1, x), (9, none)], 'B': [(1, x), (9, none)]}, {'X'}))

    def test_two_traits_each_on_some_providers(self):
        a, b = frozenset({'A'}), frozenset({'B'})
        self.assertEqual(7, hosts.servers(
            {'VCPU': [(5, a), (5, b)], VF: [(3, b), (4, a)]}, {'A', 'B'}))

    def test_nothing(self):
        self.assertEqual(0, hosts.servers({}))
        self.assertEqual(0, hosts.servers({'VCPU': [(0, frozenset())]}))


class SharingTestCase(HostViewTestCase):

    def setUp(self):
        super().setUp()
        self.host1 = self.cloud.node('host1', aggregates=['agg'])
        self.host2 = self.cloud.node('host2', aggregates=['agg'])
        self.host3 = self.cloud.node('host3')
        self.nfs = self.cloud.provider('nfs', sharing=True,
                                       aggregates=['agg'])
        for rp in (self.host1, self.host2, self.host3):
            self.inventories[rp] = {'VCPU': inv(8),
                                    'MEMORY_MB': inv(8192)}
        self.inventories[self.nfs] = {'DISK_GB': inv(100)}

    def test_sharing_provider_offers_its_classes_to_each_tree(self):
        self.orphan(self.nfs, DISK_GB=60)
        view = self.view(shape(VCPU=1, DISK_GB=20))
        self.assertEqual(
            {self.host1: [(2, 5)], self.host2: [(2, 5)],
             self.host3: [(0, 0)]},
            {row.provider: [(f.now, f.after_clean) for f in row.fits]
             for row in view.rows})
        # On no tree's row, but in what the cloud gets back.
        self.assertEqual([], view.shown())
        self.assertEqual({self.nfs: {'DISK_GB': 60}}, view.shared)
        self.assertEqual({'DISK_GB': 60}, view.summary().held)


class WhatIsHeldTestCase(HostViewTestCase):

    def setUp(self):
        super().setUp()
        self.host1 = self.cloud.node('host1')
        self.host2 = self.cloud.node('host2')
        for rp in (self.host1, self.host2):
            self.inventories[rp] = node_inventory()

    def test_returned_migration_holds_nothing_a_clean_gives_back(self):
        vm = self.cloud.instance('host1')
        mig = self.cloud.migration(vm, 'error', source='host1',
                                   dest='host2')
        self.cloud.alloc(mig, self.host1)
        self.assertEqual([(r.FINISHED_MIGRATION, r.RETURN_TO_INSTANCE)],
                         [(f.reason, f.action)
                          for f in self.cloud.findings()])
        view = self.view()
        self.assertEqual(([], {}), (view.shown(), view.summary().held))

    def test_heal_holds_nothing(self):
        self.cloud.instance('host1')
        self.assertEqual([r.HEAL],
                         [f.action for f in self.cloud.findings()])
        self.assertEqual([], self.view().shown())

    def test_most_held_first_by_share_of_capacity(self):
        self.inventories[self.host2] = node_inventory(vcpu=8)
        self.orphan(self.host1, VCPU=4, MEMORY_MB=512, DISK_GB=1)
        self.orphan(self.host2, VCPU=2, MEMORY_MB=512, DISK_GB=1)
        view = self.view()
        self.assertEqual([(self.host2, 0.25), (self.host1, 4 / 36)],
                         [(row.provider, row.share)
                          for row in view.shown()])

    def test_deleted_nodes_and_unread_trees_have_no_row(self):
        gone = self.cloud.node('host3', deleted=True)
        self.orphan(gone)
        self.orphan(self.host1)
        self.orphan(self.host2)
        self.cloud.placement.scope = frozenset({self.host1, gone})
        self.assertEqual([self.host1],
                         [row.provider for row in self.view().rows])


class InventoryTestCase(base.BaseTestCase):

    def test_from_placements_answer(self):
        body = {'resource_provider_generation': 3, 'inventories': {
            'VCPU': {'total': 36, 'reserved': 2, 'min_unit': 1,
                     'max_unit': 36, 'step_size': 1,
                     'allocation_ratio': 4.0}}}
        self.assertEqual({'VCPU': hosts.Inventory(36, 2, 4.0, 1, 36, 1)},
                         hosts.inventories_from_api(body))
        self.assertEqual(136, hosts.inventories_from_api(
            body)['VCPU'].capacity)

    def test_defaults_are_placements(self):
        self.assertEqual(dataclasses.astuple(hosts.Inventory(5)),
                         (5, 0, 1.0, 1, 2147483647, 1))


class ProvidersToReadTestCase(HostViewTestCase):

    def setUp(self):
        super().setUp()
        self.host1 = self.cloud.node('host1', aggregates=['agg'])
        self.child = self.cloud.provider('host1:pf', parent=self.host1)
        self.host2 = self.cloud.node('host2')
        self.host3 = self.cloud.node('host3', aggregates=['agg'])
        self.nfs = self.cloud.provider('nfs', sharing=True,
                                       aggregates=['agg'])
        self.other = self.cloud.provider('elsewhere')
        gone = self.cloud.node('host4', deleted=True)
        self.orphan(gone)

    def to_read(self, every=False):
        return hosts.providers_to_read(self.cloud.snapshot(),
                                       self.cloud.findings(), every)

    def test_trees_a_clean_gives_back_on(self):
        self.assertEqual(set(), self.to_read())
        self.orphan(self.child, **{VF: 1})
        self.assertEqual({self.host1, self.child, self.nfs}, self.to_read())
        self.orphan(self.host2)
        self.assertEqual({self.host1, self.child, self.nfs, self.host2},
                         self.to_read())

    def test_every_tree(self):
        self.assertEqual(
            {self.host1, self.child, self.host2, self.host3, self.nfs},
            self.to_read(every=True))
