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
"""

import threading

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging

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


def _parse(version):
    major, minor = version.split('.')
    return int(major), int(minor)


def _fmt(version):
    return '%d.%d' % version


class PlacementClient:

    def __init__(self, adapter):
        self._adapter = adapter
        self._version = None
        self._lock = threading.Lock()

    @classmethod
    def from_conf(cls, conf):
        group = placement_conf.GROUP
        try:
            auth = ks_loading.load_auth_from_conf_options(conf, group)
            session = ks_loading.load_session_from_conf_options(
                conf, group, auth=auth)
            adapter = ks_loading.load_adapter_from_conf_options(
                conf, group, session=session, auth=auth)
        except (ks_exc.ClientException, ValueError) as e:
            raise exception.ConfigError(
                reason=_('[placement]: %(error)s') % {'error': e})
        if auth is None:
            raise exception.ConfigError(
                reason=_('[placement] auth_type is not set'))
        return cls(adapter)

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
        resp = self._send('GET', '/', version=None)
        doc = resp.json()
        versions = doc.get('versions') or [doc.get('version', {})]
        max_version = max(_parse(v.get('max_version') or '1.0')
                          for v in versions)
        if max_version < MIN_VERSION:
            raise exception.PlacementVersionTooOld(
                endpoint=self.endpoint, max_version=_fmt(max_version),
                min_version=_fmt(MIN_VERSION))
        return min(max_version, MAX_VERSION)

    @property
    def endpoint(self):
        try:
            return self._adapter.get_endpoint()
        except ks_exc.ClientException:
            return '(placement)'

    def _send(self, method, url, version, json=None):
        kwargs = {'raise_exc': False}
        if version is not None:
            kwargs['microversion'] = _fmt(version)
        if json is not None:
            kwargs['json'] = json
        try:
            return self._adapter.request(url, method, **kwargs)
        except ks_exc.ClientException as e:
            raise exception.PlacementError(method=method, url=url, reason=e)

    def request(self, method, url, json=None, version=None,
                expected=(200,)):
        """Send a request; return the response if its status is expected.

        Anything else raises PlacementError (GenerationConflict for a
        consumer generation conflict), carrying the status code.
        """
        resp = self._send(method, url, version or self.version, json=json)
        if resp.status_code in expected:
            return resp
        codes, text = _errors(resp)
        reason = '%s %s' % (resp.status_code, text)
        if CONCURRENT_UPDATE in codes:
            err = exception.GenerationConflict(consumer=url.rsplit('/')[-1])
        else:
            err = exception.PlacementError(method=method, url=url,
                                           reason=reason)
        err.status_code = resp.status_code
        raise err

    def get(self, url, version=None, expected=(200,)):
        return self.request('GET', url, version=version,
                            expected=expected).json()


def _errors(resp):
    """Placement's error codes and a short text for a failed response."""
    try:
        errors = resp.json().get('errors') or []
    except ValueError:
        return set(), resp.text[:200]
    return ({e.get('code') for e in errors},
            '; '.join(e.get('detail') or e.get('title', '')
                      for e in errors) or resp.text[:200])
