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
"""The functional fixtures drive the real placement and nova schema.

Every other functional test trusts these fixtures, so they are checked
against placement's API and nova's own nova-manage rather than against
themselves.
"""

import json
import os
import uuid

from oslotest import base
import sqlalchemy as sa

from nova_orphans.tests.functional.fixtures import nova_db
from nova_orphans.tests.functional.fixtures import placement

AGG = '2d3c4b5a-6978-4a1b-8c2d-3e4f5a6b7c8d'


class TestPlacementServer(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(placement.PlacementServer())

    def _tree(self):
        p = self.placement
        root = p.create_provider(
            'cn1', inventory={'VCPU': 8, 'MEMORY_MB': 4096},
            aggregates=[AGG])
        child = p.create_provider(
            'cn1:bw', parent=root, inventory={'CUSTOM_NET_BW_KBPS': 1000},
            traits=['CUSTOM_PHYSNET_PUBLIC'])
        shared = p.create_provider(
            'nfs', inventory={'DISK_GB': 500},
            traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[AGG])
        return root, child, shared

    def test_nested_and_sharing_providers(self):
        p = self.placement
        root, child, shared = self._tree()

        tree = p.request('GET', '/resource_providers?in_tree=%s' % child)
        self.assertEqual(
            {root: None, child: root},
            {rp['uuid']: rp['parent_provider_uuid']
             for rp in tree.json()['resource_providers']})
        inv = p.request('GET', '/resource_providers/%s/inventories' % child)
        self.assertEqual(
            1000, inv.json()['inventories']['CUSTOM_NET_BW_KBPS']['max_unit'])
        self.assertEqual(
            ['MISC_SHARES_VIA_AGGREGATE'],
            p.request('GET', '/resource_providers/%s/traits' % shared
                      ).json()['traits'])
        self.assertEqual(
            [AGG], p.request('GET', '/resource_providers/%s/aggregates' %
                             shared).json()['aggregates'])
        # Placement itself sees the sharing provider serving the root.
        cands = p.request(
            'GET', '/allocation_candidates?resources=VCPU:1,DISK_GB:10')
        self.assertEqual(
            [{root: {'VCPU': 1}, shared: {'DISK_GB': 10}}],
            [{rp: a['resources'] for rp, a in c['allocations'].items()}
             for c in cands.json()['allocation_requests']])

        server = str(uuid.uuid4())
        p.put_allocations(server, {root: {'VCPU': 2},
                                   child: {'CUSTOM_NET_BW_KBPS': 100},
                                   shared: {'DISK_GB': 10}},
                          nova_db.PROJECT, nova_db.USER)
        self.assertEqual(
            {server: {'CUSTOM_NET_BW_KBPS': 100}},
            {c: a['resources'] for c, a in
             p.provider_allocations(child)['allocations'].items()})
        self.assertEqual(409, p.delete_provider(shared).status_code)
        p.put_allocations(server, {}, nova_db.PROJECT, nova_db.USER)
        self.assertEqual(409, p.delete_provider(root).status_code)  # child
        self.assertEqual(204, p.delete_provider(child).status_code)
        self.assertEqual(204, p.delete_provider(root).status_code)

    def test_consumer_types(self):
        p = self.placement
        root, _, _ = self._tree()
        untyped, typed = str(uuid.uuid4()), str(uuid.uuid4())
        p.put_allocations(untyped, {root: {'VCPU': 1}}, nova_db.PROJECT,
                          nova_db.USER, consumer_type=None)
        p.put_allocations(typed, {root: {'VCPU': 1}}, nova_db.PROJECT,
                          nova_db.USER, consumer_type='INSTANCE')

        self.assertEqual('unknown',
                         p.get_allocations(untyped)['consumer_type'])
        self.assertEqual('INSTANCE', p.get_allocations(typed)['consumer_type'])
        self.assertNotIn('consumer_type', p.request(
            'GET', '/allocations/%s' % untyped, version='1.37').json())
        # Read back as "unknown", the type cannot be written back as is.
        doc = p.get_allocations(untyped)
        resp = p.request('PUT', '/allocations/%s' % untyped, json={
            'allocations': {rp: {'resources': a['resources']}
                            for rp, a in doc['allocations'].items()},
            'project_id': doc['project_id'], 'user_id': doc['user_id'],
            'consumer_generation': doc['consumer_generation'],
            'consumer_type': 'unknown'})
        self.assertEqual(400, resp.status_code)
        # And an update keeps the consumer generation honest.
        p.put_allocations(typed, {root: {'VCPU': 3}}, nova_db.PROJECT,
                          nova_db.USER)
        self.assertEqual(2, p.get_allocations(typed)['consumer_generation'])

    def test_dump_state_is_stable_and_restorable(self):
        p = self.placement
        root, child, shared = self._tree()
        a, b = str(uuid.uuid4()), str(uuid.uuid4())
        p.put_allocations(a, {root: {'VCPU': 1, 'MEMORY_MB': 512},
                              shared: {'DISK_GB': 5}}, 'proj-a', 'user-a',
                          consumer_type=None)
        p.put_allocations(b, {child: {'CUSTOM_NET_BW_KBPS': 10}},
                          'proj-b', 'user-b', consumer_type='MIGRATION')
        before = p.dump_state()
        self.assertEqual(before, p.dump_state())
        self.assertEqual({a, b}, set(before))
        # Read from placement's database, what its API shows.
        for consumer, expected in before.items():
            doc = p.get_allocations(consumer)
            self.assertEqual(expected, {
                'project_id': doc['project_id'], 'user_id': doc['user_id'],
                'consumer_type': doc['consumer_type'],
                'consumer_generation': doc['consumer_generation'],
                'allocations': {rp: alloc['resources'] for rp, alloc in
                                doc['allocations'].items()}})
        self.assertEqual(
            {a, b}, {c for rp in (root, child, shared)
                     for c in p.provider_allocations(rp)['allocations']})
        self.assertEqual(
            {'project_id': 'proj-a', 'user_id': 'user-a',
             'consumer_type': 'unknown', 'consumer_generation': 1,
             'allocations': {root: {'MEMORY_MB': 512, 'VCPU': 1},
                             shared: {'DISK_GB': 5}}},
            before[a])

        self.assertEqual(204, p.request('DELETE', '/allocations/%s' % a)
                         .status_code)
        self.assertNotEqual(before, p.dump_state())
        p.put_allocations(a, {root: {'VCPU': 1, 'MEMORY_MB': 512},
                              shared: {'DISK_GB': 5}}, 'proj-a', 'user-a',
                          consumer_type=None)
        self.assertEqual(before, p.dump_state())


class TestPlacementIsolation(base.BaseTestCase):

    def test_every_server_starts_empty_with_its_own_database(self):
        first = placement.PlacementServer()
        first.setUp()
        try:
            rp = first.create_provider('cn1', inventory={'VCPU': 4})
            first.put_allocations(str(uuid.uuid4()), {rp: {'VCPU': 1}},
                                  'p', 'u')
            engine = sa.create_engine(first.db_url)
            self.addCleanup(engine.dispose)
            with engine.connect() as conn:
                self.assertEqual(1, conn.execute(sa.text(
                    'SELECT count(*) FROM allocations')).scalar())
            # placement's DB context is process-global: one at a time.
            self.assertRaises(RuntimeError,
                              placement.PlacementServer().setUp)
        finally:
            first.cleanUp()

        second = self.useFixture(placement.PlacementServer())
        self.assertNotEqual(first.db_url, second.db_url)
        self.assertEqual([], second.request(
            'GET', '/resource_providers').json()['resource_providers'])
        self.assertEqual({}, second.dump_state())
        # Standard traits are there: placement synced them on start.
        self.assertEqual(204, second.request(
            'GET', '/traits/HW_CPU_X86_AVX').status_code)


class TestNovaDatabases(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(nova_db.NovaDatabases(
            cells=('cell1', 'cell2')))

    def test_cells_are_mapped(self):
        self.assertEqual(
            {'cell0': nova_db.CELL0_UUID, 'cell1': self.nova.cell_uuids[
                'cell1'], 'cell2': self.nova.cell_uuids['cell2']},
            {r['name']: r['uuid'] for r in self.nova.rows('api',
                                                          'cell_mappings')})
        self.assertEqual(
            set(self.nova.cell_urls.values()),
            {r['database_connection']
             for r in self.nova.rows('api', 'cell_mappings')})

    def test_rows_after_add(self):
        n = self.nova
        cn = n.add_compute_node('cell1', 'host1')
        inst = n.add_instance(
            'cell1', host='host1', node='host1',
            flavor={'vcpus': 2, 'memory_mb': 2048,
                    'extra_specs': {'resources:CUSTOM_BAREMETAL_GOLD': '1'}})
        mig = n.add_migration('cell1', inst, source_compute='host1',
                              source_node='host1', dest_compute='host2',
                              dest_node='host2', status='confirmed')
        gone = n.add_instance('cell2', deleted=True)
        building = str(uuid.uuid4())
        n.add_build_request(building)

        [node] = n.rows('cell1', 'compute_nodes')
        self.assertEqual((cn, 'host1', 0), (node['uuid'],
                                            node['hypervisor_hostname'],
                                            node['deleted']))
        [svc] = n.rows('cell1', 'services')
        self.assertEqual(('host1', 'nova-compute', 'compute', False),
                         (svc['host'], svc['binary'], svc['topic'],
                          svc['forced_down']))
        [hm] = n.rows('api', 'host_mappings')
        self.assertEqual(('host1', 2), (hm['host'], hm['cell_id']))

        [row] = n.rows('cell1', 'instances', uuid=inst)
        self.assertEqual((2, 2048, 'active', node['id'], 0),
                         (row['vcpus'], row['memory_mb'], row['vm_state'],
                          row['compute_id'], row['deleted']))
        [extra] = n.rows('cell1', 'instance_extra', instance_uuid=inst)
        flavor = json.loads(extra['flavor'])
        self.assertEqual({'cur', 'old', 'new'}, set(flavor))
        self.assertEqual('Flavor', flavor['cur']['nova_object.name'])
        self.assertEqual(
            {'resources:CUSTOM_BAREMETAL_GOLD': '1'},
            flavor['cur']['nova_object.data']['extra_specs'])
        self.assertIsNone(flavor['old'])

        [m] = n.rows('cell1', 'migrations', uuid=mig)
        self.assertEqual((inst, 'migration', 'confirmed', nova_db.PROJECT),
                         (m['instance_uuid'], m['migration_type'],
                          m['status'], m['project_id']))

        [row] = n.rows('cell2', 'instances', uuid=gone)
        self.assertEqual((row['id'], 'deleted'),
                         (row['deleted'], row['vm_state']))
        mappings = {r['instance_uuid']: r['cell_id']
                    for r in n.rows('api', 'instance_mappings')}
        self.assertEqual({inst: 2, gone: 3, building: None}, mappings)
        self.assertEqual(1, len(n.rows('api', 'build_requests',
                                       instance_uuid=building)))

    def test_force_delete_and_archive(self):
        n = self.nova
        n.add_compute_node('cell1', 'host1')
        live = n.add_instance('cell1', host='host1', node='host1')
        forced = n.add_instance('cell1', host='host1', node='host1')
        n.add_migration('cell1', forced, source_compute='host1')
        n.force_delete_instance('cell1', forced)
        [row] = n.rows('cell1', 'instances', uuid=forced)
        self.assertEqual((row['id'], 'deleted'),
                         (row['deleted'], row['vm_state']))
        self.assertIsNotNone(row['deleted_at'])
        # The runbook leaves the children alone.
        self.assertEqual(0, n.rows('cell1', 'instance_extra',
                                   instance_uuid=forced)[0]['deleted'])

        n.archive('cell1')

        self.assertEqual([live], [r['uuid'] for r in n.rows('cell1',
                                                            'instances')])
        self.assertEqual([forced], [r['uuid'] for r in n.rows(
            'cell1', 'shadow_instances')])
        self.assertEqual([], n.rows('cell1', 'migrations'))
        self.assertEqual(1, len(n.rows('cell1', 'shadow_instance_extra',
                                       instance_uuid=forced)))
        self.assertEqual([live], [r['instance_uuid'] for r in n.rows(
            'api', 'instance_mappings')])

    def test_break_cell(self):
        n = self.nova
        n.add_instance('cell2')
        n.break_cell('cell2')
        urls = {r['name']: r['database_connection']
                for r in n.rows('api', 'cell_mappings')}
        self.assertEqual(n.cell_urls['cell1'], urls['cell1'])
        engine = sa.create_engine(urls['cell2'])
        self.addCleanup(engine.dispose)
        self.assertRaises(sa.exc.OperationalError, engine.connect)
        # Only the mapping is broken; the fixture still reaches the file.
        self.assertEqual(1, len(n.rows('cell2', 'instances')))
        n.set_cell_url('cell2', n.cell_urls['cell2'])
        [mapping] = n.rows('api', 'cell_mappings', name='cell2')
        engine = sa.create_engine(mapping['database_connection'])
        self.addCleanup(engine.dispose)
        with engine.connect() as conn:
            self.assertEqual(1, conn.execute(sa.text(
                'SELECT count(*) FROM instances')).scalar())


class TestTemplatedCellMapping(base.BaseTestCase):

    def test_nova_resolves_the_template(self):
        n = self.useFixture(nova_db.NovaDatabases(templated=True))
        mapped = {r['name']: r['database_connection']
                  for r in n.rows('api', 'cell_mappings')}
        self.assertEqual(nova_db.SQLITE_CELL_TEMPLATE, mapped['cell1'])
        conf = n.write_nova_conf(
            os.path.join(n.dir, 'nova.conf'), 'http://127.0.0.1:9',
            extra={'placement': {'region_name': 'RegionOne'}})
        with open(conf) as f:
            self.assertIn('region_name = RegionOne', f.read())

        out = nova_db.nova_manage(conf, 'cell_v2', 'list_cells',
                                  '--verbose').stdout
        self.assertIn(' %s ' % n.cell_urls['cell1'], out)
        self.assertNotIn('{', out)
