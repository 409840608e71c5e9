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
"""The compute client's refusals: nova's policies, and its admin."""

from oslotest import base

from nova_orphans.clients import compute
from nova_orphans.tests.unit import fakes


class RefusalTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.api = fakes.FakeCompute()
        self.client = compute.ComputeClient(self.api)

    def test_admin_passes(self):
        self.client.check_admin()
        self.assertEqual(['/servers/detail?limit=1&status=DELETED'],
                         self.api.urls())

    def test_not_admin_refused(self):
        self.api.admin = False
        e = self.assertRaises(compute.ComputeError, self.client.check_admin)
        self.assertEqual(9, e.exit_code)
        self.assertEqual(
            'Compute request GET /servers/detail?limit=1&status=DELETED '
            'failed: 403 Only administrators may list deleted instances: '
            'nova narrows the reads of a user that is not its admin '
            '(context_is_admin, granted by default to the admin role, on a '
            'project) to its own project, and a clean would take live '
            'servers for gone', str(e))

    def test_policy_refused(self):
        self.api.handle = lambda *a: fakes.Response(403, {'forbidden': {
            'code': 403, 'message': "Policy doesn't allow "
            "os_compute_api:os-services:list to be performed."}})
        e = self.assertRaises(compute.ComputeError, self.client.get,
                              '/os-services')
        self.assertEqual(9, e.exit_code)
        self.assertEqual(
            "Compute request GET /os-services failed: 403: nova's policy "
            "refused os_compute_api:os-services:list (granted by default to "
            "the admin role, on a project)", str(e))
