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
import json
import os
import signal
from unittest import mock

import fixtures
from oslotest import base
import requests

from nova_orphans.clients import placement as placement_client

from nova_orphans.engine import index
from nova_orphans.engine import model
from nova_orphans.engine import reasons
from nova_orphans import exit_codes
from nova_orphans import interrupt
from nova_orphans import outcomes
from nova_orphans.repair import actions
from nova_orphans.repair import journal as journal_mod
from nova_orphans.repair import writes
from nova_orphans.tests.unit import cloud as cloud_mod


class StreamsTestCase(base.BaseTestCase):

    def _repairer(self, allocations, migrations=None,
                  options=actions.RepairOptions()):
        audit = mock.Mock()
        audit.placement.allocations = [
            model.Allocation(consumer=c, provider=rp, resources={'VCPU': 1})
            for c, rp in allocations]
        audit.nova.migrations = migrations or {}
        return actions.Repairer(mock.Mock(), mock.Mock(spec=[]), audit,
                                options=options)

    def test_streams_never_share_a_provider(self):
        # a1, a2 on A; b1 on B; m moves between B and C: B and C together.
        r = self._repairer([('a1', 'A'), ('a2', 'A'), ('b1', 'B'),
                            ('m', 'B'), ('m', 'C'), ('c1', 'C')])
        streams = r._streams(['a1', 'b1', 'a2', 'm', 'c1'], 2)
        self.assertEqual([['b1', 'm', 'c1'], ['a1', 'a2']], streams)

    def test_migration_goes_with_its_instance(self):
        mig = mock.Mock(instance_uuid='vm')
        r = self._repairer([('mig', 'A'), ('vm', 'B'), ('x', 'B')],
                           migrations={'mig': mig})
        streams = r._streams(['mig', 'x'], 2)
        self.assertEqual([['mig', 'x']], streams)

    def _streamed(self, concurrency, providers=10):
        """(pool size, consumers) of each batch clean() repairs."""
        consumers = ['c%d' % n for n in range(providers)]
        r = self._repairer([(c, 'rp-' + c) for c in consumers],
                           options=actions.RepairOptions(
                               concurrency=concurrency))
        batches = []

        def repair_batch(pool, batch, planned):
            batches.append((pool._max_workers, sorted(batch)))
            return {c: [actions.DONE] for c in batch}
        r._repair_batch = repair_batch
        findings = [mock.Mock(is_orphan=True, consumer=c,
                              action=reasons.DELETE_CONSUMER)
                    for c in consumers]
        rows, outcomes = r.clean(findings)
        self.assertEqual([actions.DONE] * providers, outcomes)
        return sorted(batches)

    def test_half_the_requests_are_streams_and_never_more_in_flight(self):
        # 4 streams of batches, each with 2 threads: 8 requests at most.
        self.assertEqual([(2, ['c0', 'c4', 'c8']), (2, ['c1', 'c5', 'c9']),
                          (2, ['c2', 'c6']), (2, ['c3', 'c7'])],
                         self._streamed(8))

    def test_one_stream_has_every_request(self):
        self.assertEqual([(3, ['c%d' % n for n in range(10)])],
                         self._streamed(3))
        self.assertEqual([(1, ['c%d' % n for n in range(10)])],
                         self._streamed(1))

    def test_fewer_provider_groups_than_streams(self):
        self.assertEqual([(4, ['c0']), (4, ['c1'])],
                         self._streamed(8, providers=2))

    def test_one_cloud_index_for_every_consumer_verified(self):
        """Verifying a consumer must not cost a pass over the cloud."""
        c = cloud_mod.Cloud()
        host = c.node('host1')
        gone = [cloud_mod.uuid('gone') for _n in range(3)]
        for consumer in gone:
            c.alloc(consumer, host)
        audit = c.snapshot()
        r = actions.Repairer(mock.Mock(), mock.Mock(spec=[]), audit)
        fresh = model.NovaSnapshot(cells=audit.nova.cells,
                                   compute_nodes=audit.nova.compute_nodes)
        with mock.patch.object(index, 'CloudIndex',
                               wraps=index.CloudIndex) as built:
            verdicts = [
                [(f.consumer, f.reason) for f in r._reclassify(
                    {consumer: {
                        'allocations': {host: {'resources': {'VCPU': 1}}},
                        'project_id': cloud_mod.PROJECT,
                        'user_id': cloud_mod.USER,
                        'consumer_generation': 1,
                        'consumer_type': 'INSTANCE'}}, fresh)]
                for consumer in gone]
        self.assertEqual(1, built.call_count)
        self.assertEqual([[(consumer, reasons.UNKNOWN_CONSUMER)]
                          for consumer in gone], verdicts)

    def test_migration_and_its_instance_never_in_one_batch(self):
        """Both to repair: written in turn, each read after the other's
        write, never refusing each other as another writer would.
        """
        mig = mock.Mock(instance_uuid='vm')
        r = self._repairer([('mig', 'A'), ('vm', 'A'), ('x', 'A')],
                           migrations={'mig': mig},
                           options=actions.RepairOptions(concurrency=1))
        batches = []

        def repair_batch(pool, batch, planned):
            batches.append(batch)
            return {c: [actions.DONE] for c in batch}
        r._repair_batch = repair_batch
        rows, outcomes = r.clean([
            mock.Mock(is_orphan=True, consumer=c, action=action)
            for c, action in (('mig', reasons.RETURN_TO_INSTANCE),
                              ('vm', reasons.REMOVE_PROVIDER),
                              ('x', reasons.DELETE_CONSUMER))])
        self.assertEqual([['mig', 'x'], ['vm']], batches)
        self.assertEqual([actions.DONE] * 3, outcomes)

    def test_no_fast_mode_without_a_placement_database(self):
        self.assertIsNone(self._repairer([]).placement_db)


