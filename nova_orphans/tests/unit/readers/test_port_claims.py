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
"""The compute API reader's claims: the embedded flavor, os-interface and
the network API's port bindings.
"""

import io
import json
import os
from urllib import parse

import fixtures
from keystoneauth1 import exceptions as ks_exc
from oslotest import base

from nova_orphans.clients import compute
from nova_orphans.clients import network
from nova_orphans.engine import claims
from nova_orphans.engine import model
from nova_orphans.osc.v1 import orphan
from nova_orphans.osc.v1 import provider_orphan
from nova_orphans.readers import compute_api
from nova_orphans.tests.unit import fakes

VM1 = '11111111-1111-4111-8111-111111111111'
VM2 = '22222222-2222-4222-8222-222222222222'
RP1 = 'c1c1c1c1-c1c1-41c1-81c1-c1c1c1c1c1c1'
BW = 'b1b1b1b1-b1b1-41b1-81b1-b1b1b1b1b1b1'
BW2 = 'b2b2b2b2-b2b2-42b2-82b2-b2b2b2b2b2b2'


class FakeNetwork(fakes.FakeAdapter):
    """neutron's ports, filtered by device_id as neutron does."""

    def __init__(self, endpoint='http://network:9696/'):
        super().__init__()
        self.endpoint = endpoint
        self.ports = []
        self.down = False

    def request(self, url, method, raise_exc=True, **kwargs):
        self.requests.append((method, url, None))
        if self.down:
            raise ks_exc.ConnectFailure('Connection refused')
        path, _sep, query = url.partition('?')
        params = parse.parse_qs(query)
        if path != 'http://network:9696/v2.0/ports':
            return fakes.Response(404, {'NeutronError': {}})
        return fakes.Response(200, {'ports': [
            {k: v for k, v in p.items() if k in params['fields']}
            for p in self.ports if p['device_id'] in params['device_id']]})


def not_asked(reason, servers=1, server=VM1):
    """Why ``server``'s ports prove nothing, and the line of
    NovaSnapshot.unread for ``servers`` servers, when the network API
    request about ``server`` failed for ``reason``.
    """
    error = ('Network request GET /ports?device_id=%s&fields=id&'
             'fields=device_id&fields=binding%%3Aprofile failed: %s' %
             (server, reason))
    return (
        'neutron could not be asked for the ports bound to the server '
        '(%s)' % error,
        ['neutron could not be asked for the ports bound to %d server(s) '
         '(%s): what they hold on their nodes\' child providers is '
         'unverifiable' % (servers, error)])


def port(port_id, allocation=None, device_id=VM1):
    return {'id': port_id, 'device_id': device_id, 'name': 'ignored',
            'binding:profile': ({} if allocation is None
                                else {'allocation': allocation})}


class ComputeAPIClaimsTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.api = fakes.FakeCompute()
        self.api.servers = [fakes.server(VM1, 'host1')]
        self.net = FakeNetwork()
        self.reader = compute_api.ComputeAPIReader(
            compute.ComputeClient(self.api), concurrency=2,
            network=network.NetworkClient(self.net))

    def claims(self, reader=None, servers=(VM1,)):
        """VM1's claims; the snapshot read is self.snap."""
        self.snap = model.NovaSnapshot()
        (reader or self.reader).read_claims(self.snap, list(servers))
        return self.snap.claims[VM1]

    def assertNotAsked(self, found, reason, servers=1):
        """Nothing proven, the flavor still read, the run incomplete."""
        why, unread = not_asked(reason, servers)
        self.assertEqual(
            (None, why, claims.FLAVOR_BASE_CLASSES, unread),
            (found.port_providers, found.ports_error, found.flavor_classes,
             self.snap.unread))

    def attach(self, *ports):
        self.net.ports.extend(ports)
        self.api.interfaces[VM1] = [{'port_id': p['id']} for p in ports]

    def test_port_bindings_and_flavor(self):
        self.api.servers[0]['flavor']['extra_specs'] = {
            'resources1:NET_BW_EGR_KILOBIT_PER_SEC': '10'}
        self.attach(port('p1', BW), port('p2', {'group': BW2}), port('p3'))
        self.net.ports.append(port('other', BW, device_id='someone-else'))
        found = self.claims()
        self.assertEqual(model.Claims(
            port_providers=frozenset([BW, BW2]),
            flavor_classes=claims.FLAVOR_BASE_CLASSES | {
                'NET_BW_EGR_KILOBIT_PER_SEC'}), found)
        url, = [u for _m, u, _v in self.net.requests]
        self.assertEqual(
            'http://network:9696/v2.0/ports?device_id=%s&fields=id&'
            'fields=device_id&fields=binding%%3Aprofile' % VM1, url)
        self.assertEqual([], self.snap.unread)

    def test_endpoint_with_version(self):
        self.net.endpoint = 'http://network:9696/v2.0'
        self.attach(port('p1', BW))
        self.assertEqual(frozenset([BW]), self.claims().port_providers)

    def test_no_port_is_the_network_apis_word(self):
        # Unlike an empty info cache: neutron owns the bindings.
        found = self.claims()
        self.assertEqual((frozenset(), None, []),
                         (found.port_providers, found.ports_error,
                          self.snap.unread))

    def test_network_api_unreachable(self):
        self.attach(port('p1', BW))
        self.net.down = True
        self.assertNotAsked(self.claims(), 'Connection refused')

    def test_network_api_unreachable_for_many_servers(self):
        # One line for them all, with the first server's error.
        self.api.servers.append(fakes.server(VM2, 'host1'))
        self.attach(port('p1', BW))
        self.net.down = True
        self.assertNotAsked(self.claims(servers=(VM2, VM1)),
                            'Connection refused', servers=2)
        self.assertEqual(not_asked('Connection refused', server=VM2)[0],
                         self.snap.claims[VM2].ports_error)

    def test_network_api_answers_an_error(self):
        self.attach(port('p1', BW))
        self.net.endpoint = 'http://network:9696/wrong'
        self.assertNotAsked(self.claims(), '404 "{"NeutronError": {}}"')

    def test_network_answer_without_ports(self):
        self.attach(port('p1', BW))
        self.net.request = lambda url, method, **kw: fakes.Response(
            200, {'networks': []})
        self.assertNotAsked(self.claims(), 'the answer lists no ports')

    def test_no_network_endpoint(self):
        self.attach(port('p1', BW))

        def no_endpoint():
            raise ks_exc.EndpointNotFound('network')
        self.net.get_endpoint = no_endpoint
        self.assertNotAsked(
            self.claims(),
            'Configuration error: the catalog has no endpoint for service '
            'type None, interface any, region any: check region_name and '
            'the interface (valid_interfaces) against it')

    def test_no_network_client(self):
        self.attach(port('p1', BW))
        reader = compute_api.ComputeAPIReader(
            compute.ComputeClient(self.api), concurrency=2)
        found = self.claims(reader)
        error = 'Network request GET /ports failed: no network API client'
        self.assertEqual(
            (None, 'neutron could not be asked for the ports bound to the '
             'server (%s)' % error,
             ['neutron could not be asked for the ports bound to 1 '
              'server(s) (%s): what they hold on their nodes\' child '
              'providers is unverifiable' % error]),
            (found.port_providers, found.ports_error, self.snap.unread))
        # Only the server itself is read, for its flavor.
        self.assertEqual(['/servers/%s' % VM1], self.api.urls())

    def test_apis_disagree(self):
        # A port attached between the two reads.
        self.attach(port('p1', BW))
        self.net.ports.append(port('p2'))
        found = self.claims()
        # nova at work, not a part of the cloud not read.
        self.assertEqual(
            (None, 'the network API could not be read (Network request GET '
             '/ports failed: the compute and network APIs name different '
             'ports for the server)', []),
            (found.port_providers, found.ports_error, self.snap.unread))

    def test_server_gone(self):
        self.api.servers = []
        found = self.claims()
        self.assertEqual((None, None, []), (found.port_providers,
                                            found.flavor_classes,
                                            self.snap.unread))

    def test_no_embedded_flavor(self):
        del self.api.servers[0]['flavor']
        self.attach(port('p1'))
        found = self.claims()
        self.assertIsNone(found.flavor_classes)
        self.assertEqual(frozenset(), found.port_providers)


