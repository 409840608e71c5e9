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
"""Orphaned resource provider trees, made the ways nova 34 makes them.

nova deletes a compute node's provider tree bottom-up and ignores
placement's 409 when an allocation is still on it
(``SchedulerReportClient.delete_resource_provider``: "left a no-op for
backward compatibility"). Whatever its cascade does not know about (a
finished migration's leftover, a consumer nova never had, an instance
forced to deleted in SQL) then keeps the provider, and every ancestor
of it, alive after the compute node row is gone:

- ``DELETE /os-services/{id}`` of a compute service (seed 002);
- the resource tracker's periodic, when the driver stops reporting a
  node it says was deleted (ironic: ``is_node_deleted``), which
  ``ComputeNode.destroy()``\\s the node and then fails to delete its
  provider.

Each scenario checks ``providers list`` row for row, ``providers
clean`` (exactly the tree goes, every other provider and allocation is
unchanged, generations included) and ``allocations restore`` (placement
as before, generations aside). The look-alikes must never be touched.
"""

import json
import os
from unittest import mock

import fixtures
import sqlalchemy as sa

from nova import context as nova_context
from nova.virt import fake
from oslo_utils.fixture import uuidsentinel as uuids

from nova_orphans.tests.scenario import comparison
from nova_orphans.tests.scenario import cycle
from nova_orphans.tests.scenario import osc
from nova_orphans.tests.scenario import test_providers

#: Keys of a ``providers list`` JSON row: a contract with other tooling.
PROVIDER_KEYS = frozenset((
    'uuid', 'name', 'root_provider', 'parent_provider', 'host', 'cell',
    'compute_node', 'reason', 'action', 'allocations', 'orphan_allocations',
    'details'))

FLAVOR = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
BIG = {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 2}
GOLD = {'CUSTOM_BAREMETAL_GOLD': 1}


class RemovableIronicLikeDriver(test_providers.IronicLikeDriver):
    """Says a node it no longer reports is gone.

    As ironic's driver does when the node is not in ironic any more
    (``is_node_deleted``).
    """

    def is_node_deleted(self, nodename):
        return nodename not in self._nodes


class ReinstalledHostDriver(fake.MediumFakeDriver):
    """A host reinstalled under its old name: a new node identity.

    For a libvirt host nova takes the node uuid from the host's
    ``compute_id`` file; a reinstall writes a new one. nova's fake driver
    derives it from the node name, so this one derives another.
    """

    def get_available_resource(self, nodename):
        resources = super().get_available_resource(nodename)
        resources['uuid'] = getattr(uuids, 'reinstalled_%s' % nodename)
        return resources


