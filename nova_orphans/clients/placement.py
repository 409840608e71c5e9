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
"""Placement HTTP client: microversions negotiated once, errors typed.

Reads use the highest microversion both sides know (consumer types from
1.38); nothing below 1.28 is accepted because consumer-generation-checked
writes need it. Writes pick their own microversion per request.

Bulk reads (one GET per provider) go over kept-alive http.client
connections (see LeanGets); everything else through keystoneauth.
"""

import contextlib
import http.client
import json as jsonlib
import os
import socket
import ssl
import threading
import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging
import requests
import urllib3

from nova_orphans.clients import auth as auth_faults
from nova_orphans.clients import diagnose
from nova_orphans.clients import retry
from nova_orphans.conf import placement as placement_conf
from nova_orphans import exception
from nova_orphans.i18n import _

LOG = logging.getLogger(__name__)

MIN_VERSION = (1, 28)
# 1.38/1.39: consumer types on read; the newest this tool understands.
MAX_VERSION = (1, 39)
CONSUMER_TYPES_VERSION = (1, 38)
# The error code placement gives a generation conflict.
CONCURRENT_UPDATE = 'placement.concurrent_update'
# What the retry counts and messages call it.
SERVICE = 'placement'


def _parse(version):
    major, minor = version.split('.')
    return int(major), int(minor)


def _fmt(version):
    return '%d.%d' % version


# Where to look when placement cannot be reached: the settings the
# client's endpoint came from (nova.conf for nova-orphans-manage, the
# cloud's for openstack).
CONF_SETTINGS = _('[placement] (its endpoint, or auth_url, region_name '
                  'and valid_interfaces)')
CLOUD_SETTINGS = _('the cloud\'s settings (clouds.yaml or the OS_* '
                   'variables: auth_url, region_name, interface, '
                   'placement_endpoint_override)')


