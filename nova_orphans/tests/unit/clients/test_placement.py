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
"""PlacementClient.bulk_reads: kept-alive GETs that behave as keystoneauth's.

A small HTTP/1.1 server on loopback stands in for placement, so the
connections, headers and failures are real.
"""

import http.server
import json
import threading

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslotest import base
import requests_mock

from nova_orphans.clients import placement
from nova_orphans.clients import retry
from nova_orphans import exception
from nova_orphans.tests.unit import fakes


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server = None

    def log_message(self, *args):
        pass

    def do_GET(self):
        server = self.server
        with server.lock:
            server.seen.append((self.path, self.client_address[1],
                                dict(self.headers)))
            fault = server.faults.pop(self.path, None)
        if fault == 'drop':
            self.close_connection = True
            return
        if self.path == '/':
            status, body = 200, {'versions': [
                {'id': 'v1.0', 'max_version': '1.39', 'min_version': '1.0'}]}
        elif isinstance(fault, int):
            status, body = fault, {'errors': [{
                'status': fault, 'title': 'Fault', 'detail': 'injected'}]}
        else:
            status, body = 200, {'path': self.path}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        if fault == 'close after':
            # Closed without saying so: the client finds out on its
            # next request on this connection.
            self.close_connection = True


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


class BulkReadsTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        for name in ('http_proxy', 'https_proxy', 'no_proxy', 'HTTP_PROXY',
                     'HTTPS_PROXY', 'NO_PROXY', 'all_proxy', 'ALL_PROXY'):
            self.useFixture(fixtures.EnvironmentVariable(name))
        server = _Server(('127.0.0.1', 0), _Handler)
        server.lock = threading.Lock()
        server.seen = []
        server.faults = {}
        thread = threading.Thread(target=server.serve_forever,
                                  kwargs={'poll_interval': 0.05},
                                  daemon=True)
        thread.start()
        self.addCleanup(thread.join)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.server = server
        self.endpoint = 'http://127.0.0.1:%d' % server.server_port
        self.session = ks_session.Session(
            auth=token_endpoint.Token(self.endpoint, 'admin'))
        self.adapter = ks_adapter.Adapter(self.session,
                                          service_type='placement')
        self.client = placement.PlacementClient(self.adapter)
        self.client.version    # negotiated before the bulk reads

    def seen(self):
        with self.server.lock:
            return [(path, port) for path, port, _h in self.server.seen
                    if path != '/']

    def test_one_connection_reused(self):
        with self.client.bulk_reads() as bulk:
            self.assertIsInstance(bulk, placement.LeanGets)
            docs = [bulk.get('/rp/%d' % i) for i in range(5)]
        self.assertEqual([{'path': '/rp/%d' % i} for i in range(5)], docs)
        ports = {port for _path, port in self.seen()}
        self.assertEqual(1, len(ports))
        headers = self.server.seen[-1][2]
        self.assertEqual('admin', headers['X-Auth-Token'])
        self.assertEqual('placement 1.39', headers['OpenStack-API-Version'])
        self.assertEqual('application/json', headers['Accept'])

    def test_same_documents_as_keystoneauth(self):
        with self.client.bulk_reads() as bulk:
            lean = bulk.get('/rp/x', version=(1, 28))
        self.assertEqual(self.client.get('/rp/x', version=(1, 28)), lean)
        self.assertEqual('placement 1.28', self.server.seen[-2][2][
            'OpenStack-API-Version'])

    def test_dropped_connection_is_retried_once(self):
        self.server.faults['/rp/1'] = 'drop'
        with self.client.bulk_reads() as bulk:
            self.assertEqual({'path': '/rp/1'}, bulk.get('/rp/1'))
            self.assertEqual({'path': '/rp/2'}, bulk.get('/rp/2'))
        self.assertEqual(['/rp/1', '/rp/1', '/rp/2'],
                         [path for path, _port in self.seen()])

    def test_connection_closed_by_the_server(self):
        self.server.faults['/rp/1'] = 'close after'
        with self.client.bulk_reads() as bulk:
            for i in range(1, 4):
                self.assertEqual({'path': '/rp/%d' % i},
                                 bulk.get('/rp/%d' % i))
        paths = [path for path, _port in self.seen()]
        # /rp/2 met the closed connection, at most once more.
        self.assertIn(paths, (['/rp/1', '/rp/2', '/rp/3'],
                              ['/rp/1', '/rp/2', '/rp/2', '/rp/3']))

    def test_server_error_as_through_keystoneauth(self):
        self.server.faults['/rp/1'] = 503
        with self.client.bulk_reads() as bulk:
            lean = self.assertRaises(exception.PlacementError, bulk.get,
                                     '/rp/1')
        self.server.faults['/rp/1'] = 503
        ksa = self.assertRaises(exception.PlacementError, self.client.get,
                                '/rp/1')
        self.assertEqual(str(ksa), str(lean))
        self.assertEqual(503, lean.status_code)
        # Not sent again: the error is placement's answer.
        self.assertEqual(2, len(self.seen()))

    def test_unauthorized_goes_through_keystoneauth(self):
        self.server.faults['/rp/1'] = 401
        with self.client.bulk_reads() as bulk:
            self.assertEqual({'path': '/rp/1'}, bulk.get('/rp/1'))
        self.assertEqual(['/rp/1', '/rp/1'],
                         [path for path, _port in self.seen()])

    def test_expected_statuses(self):
        self.server.faults['/rp/1'] = 404
        with self.client.bulk_reads() as bulk:
            self.assertEqual({'errors': [{'status': 404, 'title': 'Fault',
                                          'detail': 'injected'}]},
                             bulk.get('/rp/1', expected=(200, 404)))

    def test_connections_closed_on_exit(self):
        with self.client.bulk_reads() as bulk:
            bulk.get('/rp/1')
            conns = list(bulk._conns)
        self.assertEqual(1, len(conns))
        self.assertIsNone(conns[0].sock)

    def test_through_a_proxy_keystoneauth_is_used(self):
        self.useFixture(fixtures.EnvironmentVariable(
            'http_proxy', 'http://proxy.invalid:3128'))
        self.assertIsNone(placement.lean_target(self.adapter))

    def test_no_proxy_for_the_endpoint(self):
        self.useFixture(fixtures.EnvironmentVariable(
            'http_proxy', 'http://proxy.invalid:3128'))
        self.useFixture(fixtures.EnvironmentVariable('no_proxy',
                                                     '127.0.0.1'))
        self.assertIsNotNone(placement.lean_target(self.adapter))

    def test_mocked_transport_is_respected(self):
        with requests_mock.Mocker() as mocker:
            mocker.get(self.endpoint + '/rp/1', json={'mocked': True})
            with self.client.bulk_reads() as bulk:
                self.assertIs(self.client, bulk)
                self.assertEqual({'mocked': True}, bulk.get('/rp/1'))

    def test_intercepted_transport_is_respected(self):
        from wsgi_intercept import requests_intercept
        requests_intercept.install()
        self.addCleanup(requests_intercept.uninstall)
        self.assertIsNone(placement.lean_target(self.adapter))

    def test_retrying_adapter(self):
        self.assertIsNotNone(placement.lean_target(retry.RetryingAdapter(
            self.adapter, retry.Retries())))

    def test_other_adapters(self):
        client = placement.PlacementClient(fakes.FakeAdapter())
        with client.bulk_reads() as bulk:
            self.assertIs(client, bulk)

    def test_https_settings(self):
        target = placement.lean_target(ks_adapter.Adapter(
            ks_session.Session(auth=token_endpoint.Token(
                'https://placement.example:8778/placement', 'admin'),
                verify=False, timeout=7),
            service_type='placement'))
        self.assertTrue(target.https)
        self.assertEqual(('placement.example', 8778, '/placement', 7),
                         (target.host, target.port, target.base,
                          target.timeout))
        self.assertFalse(target.context.check_hostname)
        target = placement.lean_target(ks_adapter.Adapter(
            ks_session.Session(auth=token_endpoint.Token(
                'https://placement.example/', 'admin')),
            service_type='placement'))
        self.assertTrue(target.context.check_hostname)
        self.assertEqual(('placement.example', 443, ''),
                         (target.host, target.port, target.base))

    def test_ipv6_endpoint(self):
        target = placement.lean_target(ks_adapter.Adapter(
            ks_session.Session(auth=token_endpoint.Token(
                'http://[::1]/placement', 'admin')),
            service_type='placement'))
        conn = target.connect()
        self.assertEqual(('::1', 80), (conn.host, conn.port))
