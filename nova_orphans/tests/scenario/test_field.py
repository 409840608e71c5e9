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
"""Situations operators meet on the releases of 2024 to 2026.

Each built by nova's own code in its functional harness, judged, cleaned
and restored exactly, in both front ends where they differ.

Providers over capacity: nova's resource tracker reports a compute
node's ``reserved`` (``reserved_host_memory_mb``) and allocation ratios
from nova.conf; an operator raising the first (or lowering a ratio)
while servers hold the node leaves it over capacity, and placement
accepts the inventory. placement 9.0.0 to 13.x then refuse every
allocation write that keeps something on it (bug 2104040, fixed in
14.0.0), every release one that adds to it.
"""

import json
import os
import re
import threading

import fixtures
from unittest import mock

from nova.compute import manager as nova_manager
from nova import context as nova_context
from nova import exception

from nova_orphans.tests.scenario import comparison
from nova_orphans.tests.scenario import cycle
from nova_orphans.tests.scenario import test_orphan_providers
from nova_orphans.tests.scenario import test_port_leaks as port_leaks
from nova_orphans.tests.scenario import test_providers

FLAVOR = port_leaks.FLAVOR
PORT_A, PORT_B = port_leaks.PORT_A, port_leaks.PORT_B
BW_A, BW_B = port_leaks.BW_A, port_leaks.BW_B

# nova's clean-up that moves a failed migration's allocations back to
# the instance, failing (placement unreachable at that moment).
REVERT_FAILS = mock.patch(
    'nova.compute.manager.ComputeManager._revert_allocation',
    return_value=False)


def causes(outcome, stderr):
    """The outcome, with a long failure's text (``failed: error N``, the
    text said once on stderr as ``Error N (k row(s)): text``) in full.
    """
    found = re.match(r'^failed: error (\d+)$', outcome)
    if not found:
        return outcome
    text = re.search(r'^Error %s \(\d+ row\(s\)\): (.*)$' % found.group(1),
                     stderr, re.M)
    return 'failed: ' + text.group(1)


class OverCapacityBase(port_leaks.PortLeakTestBase):
    """A compute node over capacity, with three kinds of orphans on it.

    On host1: a server's leaked port bandwidth (trim_provider keeps its
    node's part), a failed cold migration's allocation
    (return_to_instance moves it to the server, on the same node) and a
    server forced to deleted in SQL (delete_consumer). Then host1's
    nova.conf gets ``reserved_host_memory_mb = 8000`` of its 8192 MB
    while 1536 MB are allocated.
    """

    #: Over capacity: 192 MB for 1536 MB allocated.
    RESERVED = 8000

    def setUp(self):
        super().setUp()
        self.vm1 = self.boot_qos('vm1')
        with self.placement_conflicts(self.vm1):
            self.api.detach_interface(self.vm1['id'], PORT_A['id'])
            self._wait_for_instance_action_event(
                self.vm1, 'detach_interface', 'compute_detach_interface',
                'Error')
        self.vm2 = self.boot('vm2', 'host1')
        with mock.patch(
                'nova.virt.fake.FakeDriver.migrate_disk_and_power_off',
                side_effect=exception.InstanceFaultRollback(
                    inner_exception=Exception('disk copy timed out'))), \
                REVERT_FAILS:
            self.api.post_server_action(self.vm2['id'],
                                        {'migrate': {'host': 'host2'}})
            self._wait_for_action_fail_completion(
                self.vm2, 'migrate', 'compute_resize_instance')
        self.mig = self.migration_rows(self.vm2['id'])[0].uuid
        self.label(self.mig, 'migration')
        self.vm3 = self.boot('vm3', 'host1')
        self.force_delete_in_sql(self.vm3['id'])
        self._run_periodics()
        self.reserve_memory('host1', self.RESERVED)
        self.host1 = self.rp_uuids['host1']
        inventory = self.placement.get(
            '/resource_providers/%s/inventories' % self.host1,
            version='1.20').body['inventories']['MEMORY_MB']
        self.assertEqual((8192, self.RESERVED, 1.0),
                         (inventory['total'], inventory['reserved'],
                          inventory['allocation_ratio']))
        usages = self.placement.get(
            '/resource_providers/%s/usages' % self.host1,
            version='1.20').body['usages']
        self.assertEqual(1536, usages['MEMORY_MB'])

    def reserve_memory(self, host, mb):
        """``reserved_host_memory_mb`` in ``host``'s nova.conf, reported
        by its resource tracker (one compute's periodic: the option is
        that host's; the harness's configuration is every compute's).
        """
        self.flags(reserved_host_memory_mb=mb)
        self.computes[host].manager.update_available_resource(
            nova_context.get_admin_context())

    def expected(self):
        vm1, vm2, vm3 = self.vm1['id'], self.vm2['id'], self.vm3['id']
        return [
            self.row(vm1, self.host1, 'host1', 'active_instance', 'none',
                     FLAVOR),
            self.row(vm1, self.br_ex['host1'], 'host1',
                     'leaked_port_allocation', 'trim_provider', BW_A),
            self.row(vm1, self.br_phys3['host1'], 'host1',
                     'active_instance', 'none', BW_B),
            self.row(self.mig, self.host1, 'host1', 'finished_migration',
                     'return_to_instance', FLAVOR,
                     consumer_type='migration', instance=vm2),
            self.row(vm2, self.rp_uuids['host2'], 'host2', 'stale_provider',
                     'remove_provider', FLAVOR),
            self.row(vm3, self.host1, 'host1', 'deleted_instance',
                     'delete_consumer', FLAVOR),
        ]

    def listed(self):
        """Both front ends list exactly the expected rows; the state."""
        self.age_nova()
        before = self.placement_state()
        expected = self.expected()
        self.assertRows(expected, self.list_allocations('--all'))
        # The compute API does not tell cells apart (cell: null).
        self.assertRows([dict(r, cell=None) for r in expected],
                        self.osc_list('--all'))
        return before, [r for r in expected if r['action'] != 'none']

    def journal(self, name):
        return os.path.join(self.useFixture(fixtures.TempDir()).path, name)

    def clean(self, journal, front_end='manage'):
        """(rc, {(consumer, provider): outcome}) of a clean."""
        if front_end == 'manage':
            rc, out = self.run_manage('allocations', 'clean', '--journal',
                                      journal, '--format', 'json')
            err = self.manage_stderr
        else:
            rc, out, err = self.openstack('allocation', 'orphan', 'clean',
                                          '--journal', journal, '-f', 'json')
        return rc, err, {(r['consumer'], r['resource_provider']):
                         causes(r['outcome'], err) for r in json.loads(out)}

    def restore(self, journal, rc=4):
        code, out = self.run_manage('allocations', 'restore', '--journal',
                                    journal, '--format', 'json')
        self.assertEqual(rc, code, out + self.manage_stderr)
        return {(r['consumer'], r['resource_provider'], r['action']):
                causes(r['outcome'], self.manage_stderr)
                for r in json.loads(out)}

    def assertOverCapacity(self, outcome, verb):
        """The outcome names host1, the class and the way out."""
        self.assertTrue(outcome.startswith(
            'failed: resource provider host1 (%s) is over capacity for '
            'MEMORY_MB' % self.host1), outcome)
        self.assertIn('run %s again' % verb, outcome)

    def restore_needs_room(self, journal, before):
        """Restoring vm3 adds to host1: every placement refuses it until
        host1 has room; then the restore is exact.
        """
        vm3 = self.vm3['id']
        outcomes = self.restore(journal, rc=1)
        self.assertOverCapacity(
            outcomes.pop((vm3, self.host1, 'restore_consumer')), 'restore')
        self.assertNotIn(vm3, self.placement_state())
        self.reserve_memory('host1', 0)
        outcomes = self.restore(journal)
        self.assertEqual('done', outcomes[(vm3, self.host1,
                                           'restore_consumer')])
        self.assertEqual(before, self.placement_state())