class PlacementClient:

    def __init__(self, adapter, settings=CLOUD_SETTINGS):
        self._adapter = adapter
        self._settings = settings
        self._version = None
        self._lock = threading.Lock()
        # The run's (a RetryingAdapter's), else one of this client's own.
        self.retries = getattr(adapter, 'retries', None) or retry.Retries()

    @classmethod
    def from_conf(cls, conf, retries=None):
        """nova.conf's ``[placement]``; ``retries``: the run's
        retry.Retries (a new one if None).
        """
        return cls(auth_faults.adapter_from_conf(
            conf, placement_conf.GROUP, retries=retries,
            service=SERVICE), settings=CONF_SETTINGS)

    def answer_lost(self, error, method, url):
        """A write failed with a fault that may have lost only its
        answer (``error.transient``): counted as a retry of the run.
        """
        self.retries.lost(SERVICE, error.transient,
                          '%s %s %s' % (SERVICE, method, url))

    def may_write_again(self, attempt, method, url):
        """After a lost answer and a read that found the write not
        applied: whether it may be sent again (``attempt``: how many
        times it was already; within the adapter's connect_retries and
        the run's budget), after a delay.
        """
        limit = getattr(self._adapter, 'connect_retries', None)
        return self.retries.may_write_again(
            SERVICE, attempt, retry.RETRIES if limit is None else limit,
            '%s %s %s' % (SERVICE, method, url))

    @property
    def version(self):
        """The negotiated read microversion, as a (major, minor) tuple."""
        with self._lock:
            if self._version is None:
                self._version = self._negotiate()
            return self._version

    @property
    def has_consumer_types(self):
        return self.version >= CONSUMER_TYPES_VERSION

    def _negotiate(self):
        # Not redirected: keystoneauth would follow a redirect here, but
        # the kept-alive reads (LeanGets) would not, and a write must not
        # be sent on to wherever a redirect points.
        resp = self._send('GET', '/', version=None, redirect=False)
        doc = diagnose.version_document(
            resp, _('Placement'), self.endpoint,
            _('placement\'s version document'),
            _is_version_document)
        versions = doc.get('versions') or [doc.get('version')]
        max_version = max(_parse(v['max_version'])
                          for v in versions if _has_max_version(v))
        if max_version < MIN_VERSION:
            raise exception.PlacementVersionTooOld(
                endpoint=self.endpoint, max_version=_fmt(max_version),
                min_version=_fmt(MIN_VERSION))
        LOG.debug('Placement at %(endpoint)s serves microversions up to '
                  '%(max)s; reading at %(version)s',
                  {'endpoint': self.endpoint, 'max': _fmt(max_version),
                   'version': _fmt(min(max_version, MAX_VERSION))})
        return min(max_version, MAX_VERSION)

    @property
    def endpoint(self):
        try:
            return self._adapter.get_endpoint()
        except ks_exc.ClientException:
            return '(placement)'

    def _send(self, method, url, version, json=None, **kwargs):
        kwargs['raise_exc'] = False
        if version is not None:
            kwargs['microversion'] = _fmt(version)
        if json is not None:
            kwargs['json'] = json
        # keystone's part first: its faults are not placement's.
        endpoint = auth_faults.endpoint(self._adapter)
        try:
            return self._adapter.request(url, method, **kwargs)
        except ks_exc.ClientException as e:
            reason = retry.fault_reason(e)
            if reason is not None:
                err = exception.PlacementError(
                    method=method, url=url,
                    reason=_('%(error)s; check that placement runs there, '
                             'and %(settings)s') % {
                        'error': diagnose.connection_error(e, endpoint),
                        'settings': self._settings})
                err.exit_code = exception.ServiceUnreachable.exit_code
                # A write's answer may be all that was lost.
                err.transient = reason
                raise err
            # Re-authenticating on the way (an expired token): keystone's
            # fault, with its code, on this request's row.
            known = auth_faults.fault(e, self._adapter)
            err = exception.PlacementError(method=method, url=url,
                                           reason=known or e)
            if known is not None:
                err.exit_code = known.exit_code
            raise err

    def request(self, method, url, json=None, version=None,
                expected=(200,)):
        """Send a request; return the response if its status is expected.

        Anything else raises PlacementError (GenerationConflict for a
        consumer generation conflict), carrying the status code, and
        ``transient`` (the fault's reason) when the fault may be
        transient: a read was retried already; a write was sent once,
        and may have been applied (see repair.writes.write).
        """
        resp = self._send(method, url, version or self.version, json=json)
        return _check(method, url, resp, expected, self._retriable)

    @property
    def _retriable(self):
        return getattr(self._adapter, 'retriable_status_codes', None) or \
            retry.RETRIABLE_STATUS_CODES

    def get(self, url, version=None, expected=(200,)):
        return self.request('GET', url, version=version,
                            expected=expected).json()

    @contextlib.contextmanager
    def bulk_reads(self):
        """Something with this client's ``get``, for many GETs at once.

        Kept-alive http.client connections where they reach placement
        exactly as keystoneauth would (see lean_target); this client
        otherwise. The connections are closed on exit.
        """
        target = lean_target(self._adapter)
        if target is None:
            yield self
            return
        LOG.debug('Placement\'s bulk GETs go over kept-alive http.client '
                  'connections to %(host)s:%(port)s', {
                      'host': target.host, 'port': target.port})
        lean = LeanGets(self, target)
        try:
            yield lean
        finally:
            lean.close()


def _has_max_version(version):
    return isinstance(version, dict) and bool(version.get('max_version'))


def _is_version_document(doc):
    """Placement's root document: {"versions": [{"max_version": ...}]}."""
    versions = doc.get('versions') or [doc.get('version')]
    return isinstance(versions, list) and any(
        _has_max_version(v) for v in versions)


def _check(method, url, resp, expected,
           retriable=retry.RETRIABLE_STATUS_CODES):
    """The response if its status is expected; else the typed error
    (``transient`` set for a status of ``retriable``).
    """
    if resp.status_code in expected:
        return resp
    codes, text = _errors(resp)
    reason = '%s %s' % (resp.status_code, text)
    if CONCURRENT_UPDATE in codes:
        err = exception.GenerationConflict(consumer=url.rsplit('/')[-1],
                                           detail=text)
    else:
        if resp.status_code in (401, 403):
            reason = _('%(reason)s (nova-orphans needs a user with the '
                       'admin role, or placement\'s service role: it uses '
                       'placement\'s admin APIs)') % {'reason': reason}
        err = exception.PlacementError(method=method, url=url,
                                       reason=reason)
    err.status_code = resp.status_code
    if resp.status_code in retriable:
        err.transient = str(resp.status_code)
    if resp.status_code in (401, 403):
        err.exit_code = exception.CredentialsRefused.exit_code
    elif resp.status_code >= 500:
        err.exit_code = exception.ServiceUnreachable.exit_code
    raise err


