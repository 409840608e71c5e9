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
"""A uuid written in upper case or without dashes is the same uuid."""

from nova_orphans.osc.v1 import orphan
from nova_orphans.tests.unit.osc import test_commands

GONE = test_commands.GONE
RP2 = test_commands.RP2
STRANGER = test_commands.STRANGER

SPELLINGS = (RP2.upper(), RP2.replace('-', ''), '{%s}' % RP2,
             'urn:uuid:' + RP2.upper().replace('-', ''))


class ResourceProviderSpellingTestCase(test_commands.CommandTestCase):

    def consumers(self, cls, *argv):
        return sorted((r['consumer'], r['resource_provider'])
                      for r in self.json_rows(cls, *argv))

    def test_list(self):
        expected = [(GONE, RP2), (STRANGER, RP2)]
        self.assertEqual(expected, self.consumers(
            orphan.ListOrphan, '--resource-provider', RP2))
        for spelling in SPELLINGS:
            self.assertEqual(expected, self.consumers(
                orphan.ListOrphan, '--resource-provider', spelling),
                spelling)

    def test_clean(self):
        self.assertEqual([(GONE, RP2), (STRANGER, RP2)], self.consumers(
            orphan.CleanOrphan, '--dry-run', '--resource-provider',
            RP2.upper().replace('-', '')))

    def test_unknown_provider_is_named_as_placement_would(self):
        missing = 'dadadada-dada-4ada-8ada-dadadadadada'
        self.assertOneLineError(
            'Invalid input: resource provider %s does not exist' % missing,
            orphan.ListOrphan, '--resource-provider', missing.upper())