class OverCapacityTest(OverCapacityBase):

    def test_placement_16(self):
        """placement 14.0.0 and later let every repair through."""
        before, orphans = self.listed()
        journal = self.journal('clean.jsonl')
        rc, err, outcomes = self.clean(journal)
        self.assertEqual(4, rc, err)
        self.assertEqual(
            {(r['consumer'], r['resource_provider']): 'done'
             for r in orphans}, outcomes)
        self.assertEqual(self.repaired(before, orphans),
                         self.placement_state())
        self.restore_needs_room(journal, before)


class OverCapacityPlacement9Test(OverCapacityBase):
    """placement 9.0.0 (2023.1): only the writes that keep nothing on
    host1 go through, until host1 has room.
    """

    PLACEMENT_RELEASE = '9.0.0'

    def test_placement_9(self):
        before, orphans = self.listed()
        vm1, vm2 = self.vm1['id'], self.vm2['id']
        journal = self.journal('osc.jsonl')
        rc, err, outcomes = self.clean(journal, front_end='openstack')
        self.assertEqual(1, rc, err)
        for key in ((vm1, self.br_ex['host1']), (self.mig, self.host1)):
            self.assertOverCapacity(outcomes.pop(key), 'clean')
        self.assertEqual({(vm2, self.rp_uuids['host2']): 'done',
                          (self.vm3['id'], self.host1): 'done'}, outcomes)
        done = [r for r in orphans if r['consumer'] in (vm2,
                                                        self.vm3['id'])]
        self.assertEqual(self.repaired(before, done), self.placement_state())
        # The refused repairs were never applied: restore leaves them.
        self.restore_needs_room(journal, before)
        # With room on host1, this placement lets every repair through.
        journal = self.journal('manage.jsonl')
        rc, err, outcomes = self.clean(journal)
        self.assertEqual(4, rc, err)
        self.assertEqual(
            {(r['consumer'], r['resource_provider']): 'done'
             for r in orphans}, outcomes)
        self.assertEqual(self.repaired(before, orphans),
                         self.placement_state())
        self.restore(journal)
        self.assertEqual(before, self.placement_state())


def _unstripped(real):
    """scheduler_utils.build_filter_properties as nova before 31.3.1,
    32.2.1 and 33.0.2 called it at create: with the user's hints as
    given, ``_nova_check_type`` included (nova 34 strips ``_nova`` hints
    just before this call, and nowhere else).
    """
    def build(hints, *args, **kwargs):
        return real(dict(hints or {}, _nova_check_type=['rebuild']),
                    *args, **kwargs)
    return build


