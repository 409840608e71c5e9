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
"""Endpoints that answer, but not as placement or nova would.

A small HTTP server on loopback answers as the misconfigured endpoints
operators meet do: a 404 at a wrong path, another service's 401, a web
server's page, a load balancer's 503 page, a redirect. Each must give
one line naming the URL and what was expected, through the real
clients (and through both console scripts: the functional suite's
test_endpoint_diagnostics).
"""

import http.server
import json
import os
import socket
import threading

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslotest import base

from nova_orphans.clients import compute
from nova_orphans.clients import placement
from nova_orphans import exception

PLACEMENT_VERSIONS = {'versions': [{
    'id': 'v1.0', 'max_version': '1.39', 'min_version': '1.0',
    'status': 'CURRENT'}]}
NGINX = (b'<!DOCTYPE html>\n<html>\n<head>\n<title>Welcome to nginx!'
         b'</title>\n</head>\n<body><h1>Welcome to nginx!</h1></body>\n'
         b'</html>\n')
HAPROXY_503 = (b'<html><body><h1>503 Service Unavailable</h1>\nNo server '
               b'is available to handle this request.\n</body></html>\n')
KEYSTONE_401 = {'error': {'code': 401, 'title': 'Unauthorized',
                          'message': 'The request you have made requires '
                                     'authentication.'}}


def _json(status, doc):
    return status, {'Content-Type': 'application/json'}, \
        json.dumps(doc).encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = self.path.split('?')[0]
        route = self.server.routes.get(path)
        if route is None:
            route = 404, {'Content-Type': 'text/plain'}, b'404 page not found'
        status, headers, body = route
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value.replace('{base}', self.server.base))
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


class LoopbackServer(fixtures.Fixture):
    """Answers each path with a canned (status, headers, body)."""

    def _setUp(self):
        server = _Server(('127.0.0.1', 0), _Handler)
        server.base = 'http://127.0.0.1:%d' % server.server_port
        server.routes = {
            # A working placement, for the compute API's cases.
            '/placement/': _json(200, PLACEMENT_VERSIONS),
            '/placement/resource_providers': _json(
                200, {'resource_providers': []}),
            # The owner traits providers carry (none).
            '/placement/traits': _json(200, {'traits': []}),
            '/wrong/': (404, {'Content-Type': 'text/plain'},
                        b'404 page not found'),
            '/identity/': _json(401, KEYSTONE_401),
            '/www/': (200, {'Content-Type': 'text/html'}, NGINX),
            '/lb/': (503, {'Content-Type': 'text/html'}, HAPROXY_503),
            '/moved/': (301, {'Location': '{base}/placement/'}, b''),
            '/other/': _json(200, {'status': 'ok'}),
            '/compute/v2.1/': _json(200, {'version': {
                'id': 'v2.1', 'version': '2.96', 'min_version': '2.1',
                'status': 'CURRENT'}}),
            '/compute-moved/v2.1/': (
                302, {'Location': '{base}/compute/v2.1/'}, b''),
            '/compute-is-placement/v2.1/': _json(200, PLACEMENT_VERSIONS),
        }
        self.base = server.base
        self.routes = server.routes
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(thread.join)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)

    def url(self, path):
        return self.base + path


def refused_url():
    """A loopback URL nothing listens on."""
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return 'http://127.0.0.1:%d/placement' % port


# (path, exception class, the one line) for placement's version document.
PLACEMENT_CASES = [
    ('/wrong', exception.WrongEndpoint,
     'Placement at {base}/wrong/ answered 404 Not Found with "404 page not '
     'found", not placement\'s version document: is the path of the '
     'endpoint right?'),
    ('/identity', exception.WrongEndpoint,
     'Placement at {base}/identity/ answered 401 Unauthorized, not '
     'placement\'s version document: the version document needs no '
     'authentication, so another service or a proxy answers at this '
     'address'),
    ('/www', exception.WrongEndpoint,
     'Placement at {base}/www/ answered 200 OK with an HTML page ("Welcome '
     'to nginx!"), not placement\'s version document: a web server answers '
     'at this address, not the service'),
    ('/lb', exception.EndpointUnavailable,
     'Placement at {base}/lb/ answered 503 Service Unavailable with an HTML '
     'page ("503 Service Unavailable"), not placement\'s version document: '
     'is the service running behind this address (a load balancer or proxy '
     'may answer for it)?'),
    ('/moved', exception.WrongEndpoint,
     'Placement at {base}/moved/ answered 301 Moved Permanently to '
     '{base}/placement/, not placement\'s version document: set the '
     'endpoint to the address it redirects to (nova-orphans does not follow '
     'redirects)'),
    ('/other', exception.WrongEndpoint,
     'Placement at {base}/other/ answered 200 OK with other JSON, not '
     'placement\'s version document: is this the service\'s endpoint?'),
]

