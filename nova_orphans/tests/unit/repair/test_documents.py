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

from nova_orphans.repair import documents

READ = {
    'allocations': {
        'rp1': {'generation': 7, 'resources': {'VCPU': 1}},
        'rp2': {'generation': 3, 'resources': {'DISK_GB': 5}}},
    'project_id': 'p', 'user_id': 'u', 'consumer_generation': 4,
    'consumer_type': 'unknown',
}


class DocumentsTestCase(base.BaseTestCase):

    def test_normalize_strips_provider_generations(self):
        doc = documents.normalize(READ)
        self.assertEqual({'rp1': {'resources': {'VCPU': 1}},
                          'rp2': {'resources': {'DISK_GB': 5}}},
                         doc['allocations'])
        self.assertEqual(4, doc['consumer_generation'])

    def test_untyped_consumers_are_written_without_a_type(self):
        self.assertEqual((1, 37), documents.write_version('unknown'))
        self.assertEqual((1, 37), documents.write_version(None))
        self.assertEqual((1, 37), documents.write_version('INSTANCE',
                                                          'unknown'))
        self.assertEqual((1, 38), documents.write_version('INSTANCE',
                                                          'MIGRATION'))

    def test_body(self):
        doc = documents.normalize(READ)
        doc['allocations'].pop('rp2')
        self.assertEqual(
            {'allocations': {'rp1': {'resources': {'VCPU': 1}}},
             'project_id': 'p', 'user_id': 'u', 'consumer_generation': 4},
            documents.body(doc, 4, (1, 37)))
        typed = dict(doc, consumer_type='INSTANCE')
        self.assertEqual('INSTANCE',
                         documents.body(typed, 4, (1, 38))['consumer_type'])


class DocsWriteVersionTestCase(base.BaseTestCase):

    def test_decided_by_the_consumers_that_keep_allocations(self):
        migration = {'consumer_type': 'MIGRATION', 'allocations': {
            'rp': {'resources': {'VCPU': 1}}}}
        emptied = {'consumer_type': 'unknown', 'allocations': {}}
        self.assertEqual((1, 38), documents.docs_write_version(
            [migration, emptied]))
        self.assertEqual((1, 37), documents.docs_write_version(
            [dict(migration, consumer_type='unknown'), emptied]))

    def test_all_emptied(self):
        emptied = {'consumer_type': 'INSTANCE', 'allocations': {}}
        self.assertEqual((1, 38), documents.docs_write_version([emptied]))
