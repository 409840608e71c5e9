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
from unittest import mock

import fixtures
from oslotest import base

from nova_orphans.engine import model
from nova_orphans import exception
from nova_orphans.repair import actions
from nova_orphans.repair import journal
from nova_orphans.repair import restore


def entry(*consumers, providers=('rp1',)):
    return {'consumers': {c: {
        'before': {'allocations': {rp: {'resources': {'VCPU': 1}}
                                   for rp in providers}},
        'after': {}} for c in consumers}}


def run(placement, *entries):
    r = journal.Run({'placement': placement} if placement else None)
    r.entries = list(entries)
    return r


class EndpointTestCase(base.BaseTestCase):

    def test_same_endpoint_spelled_differently(self):
        self.assertEqual(restore._endpoint('http://placement:80/'),
                         restore._endpoint('HTTP://Placement/'))
        self.assertEqual(restore._endpoint('https://p:443/placement'),
                         restore._endpoint('https://p/placement/'))
        self.assertNotEqual(restore._endpoint('http://p:8778'),
                            restore._endpoint('http://p'))
        self.assertNotEqual(restore._endpoint('http://p/placement'),
                            restore._endpoint('http://p'))


class CheckCloudTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.client = mock.Mock(endpoint='http://internal:8778')
        self.client.get.return_value = {'resource_providers': [
            {'uuid': 'rp1'}, {'uuid': 'rp2'}]}

    def test_same_endpoint_reads_nothing(self):
        restore.check_cloud(self.client, 'j', [
            run('http://internal:8778/', entry('c', providers=['x']))])
        self.client.get.assert_not_called()

    def test_old_journal_without_header_is_not_checked(self):
        restore.check_cloud(self.client, 'j', [run(None, entry('c'))])
        self.client.get.assert_not_called()

    def test_other_url_of_the_same_cloud(self):
        # One provider of the run still exists here: the same cloud.
        restore.check_cloud(self.client, 'j', [
            run('https://public/placement',
                entry('c', providers=['gone', 'rp2']))])
        self.client.get.assert_called_once_with('/resource_providers')

    def test_another_cloud(self):
        e = self.assertRaises(
            exception.JournalError, restore.check_cloud, self.client, 'j', [
                run('http://internal:8778', entry('a')),
                run('http://other:8778', entry('b', providers=['x', 'y']))])
        self.assertEqual(
            'Journal j: written against placement at http://other:8778, '
            'and none of the 2 resource providers it changed exist in '
            'placement at http://internal:8778: refusing to restore it '
            'into another cloud', str(e))

    def test_another_keystone_with_the_same_providers(self):
        """Providers of the same uuids (clouds made from one seed), but
        another placement and another keystone: another cloud.
        """
        other = run('http://other:8778', entry('b', providers=['rp1']))
        other.header['cloud'] = {'name': 'lab', 'auth_url':
                                 'http://lab:5000/v3'}
        prod = {'name': 'prod', 'auth_url': 'http://prod:5000/v3'}
        e = self.assertRaises(
            exception.JournalError, restore.check_cloud, self.client, 'j',
            [other], prod)
        self.assertEqual(
            'Journal j: written against placement at http://other:8778 '
            'through keystone at http://lab:5000/v3 (cloud lab), and this '
            'run reaches placement at http://internal:8778 through '
            'keystone at http://prod:5000/v3: refusing to restore it into '
            'another cloud', str(e))
        self.client.get.assert_not_called()
        # The same keystone (its name differs: another workstation's
        # clouds.yaml), or a run that went through none (a manage run,
        # nova.conf's endpoint): the providers decide, and rp1 exists.
        for cloud in ({'name': 'p', 'auth_url': 'HTTP://lab:5000/v3/'},
                      {'config_files': ['/etc/nova/nova.conf']}, None):
            restore.check_cloud(self.client, 'j', [other], cloud)
        other.header['cloud'] = {'config_files': ['/etc/nova/nova.conf']}
        restore.check_cloud(self.client, 'j', [other], prod)