class StopTestCase(base.BaseTestCase):
    """A signal's flag stops the streams before their next batch."""

    def test_no_batch_after_the_stop(self):
        consumers = ['c%03d' % n for n in range(250)]
        audit = mock.Mock()
        audit.placement.allocations = [
            model.Allocation(consumer=c, provider='rp', resources={'VCPU': 1})
            for c in consumers]
        audit.nova.migrations = {}
        stop = interrupt.Stop()
        r = actions.Repairer(mock.Mock(), mock.Mock(spec=[]), audit,
                             options=actions.RepairOptions(concurrency=1,
                                                           stop=stop))
        batches = []

        def repair_batch(pool, batch, planned):
            batches.append(batch)
            stop.set(signal.SIGINT)
            return {c: [actions.DONE] for c in batch}
        r._repair_batch = repair_batch
        rows, outcomes = r.clean([
            mock.Mock(is_orphan=True, consumer=c,
                      action=reasons.DELETE_CONSUMER) for c in consumers])
        self.assertEqual([consumers[:actions.BATCH]], batches)
        self.assertEqual([actions.DONE] * actions.BATCH +
                         [actions.interrupted()] * 150, outcomes)

    def test_no_write_after_the_stop(self):
        """A verified change is neither journaled nor sent once stopped;
        its rows that were to be done say so, the others keep their why.
        """
        stop = interrupt.Stop()
        stop.set(signal.SIGTERM)
        journal = mock.Mock()
        client = mock.Mock()
        r = actions.Repairer(client, mock.Mock(spec=[]), mock.Mock(),
                             journal=journal,
                             options=actions.RepairOptions(stop=stop))
        prepared = actions._Prepared(
            'c1', ['f1', 'f2'], {}, ['f1'], {'c1': {}},
            [actions.DONE, actions.gone()])
        self.assertEqual(
            {'c1': [actions.interrupted(), actions.gone()]},
            r._write_batch(None, [prepared]))
        with mock.patch.object(r, '_prepare', return_value=prepared):
            self.assertEqual(
                [actions.interrupted(), actions.gone()],
                r._attempt('c1', ['f1', 'f2'], {}, None))
        self.assertEqual([], journal.mock_calls)
        self.assertEqual([], client.mock_calls)


def finding(consumer, resources=None):
    return model.Finding(
        consumer=consumer, consumer_type='unknown', instance=None,
        resource_provider='rp', resource_provider_name='host1',
        root_provider='rp', host='host1', cell=None,
        reason='unknown_consumer', action=reasons.DELETE_CONSUMER,
        resources=resources or {'VCPU': 1}, project_id='p', user_id='u',
        details='')


