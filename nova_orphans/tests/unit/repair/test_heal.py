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

from nova_orphans.repair import heal


def flavor(**kw):
    result = {'vcpus': 2, 'memory_mb': 2048, 'root_gb': 20,
              'ephemeral_gb': 5, 'swap': 1536, 'extra_specs': {}}
    result.update(kw)
    return result


class NestedReasonTestCase(base.BaseTestCase):

    def test_plain_flavor_is_not_nested(self):
        self.assertIsNone(heal.nested_reason(flavor(), []))

    def test_vgpu_and_numbered_groups_are_nested(self):
        for spec in ('resources:VGPU', 'resources1:VGPU',
                     'accel:device_profile', 'pci_passthrough:alias'):
            self.assertIn(spec, heal.nested_reason(
                flavor(extra_specs={spec: '1'}), []))

    def test_port_with_resource_request_is_nested(self):
        vif = {'id': 'port-1', 'profile': {'allocation': 'rp-uuid'}}
        self.assertIn('port-1', heal.nested_reason(flavor(), [vif]))
