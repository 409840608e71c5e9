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
"""Run ``openstack`` in-process against the scenario harness.

``openstack`` (python-openstackclient's shell, with this plugin and
osc-placement both loaded) reaches placement through keystoneauth's
``admin_token`` plugin and nova's API through
``compute_endpoint_override`` and a small WSGI front that turns the token
into the identity headers nova's API fixture expects, and the network API
(read-only: ports) through ``network_endpoint_override`` and a front on
the test's ``NeutronFixture``, the same fake neutron nova talks to;
Zun's container API, when a test serves it (serve_zun), through
``container_endpoint_override`` and tests/zun_front.py.
"""

import json
import os

import fixtures
from wsgi_intercept import interceptor

from nova.tests import fixtures as nova_fixtures

from nova_orphans.engine import reasons
from nova_orphans import outcomes as outcomes_mod
from nova_orphans.repair import actions
from nova_orphans.tests import network_front
from nova_orphans.tests import runners
from nova_orphans.tests.scenario.base import uuids
from nova_orphans.tests import zun_front

CLOUD = 'nova-orphans-scenario'


class ComputeFront:
    """Maps ``X-Auth-Token: admin`` onto the headers nova's fixture reads.

    ``max_version`` replaces the microversion the version document
    advertises, to play an older cloud.
    """

    def __init__(self, app, project_id):
        self.app = app
        self.project_id = project_id
        self.max_version = None

    def __call__(self, environ, start_response):
        if environ.get('HTTP_X_AUTH_TOKEN') == 'admin':
            environ['HTTP_X_AUTH_USER'] = 'admin'
            environ['HTTP_X_AUTH_PROJECT_ID'] = self.project_id
            environ['HTTP_X_ROLES'] = 'reader,member,admin'
        if self.max_version and environ['PATH_INFO'].rstrip('/') == '/v2.1':
            body = json.dumps({'version': {
                'id': 'v2.1', 'status': 'CURRENT',
                'version': self.max_version, 'min_version': '2.1',
                'links': []}}).encode()
            start_response('200 OK', [('Content-Type', 'application/json')])
            return [body]
        return self.app(environ, start_response)


class OpenStackClientMixin:
    """``openstack`` runs for a ScenarioTestCase; call setup_openstack()."""

    def setup_openstack(self):
        host = uuids.osc_compute_front
        self.front = ComputeFront(self.api_fixture.app(),
                                  nova_fixtures.PROJECT_ID)
        intercept = interceptor.RequestsInterceptor(
            lambda: self.front, url='http://%s/' % host)
        intercept.install_intercept()
        self.addCleanup(intercept.uninstall_intercept)
        self.compute_endpoint = 'http://%s/v2.1' % host
        network = uuids.osc_network_front
        self.network_endpoint = 'http://%s/' % network
        self.network_front = network_front.NetworkFront(
            lambda: self.neutron, self.network_endpoint)
        intercept = interceptor.RequestsInterceptor(
            lambda: self.network_front, url=self.network_endpoint)
        intercept.install_intercept()
        self.addCleanup(intercept.uninstall_intercept)
        # nova's API logs a stevedore warning (oslo.cache's memcache
        # backend) the first time a request reaches the cell worker pool;
        # take it here, before osc's handler would print it to stderr.
        self.admin_api.api_get('/os-services')
        self.clouds_yaml = self._write_clouds_yaml()

    def serve_zun(self):
        """Zun's container API (``self.zun_front``, a ZunFront), in the
        catalog from now on: the cloud has Zun.
        """
        self.zun_front = zun_front.ZunFront(self.placement_fixture.token)
        endpoint = 'http://%s/' % uuids.osc_zun_front
        intercept = interceptor.RequestsInterceptor(
            lambda: self.zun_front, url=endpoint)
        intercept.install_intercept()
        self.addCleanup(intercept.uninstall_intercept)
        self.clouds_yaml = self._write_clouds_yaml(
            container_endpoint_override=endpoint + 'v1')

    def _write_clouds_yaml(self, **more):
        cloud = {
            'auth_type': 'admin_token',
            'auth': {'endpoint': self.placement_endpoint,
                     'token': self.placement_fixture.token},
            'compute_endpoint_override': self.compute_endpoint,
            'network_endpoint_override': self.network_endpoint,
        }
        cloud.update(more)
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'clouds.yaml')
        with open(path, 'w') as f:
            # JSON is YAML.
            json.dump({'clouds': {CLOUD: cloud}}, f)
        return path

    def openstack_environment(self):
        """{name: value or None (unset)} of the environment ``openstack``
        runs in: no inherited ``OS_*``, the test's clouds.yaml.

        A test that runs ``openstack`` in a thread while its own thread
        uses nova's API sets these for its whole run first: ``openstack``
        then changes nothing in ``os.environ`` (``requests`` iterates it
        on every request, and a name deleted meanwhile is a KeyError).
        """
        env = {k: None for k in os.environ if k.startswith('OS_') and
               k != 'OS_NOVA_DISABLE_EVENTLET_PATCHING'}
        env.update(OS_CLIENT_CONFIG_FILE=self.clouds_yaml, OS_CLOUD=None)
        return env

    def openstack(self, *argv):
        """Run ``openstack --os-cloud CLOUD argv`` in this process
        (runners.openstack_shell); returns (rc, out, err).
        """
        return runners.openstack_shell(['--os-cloud', CLOUD] + list(argv),
                                       self.openstack_environment())

    def osc_json(self, *argv):
        """``openstack ARGV -f json``, parsed; its exit code checked
        against its rows (see expected_code).
        """
        rc, out, err = self.openstack(*(argv + ('-f', 'json')))
        rows = json.loads(out)
        self.assertEqual(expected_code(argv, rows, err), rc, err)
        return rows


# The texts of the outcomes that leave no orphan of their row.
RESOLVED = {str(o) for o in [outcomes_mod.done(), actions.gone(),
                             actions.other_writer()] + [
    actions.no_longer(action, now) for action in reasons.ACTIONS
    for now in reasons.REASONS + reasons.ACTIONS] if o.resolved}


def expected_code(argv, rows, err):
    """The exit code (nova_orphans.exit_codes) that the rows of
    ``openstack ARGV`` call for: the same table as nova-orphans-manage's.
    """
    outcomes = [r['outcome'] for r in rows if 'outcome' in r]
    # "failed: <why>": the kind, as the JSON output documents it.
    if any(o.partition(':')[0] == 'failed' for o in outcomes):
        return 1
    if 'restore' in argv:
        return (4 if 'done' in outcomes else
                3 if 'skipped: dry run' in outcomes else 0)
    if 'clean' in argv:
        code = (3 if not all(o in RESOLVED for o in outcomes) else
                4 if 'done' in outcomes else 0)
    elif 'orphan' in argv and 'list' in argv:
        code = 3 if any(r['action'] != 'none' for r in rows) else 0
    else:
        return 0
    # What was not read is said before the rows (a cell, neutron, Zun).
    if 'WARNING: ' in err:
        return 5 if code in (3, 4) else 2
    return code
