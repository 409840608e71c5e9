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
"""The shortcuts taken for speed give what the plain way gives."""

import dataclasses
import gc
import os
from unittest import mock

import fixtures
from oslotest import base
import sqlalchemy as sa

from nova_orphans.app import audit as audit_mod
from nova_orphans.app import foreign as foreign_mod
from nova_orphans.app import sources
from nova_orphans import db_utils
from nova_orphans.engine import classify
from nova_orphans.engine import index
from nova_orphans.engine import model
from nova_orphans.engine import reasons as r
from nova_orphans.engine import rules
from nova_orphans import memory
from nova_orphans.readers import base as readers_base
from nova_orphans.readers import placement_db
from nova_orphans.tests.unit import cloud as cloud_mod


class PositionalFieldsTestCase(base.BaseTestCase):
    """Records built positionally rely on their fields' order."""

    def test_finding_fields_are_the_contract_keys(self):
        self.assertEqual(
            list(model.FINDING_KEYS),
            [f.name for f in dataclasses.fields(model.Finding)])

    def test_instance_fields(self):
        # readers.nova_db builds instances positionally in this order.
        self.assertEqual(
            ['uuid', 'cell', 'host', 'node', 'vm_state', 'task_state',
             'deleted', 'archived', 'project_id', 'user_id', 'compute_node'],
            [f.name for f in dataclasses.fields(model.Instance)])

    def test_provider_and_allocation_fields(self):
        # readers.placement_db builds these positionally in this order.
        self.assertEqual(
            ['uuid', 'name', 'root_uuid', 'parent_uuid', 'generation',
             'sharing', 'aggregates', 'foreign_owner'],
            [f.name for f in dataclasses.fields(model.Provider)])
        self.assertEqual(
            ['consumer', 'provider', 'resources'],
            [f.name for f in dataclasses.fields(model.Allocation)])

    def test_finding_to_dict(self):
        # Spelled out for speed: the contract's keys, in its order.
        c = cloud_mod.Cloud()
        c.alloc(c.instance('host1', deleted=True), c.node('host1'), VCPU=2)
        c.instance('host1')
        findings = c.findings()
        self.assertEqual(2, len(findings))
        for finding in findings:
            row = finding.to_dict()
            self.assertEqual(list(model.FINDING_KEYS), list(row))
            self.assertEqual({k: getattr(finding, k)
                              for k in model.FINDING_KEYS}, row)
            self.assertIsNot(finding.resources, row['resources'])

    def test_consumer_and_mapping_fields(self):
        # readers.placement_db and nova_db build these from rows as is.
        self.assertEqual(
            ['uuid', 'project_id', 'user_id', 'generation', 'consumer_type'],
            [f.name for f in dataclasses.fields(model.Consumer)])
        self.assertEqual(
            ['instance_uuid', 'cell'],
            [f.name for f in dataclasses.fields(model.InstanceMapping)])


class ShownTestCase(base.BaseTestCase):
    """classify(shown=...) is classify() filtered, in the same order."""

    def setUp(self):
        super().setUp()
        c = self.cloud = cloud_mod.Cloud()
        host1, host2 = c.node('host1'), c.node('host2')
        vm = c.instance('host1')
        c.alloc(vm, host1)
        c.alloc(vm, host2)
        gone = c.instance('host2', deleted=True, vm_state='deleted')
        c.alloc(gone, host2)
        c.alloc(cloud_mod.uuid('stranger'), host1)
        building = c.instance('host2', vm_state='building')
        c.alloc(building, host2)
        c.instance('host1')     # missing_allocations

    def _check(self, shown):
        everything = self.cloud.findings()
        expected = [f for f in everything if shown(f)]
        self.assertEqual(expected, self.cloud.findings(shown=shown))
        return expected

    def test_orphans(self):
        found = self._check(lambda f: f.is_orphan)
        self.assertEqual(
            {r.STALE_PROVIDER, r.DELETED_INSTANCE, r.UNKNOWN_CONSUMER,
             r.MISSING_ALLOCATIONS}, {f.reason for f in found})

    def test_reasons(self):
        found = self._check(lambda f: f.reason in (r.BUILDING,
                                                   r.MISSING_ALLOCATIONS))
        self.assertEqual(2, len(found))

    def test_all(self):
        self.assertEqual(6, len(self._check(lambda f: True)))

    def test_verdict_is_orphan(self):
        self.assertTrue(rules.Verdict(r.STALE_PROVIDER, r.REMOVE_PROVIDER,
                                      '').is_orphan)
        self.assertFalse(rules.Verdict(r.BUILDING, r.NONE, '').is_orphan)