def clean_heal(test, front_end):
    """(journal path, (rc, stdout, stderr)) of ``clean --heal`` by
    ``front_end`` ('manage' or 'openstack').
    """
    journal = os.path.join(test.useFixture(fixtures.TempDir()).path,
                           'journal.jsonl')
    argv = ('clean', '--heal', '--journal', journal)
    if front_end == 'manage':
        rc, out = test.run_manage('allocations', *argv)
        return journal, (rc, out, test.manage_stderr)
    return journal, test.openstack('allocation', 'orphan', *argv)


class MissingAllocationsTest(cycle.CycleTestCase):
    """A server created with the internal rebuild hint holds nothing.

    nova's scheduler, seeing ``_nova_check_type: ['rebuild']``, neither
    asks placement for candidates nor claims (``request_is_rebuild``);
    the compute builds the server, and nova never heals it. The request
    spec keeps the hint (the API shows it from 2.100 on).
    """

    HOSTS = ('host1', 'host2')

    def test_created_with_the_rebuild_hint(self):
        from nova.scheduler import utils as scheduler_utils
        with mock.patch('nova.scheduler.utils.build_filter_properties',
                        _unstripped(scheduler_utils.build_filter_properties)):
            vm1 = self.boot('vm1', 'host1')
        # A server created as nova 34 does, with its own hint and one
        # trying the internal hint: stripped, claimed as usual.
        vm2 = self.boot('vm2', 'host1')
        self._run_periodics()
        self.assertEqual({}, self.get_allocations(vm1['id']))
        self.assertEqual({'_nova_check_type': ['rebuild']},
                         self.api.get_server(vm1['id'])['scheduler_hints'])
        self.age_nova()
        host1 = self.rp_uuids['host1']
        expected = [
            self.row(vm1['id'], host1, 'host1', 'missing_allocations',
                     'heal', {}),
            self.row(vm2['id'], host1, 'host1', 'active_instance', 'none',
                     FLAVOR)]
        advisory = ('Its request spec carries the scheduler hint '
                    '_nova_check_type, given at create: the scheduler '
                    'skipped the claim (OSSA-2026-022')
        for rows, cell in ((self.list_allocations('--all'), 'cell1'),
                           (self.osc_list('--all'), None)):
            self.assertRows([dict(r, cell=cell) for r in expected], rows)
            details = {r['consumer']: r['details'] for r in rows}
            self.assertIn(advisory, details[vm1['id']])
            self.assertNotIn(advisory, details[vm2['id']])
        before = self.placement_state()
        healed = dict(before, **{vm1['id']: {
            'allocations': {host1: FLAVOR},
            'project_id': self.api.project_id, 'user_id': self._user_id,
            'consumer_type': 'unknown'}})
        # Healed from its flavor by either front end, and undone exactly.
        for front_end in ('manage', 'openstack'):
            journal, (rc, out, err) = clean_heal(self, front_end)
            self.assertEqual(4, rc, out + err)
            self.assertEqual(healed, self.placement_state())
            self.assertEqual([], self.list_allocations())
            rc, out = self.run_manage('allocations', 'restore', '--journal',
                                      journal)
            self.assertEqual(4, rc, out + self.manage_stderr)
            self.assertEqual(before, self.placement_state())


class MissingPortPartTest(port_leaks.PortLeakTestBase):
    """A live server whose allocation lacks its port's bandwidth.

    Made as nova's own test of ``nova-manage placement heal_allocations
    --heal-port-allocations`` makes it (test_nova_manage.
    TestNovaManagePlacementHealPortAllocations, "a server that is
    missing allocation for its port"): a server booted with a port that
    asked for nothing, whose bound port then gets a minimum-bandwidth
    resource request in neutron. It holds its node's part only. Not a
    finding (the reasons reference: the port's part is nova's and
    neutron's to write, on a child provider the flavor does not name),
    and ``--heal`` never writes a consumer that holds something: both
    front ends leave it byte for byte.
    """

    def test_heal_leaves_it(self):
        port = self.neutron.port_1
        vm1 = self.boot('vm1', 'host1', networks=[{'port': port['id']}])
        # nova's _add_resource_request_to_a_bound_port.
        self.neutron._ports[port['id']]['resource_request'] = {
            'resources': dict(BW_A),
            'required': ['CUSTOM_PHYSNET2', 'CUSTOM_VNIC_TYPE_NORMAL']}
        self._run_periodics()
        host1 = self.rp_uuids['host1']
        self.assertEqual({host1: FLAVOR}, self.get_allocations(vm1['id']))
        self.age_nova()
        expected = [self.row(vm1['id'], host1, 'host1', 'active_instance',
                             'none', FLAVOR)]
        for rows, cell in ((self.list_allocations('--all'), 'cell1'),
                           (self.osc_list('--all'), None)):
            self.assertRows([dict(r, cell=cell) for r in expected], rows)
        before = self.placement_state()
        for front_end in ('manage', 'openstack'):
            journal, (rc, out, err) = clean_heal(self, front_end)
            self.assertEqual(0, rc, front_end + out + err)
            self.assertFalse(os.path.exists(journal), front_end)
            self.assertEqual(before, self.placement_state(), front_end)


