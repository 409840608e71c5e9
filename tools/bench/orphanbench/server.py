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
"""A small pre-fork WSGI server for openstack-placement, on loopback.

The parent binds one listening socket on 127.0.0.1, forks N worker
processes that each load placement's app and serve that socket, writes
``{"port": ..., "workers": [pids]}`` to ``--ready-file`` and waits.
SIGTERM stops everything. Workers are separate processes so placement
uses N cores, and their CPU time can be read from /proc/<pid>/stat.

It serves the way placement is deployed (uwsgi or mod_wsgi behind
apache, N processes): HTTP/1.1 with keep-alive, so a client's session
reuses its connections; each worker runs one request at a time (a
thread per connection waits its turn); and a worker that holds more
open connections than another leaves new ones to it, so a client's
connections are spread evenly over the workers for the whole run.

    python -m orphanbench.server --db sqlite:////tmp/p.sqlite \\
        --workers 2 --ready-file /tmp/ready.json

It counts the requests it serves, and among them the reads of a
provider's allocations (``GET /resource_providers/{uuid}/allocations``):
``GET /_orphanbench/requests`` answers ``{"requests": N, "allocation_reads":
M}`` so far, itself not counted.

With ``ORPHANBENCH_PROFILE_DIR`` set, each worker profiles the requests
it serves (cProfile, only while placement's app runs) and writes
``placement-<pid>.prof`` there when it is stopped: where placement's own
CPU goes, for any benchmark run.
"""

import argparse
import json
import multiprocessing.sharedctypes
import os
import signal
import socket
import socketserver
import sys
import threading
import time
from wsgiref import simple_server

# Request bodies left unread by the app up to this size are skipped so
# the connection can serve the next request; larger ones close it.
_MAX_DRAIN = 1 << 20
# What answers the counts of requests served (see the module docstring).
COUNTS_PATH = '/_orphanbench/requests'


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True
    request_queue_size = 256
    # Set per worker: its index and every worker's open connections.
    index = 0
    connections = None

    def get_request(self):
        """Accept, unless another worker holds fewer connections.

        The listening socket is non-blocking and shared: a worker that
        declines leaves the connection to the less busy one, which polls
        the same socket.
        """
        counts = self.connections
        if counts[self.index] > min(counts):
            time.sleep(0.001)
            raise BlockingIOError('left to a less busy worker')
        conn, addr = self.socket.accept()
        conn.setblocking(True)
        with self.count_lock:
            counts[self.index] += 1
        return conn, addr

    def shutdown_request(self, request):
        with self.count_lock:
            self.connections[self.index] -= 1
        super().shutdown_request(request)


class _Body:
    """wsgi.input limited to the request's Content-Length."""

    def __init__(self, rfile, length):
        self._rfile = rfile
        self.left = length

    def read(self, size=-1):
        return self._take(self._rfile.read, size)

    def readline(self, size=-1):
        return self._take(self._rfile.readline, size)

    def _take(self, read, size):
        if size is None or size < 0 or size > self.left:
            size = self.left
        data = read(size) if size else b''
        self.left -= len(data)
        return data

    def readlines(self, hint=-1):
        return list(iter(self.readline, b''))

    def __iter__(self):
        return iter(self.readline, b'')


class _ServerHandler(simple_server.ServerHandler):
    http_version = '1.1'

    def cleanup_headers(self):
        super().cleanup_headers()
        # Without a length the body ends when the connection does.
        if 'Content-Length' in self.headers or self.status[:3] in (
                '204', '304'):
            self.request_handler.keep_alive = True
        else:
            self.headers['Connection'] = 'close'

    def handle_error(self):
        self.request_handler.keep_alive = False
        super().handle_error()


