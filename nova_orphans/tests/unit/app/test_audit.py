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
"""Audit.run with an API-mode reader: records read after classifying, and
allocations read while nova is.
"""

import threading

from oslotest import base

from nova_orphans.app import audit as audit_mod
from nova_orphans.engine import index
from nova_orphans.engine import model
from nova_orphans.engine import reasons as r
from nova_orphans.engine import rules
from nova_orphans.readers import base as readers_base
from nova_orphans.tests.unit import cloud as cloud_mod
from nova_orphans.tests.unit.engine import test_fast_paths


class _APIReader(readers_base.PlacementReader):
    """PlacementAPIReader's interface over a hand-built snapshot."""

    reads_in_background = True

    def __init__(self, placement, records, fail=None):
        self.placement = placement
        self.records = records
        self.fail = fail
        self.read = []
        self.cancelled = None
        self.started = threading.Event()

    def providers(self):
        return self.placement.providers

    def allocations(self, targets, progress=None, cancelled=None):
        self.started.set()
        self.cancelled = cancelled
        if self.fail is not None:
            raise self.fail
        return [a for a in self.placement.allocations if a.provider in targets]

    def consumers(self, consumers):
        self.read.append(set(consumers))
        return ({c: self.records.get(c, model.Consumer(c))
                 for c in consumers}, {})


class _NovaReader(readers_base.NovaReader):

    def __init__(self, nova, fail=None, wait=None):
        self.nova = nova
        self.fail = fail
        self.wait = wait

    def read(self):
        if self.wait is not None:
            self.wait.wait(5)
        if self.fail is not None:
            raise self.fail
        return self.nova

    def resolve(self, nova, consumers):
        return nova

    def read_activity(self, nova, instances):
        # No instance of these clouds has recorded activity: the rules
        # judge them by their states alone.
        return nova


class APIModeRecordsTestCase(test_fast_paths._RecordsCloud):
    """Only the shown consumers' records are read, and the findings are
    those classifying everything again with them gives.
    """

    def setUp(self):
        super().setUp()
        c = self.cloud
        other = c.provider('other-service')
        # A stranger on a nova node and on someone else's provider.
        self.split = cloud_mod.uuid('split')
        c.alloc(self.split, other)
        c.alloc(self.split, c.node('host3'))
        self.records[self.split] = model.Consumer(self.split, 'p', 'u', 1,
                                                  'INSTANCE')

    def _run(self, shown, chain=rules.DEFAULT_RULES):
        self.cloud.placement.consumers = {}
        reader = _APIReader(self.cloud.placement, self.records)
        audit = audit_mod.Audit(reader, _NovaReader(self.cloud.nova),
                                rules=chain)
        return audit.run(shown=shown), reader.read

    def _check(self, shown):
        found, read = self._run(shown)
        # The same rules in another tuple: classified all over again.
        expected, read_again = self._run(shown, tuple(rules.DEFAULT_RULES))
        self.assertEqual(expected, found)
        self.assertEqual(read_again, read)
        return found, read

    def test_orphans(self):
        found, read = self._check(lambda f: f.is_orphan)
        self.assertIn(self.split, {f.consumer for f in found})
        # First the records of the consumers nova has no trace of on its
        # trees (rules.unmanaged_consumer), before classifying; then
        # those of the other shown rows that lack a project.
        strangers, later = read
        self.assertEqual(index.unknown_to_nova(
            self.cloud.nova,
            {a.consumer for a in self.cloud.placement.allocations}),
            strangers)
        self.assertIn(self.split, strangers)
        self.assertEqual(set(), strangers & later)
        split = [f for f in found if f.consumer == self.split]
        self.assertEqual([(r.INSTANCE, self.split, 'p')],
                         [(f.consumer_type, f.instance, f.project_id)
                          for f in split])

    def test_all(self):
        found, _read = self._check(lambda f: True)
        self.assertEqual(2, len([f for f in found
                                 if f.consumer == self.split]))

    def test_each_reason(self):
        for reason in r.REASONS:
            self._check(lambda f: f.reason == reason)


