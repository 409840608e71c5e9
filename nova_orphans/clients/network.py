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
"""Network (neutron) API client: servers' ports and their bindings.

Only one call, the one that proves which providers a server's ports
claim (rules.leaked_port_allocation): the ports whose ``device_id`` is
the server, with their ``binding:profile``, which neutron shows to
admins; many servers' at once (neutron takes the filter repeated).
Both front ends ask it: ``openstack`` through osc's session, for every
server it judges, and ``nova-orphans-manage`` with nova.conf's
``[neutron]`` credentials, for the servers whose info cache lists no
port. Any failure is a NetworkError, which the readers turn into
"nothing proven", never into a finding.
"""

from urllib import parse

from keystoneauth1 import exceptions as ks_exc

from nova_orphans.clients import auth
from nova_orphans.clients import diagnose
from nova_orphans.clients import policies
from nova_orphans.conf import neutron as neutron_conf
from nova_orphans import exception
from nova_orphans.i18n import _

# neutron serves its one API version under this path; service catalogs
# and endpoint overrides usually name the root (openstacksdk adds it
# the same way).
VERSION_PATH = 'v2.0'

# Servers asked about in one request: each adds a ``device_id`` filter
# of about 50 characters to the URL, kept well below the 8 KiB of a
# request line that web servers in front of neutron commonly accept.
SERVERS_PER_REQUEST = 100


class NetworkError(exception.NovaOrphansException):
    msg_fmt = _('Network request %(method)s %(url)s failed: %(reason)s')


class NetworkClient:
    """A keystoneauth adapter for service type ``network``."""

    def __init__(self, adapter):
        self._adapter = adapter

    @classmethod
    def from_conf(cls, conf, retries=None):
        """nova.conf's ``[neutron]`` (registered here); ConfigError when
        it cannot work (no ``auth_type``: no usable section).
        ``retries``: the run's clients.retry.Retries.
        """
        neutron_conf.register_opts(conf)
        return cls(auth.adapter_from_conf(conf, neutron_conf.GROUP,
                                          retries=retries))

    @property
    def endpoint(self):
        try:
            return self._adapter.get_endpoint()
        except ks_exc.ClientException:
            return '(network)'

    def server_ports(self, server_uuid):
        """[{'id': ..., 'binding:profile': {...}}] of the server's ports."""
        return self.servers_ports([server_uuid])[server_uuid]

    def servers_ports(self, server_uuids):
        """{server uuid: [{'id': ..., 'device_id': ...,
        'binding:profile': {...}}]}: the ports bound to each server, an
        empty list for a server with none.
        """
        server_uuids = list(server_uuids)
        found = {uuid: [] for uuid in server_uuids}
        for start in range(0, len(server_uuids), SERVERS_PER_REQUEST):
            chunk = server_uuids[start:start + SERVERS_PER_REQUEST]
            for port in self._ports([('device_id', uuid) for uuid in chunk]):
                # One server asked about: every port is its own.
                owner = chunk[0] if len(chunk) == 1 else port.get(
                    'device_id')
                if owner in found:
                    found[owner].append(port)
        return found

    def _ports(self, filters):
        path = '/ports?%s' % parse.urlencode(filters + [
            ('fields', 'id'), ('fields', 'device_id'),
            ('fields', 'binding:profile')])
        resp = auth.get(self._adapter, VERSION_PATH, path, NetworkError,
                        _('no network endpoint'))
        if resp.status_code == 403:
            raise NetworkError(method='GET', url=path, reason=(
                policies.refusal(policies.NEUTRON, 403, _message(resp),
                                 self._adapter)))
        if resp.status_code != 200:
            raise NetworkError(method='GET', url=path, reason='%s %s' % (
                resp.status_code, diagnose.body_summary(resp)))
        body = diagnose.json_body(resp)
        ports = body.get('ports') if isinstance(body, dict) else None
        if not isinstance(ports, list) or not all(
                isinstance(port, dict) for port in ports):
            raise NetworkError(method='GET', url=path,
                               reason=_('the answer lists no ports'))
        return ports


def network_info(ports):
    """The ports as nova's network info holds them (``id`` and the
    binding's ``profile``), for engine.claims.
    """
    return [{'id': port.get('id'), 'profile': port.get('binding:profile')}
            for port in ports]


def _message(resp):
    """neutron's words in an error, {"NeutronError": {"message": ...}}."""
    body = diagnose.json_body(resp)
    error = body.get('NeutronError') if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get('message'):
        return error['message']
    return diagnose.body_summary(resp)
