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
import os
from unittest import mock

import fixtures
from oslotest import base

from nova_orphans.engine import model
from nova_orphans import exception
from nova_orphans.repair import actions
from nova_orphans.repair import journal
from nova_orphans.repair import journal_verify
from nova_orphans.repair import restore


def entry(*consumers, providers=('rp1',)):
    return {'consumers': {c: {
        'before': {'allocations': {rp: {'resources': {'VCPU': 1}}
                                   for rp in providers}},
        'after': {}} for c in consumers}}


def run(placement, *entries, cloud=None):
    header = {'placement': placement, 'version': journal_verify.VERSION}
    if cloud:
        header['cloud'] = cloud
    r = journal_verify.Run(header, 1)
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


# What each front end records of a cloud (see Sources.cloud).
OSC_A = {'front_end': 'openstack', 'name': 'a', 'auth_url':
         'http://ks-a:5000/v3', 'region': 'RegionOne', 'project': 'admin'}
MANAGE_A = {'front_end': 'nova-orphans-manage',
            'config_files': ['/etc/nova/nova.conf'],
            'auth_url': 'http://ks-a:5000/v3', 'region': 'RegionOne',
            'api_database': {'host': 'db-a', 'name': 'nova_api'}}
# nova-orphans-manage with an admin_token [placement]: no keystone.
MANAGE_TOKEN = {'front_end': 'nova-orphans-manage',
                'config_files': ['/etc/nova/nova.conf'],
                'api_database': {'host': 'db-a', 'name': 'nova_api'}}


class CheckCloudTestCase(base.BaseTestCase):
    """Every pair of writer and restorer front ends: a run is of
    another cloud when an address both know differs.
    """

    def check(self, written, here, journal_clouds=()):
        restore.check_cloud('j', [written], *here,
                            journal_clouds=journal_clouds)

    def refused(self, written, here, journal_clouds=()):
        return str(self.assertRaises(
            exception.JournalError, self.check, written, here,
            journal_clouds))

    def test_the_same_cloud_by_either_front_end(self):
        for cloud in (OSC_A, MANAGE_A, MANAGE_TOKEN):
            written = run('http://placement-a:8778/', entry('c'),
                          cloud=cloud)
            for here in (OSC_A, MANAGE_A, MANAGE_TOKEN,
                         # Another workstation's name for it.
                         dict(OSC_A, name='prod', project='other'),
                         # keystone's URL spelled otherwise.
                         dict(OSC_A, auth_url='HTTP://KS-A:5000/v3/'),
                         # ... or without its version, as clouds.yaml
                         # may name it where nova.conf has /v3.
                         dict(OSC_A, auth_url='http://ks-a:5000'),
                         dict(OSC_A, auth_url='http://ks-a:5000/v2.0')):
                self.check(written, ('HTTP://Placement-A:8778', here))

    def test_another_placement_whoever_wrote_and_restores(self):
        for theirs in (OSC_A, MANAGE_A, MANAGE_TOKEN):
            written = run('http://placement-b:8778', entry('c'),
                          cloud=theirs)
            for ours in (OSC_A, MANAGE_A, MANAGE_TOKEN):
                message = self.refused(written,
                                       ('http://placement-a:8778', ours))
                self.assertTrue(message.startswith(
                    'Journal j: written against another cloud (placement '
                    'http://placement-b:8778'), message)
                self.assertIn(') than the one this run reaches (placement '
                              'http://placement-a:8778', message)
                self.assertTrue(message.endswith(
                    '): nothing was restored. If it is the same cloud, now '
                    'reached at another address, restore with '
                    '--journal-cloud http://placement-b:8778'), message)
                # Named, it is restored.
                self.check(written, ('http://placement-a:8778', ours),
                           ['http://placement-b:8778/'])

    def test_whole_message(self):
        written = run('http://placement-b:8778', entry('c'),
                      cloud=MANAGE_A)
        self.assertEqual(
            'Journal j: written against another cloud (placement '
            'http://placement-b:8778, keystone http://ks-a:5000/v3, region '
            'RegionOne, API database db-a/nova_api, configuration '
            '/etc/nova/nova.conf) than the one this run reaches (placement '
            'http://placement-a:8778, keystone http://ks-a:5000/v3, region '
            'RegionOne, cloud a): nothing was restored. If it is the same '
            'cloud, now reached at another address, restore with '
            '--journal-cloud http://placement-b:8778',
            self.refused(written, ('http://placement-a:8778', OSC_A)))

    def test_the_same_placement_address_in_another_cloud(self):
        """Two clouds whose placement has the same address (two
        Kubernetes clusters' service names): keystone, the region or
        the API database, where both runs know them, tell them apart.
        """
        placement = 'http://placement-api.openstack.svc:8778'
        for theirs, ours in (
                (OSC_A, dict(OSC_A, auth_url='http://ks-b:5000/v3')),
                (MANAGE_A, dict(OSC_A, auth_url='http://ks-b:5000/v3')),
                (OSC_A, dict(MANAGE_A, auth_url='http://ks-b:5000/v3')),
                (OSC_A, dict(OSC_A, region='RegionTwo')),
                (MANAGE_A, dict(MANAGE_TOKEN, api_database={
                    'host': 'db-b', 'name': 'nova_api'})),
                (MANAGE_TOKEN, dict(MANAGE_A, api_database={
                    'host': 'db-a', 'name': 'nova_api_cell0'}))):
            self.refused(run(placement, entry('c'), cloud=theirs),
                         (placement, ours))

    def test_journal_cloud_must_name_a_run(self):
        written = run('http://placement-a:8778', entry('c'), cloud=OSC_A)
        self.assertEqual(
            'Journal j: --journal-cloud http://elsewhere names no run of it '
            '(its runs wrote to placement at http://placement-a:8778): '
            'nothing was restored',
            self.refused(written, ('http://placement-a:8778', OSC_A),
                         ['http://elsewhere']))

    def test_every_run_of_another_cloud_is_named(self):
        runs = [run('http://placement-b:8778', entry('b'), cloud=OSC_A),
                run('http://placement-a:8778', entry('a'), cloud=OSC_A),
                run('http://placement-c:8778', entry('c'), cloud=OSC_A)]
        e = self.assertRaises(
            exception.JournalError, restore.check_cloud, 'j', runs,
            'http://placement-a:8778', OSC_A)
        self.assertTrue(str(e).endswith(
            'restore with --journal-cloud http://placement-b:8778 '
            '--journal-cloud http://placement-c:8778'), str(e))
        restore.check_cloud('j', runs, 'http://placement-a:8778', OSC_A,
                            ['http://placement-b:8778',
                             'http://placement-c:8778'])


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