class ProviderCycleTestCase(cycle.CycleTestCase):
    """CycleTestCase plus ``providers list``/``clean`` and their checks."""

    # -- placement, all of it ------------------------------------------------

    def placement_dump(self):
        """Every provider and every consumer's allocations.

        Providers with their inventories, traits, aggregates, parent
        and generation.
        """
        providers = {}
        for rp in self.providers().values():
            path = '/resource_providers/%s' % rp['uuid']
            providers[rp['uuid']] = {
                'name': rp['name'], 'generation': rp['generation'],
                'parent': rp['parent_provider_uuid'],
                'root': rp['root_provider_uuid'],
                'inventories': self._ok(self.placement.get(
                    path + '/inventories', version='1.14'))['inventories'],
                'traits': sorted(self._ok(self.placement.get(
                    path + '/traits', version='1.6'))['traits']),
                'aggregates': sorted(self._ok(self.placement.get(
                    path + '/aggregates', version='1.19'))['aggregates']),
            }
        return {'providers': providers,
                'allocations': self.placement_state()}

    @staticmethod
    def without_generations(dump):
        dump = json.loads(json.dumps(dump))
        for rp in dump['providers'].values():
            del rp['generation']
        return dump

    @staticmethod
    def without_trees(dump, tree):
        """``dump`` with the providers ``tree`` and what they hold gone."""
        dump = json.loads(json.dumps(dump))
        for rp in tree:
            del dump['providers'][rp]
        for consumer, doc in list(dump['allocations'].items()):
            for rp in tree:
                doc['allocations'].pop(rp, None)
            if not doc['allocations']:
                del dump['allocations'][consumer]
        return dump

    def provider_exists(self, rp):
        status = self.placement.get('/resource_providers/%s' % rp).status
        self.assertIn(status, (200, 404))
        return status == 200

    # -- rows -----------------------------------------------------------------

    def prow(self, rp, reason, action, host, allocations, orphans=0,
             cell='cell1', compute_node=None):
        """One expected ``providers list`` row (without ``details``).

        ``compute_node`` defaults to the tree's root (a compute node's
        uuid is its root provider's) when ``host`` is given.
        """
        provider = self.providers()[rp]
        root = provider['root_provider_uuid']
        return {
            'uuid': rp, 'name': provider['name'], 'root_provider': root,
            'parent_provider': provider['parent_provider_uuid'],
            'host': host, 'cell': cell,
            'compute_node': compute_node or (root if host else None),
            'reason': reason, 'action': action, 'allocations': allocations,
            'orphan_allocations': orphans,
        }

    def assertProviderRows(self, expected, rows):
        for row in rows:
            self.assertEqual(PROVIDER_KEYS, set(row), row)
            self.assertIsInstance(row['details'], str)
            if row['action'] != 'none':
                self.assertTrue(row['details'], row)
        rows = [{k: v for k, v in row.items() if k != 'details'}
                for row in rows]
        self.assertEqual(sorted(expected, key=lambda r: r['uuid']),
                         sorted(rows, key=lambda r: r['uuid']))

    def list_providers(self, *extra, complete=None):
        """``providers list --format json``, parsed; rc checked."""
        rc, out = self.run_manage('providers', 'list', '--format', 'json',
                                  *extra)
        self.assertNotIn(rc, (1, 127), out + self.manage_stderr)
        rows = json.loads(out)
        found = any(row['action'] != 'none' for row in rows)
        self.assertEqual(self.expected_code(3 if found else 0), rc,
                         out + self.manage_stderr)
        return rows

    def allocation_verdicts(self, *extra):
        """{(consumer, rp): (reason, action)} of ``allocations list --all``."""
        return {(r['consumer'], r['resource_provider']):
                (r['reason'], r['action'])
                for r in self.list_allocations('--all', *extra)}

    # -- the provider cycle ---------------------------------------------------

    def run_provider_cycle(self, expected, clean_args=(), after_clean=None):
        """list, clean --dry-run, clean, restore; see the module docstring.

        ``expected`` is every row of ``providers list --all``;
        ``after_clean()`` runs once the trees are gone. Returns the
        journal.
        """
        self.age_nova()
        before = self.placement_dump()
        self.assertEqual(sorted(before['providers']),
                         sorted(r['uuid'] for r in expected))
        self.assertProviderRows(expected, self.list_providers('--all'))
        orphans = [r for r in expected if r['action'] != 'none']
        self.assertProviderRows(orphans, self.list_providers())
        tree = {r['uuid'] for r in orphans}

        # --dry-run changes nothing at all.
        rc, out = self.run_manage('providers', 'clean', '--dry-run',
                                  '--format', 'json', *clean_args)
        self.assertEqual(self.expected_code(3 if orphans else 0), rc,
                         out + self.manage_stderr)
        self.assertEqual(before, self.placement_dump())

        journal = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'journal.jsonl')
        rc, out = self.run_manage('providers', 'clean', '--journal', journal,
                                  '--format', 'json', *clean_args)
        self.assertEqual(self.expected_code(4 if orphans else 0), rc,
                         out + self.manage_stderr)
        self.assertEqual(sorted(tree),
                         sorted(r['uuid'] for r in json.loads(out)))
        # Exactly the trees are gone: every other provider, inventory,
        # trait, aggregate, allocation and generation is as it was.
        self.assertEqual(self.without_trees(before, tree),
                         self.placement_dump())
        self.assertEqual([], self.list_providers(*clean_args))
        if after_clean is not None:
            after_clean()
        if orphans:
            self.restore(journal)
            self.assertEqual(self.without_generations(before),
                             self.without_generations(self.placement_dump()))
        else:
            self.assertFalse(os.path.exists(journal))
        return journal

    @staticmethod
    def observed(expected):
        """The comparison page's view of ``providers list --all`` rows."""
        return tuple(sorted((r['name'], r['reason'], r['action'])
                            for r in expected))

    # -- the same through openstack ----------------------------------------

    def osc_providers(self, *args):
        with cycle._fresh_cells():
            rc, out, err = self.openstack('resource', 'provider', 'orphan',
                                          'list', *(args + ('-f', 'json')))
        rows = json.loads(out)
        self.assertEqual(osc.expected_code(('orphan', 'list'), rows, err),
                         rc, err)
        return rows

    def assertSameProviderRows(self, manage_rows, osc_rows, deleted=()):
        """osc's rows are manage's, but for what the compute API hides.

        It names no cells (``cell`` null), and tells the host of a
        deleted compute node only where a server or migration it lists
        names the node (``host`` null on the ``deleted`` trees);
        ``details`` explain it from what it read.
        """
        for row in osc_rows:
            self.assertEqual(PROVIDER_KEYS, set(row), row)
            self.assertIsInstance(row['details'], str)
        expected = [
            dict(r, cell=None, details=None,
                 host=None if r['root_provider'] in deleted else r['host'])
            for r in manage_rows]
        self.assertEqual(sorted(expected, key=lambda r: r['uuid']),
                         sorted((dict(r, details=None) for r in osc_rows),
                                key=lambda r: r['uuid']))

    def check_osc_placement(self, present, absent=()):
        """osc-placement's own ``resource provider list``, same shell."""
        rows = self.osc_json('resource', 'provider', 'list')
        uuids_listed = {r['uuid'] for r in rows}
        self.assertEqual(set(), set(present) - uuids_listed)
        self.assertEqual(set(), set(absent) & uuids_listed)

    # -- nova state ----------------------------------------------------------

    def compute_node_rows(self, host):
        with self.cell_db().connect() as conn:
            return conn.execute(sa.text(
                'SELECT uuid, hypervisor_hostname, deleted FROM '
                'compute_nodes WHERE host=:h ORDER BY id'),
                {'h': host}).all()

    def delete_service(self, host):
        """Force ``host`` down and delete its compute service (API)."""
        service = self.force_down(host)
        response = self.admin_api.api_delete(
            '/os-services/%s' % service['id'], check_response_status=[204])
        # Nothing may run this compute's periodics again: nova would
        # re-create what the delete removed.
        del self.computes[host]
        return response


