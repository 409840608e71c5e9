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
"""Endpoints that answer, but not as placement or nova would, as the
operator meets them: both console scripts, one line, no traceback.

The endpoints and the lines are the unit tests' (tests/unit/clients/
test_diagnose.py, through the real clients).
"""

import os

import fixtures

from nova_orphans.tests import runners
from nova_orphans.tests.unit.clients import test_diagnose

PLACEMENT_CASES = test_diagnose.PLACEMENT_CASES
COMPUTE_CASES = test_diagnose.COMPUTE_CASES


# No retries: these are the lines of the fault the first try meets (the
# retries in front of them are test_retry's and test_faults').
NOVA_CONF = '''[api_database]
connection = sqlite:///{tmp}/no-such-dir/nova_api.sqlite
[database]
connection = sqlite:///{tmp}/no-such-dir/nova.sqlite
[placement]
auth_type = admin_token
endpoint = {endpoint}
token = admin
connect_retries = 0
status_code_retries = 0
'''

CLOUDS_YAML = '''clouds:
  sandbox:
    auth_type: admin_token
    auth:
      endpoint: {placement}
      token: admin
    compute_endpoint_override: {compute}
    connect_retries: 0
    status_code_retries: 0
'''


class ConsoleDiagnosticsTestCase(test_diagnose.LoopbackTestCase):
    """Both console scripts: one line, no traceback."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def manage(self, endpoint):
        conf = os.path.join(self.tmp, 'nova.conf')
        with open(conf, 'w') as f:
            f.write(NOVA_CONF.format(tmp=self.tmp, endpoint=endpoint))
        return runners.manage('allocations', 'list', conf_file=conf)

    def openstack(self, placement_endpoint, compute_endpoint):
        clouds = os.path.join(self.tmp, 'clouds.yaml')
        with open(clouds, 'w') as f:
            f.write(CLOUDS_YAML.format(placement=placement_endpoint,
                                       compute=compute_endpoint))
        return runners.openstack(
            'allocation', 'orphan', 'list', cloud='sandbox',
            env=runners.environment(OS_CLIENT_CONFIG_FILE=clouds))

    def assertOneLine(self, rc, line, done):
        self.assertEqual((rc, '', self.line(line) + '\n'),
                         (done.returncode, done.stdout, done.stderr))

    def test_manage(self):
        for path, error, line in PLACEMENT_CASES:
            rc = error.exit_code
            self.assertIn(rc, (7, 8))
            self.assertOneLine(
                rc, 'ERROR: ' + line,
                self.manage(self.server.url(path)))

    def test_manage_connection_refused(self):
        url = test_diagnose.refused_url()
        self.assertOneLine(
            8, 'ERROR: Placement request GET / failed: cannot connect to '
            '%s ([Errno 111] Connection refused); check that placement runs '
            'there, and [placement] (its endpoint, or auth_url, region_name '
            'and valid_interfaces)' % url, self.manage(url))

    def test_openstack(self):
        for path, error, line in COMPUTE_CASES:
            self.assertOneLine(
                error.exit_code, 'ERROR: ' + line, self.openstack(
                    self.server.url('/placement'), self.server.url(path)))

    def test_openstack_placement(self):
        path, error, line = PLACEMENT_CASES[0]
        self.assertOneLine(error.exit_code, 'ERROR: ' + line, self.openstack(
            self.server.url(path), self.server.url('/compute/v2.1')))