def _errors(resp):
    """Placement's error codes and a one-line text for a failed response.

    A body that is not placement's JSON (a proxy's HTML page) is named,
    not printed.
    """
    doc = diagnose.json_body(resp)
    errors = doc.get('errors') if isinstance(doc, dict) else None
    if not isinstance(errors, list) or not errors:
        return set(), diagnose.body_summary(resp)
    errors = [e for e in errors if isinstance(e, dict)]
    return ({e.get('code') for e in errors},
            ' '.join('; '.join(e.get('detail') or e.get('title', '')
                               for e in errors).split()) or
            diagnose.body_summary(resp))


class LeanTarget:
    """Where and how LeanGets connects: what keystoneauth would use."""

    def __init__(self, endpoint, headers, timeout=None, context=None):
        parsed = urllib.parse.urlsplit(endpoint)
        self.https = parsed.scheme == 'https'
        self.host = parsed.hostname
        # Explicit, or http.client reads an IPv6 address's end as a port.
        self.port = parsed.port or (443 if self.https else 80)
        self.base = parsed.path.rstrip('/')
        self.headers = headers
        self.timeout = timeout
        self.context = context

    def connect(self):
        if self.https:
            return http.client.HTTPSConnection(
                self.host, self.port, timeout=self.timeout,
                context=self.context)
        return http.client.HTTPConnection(self.host, self.port,
                                          timeout=self.timeout)


def lean_target(adapter):
    """A LeanTarget for this keystoneauth adapter, or None.

    None whenever a plain connection might not reach placement the way
    keystoneauth does: a proxy, a mocked or intercepted transport (tests,
    nova's functional harness), an endpoint or token that cannot be had
    now (keystoneauth then raises its own error). Only public interfaces
    are read: keystoneauth's session and adapter (get_endpoint,
    get_auth_headers), requests' session and urllib3's classes. The
    tool's adapters have no rate limit, which these requests would
    bypass: neither nova.conf's keystoneauth options nor the openstack
    plugin give one.
    """
    try:
        session = adapter.session
        http_session = session.session
        endpoint = adapter.get_endpoint()
        scheme = urllib.parse.urlsplit(endpoint or '').scheme
        if scheme not in ('http', 'https'):
            return None
        # Unless requests itself would send it (not a mock, a recorder or
        # an adapter of someone's own), keystoneauth sends it.
        transport = type(http_session.get_adapter(endpoint))
        if (type(http_session).send is not requests.Session.send or
                requests.Session.send.__module__ != 'requests.sessions' or
                transport.send is not requests.adapters.HTTPAdapter.send):
            return None
        pools = urllib3.connectionpool
        if (pools.HTTPConnectionPool.ConnectionCls is not
                urllib3.connection.HTTPConnection or
                pools.HTTPSConnectionPool.ConnectionCls is not
                urllib3.connection.HTTPSConnection):
            return None
        settings = http_session.merge_environment_settings(
            endpoint, {}, None, session.verify, session.cert)
        if requests.utils.select_proxy(endpoint, settings['proxies']):
            return None
        context = None
        if scheme == 'https':
            context = _ssl_context(settings['verify'], settings['cert'])
        headers = {'Accept': 'application/json',
                   'User-Agent': 'nova-orphans'}
        headers.update(adapter.additional_headers or {})
        if adapter.global_request_id:
            headers['X-OpenStack-Request-ID'] = adapter.global_request_id
        headers.update(session.get_auth_headers(adapter.auth) or {})
        if not any(k.lower() == 'x-auth-token' for k in headers):
            return None
        return LeanTarget(endpoint, headers,
                          session.timeout or getattr(adapter, 'timeout', None),
                          context)
    except Exception as e:
        LOG.debug('Bulk reads go through keystoneauth: %s', e)
        return None


