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
