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
"""The journal's provider entries (``providers clean``)."""

import os

import fixtures
from oslotest import base

from nova_orphans import exception
from nova_orphans.repair import journal
from nova_orphans.repair import journal_verify
from nova_orphans.repair import restore

RECORD = {'uuid': 'd0d0d0d0-d0d0-40d0-80d0-d0d0d0d0d0d0', 'name': 'host9',
          'parent_provider_uuid': None,
          'root_provider_uuid': 'd0d0d0d0-d0d0-40d0-80d0-d0d0d0d0d0d0',
          'generation': 4, 'inventories': {}, 'traits': ['COMPUTE_NODE'],
          'aggregates': []}


class ProviderEntryTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'j.jsonl')

    def test_round_trip_and_not_applied(self):
        j = journal.Journal(self.path, placement='http://placement')
        j.record({'action': 'delete_consumer', 'consumers': {'c': {
            'before': {'allocations': {}}, 'after': {}}}})
        entry = j.record({'action': 'delete_provider', 'provider': RECORD,
                          'findings': []})
        j.not_applied(entry, '409 in use')
        j.close()
        entries = journal.load(self.path).entries
        self.assertEqual(RECORD, entries[1]['provider'])
        self.assertEqual((False, '409 in use'),
                         (entries[1]['applied'], entries[1]['reason']))

    def test_malformed_provider_record_is_damage(self):
        with open(self.path, 'wb') as f:
            f.write(journal_verify.seal({'action': 'delete_provider',
                                         'provider': {'name': 'no uuid'}},
                                        None)[0])
        e = self.assertRaises(exception.JournalError, journal.load,
                              self.path)
        self.assertIn('a malformed provider record', str(e))

    def test_provider_entry_is_a_batch_of_its_own(self):
        def alloc(c):
            return {'consumers': {c: {}}}
        provider = {'provider': RECORD}
        self.assertEqual(
            [[0, 1], [2], [3]],
            list(restore._segments([alloc('a'), alloc('b'), provider,
                                    alloc('c')])))