class RenamedHostTest(test_orphan_providers.ProviderCycleTestCase):
    """A compute host renamed: a new service, a new node, a new uuid.

    nova 34 takes a node's uuid from the host's ``compute_id`` file and
    its name from the host; a host renamed (its file rewritten, or a
    reinstall) starts as a new service whose node and provider are new.
    The old service is deleted through the API once its servers are
    gone: nova deletes its compute node and swallows placement's
    "resource provider in use" for what its cascade does not know (a
    server forced to deleted in SQL), so the old tree stays with that
    allocation. The tree and the allocation are orphans, in both
    listings alike.
    """

    HOSTS = ('host1', 'host2')

    def same_name_new_uuid(self, host):
        """``host``'s compute restarted with another node uuid (its
        ``compute_id`` file replaced) while its node row lives: nova
        refuses to start it, and nothing changes.
        """
        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.fake.ReinstalledHostDriver',
            test_orphan_providers.ReinstalledHostDriver))
        self.computes[host].stop()
        self.flags(compute_driver='fake.ReinstalledHostDriver')
        e = self.assertRaises(exception.InvalidConfiguration,
                              self._start_compute, host)
        self.assertIn('Duplicate compute node record found for host %s '
                      'node %s' % (host, host), str(e))
        self.flags(compute_driver=self.compute_driver)

    def test_renamed(self):
        vm1 = self.boot('vm1', 'host2')
        vm2 = self.boot('vm2', 'host1')
        old = self.rp_uuids['host1']
        self.same_name_new_uuid('host1')
        self.assertEqual([(old, 'host1', 0)],
                         [tuple(r) for r in self.compute_node_rows('host1')])
        self.age_nova()
        self.assertEqual([], self.list_allocations())
        self.assertEqual([], self.list_providers())
        self.force_delete_in_sql(vm2['id'])
        self._start_compute('host1b')
        new = self._get_provider_uuid_by_host('host1b')
        self.assertNotEqual(old, new)
        self.assertEqual(204, self.delete_service('host1').status)
        (node,) = self.compute_node_rows('host1')
        self.assertEqual(old, node.uuid)
        self.assertNotEqual(0, node.deleted)
        self.age_nova()

        allocations = [
            self.row(vm1['id'], self.rp_uuids['host2'], 'host2',
                     'active_instance', 'none', FLAVOR),
            self.row(vm2['id'], old, 'host1', 'deleted_instance',
                     'delete_consumer', FLAVOR)]
        self.assertRows(allocations, self.list_allocations('--all'))
        # The compute API names no cell, nor a deleted node's host.
        self.assertRows(
            [dict(r, cell=None, host=None if r['resource_provider'] == old
                  else r['host']) for r in allocations],
            self.osc_list('--all'))
        providers = [
            self.prow(old, 'deleted_compute_node', 'delete_provider',
                      'host1', 1, 1),
            self.prow(self.rp_uuids['host2'], 'live_compute_node', 'none',
                      'host2', 1),
            self.prow(new, 'live_compute_node', 'none', 'host1b', 0)]
        # Both listings agree: a tree's orphans are the orphan rows on it.
        orphans = {}
        for r in allocations:
            if r['action'] != 'none':
                orphans[r['resource_provider']] = orphans.get(
                    r['resource_provider'], 0) + 1
        self.assertEqual(orphans, {r['uuid']: r['orphan_allocations']
                                   for r in providers
                                   if r['orphan_allocations']})
        self.assertSameProviderRows(self.list_providers('--all'),
                                    self.osc_providers('--all'),
                                    deleted=[old])
        self.run_provider_cycle(providers)


class LiveMigrationPostFailureTest(cycle.CycleTestCase):
    """A live migration that fails after the guest switched hosts.

    ``post_live_migration_at_destination`` raises on host2: nova 34's
    ``_post_live_migration`` re-raises (nova 31.0.0 on, bug 2000069)
    before it deletes the migration's allocation on the source;
    ``_post_live_migration_update_host`` puts the instance on host2
    (nova 27 on); ``_do_live_migration`` sets the migration ``error``
    and the instance ERROR. Nothing nova runs later frees the source.
    """

    HOSTS = ('host1', 'host2')

    @comparison.scenario('live_migration_post_failed')
    def test_post_at_destination_fails(self):
        vm1 = self.boot('vm1', 'host1')
        with mock.patch(
                'nova.virt.fake.FakeDriver.post_live_migration_at_destination',
                side_effect=exception.NovaException('port binding failed')):
            self.api.post_server_action(vm1['id'], {'os-migrateLive': {
                'host': 'host2', 'block_migration': 'auto'}})
            self._wait_for_migration_status(vm1, ['error'])
            self._wait_for_state_change(vm1, 'ERROR')
        mig, = self.migration_rows(vm1['id'])
        self.label(mig.uuid, 'migration')
        self.assertEqual(('live-migration', 'error'),
                         (mig.migration_type, mig.status))
        row = self.instance_row(vm1['id'])
        self.assertEqual(('error', None, 'host2', 'host2'),
                         (row.vm_state, row.task_state, row.host, row.node))
        src, dst = self.rp_uuids['host1'], self.rp_uuids['host2']
        self.assertEqual({src: FLAVOR}, self.get_allocations(mig.uuid))
        # The source's periodics, and a restart of its compute, keep it.
        self.computes['host1'] = self.restart_compute_service(
            self.computes['host1'])
        self._run_periodics()
        self.assertEqual({src: FLAVOR}, self.get_allocations(mig.uuid))
        self.assertEqual({dst: FLAVOR}, self.get_allocations(vm1['id']))
        self.run_cycle([
            self.row(mig.uuid, src, 'host1', 'finished_migration',
                     'delete_consumer', FLAVOR, consumer_type='migration',
                     instance=vm1['id']),
            self.row(vm1['id'], dst, 'host2', 'active_instance', 'none',
                     FLAVOR),
        ])