class WrittenRowsTestCase(base.BaseTestCase):
    """A clean's row, shown and journaled, is what its write removed:
    the allocation as read right before the write, not as the audit
    read it.
    """

    def test_the_document_read_before_the_write(self):
        audited = finding('c1')
        audit = mock.Mock()
        audit.placement.allocations = [model.Allocation(
            consumer='c1', provider='rp', resources={'VCPU': 1})]
        audit.nova.migrations = {}
        journal = mock.Mock()
        journal.record_many.return_value = ['id']
        client = mock.Mock(version=(1, 39))
        r = actions.Repairer(client, mock.Mock(spec=[]), audit,
                             journal=journal)
        doc = {'allocations': {'rp': {'resources': {'VCPU': 4}}},
               'project_id': 'p2', 'user_id': 'u2',
               'consumer_generation': 3, 'consumer_type': None}
        prepared = actions._Prepared('c1', [audited], {'c1': doc},
                                     [audited], {'c1': {}}, [actions.DONE])
        r._repair_batch = lambda pool, batch, planned: r._write_batch(
            None, [prepared])
        rows, done = r.clean([audited])
        self.assertEqual([actions.DONE], done)
        written = dict(audited.to_dict(), resources={'VCPU': 4},
                       project_id='p2', user_id='u2')
        self.assertEqual([written], [row.to_dict() for row in rows])
        (records,), _kw = journal.record_many.call_args
        self.assertEqual([[written]], [e['findings'] for e in records])
        # The audit's finding itself is left as it was.
        self.assertEqual({'VCPU': 1}, audited.resources)


class JournalTakenTestCase(base.BaseTestCase):
    """Another run took the journal between the clean's check and its
    first write: nothing it could not journal is sent, and its rows fail
    as a refusal to run again (12), not as a repair that failed (1).
    """

    def test_nothing_sent_and_the_rows_say_run_again(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'j.jsonl')
        other = journal_mod.Journal(path, placement='http://p')
        other.record({'consumers': {'x': {'before': {}, 'after': {}}}})
        self.addCleanup(other.close)
        client = mock.Mock()
        r = actions.Repairer(client, mock.Mock(spec=[]), mock.Mock(),
                             journal=journal_mod.Journal(path))
        prepared = [actions._Prepared(
            c, ['f'], {c: {'allocations': {'rp': {'resources': {'VCPU': 1}}},
                           'project_id': 'p', 'user_id': 'u',
                           'consumer_generation': 1,
                           'consumer_type': None}}, [finding(c)],
            {c: {}}, [actions.DONE]) for c in ('c1', 'c2')]
        results = r._write_batch(None, prepared)
        self.assertEqual([], client.request.mock_calls)
        refused = ('failed: Journal %s: %s' % (path, journal_mod.IN_USE))
        self.assertEqual({'c1': [refused], 'c2': [refused]},
                         {c: [str(o) for o in done]
                          for c, done in results.items()})
        self.assertEqual(exit_codes.JOURNAL_BUSY,
                         outcomes.exit_code(results['c1']))