def _many_situations():
    """A cloud with most situations, look-alikes included."""
    c = cloud_mod.Cloud()
    host1 = c.node('host1', aggregates=('agg',))
    host2 = c.node('host2')
    ironic = c.node('host3', node='ironic-1')
    child = c.provider('host1-child', parent=host1)
    shared = c.provider('nfs', sharing=True, aggregates=('agg',))
    foreign = c.provider('foreign')
    # Another service's device under nova's own node.
    fpga = c.provider('host1-fpga', parent=host1,
                      foreign_owner='OWNER_CYBORG')
    for state in ('active', 'stopped', 'error', 'building',
                  'soft-delete', 'shelved_offloaded', 'resized'):
        for task in (None, 'scheduling', 'unshelving', 'deleting'):
            vm = c.instance('host1', vm_state=state, task_state=task)
            for rp in (host1, host2, child, shared, foreign, fpga):
                c.alloc(vm, rp)
    for kwargs in ({'deleted': True}, {'archived': True},
                   {'compute_node': ironic},
                   {'compute_node': host2},
                   {'node': 'elsewhere', 'compute_node': host1}):
        vm = c.instance('host1', **kwargs)
        for rp in (host1, ironic):
            c.alloc(vm, rp)
    moving = c.instance('host2')
    c.alloc(moving, host1)
    c.alloc(moving, host2)
    # A move in progress decides nothing on a sharing provider.
    c.alloc(moving, shared)
    mig = c.migration(moving, 'migrating', 'live-migration', 'host1',
                      'host2')
    c.alloc(mig, host1)
    evacuated = c.instance('host2')
    c.migration(evacuated, 'done', 'evacuation', 'host1', 'host2')
    c.alloc(evacuated, host1)
    c.alloc(evacuated, host2)
    c.alloc(cloud_mod.uuid('stranger'), host1)
    c.instance('host2')     # missing_allocations
    return c


class ShortcutTestCase(base.BaseTestCase):
    """Allocations classify.plainly_active spares the chain get the
    chain's verdict; any other chain sees every allocation.
    """

    def setUp(self):
        super().setUp()
        self.cloud = _many_situations()

    def _check(self):
        for shown in (None, lambda f: f.is_orphan, lambda f: True,
                      lambda f: f.reason == r.ACTIVE_INSTANCE):
            self.assertEqual(
                self.cloud.findings(shown=shown),
                self.cloud.findings(rules=list(rules.DEFAULT_RULES),
                                    shown=shown))

    def test_every_rule_before_active_instance_is_answered_for(self):
        """A rule added before active_instance fails this until
        plainly_active takes it into account (and says so).
        """
        chain = rules.DEFAULT_RULES
        self.assertEqual(
            chain[:chain.index(rules.active_instance)],
            classify.PLAINLY_ACTIVE_ANSWERS_FOR)

    def test_same_findings_as_the_chain(self):
        self._check()
        reasons_ = {f.reason for f in self.cloud.findings()}
        self.assertIn(r.ACTIVE_INSTANCE, reasons_)
        self.assertIn(r.STALE_PROVIDER, reasons_)

    def test_same_with_a_cell_down(self):
        self.cloud.add_cell('cell2', readable=False)
        self._check()
        self.assertIn(r.UNVERIFIABLE,
                      {f.reason for f in self.cloud.findings()})

    def test_a_site_chain_sees_every_allocation(self):
        seen = []

        def site_rule(ctx):
            seen.append((ctx.allocation.consumer, ctx.allocation.provider))
        self.cloud.findings(rules=(site_rule,) + rules.DEFAULT_RULES)
        self.assertEqual(
            [(a.consumer, a.provider)
             for a in self.cloud.placement.allocations], seen)


