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
"""keystone's part of a request, and its faults named as what they are.

Before a client sends its request, keystoneauth authenticates (with a
service user's password, in production) and looks the service's
endpoint up in the catalog, for the configured region and interfaces.
What fails there is keystone's or the configuration's fault, never the
service's: refused credentials (exit code 9), keystone out of reach (8),
a region or interface the catalog does not have, or no endpoint of the
service at all (7). ``endpoint`` does that part first, so a client's
own errors are its service's alone.
"""

import os
import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
from oslo_log import log as logging
import requests

from nova_orphans.clients import diagnose
from nova_orphans.clients import retry
from nova_orphans.clients import urls
from nova_orphans import exception
from nova_orphans.i18n import _

LOG = logging.getLogger(__name__)


def _one_line(error):
    return ' '.join(str(error).split())


def _auth_url(adapter):
    return getattr(getattr(adapter, 'auth', None), 'auth_url', None) or \
        _('keystone')


def _where(adapter):
    """The catalog's coordinates the adapter looks an endpoint up at."""
    if adapter is None:
        return _('the service')
    interface = adapter.interface
    if isinstance(interface, (list, tuple)):
        interface = ', '.join(interface)
    return _('service type %(type)s, interface %(interface)s, region '
             '%(region)s') % {
                 'type': adapter.service_type,
                 'interface': interface or _('any'),
                 'region': adapter.region_name or _('any')}


def fault(error, adapter=None):
    """keystoneauth's ``error`` as the known fault it is (or None).

    ``adapter``: the client's, whose auth URL and catalog coordinates
    the message names; None where osc's own session authenticated.
    """
    if isinstance(error, (ks_exc.Unauthorized, ks_exc.Forbidden)):
        return exception.CredentialsRefused(
            service=_('Keystone at %(url)s') % {'url': _auth_url(adapter)},
            reason=_('%(error)s: check the user, its password, domains '
                     'and project') % {'error': _one_line(error)})
    if isinstance(error, (ks_exc.EndpointNotFound, ks_exc.EmptyCatalog)):
        return exception.ConfigError(reason=_(
            'the catalog has no endpoint for %(where)s: check region_name '
            'and the interface (valid_interfaces) against it') % {
                'where': _where(adapter)})
    if isinstance(error, (ks_exc.ConnectFailure, ks_exc.DiscoveryFailure,
                          ks_exc.RequestTimeout)):
        return exception.ServiceUnreachable(
            service=_('Keystone'),
            reason=diagnose.connection_error(error, _auth_url(adapter)))
    if isinstance(error, (ks_exc.MissingAuthPlugin,
                          ks_exc.MissingRequiredOptions,
                          ks_exc.NoMatchingPlugin)):
        return exception.ConfigError(reason=_one_line(error))
    return None


def get(adapter, version_path, path, error, missing, **kwargs):
    """``GET`` of ``path`` under the service's endpoint, with
    ``version_path`` added unless the endpoint ends with it (catalogs
    and endpoint overrides usually name the root; openstacksdk adds it
    the same way): the response, whatever its status.

    What fails before the service answers raises ``error(method='GET',
    url=path, reason=...)``: no endpoint (``missing``), keystone's
    fault, the service out of reach.
    """
    try:
        found = adapter.get_endpoint()
    except ks_exc.ClientException as e:
        raise error(method='GET', url=path, reason=fault(e, adapter) or e)
    if not found:
        raise error(method='GET', url=path, reason=missing)
    base = found.rstrip('/')
    if not base.endswith('/' + version_path):
        base += '/' + version_path
    try:
        return adapter.request(base + path, 'GET', raise_exc=False,
                               **kwargs)
    except ks_exc.ClientException as e:
        if retry.fault_reason(e) is not None:
            raise error(method='GET', url=path,
                        reason=diagnose.connection_error(e, found))
        raise error(method='GET', url=path, reason=fault(e, adapter) or e)


def endpoint(adapter):
    """The service's endpoint: authenticated, looked up in the catalog.

    Both are kept by keystoneauth's plugin until the token is about to
    expire, so this costs nothing after the first time.
    """
    try:
        found = adapter.get_endpoint()
    except ks_exc.ClientException as e:
        known = fault(e, adapter)
        if known is None:
            raise
        raise known from e
    if not found:
        raise exception.ConfigError(reason=_(
            'no endpoint for %(where)s: set auth_url and credentials to '
            'look it up in the catalog, or an endpoint') % {
                'where': _where(adapter)})
    return found


