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
"""PlacementClient over keystoneauth: its connections, headers and faults.

A small HTTP/1.1 server on loopback stands in for placement, so the
connections, headers and failures are real.
"""

import concurrent.futures
import http.server
import json
import os
import threading

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslo_config import cfg
from oslotest import base
import requests_mock

from nova_orphans.clients import placement
from nova_orphans.clients import retry
from nova_orphans.conf import orphans as orphans_conf
from nova_orphans.conf import placement as placement_conf
from nova_orphans import exception

# GETs that wait until this many are in flight at once.
AT_ONCE = 16


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
        if self.path.startswith('/at-once/'):
            server.at_once.wait()
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


class _Renewed(token_endpoint.Token):
    """A token keystone can renew: ``renewed`` after a 401."""

    def invalidate(self):
        self.token = 'renewed'
        return True


class PlacementClientTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        for name in ('http_proxy', 'https_proxy', 'no_proxy', 'HTTP_PROXY',
                     'HTTPS_PROXY', 'NO_PROXY', 'all_proxy', 'ALL_PROXY'):
            self.useFixture(fixtures.EnvironmentVariable(name))
        server = _Server(('127.0.0.1', 0), _Handler)
        server.lock = threading.Lock()
        server.seen = []
        server.faults = {}
        server.at_once = threading.Barrier(AT_ONCE, timeout=30)
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
        self.client.version    # negotiated before the reads

    def seen(self):
        with self.server.lock:
            return [(path, port) for path, port, _h in self.server.seen
                    if path != '/']

    def from_conf(self, concurrency):
        """A client from nova.conf's options, as nova-orphans-manage's."""
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as f:
            f.write('[nova_orphans]\nplacement_concurrency = %d\n'
                    '[placement]\nauth_type = admin_token\n'
                    'endpoint = %s\ntoken = admin\n' % (
                        concurrency, self.endpoint))
        conf = cfg.ConfigOpts()
        orphans_conf.register_opts(conf)
        placement_conf.register_opts(conf)
        conf(['--config-file', path], project='nova')
        return placement.PlacementClient.from_conf(conf)

    def test_one_connection_reused(self):
        docs = [self.client.get('/rp/%d' % i) for i in range(5)]
        self.assertEqual([{'path': '/rp/%d' % i} for i in range(5)], docs)
        ports = {port for _path, port in self.seen()}
        self.assertEqual(1, len(ports))
        headers = self.server.seen[-1][2]
        self.assertEqual('admin', headers['X-Auth-Token'])
        self.assertEqual('placement 1.39', headers['OpenStack-API-Version'])

    def test_version_per_request(self):
        self.assertEqual({'path': '/rp/x'},
                         self.client.get('/rp/x', version=(1, 28)))
        self.assertEqual('placement 1.28', self.server.seen[-1][2][
            'OpenStack-API-Version'])

    def test_as_many_connections_kept_as_requests_at_once(self):
        """Each of placement_concurrency's threads keeps its connection
        from one bulk read to the next: requests' own pool would drop
        all but 10 of them after each.
        """
        client = self.from_conf(AT_ONCE)

        def read(i):
            return client.get('/at-once/%d' % i)

        rounds = []
        with concurrent.futures.ThreadPoolExecutor(AT_ONCE) as pool:
            for _round in range(2):
                before = len(self.seen())
                self.assertEqual(
                    [{'path': '/at-once/%d' % i} for i in range(AT_ONCE)],
                    list(pool.map(read, range(AT_ONCE))))
                rounds.append({port for _path, port in
                               self.seen()[before:]})
        self.assertEqual(AT_ONCE, len(rounds[0]))
        self.assertEqual(rounds[0], rounds[1])

    def test_dropped_connection_is_retried(self):
        client = placement.PlacementClient(retry.RetryingAdapter(
            self.adapter, retry.Retries(sleep=lambda seconds: None)))
        self.server.faults['/rp/1'] = 'drop'
        self.assertEqual({'path': '/rp/1'}, client.get('/rp/1'))
        self.assertEqual({'path': '/rp/2'}, client.get('/rp/2'))
        self.assertEqual(['/rp/1', '/rp/1', '/rp/2'],
                         [path for path, _port in self.seen()])
        self.assertEqual({('placement', 'connection'): 1},
                         dict(client.retries.counts))

    def test_connection_closed_by_the_server(self):
        client = placement.PlacementClient(retry.RetryingAdapter(
            self.adapter, retry.Retries(sleep=lambda seconds: None)))
        self.server.faults['/rp/1'] = 'close after'
        for i in range(1, 4):
            self.assertEqual({'path': '/rp/%d' % i},
                             client.get('/rp/%d' % i))
        paths = [path for path, _port in self.seen()]
        # /rp/2 met the closed connection, at most once more.
        self.assertIn(paths, (['/rp/1', '/rp/2', '/rp/3'],
                              ['/rp/1', '/rp/2', '/rp/2', '/rp/3']))

    def test_server_error(self):
        self.server.faults['/rp/1'] = 503
        e = self.assertRaises(exception.PlacementError, self.client.get,
                              '/rp/1')
        self.assertEqual('Placement request GET /rp/1 failed: 503 injected',
                         str(e))
        self.assertEqual((503, '503', 8), (e.status_code, e.transient,
                                           e.exit_code))
        # Not sent again: the adapter retries nothing.
        self.assertEqual(1, len(self.seen()))

    def test_unauthorized_is_authenticated_again(self):
        """keystoneauth renews the token after a 401 and sends the GET
        again, as it would for any of its clients.
        """
        client = placement.PlacementClient(ks_adapter.Adapter(
            ks_session.Session(auth=_Renewed(self.endpoint, 'expired')),
            service_type='placement'))
        self.server.faults['/rp/1'] = 401
        self.assertEqual({'path': '/rp/1'}, client.get('/rp/1'))
        self.assertEqual(['/rp/1', '/rp/1'],
                         [path for path, _port in self.seen()])
        self.assertEqual('renewed', self.server.seen[-1][2]['X-Auth-Token'])

    def test_refused_credentials(self):
        self.server.faults['/rp/1'] = 403
        e = self.assertRaises(exception.PlacementError, self.client.get,
                              '/rp/1')
        self.assertEqual((403, None, 9), (e.status_code, e.transient,
                                          e.exit_code))

    def test_expected_statuses(self):
        self.server.faults['/rp/1'] = 404
        self.assertEqual({'errors': [{'status': 404, 'title': 'Fault',
                                      'detail': 'injected'}]},
                         self.client.get('/rp/1', expected=(200, 404)))

    def test_mocked_transport_is_respected(self):
        """As by any keystoneauth client, with the connections kept."""
        client = self.from_conf(AT_ONCE)
        client.version
        with requests_mock.Mocker() as mocker:
            mocker.get(self.endpoint + '/rp/1', json={'mocked': True})
            self.assertEqual({'mocked': True}, client.get('/rp/1'))
        self.assertEqual([], self.seen())

    def test_intercepted_transport_is_respected(self):
        import wsgi_intercept
        from wsgi_intercept import requests_intercept

        def app(environ, start_response):
            path = environ['PATH_INFO']
            start_response('200 OK', [('Content-Type', 'application/json')])
            return [json.dumps({'versions': [{'max_version': '1.39'}]}
                               if path == '/' else
                               {'intercepted': path}).encode()]

        requests_intercept.install()
        self.addCleanup(requests_intercept.uninstall)
        wsgi_intercept.add_wsgi_intercept(
            '127.0.0.1', self.server.server_port, lambda: app)
        self.addCleanup(wsgi_intercept.remove_wsgi_intercept, '127.0.0.1',
                        self.server.server_port)
        before = len(self.server.seen)
        client = self.from_conf(AT_ONCE)
        self.assertEqual({'intercepted': '/rp/1'}, client.get('/rp/1'))
        self.assertEqual(before, len(self.server.seen))
