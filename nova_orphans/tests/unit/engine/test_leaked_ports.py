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
"""leaked_port_allocation: every part of its proof, both ways."""

import datetime
import json

from oslo_config import cfg
from oslotest import base

from nova_orphans.app import audit as audit_mod
from nova_orphans.clients import network
from nova_orphans import conf as orphans_conf
from nova_orphans.engine import claims
from nova_orphans.engine import classify
from nova_orphans.engine import model
from nova_orphans.engine import reasons as r
from nova_orphans.engine import rules
from nova_orphans.readers import base as readers_base
from nova_orphans.readers import nova_db
from nova_orphans.tests.unit import cloud as cloud_mod
from nova_orphans.tests.unit.engine import test_classify
from nova_orphans.tests.unit import fakes
from nova_orphans.tests.unit.readers import test_port_claims

FINE = r.NONE
NOW = datetime.datetime(2026, 11, 23, 12, 0, 0)
GRACE = datetime.timedelta(seconds=300)
LONG_AGO = NOW - datetime.timedelta(hours=1)
BW = {'NET_BW_EGR_KILOBIT_PER_SEC': 1000, 'NET_BW_IGR_KILOBIT_PER_SEC': 1000}
FLAVOR = {'vcpus': 1, 'memory_mb': 512, 'root_gb': 1, 'extra_specs': {}}
LEAKED = (r.LEAKED_PORT_ALLOCATION, r.TRIM_PROVIDER)


def vif(allocation=None, port='port-1'):
    return {'id': port, 'profile': ({} if allocation is None
                                    else {'allocation': allocation})}