class ReadBothTestCase(base.BaseTestCase):
    """The allocations are read while nova is, when every provider is."""

    def setUp(self):
        super().setUp()
        c = self.cloud = cloud_mod.Cloud()
        vm = c.instance('host1')
        c.alloc(vm, c.node('host1'))
        c.alloc(cloud_mod.uuid('stranger'), c.node('host2'))

    def test_overlapped(self):
        reader = _APIReader(self.cloud.placement, {})
        # nova's read waits until the allocations' has started.
        nova = _NovaReader(self.cloud.nova, wait=reader.started)
        found = audit_mod.Audit(reader, nova).run(shown=lambda f: True)
        self.assertEqual(self.cloud.findings(shown=lambda f: True), found)
        self.assertFalse(reader.cancelled())

    def test_nova_error_stops_the_reads(self):
        reader = _APIReader(self.cloud.placement, {})
        nova = _NovaReader(self.cloud.nova, fail=RuntimeError('nova'),
                           wait=reader.started)
        err = self.assertRaises(RuntimeError,
                                audit_mod.Audit(reader, nova).run)
        self.assertEqual('nova', str(err))
        self.assertTrue(reader.cancelled())

    def test_placement_error_after_nova(self):
        reader = _APIReader(self.cloud.placement, {},
                            fail=ValueError('placement'))
        err = self.assertRaises(ValueError, audit_mod.Audit(
            reader, _NovaReader(self.cloud.nova)).run)
        self.assertEqual('placement', str(err))

    def test_scoped_reads_follow_nova(self):
        reader = _APIReader(self.cloud.placement, {})
        audit_mod.Audit(reader, _NovaReader(self.cloud.nova)).run(
            host='host1')
        self.assertIsNone(reader.cancelled)


class _KeptReader(_APIReader):
    """A reader whose ``kept`` providers show what an earlier scan read
    (``stale``: their allocations then), the others what placement holds.
    """

    keeps_reads = True

    def __init__(self, placement, stale, records=None):
        super().__init__(placement, records or {})
        self.stale = stale
        self.kept_providers = set(stale)
        self.again = []
        self.kept = False

    def allocations(self, targets, progress=None, cancelled=None):
        return [a for a in self.placement.allocations
                if a.provider in targets and a.provider not in self.stale] + [
            a for p in sorted(self.stale) if p in targets
            for a in self.stale[p]]

    def read_again(self, providers):
        self.again.append(set(providers))
        self.kept_providers -= set(providers)
        return [a for a in self.placement.allocations
                if a.provider in providers]

    def keep(self):
        self.kept = True


class _CountingNova(_NovaReader):

    resolved = 0

    def resolve(self, nova, consumers):
        self.resolved += 1
        return nova