class CloudIndexTestCase(base.BaseTestCase):
    """A repair classifies each consumer on its own against one
    CloudIndex: the findings are those of classifying it without.
    """

    def setUp(self):
        super().setUp()
        self.cloud = _many_situations()

    def _one_by_one(self, cloud=None):
        snapshot = self.cloud.snapshot()
        consumers = {a.consumer for a in snapshot.placement.allocations}
        findings = []
        for consumer in sorted(consumers):
            part = model.Snapshot(
                placement=model.PlacementSnapshot(
                    providers=snapshot.placement.providers,
                    allocations=[a for a in snapshot.placement.allocations
                                 if a.consumer == consumer]),
                nova=snapshot.nova)
            findings.extend(f for f in classify.classify(part, cloud=cloud)
                            if f.consumer == consumer)
        return findings

    def test_same_findings_with_the_cloud_index_shared(self):
        snapshot = self.cloud.snapshot()
        cloud = index.CloudIndex(snapshot.placement.providers,
                                 snapshot.nova.compute_nodes)
        self.assertEqual(self._one_by_one(), self._one_by_one(cloud))
        reasons_ = {f.reason for f in self._one_by_one(cloud)}
        self.assertIn(r.STALE_PROVIDER, reasons_)
        self.assertIn(r.ACTIVE_INSTANCE, reasons_)

    def test_shared_tables_are_used_not_built_again(self):
        snapshot = self.cloud.snapshot()
        cloud = index.CloudIndex(snapshot.placement.providers,
                                 snapshot.nova.compute_nodes)
        with mock.patch.object(index, 'CloudIndex') as built:
            idx = index.SnapshotIndex(snapshot, cloud)
        built.assert_not_called()
        self.assertIs(cloud.nova_sharing, idx.nova_sharing)
        self.assertIs(cloud.nodes_by_host_node, idx.nodes_by_host_node)
        self.assertEqual(1, len(idx.nova_sharing))

    def test_index_of_other_providers_is_not_used(self):
        snapshot = self.cloud.snapshot()
        other = index.CloudIndex({}, snapshot.nova.compute_nodes)
        idx = index.SnapshotIndex(snapshot, other)
        self.assertIsNot(other.nova_sharing, idx.nova_sharing)
        self.assertEqual(1, len(idx.nova_sharing))


class RootsTestCase(base.BaseTestCase):
    """roots_of: the roots of every tree a consumer holds allocations
    in, each once, whether the reader grouped the allocations by
    consumer or the index did.
    """

    def test_roots(self):
        c = cloud_mod.Cloud()
        host1, host2 = c.node('host1'), c.node('host2')
        child = c.provider('host1:vgpu', parent=host1)
        nfs = c.provider('nfs', sharing=True)
        one, two, nested, alone = (c.instance('host1') for _ in range(4))
        c.alloc(one, host1)
        c.alloc(alone, host1)
        c.alloc(two, host1)
        c.alloc(two, host2)
        c.alloc(two, nfs)
        c.alloc(nested, child)
        c.alloc(nested, host1)
        snapshot = c.snapshot()
        grouped = model.GroupedAllocations(
            snapshot.placement.allocations,
            index.group_by_consumer(snapshot.placement.allocations))
        self.assertEqual(
            {one: 1, alone: 1, two: 3, nested: 2},
            {k: 1 if isinstance(v, model.Allocation) else len(v)
             for k, v in grouped.by_consumer.items()})
        for held in (snapshot.placement.allocations, grouped):
            snapshot.placement.allocations = held
            idx = index.SnapshotIndex(snapshot)
            self.assertEqual(
                {one: (host1,), alone: (host1,), two: (host1, host2, nfs),
                 nested: (host1,), 'nothing': ()},
                {k: idx.roots_of(k)
                 for k in (one, alone, two, nested, 'nothing')})
            self.assertTrue(idx.holds_on_nova_nodes(two))
            self.assertFalse(idx.holds_on_nova_nodes(c.instance('host1')))
            self.assertEqual(
                sorted((a.consumer, a.provider)
                       for a in snapshot.placement.allocations
                       if a.consumer in (two, alone)),
                sorted((a.consumer, a.provider) for a in index.held_by(
                    held, {two, alone, 'nothing'})))