def _ssl_context(verify, cert):
    """An SSL context for requests' verify and cert settings."""
    if verify is False:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        bundle = verify if isinstance(verify, str) else \
            requests.utils.DEFAULT_CA_BUNDLE_PATH
        if os.path.isdir(bundle):
            context = ssl.create_default_context(capath=bundle)
        else:
            context = ssl.create_default_context(cafile=bundle)
    if cert:
        if isinstance(cert, str):
            context.load_cert_chain(cert)
        else:
            context.load_cert_chain(*cert)
    return context


class _Response:
    """What _check reads of a response."""

    def __init__(self, status_code, body):
        self.status_code = status_code
        self.body = body

    @property
    def text(self):
        return self.body.decode('utf-8', 'replace')

    def json(self):
        return jsonlib.loads(self.body)


# How the log says a GET of LeanGets went.
_KEPT_ALIVE = 'kept-alive connection'


class LeanGets:
    """PlacementClient.get over kept-alive http.client connections.

    requests and keystoneauth cost the tool about 1.5 ms of CPU per
    request, http.client about a third of that, and a bulk read sends
    one GET per provider. One connection per thread, reused. A GET that
    fails on its connection (closed by the server, reset, timed out) or
    meets 401 or a status the adapter retries is sent again once,
    through keystoneauth, so its retries, re-authentication and errors
    apply unchanged; other statuses give the errors keystoneauth's
    responses would. Only for GETs: writes never go this way.
    """

    def __init__(self, client, target):
        self._client = client
        self._target = target
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns = []
        self._headers = {}
        self._retries = client.retries
        self._resend = {401}
        if getattr(client._adapter, 'status_code_retries', None):
            self._resend.update(client._retriable)
        # Through a RetryingAdapter, a GET sent again after a fault here
        # is counted as this one request's retry, not as another's.
        self._counted = isinstance(client._adapter, retry.RetryingAdapter)

    def get(self, url, version=None, expected=(200,)):
        version = version or self._client.version
        self._retries.check(SERVICE, 'GET', url)
        resp, fault = self._lean(url, version)
        if resp is not None and resp.status_code not in self._resend:
            self._retries.answered(SERVICE)
        else:
            kwargs = {}
            if fault is not None and self._counted:
                # Counted once here; keystoneauth's try is the retry.
                self._retries.counted(SERVICE, fault)
                kwargs['retried'] = True
            resp = self._client._send('GET', url, version, **kwargs)
            if resp.status_code != 401:
                # keystoneauth may have re-authenticated meanwhile.
                self._refresh()
        return _check('GET', url, resp, expected,
                      self._client._retriable).json()

    def _lean(self, url, version):
        """(response, None), or (None or the response, the reason of a
        transient fault to count): None for a kept-alive connection the
        server closed, which is no fault.
        """
        conn = getattr(self._local, 'conn', None)
        fresh = conn is None
        if fresh:
            conn = self._local.conn = self._target.connect()
            with self._lock:
                self._conns.append(conn)
        headers = self._headers.get(version)
        if headers is None:
            headers = self._headers[version] = dict(
                self._target.headers,
                **{'OpenStack-API-Version': 'placement %s' % _fmt(version)})
        started = self._retries.now()
        try:
            conn.request('GET', self._target.base + url, headers=headers)
            resp = conn.getresponse()
            body = resp.read()
        except (http.client.HTTPException, OSError) as e:
            self._retries.timed(SERVICE, 'GET', url, started, e,
                                connection=_KEPT_ALIVE)
            LOG.debug('GET %s on a kept-alive connection: %s; again '
                      'through keystoneauth', url, e)
            conn.close()
            self._local.conn = None
            timed_out = isinstance(e, (socket.timeout, TimeoutError))
            reason = retry.TIMEOUT_REASON if timed_out else retry.CONNECTION
            return None, reason if fresh else None
        if resp.will_close:
            conn.close()
            self._local.conn = None
        status = resp.status
        answer = _Response(status, body)
        self._retries.timed(SERVICE, 'GET', url, started, answer,
                            connection=_KEPT_ALIVE)
        return answer, (
            str(status) if status in self._resend and status != 401
            else None)

    def _refresh(self):
        """Take the auth headers keystoneauth has now."""
        adapter = self._client._adapter
        try:
            headers = adapter.session.get_auth_headers(adapter.auth) or {}
        except Exception:
            return
        self._target.headers = dict(self._target.headers, **headers)
        self._headers = {}

    def close(self):
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()