class IronicFieldDriver(test_providers.IronicLikeDriver):
    """Many baremetal nodes per compute service, as ironic's driver.

    Each service's nodes come from ``NODES`` (as ironic's hash ring and
    shard or conductor group assign them); nodes rebalance between
    services (``rebalances_nodes``), and a node no service reports is
    not deleted from ironic (``is_node_deleted`` False, the base's).
    """

    NODES = {}
    rebalances_nodes = True

    def init_host(self, host):
        test_providers.IronicLikeDriver.init_host(self, host)
        self._set_nodes(list(self.NODES.get(host, ())))
        #: Nodes ironic says are unavailable (cleaning, maintenance).
        self.unavailable = set()

    def update_provider_tree(self, provider_tree, nodename,
                             allocations=None):
        # As nova's ironic driver: an unavailable node's one unit is
        # reserved (update_provider_tree, _node_resources_unavailable).
        provider_tree.update_inventory(nodename, {'CUSTOM_BAREMETAL_GOLD': {
            'total': 1, 'reserved': int(nodename in self.unavailable),
            'min_unit': 1, 'max_unit': 1, 'step_size': 1,
            'allocation_ratio': 1.0}})


GOLD = {'CUSTOM_BAREMETAL_GOLD': 1}


class IronicTest(test_orphan_providers.ProviderCycleTestCase):
    """Baremetal look-alikes nova 34 makes, none of them an orphan.

    ironic1 serves node1, node2, node3 and node5; ironic2 node4. A
    server on node1; one on node2 whose delete met the node's cleaning
    (the driver's destroy fails, nova bug 2019977): the server is ERROR,
    not deleted, and keeps its allocation. node3, unoccupied, rebalances
    to ironic2 (nova's regression test for bug 1853009). node5 leaves
    ironic1's shard for one no compute service serves: nova keeps its
    compute node and provider (ironic's node still exists).
    """

    HOSTS = ('host1',)

    def setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.fake.IronicFieldDriver', IronicFieldDriver))
        self.useFixture(fixtures.MonkeyPatch(
            __name__ + '.IronicFieldDriver.NODES', {
                'ironic1': ['node1', 'node2', 'node3', 'node5', 'node6'],
                'ironic2': ['node4']}))
        super().setUp()
        self.flags(compute_driver='fake.IronicFieldDriver')
        for host in ('ironic1', 'ironic2'):
            self._start_compute(host)
        self.nodes = {n: self._get_provider_uuid_by_name(n)
                      for n in ('node1', 'node2', 'node3', 'node4', 'node5',
                                'node6')}
        self.baremetal = {'id': self._create_flavor(extra_spec={
            'resources:CUSTOM_BAREMETAL_GOLD': '1', 'resources:VCPU': '0',
            'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'})}

    def test_lookalikes(self):
        ctxt = nova_context.get_admin_context()
        bm1 = self.boot('bm1', 'ironic1', flavor=self.baremetal,
                        node='node1')['id']
        bm2 = self.boot('bm2', 'ironic1', flavor=self.baremetal,
                        node='node2')
        with mock.patch('nova.virt.fake.FakeDriver.destroy',
                        side_effect=exception.NovaException(
                            'Node node2 is locked by host conductor1, '
                            'please retry after the current operation is '
                            'completed.')):
            self.api.delete_server(bm2['id'])
            self._wait_for_state_change(bm2, 'ERROR')
        bm2 = bm2['id']
        ironic1, ironic2 = self.computes['ironic1'], self.computes['ironic2']
        # node6's server deleted: ironic cleans the node, nova reserves it.
        bm3 = self.boot('bm3', 'ironic1', flavor=self.baremetal,
                        node='node6')
        ironic1.driver.unavailable.add('node6')
        self._delete_server(bm3)
        ironic2.driver._set_nodes(['node4', 'node3'])
        ironic2.manager.update_available_resource(ctxt)
        self.assertIn('ComputeNode node3 moving from ironic1 to ironic2',
                      self.stdlog.logger.output)
        ironic1.driver._set_nodes(['node1', 'node2', 'node6'])
        ironic1.manager.update_available_resource(ctxt)
        self._run_periodics()
        rows = {r.hypervisor_hostname: (r.uuid, r.deleted)
                for r in self.compute_node_rows('ironic1')}
        self.assertEqual((self.nodes['node5'], 0), rows['node5'])
        self.assertNotIn('node3', rows)
        row = self.instance_row(bm2)
        self.assertEqual(('error', 0), (row.vm_state, row.deleted))
        self.assertEqual({self.nodes['node2']: GOLD},
                         self.get_allocations(bm2))
        self.age_nova()

        allocations = [
            self.row(bm1, self.nodes['node1'], 'ironic1', 'active_instance',
                     'none', GOLD),
            self.row(bm2, self.nodes['node2'], 'ironic1', 'active_instance',
                     'none', GOLD)]
        self.assertRows(allocations, self.list_allocations('--all'))
        self.assertRows([dict(r, cell=None) for r in allocations],
                        self.osc_list('--all'))
        live = 'live_compute_node', 'none'
        providers = [
            self.prow(self.rp_uuids['host1'], *live, 'host1', 0),
            self.prow(self.nodes['node1'], *live, 'ironic1', 1),
            self.prow(self.nodes['node2'], *live, 'ironic1', 1),
            self.prow(self.nodes['node3'], *live, 'ironic2', 0),
            self.prow(self.nodes['node4'], *live, 'ironic2', 0),
            self.prow(self.nodes['node5'], *live, 'ironic1', 0),
            self.prow(self.nodes['node6'], 'fully_reserved', 'none',
                      'ironic1', 0)]
        manage = self.list_providers('--all')
        self.assertSameProviderRows(manage, self.osc_providers('--all'))
        # Fast mode reads the inventories from placement's database.
        rc, out = self.run_manage('providers', 'list', '--all', '--format',
                                  'json', conf_file=self.write_nova_conf(
                                      placement_db=True))
        self.assertEqual((0, manage), (rc, json.loads(out)))
        self.run_provider_cycle(providers)
        before = self.placement_state()
        rc, out = self.run_manage('allocations', 'clean')
        self.assertEqual(0, rc, out + self.manage_stderr)
        self.assertEqual(before, self.placement_state())


