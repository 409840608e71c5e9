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

from nova_orphans import exception
from nova_orphans.repair import capacity

RP = '1b6de41d-9eed-4d3e-a62b-33967f5f5982'
# placement 9.0.0 to 16.0.0's answer (handlers/allocation.py), as the
# placement client words it.
OVER = ("Unable to allocate inventory: Unable to create allocation for "
        "'MEMORY_MB' on resource provider '%s'. The requested amount would "
        "exceed the capacity." % RP)


def error(status, text):
    return exception.PlacementError(method='PUT', url='/allocations/c',
                                    reason='%d %s' % (status, text),
                                    status_code=status)


class CapacityTestCase(base.BaseTestCase):

    def test_refused(self):
        self.assertEqual((RP, 'MEMORY_MB'), capacity.refused(error(409,
                                                                   OVER)))

    def test_other_conflicts_and_statuses(self):
        self.assertIsNone(capacity.refused(error(409, 'consumer generation '
                                                 'conflict')))
        self.assertIsNone(capacity.refused(error(400, OVER)))
        self.assertIsNone(capacity.refused(ValueError(OVER)))
        self.assertIsNone(capacity.repair_refused(error(500, OVER)))
        self.assertIsNone(capacity.restore_refused(error(409, 'x')))

    def test_repair_names_the_provider_and_the_way_out(self):
        self.assertEqual(
            'resource provider host1 (%s) is over capacity for MEMORY_MB, '
            'and this placement refuses any allocation write that keeps an '
            'allocation there, even one that adds nothing (placement before '
            '14.0.0, bug 2104040): give it room for its usage (raise its '
            'MEMORY_MB allocation_ratio or lower its reserved, in nova.conf '
            'where nova reports them) and run clean again, or upgrade '
            'placement to 14.0.0 or later' % RP,
            capacity.repair_refused(error(409, OVER), {RP: 'host1'}.get))

    def test_restore_without_a_name(self):
        self.assertEqual(
            'resource provider %s is over capacity for MEMORY_MB, and '
            'placement refuses to put back an allocation that adds to its '
            'usage: give it room (raise its MEMORY_MB allocation_ratio or '
            'lower its reserved, in nova.conf where nova reports them) and '
            'run restore again' % RP,
            capacity.restore_refused(error(409, OVER), {}.get))
