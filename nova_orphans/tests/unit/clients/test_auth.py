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
"""keystone's faults named as what they are, with their exit codes.

The functional tests (test_keystone.py) meet each of them against a real
keystone; these pin the mapping of every keystoneauth exception.
"""

import os
from unittest import mock

import fixtures
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from oslotest import base

from nova_orphans.clients import auth
from nova_orphans.clients import placement
from nova_orphans import exception

AUTH_URL = 'http://keystone.example:5000/v3'


def adapter(error=None, endpoint='http://placement.example/'):
    fake = mock.Mock(service_type='placement', interface=['internal'],
                     region_name='RegionTwo')
    fake.auth.auth_url = AUTH_URL
    if error is not None:
        fake.get_endpoint.side_effect = error
    else:
        fake.get_endpoint.return_value = endpoint
    return fake


class EndpointTestCase(base.BaseTestCase):

    def assertFault(self, error, cls, code, message):
        e = self.assertRaises(cls, auth.endpoint, adapter(error))
        self.assertEqual(code, e.exit_code)
        self.assertEqual(message, str(e))

    def test_found(self):
        self.assertEqual('http://placement.example/',
                         auth.endpoint(adapter()))

    def test_wrong_password(self):
        self.assertFault(
            ks_exc.Unauthorized('The request you have made requires '
                                'authentication.'),
            exception.CredentialsRefused, 9,
            'Keystone at %s refused the credentials: The request you have '
            'made requires authentication. (HTTP 401): check the user, its '
            'password, '
            'domains and project' % AUTH_URL)

    def test_unknown_region(self):
        self.assertFault(
            ks_exc.EndpointNotFound('not found'), exception.ConfigError, 7,
            'Configuration error: the catalog has no endpoint for service '
            'type placement, interface internal, region RegionTwo: check '
            'region_name and the interface (valid_interfaces) against it')

    def test_empty_catalog(self):
        self.assertFault(ks_exc.EmptyCatalog('empty'),
                         exception.ConfigError, 7,
                         'Configuration error: the catalog has no endpoint '
                         'for service type placement, interface internal, '
                         'region RegionTwo: check region_name and the '
                         'interface (valid_interfaces) against it')

    def test_keystone_down(self):
        cause = ConnectionRefusedError(111, 'Connection refused')
        error = ks_exc.ConnectFailure('Unable to establish connection')
        error.__cause__ = cause
        self.assertFault(error, exception.ServiceUnreachable, 8,
                         'Keystone could not be reached: cannot connect to '
                         '%s ([Errno 111] Connection refused)' % AUTH_URL)

    def test_discovery_failure(self):
        self.assertFault(ks_exc.DiscoveryFailure('Could not find versioned '
                                                 'identity endpoints'),
                         exception.ServiceUnreachable, 8,
                         'Keystone could not be reached: Could not find '
                         'versioned identity endpoints')

    def test_missing_options(self):
        e = self.assertRaises(exception.ConfigError, auth.endpoint,
                              adapter(ks_exc.MissingAuthPlugin('no auth')))
        self.assertEqual(7, e.exit_code)

    def test_no_endpoint(self):
        e = self.assertRaises(exception.ConfigError, auth.endpoint,
                              adapter(endpoint=None))
        self.assertIn('no endpoint for service type placement', str(e))

    def test_other_errors_pass(self):
        self.assertRaises(ks_exc.HttpError, auth.endpoint,
                          adapter(ks_exc.HttpError('teapot')))


class PlacementRefusalTestCase(base.BaseTestCase):

    def response(self, status):
        resp = mock.Mock(status_code=status, headers={
            'Content-Type': 'application/json'}, text='')
        resp.json.return_value = {'errors': [{
            'detail': 'Policy does not allow '
                      'placement:resource_providers:list to be performed.'}]}
        return resp

    def test_forbidden_names_the_policy_and_the_role(self):
        e = self.assertRaises(exception.PlacementError, placement._check,
                              'GET', '/resource_providers',
                              self.response(403), (200,))
        self.assertEqual(9, e.exit_code)
        self.assertEqual(
            'Placement request GET /resource_providers failed: 403: '
            'placement\'s policy refused placement:resource_providers:list '
            '(granted by default to the admin or service role, on a '
            'project)', str(e))

    def test_unauthorized_keeps_placement_words(self):
        e = self.assertRaises(exception.PlacementError, placement._check,
                              'GET', '/resource_providers',
                              self.response(401), (200,))
        self.assertEqual(9, e.exit_code)
        self.assertEqual(
            'Placement request GET /resource_providers failed: 401 Policy '
            'does not allow placement:resource_providers:list to be '
            'performed. (nova-orphans needs a user with the admin role, or '
            'placement\'s service role: it uses placement\'s admin APIs)',
            str(e))

    def test_server_error_is_unreachable(self):
        e = self.assertRaises(exception.PlacementError, placement._check,
                              'GET', '/', self.response(503), (200,))
        self.assertEqual(8, e.exit_code)


class EnvironmentTestCase(base.BaseTestCase):
    """requests looks at the environment on every request only when the
    environment holds something for it.
    """

    def setUp(self):
        super().setUp()
        self.home = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable('HOME', self.home))

    def test_nothing(self):
        self.assertTrue(auth.nothing_in_environment({'PATH': '/bin'}))

    def test_proxies_in_any_case(self):
        for name in ('http_proxy', 'HTTPS_PROXY', 'all_proxy', 'NO_PROXY'):
            self.assertFalse(auth.nothing_in_environment({name: 'x'}), name)

    def test_ca_bundles_and_netrc_variable(self):
        for name in ('REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'NETRC'):
            self.assertFalse(auth.nothing_in_environment({name: '/f'}), name)
        self.assertTrue(auth.nothing_in_environment({'NETRC': ''}))

    def test_netrc_file(self):
        with open(os.path.join(self.home, '.netrc'), 'w') as f:
            f.write('machine placement login a password b\n')
        self.assertFalse(auth.nothing_in_environment({}))

    def test_session_trusts_the_environment_only_when_needed(self):
        for environ, trusted in (({}, False), ({'https_proxy': 'x'}, True)):
            session = ks_session.Session()
            with mock.patch.dict(os.environ, environ, clear=True), \
                    fixtures.EnvironmentVariable('HOME', self.home):
                auth.trust_environment_only_if_needed(session)
            self.assertEqual(trusted, session.session.trust_env, environ)