def log_identity_requests(session, auth_url):
    """At debug level, log keystone's requests on ``session`` (a
    keystoneauth session of this run's own) as the clients log theirs:
    method, path, status and time (never a header or a body: those hold
    the password and the token). keystoneauth authenticates inside the
    session, where the clients' adapters do not see it.
    """
    hooks = getattr(getattr(session, 'session', None), 'hooks', None)
    if not auth_url or not isinstance(hooks, dict):
        # No keystone (admin_token), or not requests' own session.
        return
    parts = urllib.parse.urlsplit(auth_url)
    prefix = '%s://%s%s' % (parts.scheme, parts.netloc,
                            urls.unversioned(parts.path))

    def logged(resp, *args, **kwargs):
        if resp.url.startswith(prefix) and LOG.isEnabledFor(logging.DEBUG):
            LOG.debug('keystone %(method)s %(path)s: %(status)s in '
                      '%(seconds).3f s', {
                          'method': resp.request.method,
                          'path': retry.path_of(resp.url),
                          'status': resp.status_code,
                          'seconds': resp.elapsed.total_seconds()})
    hooks.setdefault('response', []).append(logged)


def keep_connections(session, count):
    """Keep up to ``count`` connections per host open for reuse on
    ``session`` (keystoneauth's), for that many threads sending at once:
    beyond requests' pool (DEFAULT_POOLSIZE), each would open a
    connection for every request and drop it after.
    """
    if count > requests.adapters.DEFAULT_POOLSIZE:
        for scheme in ('https://', 'http://'):
            session.session.mount(scheme, ks_session.TCPKeepAliveAdapter(
                pool_maxsize=count))


# What requests reads from the environment on every request when its
# session trusts it (requests.utils.get_environ_proxies, get_netrc_auth,
# Session.merge_environment_settings).
_CA_BUNDLES = ('REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE')
_NETRC_FILES = ('~/.netrc', '~/_netrc')


def nothing_in_environment(environ=None):
    """Whether requests would find nothing to use in the environment:
    no proxy variable, no CA bundle variable, no netrc file.
    """
    environ = os.environ if environ is None else environ
    if any(name.lower().endswith('_proxy') for name in environ):
        return False
    if any(environ.get(name) for name in _CA_BUNDLES + ('NETRC',)):
        return False
    return not any(os.path.exists(os.path.expanduser(path))
                   for path in _NETRC_FILES)


def trust_environment_only_if_needed(session):
    """Spare ``session`` (keystoneauth's, this run's own) requests'
    look at the environment on every request when the environment has
    nothing for it: the same requests are sent, for less CPU each.
    """
    if nothing_in_environment():
        session.session.trust_env = False


def adapter_from_conf(conf, group, retries=None, service=None,
                      connections=None):
    """A keystoneauth adapter from nova.conf's ``[group]`` (its options
    registered), as nova builds its clients for placement and neutron,
    whose reads are retried (a retry.RetryingAdapter: ``retries`` is the
    run's retry.Retries, a new one if None; ``service`` the name its
    counts use, by default the service type; ``connections``: how many
    requests it sends at once, see keep_connections).

    Raises ConfigError when the options cannot work, or name no auth
    plugin (``auth_type`` unset: nova needs one for both services).
    """
    try:
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        session = ks_loading.load_session_from_conf_options(
            conf, group, auth=auth)
        adapter = ks_loading.load_adapter_from_conf_options(
            conf, group, session=session, auth=auth)
    except (ks_exc.ClientException, ValueError) as e:
        raise exception.ConfigError(
            reason=_('[%(group)s]: %(error)s') % {'group': group,
                                                  'error': e})
    if auth is None:
        raise exception.ConfigError(
            reason=_('[%(group)s] auth_type is not set') % {'group': group})
    log_identity_requests(session, getattr(auth, 'auth_url', None))
    if connections:
        keep_connections(session, connections)
    trust_environment_only_if_needed(session)
    # Read here too: keystoneauth before 5.2 does not load it.
    adapter.retriable_status_codes = conf[group].retriable_status_codes
    return retry.RetryingAdapter(adapter, retries or retry.Retries(),
                                 service=service)
