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
from oslotest import base

from nova_orphans.clients import compute
from nova_orphans.engine import classify
from nova_orphans.engine import model
from nova_orphans.engine import reasons
from nova_orphans.engine import shapes
from nova_orphans import exception
from nova_orphans.readers import compute_api
from nova_orphans.repair import heal
from nova_orphans.tests.unit import fakes

VM1 = '11111111-1111-4111-8111-111111111111'
VM2 = '22222222-2222-4222-8222-222222222222'
VM3 = '33333333-3333-4333-8333-333333333333'
GONE = '44444444-4444-4444-8444-444444444444'
LATE = '55555555-5555-4555-8555-555555555555'
MIG1 = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa'
MIG2 = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb'
RP1 = 'c1c1c1c1-c1c1-41c1-81c1-c1c1c1c1c1c1'
RP2 = 'c2c2c2c2-c2c2-42c2-82c2-c2c2c2c2c2c2'
RP3 = 'c3c3c3c3-c3c3-43c3-83c3-c3c3c3c3c3c3'
API = compute_api.API_CELL.uuid


class ComputeAPIReaderTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.api = fakes.FakeCompute(max_limit=2)
        self.api.services = [
            fakes.service_doc('host1'), fakes.service_doc('host2',
                                                          status='disabled'),
            fakes.service_doc('host3', forced_down=True),
            fakes.service_doc('ctl', binary='nova-conductor')]
        self.api.hypervisors = [fakes.hypervisor(RP1, 'host1'),
                                fakes.hypervisor(RP2, 'host2'),
                                fakes.hypervisor(RP3, 'host3')]
        self.api.servers = [
            fakes.server(VM1, 'host1'),
            fakes.server(VM2, 'host2', task_state='resize_migrating'),
            fakes.server(VM3, None, vm_state='shelved_offloaded',
                         status='SHELVED_OFFLOADED')]
        self.api.migrations = [
            fakes.migration_doc(MIG1, VM2, 'finished', source='host2',
                                dest='host3')]
        self.reader = compute_api.ComputeAPIReader(
            compute.ComputeClient(self.api), concurrency=2)

    def test_read_builds_the_snapshot(self):
        snap = self.reader.read()
        self.assertEqual({API: compute_api.API_CELL}, snap.cells)
        self.assertTrue(snap.cells[API].readable)
        self.assertEqual(
            model.ComputeNode(uuid=RP2, host='host2',
                              hypervisor_hostname='host2', cell=API,
                              hypervisor_type='fake'),
            snap.compute_nodes[RP2])
        self.assertEqual({RP1, RP2, RP3}, set(snap.compute_nodes))
        self.assertEqual(
            [('host1', 'nova-compute', False, False),
             ('host2', 'nova-compute', True, False),
             ('host3', 'nova-compute', False, True),
             ('ctl', 'nova-conductor', False, False)],
            [(s.host, s.binary, s.disabled, s.forced_down)
             for s in snap.services])
        self.assertEqual(
            model.Instance(uuid=VM2, cell=API, host='host2', node='host2',
                           vm_state='active', task_state='resize_migrating',
                           project_id=fakes.PROJECT, user_id=fakes.USER),
            snap.instances[VM2])
        self.assertEqual('shelved_offloaded', snap.instances[VM3].vm_state)
        self.assertEqual(
            model.Migration(uuid=MIG1, instance_uuid=VM2, cell=API,
                            status='finished', migration_type='migration',
                            source_compute='host2', source_node='host2',
                            dest_compute='host3', dest_node='host3'),
            snap.migrations[MIG1])
        self.assertEqual({}, snap.mappings)
        self.assertEqual(frozenset(), snap.build_requests)

    def test_read_pages_with_marker_at_a_pinned_microversion(self):
        self.reader.read()
        self.assertEqual(
            ['', '/os-services',
             '/os-hypervisors/detail?limit=1000',
             '/os-hypervisors/detail?limit=1000&marker=%s' % RP2,
             '/servers/detail?all_tenants=1&limit=1000',
             '/servers/detail?all_tenants=1&limit=1000&marker=%s' % VM2,
             '/os-migrations?limit=1000'],
            self.api.urls())
        self.assertEqual({None}, {v for _m, u, v in self.api.requests
                                  if u == ''})
        self.assertEqual({'2.69'}, {v for _m, u, v in self.api.requests
                                    if u != ''})

    def test_old_compute_api_is_refused(self):
        self.api.version = '2.60'
        e = self.assertRaises(exception.ComputeVersionTooOld, self.reader.read)
        self.assertEqual(
            'The compute API at http://compute/v2.1 supports '
            'microversions up to 2.60; nova-orphans needs 2.69.', str(e))
        self.assertEqual([''], self.api.urls())

    def test_placement_answering_for_compute_is_refused(self):
        self.api.handle = lambda *a: fakes.FakePlacement().handle(
            'GET', '/', {}, None)
        e = self.assertRaises(exception.WrongEndpoint, self.reader.read)
        self.assertEqual(
            'The compute API at http://compute/v2.1 answered 200 OK with '
            'other JSON, not the compute API\'s version document: it is '
            'placement\'s; with admin_token auth, set '
            'compute_endpoint_override', str(e))

    def test_unversioned_endpoint_document(self):
        self.api.handle = lambda *a: fakes.Response(200, {'versions': [
            {'id': 'v2.0', 'version': '', 'min_version': ''},
            {'id': 'v2.1', 'version': '2.60', 'min_version': '2.1'}]})
        e = self.assertRaises(exception.ComputeVersionTooOld, self.reader.read)
        self.assertIn('up to 2.60;', str(e))

    def test_api_errors_are_one_line(self):
        self.api.services = None
        handle = self.api.handle
        self.api.handle = lambda method, path, *a: handle(
            method, path, *a) if path == '' else fakes.Response(
            503, {'serviceUnavailable': {'message': 'cells are down'}})
        e = self.assertRaises(compute.ComputeError, self.reader.read)
        self.assertEqual('Compute request GET /os-services failed: 503 cells '
                         'are down', str(e))

    def test_resolve_only_when_something_is_unknown(self):
        snap = self.reader.read()
        before = len(self.api.requests)
        self.reader.resolve(snap, {VM1, VM2, MIG1})
        self.assertEqual(before, len(self.api.requests))

    def test_resolve_deleted_then_individually(self):
        self.api.deleted = [
            fakes.server(GONE, 'host1', vm_state='deleted',
                         status='DELETED'),
            fakes.server(VM1, 'host1', vm_state='soft-delete',
                         status='SOFT_DELETED')]
        snap = self.reader.read()
        self.api.hidden = [fakes.server(LATE, None, vm_state='building',
                                        status='BUILD')]
        self.api.requests = []
        self.reader.resolve(snap, {VM1, GONE, LATE, MIG2})
        self.assertTrue(snap.instances[GONE].deleted)
        # Listed live already: the live record stays.
        self.assertFalse(snap.instances[VM1].deleted)
        self.assertEqual('building', snap.instances[LATE].vm_state)
        self.assertNotIn(MIG2, snap.instances)
        urls = self.api.urls()
        self.assertIn('/servers/detail?all_tenants=1&deleted=1&limit=1000',
                      urls)
        # Migrations listed again, then each unknown looked up alone.
        self.assertIn('/os-migrations?limit=1000', urls)
        for uuid in (LATE, MIG2):
            self.assertIn('/servers/%s' % uuid, urls)
            self.assertIn('/os-migrations?instance_uuid=%s&limit=1000' % uuid,
                          urls)
        self.assertNotIn('/servers/%s' % GONE, urls)

    def test_resolve_finds_a_migration_newer_than_the_listing(self):
        snap = self.reader.read()
        self.api.migrations.append(fakes.migration_doc(
            MIG2, VM1, 'migrating', source='host1', dest='host2'))
        self.reader.resolve(snap, {MIG2})
        self.assertEqual(VM1, snap.migrations[MIG2].instance_uuid)

    def test_soft_deleted_in_deleted_listing_is_not_deleted(self):
        self.api.deleted = [fakes.server(GONE, 'host1',
                                         vm_state='soft-delete',
                                         status='SOFT_DELETED')]
        snap = self.reader.resolve(self.reader.read(), {GONE})
        self.assertFalse(snap.instances[GONE].deleted)
        self.assertEqual('soft-delete', snap.instances[GONE].vm_state)

    def test_down_cell_is_unreadable_and_its_servers_unverifiable(self):
        self.api.services.append({'host': 'host9', 'binary': 'nova-compute',
                                  'status': 'UNKNOWN'})
        self.api.hidden = [{'id': GONE, 'status': 'UNKNOWN',
                            'tenant_id': fakes.PROJECT}]
        snap = self.reader.read()
        self.reader.resolve(snap, {GONE, LATE})
        down = snap.cells[compute_api.DOWN_CELL_UUID]
        self.assertFalse(down.readable)
        self.assertIn('host9', down.error)
        self.assertEqual([down], snap.unreadable_cells)
        self.assertEqual(compute_api.DOWN_CELL_UUID, snap.instances[GONE].cell)
        self.assertEqual(
            {GONE: (reasons.UNVERIFIABLE, reasons.NONE),
             LATE: (reasons.UNVERIFIABLE, reasons.NONE),
             VM1: (reasons.ACTIVE_INSTANCE, reasons.NONE)},
            self._verdicts(snap, {GONE: RP1, LATE: RP2, VM1: RP1}))

    def _fail_hypervisor_listing(self):
        """nova answers 500, as when it reaches a cell that is down."""
        handle = self.api.handle

        def broken(method, path, params, body):
            if path == '/os-hypervisors/detail':
                return fakes.Response(500, {'computeFault': {
                    'message': 'Unexpected API Error.\n<DBError>'}})
            return handle(method, path, params, body)

        self.api.handle = broken

    def test_hypervisors_failing_with_a_down_cell(self):
        self.api.services.append({'host': 'host9', 'binary': 'nova-compute',
                                  'status': 'UNKNOWN'})
        self._fail_hypervisor_listing()
        snap = self.reader.read()
        self.assertEqual({}, snap.compute_nodes)
        self.reader.resolve(snap, {VM1, GONE})
        # No provider is known to be a compute node: nothing is judged,
        # not even a live server's allocation.
        self.assertEqual(
            {VM1: (reasons.UNVERIFIABLE, reasons.NONE),
             GONE: (reasons.UNVERIFIABLE, reasons.NONE)},
            self._verdicts(snap, {VM1: RP1, GONE: RP2}))

    def test_hypervisors_failing_without_a_down_cell_is_an_error(self):
        self._fail_hypervisor_listing()
        e = self.assertRaises(compute.ComputeError, self.reader.read)
        self.assertEqual('Compute request GET /os-hypervisors/detail?'
                         'limit=1000 failed: 500 Unexpected API Error.',
                         str(e))

    def test_down_cell_server_without_down_services(self):
        self.api.hidden = [{'id': GONE, 'status': 'UNKNOWN',
                            'tenant_id': fakes.PROJECT}]
        snap = self.reader.resolve(self.reader.read(), {GONE})
        self.assertFalse(snap.cells[compute_api.DOWN_CELL_UUID].readable)

    def test_unknown_and_deleted_are_orphans(self):
        self.api.deleted = [fakes.server(GONE, 'host1', vm_state='deleted',
                                         status='DELETED')]
        snap = self.reader.read()
        self.reader.resolve(snap, {GONE, LATE, MIG1, VM2})
        self.assertEqual(
            {GONE: (reasons.DELETED_INSTANCE, reasons.DELETE_CONSUMER),
             LATE: (reasons.UNKNOWN_CONSUMER, reasons.DELETE_CONSUMER),
             MIG1: (reasons.ACTIVE_MIGRATION, reasons.NONE),
             VM2: (reasons.ACTIVE_INSTANCE, reasons.NONE)},
            self._verdicts(snap, {GONE: RP1, LATE: RP2, MIG1: RP2,
                                  VM2: RP2}))

    def test_row_deleted_in_sql_is_found_by_its_actions(self):
        """deleted=1 set in SQL: in no listing, but its actions show."""
        self.api.unlisted = [GONE]
        snap = self.reader.resolve(self.reader.read(), {GONE, LATE})
        self.assertTrue(snap.instances[GONE].deleted)
        self.assertIn('/servers/%s/os-instance-actions' % GONE,
                      self.api.urls())
        self.assertEqual(
            {GONE: (reasons.DELETED_INSTANCE, reasons.DELETE_CONSUMER),
             LATE: (reasons.UNKNOWN_CONSUMER, reasons.DELETE_CONSUMER)},
            self._verdicts(snap, {GONE: RP1, LATE: RP2}))
        # Re-verified before a repair the same way.
        fresh = self.reader.read_consumers(snap, [GONE])
        self.assertTrue(fresh.instances[GONE].deleted)

    @staticmethod
    def _verdicts(nova, allocations):
        placement = model.PlacementSnapshot(
            providers={rp: model.Provider(uuid=rp, name=rp, root_uuid=rp)
                       for rp in (RP1, RP2, RP3)},
            allocations=[model.Allocation(c, rp, {'VCPU': 1})
                         for c, rp in allocations.items()])
        return {f.consumer: (f.reason, f.action) for f in classify.classify(
            model.Snapshot(placement=placement, nova=nova))
            if f.reason != reasons.MISSING_ALLOCATIONS}

    def test_read_consumers_rereads_servers_and_migrations(self):
        base_snap = self.reader.resolve(self.reader.read(), {MIG1, VM1})
        # Since the audit: VM1 deleted, the migration confirmed.
        self.api.servers = [s for s in self.api.servers if s['id'] != VM1]
        self.api.deleted = [fakes.server(VM1, 'host1', vm_state='deleted',
                                         status='DELETED')]
        self.api.migrations[0]['status'] = 'confirmed'
        self.api.requests = []
        fresh = self.reader.read_consumers(base_snap, [MIG1, VM1])
        self.assertIs(base_snap.compute_nodes, fresh.compute_nodes)
        self.assertEqual(base_snap.cells, fresh.cells)
        self.assertTrue(fresh.instances[VM1].deleted)
        self.assertEqual('confirmed', fresh.migrations[MIG1].status)
        self.assertEqual({VM1, VM2}, set(fresh.instances))
        self.assertEqual(
            {'/servers/%s' % VM1, '/servers/%s' % VM2,
             '/servers/detail?all_tenants=1&deleted=1&uuid=%s' % VM1,
             '/os-migrations?instance_uuid=%s&limit=1000' % VM1,
             '/os-migrations?instance_uuid=%s&limit=1000' % VM2,
             # The live one's activity (rules.unsettled).
             '/servers/%s/os-instance-actions' % VM2},
            set(self.api.urls()))

    def test_read_consumers_finds_new_migration_and_its_instance(self):
        base_snap = self.reader.resolve(self.reader.read(), {MIG2})
        self.assertNotIn(MIG2, base_snap.migrations)
        self.api.migrations.append(fakes.migration_doc(
            MIG2, VM1, 'migrating', source='host1', dest='host2'))
        fresh = self.reader.read_consumers(base_snap, [MIG2])
        self.assertEqual(VM1, fresh.migrations[MIG2].instance_uuid)
        self.assertIn(VM1, fresh.instances)

    def test_heal_data_from_embedded_flavor(self):
        self.api.servers[0]['flavor']['extra_specs'] = {'hw:cpu_policy':
                                                        'dedicated'}
        self.api.servers[1]['image'] = ''
        self.api.interfaces[VM2] = [{'port_id': 'p1'}]
        snap = self.reader.read()
        data = self.reader.heal_data([snap.instances[VM1],
                                      snap.instances[VM2],
                                      model.Instance(uuid=GONE, cell=API)])
        self.assertNotIn(GONE, data)
        flavor, bfv, network_info = data[VM1]
        self.assertEqual(({'PCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1},
                          False, []),
                         (shapes.resources_from_flavor(flavor, bfv), bfv,
                          network_info))
        flavor, bfv, network_info = data[VM2]
        self.assertTrue(bfv)
        self.assertEqual({'VCPU': 1, 'MEMORY_MB': 512},
                         shapes.resources_from_flavor(flavor, bfv))
        # Ports' resource requests are invisible here: never healed.
        self.assertIn('p1', heal.nested_reason(flavor, network_info))


class PagesTestCase(base.BaseTestCase):

    def test_stops_when_the_marker_does_not_move(self):
        api = fakes.FakeCompute()
        api.handle = lambda *a: fakes.Response(200, {
            'things': [{'id': 'x'}],
            'things_links': [{'rel': 'next', 'href': 'h'}]})
        client = compute.ComputeClient(api)
        self.assertEqual([{'id': 'x'}, {'id': 'x'}],
                         client.pages('/things', 'things'))

    def test_down_cell_stand_in_is_not_a_marker(self):
        self.assertEqual('a', compute._marker([{'id': 'a'}, {
            'id': 'b', 'status': 'UNKNOWN'}]))
        self.assertIsNone(compute._marker([]))