class LeakedPortTestCase(test_classify.ClassifyTestCase):

    def setUp(self):
        super().setUp()
        c = self.cloud
        c.nova.recent_since = NOW - GRACE
        self.agent = c.provider('host1:agent', parent=self.host1)
        self.bw = c.provider('host1:agent:br-ex', parent=self.agent)
        self.bw2 = c.provider('host1:agent:br-phy', parent=self.agent)

    def server(self, network_info=(), flavor=FLAVOR, resources=BW,
               rp=None, changed=LONG_AGO, **kwargs):
        """A live server on host1 with its flavor on the root and
        ``resources`` on ``rp`` (default: self.bw); ``network_info``
        None: its claims were not read.
        """
        vm = self.cloud.instance('host1', **kwargs)
        self.cloud.alloc(vm, self.host1)
        self.cloud.alloc(vm, rp or self.bw, **resources)
        if network_info is not None:
            self.cloud.nova.claims[vm] = claims.claims(
                list(network_info), flavor, network_changed_at=changed)
        return vm

    def verdict(self, vm, rp=None):
        # The same chain, not DEFAULT_RULES itself: no shortcut.
        self.assertEqual(
            self.cloud.findings(),
            self.cloud.findings(rules=list(rules.DEFAULT_RULES)))
        return self.cloud.verdicts()[(vm, rp or self.bw)]

    def test_leak(self):
        vm = self.server([vif()])
        self.assertVerdicts({(vm, self.host1): (r.ACTIVE_INSTANCE, FINE),
                             (vm, self.bw): LEAKED})
        finding, = [f for f in self.cloud.findings() if f.is_orphan]
        self.assertEqual(
            'No port of the instance claims this provider (its ports\' '
            'binding profiles name no provider) and its flavor requests '
            'none of NET_BW_EGR_KILOBIT_PER_SEC, '
            'NET_BW_IGR_KILOBIT_PER_SEC. The ports are those of nova\'s '
            'info cache, written 2026-11-23 11:00:00 UTC: neutron was not '
            'asked, and nova refreshes the cache only on neutron\'s events '
            '(no longer periodically by default since nova 31.0.0).',
            finding.details)
        self.assertEqual((self.bw, self.host1, 'host1:agent:br-ex'),
                         (finding.resource_provider, finding.root_provider,
                          finding.resource_provider_name))

    def test_cache_older_than_the_last_interface_change(self):
        vm = self.server([vif()])
        self.cloud.nova.activity[vm] = model.Activity(changed_at=LONG_AGO)
        self.cloud.nova.claims[vm] = claims.claims(
            [vif()], FLAVOR, network_changed_at=LONG_AGO,
            ports_changed_at=LONG_AGO + datetime.timedelta(seconds=1))
        self.assertEqual((r.UNVERIFIABLE, FINE), self.verdict(vm))
        finding, = [f for f in self.cloud.findings()
                    if f.resource_provider == self.bw]
        self.assertEqual(
            'No port in nova\'s info cache claims this provider, but the '
            'cache (written 2026-11-23 11:00:00 UTC) is older than the '
            'server\'s last interface change (2026-11-23 11:00:01 UTC) '
            'and neutron was not asked: it proves nothing.',
            finding.details)
        # Written by that change (a detach writes it before it frees the
        # port's resources): it stands.
        self.cloud.nova.claims[vm] = claims.claims(
            [vif()], FLAVOR, network_changed_at=LONG_AGO,
            ports_changed_at=LONG_AGO - datetime.timedelta(seconds=1))
        self.assertEqual(LEAKED, self.verdict(vm))

    def test_leak_beside_a_port_that_claims_another_provider(self):
        vm = self.server([vif(self.bw2)])
        self.cloud.alloc(vm, self.bw2, **BW)
        self.assertVerdicts({(vm, self.host1): (r.ACTIVE_INSTANCE, FINE),
                             (vm, self.bw): LEAKED,
                             (vm, self.bw2): (r.ACTIVE_INSTANCE, FINE)})
        leaked, = [f for f in self.cloud.findings() if f.is_orphan]
        self.assertIn('name %s)' % self.bw2, leaked.details)

    def test_network_info_of_another_node_is_unverifiable(self):
        # Written before the server moved here, or naming a provider
        # placement no longer has.
        host2_bw = self.cloud.provider('host2:agent:br-ex',
                                       parent=self.host2)
        for named in (host2_bw, cloud_mod.uuid('gone')):
            vm = self.server([vif(named)])
            self.assertEqual((r.UNVERIFIABLE, FINE), self.verdict(vm))
        finding = [f for f in self.cloud.findings()
                   if f.reason == r.UNVERIFIABLE][0]
        self.assertEqual(
            'No port claims this provider, but the network info names '
            '%s, not in this node\'s tree: it may predate a move.'
            % host2_bw, finding.details)

    def test_moving_server_is_in_progress_not_unverifiable(self):
        # A live migration to host1 paused: the vifs still name the
        # source's bridge; nova working on it is what the row says.
        host2_bw = self.cloud.provider('host2:agent:br-ex',
                                       parent=self.host2)
        vm = self.server([vif(host2_bw)], task_state='migrating')
        self.cloud.migration(vm, 'running', 'live-migration', 'host2',
                             'host1')
        self.assertEqual((r.IN_PROGRESS, FINE), self.verdict(vm))
        self.cloud.update_instance(vm, task_state=None)
        self.assertEqual((r.ACTIVE_MIGRATION, FINE), self.verdict(vm))

    def test_port_claims_by_provider_uuid(self):
        vm = self.server([vif(), vif(self.bw, port='qos')])
        self.assertEqual((r.ACTIVE_INSTANCE, FINE), self.verdict(vm))

    def test_port_claims_by_request_group(self):
        # The extended resource request: request group -> provider.
        vm = self.server([vif({'group-1': self.bw2, 'group-2': self.bw})])
        self.assertEqual((r.ACTIVE_INSTANCE, FINE), self.verdict(vm))

    def test_flavor_claims_the_class(self):
        vm = self.server([vif()], flavor=dict(FLAVOR, extra_specs={
            'resources1:NET_BW_EGR_KILOBIT_PER_SEC': '1000'}))
        self.assertEqual((r.ACTIVE_INSTANCE, FINE), self.verdict(vm))
        vm = self.server([vif()], flavor=dict(FLAVOR, extra_specs={
            'resources:NET_BW_IGR_KILOBIT_PER_SEC': '1000'}))
        self.assertEqual((r.ACTIVE_INSTANCE, FINE), self.verdict(vm))

    def test_flavor_of_zero_claims_nothing(self):
        vm = self.server([vif()], flavor=dict(FLAVOR, extra_specs={
            'resources:NET_BW_EGR_KILOBIT_PER_SEC': '0'}))
        self.assertEqual(LEAKED, self.verdict(vm))

    def test_claims_not_read_are_unverifiable(self):
        vm = self.server(None)
        self.assertEqual((r.UNVERIFIABLE, FINE), self.verdict(vm))

    def test_empty_or_unparsable_network_info_is_unverifiable(self):
        for info in ([], None, '', '[{"id": ', '{}', '[1]',
                     [{'id': 'p', 'profile': 'x'}],
                     [{'id': 'p', 'profile': {'allocation': 5}}],
                     [{'id': 'p', 'profile': {'allocation': {'g': 5}}}]):
            vm = self.cloud.instance('host1')
            self.cloud.alloc(vm, self.bw, **BW)
            self.cloud.nova.claims[vm] = claims.claims(info, FLAVOR)
            verdict = self.verdict(vm)
            self.assertEqual((r.UNVERIFIABLE, FINE), verdict, info)

    def test_network_api_listing_no_port_is_a_proof(self):
        # The one port was deleted in neutron (network-vif-deleted).
        vm = self.server(None)
        self.cloud.nova.claims[vm] = claims.claims([], FLAVOR, listed=True)
        self.assertEqual(LEAKED, self.verdict(vm))

    def db_reader(self, net):
        """nova-orphans-manage's reader asking ``net`` (a FakeNetwork)
        for the ports of the servers whose info cache lists none; its
        databases are never opened here.
        """
        conf = cfg.ConfigOpts()
        orphans_conf.register_opts(conf, placement_opts=False)
        conf([], project='nova', default_config_files=[],
             default_config_dirs=[])
        conf.set_override('connection', 'sqlite://', group='api_database')
        return nova_db.NovaDBReader(
            conf, network=lambda: network.NetworkClient(net))

    def test_neutron_is_asked_for_every_server(self):
        # neutron deleted the server's only port; another's cache was
        # emptied while its port is still bound; a third lists its port,
        # which neutron binds with no allocation; a fourth's cache names
        # a port with no allocation that neutron binds with this one
        # (the cache is out of date); a fifth's cache names a port with
        # this allocation that neutron no longer binds to it (an event
        # lost): neutron's word, every time.
        net = test_port_claims.FakeNetwork()
        deleted = self.server([])
        bound = self.server([])
        listed = self.server([vif(port='p2')])
        stale = self.server([vif(port='p3')])
        unbound = self.server([vif(self.bw, port='p4')])
        net.ports = [test_port_claims.port('p1', self.bw, device_id=bound),
                     test_port_claims.port('p2', device_id=listed),
                     test_port_claims.port('p3', self.bw, device_id=stale)]
        nova = self.cloud.nova
        self.assertIs(nova, self.db_reader(net).ports.prove(nova))
        active = (r.ACTIVE_INSTANCE, FINE)
        self.assertVerdicts({
            (deleted, self.host1): active, (deleted, self.bw): LEAKED,
            (bound, self.host1): active, (bound, self.bw): active,
            (listed, self.host1): active, (listed, self.bw): LEAKED,
            (stale, self.host1): active, (stale, self.bw): active,
            (unbound, self.host1): active, (unbound, self.bw): LEAKED})
        self.assertFalse(any(c.cache_only for c in nova.claims.values()))
        # One request for every server.
        self.assertEqual(
            ['http://network:9696/v2.0/ports?%s&'
             'fields=id&fields=device_id&fields=binding%%3Aprofile'
             % '&'.join('device_id=%s' % u for u in sorted(
                 (deleted, bound, listed, stale, unbound)))],
            [url for _m, url, _v in net.requests])
        self.assertEqual([], nova.unread)
        self.assertEqual(model.Claims(
            port_providers=frozenset(),
            flavor_classes=claims.FLAVOR_BASE_CLASSES,
            network_changed_at=LONG_AGO), nova.claims[deleted])

    def test_servers_asked_a_hundred_at_a_time(self):
        net = test_port_claims.FakeNetwork()
        servers = [self.server([]) for _i in range(101)]
        net.ports = [test_port_claims.port('p%d' % i, self.bw, device_id=vm)
                     for i, vm in enumerate(servers)]
        self.db_reader(net).ports.prove(self.cloud.nova)
        self.assertEqual([100, 1], [url.count('device_id=')
                                    for _m, url, _v in net.requests])
        self.assertEqual({(r.ACTIVE_INSTANCE, FINE)},
                         {self.verdict(vm) for vm in servers})

    def test_neutron_down_is_unverifiable_and_incomplete(self):
        net = test_port_claims.FakeNetwork()
        net.request = lambda url, method, **kw: fakes.Response(
            503, {'error': 'down'})
        vm = self.server([])
        nova = self.cloud.nova
        self.db_reader(net).ports.prove(nova)
        self.assertEqual((r.UNVERIFIABLE, FINE), self.verdict(vm))
        error = ('Network request GET /ports?device_id=%s&fields=id&'
                 'fields=device_id&fields=binding%%3Aprofile failed: 503 '
                 '"{"error": "down"}"' % vm)
        finding, = [f for f in self.cloud.findings()
                    if f.resource_provider == self.bw]
        self.assertEqual(
            'No port is known to claim this provider, but nothing proves '
            'it: neutron could not be asked for the ports bound to the '
            'server (%s).' % error, finding.details)
        self.assertEqual(
            ['neutron could not be asked for the ports bound to 1 '
             'server(s) whose info cache in nova\'s database lists no port '
             '(%s): what they hold on their nodes\' child providers is '
             'unverifiable' % error], nova.unread)
        self.assertTrue(nova.claims[vm].ports_unlisted)

    def test_json_text_is_parsed(self):
        vm = self.server(None)
        self.cloud.nova.claims[vm] = claims.claims(
            json.dumps([vif(self.bw)]), FLAVOR)
        self.assertEqual((r.ACTIVE_INSTANCE, FINE), self.verdict(vm))
        self.cloud.nova.claims[vm] = claims.claims(json.dumps([vif()]),
                                                   FLAVOR)
        self.assertEqual(LEAKED, self.verdict(vm))

    def test_a_port_claim_needs_no_flavor(self):
        vm = self.server([vif(self.bw)], flavor=None)
        self.assertEqual((r.ACTIVE_INSTANCE, FINE), self.verdict(vm))

    def test_unreadable_flavor_is_unverifiable(self):
        for flavor in (None, {}, {'vcpus': 1}, dict(FLAVOR,
                                                    extra_specs='x')):
            vm = self.server([vif()], flavor=flavor)
            self.assertEqual((r.UNVERIFIABLE, FINE), self.verdict(vm),
                             flavor)
        details = {f.details for f in self.cloud.findings()
                   if f.reason == r.UNVERIFIABLE}
        self.assertEqual({'No port is known to claim this provider, but '
                          'nothing proves it: the instance\'s flavor cannot '
                          'be read.'}, details)

    def test_network_api_unreachable_is_unverifiable(self):
        vm = self.server(None)
        self.cloud.nova.claims[vm] = claims.claims(
            None, FLAVOR, ports_error='the network API could not be read')
        self.assertEqual((r.UNVERIFIABLE, FINE), self.verdict(vm))

    def test_other_classes_beside_port_classes_are_unverifiable(self):
        vm = self.server([vif()], resources=dict(BW, CUSTOM_PCI_8086=1))
        self.assertEqual((r.UNVERIFIABLE, FINE), self.verdict(vm))

    def test_children_the_flavor_claims_are_not_judged(self):
        """vGPU, PCI in placement, accelerators: not a port's classes."""
        gpu = self.cloud.provider('host1_pci_0000_81_00_0',
                                  parent=self.host1)
        pci = self.cloud.provider('host1_0000:82:00.0', parent=self.host1)
        vgpu = self.server([vif()], resources={'VGPU': 1}, rp=gpu,
                           flavor=dict(FLAVOR, extra_specs={
                               'resources:VGPU': '1'}))
        pf = self.server(None, resources={'CUSTOM_PCI_8086_1572': 1},
                         rp=pci)
        self.assertEqual((r.ACTIVE_INSTANCE, FINE), self.verdict(vgpu, gpu))
        self.assertEqual((r.ACTIVE_INSTANCE, FINE), self.verdict(pf, pci))
        self.assertEqual(set(), classify.claim_candidates(
            self.cloud.snapshot()) & {vgpu, pf})

    def test_root_is_never_judged(self):
        vm = self.cloud.instance('host1')
        self.cloud.alloc(vm, self.host1, VCPU=1, **BW)
        self.cloud.nova.claims[vm] = claims.claims([vif()], FLAVOR)
        self.assertVerdicts({(vm, self.host1): (r.ACTIVE_INSTANCE, FINE)})

    def test_sharing_provider_is_never_judged(self):
        shared = self.cloud.provider('shared-bw', sharing=True,
                                     aggregates=['agg'])
        host3 = self.cloud.node('host3', aggregates=['agg'])
        vm = self.cloud.instance('host3')
        self.cloud.alloc(vm, host3)
        self.cloud.alloc(vm, shared, **BW)
        self.cloud.nova.claims[vm] = claims.claims([vif()], FLAVOR)
        self.assertVerdicts({(vm, host3): (r.ACTIVE_INSTANCE, FINE),
                             (vm, shared): (r.ACTIVE_INSTANCE, FINE)})

    def test_child_of_another_node_is_not_judged_here(self):
        vm = self.cloud.instance('host2')
        self.cloud.alloc(vm, self.host2)
        self.cloud.alloc(vm, self.bw, **BW)
        self.cloud.nova.claims[vm] = claims.claims([vif(self.bw)], FLAVOR)
        self.assertEqual((r.STALE_PROVIDER, r.REMOVE_PROVIDER),
                         self.verdict(vm))

    def test_migration_consumer_is_not_judged_here(self):
        vm = self.server([vif()])
        mig = self.cloud.migration(vm, 'migrating', 'live-migration',
                                   'host1', 'host2')
        self.cloud.alloc(mig, self.bw, **BW)
        self.assertEqual((r.ACTIVE_MIGRATION, FINE),
                         self.cloud.verdicts()[(mig, self.bw)])

    def test_task_state_is_in_progress(self):
        vm = self.server([vif()], task_state='rebooting')
        self.assertEqual((r.IN_PROGRESS, FINE), self.verdict(vm))

    def test_pending_instance_action_is_in_progress(self):
        # A detach: nova wrote the network info, the resources go next.
        vm = self.server([vif()])
        self.cloud.nova.activity[vm] = model.Activity(
            changed_at=LONG_AGO, pending_event='compute_detach_interface',
            pending_since=LONG_AGO)
        self.assertEqual((r.IN_PROGRESS, FINE), self.verdict(vm))

    def test_recent_change_is_in_progress(self):
        vm = self.server([vif()])
        self.cloud.nova.activity[vm] = model.Activity(changed_at=NOW)
        self.assertEqual((r.IN_PROGRESS, FINE), self.verdict(vm))

    def test_recent_network_info_is_in_progress(self):
        vm = self.server([vif()], changed=NOW - GRACE)
        self.assertEqual((r.IN_PROGRESS, FINE), self.verdict(vm))
        finding, = [f for f in self.cloud.findings()
                    if f.reason == r.IN_PROGRESS]
        self.assertEqual(
            'nova wrote the instance\'s network info at 2026-11-23 '
            '11:55:00 UTC, within [nova_orphans] grace_period of this run. '
            'Run again once it settles.', finding.details)
        old = self.server([vif()], changed=NOW - GRACE -
                          datetime.timedelta(seconds=1))
        self.assertEqual(LEAKED, self.verdict(old))

    def test_no_time_limit_without_grace_period(self):
        self.cloud.nova.recent_since = None
        vm = self.server([vif()], changed=NOW)
        self.assertEqual(LEAKED, self.verdict(vm))

    def test_migration_in_progress(self):
        vm = self.server([vif()])
        self.cloud.migration(vm, 'running', 'live-migration', 'host1',
                             'host2')
        self.assertEqual((r.ACTIVE_MIGRATION, FINE), self.verdict(vm))

    def test_unsettled_states_are_left_to_their_rules(self):
        for state, reason in (('building', r.BUILDING),
                              ('soft-delete', r.SOFT_DELETED),
                              ('resized', r.IN_PROGRESS)):
            vm = self.server([vif()], vm_state=state)
            self.assertEqual(reason, self.verdict(vm)[0], state)
        vm = self.server([vif()], deleted=True, vm_state='deleted')
        self.assertEqual((r.DELETED_INSTANCE, r.DELETE_CONSUMER),
                         self.verdict(vm))

    def test_unreadable_cell_protects_first(self):
        vm = self.server([vif()])
        self.cloud.add_cell('cell2', readable=False)
        self.cloud.nova.cells[self.cloud.cells['cell1']] = model.Cell(
            uuid=self.cloud.cells['cell1'], name='cell1', readable=False)
        self.assertEqual((r.UNVERIFIABLE, FINE), self.verdict(vm))