class ServiceDeletedTest(ProviderCycleTestCase):
    """A compute service deleted with allocations nova did not know of.

    host1's node has a nested child (the fake driver's ``<node>-child``,
    CUSTOM_MAGIC). Left on host1 by the time its service is deleted: the
    confirmed resize's migration consumer (nova forgot to free the
    source) on the root, and a consumer nova never had, written straight
    into placement, on the root and the child. nova deletes the service
    and the compute node, answers 204, and placement keeps both
    providers.
    """

    compute_driver = 'fake.MediumFakeDriverWithNestedCustomResources'
    HOSTS = ('host1', 'host2')

    def setUp(self):
        super().setUp()
        self.rp1, self.rp2 = self.rp_uuids['host1'], self.rp_uuids['host2']
        self.child1 = self._get_provider_uuid_by_name('host1-child')
        self.child2 = self._get_provider_uuid_by_name('host2-child')
        # host1 in a host aggregate that placement mirrors: restore must
        # bring the aggregate back.
        self._set_aggregate(self.rp1, uuids.agg1)

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
        self.vm1, self.mig = vm1['id'], mig.uuid
        self.stranger = self.label(uuids.stranger, 'stranger')
        self.put_allocations(self.stranger, {
            self.rp1: {'VCPU': 1}, self.child1: {'CUSTOM_MAGIC': 2}},
            uuids.other_project, uuids.other_user)

        self.assertEqual(204, self.delete_service('host1').status)

    @comparison.scenario('provider_service_deleted')
    def test_service_deleted(self):
        self.age_nova()
        # nova: the service and its compute node are gone, the tree not.
        self.assertEqual([], self.admin_api.get_services(
            host='host1', binary='nova-compute'))
        (node,) = self.compute_node_rows('host1')
        self.assertEqual(self.rp1, node.uuid)
        self.assertNotEqual(0, node.deleted)
        self.assertTrue(self.provider_exists(self.rp1))
        self.assertTrue(self.provider_exists(self.child1))
        self.assertEqual({self.mig: FLAVOR, self.stranger: {'VCPU': 1}},
                         {c: a['resources'] for c, a in self.placement.get(
                             '/resource_providers/%s/allocations' % self.rp1
                         ).body['allocations'].items()})

        # The allocations on the tree: the stranger is nova's to judge
        # there (the tree is provably a deleted node of nova's).
        self.assertEqual({
            (self.mig, self.rp1): ('finished_migration', 'delete_consumer'),
            (self.stranger, self.rp1): ('unknown_consumer',
                                        'delete_consumer'),
            (self.stranger, self.child1): ('unknown_consumer',
                                           'delete_consumer'),
            (self.vm1, self.rp2): ('active_instance', 'none'),
        }, self.allocation_verdicts())

        dead = 'deleted_compute_node', 'delete_provider'
        expected = [
            self.prow(self.rp1, *dead, 'host1', 2, 2),
            self.prow(self.child1, *dead, 'host1', 1, 1),
            self.prow(self.rp2, 'live_compute_node', 'none', 'host2', 1),
            self.prow(self.child2, 'live_compute_node', 'none', 'host2', 0),
        ]
        # The filters pick whole trees: by the (deleted) node's host, or
        # by any provider in the tree.
        self.assertProviderRows(expected[:2],
                                self.list_providers('--host', 'host1'))
        self.assertProviderRows(expected[2:], self.list_providers(
            '--host', 'host2', '--all'))
        self.assertProviderRows(expected[:2], self.list_providers(
            '--resource-provider', self.child1))

        self.run_provider_cycle(expected)

        # The same through openstack, with osc-placement loaded too.
        before = self.placement_dump()
        # The confirmed resize's migration names host1's node: its host
        # is known through the compute API too.
        self.assertSameProviderRows(self.list_providers('--all'),
                                    self.osc_providers('--all'))
        self.check_osc_placement(present=[self.rp1, self.child1, self.rp2])
        journal = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'osc.jsonl')
        rc, out, err = self.openstack(
            'resource', 'provider', 'orphan', 'clean', '--journal', journal,
            '-f', 'json')
        self.assertEqual(4, rc, err)
        self.assertEqual(sorted([self.child1, self.rp1]), sorted(
            r['uuid'] for r in json.loads(out)))
        self.assertEqual(self.without_trees(before, {self.rp1, self.child1}),
                         self.placement_dump())
        self.check_osc_placement(present=[self.rp2],
                                 absent=[self.rp1, self.child1])
        self.restore(journal)
        self.assertEqual(self.without_generations(before),
                         self.without_generations(self.placement_dump()))

        # Last: the comparison page's row.
        self.run_cycle([
            self.row(self.mig, self.rp1, 'host1', 'finished_migration',
                     'delete_consumer', FLAVOR, consumer_type='migration',
                     instance=self.vm1),
            self.row(self.stranger, self.rp1, 'host1', 'unknown_consumer',
                     'delete_consumer', {'VCPU': 1}, consumer_type='unknown',
                     instance=None, project_id=uuids.other_project,
                     user_id=uuids.other_user),
            self.row(self.stranger, self.child1, 'host1', 'unknown_consumer',
                     'delete_consumer', {'CUSTOM_MAGIC': 2},
                     consumer_type='unknown', instance=None,
                     project_id=uuids.other_project,
                     user_id=uuids.other_user),
            self.row(self.vm1, self.rp2, 'host2', 'active_instance', 'none',
                     BIG),
        ], providers=self.observed(expected))

    def test_other_services_provider_keeps_the_tree(self):
        """Cyborg's device under the deleted node, and Cyborg's own root.

        Cyborg creates its devices' providers as children of the compute
        node's provider and marks them OWNER_CYBORG: never nova's, in
        either front end and either placement reader, and the deleted
        node's tree stays. nova 34 marks its compute nodes OWNER_NOVA
        (and COMPUTE_NODE): openstack, which sees no deleted node, names
        that evidence.
        """
        self.age_nova()
        self.assertEqual(
            ['COMPUTE_NODE', 'OWNER_NOVA'],
            sorted({'COMPUTE_NODE', 'OWNER_NOVA'}.intersection(
                self._ok(self.placement.get(
                    '/resource_providers/%s/traits' % self.rp1,
                    version='1.6'))['traits'])))
        fpga = self.post_provider('host1_fpga0', self.rp1)['uuid']
        self.put_inventory(fpga, {'FPGA': 1}, traits=['OWNER_CYBORG'])
        lone = self.post_provider('cyborg-accel-host')['uuid']
        self.put_inventory(lone, {'FPGA': 2}, traits=['OWNER_CYBORG'])
        cyborg = ('unmanaged', 'none')
        api_conf = self.conf_file
        for conf in (self.write_nova_conf(placement_db=True), api_conf):
            # Fast mode (placement's tables), then placement's API.
            self.conf_file = conf
            rows = {r['uuid']: r for r in self.list_providers('--all')}
            self.assertEqual(
                {self.rp1: ('deleted_compute_node', 'delete_provider'),
                 self.child1: ('deleted_compute_node', 'delete_provider'),
                 fpga: cyborg, lone: cyborg,
                 self.rp2: ('live_compute_node', 'none'),
                 self.child2: ('live_compute_node', 'none')},
                {u: (r['reason'], r['action']) for u, r in rows.items()})
            self.assertEqual(
                'The provider carries OWNER_CYBORG: another service\'s, '
                'never judged nova\'s.', rows[fpga]['details'])
            self.assertTrue(rows[self.rp1]['details'].endswith(
                'Provider(s) %s on the tree are another service\'s: clean '
                'leaves the tree.' % fpga), rows[self.rp1]['details'])

        osc_rows = {r['uuid']: r for r in self.osc_providers('--all')}
        self.assertEqual(
            'The tree\'s root %s carries OWNER_NOVA and COMPUTE_NODE, '
            'nova\'s mark on its compute nodes, and the compute API, every '
            'cell answering, lists no hypervisor with its uuid: nova '
            'deleted that compute node. Provider(s) %s on the tree are '
            'another service\'s: clean leaves the tree.' % (self.rp1, fpga),
            osc_rows[self.rp1]['details'])
        self.assertEqual(
            (('deleted_compute_node', 'delete_provider'), cyborg, cyborg),
            tuple((osc_rows[u]['reason'], osc_rows[u]['action'])
                  for u in (self.rp1, fpga, lone)))

        # Both cleans: the tree's orphaned allocations go, the tree stays.
        skipped = ('skipped: provider(s) %s on the tree are another '
                   'service\'s' % fpga)
        tmp = self.useFixture(fixtures.TempDir()).path
        rc, out = self.run_manage(
            'providers', 'clean', '--format', 'json', '--journal',
            os.path.join(tmp, 'manage.jsonl'))
        # Orphans found and left: 3.
        self.assertEqual(
            (3, {(self.rp1, skipped), (self.child1, skipped)}),
            (rc, {(r['uuid'], r['outcome']) for r in json.loads(out)}),
            out + self.manage_stderr)
        rc, out, err = self.openstack(
            'resource', 'provider', 'orphan', 'clean', '--journal',
            os.path.join(tmp, 'osc.jsonl'), '-f', 'json')
        self.assertEqual(
            (3, {(self.rp1, skipped), (self.child1, skipped)}),
            (rc, {(r['uuid'], r['outcome']) for r in json.loads(out)}), err)
        for rp in (self.rp1, self.child1, fpga, lone):
            self.assertTrue(self.provider_exists(rp), rp)


