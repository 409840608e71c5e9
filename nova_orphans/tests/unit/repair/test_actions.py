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

from oslotest import base

from nova_orphans.engine import model
from nova_orphans.repair import actions


class StreamsTestCase(base.BaseTestCase):

    def _repairer(self, allocations, migrations=None):
        audit = mock.Mock()
        audit.placement.allocations = [
            model.Allocation(consumer=c, provider=rp, resources={'VCPU': 1})
            for c, rp in allocations]
        audit.nova.migrations = migrations or {}
        return actions.Repairer(mock.Mock(), mock.Mock(spec=[]), audit)

    def test_streams_never_share_a_provider(self):
        # a1, a2 on A; b1 on B; m moves between B and C: B and C together.
        r = self._repairer([('a1', 'A'), ('a2', 'A'), ('b1', 'B'),
                            ('m', 'B'), ('m', 'C'), ('c1', 'C')])
        streams = r._streams(['a1', 'b1', 'a2', 'm', 'c1'])
        self.assertEqual([['b1', 'm', 'c1'], ['a1', 'a2']], streams)

    def test_migration_goes_with_its_instance(self):
        mig = mock.Mock(instance_uuid='vm')
        r = self._repairer([('mig', 'A'), ('vm', 'B'), ('x', 'B')],
                           migrations={'mig': mig})
        streams = r._streams(['mig', 'x'])
        self.assertEqual([['mig', 'x']], streams)

    def test_no_fast_mode_without_a_placement_database(self):
        self.assertIsNone(self._repairer([]).placement_db)