class UnifiedLimitsTest(port_leaks.PortLeakTestBase):
    """An orphan's port bandwidth counts against a unified limit.

    nova 34 (2026.2) counts a new server's port bandwidth, PCI devices
    and Cyborg device profiles against the project's unified limits
    (bug 2140631; before, only its flavor's VCPU, MEMORY_MB and
    DISK_GB), and counts the project's usage from placement, orphans
    included. A server's leaked port bandwidth then refuses the
    project a server with a port its limit allows.
    """

    LIMITS = {
        'servers': 10, 'class:VCPU': 100, 'class:MEMORY_MB': 100000,
        'class:DISK_GB': 1000,
        'class:NET_BW_EGR_KILOBIT_PER_SEC': 3000,
        'class:NET_BW_IGR_KILOBIT_PER_SEC': 3000}

    def setUp(self):
        super().setUp()
        from nova.limit import local as local_limit
        from oslo_limit import fixture as limit_fixture
        limits = dict(self.LIMITS, **{
            local_limit.SERVER_METADATA_ITEMS: 128,
            local_limit.INJECTED_FILES: 5,
            local_limit.INJECTED_FILES_CONTENT: 10 * 1024,
            local_limit.INJECTED_FILES_PATH: 255,
            local_limit.KEY_PAIRS: 100, local_limit.SERVER_GROUPS: 10,
            local_limit.SERVER_GROUP_MEMBERS: 10})
        self.useFixture(limit_fixture.LimitFixture(limits, {}))
        self.flags(driver='nova.quota.UnifiedLimitsDriver', group='quota')

    def boot_port_a(self):
        body = self._build_server(name='vm2', flavor_id=self.qos_flavor['id'],
                                  networks=[{'port': PORT_A['id']}],
                                  host='host1')
        return self.api.post_server({'server': body})

    def test_leaked_bandwidth_counts(self):
        from nova.tests.functional.api import client
        vm1 = self.boot_qos('vm1')
        with self.placement_conflicts(vm1):
            self.api.detach_interface(vm1['id'], PORT_A['id'])
            self._wait_for_instance_action_event(
                vm1, 'detach_interface', 'compute_detach_interface', 'Error')
        self._run_periodics()
        # Port A is free in neutron, its bandwidth still vm1's: 3000 used,
        # 1000 more asked, over the limit of 3000.
        e = self.assertRaises(client.OpenStackApiException, self.boot_port_a)
        self.assertEqual(403, e.response.status_code)
        self.assertIn('class:NET_BW_EGR_KILOBIT_PER_SEC', e.response.text)
        self.age_nova()
        project = self.api.project_id
        held = {'NET_BW_EGR_KILOBIT_PER_SEC': 1000,
                'NET_BW_IGR_KILOBIT_PER_SEC': 1000}
        view = [{'project_id': project, 'consumers': 1, 'allocations': 1,
                 'resources': held}]
        rc, out = self.run_manage('allocations', 'list', '--group-by',
                                  'project', '--format', 'json')
        self.assertEqual((3, view), (rc, json.loads(out)),
                         self.manage_stderr)
        rc, out, err = self.openstack('allocation', 'orphan', 'list',
                                      '--group-by', 'project', '-f', 'json')
        self.assertEqual((3, view), (rc, json.loads(out)), err)
        rc, out = self.run_manage('allocations', 'list', '--format',
                                  'prometheus')
        self.assertEqual(3, rc, self.manage_stderr)
        for rc_name, amount in held.items():
            self.assertIn('nova_orphans_project_resources{project_id="%s",'
                          'resource_class="%s"} %d.0\n' % (
                              project, rc_name, amount), out)
        before = self.placement_state()
        journal = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'journal.jsonl')
        rc, out = self.run_manage('allocations', 'clean', '--journal',
                                  journal)
        self.assertEqual(4, rc, out + self.manage_stderr)
        self.assertEqual(
            {self.rp_uuids['host1']: FLAVOR, self.br_phys3['host1']: BW_B},
            self.get_allocations(vm1['id']))
        rc, out = self.run_manage('allocations', 'restore', '--journal',
                                  journal)
        self.assertEqual(4, rc, out + self.manage_stderr)
        self.assertEqual(before, self.placement_state())
        # Cleaned again: the project gets the server its limit allows.
        rc, out = self.run_manage('allocations', 'clean')
        self.assertEqual(4, rc, out + self.manage_stderr)
        self._wait_for_state_change(self.boot_port_a(), 'ACTIVE')


