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
"""Fake keystoneauth adapters answering like nova's and placement's APIs.

Just enough of each API for the reader and the commands: canned
documents in, the requests made recorded (method, url, microversion).
"""

import copy
import io
import json
import types
from urllib import parse

from nova_orphans.clients import compute as compute_client
from nova_orphans.clients import network as network_client
from nova_orphans.clients import placement as placement_client
from nova_orphans.osc import plugin

PROJECT = 'f0e1d2c3b4a5968778695a4b3c2d1e0f'
USER = '0f1e2d3c4b5a69788796a5b4c3d2e1f0'


class Response:

    def __init__(self, status_code, body=None):
        self.status_code = status_code
        self._body = body
        self.text = json.dumps(body) if body is not None else ''

    def json(self):
        return copy.deepcopy(self._body)


class FakeAdapter:

    endpoint = 'http://fake'
    # Where a keystoneauth adapter looks its endpoint up (none here).
    service_type = interface = region_name = None

    def __init__(self):
        self.requests = []

    def get_endpoint(self):
        return self.endpoint

    def request(self, url, method, raise_exc=True, microversion=None,
                json=None, redirect=None):
        self.requests.append((method, url, microversion))
        path, _sep, query = url.partition('?')
        params = dict(parse.parse_qsl(query))
        return self.handle(method, path, params, json)

    def urls(self, method='GET'):
        return [url for m, url, _v in self.requests if m == method]


def server(uuid, host=None, vm_state='active', task_state=None,
           status='ACTIVE', **extra):
    doc = {'id': uuid, 'status': status, 'tenant_id': PROJECT,
           'user_id': USER, 'OS-EXT-SRV-ATTR:host': host,
           'OS-EXT-SRV-ATTR:hypervisor_hostname': host,
           'OS-EXT-STS:vm_state': vm_state,
           'OS-EXT-STS:task_state': task_state,
           'image': {'id': 'img'},
           'flavor': {'vcpus': 1, 'ram': 512, 'disk': 1, 'ephemeral': 0,
                      'swap': 0, 'original_name': 'tiny',
                      'extra_specs': {}}}
    doc.update(extra)
    return doc


def hypervisor(uuid, host):
    return {'id': uuid, 'hypervisor_hostname': host,
            'hypervisor_type': 'fake', 'state': 'up', 'status': 'enabled',
            'service': {'host': host, 'id': 'svc-' + host}}


def service_doc(host, binary='nova-compute', status='enabled',
                forced_down=False):
    return {'host': host, 'binary': binary, 'status': status,
            'state': 'up', 'forced_down': forced_down, 'id': 'svc-' + host}


def migration_doc(uuid, instance_uuid, status, migration_type='migration',
                  source=None, dest=None):
    return {'uuid': uuid, 'id': 1, 'instance_uuid': instance_uuid,
            'status': status, 'migration_type': migration_type,
            'source_compute': source, 'source_node': source,
            'dest_compute': dest, 'dest_node': dest, 'dest_host': None}


class FakeCompute(FakeAdapter):
    """nova's compute API at 2.69; ``max_limit`` small to exercise paging.

    ``servers`` are live, ``deleted`` deleted (listed with deleted=1),
    ``hidden`` only answer GET /servers/{uuid} (a build request racing
    the listing, or a down cell's stand-in), ``unlisted`` uuids only
    have actions (rows set to deleted in SQL).
    """

    endpoint = 'http://compute/v2.1'

    def __init__(self, max_limit=2, version='2.96'):
        super().__init__()
        self.max_limit = max_limit
        self.version = version
        self.services = []
        self.hypervisors = []
        self.servers = []
        self.deleted = []
        self.hidden = []
        self.migrations = []
        self.interfaces = {}
        self.unlisted = []
        # nova's context_is_admin for the caller.
        self.admin = True

    def handle(self, method, path, params, body):
        if path == '':
            return Response(200, {'version': {
                'id': 'v2.1', 'version': self.version, 'min_version': '2.1',
                'status': 'CURRENT'}})
        if path == '/os-services':
            return Response(200, {'services': self.services})
        if path == '/os-hypervisors/detail':
            return self._page('hypervisors', self.hypervisors, params)
        if path == '/servers/detail':
            if params.get('status') == 'DELETED' and not self.admin:
                # nova's own check, whatever its policies say.
                return Response(403, {'forbidden': {
                    'code': 403, 'message': 'Only administrators may list '
                    'deleted instances'}})
            pool = self.deleted if params.get('deleted') else self.servers
            if 'uuid' in params:
                pool = [s for s in pool if s['id'] == params['uuid']]
            return self._page('servers', pool, params)
        if path == '/os-migrations':
            pool = self.migrations
            if 'instance_uuid' in params:
                pool = [m for m in pool
                        if m['instance_uuid'] == params['instance_uuid']]
            return self._page('migrations', pool, params)
        parts = path.strip('/').split('/')
        if parts[0] == 'servers' and len(parts) == 2:
            for doc in self.servers + self.hidden:
                if doc['id'] == parts[1]:
                    return Response(200, {'server': doc})
            return Response(404, {'itemNotFound': {
                'code': 404, 'message': 'Instance %s could not be found.'
                % parts[1]}})
        if parts[0] == 'servers' and parts[2:] == ['os-instance-actions']:
            if parts[1] in self.unlisted or any(
                    doc['id'] == parts[1] for doc in
                    self.servers + self.hidden + self.deleted):
                return Response(200, {'instanceActions': []})
            return Response(404, {'itemNotFound': {
                'code': 404, 'message': 'Instance %s could not be found.'
                % parts[1]}})
        if parts[0] == 'servers' and parts[2:] == ['os-interface']:
            return Response(200, {'interfaceAttachments':
                                  self.interfaces.get(parts[1], [])})
        return Response(404, {'itemNotFound': {'message': 'no route'}})

    def _page(self, key, items, params):
        limit = min(int(params.get('limit', self.max_limit)), self.max_limit)
        start = 0
        if 'marker' in params:
            ids = [i.get('uuid') or i.get('id') for i in items]
            if params['marker'] not in ids:
                return Response(400, {'badRequest': {
                    'message': 'marker not found'}})
            start = ids.index(params['marker']) + 1
        page = items[start:start + limit]
        doc = {key: page}
        if len(page) == limit:
            doc[key + '_links'] = [{'rel': 'next', 'href': 'ignored'}]
        return Response(200, doc)


