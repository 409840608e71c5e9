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
writes need it. Writes pick their own microversion per request. Every
request goes through the keystoneauth adapter (see clients.retry).
"""

import threading

from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging

from nova_orphans.clients import auth as auth_faults
from nova_orphans.clients import diagnose
from nova_orphans.clients import policies
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
        """nova.conf's ``[placement]``, with as many connections kept
        open as ``[nova_orphans] placement_concurrency`` sends requests
        at once; ``retries``: the run's retry.Retries (a new one if None).
        """
        return cls(auth_faults.adapter_from_conf(
            conf, placement_conf.GROUP, retries=retries, service=SERVICE,
            connections=conf.nova_orphans.placement_concurrency),
            settings=CONF_SETTINGS)

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
        # Not redirected: a write must not be sent on to wherever a
        # redirect of the endpoint points.
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
                raise exception.PlacementError(
                    method=method, url=url,
                    reason=_('%(error)s; check that placement runs there, '
                             'and %(settings)s') % {
                        'error': diagnose.connection_error(e, endpoint),
                        'settings': self._settings},
                    exit_code=exception.ServiceUnreachable.exit_code,
                    # A write's answer may be all that was lost.
                    transient=reason)
            # Re-authenticating on the way (an expired token): keystone's
            # fault, with its code, on this request's row.
            known = auth_faults.fault(e, self._adapter)
            raise exception.PlacementError(
                method=method, url=url, reason=known or e,
                exit_code=known.exit_code if known is not None else None)

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
        return _check(method, url, resp, expected, self._retriable,
                      self._adapter)

    @property
    def _retriable(self):
        return getattr(self._adapter, 'retriable_status_codes', None) or \
            retry.RETRIABLE_STATUS_CODES

    def get(self, url, version=None, expected=(200,)):
        return self.request('GET', url, version=version,
                            expected=expected).json()


def _has_max_version(version):
    return isinstance(version, dict) and bool(version.get('max_version'))


def _is_version_document(doc):
    """Placement's root document: {"versions": [{"max_version": ...}]}."""
    versions = doc.get('versions') or [doc.get('version')]
    return isinstance(versions, list) and any(
        _has_max_version(v) for v in versions)


def _check(method, url, resp, expected,
           retriable=retry.RETRIABLE_STATUS_CODES, adapter=None):
    """The response if its status is expected; else the typed error
    (``transient`` set for a status of ``retriable``): GenerationConflict
    for placement's generation conflict, else PlacementError (a 403 in
    policies.refusal's words, for ``adapter``'s token).
    """
    status = resp.status_code
    if status in expected:
        return resp
    codes, text = _errors(resp)
    if CONCURRENT_UPDATE in codes:
        raise exception.GenerationConflict(consumer=url.rsplit('/')[-1],
                                           detail=text)
    reason = '%s %s' % (status, text)
    exit_code = None
    if status == 403:
        reason = policies.refusal(policies.PLACEMENT, status, text, adapter)
        exit_code = exception.CredentialsRefused.exit_code
    elif status == 401:
        reason = _('%(reason)s (nova-orphans needs a user with the '
                   'admin role, or placement\'s service role: it uses '
                   'placement\'s admin APIs)') % {'reason': reason}
        exit_code = exception.CredentialsRefused.exit_code
    elif status >= 500:
        exit_code = exception.ServiceUnreachable.exit_code
    raise exception.PlacementError(
        method=method, url=url, reason=reason, status_code=status,
        transient=str(status) if status in retriable else None,
        exit_code=exit_code)


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
