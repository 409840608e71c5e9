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
"""neutron's port API, read-only, for the tests of both front ends.

The scenario tests serve it (wsgi-intercept) on nova's ``NeutronFixture``,
the same fake neutron nova talks to; the functional tests on 127.0.0.1,
on a ``Ports`` of their own. Imports nothing of nova.
"""

import copy
import http
import json
import re
import urllib.parse


class NetworkFront:
    """neutron's port API, read-only, served from a ``NeutronFixture``.

    ``fixture()`` returns the test's current fixture (tests swap in
    nova's resource-request variants). Answers the version documents,
    ``GET [/v2.0]/ports[?filters]`` and ``GET [/v2.0]/ports/<id>`` as an
    admin would see them; anything else is 404. ``down = True``: every
    request gets a 503, as from a network API that is down.
    """

    down = False

    _PORTS = re.compile(r'^(?:/v2\.0)?/ports(?:\.json)?(?:/(?P<id>[^/]+))?/?$')

    def __init__(self, fixture, url):
        self.fixture = fixture
        self.url = url.rstrip('/')

    def __call__(self, environ, start_response):
        path = environ['PATH_INFO']
        if self.down:
            return self._reply(start_response, 503, {'error': 'down'})
        if environ.get('HTTP_X_AUTH_TOKEN') != 'admin':
            return self._reply(start_response, 401, {'error': 'no token'})
        if path.rstrip('/') in ('', '/v2.0'):
            version = {'id': 'v2.0', 'status': 'CURRENT', 'links': [
                {'href': self.url + '/v2.0/', 'rel': 'self'}]}
            if path.rstrip('/') == '':
                return self._reply(start_response, 200,
                                   {'versions': [version]})
            return self._reply(start_response, 200, {'resources': []})
        match = self._PORTS.match(path)
        if match is None or environ['REQUEST_METHOD'] != 'GET':
            return self._reply(start_response, 404, {
                'NeutronError': {'type': 'HTTPNotFound', 'message': path}})
        neutron = self.fixture()
        if match.group('id'):
            if match.group('id') not in neutron._ports:
                return self._reply(start_response, 404, {'NeutronError': {
                    'type': 'PortNotFound', 'message': 'Port %s could not '
                    'be found.' % match.group('id')}})
            return self._reply(start_response, 200,
                               neutron.show_port(match.group('id')))
        filters = {}
        for key, value in urllib.parse.parse_qsl(
                environ.get('QUERY_STRING', '')):
            filters.setdefault(key, []).append(value)
        filters = {k: v[0] if len(v) == 1 else v for k, v in filters.items()}
        filters.pop('fields', None)
        return self._reply(start_response, 200,
                           neutron.list_ports(True, **filters))

    @staticmethod
    def _reply(start_response, status, body):
        start_response('%d %s' % (status, http.HTTPStatus(status).phrase),
                       [('Content-Type', 'application/json')])
        return [json.dumps(body).encode()]


class Ports:
    """A ``NeutronFixture``'s port listing, for tests without nova:
    ``ports`` {id: port}; ``list_ports`` filters as neutron does (a
    filter given several times matches any of its values).
    """

    def __init__(self):
        self._ports = {}

    def add(self, port_id, device_id, allocation=None):
        self._ports[port_id] = {
            'id': port_id, 'device_id': device_id,
            'binding:profile': ({} if allocation is None
                                else {'allocation': allocation})}

    def show_port(self, port_id):
        return {'port': copy.deepcopy(self._ports[port_id])}

    def list_ports(self, is_admin, **filters):
        def match(port):
            return all(port.get(key) in (
                value if isinstance(value, list) else [value])
                for key, value in filters.items())
        return {'ports': [copy.deepcopy(p) for p in self._ports.values()
                          if match(p)]}
