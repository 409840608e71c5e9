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
"""``openstack`` authenticating as a cloud's operators do.

The ``openstack`` console script, as a process, with a user's password:
from a clouds.yaml, or from OS_* variables, with a region and the
internal interface. keystone's catalog leads it to placement (through
each region's proxy, see test_keystone.py) and to nova's real compute
API (tools/sandbox_compute.py over the test's databases, with nova's
own paste pipeline: keystonemiddleware validates the tokens there too).
"""

import json
import os
import re
import subprocess
import sys

import yaml

from nova_orphans.repair import journal as journal_mod
from nova_orphans.tests.functional.fixtures import keystone
from nova_orphans.tests.functional.fixtures import nova_db
from nova_orphans.tests.functional import processes
from nova_orphans.tests.functional import test_keystone
from nova_orphans.tests import runners

try:
    # The one exit-code table both front ends share.
    from nova_orphans import exit_codes
    ORPHANS_FOUND = exit_codes.ORPHANS_FOUND
    REPAIRED = exit_codes.REPAIRED
except ImportError:
    # openstack's front end before it: cliff's 0 for every success.
    ORPHANS_FOUND = REPAIRED = 0

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
CLOUD = 'production'


class OpenStackBase(test_keystone.KeystoneTestCase):
    """The cloud, and ``openstack`` run with its credentials."""

    # nova's compute API in the catalog (seconds to start: only where
    # the commands get that far).
    COMPUTE = True
    # The policy overrides nova's compute API loads.
    COMPUTE_POLICY = None

    def setUp(self):
        self.compute = None
        super().setUp()
        self.cloud = processes.Cloud(self, deleted=1, strangers=2,
                                     evacuated=1, returned=1, live=1)
        self.before = self.cloud.state()
        self.orphans = sorted(
            self.cloud.deleted + self.cloud.strangers +
            self.cloud.evacuated + [m for _vm, m in self.cloud.returned])

    def catalog(self):
        endpoints = super().catalog()
        if not self.COMPUTE:
            return endpoints
        self.compute = self.compute_api()
        for region in (keystone.REGION_ONE, keystone.REGION_TWO):
            endpoints[('compute', 'internal', region)] = self.compute
            endpoints[('compute', 'public', region)] = test_keystone.NOWHERE
        return endpoints

    def compute_api(self):
        """nova's compute API behind keystonemiddleware; its endpoint."""
        directory = self.tmp
        conf = nova_db.write_ini(os.path.join(directory, 'compute.conf'), {
            'DEFAULT': {'host': 'api', 'transport_url': 'fake://'},
            'api_database': {'connection': self.nova.api_url},
            'database': {'connection':
                         self.nova.cell_urls[self.nova.local_cell]},
            'keystone_authtoken': self.keystone.authtoken_section('nova'),
            'oslo_policy': ({'policy_file': self.COMPUTE_POLICY}
                            if self.COMPUTE_POLICY else {}),
        })
        log = open(os.path.join(directory, 'compute-api.log'), 'a')
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, 'tools',
                                          'sandbox_compute.py'),
             conf, log.name, 'keystone'],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
            text=True, env=runners.environment(
                OS_NOVA_DISABLE_EVENTLET_PATCHING='True'))

        def stop():
            proc.terminate()
            proc.wait(timeout=30)
            proc.stdout.close()
        self.addCleanup(stop)
        endpoint = proc.stdout.readline().strip()
        if not endpoint:
            with open(log.name) as f:
                raise AssertionError('the compute API did not start:\n' +
                                     f.read()[-3000:])
        return endpoint

    def clouds_yaml(self, region=keystone.REGION_ONE):
        """The shipped clouds.yaml sample, with this keystone's address
        and the user's password put in.
        """
        _password, project, _roles = keystone.USERS['nova']
        self.assertEqual(
            (CLOUD, {'auth_type': 'password', 'auth': {
                'auth_url': 'http://controller:5000/v3',
                'username': 'nova', 'password': 'NOVA_PASS',
                'project_name': project,
                'user_domain_name': keystone.DOMAIN,
                'project_domain_name': keystone.DOMAIN},
             'region_name': keystone.REGION_ONE, 'interface': 'internal',
             'identity_api_version': 3}), keystone.shipped_cloud())
        clouds = {'clouds': {CLOUD: self.keystone.cloud(region)}}
        path = os.path.join(self.tmp, 'clouds.yaml')
        with open(path, 'w') as f:
            yaml.safe_dump(clouds, f)
        return {'OS_CLIENT_CONFIG_FILE': path, 'OS_CLOUD': CLOUD}

    def os_variables(self, region=keystone.REGION_ONE):
        password, project, _roles = keystone.USERS['nova']
        return {
            'OS_AUTH_TYPE': 'password',
            'OS_AUTH_URL': self.keystone.auth_url,
            'OS_USERNAME': 'nova', 'OS_PASSWORD': password,
            'OS_PROJECT_NAME': project,
            'OS_USER_DOMAIN_NAME': keystone.DOMAIN,
            'OS_PROJECT_DOMAIN_NAME': keystone.DOMAIN,
            'OS_REGION_NAME': region,
            'OS_INTERFACE': 'internal',
            'OS_IDENTITY_API_VERSION': '3',
            # No clouds.yaml of the developer's.
            'OS_CLIENT_CONFIG_FILE': os.path.join(self.tmp, 'none.yaml'),
        }

    def run_openstack(self, variables, *argv):
        """(return code, stdout, stderr) of ``openstack ARGV -f json``."""
        done = runners.openstack(*argv, '-f', 'json',
                                 env=runners.environment(**variables),
                                 timeout=300)
        return self.assertRanCleanly(done)

    def openstack(self, variables, *argv, rc=0):
        code, out, err = self.run_openstack(variables, *argv)
        self.assertEqual(rc, code, err)
        return json.loads(out) if out.strip() else []