class RowsTestCase(base.BaseTestCase):
    """A restore's row says what it writes: the document written back,
    whatever the journaled row recorded.
    """

    def row(self, action, resources, consumer='vm'):
        return dict(ShownOrderTestCase.finding(consumer, 'host1', 'host1')
                    .to_dict(), action=action, resources=resources)

    def test_an_allocation_put_back_as_its_before(self):
        before = dict(doc(**{'host1-uuid': 20}), project_id='p2',
                      user_id='u2')
        entry = {'consumers': {'vm': {'before': before, 'after': {}}},
                 'findings': [self.row('delete_consumer', {'VCPU': 1})]}
        finding = restore._restored(entry, entry['findings'][0])
        self.assertEqual(
            ({'VCPU': 20}, 'p2', 'u2', 'restore_consumer'),
            (finding.resources, finding.project_id, finding.user_id,
             finding.action))

    def test_what_a_restore_of_a_heal_removes(self):
        entry = {'consumers': {'vm': {
            'before': dict(doc(), project_id=None, user_id=None),
            'after': doc(**{'host1-uuid': 4})['allocations']}},
            'findings': [self.row('heal', {'VCPU': 1})]}
        finding = restore._restored(entry, entry['findings'][0])
        self.assertEqual(({'VCPU': 4}, 'p', 'remove_healed'),
                         (finding.resources, finding.project_id,
                          finding.action))

    def test_a_row_naming_nothing_written_shows_nothing(self):
        entry = {'consumers': {'vm': {'before': doc(other=1), 'after': {}}},
                 'findings': [self.row('delete_consumer', {'VCPU': 1}),
                              self.row('delete_consumer', {'VCPU': 1},
                                       consumer='stranger')]}
        self.assertEqual([{}, {}], [
            restore._restored(entry, row).resources
            for row in entry['findings']])

    def test_a_provider_as_its_record(self):
        row = ShownOrderTestCase.provider('child').to_dict()
        entry = {'provider': {'uuid': 'other-uuid', 'name': 'other',
                              'parent_provider_uuid': 'parent-uuid'},
                 'findings': [row]}
        finding = restore._restored(entry, row)
        self.assertEqual(
            ('other-uuid', 'other', 'parent-uuid', 'restore_provider'),
            (finding.uuid, finding.name, finding.parent_provider,
             finding.action))


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


class LoadHoldsTheJournalTestCase(base.BaseTestCase):
    """A restore keeps the journal's lock from its read to its mark."""

    def setUp(self):
        super().setUp()
        self.path = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'j.jsonl')
        clean = journal.Journal(self.path, placement='http://p')
        clean.record(entry('vm'))
        self.assertIsNone(clean.close())

    def test_no_clean_appends_between_read_and_mark(self):
        mark = journal.Journal(self.path, command='restore',
                               placement='http://p')
        contents = restore.load(self.path, 'http://p', mark=mark)
        self.assertEqual(1, len(contents.entries))
        self.assertTrue(journal.in_use(self.path))
        clean = journal.Journal(self.path, placement='http://p')
        e = self.assertRaises(exception.JournalError, clean.record,
                              entry('vm2'))
        self.assertIn(journal.IN_USE, str(e))
        mark.restored(1, 0)
        self.assertIsNone(mark.close())
        self.assertFalse(journal.in_use(self.path))
        after = journal.load(self.path)
        self.assertEqual([1], [len(r.entries) for r in after.runs])
        self.assertEqual([(1, 0, 'http://p')], [
            (m['done'], m['failed'], m['placement']) for m in after.restores])
        self.assertEqual([], after.unended)

    def test_a_journal_held_by_another_run_is_refused(self):
        other = journal.Journal(self.path, placement='http://p')
        other.hold()
        self.addCleanup(other.close)
        for mark in (None, journal.Journal(self.path, command='restore')):
            e = self.assertRaises(exception.JournalError, restore.load,
                                  self.path, 'http://p', mark=mark)
            self.assertIn(journal.IN_USE, str(e))