class CandidatesTestCase(base.BaseTestCase):
    """Claims are read for the instances the rule judges, no others."""

    def test_candidates(self):
        c = cloud_mod.Cloud()
        host1 = c.node('host1')
        c.node('host2')
        bw = c.provider('bw', parent=host1)
        gpu = c.provider('gpu', parent=host1)
        leaky = c.instance('host1')
        c.alloc(leaky, host1)
        c.alloc(leaky, bw, **BW)
        plain = c.instance('host1')
        c.alloc(plain, host1)
        on_root = c.instance('host1')
        c.alloc(on_root, host1, **BW)
        vgpu = c.instance('host1')
        c.alloc(vgpu, gpu, VGPU=1)
        elsewhere = c.instance('host2')
        c.alloc(elsewhere, bw, **BW)
        gone = c.instance('host1', deleted=True)
        c.alloc(gone, bw, **BW)
        mig = c.migration(plain, 'migrating', source='host1', dest='host2')
        c.alloc(mig, bw, **BW)
        known = c.instance('host1')
        c.alloc(known, bw, **BW)
        c.nova.claims[known] = model.Claims()
        self.assertEqual({leaky}, classify.claim_candidates(c.snapshot()))


class PlainlyActiveTestCase(base.BaseTestCase):

    def test_root_children_without_port_classes_and_claimed_ones(self):
        c = cloud_mod.Cloud()
        host1 = c.node('host1')
        child = c.provider('bw', parent=host1)
        vm = c.instance('host1')
        inst, node = c.nova.instances[vm], c.nova.compute_nodes[host1]

        def plainly(rp, resources, claims_=None):
            return classify.plainly_active(
                inst, node, model.Allocation(vm, rp, resources),
                claims_ or {}, False) is rules.runs_here
        self.assertTrue(plainly(host1, BW))
        self.assertTrue(plainly(child, {'VGPU': 1}))
        self.assertFalse(plainly(child, BW))
        self.assertFalse(plainly(child, BW, {vm: model.Claims()}))
        self.assertFalse(plainly(child, BW, {vm: model.Claims(
            port_providers=frozenset(['another']))}))
        self.assertTrue(plainly(child, BW, {vm: model.Claims(
            port_providers=frozenset([child]))}))
        self.assertIsNone(classify.plainly_active(
            inst, None, model.Allocation(vm, child, {}), {}, False))

    def test_sharing_provider(self):
        c = cloud_mod.Cloud()
        c.node('host1')
        vm = c.instance('host1')
        inst = c.nova.instances[vm]
        alloc = model.Allocation(vm, 'nfs', {'DISK_GB': 1})
        self.assertIs(rules.shares,
                      classify.plainly_active(inst, None, alloc, {}, True))
        self.assertIsNone(classify.plainly_active(inst, None, alloc, {},
                                                  False))
        shelved = c.nova.instances[c.instance(
            'host1', vm_state='shelved_offloaded')]
        self.assertIsNone(classify.plainly_active(shelved, None, alloc, {},
                                                  True))


