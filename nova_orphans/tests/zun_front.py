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
"""Zun's container API, read-only, for the tests of the openstack front
end (Zun's API server itself is not run).

A WSGI app answering what Zun answers an admin for the two listings
the tool reads, ``GET /v1/containers`` and ``GET /v1/capsules`` with
``all_projects``, ``limit`` and ``marker``, in Zun's format (rows in
creation order, each with ``uuid``, ``status``, ``host`` and more);
served on 127.0.0.1 by the functional tests and through wsgi-intercept
by the scenario tests. Imports nothing of nova or Zun.
"""

import http
import json
import urllib.parse

HEADER = 'HTTP_OPENSTACK_API_VERSION'
# Zun 18.0.0's range.
MIN_VERSION = (1, 1)
MAX_VERSION = (1, 42)


class ZunFront:
    """``containers`` and ``capsules``: lists of rows (dicts with at
    least ``uuid``). ``down = True``: every request gets a 503, as from
    a container API that is down. ``asked``: each request's path and
    query, in order.
    """

    down = False

    def __init__(self, token='admin'):
        self.token = token
        self.containers = []
        self.capsules = []
        self.asked = []

    def add(self, uuid, host, kind='containers', status='Running'):
        row = {'uuid': uuid, 'name': 'zun-%s' % uuid[:8], 'status': status,
               'host': host, 'project_id': 'p', 'user_id': 'u',
               'links': []}
        getattr(self, kind).append(row)
        return row

    def __call__(self, environ, start_response):
        path = environ['PATH_INFO'].rstrip('/')
        query = environ.get('QUERY_STRING', '')
        self.asked.append('%s?%s' % (path, query))
        if self.down:
            return self._reply(start_response, 503, {
                'errors': [{'status': 503, 'title': 'down'}]})
        if environ.get('HTTP_X_AUTH_TOKEN') != self.token:
            return self._reply(start_response, 401, {'error': 'no token'})
        version = environ.get(HEADER, 'container 1.1').split()
        if (len(version) != 2 or version[0] != 'container' or not
                MIN_VERSION <= tuple(map(int, version[1].split('.'))) <=
                MAX_VERSION):
            return self._reply(start_response, 406, {'errors': [
                {'status': 406, 'title': 'Not Acceptable'}]})
        collection = path[len('/v1/'):] if path.startswith('/v1/') else None
        if (environ['REQUEST_METHOD'] != 'GET' or
                collection not in ('containers', 'capsules')):
            return self._reply(start_response, 404, {'errors': [
                {'status': 404, 'title': 'Not Found'}]})
        params = dict(urllib.parse.parse_qsl(query))
        rows = getattr(self, collection)
        if params.get('all_projects') not in ('1', 'True', 'true'):
            rows = []
        if 'marker' in params:
            uuids = [r['uuid'] for r in rows]
            rows = rows[uuids.index(params['marker']) + 1:]
        limit = int(params.get('limit', 1000))
        page = rows[:limit]
        return self._reply(start_response, 200, {
            collection: page, 'next': None if len(page) < limit else
            'http://zun/v1/%s?limit=%d&marker=%s' % (
                collection, limit, page[-1]['uuid'])})

    @staticmethod
    def _reply(start_response, status, body):
        data = json.dumps(body).encode()
        start_response('%d %s' % (status, http.HTTPStatus(status).phrase), [
            ('Content-Type', 'application/json'),
            ('Content-Length', str(len(data)))])
        return [data]
