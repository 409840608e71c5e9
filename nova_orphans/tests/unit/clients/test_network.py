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
"""The network client's refusals in one line."""

from oslotest import base

from nova_orphans.clients import network
from nova_orphans.tests.unit import fakes


class Neutron(fakes.FakeAdapter):

    endpoint = 'http://neutron:9696'

    def __init__(self, status, body):
        super().__init__()
        self.answer = fakes.Response(status, body)

    def handle(self, method, path, params, body):
        return self.answer


class RefusalTestCase(base.BaseTestCase):

    def test_policy_refused(self):
        client = network.NetworkClient(Neutron(403, {'NeutronError': {
            'type': 'PolicyNotAuthorized',
            'message': '(rule:get_port) is disallowed by policy',
            'detail': ''}}))
        e = self.assertRaises(network.NetworkError, client.server_ports,
                              'vm1')
        self.assertEqual(
            "Network request GET /ports?device_id=vm1&fields=id&fields="
            "device_id&fields=binding%3Aprofile failed: 403: neutron's "
            "policy refused get_port (granted by default to the admin or "
            "service role, on a project)", str(e))

    def test_other_failures_keep_their_words(self):
        client = network.NetworkClient(Neutron(500, {'NeutronError': {
            'message': 'boom'}}))
        e = self.assertRaises(network.NetworkError, client.server_ports,
                              'vm1')
        self.assertEqual(
            'Network request GET /ports?device_id=vm1&fields=id&fields='
            'device_id&fields=binding%3Aprofile failed: 500 "{"NeutronError":'
            ' {"message": "boom"}}"', str(e))
