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
"""Compute (nova) API client for the reader behind the openstack plugin.

Every request is sent at one pinned microversion, checked once against
the cloud's maximum: 2.69 is the lowest that has everything the reader
relies on (compute node uuids 2.53, migration uuids and paging 2.59,
embedded flavors 2.47, down-cell records 2.69), and pinning it keeps
the response formats the reader parses fixed whatever the cloud runs.
"""

import threading
from urllib import parse

from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging

from nova_orphans.clients import auth as auth_faults
from nova_orphans.clients import diagnose
from nova_orphans.clients import policies
from nova_orphans.clients import retry
from nova_orphans import exception
from nova_orphans.i18n import _

LOG = logging.getLogger(__name__)

VERSION = (2, 69)
# Rows asked for per page; nova caps it at its own [api] max_limit.
PAGE_SIZE = 1000


def _parse(version):
    major, minor = (version or '2.0').split('.')
    return int(major), int(minor)


def _fmt(version):
    return '%d.%d' % version


class ComputeError(exception.NovaOrphansException):
    """nova could not be read through its compute API (exit code 10)."""

    msg_fmt = _('Compute request %(method)s %(url)s failed: %(reason)s')
    exit_code = exception.NovaUnreachable.exit_code


class ComputeClient:
    """A keystoneauth adapter for service type ``compute``, at VERSION."""

    def __init__(self, adapter):
        self._adapter = adapter
        self._checked = False
        self._lock = threading.Lock()

    @property
    def endpoint(self):
        try:
            return self._adapter.get_endpoint()
        except ks_exc.ClientException:
            return '(compute)'

    def check_version(self):
        """Refuse a cloud whose compute API is older than VERSION."""
        with self._lock:
            if self._checked:
                return
            # Not redirected (see PlacementClient._negotiate). A version
            # document that is not nova's is typically placement's:
            # admin_token auth without compute_endpoint_override sends
            # every service to the token's endpoint.
            resp = self._send('GET', '', version=None, redirect=False)
            doc = diagnose.version_document(
                resp, _('The compute API'), self.endpoint,
                _('the compute API\'s version document'), _v2_versions,
                mistaken=_placement_document)
            versions = _v2_versions(doc)
            max_version = max(_parse(v.get('version')) for v in versions)
            if max_version < VERSION:
                raise exception.ComputeVersionTooOld(
                    endpoint=self.endpoint, max_version=_fmt(max_version),
                    min_version=_fmt(VERSION))
            self._checked = True

    def _send(self, method, url, version, **kwargs):
        kwargs['raise_exc'] = False
        if version is not None:
            kwargs['microversion'] = _fmt(version)
        # keystone's part first: its faults are not nova's.
        endpoint = auth_faults.endpoint(self._adapter)
        try:
            return self._adapter.request(url, method, **kwargs)
        except ks_exc.ClientException as e:
            if retry.fault_reason(e) is not None:
                # '' is the endpoint itself (its version document).
                raise ComputeError(
                    method=method, url=url or '/',
                    reason=diagnose.connection_error(e, endpoint))
            # Re-authenticating on the way: keystone's fault, its code.
            known = auth_faults.fault(e, self._adapter)
            raise ComputeError(
                method=method, url=url or '/', reason=known or e,
                exit_code=known.exit_code if known is not None else None)

    def _request(self, method, url, version=VERSION, expected=(200,)):
        resp = self._send(method, url, version)
        status = resp.status_code
        if status not in expected:
            reason = '%s %s' % (status, _fault(resp))
            if status == 403:
                reason = policies.refusal(policies.NOVA, status,
                                          _fault(resp), self._adapter)
            raise ComputeError(
                method=method, url=url, reason=reason,
                exit_code=(exception.CredentialsRefused.exit_code
                           if status in (401, 403) else None))
        return resp

    def check_admin(self):
        """Refuse (exit code 9) a user that is not nova's admin
        (``context_is_admin``), before a clean writes: nova narrows a
        non-admin's reads to its own project without saying so (another
        project's server by its id is a 404, whatever the policies
        grant), and live servers would look gone. Listing deleted
        servers is refused to non-admins alone: the probe.
        """
        url = _with('/servers/detail', {'status': 'DELETED', 'limit': 1})
        resp = self._request('GET', url, expected=(200, 403))
        if resp.status_code == 403:
            raise ComputeError(
                method='GET', url=url, reason=policies.not_admin(
                    _fault(resp)),
                exit_code=exception.CredentialsRefused.exit_code)

    def get(self, url, params=None):
        """The JSON body of a GET that must succeed."""
        return self._request('GET', _with(url, params)).json()

    def get_at(self, url, version):
        """The JSON body of a GET at another microversion than VERSION,
        or None when nova says 404, or does not speak that one (406).
        """
        resp = self._request('GET', url, version=version,
                             expected=(200, 404, 406))
        return None if resp.status_code != 200 else resp.json()

    def get_or_none(self, url, params=None):
        """The JSON body of a GET, or None when nova says 404."""
        resp = self._request('GET', _with(url, params), expected=(200, 404))
        if resp.status_code == 404:
            LOG.debug('Compute API: GET %s: 404, none (never there, or '
                      'deleted during the run)', url)
            return None
        return resp.json()

    def pages(self, url, key, params=None):
        """Every item of a paginated listing, following limit and marker.

        nova caps the page size at ``[api] max_limit`` and adds a
        ``<key>_links`` "next" link only while there may be more, so that
        link, not the page length, says whether to go on.
        """
        params = dict(params or {}, limit=PAGE_SIZE)
        items, seen = [], set()
        while True:
            doc = self.get(url, params)
            page = doc.get(key) or []
            items.extend(page)
            more = any(link.get('rel') == 'next'
                       for link in doc.get(key + '_links') or ())
            marker = _marker(page)
            if not more or marker is None or marker in seen:
                return items
            seen.add(marker)
            params['marker'] = marker


def _v2_versions(doc):
    """The v2 entries of a compute version document (none: not one)."""
    versions = doc.get('versions') or [doc.get('version')]
    if not isinstance(versions, list):
        return []
    return [v for v in versions
            if isinstance(v, dict) and str(v.get('id', '')).startswith('v2')]


def _placement_document(doc):
    versions = doc.get('versions') or [doc.get('version')]
    if isinstance(versions, list) and any(
            isinstance(v, dict) and v.get('max_version') and
            str(v.get('id', '')).startswith('v1') for v in versions):
        return _('it is placement\'s; with admin_token auth, set '
                 'compute_endpoint_override')
    return None


def _marker(page):
    """The last item nova can resume after (not a down-cell stand-in)."""
    for item in reversed(page):
        marker = item.get('uuid') or item.get('id')
        if marker and item.get('status') != 'UNKNOWN':
            return marker
    return None


def _with(url, params):
    if not params:
        return url
    return '%s?%s' % (url, parse.urlencode(sorted(params.items())))


def _fault(resp):
    """nova's error message, e.g. {"itemNotFound": {"message": ...}}.

    Only its first line: the error must fit on one.
    """
    body = diagnose.json_body(resp)
    if body is None:
        return diagnose.body_summary(resp)
    text = resp.text
    for value in (body if isinstance(body, dict) else {}).values():
        if isinstance(value, dict) and value.get('message'):
            text = value['message']
            break
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0][:200] if lines else ''