class StaleInfoCacheTest(port_leaks.PortLeakTestBase):
    """nova's info cache out of date: neutron's ``network-vif-deleted``
    for a bound port with a resource request never reached nova.

    nova refreshes a server's info cache on neutron's events, and no
    longer periodically by default (nova 31.0.0, bug 1996094): the cache
    still lists the deleted port, whose binding claimed the bridge's
    bandwidth the server still holds. neutron, which owns the bindings,
    binds port B alone.
    """

    def test_event_lost(self):
        vm1 = self.boot_qos('vm1')
        self.neutron.delete_port(PORT_A['id'])
        self._run_periodics()
        self.assertEqual([PORT_A['id'], PORT_B['id']], self.vifs(vm1))
        self.age_nova()
        leaked = self.server_rows(vm1, [
            (PORT_A, 'leaked_port_allocation', 'trim_provider'),
            (PORT_B, 'active_instance', 'none')])
        # Both front ends ask neutron: port A's bandwidth is leaked.
        listed = self.list_allocations('--all')
        self.assertRows(leaked, listed)
        self.assertNotIn('info cache', ' '.join(r['details']
                                                for r in listed))
        self.assertRows([dict(r, cell=None) for r in leaked],
                        self.osc_list('--all'))
        # Without [neutron], the cache is all there is: port A claims it.
        no_neutron = self.write_nova_conf(neutron=False)
        rc, out = self.run_manage('allocations', 'list', '--all', '--format',
                                  'json', conf_file=no_neutron)
        self.assertEqual(0, rc, self.manage_stderr)
        self.assertRows(self.server_rows(vm1, [
            (PORT_A, 'active_instance', 'none'),
            (PORT_B, 'active_instance', 'none')]), json.loads(out))
        before = self.placement_state()
        journal = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'journal.jsonl')
        rc, out = self.run_manage('allocations', 'clean', '--journal',
                                  journal)
        self.assertEqual(4, rc, out + self.manage_stderr)
        self.assertEqual(
            {self.rp_uuids['host1']: FLAVOR, self.br_phys3['host1']: BW_B},
            self.get_allocations(vm1['id']))
        rc, out = self.run_manage('allocations', 'restore', '--journal',
                                  journal)
        self.assertEqual(4, rc, out + self.manage_stderr)
        self.assertEqual(before, self.placement_state())

        # The event, late: nova drops the port from its cache; without
        # [neutron] the leak is found from the cache, and the row says so.
        self.delete_bound_port(vm1, PORT_A, self.br_ex['host1'])
        self.age_nova()
        rc, out = self.run_manage('allocations', 'list', '--format', 'json',
                                  conf_file=no_neutron)
        self.assertEqual(3, rc, self.manage_stderr)
        row, = json.loads(out)
        self.assertEqual((self.br_ex['host1'], 'leaked_port_allocation'),
                         (row['resource_provider'], row['reason']))
        self.assertIn('The ports are those of nova\'s info cache, written ',
                      row['details'])


class _Killed(BaseException):
    """A thread of a nova-compute that stopped: it never runs on.

    Not an Exception, which nova's handlers would catch and clean up
    after, as a process that exits never does.
    """


class _CutOff:
    """``target`` blocks its callers until ``kill()`` (or cleanup): then
    they die (_Killed), on their way out of nova.
    """

    def __init__(self, test, target):
        self.entered = threading.Event()
        self._release = threading.Event()

        def blocked(*args, **kwargs):
            self.entered.set()
            self._release.wait(120)
            raise _Killed()

        test.useFixture(fixtures.MonkeyPatch(target, blocked))
        test.addCleanup(self.kill)

    def kill(self):
        self._release.set()


