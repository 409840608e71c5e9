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
processes that each load placement's app and serve that socket with a
thread per connection (as uwsgi/mod_wsgi with N processes would), writes
``{"port": ..., "workers": [pids]}`` to ``--ready-file`` and waits.
SIGTERM stops everything. Workers are separate processes so placement
uses N cores, and their CPU time can be read from /proc/<pid>/stat.

    python -m orphanbench.server --db sqlite:////tmp/p.sqlite \\
        --workers 2 --ready-file /tmp/ready.json
"""

import argparse
import json
import os
import signal
import socket
import socketserver
import sys
from wsgiref import simple_server


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True
    request_queue_size = 256


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


def _app(db_url):
    from placement import db_api
    from placement import deploy

    from nova_orphans.tests.functional.fixtures import placement
    conf = placement.placement_config(db_url)
    # What placement's own wsgi.init_application does.
    db_api.configure(conf)
    deploy.update_database(conf)
    return deploy.loadapp(conf)


def _worker(sock, db_url):
    app = _app(db_url)
    server = _Server(sock.getsockname(), _Quiet, bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    server.server_bind = lambda: None
    # What server_bind would have set up.
    server.server_name, server.server_port = '127.0.0.1', \
        sock.getsockname()[1]
    server.setup_environ()
    server.set_app(app)
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    server.serve_forever(poll_interval=0.2)


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
    pids = []
    for _i in range(args.workers):
        pid = os.fork()
        if pid == 0:
            try:
                _worker(sock, args.db)
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