class ParseTestCase(base.BaseTestCase):

    def test_port_providers(self):
        self.assertEqual(frozenset(['a', 'b', 'c']), claims.port_providers(
            [vif('a'), vif({'g1': 'b', 'g2': 'c'}), vif(),
             {'id': 'x', 'profile': None}, {'id': 'y'}]))
        self.assertEqual(frozenset(), claims.port_providers('[{"id": "p"}]'))
        for bad in (None, '', '[]', [], 'nope', '{}', '[null]'):
            self.assertRaises(claims.Unproven, claims.port_providers, bad)
        # The network API's own list of the server's ports.
        self.assertEqual(frozenset(), claims.port_providers([], listed=True))
        for bad in (None, '', [None], [{'profile': 'x'}]):
            self.assertRaises(claims.Unproven, claims.port_providers, bad,
                              listed=True)

    def test_flavor_classes(self):
        self.assertEqual(
            claims.FLAVOR_BASE_CLASSES | {'VGPU', 'CUSTOM_X'},
            claims.flavor_classes(dict(FLAVOR, extra_specs={
                'resources:VGPU': '1', 'resources_g1:CUSTOM_X': '2',
                'resources:CUSTOM_Y': '0', 'hw:cpu_policy': 'dedicated',
                'trait:CUSTOM_Z': 'required'})))
        for bad in (None, [], {}, {'vcpus': 1}):
            self.assertRaises(claims.Unproven, claims.flavor_classes, bad)

    def test_flavor_record(self):
        data = dict(FLAVOR, extra_specs={'resources:VGPU': '1'})
        serialized = json.dumps({'cur': {
            'nova_object.name': 'Flavor', 'nova_object.data': data},
            'old': None, 'new': None})
        self.assertEqual(data, claims.flavor_record(serialized))
        for bad in (None, '', 'x', '[]', '{"cur": null}', '{"cur": 1}'):
            self.assertIsNone(claims.flavor_record(bad))

    def test_claims_times_are_naive_utc(self):
        found = claims.claims([vif()], FLAVOR,
                              network_changed_at='2026-11-23T12:00:00+01:00')
        self.assertEqual(datetime.datetime(2026, 11, 23, 11, 0),
                         found.network_changed_at)