class BatchesTestCase(base.BaseTestCase):

    def test_entries_sharing_a_consumer_are_never_in_one_batch(self):
        entries = [dict(entry(*consumers), n=n) for n, consumers in
                   enumerate(['a', 'bc', 'd', 'c', 'e', 'a'])]
        self.assertEqual(
            [[0, 1, 2], [3, 4, 5]],
            [[e['n'] for e in batch] for batch in restore._batches(entries)])

    def test_at_most_a_batch(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.repair.actions.BATCH', 2))
        entries = [entry('c%d' % n) for n in range(5)]
        self.assertEqual([2, 2, 1],
                         [len(b) for b in restore._batches(entries)])


class StreamsTestCase(base.BaseTestCase):

    def test_linked_by_consumer_or_provider_stay_together_in_order(self):
        entries = [entry('a', providers=('rp1',)),
                   entry('b', providers=('rp2',)),
                   entry('c', providers=('rp3',)),
                   # Links a and b through its consumers.
                   entry('a', 'b', providers=('rp4',)),
                   # Links c through rp3.
                   entry('d', providers=('rp3',)),
                   entry('e', providers=('rp5',))]
        self.assertEqual([[0, 1, 3], [2, 4], [5]],
                         restore._streams(entries, 4))

    def test_fewer_streams_than_groups(self):
        entries = [entry('c%d' % n, providers=('rp%d' % n,))
                   for n in range(5)]
        self.assertEqual([[0, 2, 4], [1, 3]], restore._streams(entries, 2))

    def test_one_stream(self):
        entries = [entry('c%d' % n, providers=('rp%d' % n,))
                   for n in range(3)]
        self.assertEqual([[0, 1, 2]], restore._streams(entries, 1))


class SegmentsTestCase(base.BaseTestCase):

    def test_provider_entries_alone_in_their_place(self):
        entries = [entry('a'), {'provider': 'p1'}, {'provider': 'p2'},
                   entry('b'), entry('c'), {'provider': 'p3'}]
        self.assertEqual([[0], [1], [2], [3, 4], [5]],
                         list(restore._segments(entries)))


class RestoreOrderTestCase(base.BaseTestCase):
    """A provider entry waits for the newer allocation entries, and the
    older ones for it, whatever the streams.
    """

    def test_provider_entry_is_a_barrier(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.repair.actions.BATCH', 1))
        events = []

        def restore_provider(client, entry, dry_run, not_back):
            events.append(('provider', entry['provider']))
            return 'done'

        def restore_allocations(client, state, batch, *args):
            events.extend(('allocations', c) for e in batch
                          for c in e['consumers'])
            return ['done'] * len(batch)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.repair.providers.restore_provider',
            restore_provider))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.repair.restore._restore_allocations',
            restore_allocations))
        # Journal order: oldest first.
        entries = [entry('old%d' % n, providers=('rp%d' % n,))
                   for n in range(4)]
        entries.append({'provider': 'p'})
        entries += [entry('new%d' % n, providers=('rp%d' % n,))
                    for n in range(4)]
        restore.restore(mock.Mock(), entries, concurrency=8)
        self.assertEqual(('provider', 'p'), events[4])
        self.assertEqual({('allocations', 'new%d' % n) for n in range(4)},
                         set(events[:4]))
        self.assertEqual({('allocations', 'old%d' % n) for n in range(4)},
                         set(events[5:]))


class ShownOrderTestCase(base.BaseTestCase):

    @staticmethod
    def finding(consumer, host, provider):
        return model.Finding(
            consumer=consumer, consumer_type='instance', instance=consumer,
            resource_provider=(provider or 'gone') + '-uuid',
            resource_provider_name=provider, root_provider=None,
            host=host, cell='cell1', reason='deleted_instance',
            action='delete_consumer', resources={'VCPU': 1}, project_id='p',
            user_id='u', details='')

    @staticmethod
    def provider(name):
        return model.ProviderFinding(
            uuid=name + '-uuid', name=name, root_provider='root-uuid',
            parent_provider=None, host=None, cell=None, compute_node=None,
            reason='deleted_compute_node', action='delete_provider',
            allocations=0, orphan_allocations=0, details='')

    def test_providers_as_put_back_then_allocations_as_a_list_shows(self):
        # As replayed, newest first: providers parents first, then the
        # allocations in the order a clean's streams happened to write.
        replayed = [
            (self.provider('root'), 'done'),
            (self.provider('child'), 'done'),
            (self.finding('b', 'host2', 'host2'), 'done'),
            (self.finding('c', 'host1', 'host1:eth0'), 'done'),
            (self.finding('a', 'host2', 'host2'), 'skipped: already as '
             'before'),
            (self.finding('z', 'host1', 'host1'), 'done'),
            (self.finding('a', None, None), 'done'),
        ]
        shown = sorted(replayed, key=restore.shown_order)
        self.assertEqual(
            [('root', 'done'), ('child', 'done'), ('a', 'done'),
             ('z', 'done'), ('c', 'done'),
             ('a', 'skipped: already as before'), ('b', 'done')],
            [(getattr(f, 'name', None) or f.consumer, outcome)
             for f, outcome in shown])


def doc(**allocations):
    return {'allocations': {rp: {'resources': {'VCPU': n}}
                            for rp, n in allocations.items()},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': 1,
            'consumer_type': None}


class RestoreAgainTestCase(base.BaseTestCase):
    """Two entries of one consumer, restored once, then again."""

    def setUp(self):
        super().setUp()
        # The instance's stale part removed, then a failed migration's
        # allocation returned to it (journal order).
        self.older = {'consumers': {'vm': {'before': doc(dst=1),
                                           'after': {}}}}
        self.newer = {'consumers': {
            'mig': {'before': doc(src=1), 'after': {}},
            'vm': {'before': doc(), 'after': doc(src=1)['allocations']}}}
        self.origins = restore._origins([self.older, self.newer])

    def test_origins_are_the_oldest_befores(self):
        self.assertEqual({'vm': doc(dst=1), 'mig': doc(src=1)},
                         self.origins)

    def test_first_run_writes_the_newer_entry(self):
        targets = restore._judge(self.newer, {'mig': doc(), 'vm':
                                              doc(src=1)}, self.origins)
        self.assertEqual({'mig', 'vm'}, set(targets))

    def test_restored_already(self):
        # Both entries undone: vm is back on dst, which is neither the
        # newer entry's before nor its after.
        current = {'mig': doc(src=1), 'vm': doc(dst=1)}
        already = actions.skipped('already as before', resolved=True)
        self.assertEqual(already,
                         restore._judge(self.newer, current, self.origins))
        self.assertEqual(already,
                         restore._judge(self.older, current, self.origins))

    def test_changed_by_someone_else_is_still_refused(self):
        current = {'mig': doc(src=1), 'vm': doc(other=1)}
        self.assertEqual(
            actions.failed('refused: consumer mig, vm changed since the '
                           'repair'),
            restore._judge(self.newer, current, self.origins))

    def test_a_refused_entry_has_no_origin(self):
        refused = dict(self.older, applied=False)
        self.assertEqual({'vm': doc(), 'mig': doc(src=1)},
                         restore._origins([refused, self.newer]))