class _RecordsCloud(base.BaseTestCase):
    """Consumers of every kind, with placement records of their own."""

    def setUp(self):
        super().setUp()
        c = self.cloud = cloud_mod.Cloud()
        host1, host2 = c.node('host1'), c.node('host2')
        records = {}

        def record(consumer, project='p', user='u', type_=None):
            records[consumer] = model.Consumer(consumer, project, user, 1,
                                               type_)
        vm = c.instance('host1')
        c.alloc(vm, host1)
        c.alloc(vm, host2)
        record(vm, project='placement-project', user='placement-user')
        fine = c.instance('host2')
        c.alloc(fine, host2)
        record(fine)
        gone = c.instance('host2', deleted=True, vm_state='deleted')
        c.alloc(gone, host2)
        record(gone, project='', user='')
        for type_ in ('INSTANCE', 'MIGRATION', None, 'CONTAINER'):
            stranger = cloud_mod.uuid('stranger')
            c.alloc(stranger, host1)
            record(stranger, type_=type_)
        # Zun's container on nova's node: unmanaged_consumer by its
        # record alone.
        c.nova.foreign = foreign_mod.declared(projects=[ZUN])
        container = cloud_mod.uuid('container')
        c.alloc(container, host2)
        record(container, project=ZUN)
        c.alloc(cloud_mod.uuid('no-record'), host1)
        mapped = cloud_mod.uuid('mapped')
        c.map(mapped, 'cell1')
        c.alloc(mapped, host1)
        record(mapped)
        scheduling = cloud_mod.uuid('scheduling')
        c.build_request(scheduling)
        c.alloc(scheduling, host2)
        record(scheduling, type_='INSTANCE')
        mig = c.migration(vm, 'confirmed', 'resize', 'host2', 'host1')
        c.alloc(mig, host2)
        record(mig, type_='MIGRATION')
        c.instance('host1')     # missing_allocations
        self.records = records


ZUN = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'


class RecordsAfterwardsTestCase(_RecordsCloud):
    """Reading only the shown consumers' records (and those nova has no
    trace of) gives the findings that reading every record gives.
    """

    def _check(self, shown):
        placement = self.cloud.placement
        placement.consumers = dict(self.records)
        expected = self.cloud.findings(shown=shown)
        consumers = {a.consumer for a in placement.allocations}
        strangers = index.unknown_to_nova(self.cloud.nova, consumers)
        placement.consumers = {c: r for c, r in self.records.items()
                               if c in strangers}
        found = self.cloud.findings(shown=shown)
        shown_records = {f.consumer: self.records[f.consumer]
                         for f in found if f.consumer in self.records}
        self.assertEqual(expected,
                         classify.with_records(found, shown_records))
        return expected

    def test_findings_a_record_does_not_change_are_kept(self):
        def finding(consumer, project, user):
            return model.Finding(consumer, r.INSTANCE, consumer, 'rp',
                                 'node', 'rp', 'host', 'cell1',
                                 r.ACTIVE_INSTANCE, r.NONE, {}, project,
                                 user, '')
        same, other, unread, empty = (
            finding('a', 'p', 'u'), finding('b', 'p', 'u'),
            finding('c', 'p', 'u'), finding('d', 'p', 'u'))
        got = classify.with_records(
            [same, other, unread, empty],
            {'a': model.Consumer('a', 'p', 'u'),
             'b': model.Consumer('b', 'p', 'u2'),
             'd': model.Consumer('d')})
        self.assertEqual([same, finding('b', 'p', 'u2'), unread, empty],
                         got)
        self.assertIs(same, got[0])
        self.assertIs(unread, got[2])
        self.assertIs(empty, got[3])

    def test_orphans(self):
        found = self._check(lambda f: f.is_orphan)
        self.assertIn('placement-project', {f.project_id for f in found})

    def test_all(self):
        found = self._check(lambda f: True)
        self.assertEqual(14, len(found))
        self.assertEqual(2, len([f for f in found
                                 if f.reason == r.UNMANAGED_CONSUMER]))