class KeptReadsTestCase(base.BaseTestCase):
    """What the audit reads again, and judges again, of kept reads."""

    def setUp(self):
        super().setUp()
        c = self.cloud = cloud_mod.Cloud()
        self.hosts = [c.node('host%d' % i) for i in range(4)]
        self.vms = []
        for i, rp in enumerate(self.hosts):
            vm = c.instance('host%d' % i)
            c.alloc(vm, rp)
            self.vms.append(vm)
        self.gone = c.instance('host1', deleted=True)
        c.alloc(self.gone, self.hosts[1])

    def held(self, provider, *extra):
        return [a for a in self.cloud.placement.allocations
                if a.provider == provider] + list(extra)

    def run_audit(self, stale, shown=lambda f: f.is_orphan, **kwargs):
        reader = _KeptReader(self.cloud.placement, stale)
        nova = _CountingNova(self.cloud.nova)
        audit = audit_mod.Audit(reader, nova)
        found = audit.run(shown=shown, **kwargs)
        return found, reader, nova, audit

    def test_unchanged(self):
        stale = {rp: self.held(rp) for rp in self.hosts}
        found, reader, nova, audit = self.run_audit(stale)
        self.assertEqual(self.cloud.findings(shown=lambda f: f.is_orphan),
                         found)
        # Only the orphan's provider, read again: as kept, so judged once.
        self.assertEqual([{self.hosts[1]}], reader.again)
        self.assertEqual(1, nova.resolved)
        self.assertEqual(frozenset({self.hosts[0], self.hosts[2],
                                    self.hosts[3]}),
                         audit.snapshot.placement.kept)
        self.assertTrue(reader.kept)

    def test_removed_since(self):
        """A stranger deleted since its provider was read (no generation
        moved) is not reported; what was kept of the others stands.
        """
        stranger = model.Allocation(cloud_mod.uuid('stranger'),
                                    self.hosts[2], {'VCPU': 1})
        stale = {rp: self.held(rp) for rp in self.hosts}
        stale[self.hosts[2]].append(stranger)
        found, reader, nova, _audit = self.run_audit(stale)
        self.assertEqual(self.cloud.findings(shown=lambda f: f.is_orphan),
                         found)
        self.assertEqual([{self.hosts[1], self.hosts[2]}], reader.again)
        # Judged again from nova's side as read.
        self.assertEqual(2, nova.resolved)

    def test_moved_since(self):
        """A server moved by a PUT that left its old host's generation
        as it was: the old allocation is read again away, and the
        instance's row says where it runs now.
        """
        vm = self.vms[0]
        self.cloud.update_instance(vm, host='host3', node='host3')
        self.cloud.placement.allocations = [
            a for a in self.cloud.placement.allocations if a.consumer != vm]
        self.cloud.alloc(vm, self.hosts[3])
        stale = {self.hosts[0]: [model.Allocation(
            vm, self.hosts[0], {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1})]}
        found, reader, _nova, audit = self.run_audit(stale)
        self.assertEqual(self.cloud.findings(shown=lambda f: f.is_orphan),
                         found)
        # Where the stale_provider finding rested: its provider and the
        # one the instance holds on (read in this run already).
        self.assertEqual([{self.hosts[0]}], reader.again)
        self.assertEqual(frozenset(), audit.snapshot.placement.kept)

    def test_only_what_is_reported(self):
        stale = {rp: self.held(rp) for rp in self.hosts}
        # Every finding returned, the orphans alone reported.
        found, reader, _nova, _audit = self.run_audit(
            stale, shown=lambda f: True, reported=lambda f: f.is_orphan)
        self.assertEqual(self.cloud.findings(shown=lambda f: True), found)
        self.assertEqual([{self.hosts[1]}], reader.again)
        # Every finding reported: every provider holding one.
        _found, reader, _nova, _audit = self.run_audit(
            stale, shown=lambda f: True)
        self.assertEqual([set(self.hosts)], reader.again)

    def test_trees(self):
        child = self.cloud.provider('host3-bw', parent=self.hosts[3])
        stale = {rp: self.held(rp) for rp in self.hosts + [child]}
        asked = []

        def trees(snapshot, findings):
            asked.append(len(findings))
            return {self.hosts[3]}
        _found, reader, _nova, _audit = self.run_audit(
            stale, shown=lambda f: True, reported=lambda f: False,
            trees=trees)
        # The tree, and where the findings on it rest.
        self.assertEqual([{self.hosts[3], child}], reader.again)
        self.assertEqual([5], asked)

    def test_nothing_kept(self):
        found, reader, nova, audit = self.run_audit({})
        self.assertEqual([], reader.again)
        self.assertEqual(1, nova.resolved)
        self.assertEqual(frozenset(), audit.snapshot.placement.kept)
        self.assertEqual(self.cloud.findings(shown=lambda f: f.is_orphan),
                         found)