class ConflictTestCase(base.BaseTestCase):
    """Which generation a refused write names, from placement's words,
    and which refusal is sent again.
    """

    # What placement says when a provider's inventory or allocations
    # changed under its own retries.
    PROVIDER = ('Inventory and/or allocations changed while attempting to '
                'allocate: Another thread concurrently updated the data. '
                'Please retry your update')

    def setUp(self):
        super().setUp()
        self.delays = []
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.repair.writes._sleep', self.delays.append))
        self.sent = []

    def _answers(self, *details):
        """A client whose writes are refused with ``details`` in turn
        (a 409 placement.concurrent_update each), then applied.
        """
        answers = list(details)

        def request(method, url, **kw):
            self.sent.append((method, url, kw.get('json')))
            resp = requests.models.Response()
            resp.status_code = 409 if answers else 204
            resp.headers['Content-Type'] = 'application/json'
            resp._content = json.dumps({'errors': [{
                'status': 409, 'title': 'Conflict',
                'detail': answers.pop(0),
                'code': 'placement.concurrent_update'}]}).encode() \
                if answers else b''
            return placement_client._check(method, url, resp, (204,))
        return mock.Mock(version=(1, 39), request=request)

    TARGETS = {c: ({'allocations': {}, 'project_id': 'p', 'user_id': 'u',
                    'consumer_generation': 1, 'consumer_type': 'INSTANCE'},
                   1) for c in ('c1', 'c2')}

    def _refused(self, *details):
        e = self.assertRaises(writes.Retry, writes.write,
                              self._answers(*details), self.TARGETS)
        return str(e)

    def test_consumer_generation(self):
        self.assertEqual('consumer generation conflict', self._refused(
            'consumer generation conflict - expected 1 but got 2'))
        self.assertEqual((1, []), (len(self.sent), self.delays))

    def test_provider_generation_sent_again(self):
        writes.write(self._answers(self.PROVIDER, self.PROVIDER),
                     self.TARGETS)
        self.assertEqual(3, len(self.sent))
        # The same request each time: the same consumer generations.
        self.assertEqual(1, len({repr(s) for s in self.sent}))
        self.assertEqual(2, len(self.delays))
        self.assertTrue(0 <= self.delays[0] <= writes.PROVIDER_RACE_DELAY)

    def test_provider_generation_until_the_limit(self):
        self.assertEqual('resource provider generation conflict',
                         self._refused(*[self.PROVIDER] * 4))
        self.assertEqual(1 + writes.PROVIDER_RACE_RETRIES, len(self.sent))

    def test_consumer_changed_after_a_provider_race(self):
        self.assertEqual('consumer generation conflict', self._refused(
            self.PROVIDER,
            'consumer generation conflict - expected 1 but got 2'))
        self.assertEqual(2, len(self.sent))


class OverCapacityTestCase(base.BaseTestCase):
    """A write placement refuses for capacity fails naming the provider,
    as placement words the refusal (no error code).
    """

    def test_outcome_names_the_provider(self):
        resp = requests.models.Response()
        resp.status_code = 409
        resp.headers['Content-Type'] = 'application/json'
        resp._content = json.dumps({'errors': [{
            'status': 409, 'title': 'Conflict',
            'detail': "There was a conflict when trying to complete your "
                      "request.\n\n Unable to allocate inventory: Unable to "
                      "create allocation for 'MEMORY_MB' on resource "
                      "provider 'rp-1'. The requested amount would exceed "
                      "the capacity.  ",
            'code': 'placement.undefined_code'}]}).encode()
        client = mock.Mock(version=(1, 39))
        client.request.side_effect = (
            lambda method, url, **kw: placement_client._check(
                method, url, resp, (204,)))
        target = {'allocations': {'rp-1': {'resources': {'VCPU': 1}}},
                  'project_id': 'p', 'user_id': 'u',
                  'consumer_generation': 1, 'consumer_type': 'INSTANCE'}
        e = self.assertRaises(placement_client.exception.PlacementError,
                              writes.write, client, {'c1': (target, 1)})
        audit = mock.Mock()
        audit.placement.providers = {'rp-1': model.Provider(
            uuid='rp-1', name='host1', root_uuid='rp-1')}
        repairer = actions.Repairer(client, mock.Mock(spec=[]), audit)
        outcome, = repairer._failed('c1', ['finding'], e)
        self.assertEqual(outcomes.FAILED, outcome.kind)
        self.assertEqual(
            'failed: resource provider host1 (rp-1) is over capacity for '
            'MEMORY_MB, and this placement refuses any allocation write that '
            'keeps an allocation there, even one that adds nothing '
            '(placement before 14.0.0, bug 2104040): give it room for its '
            'usage (raise its MEMORY_MB allocation_ratio or lower its '
            'reserved, in nova.conf where nova reports them) and run clean '
            'again, or upgrade placement to 14.0.0 or later', str(outcome))
        # Any other failure keeps its own words.
        other = placement_client.exception.PlacementError(
            method='PUT', url='/allocations/c1', reason='500 boom',
            status_code=500)
        self.assertEqual(
            [outcomes.failed('Placement request PUT /allocations/c1 failed: '
                             '500 boom')],
            repairer._failed('c1', ['finding'], other))