class OrphanCommandTestCase(base.BaseTestCase):
    """``openstack allocation orphan``: list, clean and restore a leak."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable(
            'XDG_STATE_HOME', self.tmp))
        self.compute = fakes.FakeCompute(max_limit=1000)
        self.compute.services = [fakes.service_doc('host1')]
        self.compute.hypervisors = [fakes.hypervisor(RP1, 'host1')]
        self.compute.servers = [fakes.server(VM1, 'host1')]
        self.compute.interfaces[VM1] = [{'port_id': 'p1'}]
        self.net = FakeNetwork()
        self.net.ports = [port('p1', BW2)]
        self.placement = fakes.FakePlacement()
        self.placement.provider(RP1, 'host1')
        for child in (BW, BW2):
            self.placement.provider(child, 'host1:agent:' + child[:2])
            self.placement.providers[child].update(
                parent_provider_uuid=RP1, root_provider_uuid=RP1)
        self.placement.allocate(VM1, RP1)
        self.placement.allocate(VM1, BW, NET_BW_EGR_KILOBIT_PER_SEC=10)
        self.placement.allocate(VM1, BW2, NET_BW_EGR_KILOBIT_PER_SEC=20)
        self.app = fakes.osc_app(self.placement, self.compute, self.net)

    def rows(self, cls, *argv):
        cmd = cls(self.app, None)
        parsed = cmd.get_parser('openstack allocation orphan').parse_args(
            list(argv) + ['-f', 'json'])
        self.app.stdout = io.StringIO()
        self.code = cmd.run(parsed)
        return json.loads(self.app.stdout.getvalue())

    def test_list_clean_restore(self):
        self.assertEqual(
            [(VM1, BW, 'leaked_port_allocation', 'trim_provider',
              {'NET_BW_EGR_KILOBIT_PER_SEC': 10})],
            [(r['consumer'], r['resource_provider'], r['reason'],
              r['action'], r['resources'])
             for r in self.rows(orphan.ListOrphan)])
        path = os.path.join(self.tmp, 'j.jsonl')
        rows = self.rows(orphan.CleanOrphan, '--journal', path)
        self.assertEqual([(BW, 'done')],
                         [(r['resource_provider'], r['outcome'])
                          for r in rows])
        self.assertEqual({RP1: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1},
                          BW2: {'NET_BW_EGR_KILOBIT_PER_SEC': 20}},
                         self.placement.consumers[VM1]['allocations'])
        rows = self.rows(orphan.RestoreOrphan, '--journal', path)
        self.assertEqual(['done'], [r['outcome'] for r in rows])
        self.assertEqual({RP1: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1},
                          BW: {'NET_BW_EGR_KILOBIT_PER_SEC': 10},
                          BW2: {'NET_BW_EGR_KILOBIT_PER_SEC': 20}},
                         self.placement.consumers[VM1]['allocations'])

    def test_provider_orphans_count_the_leak(self):
        # ``resource provider orphan list`` judges a tree's allocations
        # as ``allocation orphan list`` does: the leak is one orphan of
        # host1's live tree, whose rows count it.
        cmd = provider_orphan.ListProviderOrphan(self.app, None)
        parsed = cmd.get_parser('openstack resource provider orphan').\
            parse_args(['--all', '-f', 'json'])
        self.app.stdout = io.StringIO()
        cmd.run(parsed)
        self.assertEqual(
            {RP1: ('live_compute_node', 1, 0), BW: ('live_compute_node', 1, 1),
             BW2: ('live_compute_node', 1, 0)},
            {r['uuid']: (r['reason'], r['allocations'],
                         r['orphan_allocations'])
             for r in json.loads(self.app.stdout.getvalue())})

    def test_provider_orphans_network_api_down(self):
        # The trees' allocations are judged as above: incomplete (2).
        self.net.down = True
        cmd = provider_orphan.ListProviderOrphan(self.app, None)
        parsed = cmd.get_parser('openstack resource provider orphan').\
            parse_args(['--all', '-f', 'json'])
        self.app.stdout = io.StringIO()
        code = cmd.run(parsed)
        _why, (unread,) = not_asked('Connection refused')
        self.assertEqual(
            ({RP1: 0, BW: 0, BW2: 0}, 2,
             'WARNING: %s.\n' % unread),
            ({r['uuid']: r['orphan_allocations']
              for r in json.loads(self.app.stdout.getvalue())}, code,
             self.app.stderr.getvalue()))

    def test_network_api_down_is_unverifiable(self):
        # Incomplete (2), said first on stderr; clean changes nothing.
        self.net.down = True
        why, (unread,) = not_asked('Connection refused')
        said = 'WARNING: %s.\n' % unread
        self.assertEqual(([], 2, said), (self.rows(orphan.ListOrphan),
                                         self.code,
                                         self.app.stderr.getvalue()))
        self.app.stderr = io.StringIO()
        self.assertEqual(
            ([(BW, 'unverifiable', 'No port is known to claim this '
               'provider, but nothing proves it: %s.' % why),
              (BW2, 'unverifiable', 'No port is known to claim this '
               'provider, but nothing proves it: %s.' % why),
              (RP1, 'active_instance', None)], 2, said),
            (sorted((r['resource_provider'], r['reason'],
                     r['details'] if r['reason'] == 'unverifiable' else None)
                    for r in self.rows(orphan.ListOrphan, '--all')),
             self.code, self.app.stderr.getvalue()))
        self.app.stderr = io.StringIO()
        before = json.dumps(self.placement.consumers, sort_keys=True)
        path = os.path.join(self.tmp, 'j.jsonl')
        self.assertEqual(
            ([], 2, said),
            (self.rows(orphan.CleanOrphan, '--journal', path), self.code,
             self.app.stderr.getvalue()))
        self.assertFalse(os.path.exists(path))
        self.assertEqual(before, json.dumps(self.placement.consumers,
                                            sort_keys=True))