class GracefulShutdownTest(cycle.CycleTestCase):
    """Operations cut off by a nova-compute stop, then its restart.

    nova 33 (2026.1) and later wait ``manager_shutdown_timeout`` (less
    20 s kept for cleanup_host) for the operations in flight when
    nova-compute is stopped; what takes longer is cut off when the
    process exits. Here the wait is 0: host1 stops while a live
    migration to host2 is in its driver, a cold migration to host2 is
    copying the disk (the source's resize_instance) and a build is
    spawning. On restart, nova's init_host ends the build (ERROR, its
    allocation kept, as for any ERROR server) and aborts the live
    migration (``_reset_live_migration``: migration ``error``, task
    state cleared), leaving its allocations as the migration had them;
    it reverts the cold migration's guest and clears its task state
    but leaves the migration ``migrating``, and the event of the
    migrate action that the stop cut off never finishes.
    """

    HOSTS = ('host1', 'host2')

    def stop_cut_off(self, host):
        """Stop ``host``'s compute: its graceful shutdown, then, as the
        process exits, nothing more of what it was running (a thread
        blocked in a _CutOff stays there until cleanup). Returns once
        the manager's cleanup_host ran; the stop's own wait for its RPC
        handlers is left to a thread of its own.
        """
        done = threading.Event()
        real = nova_manager.ComputeManager.cleanup_host

        def cleanup_host(manager):
            # cleanup_host shuts the process's executors down for good:
            # not in one process that starts the compute again.
            with mock.patch(
                    'nova.thread_pool_factory.shutdown_all_executors'):
                real(manager)
            done.set()

        self.useFixture(fixtures.MonkeyPatch(
            'nova.compute.manager.ComputeManager.cleanup_host',
            cleanup_host))
        stopping = threading.Thread(target=self.computes.pop(host).stop,
                                    daemon=True)
        stopping.start()
        self.assertTrue(done.wait(60))
        return stopping

    @comparison.scenario('graceful_shutdown_cut_off')
    def test_cut_off_then_restarted(self):
        self.flags(manager_shutdown_timeout=0)
        vm1 = self.boot('vm1', 'host1')
        vm3 = self.boot('vm3', 'host1')
        migrating = _CutOff(self, 'nova.virt.fake.FakeDriver.live_migration')
        self.api.post_server_action(vm1['id'], {'os-migrateLive': {
            'host': 'host2', 'block_migration': 'auto'}})
        self.assertTrue(migrating.entered.wait(60))
        copying = _CutOff(
            self, 'nova.virt.fake.FakeDriver.migrate_disk_and_power_off')
        self.api.post_server_action(vm3['id'], {'migrate': {
            'host': 'host2'}})
        self.assertTrue(copying.entered.wait(60))
        spawning = _CutOff(self, 'nova.virt.fake.FakeDriver.spawn')
        vm2 = self.boot('vm2', 'host1', wait=None)
        self.assertTrue(spawning.entered.wait(60))
        stopping = self.stop_cut_off('host1')
        mig1, = self.migration_rows(vm1['id'])
        mig3, = self.migration_rows(vm3['id'])
        self.label(mig1.uuid, 'migration')
        self.label(mig3.uuid, 'migration3')
        self.assertEqual(('running', 'migrating'), (mig1.status,
                                                    mig3.status))
        self.assertEqual(('active', 'migrating'),
                         tuple(self.instance_row(vm1['id'])[2:4]))
        self.assertEqual(('active', 'resize_migrating'),
                         tuple(self.instance_row(vm3['id'])[2:4]))
        self.assertEqual(('building', 'spawning'),
                         tuple(self.instance_row(vm2['id'])[2:4]))
        src, dst = self.rp_uuids['host1'], self.rp_uuids['host2']
        # Cut off, not restarted: nothing is an orphan.
        self.age_nova()
        moving = ('active_migration', 'none')
        self.assertEqual({
            (mig1.uuid, src): moving, (vm1['id'], dst): moving,
            (mig3.uuid, src): moving, (vm3['id'], dst): moving,
            (vm2['id'], src): ('building', 'none')},
            self.verdicts())

        self._start_compute('host1')
        self._run_periodics()
        self.assertEqual(['error', 'migrating'],
                         [m.status for m in self.migration_rows(vm1['id']) +
                          self.migration_rows(vm3['id'])])
        for vm, vm_state in ((vm1, 'active'), (vm3, 'active'),
                             (vm2, 'error')):
            self.assertEqual((vm_state, None), tuple(
                self.instance_row(vm['id'])[2:4]))
        # The cut off resize_instance event never finishes: nova may
        # still be at vm3, as far as its records tell.
        self.age_nova()
        verdicts = self.verdicts()
        self.assertEqual(
            {(mig3.uuid, src): ('in_progress', 'none'),
             (vm3['id'], dst): ('in_progress', 'none')},
            {k: v for k, v in verdicts.items() if k[0] in (mig3.uuid,
                                                           vm3['id'])})
        # Until the server's next action: nova's records then show
        # nothing at work on it, and the move over.
        self.api.post_server_action(vm3['id'], {'reboot': {'type': 'SOFT'}})
        self._wait_for_instance_action_event(
            vm3, 'reboot', 'compute_reboot_instance', 'Success')
        self.run_cycle([
            self.row(mig1.uuid, src, 'host1', 'finished_migration',
                     'return_to_instance', FLAVOR, consumer_type='migration',
                     instance=vm1['id']),
            self.row(vm1['id'], dst, 'host2', 'stale_provider',
                     'remove_provider', FLAVOR),
            self.row(mig3.uuid, src, 'host1', 'finished_migration',
                     'return_to_instance', FLAVOR, consumer_type='migration',
                     instance=vm3['id']),
            self.row(vm3['id'], dst, 'host2', 'stale_provider',
                     'remove_provider', FLAVOR),
            self.row(vm2['id'], src, 'host1', 'active_instance', 'none',
                     FLAVOR),
        ])
        # The stopped compute's threads end, while the databases are
        # still there; the old service's stop then returns.
        for cut in (migrating, copying, spawning):
            cut.kill()
        stopping.join(60)
        self.assertFalse(stopping.is_alive())

    def verdicts(self):
        return {(r['consumer'], r['resource_provider']):
                (r['reason'], r['action'])
                for r in self.list_allocations('--all')}