class IronicNodeRemovedTest(ProviderCycleTestCase):
    """An ironic-style node goes away under an allocation nova forgot.

    The baremetal server on node2 was forced to deleted in SQL (seed
    003's runbook), so nova's cascade does not find it; then the node is
    deleted from ironic. The next ``update_available_resource`` destroys
    the compute node and tries to delete its provider: 409, ignored.
    """

    HOSTS = ('host1',)

    def setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.fake.RemovableIronicLikeDriver',
            RemovableIronicLikeDriver))
        super().setUp()
        self.flags(compute_driver='fake.RemovableIronicLikeDriver')
        self._start_compute('ironic1')
        self.nodes = {n: self._get_provider_uuid_by_name(n)
                      for n in ('ironic1-node1', 'ironic1-node2')}
        baremetal = {'id': self._create_flavor(extra_spec={
            'resources:CUSTOM_BAREMETAL_GOLD': '1', 'resources:VCPU': '0',
            'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'})}
        self.vm1 = self.boot('vm1', 'ironic1', flavor=baremetal,
                             node='ironic1-node1')['id']
        self.vm2 = self.boot('vm2', 'ironic1', flavor=baremetal,
                             node='ironic1-node2')['id']
        self.force_delete_in_sql(self.vm2)

        compute = self.computes['ironic1']
        compute.driver._set_nodes(['ironic1-node1'])
        compute.manager.update_available_resource(
            nova_context.get_admin_context())

    @comparison.scenario('provider_ironic_node_removed')
    def test_node_removed(self):
        self.age_nova()
        node1, node2 = self.nodes['ironic1-node1'], self.nodes['ironic1-node2']
        rows = {r.hypervisor_hostname: r
                for r in self.compute_node_rows('ironic1')}
        self.assertEqual(0, rows['ironic1-node1'].deleted)
        self.assertNotEqual(0, rows['ironic1-node2'].deleted)
        self.assertEqual(node2, rows['ironic1-node2'].uuid)
        self.assertTrue(self.provider_exists(node2))
        self.assertEqual({node2: GOLD}, self.get_allocations(self.vm2))
        # A periodic later, still there: nova will never delete it.
        self._run_periodics()
        self.assertTrue(self.provider_exists(node2))

        expected = [
            self.prow(node2, 'deleted_compute_node', 'delete_provider',
                      'ironic1', 1, 1),
            self.prow(node1, 'live_compute_node', 'none', 'ironic1', 1),
            self.prow(self.rp_uuids['host1'], 'live_compute_node', 'none',
                      'host1', 0),
        ]
        result = self.run_cycle([
            self.row(self.vm1, node1, 'ironic1', 'active_instance', 'none',
                     GOLD),
            self.row(self.vm2, node2, 'ironic1', 'deleted_instance',
                     'delete_consumer', GOLD),
        ], providers=self.observed(expected))
        # audit --delete ignores custom-class-only allocations: the state
        # is still the scenario's.
        self.assertEqual(result['before'], self.placement_state())
        # nova's periodics with the tree gone change nothing else.
        self.run_provider_cycle(expected, after_clean=self._run_periodics)


