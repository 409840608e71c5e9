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
"""``leaked_port_allocation``: a live server's port resources no port claims.

The state is what nova 34 leaves: the server's own consumer holds its
flavor on the compute node and a port's bandwidth on a provider under
the node's network agent; the info cache (``instance_info_caches``)
holds the network info nova wrote, each vif's binding profile naming
the providers its port was given; ``instance_extra`` holds the flavor.
"""

import copy
import datetime
import json
import threading
from urllib import parse

from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import nova_db
from nova_orphans.tests.functional.fixtures import serving
from nova_orphans.tests.functional import test_clean
from nova_orphans.tests import network_front

# The servers' own part on the node: small, so that a dozen fit.
FLAVOR = {'MEMORY_MB': 256}
BW = {'NET_BW_EGR_KILOBIT_PER_SEC': 1000, 'NET_BW_IGR_KILOBIT_PER_SEC': 1000}
BW_INVENTORY = {'NET_BW_EGR_KILOBIT_PER_SEC': 10000,
                'NET_BW_IGR_KILOBIT_PER_SEC': 10000}
held = test_clean.held
vif = nova_db.vif


class LeakedPortTestCase(test_clean.RepairTestCase):

    def setUp(self):
        super().setUp()
        # nova's tree for a host with the OVS agent: the agent under the
        # node, a bandwidth provider per bridge under the agent.
        self.agent = self.add_child(self.host1, 'host1:Open vSwitch agent',
                                    None)
        self.bw = self.add_child(self.agent,
                                 'host1:Open vSwitch agent:br-ex',
                                 BW_INVENTORY)
        self.bw2 = self.add_child(self.agent,
                                  'host1:Open vSwitch agent:br-phy',
                                  BW_INVENTORY)

    def server(self, network_info, allocations=None, flavor=None,
               cache_changed_at=None, **kwargs):
        """A live server on host1 holding ``allocations`` (default: its
        flavor on host1 and BW on self.bw) with this network info.
        """
        vm = self.nova.add_instance('cell1', host='host1', node='host1',
                                    flavor=flavor, **kwargs)
        self.allocate(vm, allocations or {self.host1: FLAVOR, self.bw: BW})
        self.nova.set_network_info('cell1', vm, network_info,
                                   changed_at=cache_changed_at)
        return vm

    def leaked_row(self, vm, rp=None, name='host1:Open vSwitch agent:br-ex',
                   resources=BW):
        return self.row(vm, rp or self.bw, 'leaked_port_allocation',
                        'trim_provider', host='host1', name=name,
                        root=self.host1, resources=resources)

    def serve_neutron(self):
        """neutron's port API on 127.0.0.1 (tests/network_front.py), and
        a nova.conf whose ``[neutron]`` reaches it: ``self.neutron`` (its
        ports), ``self.neutron_front``, ``self.neutron_asked`` (each
        request's path and query).
        """
        self.neutron = network_front.Ports()
        self.neutron_asked = asked = []

        def app(environ, start_response):
            asked.append('%s?%s' % (environ['PATH_INFO'],
                                    environ.get('QUERY_STRING', '')))
            return self.neutron_front(environ, start_response)

        server = serving.make_server(app)
        endpoint = 'http://127.0.0.1:%d/' % server.server_port
        self.neutron_front = network_front.NetworkFront(
            lambda: self.neutron, endpoint)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.neutron_section = {'auth_type': 'admin_token',
                                'endpoint': endpoint, 'token': 'admin'}
        self.conf_file = self.proxied_conf(
            timeout=10, name='neutron.conf', neutron=self.neutron_section)

    @staticmethod
    def ports_query(*servers):
        return '/v2.0/ports?' + parse.urlencode(
            [('device_id', vm) for vm in servers] + [
                ('fields', 'id'), ('fields', 'device_id'),
                ('fields', 'binding:profile')])

    def test_empty_info_cache_asks_neutron(self):
        """nova's info cache lists no port for two servers: neutron
        deleted the only port of one, and binds the other's still. One
        request asks neutron about both; ``clean`` asks again about the
        one it trims, right before writing.
        """
        self.serve_neutron()
        deleted = self.server([])
        bound = self.server([])
        self.neutron.add('port-1', bound, allocation=self.bw)
        before = self.placement.dump_state()
        rc, rows = self.list_json('--all')
        self.assertEqual(3, rc)
        self.assertEqual(
            {(deleted, 'leaked_port_allocation', 'trim_provider'),
             (bound, 'active_instance', 'none')},
            {(r['consumer'], r['reason'], r['action']) for r in rows
             if r['resource_provider'] == self.bw})
        self.assertEqual([self.ports_query(*sorted((deleted, bound)))],
                         self.neutron_asked)
        del self.neutron_asked[:]
        rc, rows = self.clean()
        self.assertEqual(4, rc, self.stderr)
        self.assertNotIn('WARNING', self.stderr)
        self.assertRows([self.done(self.leaked_row(deleted))], rows)
        self.assertEqual([self.ports_query(*sorted((deleted, bound))),
                          self.ports_query(deleted)], self.neutron_asked)
        expected = copy.deepcopy(before)
        del expected[deleted]['allocations'][self.bw]
        expected[deleted]['consumer_generation'] += 1
        self.assertEqual(expected, self.placement.dump_state())

    def test_neutron_not_asked_is_incomplete(self):
        """neutron down, or no [neutron]: unverifiable, the run says why
        and ends 2; clean changes nothing.
        """
        self.serve_neutron()
        vm = self.server([])
        before = self.placement.dump_state()
        no_neutron = self.proxied_conf(timeout=10, name='no-neutron.conf')
        # neutron's 503 is retried: once, here.
        once = self.proxied_conf(timeout=10, name='neutron-once.conf',
                                 neutron=dict(self.neutron_section,
                                              status_code_retries='1'))
        self.neutron_front.down = True
        for conf_file, error, retried in (
                (no_neutron,
                 'Configuration error: [neutron] auth_type is not set', ''),
                (once,
                 'Network request GET %s failed: 503 "{"error": "down"}"' %
                 self.ports_query(vm)[len('/v2.0'):],
                 '1 request retried after transient faults (network 503: '
                 '1).\n')):
            why = ('WARNING: neutron could not be asked for the ports bound '
                   'to 1 server(s) whose info cache in nova\'s database '
                   'lists no port (%s): what they hold on their nodes\' '
                   'child providers is unverifiable.\n' % error) + retried
            rc, out, err = self.manage('allocations', 'list', '--all',
                                       '--format', 'json',
                                       conf_file=conf_file)
            self.assertEqual((2, why), (rc, err))
            # The scan's metrics say it too (the alert's series).
            rc, metrics_text, err = self.manage(
                'allocations', 'list', '--format', 'prometheus',
                conf_file=conf_file)
            self.assertEqual((2, why), (rc, err))
            self.assertIn('\nnova_orphans_unread_sources 1.0\n', metrics_text)
            self.assertIn('\nnova_orphans_unreadable_cells 0.0\n',
                          metrics_text)
            rc, out, err = self.manage('allocations', 'list', '--all',
                                       '--format', 'json',
                                       conf_file=conf_file)
            self.assertEqual(
                [('unverifiable', 'No port is known to claim this provider, '
                  'but nothing proves it: neutron could not be asked for '
                  'the ports bound to the server (%s).' % error)],
                [(r['reason'], r['details']) for r in json.loads(out)
                 if r['resource_provider'] == self.bw])
            rc, rows = self.clean(conf_file=conf_file)
            self.assertEqual((2, [], why), (rc, rows, self.stderr))
            self.assertEqual(before, self.placement.dump_state())
            self.assertEqual([], self.writes())

    def test_leak_found_exactly(self):
        """A server whose one port has no resource request holds a port's
        bandwidth: the detach nova could not clean up.
        """
        port = vif()
        written_at = nova_db._settled()
        written = written_at.isoformat(sep=' ', timespec='seconds')
        vm = self.server([port], cache_changed_at=written_at)
        rc, rows = self.list_json()
        self.assertEqual(3, rc)
        details = [r.pop('details') for r in rows]
        self.assertEqual([self.leaked_row(vm)], rows)
        # nova.conf here has no [neutron]: the info cache's word, said so.
        self.assertEqual(
            ['No port of the instance claims this provider (its ports\' '
             'binding profiles name no provider) and its flavor requests '
             'none of NET_BW_EGR_KILOBIT_PER_SEC, '
             'NET_BW_IGR_KILOBIT_PER_SEC. The ports are those of nova\'s '
             'info cache, written %s UTC: neutron was not asked, and nova '
             'refreshes the cache only on neutron\'s events (no longer '
             'periodically by default since nova 31.0.0).' % written],
            details)

    def test_clean_trims_only_that_provider_and_restore_is_exact(self):
        qos = vif(allocation=self.bw2)
        vm = self.server([vif(), qos],
                         {self.host1: FLAVOR, self.bw: BW, self.bw2: BW})
        other = self.server([vif(allocation=self.bw)])
        before = self.placement.dump_state()

        rc, rows = self.clean()
        self.assertEqual(4, rc, self.stderr)
        self.assertRows([self.done(self.leaked_row(vm))], rows)
        expected = copy.deepcopy(before)
        del expected[vm]['allocations'][self.bw]
        expected[vm]['consumer_generation'] += 1
        self.assertEqual(expected, self.placement.dump_state())
        # One generation-checked write of the server's consumer, nothing
        # else.
        self.assertEqual([('PUT', '/allocations/%s' % vm)], self.writes())
        self.assertEqual(before[other], self.placement.dump_state()[other])
        entry, = self.entries()
        self.assertEqual('trim_provider', entry['action'])

        rc, restored = self.restore()
        self.assertEqual(4, rc, self.stderr)
        self.assertEqual(['done'], [r['outcome'] for r in restored])
        expected = copy.deepcopy(before)
        expected[vm]['consumer_generation'] += 2
        self.assertEqual(expected, self.placement.dump_state())

    def test_clean_rereads_network_info_before_writing(self):
        """A port claims the provider by the time clean writes: nova's
        records are read again after placement, and the audit's finding
        is not acted on.
        """
        vm = self.server([vif()])
        before = self.placement.dump_state()
        rule = self.proxy.inject(
            'GET', '/allocations/' + vm, before=lambda:
            self.nova.set_network_info('cell1', vm,
                                       [vif(allocation=self.bw)]))
        rc, rows = self.clean()
        # The port is the server's again: no orphan left.
        self.assertEqual(0, rc, self.stderr)
        self.assertEqual(1, rule.fired)
        self.assertRows(
            [self.done(self.leaked_row(vm),
                       'skipped: no longer trim_provider: now '
                       'active_instance')], rows)
        self.assertEqual(before, self.placement.dump_state())
        self.assertEqual([], self.writes())

    def test_look_alikes_are_never_orphans(self):
        recent = nova_db._now() - datetime.timedelta(seconds=10)
        qos_uuid = self.server([vif(), vif(allocation=self.bw)])
        qos_dict = self.server([vif(allocation={
            '6b5a3c2e-1d4f-4a8b-9c7d-0e1f2a3b4c5d': self.bw})])
        empty = self.server([])
        never_written = self.server(None)
        garbled = self.server('[{"id": ')
        detaching = self.server([vif()], task_state='deleting')
        recent_cache = self.server([vif()], cache_changed_at=recent)
        pending = self.server([vif()])
        self.nova.add_instance_action(
            'cell1', pending, 'detach_interface',
            events=[('compute_detach_interface', nova_db._settled(), None)])
        # A node whose root has the bandwidth (no agent tree).
        host4 = self.add_node('host4', inventory=dict(base.INVENTORY,
                                                      **BW_INVENTORY))
        on_root = self.nova.add_instance('cell1', host='host4',
                                         node='host4')
        self.allocate(on_root, {host4: dict(FLAVOR, **BW)})
        self.nova.set_network_info('cell1', on_root, [vif()])
        flavor_claims = self.server(
            [vif()], flavor={'extra_specs': {
                'resources1:NET_BW_EGR_KILOBIT_PER_SEC': '1000'}})
        gpu = self.add_child(self.host1, 'host1_pci_0000_81_00_0',
                             {'VGPU': 4})
        vgpu = self.server(
            [vif()], {self.host1: FLAVOR, gpu: {'VGPU': 1}},
            flavor={'extra_specs': {'resources:VGPU': '1'}})
        rc, rows = self.list_json('--all')
        verdicts = {(r['consumer'], r['resource_provider']):
                    (r['reason'], r['action']) for r in rows}
        fine = ('active_instance', 'none')
        unverifiable = ('unverifiable', 'none')
        in_progress = ('in_progress', 'none')
        self.assertEqual({
            (qos_uuid, self.bw): fine,
            (qos_dict, self.bw): fine,
            (empty, self.bw): unverifiable,
            (never_written, self.bw): unverifiable,
            (garbled, self.bw): unverifiable,
            (detaching, self.bw): in_progress,
            (recent_cache, self.bw): in_progress,
            (pending, self.bw): in_progress,
            (on_root, host4): fine,
            (flavor_claims, self.bw): fine,
            (vgpu, gpu): fine,
        }, {k: v for k, v in verdicts.items() if k[1] != self.host1})
        # The empty info cache's ports could not be asked of neutron
        # (nova.conf here has no [neutron]): the run is incomplete.
        self.assertEqual(2, rc)

    def test_sharing_provider_is_not_judged(self):
        agg = '7d5e4c3b-2a19-4f08-8e7d-6c5b4a392817'
        host3 = self.add_node('host3', aggregates=[agg])
        shared = self.placement.create_provider(
            'shared-bw', inventory=BW_INVENTORY,
            traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[agg])
        vm = self.nova.add_instance('cell1', host='host3', node='host3')
        self.allocate(vm, {host3: FLAVOR, shared: BW})
        self.nova.set_network_info('cell1', vm, [vif()])
        rc, rows = self.list_json('--all')
        self.assertEqual({(host3, 'active_instance'),
                          (shared, 'active_instance')},
                         {(r['resource_provider'], r['reason'])
                          for r in rows if r['consumer'] == vm})

    def test_server_moving_is_not_judged(self):
        vm = self.server([vif()])
        self.nova.add_migration('cell1', vm, status='running',
                                migration_type='live-migration',
                                source_compute='host1', source_node='host1',
                                dest_compute='host2', dest_node='host2')
        rc, rows = self.list_json('--all')
        self.assertEqual([('active_migration', 'none')],
                         [(r['reason'], r['action']) for r in rows
                          if r['consumer'] == vm and
                          r['resource_provider'] == self.bw])

    def test_unreadable_flavor_is_unverifiable(self):
        vm = self.server([vif()])
        extra = self.nova.table('cell1', 'instance_extra')
        self.nova.execute('cell1', extra.update().where(
            extra.c.instance_uuid == vm).values(flavor=None))
        rc, rows = self.list_json('--all')
        row, = [r for r in rows if r['consumer'] == vm and
                r['resource_provider'] == self.bw]
        self.assertEqual(('unverifiable', 'none'),
                         (row['reason'], row['action']))
        self.assertEqual('No port is known to claim this provider, but '
                         'nothing proves it: the instance\'s flavor cannot '
                         'be read.', row['details'])


MariaDBLeakedPortTestCase = base.on_mariadb(
    LeakedPortTestCase, 'test_leak_found_exactly',
    'test_clean_trims_only_that_provider_and_restore_is_exact')
