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
"""Container (Zun) API client: which consumers are Zun's containers.

Service type ``container`` (python-zunclient's). Zun's API has no
filter by uuid, and ``GET /v1/containers/{uuid}`` asks the container's
compute host (and fails while that host is down), so the containers
and capsules of every project are listed, a page at a time: ``GET
/v1/containers?all_projects=1`` and ``GET /v1/capsules?all_projects=1``
(admin only by Zun's default policy), paged with ``limit`` and
``marker``. Every request carries ``OpenStack-API-Version: container
1.1``, the lowest version every Zun serves: the fields read (``uuid``,
``status``, ``host``) are in all of them, and a pinned version keeps
the format fixed. Any failure is a ContainerError, which the zun rule
turns into ``unverifiable``, never into a finding.
"""

from keystoneauth1 import exceptions as ks_exc

from nova_orphans.clients import auth
from nova_orphans.clients import diagnose
from nova_orphans import exception
from nova_orphans.i18n import _

SERVICE_TYPE = 'container'
VERSION_HEADER = {'OpenStack-API-Version': 'container 1.1'}
VERSION_PATH = 'v1'
# Rows asked for per page; Zun caps it at its own [api] max_limit.
PAGE_SIZE = 1000
# The collections that hold what Zun claims in placement, each with
# the kind model.ZUN_KINDS calls its rows.
COLLECTIONS = (('containers', 'container'), ('capsules', 'capsule'))


class ContainerError(exception.NovaOrphansException):
    msg_fmt = _('Container request %(method)s %(url)s failed: %(reason)s')


class ContainerClient:
    """A keystoneauth adapter for service type ``container``.

    ``cataloged()`` says whether the cloud has Zun: an endpoint override
    or the service catalog names the service (see osc.plugin).
    """

    def __init__(self, adapter, cataloged):
        self._adapter = adapter
        self.cataloged = cataloged

    @property
    def endpoint(self):
        try:
            return self._adapter.get_endpoint() or '(container)'
        except ks_exc.ClientException:
            return '(container)'

    def listing(self):
        """[(kind, row)]: every container and capsule of every project,
        each row a dict with at least ``uuid``.
        """
        return [(kind, row) for collection, kind in COLLECTIONS
                for row in self._all(collection)]

    def _all(self, collection):
        rows = []
        marker = None
        while True:
            page = self._page(collection, marker)
            rows.extend(page)
            if len(page) < PAGE_SIZE:
                return rows
            marker = page[-1]['uuid']

    def _page(self, collection, marker):
        path = '/%s?all_projects=1&limit=%d' % (collection, PAGE_SIZE)
        if marker is not None:
            path += '&marker=%s' % marker
        resp = auth.get(self._adapter, VERSION_PATH, path, ContainerError,
                        _('no container endpoint'), headers=VERSION_HEADER)
        if resp.status_code != 200:
            raise ContainerError(method='GET', url=path,
                                 reason=diagnose.answer(resp))
        body = diagnose.json_body(resp)
        rows = body.get(collection) if isinstance(body, dict) else None
        if not isinstance(rows, list) or not all(
                isinstance(row, dict) and isinstance(row.get('uuid'), str)
                for row in rows):
            raise ContainerError(method='GET', url=path, reason=_(
                'the answer lists no %(collection)s') % {
                    'collection': collection})
        return rows