class _Placement(readers_base.PlacementReader):

    def __init__(self, placement):
        self.placement = placement

    def providers(self):
        return self.placement.providers

    def allocations(self, targets, progress=None, cancelled=None):
        return [a for a in self.placement.allocations if a.provider in targets]

    def consumers(self, consumers):
        return {c: model.Consumer(c) for c in consumers}, {}


class _Nova(readers_base.NovaReader):
    """A reader whose claims and activity come from dicts."""

    def __init__(self, nova, claims_, activity):
        self.nova = nova
        self.claims = claims_
        self.activity = activity
        self.claims_read = []
        self.activity_read = []

    def read(self):
        return self.nova

    def resolve(self, nova, consumers):
        return nova

    def read_claims(self, nova, instances):
        self.claims_read.append(set(instances))
        nova.claims.update({i: self.claims[i] for i in instances})
        return nova

    def read_activity(self, nova, instances):
        self.activity_read.append(set(instances))
        nova.recent_since = NOW - GRACE
        nova.activity.update({i: self.activity[i] for i in instances
                              if i in self.activity})
        return nova


class AuditTestCase(base.BaseTestCase):
    """Audit reads claims for the candidates only, before classifying,
    and the activity of the leaks' servers after.
    """

    def setUp(self):
        super().setUp()
        c = self.cloud = cloud_mod.Cloud()
        self.host1 = c.node('host1')
        self.bw = c.provider('bw', parent=self.host1)
        self.leaky = c.instance('host1')
        c.alloc(self.leaky, self.host1)
        c.alloc(self.leaky, self.bw, **BW)
        self.detaching = c.instance('host1')
        c.alloc(self.detaching, self.host1)
        c.alloc(self.detaching, self.bw, **BW)
        self.plain = c.instance('host1')
        c.alloc(self.plain, self.host1)
        self.claims = {vm: claims.claims([vif()], FLAVOR,
                                         network_changed_at=LONG_AGO)
                       for vm in (self.leaky, self.detaching)}
        self.activity = {self.detaching: model.Activity(
            changed_at=LONG_AGO, pending_event='compute_detach_interface',
            pending_since=LONG_AGO)}

    def run_audit(self, chain=rules.DEFAULT_RULES):
        nova = _Nova(self.cloud.nova, self.claims, self.activity)
        audit = audit_mod.Audit(_Placement(self.cloud.placement), nova,
                                rules=chain)
        return audit.run(shown=lambda f: f.is_orphan), nova

    def test_claims_then_activity(self):
        findings, nova = self.run_audit()
        self.assertEqual([(self.leaky, self.bw, r.LEAKED_PORT_ALLOCATION)],
                         [(f.consumer, f.resource_provider, f.reason)
                          for f in findings])
        self.assertEqual([{self.leaky, self.detaching}], nova.claims_read)
        self.assertEqual([{self.leaky, self.detaching}], nova.activity_read)

    def test_a_chain_without_the_rule_reads_no_claims(self):
        chain = tuple(rule for rule in rules.DEFAULT_RULES
                      if rule is not rules.leaked_port_allocation)
        findings, nova = self.run_audit(chain)
        self.assertEqual([], findings)
        self.assertEqual([], nova.claims_read)