class LookAlikeProvidersTest(ProviderCycleTestCase):
    """Providers that are not orphans, next to one that is.

    host1 is live with a server; host2's service is disabled and host3's
    forced down, each with a server; a sharing disk provider shares with
    host1; a neutron agent's tree (agent, bridge) stands alone in
    placement with a port's allocation on the bridge; host5 lives in
    cell2. host4 was deleted with a stranger's allocation on it and
    reinstalled under the same name: its new node has a new uuid, and
    placement refuses the new provider its name while the old one lives.
    Only the old host4 tree may go.
    """

    HOSTS = ('host1', 'host2', 'host3', 'host4')
    NUMBER_OF_CELLS = 2

    def setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.fake.ReinstalledHostDriver', ReinstalledHostDriver))
        super().setUp()
        self._start_compute('host5', cell_name='cell2')
        self.rp_uuids['host5'] = self._get_provider_uuid_by_host('host5')
        rps = self.rp_uuids
        self.vms = {}
        for host in ('host1', 'host2', 'host3', 'host5'):
            self.vms[host] = self.boot('vm-%s' % host, host)['id']
        service = self.admin_api.get_services(host='host2',
                                              binary='nova-compute')[0]
        self.admin_api.put_service(service['id'], {'status': 'disabled'})
        self.force_down('host3')

        self.shared = self.post_provider('shared-disk')['uuid']
        self.put_inventory(self.shared, {'DISK_GB': 1000},
                           traits=['MISC_SHARES_VIA_AGGREGATE'],
                           aggregates=[uuids.shared_disk])
        self._set_aggregate(rps['host1'], uuids.shared_disk)
        self.agent = self.post_provider('netnode1:ovs-agent')['uuid']
        self.bridge = self.post_provider('netnode1:ovs-agent:br-ex',
                                         self.agent)['uuid']
        self.put_inventory(self.bridge, {'NET_BW_EGR_KILOBIT_PER_SEC': 10000},
                           traits=['CUSTOM_PHYSNET1'])
        self.port = self.label(uuids.port1, 'port1')
        self.put_allocations(self.port, {
            self.bridge: {'NET_BW_EGR_KILOBIT_PER_SEC': 1000}},
            uuids.neutron_project, uuids.neutron_user)

        self.old4 = rps['host4']
        self.stranger = self.label(uuids.stranger, 'stranger')
        self.put_allocations(self.stranger, {self.old4: {'VCPU': 1}},
                             uuids.other_project, uuids.other_user)
        self.delete_service('host4')
        # Reinstalled: discovered again, a new node identity.
        self.host_mappings.pop('host4')
        self.flags(compute_driver='fake.ReinstalledHostDriver')
        self._start_compute('host4')
        self.new4 = str(uuids.reinstalled_host4)

    def check_cell_down(self):
        """cell2 cannot be read: its node's tree is never touched.

        host4's old tree is still provably a deleted node of cell1's (no
        readable cell has it live), but the stranger's allocation on it
        can no longer be judged (cell2 might know the consumer), so clean
        must leave it: nothing in placement changes.
        """
        rps = self.rp_uuids
        self.break_cell('cell2')
        live = 'live_compute_node', 'none'
        unverifiable = 'unverifiable', 'none'
        expected = [
            self.prow(rps['host1'], *live, 'host1', 1),
            self.prow(rps['host2'], *live, 'host2', 1),
            self.prow(rps['host3'], *live, 'host3', 1),
            self.prow(rps['host5'], *unverifiable, None, 1, cell=None),
            self.prow(self.shared, 'unmanaged', 'none', None, 0, cell=None),
            self.prow(self.agent, *unverifiable, None, 0, cell=None),
            self.prow(self.bridge, *unverifiable, None, 1, cell=None),
            self.prow(self.old4, 'deleted_compute_node', 'delete_provider',
                      'host4', 1, 0),
        ]
        self.assertEqual(('unverifiable', 'none'), self.allocation_verdicts(
        )[(self.stranger, self.old4)])
        before = self.placement_dump()
        rows = self.list_providers('--all')
        self.assertIn('cell2', self.manage_stderr)
        rc, out = self.run_manage('providers', 'clean', '--format', 'json')
        self.assertNotIn(rc, (0, 4, 127, 255), out + self.manage_stderr)
        self.assertEqual(before, self.placement_dump())
        self._set_cell_connection('cell2', self.cell_urls['cell2'])
        # The rows are checked at the end of the test: what comes next
        # does not depend on them.
        return expected, rows

    @comparison.scenario('provider_lookalikes')
    def test_lookalikes(self):
        self.age_nova()
        cell_down = self.check_cell_down()
        rps = self.rp_uuids
        old, new = self.compute_node_rows('host4')
        self.assertEqual((self.old4, 'host4'), (old.uuid,
                                                old.hypervisor_hostname))
        self.assertNotEqual(0, old.deleted)
        self.assertEqual((self.new4, 'host4', 0), tuple(new))
        # placement refuses the reinstalled node its provider: the old
        # one holds the name.
        self.assertFalse(self.provider_exists(self.new4))
        self.assertEqual('host4', self.providers()[self.old4]['name'])

        live = 'live_compute_node', 'none'
        expected = [
            self.prow(rps['host1'], *live, 'host1', 1),
            self.prow(rps['host2'], *live, 'host2', 1),
            self.prow(rps['host3'], *live, 'host3', 1),
            self.prow(rps['host5'], *live, 'host5', 1, cell='cell2'),
            self.prow(self.shared, 'unmanaged', 'none', None, 0, cell=None),
            self.prow(self.agent, 'unmanaged', 'none', None, 0, cell=None),
            self.prow(self.bridge, 'unmanaged', 'none', None, 1, cell=None),
            self.prow(self.old4, 'deleted_compute_node', 'delete_provider',
                      'host4', 1, 1),
        ]

        self.run_provider_cycle(expected)

        # The same through openstack, with osc-placement loaded too.
        before = self.placement_dump()
        self.assertSameProviderRows(self.list_providers('--all'),
                                    self.osc_providers('--all'),
                                    deleted=[self.old4])
        self.check_osc_placement(present=list(before['providers']))
        journal = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'osc.jsonl')
        rc, out, err = self.openstack(
            'resource', 'provider', 'orphan', 'clean', '--journal', journal,
            '-f', 'json')
        self.assertEqual(4, rc, err)
        self.assertEqual([self.old4], [r['uuid'] for r in json.loads(out)])
        self.assertEqual(self.without_trees(before, {self.old4}),
                         self.placement_dump())
        self.check_osc_placement(present=set(before['providers']) -
                                 {self.old4}, absent=[self.old4])

        # With the old tree gone, nova's next periodic registers the
        # reinstalled node under its name; restoring the old tree now
        # would take that name: restore refuses and changes nothing.
        self.computes['host4'].manager.update_available_resource(
            nova_context.get_admin_context())
        self.assertEqual('host4', self.providers()[self.new4]['name'])
        after = self.placement_dump()
        rc, out = self.run_manage('allocations', 'restore', '--journal',
                                  journal, '--format', 'json')
        self.assertEqual(1, rc, out + self.manage_stderr)
        self.assertIn(self.old4, out + self.manage_stderr)
        self.assertEqual(after, self.placement_dump())
        # Without the new provider (its node not yet reporting again), the
        # same journal restores the old tree exactly.
        self._ok(self.placement.delete('/resource_providers/%s' % self.new4),
                 204)
        self.restore(journal)
        self.assertEqual(self.without_generations(before),
                         self.without_generations(self.placement_dump()))

        # Last: the comparison page's row, then the cell-down rows.
        self.run_cycle([
            self.row(self.vms['host1'], rps['host1'], 'host1',
                     'active_instance', 'none', FLAVOR),
            self.row(self.vms['host2'], rps['host2'], 'host2',
                     'active_instance', 'none', FLAVOR),
            self.row(self.vms['host3'], rps['host3'], 'host3',
                     'active_instance', 'none', FLAVOR),
            self.row(self.vms['host5'], rps['host5'], 'host5',
                     'active_instance', 'none', FLAVOR, cell='cell2'),
            self.row(self.port, self.bridge, None, 'unmanaged_provider',
                     'none', {'NET_BW_EGR_KILOBIT_PER_SEC': 1000},
                     consumer_type='unknown', cell=None,
                     project_id=uuids.neutron_project,
                     user_id=uuids.neutron_user),
            self.row(self.stranger, self.old4, 'host4', 'unknown_consumer',
                     'delete_consumer', {'VCPU': 1}, consumer_type='unknown',
                     instance=None, project_id=uuids.other_project,
                     user_id=uuids.other_user),
        ], providers=self.observed(expected))
        self.assertProviderRows(*cell_down)
