#!/usr/bin/env python3
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
"""nova's real compute API over the sandbox's databases, on 127.0.0.1.

Run by ``tools/sandbox --keep`` in a process of its own (nova's global
configuration and state stay out of the sandbox's), so that
``openstack allocation orphan ...`` can be tried without DevStack. It is
nova's own WSGI application (``nova.api.openstack.wsgi_app``) with
nova's own paste pipeline; only keystone is replaced, by a filter that
accepts the token ``admin``, or ``admin:SOMETHING`` (as the sandbox's
noauth2 placement does), and hands nova the headers keystonemiddleware
would have set for an admin. Prints its endpoint on stdout, then serves
until terminated.

    sandbox_compute.py NOVA_CONF LOG_FILE [keystone]

With ``keystone``, keystone is not replaced: nova's own pipeline
validates tokens through keystonemiddleware (NOVA_CONF's
``[keystone_authtoken]``).
"""

import configparser
import json
import os
import socketserver
import sys
import threading
from wsgiref import simple_server

import webob
import webob.dec

PROJECT = 'sandbox'
PASTE_FILTER = 'sandbox_admin_token'


def admin_token_filter_factory(global_conf, **local_conf):
    """Paste filter: keystonemiddleware's headers for the token "admin"
    (or "admin:SOMETHING", which placement's noauth2 takes as admin too).
    """
    def filter_(app):
        @webob.dec.wsgify
        def admin_token(req):
            user = (req.headers.get('X-Auth-Token') or '').partition(':')[0]
            if user != 'admin':
                return webob.exc.HTTPUnauthorized()
            for name in list(req.headers):
                if name.lower().startswith(('x-user', 'x-project',
                                            'x-roles', 'x-identity')):
                    del req.headers[name]
            req.headers.update({
                'X-Identity-Status': 'Confirmed',
                'X-User-Id': 'admin', 'X-User-Name': 'admin',
                'X-Project-Id': PROJECT, 'X-Project-Name': PROJECT,
                'X-Roles': 'admin,member,reader'})
            return req.get_response(app)
        return admin_token
    return filter_


class _NoPorts(simple_server.WSGIRequestHandler):
    """Stands in for neutron, which the sandbox does not have.

    nova's server listings ask neutron for the servers' ports to show
    their security groups; the sandbox's servers have no ports, and that
    is all this answers. Nothing of placement or nova is answered here.
    """

    def log_message(self, *args):
        pass


def no_ports_app(environ, start_response):
    path = environ.get('PATH_INFO', '').rstrip('/')
    base = 'http://%s' % environ['HTTP_HOST']
    if path == '':
        body = {'versions': [{'id': 'v2.0', 'status': 'CURRENT', 'links': [
            {'href': base + '/v2.0/', 'rel': 'self'}]}]}
    elif path == '/v2.0':
        body = {'resources': []}
    elif path == '/v2.0/ports':
        body = {'ports': []}
    elif path == '/v2.0/security-groups':
        body = {'security_groups': []}
    else:
        start_response('404 Not Found', [('Content-Type', 'text/plain')])
        return [b'not in the sandbox']
    data = json.dumps(body).encode()
    start_response('200 OK', [('Content-Type', 'application/json'),
                              ('Content-Length', str(len(data)))])
    return [data]


def paste_config(path):
    """nova's api-paste.ini with keystone's authtoken replaced."""
    nova_paste = os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(nova_paste)
    for section in parser.sections():
        for key, value in parser[section].items():
            if ' authtoken ' in ' %s ' % value:
                parser[section][key] = ' '.join(
                    PASTE_FILTER if word == 'authtoken' else word
                    for word in value.split())
    # tools/ is on sys.path (see __main__).
    parser['filter:' + PASTE_FILTER] = {
        'paste.filter_factory': 'sandbox_compute:admin_token_filter_factory'}
    with open(path, 'w') as f:
        parser.write(f)
    return path


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class _Quiet(simple_server.WSGIRequestHandler):

    def log_message(self, *args):
        pass


def _serve(app, handler=_Quiet):
    server = simple_server.make_server('127.0.0.1', 0, app,
                                       server_class=_Server,
                                       handler_class=handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return 'http://127.0.0.1:%d' % server.server_port


def main(nova_conf, log_file, auth='admin_token'):
    """``auth = keystone``: nova's own paste pipeline, keystonemiddleware
    included, validating tokens as NOVA_CONF's ``[keystone_authtoken]``
    says.
    """
    os.environ['OS_NOVA_DISABLE_EVENTLET_PATCHING'] = 'True'
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(nova_conf)
    parser['neutron'] = {'endpoint_override': _serve(no_ports_app,
                                                     _NoPorts)}
    with open(nova_conf, 'w') as f:
        parser.write(f)
    if auth == 'keystone':
        paste = os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')
    else:
        paste = paste_config(os.path.join(os.path.dirname(nova_conf),
                                          'compute-api-paste.ini'))
    os.environ['OS_NOVA_CONFIG_FILES'] = ';'.join([paste, nova_conf])
    sys.argv = ['nova-api-os-compute', '--log-file', log_file]
    from nova import monkey_patch
    monkey_patch.patch(backend='threading')
    from nova.api.openstack import wsgi_app
    app = wsgi_app.init_application('osapi_compute', 'nova-api-os-compute')
    print(_serve(app) + '/v2.1', flush=True)
    threading.Event().wait()


if __name__ == '__main__':
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(*sys.argv[1:])
