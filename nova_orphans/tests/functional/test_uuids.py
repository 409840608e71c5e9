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
"""A provider uuid in upper case or without dashes is the same provider."""

import json

from nova_orphans.tests.functional import base
from nova_orphans.tests import runners


class ResourceProviderSpellingTestCase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.host1 = self.add_node('host1')
        self.host2 = self.add_node('host2')
        self.gone = self.boot('host1', self.host1)
        self.nova.force_delete_instance('cell1', self.gone)
        self.elsewhere = self.boot('host2', self.host2)
        self.nova.force_delete_instance('cell1', self.elsewhere)

    def consumers(self, *argv):
        rc, rows = self.list_json(*argv)
        self.assertEqual(3, rc)
        return sorted((r['consumer'], r['resource_provider']) for r in rows)

    def test_list_and_clean(self):
        expected = [(self.gone, self.host1)]
        self.assertEqual(expected, self.consumers(
            '--resource-provider', self.host1))
        for spelling in (self.host1.upper(), self.host1.replace('-', ''),
                         '{%s}' % self.host1.upper()):
            self.assertEqual(expected, self.consumers(
                '--resource-provider', spelling), spelling)
        rc, out, err = self.manage(
            'allocations', 'clean', '--dry-run', '--format', 'json',
            '--resource-provider', self.host1.upper().replace('-', ''))
        self.assertEqual(3, rc, err)
        self.assertEqual([(self.gone, self.host1)], [
            (r['consumer'], r['resource_provider']) for r in json.loads(out)])

    def test_console_script(self):
        done = runners.manage(
            'allocations', 'list', '--format', 'json', '--resource-provider',
            self.host2.upper(), conf_file=self.conf_file)
        self.assertEqual((3, ''), (done.returncode, done.stderr))
        self.assertEqual([(self.elsewhere, self.host2)], [
            (r['consumer'], r['resource_provider'])
            for r in json.loads(done.stdout)])

    def test_unknown_provider_named_in_canonical_form(self):
        missing = '9b3f0c1e-2a4d-4e5f-8a6b-7c8d9e0f1a2b'
        rc, out, err = self.manage('allocations', 'list',
                                   '--resource-provider', missing.upper())
        self.assertEqual((127, ''), (rc, out))
        self.assertEqual('ERROR: Invalid input: resource provider %s does '
                         'not exist\n' % missing, err)