class OpenStackTestCase(OpenStackBase):

    def consumers(self, rows):
        return sorted({r['consumer'] for r in rows})

    def debug(self, variables, *argv, rc=0,
              told=r'compute GET /os-services: 200 in '):
        """``openstack --debug ARGV -f json``: its rows, once its stderr
        was checked for ``told``, for no secret (see
        test_keystone.assertDebug) and for keystoneauth's own request
        lines, their token masked.
        """
        code, out, err = self.run_openstack(variables, '--debug', *argv)
        self.assertEqual(rc, code, err)
        self.assertDebug(err, told, messages=err.splitlines())
        self.assertRegex(err, r'(?m)^REQ: curl .*-H "X-Auth-Token: '
                              r'\{SHA256\}[0-9a-f]{64}"')
        return json.loads(out)

    def test_clouds_yaml(self):
        """list, clean, restore (with --debug); provider orphans list
        and clean.
        """
        cloud = self.clouds_yaml()
        rows = self.debug(cloud, 'allocation', 'orphan', 'list',
                          rc=ORPHANS_FOUND)
        self.assertEqual(self.orphans, self.consumers(rows))
        self.assertEqual(0, self.requests_seen()[keystone.REGION_TWO])

        journal = os.path.join(self.tmp, 'osc.jsonl')
        rows = self.debug(cloud, 'allocation', 'orphan', 'clean',
                          '--journal', journal, rc=REPAIRED)
        self.assertEqual(self.orphans, self.consumers(rows))
        self.assertEqual(self.cloud.repaired(self.before),
                         self.cloud.state())
        moved = [vm for vm, _mig in self.cloud.returned]
        self.assertEqual(sorted(self.orphans + moved), sorted(
            {c for e in journal_mod.load(journal).entries
             for c in e['consumers']}))

        self.debug(cloud, 'allocation', 'orphan', 'restore',
                   '--journal', journal, rc=REPAIRED,
                   told=r'Read the journal %s: ' % re.escape(journal))
        self.assertEqual(self.before, self.cloud.state())

        # The provider of a compute node nova deleted with its service
        # (openstack compute service delete), placement's tree kept.
        gone = self.add_node('gone')
        self.placement._ok('PUT', '/resource_providers/%s/traits' % gone, {
            'resource_provider_generation': self.placement._ok(
                'GET', '/resource_providers/%s' % gone).json()['generation'],
            'traits': ['COMPUTE_NODE']})
        for table in ('compute_nodes', 'services'):
            self.nova.execute('cell1', "UPDATE %s SET deleted = id WHERE "
                              "host = 'gone'" % table)
        rows = self.openstack(cloud, 'resource', 'provider', 'orphan',
                              'list', rc=ORPHANS_FOUND)
        self.assertEqual([gone], [r['uuid'] for r in rows])
        rows = self.openstack(cloud, 'resource', 'provider', 'orphan',
                              'clean', '--journal',
                              os.path.join(self.tmp, 'rp.jsonl'),
                              rc=REPAIRED)
        self.assertEqual([(gone, 'done')],
                         [(r['uuid'], r['outcome']) for r in rows])
        self.assertEqual(404, self.placement.request(
            'GET', '/resource_providers/%s' % gone).status_code)
        self.assertEqual(0, self.requests_seen()[keystone.REGION_TWO])

    def test_os_variables_region_two(self):
        rows = self.openstack(self.os_variables(keystone.REGION_TWO),
                              'allocation', 'orphan', 'list',
                              rc=ORPHANS_FOUND)
        self.assertEqual(self.orphans, self.consumers(rows))
        self.assertEqual(0, self.requests_seen()[keystone.REGION_ONE])
        self.assertNotEqual(0, self.requests_seen()[keystone.REGION_TWO])