COMPUTE_CASES = [
    ('/wrong', exception.WrongEndpoint,
     'The compute API at {base}/wrong/ answered 404 Not Found with "404 page '
     'not found", not the compute API\'s version document: is the path of '
     'the endpoint right?'),
    ('/identity', exception.WrongEndpoint,
     'The compute API at {base}/identity/ answered 401 Unauthorized, not the '
     'compute API\'s version document: the version document needs no '
     'authentication, so another service or a proxy answers at this '
     'address'),
    ('/www', exception.WrongEndpoint,
     'The compute API at {base}/www/ answered 200 OK with an HTML page '
     '("Welcome to nginx!"), not the compute API\'s version document: a web '
     'server answers at this address, not the service'),
    ('/lb', exception.EndpointUnavailable,
     'The compute API at {base}/lb/ answered 503 Service Unavailable with an '
     'HTML page ("503 Service Unavailable"), not the compute API\'s version '
     'document: is the service running behind this address (a load '
     'balancer or proxy may answer for it)?'),
    ('/compute-moved/v2.1', exception.WrongEndpoint,
     'The compute API at {base}/compute-moved/v2.1/ answered 302 Found to '
     '{base}/compute/v2.1/, not the compute API\'s version document: set the '
     'endpoint to the address it redirects to (nova-orphans does not follow '
     'redirects)'),
    ('/compute-is-placement/v2.1', exception.WrongEndpoint,
     'The compute API at {base}/compute-is-placement/v2.1/ answered 200 OK '
     'with other JSON, not the compute API\'s version document: it is '
     'placement\'s; with admin_token auth, set compute_endpoint_override'),
]


def _adapter(endpoint, service_type):
    session = ks_session.Session(
        auth=token_endpoint.Token(endpoint, 'admin'))
    return ks_adapter.Adapter(session, service_type=service_type)


class LoopbackTestCase(base.BaseTestCase):
    """A loopback server answering as misconfigured endpoints do."""

    def setUp(self):
        super().setUp()
        for name in [k for k in os.environ
                     if k.lower().endswith('_proxy') or
                     (k.startswith('OS_') and not k.endswith('_CAPTURE') and
                      k != 'OS_TEST_TIMEOUT')]:
            self.useFixture(fixtures.EnvironmentVariable(name))
        self.server = self.useFixture(LoopbackServer())

    def line(self, template):
        return template.format(base=self.server.base)


class ClientDiagnosticsTestCase(LoopbackTestCase):
    """Through the real clients, over keystoneauth."""

    def test_placement_version_document(self):
        for path, error, line in PLACEMENT_CASES:
            client = placement.PlacementClient(
                _adapter(self.server.url(path), 'placement'))
            e = self.assertRaises(error, lambda: client.version)
            self.assertEqual(self.line(line), str(e))

    def test_placement_that_works(self):
        client = placement.PlacementClient(
            _adapter(self.server.url('/placement'), 'placement'))
        self.assertEqual((1, 39), client.version)

    def test_compute_version_document(self):
        for path, error, line in COMPUTE_CASES:
            client = compute.ComputeClient(
                _adapter(self.server.url(path), 'compute'))
            e = self.assertRaises(error, client.check_version)
            self.assertEqual(self.line(line), str(e))

    def test_compute_that_works(self):
        client = compute.ComputeClient(
            _adapter(self.server.url('/compute/v2.1'), 'compute'))
        client.check_version()

    def test_connection_refused(self):
        """A client on openstack's session names the cloud's settings
        (from nova.conf, it names [placement]: the functional suite's
        test_endpoint_diagnostics).
        """
        url = refused_url()
        client = placement.PlacementClient(_adapter(url, 'placement'))
        e = self.assertRaises(exception.PlacementError, lambda: client.version)
        self.assertEqual('Placement request GET / failed: cannot connect to '
                         '%s ([Errno 111] Connection refused); check that '
                         'placement runs there, and the cloud\'s settings '
                         '(clouds.yaml or the OS_* variables: auth_url, '
                         'region_name, interface, '
                         'placement_endpoint_override)' % url, str(e))
        self.assertEqual(8, e.exit_code)

    def test_compute_connection_refused(self):
        """The endpoint's own document is asked for as '': shown as /."""
        url = refused_url()
        client = compute.ComputeClient(_adapter(url, 'compute'))
        e = self.assertRaises(compute.ComputeError, client.check_version)
        self.assertEqual('Compute request GET / failed: cannot connect to '
                         '%s ([Errno 111] Connection refused)' % url, str(e))
        self.assertEqual(10, e.exit_code)

    def test_html_error_page_later_in_the_run(self):
        # Negotiated, then a proxy's error page for a listing: named in
        # one line.
        self.server.routes['/placement/resource_providers'] = (
            502, {'Content-Type': 'text/html'},
            b'<html>\n<head><title>502 Bad Gateway</title></head>\n<body>'
            b'\n<center><h1>502 Bad Gateway</h1></center>\n</body>\n</html>')
        client = placement.PlacementClient(
            _adapter(self.server.url('/placement'), 'placement'))
        e = self.assertRaises(exception.PlacementError, client.get,
                              '/resource_providers')
        self.assertEqual('Placement request GET /resource_providers failed: '
                         '502 an HTML page ("502 Bad Gateway")', str(e))

    def test_compute_html_error_page_later_in_the_run(self):
        self.server.routes['/compute/v2.1/os-services'] = (
            502, {'Content-Type': 'text/html'},
            b'<html><head><title>502 Bad Gateway</title></head></html>')
        client = compute.ComputeClient(
            _adapter(self.server.url('/compute/v2.1'), 'compute'))
        client.check_version()
        e = self.assertRaises(compute.ComputeError, client.get,
                              '/os-services')
        self.assertEqual('Compute request GET /os-services failed: 502 an '
                         'HTML page ("502 Bad Gateway")', str(e))