class FakePlacement(FakeAdapter):
    """Placement at 1.39: providers, allocations, consumer documents."""

    endpoint = 'http://placement'

    def __init__(self):
        super().__init__()
        self.providers = {}
        # {provider: set of traits}
        self.traits = {}
        # {consumer: {'allocations': {rp: resources}, 'generation': n}}
        self.consumers = {}

    def provider(self, uuid, name):
        self.providers[uuid] = {'uuid': uuid, 'name': name,
                                'root_provider_uuid': uuid,
                                'parent_provider_uuid': None,
                                'generation': 1}
        return uuid

    def allocate(self, consumer, rp, **resources):
        resources = resources or {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
        doc = self.consumers.setdefault(
            consumer, {'allocations': {}, 'generation': 1})
        doc['allocations'][rp] = resources

    def handle(self, method, path, params, body):
        if path == '/':
            return Response(200, {'versions': [{
                'id': 'v1.0', 'max_version': '1.39', 'min_version': '1.0'}]})
        if path == '/resource_providers':
            if params.get('required'):
                return Response(200, {'resource_providers': [
                    self.providers[u] for u in sorted(self.traits)
                    if params['required'] in self.traits[u]]})
            return Response(200, {'resource_providers':
                                  list(self.providers.values())})
        if path == '/traits':
            prefix = params.get('name', '').replace('startswith:', '')
            return Response(200, {'traits': sorted(
                {t for traits in self.traits.values() for t in traits
                 if t.startswith(prefix)})})
        parts = path.strip('/').split('/')
        if parts[0] == 'resource_providers' and parts[2:] == ['allocations']:
            return Response(200, {'allocations': {
                c: {'resources': doc['allocations'][parts[1]]}
                for c, doc in self.consumers.items()
                if parts[1] in doc['allocations']}})
        if parts[0] == 'allocations' and method == 'GET':
            doc = self.consumers.get(parts[1])
            if not doc or not doc['allocations']:
                return Response(200, {'allocations': {}})
            return Response(200, {
                'allocations': {rp: {'resources': r, 'generation': 1}
                                for rp, r in doc['allocations'].items()},
                'project_id': PROJECT, 'user_id': USER,
                'consumer_generation': doc['generation'],
                'consumer_type': 'unknown'})
        if parts[0] == 'allocations' and method == 'PUT':
            doc = self.consumers.setdefault(
                parts[1], {'allocations': {}, 'generation': None})
            if body['consumer_generation'] != doc['generation']:
                return Response(409, {'errors': [{
                    'code': 'placement.concurrent_update',
                    'detail': 'consumer generation conflict'}]})
            doc['allocations'] = {rp: dict(a['resources'])
                                  for rp, a in body['allocations'].items()}
            # Placement deletes a consumer left without allocations.
            doc['generation'] = ((doc['generation'] or 0) + 1
                                 if doc['allocations'] else None)
            return Response(204)
        return Response(404, {'errors': [{'detail': 'no route'}]})


def osc_app(placement, compute, network=None):
    """cliff's App for an ``openstack`` command run from the command
    line, its clients over these fakes (``network``: none by default).
    """
    return types.SimpleNamespace(
        stdout=io.StringIO(), stderr=io.StringIO(), interactive_mode=False,
        client_manager=types.SimpleNamespace(nova_orphans=plugin.Clients(
            placement_client.PlacementClient(placement),
            compute_client.ComputeClient(compute),
            None if network is None else network_client.NetworkClient(
                network))))