class _BulkReader(readers_base.PlacementReader):
    """A fast-mode placement reader over a hand-built snapshot."""

    reads_records_in_bulk = True

    def __init__(self, placement, records):
        self.placement = placement
        self.records = records
        self.asked = []

    def providers(self):
        return self.placement.providers

    def allocations(self, targets, progress=None):
        return list(self.placement.allocations)

    def consumer_records(self, consumers=None):
        self.asked.append(None if consumers is None else set(consumers))
        wanted = self.records if consumers is None else consumers
        return {c: self.records[c] for c in wanted if c in self.records}

    def consumers(self, consumers):
        return ({c: self.records.get(c, model.Consumer(c))
                 for c in consumers}, {})


class _APIReader(_BulkReader):
    """The placement API's reader: records one consumer at a time."""

    reads_records_in_bulk = False

    def consumers(self, consumers):
        self.asked.append(set(consumers))
        return super().consumers(consumers)


class _NovaReader(readers_base.NovaReader):

    def __init__(self, nova):
        self.nova = nova

    def read(self):
        return self.nova

    def resolve(self, nova, consumers):
        return nova

    def read_activity(self, nova, instances):
        # No instance of these clouds has recorded activity: the rules
        # judge them by their states alone.
        return nova


class AuditRecordsTestCase(_RecordsCloud):
    """The audit reads the records it needs, and the findings are those
    every record gives.
    """

    def _audit(self, shown, rules_=rules.DEFAULT_RULES):
        reader = _BulkReader(self.cloud.placement, self.records)
        audit = audit_mod.Audit(reader, _NovaReader(self.cloud.nova),
                                rules=rules_)
        self.cloud.placement.consumers = {}
        return audit.run(shown=shown), reader.asked

    def test_only_strangers_and_shown(self):
        shown = (lambda f: f.is_orphan)
        found, asked = self._audit(shown)
        self.cloud.placement.consumers = dict(self.records)
        self.assertEqual(self.cloud.findings(shown=shown), found)
        strangers, later = asked
        self.assertEqual(6, len(strangers))
        # The shown consumers' records, but those already read.
        self.assertEqual({f.consumer for f in found
                          if f.reason != r.MISSING_ALLOCATIONS} -
                         (strangers & self.records.keys()), later)

    def test_api_reader_reads_the_strangers_records_first(self):
        # Those nova has no trace of, on its trees, before classifying:
        # unmanaged_consumer needs them, shown or not (metrics).
        reader = _APIReader(self.cloud.placement, self.records)
        audit = audit_mod.Audit(reader, _NovaReader(self.cloud.nova))
        self.cloud.placement.consumers = {}
        found = audit.run(shown=None)
        strangers = index.unknown_to_nova(
            self.cloud.nova, {a.consumer
                              for a in self.cloud.placement.allocations})
        self.assertEqual([strangers], reader.asked)
        self.cloud.placement.consumers = dict(self.records)
        self.assertEqual(
            [(f.consumer, f.resource_provider, f.reason, f.action)
             for f in self.cloud.findings()],
            [(f.consumer, f.resource_provider, f.reason, f.action)
             for f in found])
        self.assertEqual(2, len([f for f in found
                                 if f.reason == r.UNMANAGED_CONSUMER]))

    def test_site_rules_get_every_record(self):
        chain = (lambda ctx: None,) + rules.DEFAULT_RULES
        found, asked = self._audit(lambda f: True, chain)
        self.assertEqual([None], asked)
        self.cloud.placement.consumers = dict(self.records)
        self.assertEqual(self.cloud.findings(shown=lambda f: True), found)


