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

from nova_orphans.engine import changes
from nova_orphans.engine import model
from nova_orphans.engine import reasons as r

A, B, C = 'rp-a', 'rp-b', 'rp-c'
FLAVOR = {'VCPU': 2, 'MEMORY_MB': 1024}
BW = {'NET_BW_EGR_KILOBIT_PER_SEC': 1000}


def finding(consumer, provider, action, resources, reason=r.DELETED_INSTANCE):
    return model.Finding(
        consumer, r.INSTANCE, consumer, provider, provider, provider, 'h',
        'cell1', reason, action, resources, None, None, '')


def doc(**by_provider):
    return {rp: {'resources': res} for rp, res in by_provider.items()}


class AfterTestCase(base.BaseTestCase):

    def test_removals_keep_what_is_elsewhere(self):
        allocations = {A: {'resources': FLAVOR}, B: {'resources': BW}}
        for action in (r.DELETE_CONSUMER, r.REMOVE_PROVIDER,
                       r.TRIM_PROVIDER):
            self.assertEqual(({B: {'resources': BW}}, None),
                             changes.after(action, allocations, {A}))
        self.assertEqual(({}, None),
                         changes.after(r.DELETE_CONSUMER, allocations,
                                       {A, B}))

    def test_return_to_instance_adds_to_the_instance(self):
        migration = {A: {'resources': FLAVOR}}
        instance = {A: {'resources': {'VCPU': 1, 'DISK_GB': 10}},
                    B: {'resources': BW}}
        kept, target = changes.after(r.RETURN_TO_INSTANCE, migration, {A},
                                     instance)
        self.assertEqual({}, kept)
        self.assertEqual(
            {A: {'resources': {'VCPU': 3, 'MEMORY_MB': 1024,
                               'DISK_GB': 10}},
             B: {'resources': BW}}, target)
        # The instance's own document is not changed in place.
        self.assertEqual({'VCPU': 1, 'DISK_GB': 10},
                         instance[A]['resources'])
        self.assertEqual(({}, {A: {'resources': FLAVOR}}),
                         changes.after(r.RETURN_TO_INSTANCE, migration, {A},
                                       None))


class GivenBackTestCase(base.BaseTestCase):

    def given_back(self, findings, allocations, migrations=None):
        return changes.given_back(
            findings, [model.Allocation(c, rp, res)
                       for c, rp, res in allocations], migrations or {})

    def test_each_action(self):
        findings = [
            finding('gone', A, r.DELETE_CONSUMER, FLAVOR),
            finding('gone', B, r.DELETE_CONSUMER, BW),
            finding('evacuated', A, r.REMOVE_PROVIDER, FLAVOR,
                    r.EVACUATED_SOURCE),
            finding('ported', B, r.TRIM_PROVIDER, BW,
                    r.LEAKED_PORT_ALLOCATION),
            # Heal adds, and only with --heal; what is fine stays.
            finding('healed', A, r.HEAL, {}, r.MISSING_ALLOCATIONS),
            finding('fine', A, r.NONE, FLAVOR, r.ACTIVE_INSTANCE),
        ]
        allocations = [
            ('gone', A, FLAVOR), ('gone', B, BW),
            ('evacuated', A, FLAVOR), ('evacuated', C, FLAVOR),
            ('ported', C, FLAVOR), ('ported', B, BW),
            ('fine', A, FLAVOR)]
        self.assertEqual(
            {A: {'VCPU': 4, 'MEMORY_MB': 2048},
             B: {'NET_BW_EGR_KILOBIT_PER_SEC': 2000}},
            self.given_back(findings, allocations))

    def test_a_returned_migration_gives_nothing_back(self):
        mig = model.Migration('mig', 'vm', 'cell1', 'error')
        findings = [finding('mig', A, r.RETURN_TO_INSTANCE, FLAVOR,
                            r.FINISHED_MIGRATION)]
        self.assertEqual({}, self.given_back(
            findings, [('mig', A, FLAVOR), ('vm', B, BW)], {'mig': mig}))
        # Nor when the instance holds nothing yet.
        self.assertEqual({}, self.given_back(
            findings, [('mig', A, FLAVOR)], {'mig': mig}))

    def test_plans_as_repair_groups_them(self):
        findings = [finding('x', A, r.DELETE_CONSUMER, FLAVOR),
                    finding('x', B, r.DELETE_CONSUMER, BW),
                    finding('y', A, r.HEAL, {}),
                    finding('z', C, r.NONE, FLAVOR)]
        self.assertEqual({'x': (r.DELETE_CONSUMER, {A, B})},
                         changes.plans(findings))