class _Handler(simple_server.WSGIRequestHandler):
    protocol_version = 'HTTP/1.1'
    # wsgiref writes the headers and the body apart: with Nagle's
    # algorithm on, a kept-alive connection holds the body back until
    # the client's delayed ACK (40 ms).
    disable_nagle_algorithm = True
    # An idle keep-alive connection is closed after this many seconds.
    timeout = 120

    def log_message(self, *args):
        pass

    def handle(self):
        self.close_connection = True
        try:
            self._handle_one()
            while not self.close_connection:
                self._handle_one()
        except (TimeoutError, ConnectionError):
            self.close_connection = True

    def _handle_one(self):
        self.raw_requestline = self.rfile.readline(65537)
        if not self.raw_requestline:
            self.close_connection = True
            return
        if len(self.raw_requestline) > 65536:
            self.send_error(414)
            self.close_connection = True
            return
        if not self.parse_request():
            return
        if self.path == COUNTS_PATH:
            self._send_counts()
            return
        requests, reads = self.server.served
        with self.server.count_lock:
            requests[self.server.index] += 1
            if (self.command == 'GET' and
                    self.path.startswith('/resource_providers/') and
                    self.path.endswith('/allocations')):
                reads[self.server.index] += 1
        if 'chunked' in self.headers.get('Transfer-Encoding', '').lower():
            self.send_error(411)
            self.close_connection = True
            return
        body = _Body(self.rfile, int(self.headers.get('Content-Length') or 0))
        handler = _ServerHandler(body, self.wfile, self.get_stderr(),
                                 self.get_environ(), multithread=True)
        handler.request_handler = self
        self.keep_alive = False
        with self.server.app_lock:
            handler.run(self.server.get_app())
        if not self.keep_alive or body.left > _MAX_DRAIN:
            self.close_connection = True
        elif body.left:
            body.read()

    def _send_counts(self):
        requests, reads = self.server.served
        body = json.dumps({'requests': sum(requests),
                           'allocation_reads': sum(reads)}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _app(db_url):
    from placement import db_api
    from placement import deploy

    from nova_orphans.tests.functional.fixtures import placement
    conf = placement.placement_config(db_url)
    # What placement's own wsgi.init_application does.
    db_api.configure(conf)
    deploy.update_database(conf)
    return deploy.loadapp(conf)


def _worker(sock, db_url, index, connections, served):
    app = _app(db_url)
    server = _Server(sock.getsockname(), _Handler, bind_and_activate=False)
    server.index, server.connections = index, connections
    server.served = served
    server.count_lock = threading.Lock()
    # One request at a time per worker, as uwsgi's processes (threads=1).
    server.app_lock = threading.Lock()
    server.socket.close()
    server.socket = sock
    server.server_bind = lambda: None
    # What server_bind would have set up.
    server.server_name, server.server_port = '127.0.0.1', \
        sock.getsockname()[1]
    server.setup_environ()
    server.set_app(app)
    stop = _profiled(server, app, os.environ.get('ORPHANBENCH_PROFILE_DIR'))
    signal.signal(signal.SIGTERM, stop)
    server.serve_forever(poll_interval=0.2)


def _profiled(server, app, directory):
    """Profile the app if ``directory``; returns the SIGTERM handler."""
    if not directory:
        return lambda *a: os._exit(0)
    import cProfile
    profile = cProfile.Profile()

    def profiled_app(environ, start_response):
        profile.enable()
        try:
            return list(app(environ, start_response))
        finally:
            profile.disable()

    def stop(*_a):
        profile.dump_stats(os.path.join(directory,
                                        'placement-%d.prof' % os.getpid()))
        os._exit(0)
    server.set_app(profiled_app)
    return stop


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--db', required=True, help='placement DB URL')
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--port', type=int, default=0)
    parser.add_argument('--ready-file', required=True)
    args = parser.parse_args(argv)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', args.port))
    sock.listen(256)
    sock.setblocking(False)
    # Every worker's open connections, in memory shared across the fork.
    connections = multiprocessing.sharedctypes.RawArray('i', args.workers)
    # Each worker's requests served, and allocation reads among them.
    served = tuple(multiprocessing.sharedctypes.RawArray('l', args.workers)
                   for _kind in range(2))
    pids = []
    for index in range(args.workers):
        pid = os.fork()
        if pid == 0:
            try:
                _worker(sock, args.db, index, connections, served)
            except BaseException:
                import traceback
                traceback.print_exc()
            finally:
                os._exit(1)
        pids.append(pid)

    def stop(*_a):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    tmp = args.ready_file + '.tmp'
    with open(tmp, 'w') as f:
        json.dump({'port': sock.getsockname()[1], 'workers': pids}, f)
    os.rename(tmp, args.ready_file)
    while True:
        pid, _status = os.wait()
        if pid in pids:
            # A worker died: the benchmark would be wrong; stop.
            print('placement worker %d exited' % pid, file=sys.stderr)
            stop()


if __name__ == '__main__':
    main()