class OnInstanceNodeTestCase(base.BaseTestCase):

    def _ctx(self, where, **instance):
        inst = model.Instance(uuid='i', cell='c', **instance)
        owner = type('Owner', (), {'instance': inst, 'migration': None})
        return classify.AllocationContext(None, None, None, where, owner,
                                          sharing=False)

    def test_on_instance_node(self):
        node = model.ComputeNode(uuid='n', host='h', hypervisor_hostname='x',
                                 cell='c')
        self.assertTrue(self._ctx(node, compute_node='n').on_instance_node())
        self.assertTrue(self._ctx(node, host='h', node='x').on_instance_node())
        self.assertFalse(self._ctx(node, host='h', node='y',
                                   compute_node='m').on_instance_node())
        self.assertFalse(self._ctx(None, host='h',
                                   node='x').on_instance_node())


class DriverRowsTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.url = 'sqlite:///%s' % os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'placement.sqlite')
        self.engine = sa.create_engine(self.url)
        self.addCleanup(self.engine.dispose)
        self.conn = self.engine.connect()
        self.addCleanup(self.conn.close)
        for sql in (
                'CREATE TABLE resource_providers (id INTEGER, uuid TEXT)',
                'CREATE TABLE resource_classes (id INTEGER, name TEXT)',
                'CREATE TABLE allocations (resource_provider_id INTEGER, '
                'consumer_id TEXT, resource_class_id INTEGER, used INTEGER)',
                'CREATE TABLE consumers (uuid TEXT, project_id INTEGER, '
                'user_id INTEGER, generation INTEGER, '
                'consumer_type_id INTEGER)',
                'CREATE TABLE projects (id INTEGER, external_id TEXT)',
                'CREATE TABLE users (id INTEGER, external_id TEXT)',
                'CREATE TABLE consumer_types (id INTEGER, name TEXT)'):
            self.conn.exec_driver_sql(sql)

    def _insert(self, table, *rows):
        for row in rows:
            self.conn.exec_driver_sql(
                'INSERT INTO %s VALUES (%s)' % (
                    table, ', '.join('?' * len(row))), row)
        self.conn.commit()

    def test_same_rows_as_sqlalchemy(self):
        self._insert('resource_classes', (0, 'VCPU'), (1, 'MEMORY_MB'))
        query = sa.select(placement_db.RESOURCE_CLASSES)
        self.assertEqual([tuple(row) for row in self.conn.execute(query)],
                         list(db_utils.driver_rows(self.conn, query)))
        self.assertEqual([(1, 'MEMORY_MB')], list(db_utils.driver_rows(
            self.conn, query.where(placement_db.RESOURCE_CLASSES.c.id ==
                                   sa.literal_column('1')))))

    def test_allocations_grouped_whatever_the_row_order(self):
        self._insert('resource_providers', (1, 'rp1'), (2, 'rp2'))
        self._insert('resource_classes', (0, 'VCPU'), (1, 'MEMORY_MB'),
                     (2, 'DISK_GB'))
        # Pairs interleaved, and one row on a provider not read.
        self._insert('allocations', (1, 'a', 0, 1), (2, 'a', 0, 2),
                     (1, 'b', 0, 4), (1, 'a', 1, 512), (3, 'a', 0, 8),
                     (2, 'a', 1, 256), (1, 'b', 2, 10))
        self._insert('projects', (1, 'p'))
        self._insert('users', (1, 'u'))
        self._insert('consumer_types', (1, 'INSTANCE'))
        self._insert('consumers', ('a', 1, 1, 3, 1), ('b', 1, 1, 1, None),
                     ('c', 1, 1, 1, None))
        reader = placement_db.PlacementDBReader('sqlite://')
        reader._ids = {'rp1': 1, 'rp2': 2}
        allocations, everything = reader._allocations(self.conn,
                                                      {'rp1', 'rp2'})
        self.assertTrue(everything)
        self.assertEqual(
            {('a', 'rp1'): {'VCPU': 1, 'MEMORY_MB': 512},
             ('a', 'rp2'): {'VCPU': 2, 'MEMORY_MB': 256},
             ('b', 'rp1'): {'VCPU': 4, 'DISK_GB': 10}},
            {(a.consumer, a.provider): a.resources for a in allocations})
        allocations, everything = reader._allocations(self.conn, {'rp2'})
        self.assertFalse(everything)
        self.assertEqual({'a'}, {a.consumer for a in allocations})

    def test_allocations_of_the_same_amounts_share_them(self):
        self._insert('resource_providers', (1, 'rp1'), (2, 'rp2'))
        self._insert('resource_classes', (0, 'VCPU'), (1, 'MEMORY_MB'),
                     (2, 'DISK_GB'))
        # 'a' and 'b' hold the same; 'a' on rp1 again later (its rows
        # not consecutive), and 'a' on rp2 with the same amounts.
        self._insert('allocations', (1, 'a', 0, 1), (1, 'a', 1, 512),
                     (1, 'b', 0, 1), (1, 'b', 1, 512), (2, 'a', 0, 1),
                     (2, 'a', 1, 512), (2, 'c', 1, 512), (2, 'c', 0, 1),
                     (1, 'a', 2, 10))
        reader = placement_db.PlacementDBReader('sqlite://')
        reader._ids = {'rp1': 1, 'rp2': 2}
        allocations, _everything = reader._allocations(self.conn,
                                                       {'rp1', 'rp2'})
        by_pair = {(a.consumer, a.provider): a.resources
                   for a in allocations}
        self.assertEqual(4, len(allocations))
        self.assertEqual(
            {('a', 'rp1'): {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10},
             ('b', 'rp1'): {'VCPU': 1, 'MEMORY_MB': 512},
             ('a', 'rp2'): {'VCPU': 1, 'MEMORY_MB': 512},
             ('c', 'rp2'): {'VCPU': 1, 'MEMORY_MB': 512}}, by_pair)
        self.assertIs(by_pair['b', 'rp1'], by_pair['a', 'rp2'])
        self.assertIsNot(by_pair['a', 'rp1'], by_pair['b', 'rp1'])

    def test_consumer_records_of_the_allocations_read(self):
        self._insert('resource_providers', (1, 'rp1'), (2, 'rp2'))
        self._insert('resource_classes', (0, 'VCPU'))
        self._insert('allocations', (1, 'a', 0, 1), (2, 'b', 0, 1),
                     (2, 'c', 0, 1))
        self._insert('projects', (1, 'p'))
        self._insert('users', (1, 'u'))
        self._insert('consumers', ('a', 1, 1, 0, None),
                     ('b', 1, 1, 0, None), ('z', 1, 1, 0, None))
        reader = placement_db.PlacementDBReader(self.url)
        reader._ids = {'rp1': 1, 'rp2': 2}
        self.assertEqual({}, reader.consumer_records())
        for scope in ({'rp1', 'rp2'}, {'rp2'}):
            reader._records = {}
            reader.allocations(scope)
            # 'c' has no consumers row; 'z' no allocation read.
            self.assertEqual({'b': model.Consumer('b', 'p', 'u', 0)},
                             reader.consumer_records({'b', 'c'}))
            expected = {c: model.Consumer(c, 'p', 'u', 0)
                        for c in ('a', 'b') if c == 'b' or 'rp1' in scope}
            self.assertEqual(expected, reader.consumer_records())

    def test_many_consumer_records_are_read_in_one_scan(self):
        self._insert('resource_providers', (1, 'rp1'))
        self._insert('resource_classes', (0, 'VCPU'))
        self._insert('allocations', *((1, c, 0, 1) for c in 'abcdefghij'))
        self._insert('projects', (1, 'p'))
        self._insert('users', (1, 'u'))
        self._insert('consumers', ('a', 1, 1, 0, None),
                     ('b', 1, 1, 0, None), ('z', 1, 1, 0, None))
        reader = placement_db.PlacementDBReader(self.url)
        reader._ids = {'rp1': 1}
        reader.allocations({'rp1'})
        scan = mock.patch.object(
            reader, '_all_consumer_records',
            side_effect=reader._all_consumer_records)
        with scan as s:
            # A fifth of the consumers read or fewer: looked up.
            self.assertEqual({'a': model.Consumer('a', 'p', 'u', 0)},
                             reader.consumer_records({'a', 'c'}))
            s.assert_not_called()
            records = reader.consumer_records({'a', 'b', 'c', 'd'})
        s.assert_called_once_with(mock.ANY, {'b', 'c', 'd'})
        self.assertEqual({c: model.Consumer(c, 'p', 'u', 0)
                          for c in ('a', 'b')}, records)
        self.assertIs(records['a'].project_id, records['b'].project_id)

    def test_consumer_records_scan_and_lookup_agree(self):
        self._insert('projects', (1, 'p1'), (2, 'p2'))
        self._insert('users', (1, 'u1'))
        self._insert('consumer_types', (1, 'INSTANCE'), (2, 'MIGRATION'))
        self._insert('consumers', ('a', 1, 1, 0, 1), ('b', 2, 1, 5, 2),
                     ('c', 2, 9, 1, None), ('d', 1, 1, 1, 1))
        reader = placement_db.PlacementDBReader('sqlite://')
        wanted = {'a', 'b', 'c', 'x'}
        scanned = reader._consumer_records(self.conn, wanted,
                                           everything=True)
        self.assertEqual(
            {'a': model.Consumer('a', 'p1', 'u1', 0, 'INSTANCE'),
             'b': model.Consumer('b', 'p2', 'u1', 5, 'MIGRATION'),
             'c': model.Consumer('c', 'p2', None, 1, None)}, scanned)
        self.assertEqual(scanned, reader._consumer_records(self.conn, wanted))


class OnFirstUseTestCase(base.BaseTestCase):

    def test_built_once_when_first_used(self):
        built = []

        def factory():
            built.append(1)
            return type('Reader', (), {'consumer': lambda self, c: c})()
        lazy = sources._OnFirstUse(factory)
        self.assertEqual([], built)
        self.assertEqual('a', lazy.consumer('a'))
        self.assertEqual('b', lazy.consumer('b'))
        self.assertEqual([1], built)


class GCPausedTestCase(base.BaseTestCase):

    def test_restores_the_collector(self):
        self.addCleanup(gc.enable)
        gc.enable()
        with memory.paused():
            self.assertFalse(gc.isenabled())
            with memory.paused():
                self.assertFalse(gc.isenabled())
            self.assertFalse(gc.isenabled())
        self.assertTrue(gc.isenabled())
        gc.disable()
        with memory.paused():
            pass
        self.assertFalse(gc.isenabled())

    def test_restores_after_an_error(self):
        self.addCleanup(gc.enable)
        gc.enable()

        def fail():
            with memory.paused():
                raise ValueError()
        self.assertRaises(ValueError, fail)
        self.assertTrue(gc.isenabled())
