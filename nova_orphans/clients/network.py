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
"""Network (neutron) API client: a server's ports and their bindings.

Only one call, the one that proves which providers a server's ports
claim (rules.leaked_port_allocation): the ports whose ``device_id`` is
the server, with their ``binding:profile``, which neutron shows to
admins. Any failure is a NetworkError, which the compute API reader
turns into "nothing proven", never into a finding.
"""

from urllib import parse

from keystoneauth1 import exceptions as ks_exc

from nova_orphans.clients import diagnose
from nova_orphans import exception
from nova_orphans.i18n import _

# neutron serves its one API version under this path; service catalogs
# and endpoint overrides usually name the root (openstacksdk adds it
# the same way).
VERSION_PATH = 'v2.0'


class NetworkError(exception.NovaOrphansException):
    msg_fmt = _('Network request %(method)s %(url)s failed: %(reason)s')


class NetworkClient:
    """A keystoneauth adapter for service type ``network``."""

    def __init__(self, adapter):
        self._adapter = adapter

    @property
    def endpoint(self):
        try:
            return self._adapter.get_endpoint()
        except ks_exc.ClientException:
            return '(network)'

    def _url(self, path):
        try:
            base = self._adapter.get_endpoint()
        except ks_exc.ClientException as e:
            raise NetworkError(method='GET', url=path, reason=e)
        if not base:
            raise NetworkError(method='GET', url=path,
                               reason=_('no network endpoint'))
        base = base.rstrip('/')
        if not base.endswith('/' + VERSION_PATH):
            base += '/' + VERSION_PATH
        return base + path

    def server_ports(self, server_uuid):
        """[{'id': ..., 'binding:profile': {...}}] of the server's ports."""
        path = '/ports?%s' % parse.urlencode(
            [('device_id', server_uuid), ('fields', 'id'),
             ('fields', 'binding:profile')])
        url = self._url(path)
        try:
            resp = self._adapter.request(url, 'GET', raise_exc=False)
        except ks_exc.ConnectFailure as e:
            raise NetworkError(method='GET', url=path,
                               reason=diagnose.connection_error(
                                   e, self.endpoint))
        except ks_exc.ClientException as e:
            raise NetworkError(method='GET', url=path, reason=e)
        if resp.status_code != 200:
            raise NetworkError(method='GET', url=path, reason='%s %s' % (
                resp.status_code, diagnose.body_summary(resp)))
        body = diagnose.json_body(resp)
        ports = body.get('ports') if isinstance(body, dict) else None
        if not isinstance(ports, list):
            raise NetworkError(method='GET', url=path,
                               reason=_('the answer lists no ports'))
        return ports
