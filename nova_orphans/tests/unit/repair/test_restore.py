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

from nova_orphans import exception
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
