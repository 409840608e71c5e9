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
"""neutron's word on the ports bound to servers.

neutron owns the bindings; nova's info cache only mirrors them,
refreshed on neutron's events (and no longer periodically by default
since nova 31.0.0, bug 1996094): an event lost leaves it out of date.
So both readers ask the network API (the compute API reader through
each server's interface list, the database reader here, in bulk) and
say alike what they could not ask.
"""

from oslo_log import log as logging

from nova_orphans.engine import claims as claims_mod
from nova_orphans import exception
from nova_orphans.i18n import _

LOG = logging.getLogger(__name__)


def not_asked(count, error, cache_lists_none=False):
    """The snapshot's ``unread`` line for ``count`` servers whose ports
    neutron could not be asked for: what they hold on their nodes'
    child providers is unverifiable. ``cache_lists_none``: only those
    whose info cache in nova's database lists no port are (the others'
    caches stand for themselves).
    """
    if cache_lists_none:
        return _('neutron could not be asked for the ports bound to '
                 '%(count)d server(s) whose info cache in nova\'s database '
                 'lists no port (%(error)s): what they hold on their '
                 'nodes\' child providers is unverifiable') % {
                     'count': count, 'error': error}
    return _('neutron could not be asked for the ports bound to '
             '%(count)d server(s) (%(error)s): what they hold on their '
             'nodes\' child providers is unverifiable') % {
                 'count': count, 'error': error}


class NeutronPorts:
    """The network API's ports bound to the servers whose claims the
    database reader read, in one request per hundred servers.

    ``network``: a callable that returns a clients.network
    NetworkClient, or raises ConfigError or NetworkError when the
    network API cannot be asked; called the first time claims are
    proven, and its client kept for the run. None: the network API is
    never asked.
    """

    def __init__(self, network=None):
        self._factory = network
        self._client = None

    def prove(self, snapshot):
        """Every server's claims with neutron's ports
        (claims.with_listed_ports), as the compute API reader's are.

        An empty info cache proves nothing at all: nova empties it in
        more ways than by detaching every port. Where neutron cannot be
        asked, the empty caches' claims stay unproven and the snapshot
        says why (``unread``): the run is incomplete; the other caches
        stand for themselves (Claims.cache_only), and the rule says so.
        """
        asked = sorted(snapshot.claims)
        unlisted = [uuid for uuid in asked
                    if snapshot.claims[uuid].ports_unlisted]
        if not asked:
            return snapshot
        # keystoneauth only from here on (see nova_orphans.conf).
        from nova_orphans.clients import network as network_mod
        try:
            if self._client is None:
                if self._factory is None:
                    raise exception.ConfigError(
                        reason=_('no network API client'))
                self._client = self._factory()
            ports = self._client.servers_ports(asked)
        except (exception.ConfigError, network_mod.NetworkError) as e:
            LOG.debug('Ports of %(count)d server(s): %(error)s; those '
                      'whose info cache lists none are unverifiable',
                      {'count': len(asked), 'error': e})
            if not unlisted:
                return snapshot
            error = claims_mod.neutron_not_asked(e)
            snapshot.unread.append(not_asked(len(unlisted), e,
                                             cache_lists_none=True))
            for uuid in unlisted:
                claims_mod.with_listed_ports(snapshot.claims[uuid],
                                             error=error)
            return snapshot
        for uuid in asked:
            claims_mod.with_listed_ports(
                snapshot.claims[uuid], network_mod.network_info(ports[uuid]))
        return snapshot
