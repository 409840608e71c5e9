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
"""Port allocations nova leaks inside a live server.

nova 34 leaves part of a live server's allocation behind in two places
and says so in its log:

- ``SchedulerReportClient.remove_resources_from_instance_allocation``
  runs out of retries on generation conflicts when a port with a
  resource request is detached, or when a failed attach is rolled back
  (``AllocationUpdateFailed``: "... To clean up the leaked resource
  allocation you can use nova-manage placement audit.");
- ``ComputeManager._process_instance_vif_deleted_event``: neutron
  deleted a bound port with a resource request ("... are leaked until
  the server ... is deleted.").

Both are reproduced as nova's own tests do
(``nova/tests/functional/test_servers_resource_request.py``): the
neutron fixture's ports with resource requests, the bandwidth providers
neutron would report under the compute node, and placement answering
the clean-up's writes with generation conflicts. The server keeps two
such ports on two bridges, so that a repair must keep the other port's
bandwidth as well as the compute node's resources.

The look-alikes are the same picture while nova is still working on it
(an attach or a detach paused inside nova, a live migration), or when
the proof is missing (an empty info cache), or with neutron's extended
resource request (the binding profile's ``allocation`` is a dict).
"""

import contextlib
import copy
import json
import os
import threading
import time

import fixtures
from keystoneauth1 import adapter
import os_resource_classes as orc
from oslo_serialization import jsonutils
import sqlalchemy as sa

from nova import exception
from nova.tests.fixtures import NeutronFixture
from nova.tests.functional.api import client
from nova.tests.functional import test_servers_resource_request as nova_rr
from nova.tests.unit import fake_requests
from nova.virt import fake

from nova_orphans.tests.scenario.base import uuids
from nova_orphans.tests.scenario import comparison
from nova_orphans.tests.scenario import cycle

REPORT = 'nova.scheduler.client.report'
MANAGER = 'nova.compute.manager.ComputeManager'

FLAVOR = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
#: neutron's minimum-bandwidth port (NeutronFixture), on physnet2: br-ex.
PORT_A = NeutronFixture.port_with_resource_request
#: A second one on physnet3 (bridge br-phys3), as nova's tests add ports.
PORT_B = dict(
    copy.deepcopy(PORT_A), id=uuids.qos_port_b,
    mac_address='52:54:00:1e:59:d1',
    fixed_ips=[{'ip_address': '192.168.1.43',
                'subnet_id': NeutronFixture.subnet_1['id']}],
    resource_request={
        'resources': {orc.NET_BW_IGR_KILOBIT_PER_SEC: 2000,
                      orc.NET_BW_EGR_KILOBIT_PER_SEC: 2000},
        'required': ['CUSTOM_PHYSNET3', 'CUSTOM_VNIC_TYPE_NORMAL']})
BW_A = PORT_A['resource_request']['resources']
BW_B = PORT_B['resource_request']['resources']

LEAK_LOG = (
    'Failed to update allocations for consumer %(server)s. Error: Cannot '
    'remove resources %(leak)s from the allocation due to multiple '
    'successive generation conflicts in placement. To clean up the leaked '
    'resource allocation you can use nova-manage placement audit.')


# The request to neutron that kept failing, as a run says it at its end.
RETRIED = '1 request retried after transient faults (network 503: 8).\n'


class _NoJitter:
    """nova's ``@retries`` sleeps ``uniform(0, 2 * retry)`` s: not here."""

    @staticmethod
    def uniform(low, high):
        return 0


class PortLeakTestBase(cycle.CycleTestCase):
    """Two hosts, each with neutron's OVS agent and two bridges under it.

    As ``_create_ovs_networking_rp_tree`` in nova's tests: the agent
    (packet rate) under the compute node, the bridges (bandwidth, one
    per physnet) under the agent.
    """

    HOSTS = ('host1', 'host2')
    #: nova's neutron fixture to use instead of the base NeutronFixture.
    NEUTRON = None

    def setUp(self):
        super().setUp()
        if self.NEUTRON is not None:
            self.neutron = self.useFixture(self.NEUTRON(self))
        self.neutron._ports[PORT_B['id']] = copy.deepcopy(PORT_B)
        self.agent, self.br_ex, self.br_phys3 = {}, {}, {}
        for host in self.HOSTS:
            name = '%s:Open vSwitch agent' % host
            self.agent[host] = self.post_provider(
                name, self.rp_uuids[host])['uuid']
            self.put_inventory(self.agent[host], {
                orc.NET_PACKET_RATE_KILOPACKET_PER_SEC: 10000},
                traits=['CUSTOM_VNIC_TYPE_NORMAL'])
            for bridges, physnet in ((self.br_ex, 'br-ex'),
                                     (self.br_phys3, 'br-phys3')):
                bridges[host] = self.post_provider(
                    '%s:%s' % (name, physnet), self.agent[host])['uuid']
                self.put_inventory(bridges[host], {
                    orc.NET_BW_IGR_KILOBIT_PER_SEC: 10000,
                    orc.NET_BW_EGR_KILOBIT_PER_SEC: 10000,
                }, traits=['CUSTOM_VNIC_TYPE_NORMAL',
                           'CUSTOM_PHYSNET2' if physnet == 'br-ex'
                           else 'CUSTOM_PHYSNET3'])
        # Two ports, two request groups: placement wants a group policy.
        self.qos_flavor = self.api.get_flavor(self._create_flavor(
            name='qos', vcpu=1, memory_mb=512, disk=1, ephemeral=0,
            extra_spec={'group_policy': 'isolate'}))

    # -- nova side -----------------------------------------------------------

    def boot_qos(self, name, host='host1', ports=(PORT_A, PORT_B)):
        """A server with these ports on ``host``; checks nova's picture."""
        server = self.boot(name, host, flavor=self.qos_flavor,
                           networks=[{'port': p['id']} for p in ports])
        expected = {self.rp_uuids[host]: FLAVOR}
        for port in ports:
            expected[self.bridge(port, host)] = dict(
                port['resource_request']['resources'])
        self.assertEqual(expected, self.get_allocations(server['id']))
        self.assertEqual([p['id'] for p in ports], self.vifs(server))
        return server

    def bridge(self, port, host='host1'):
        return (self.br_ex if port is PORT_A else self.br_phys3)[host]

    def vifs(self, server):
        """Port ids in the server's info cache, and what they claim.

        Asserts each vif's binding profile ``allocation`` is the bridge
        of its port, as nova's _assert_port_binding_profile_allocation.
        """
        with self.cell_db().connect() as conn:
            cache = conn.execute(sa.text(
                'SELECT network_info FROM instance_info_caches '
                'WHERE instance_uuid=:u'), {'u': server['id']}).scalar_one()
        vifs = json.loads(cache)
        host = self.admin_api.get_server(server['id'])[
            'OS-EXT-SRV-ATTR:host']
        for vif in vifs:
            port = PORT_A if vif['id'] == PORT_A['id'] else PORT_B
            if isinstance(vif['profile'].get('allocation'), dict):
                continue
            self.assertEqual(self.bridge(port, host),
                             vif['profile'].get('allocation'))
        return [vif['id'] for vif in vifs]

    def neutron_port(self, port):
        """The port as neutron shows it (None once deleted)."""
        if port['id'] not in self.neutron._ports:
            return None
        return self.neutron.show_port(port['id'])['port']

    @contextlib.contextmanager
    def placement_conflicts(self, server, let_through=0):
        """placement answers the server's allocation writes with 409.

        nova's test_interface_attach_sriov_with_qos_pci_update_fails_
        cleanup_fails does this: another writer keeps winning, so nova's
        four tries to remove the port's resources all fail. The first
        ``let_through`` writes go to placement. Yields the list of the
        writes tried.
        """
        orig_put = adapter.Adapter.put
        url = '/allocations/%s' % server['id']
        tried = []
        conflict = fake_requests.FakeResponse(409, jsonutils.dumps(
            {'errors': [{'code': 'placement.concurrent_update',
                         'detail': 'consumer generation conflict'}]}))

        def put(adapter_self, path, *args, **kwargs):
            if path != url:
                return orig_put(adapter_self, path, *args, **kwargs)
            tried.append(path)
            if len(tried) <= let_through:
                return orig_put(adapter_self, path, *args, **kwargs)
            return conflict

        with fixtures.MonkeyPatch('keystoneauth1.adapter.Adapter.put', put), \
                fixtures.MonkeyPatch(REPORT + '.random', _NoJitter):
            yield tried

    def assertLeakLogged(self, server, port, host='host1'):
        leak = {self.bridge(port, host): {'resources': dict(
            port['resource_request']['resources'])}}
        self.assertIn(LEAK_LOG % {'server': server['id'], 'leak': leak},
                      self.stdlog.logger.output)

    def delete_bound_port(self, server, port, providers):
        """neutron deletes the bound port and sends network-vif-deleted;
        waits for nova's log (naming ``providers``, a regular expression)
        and its info cache.
        """
        self.neutron.delete_port(port['id'])
        response = self.api.api_post('/os-server-external-events', {
            'events': [{'name': 'network-vif-deleted',
                        'server_uuid': server['id'],
                        'tag': port['id']}]}).body
        self.assertEqual(200, response['events'][0]['code'])
        self._wait_for_log(
            'The bound port %s is deleted in Neutron but the resource '
            'allocation on the resource providers %s are leaked until the '
            'server %s is deleted.' % (port['id'], providers, server['id']))
        self._wait_for(lambda: port['id'] not in self.vifs(server))

    def _wait_for(self, predicate, tries=50):
        for _ in range(tries):
            if predicate():
                return
            time.sleep(0.1)
        self.fail('timed out')

    # -- expected rows -------------------------------------------------------

    def server_rows(self, server, ports, host='host1'):
        """Rows of the server: compute node, then [(port, reason, action)].
        """
        rows = [self.row(server['id'], self.rp_uuids[host], host,
                         'active_instance', 'none', FLAVOR)]
        for port, reason, action in ports:
            rows.append(self.row(server['id'], self.bridge(port, host), host,
                                 reason, action,
                                 port['resource_request']['resources']))
        return rows

    def neighbour(self):
        """Another server on the same node, which nothing may touch."""
        vm2 = self.boot('vm2', 'host1')
        return [self.row(vm2['id'], self.rp_uuids['host1'], 'host1',
                         'active_instance', 'none', FLAVOR)]

    # -- the tool through openstack ------------------------------------------

    def osc_clean_and_restore(self, before, cleaned, trimmed):
        """``openstack allocation orphan clean``: the same repair (it
        trims ``trimmed``, [(consumer, provider)]); then ``restore`` of its
        journal puts placement back exactly.
        """
        journal = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'osc.jsonl')
        rc, out, err = self.openstack('allocation', 'orphan', 'clean',
                                      '--journal', journal, '-f', 'json')
        self.assertEqual(4, rc, err)
        self.assertEqual(
            sorted(t + ('leaked_port_allocation', 'trim_provider', 'done')
                   for t in trimmed),
            sorted((r['consumer'], r['resource_provider'], r['reason'],
                    r['action'], r['outcome']) for r in json.loads(out)))
        self.assertEqual(cleaned, self.placement_state())
        self.assertEqual([], self.osc_list())
        rc, out, err = self.openstack('allocation', 'orphan', 'restore',
                                      '--journal', journal, '-f', 'json')
        self.assertEqual(4, rc, err)
        self.assertEqual(before, self.placement_state())
        return json.loads(out)


class PortLeakTest(PortLeakTestBase):
    """nova's two documented leaks, found, trimmed and restored."""

    def check_leak(self, vm1, rows, port=PORT_A):
        """The leak survives nova's periodics; then the cycle; then osc.

        After ``clean`` the server holds exactly its compute node's
        resources and the other port's bandwidth.
        """
        leaked = self.bridge(port)
        self._run_periodics()
        kept = {self.rp_uuids['host1']: FLAVOR, self.br_ex['host1']: BW_A,
                self.br_phys3['host1']: BW_B}
        self.assertEqual(kept, self.get_allocations(vm1['id']))
        found = self.run_cycle(rows)
        del kept[leaked]
        self.assertEqual(kept,
                         found['cleaned'][vm1['id']]['allocations'])
        # The server's document but the provider: owner and type too.
        doc = dict(found['before'][vm1['id']])
        doc['allocations'] = kept
        self.assertEqual(doc, found['cleaned'][vm1['id']])
        # The same two leaks through the compute and network APIs.
        self.osc_clean_and_restore(found['before'], found['cleaned'],
                                   [(vm1['id'], leaked)])

    @comparison.scenario('port_detach_leak')
    def test_detach_cleanup_fails(self):
        """A QoS port detached; removing its bandwidth runs into conflicts.

        nova has unbound the port in neutron and dropped it from the info
        cache; the detach fails with AllocationUpdateFailed and the
        bandwidth stays in the server's allocation.
        """
        vm1 = self.boot_qos('vm1')
        rows = self.neighbour()
        with self.placement_conflicts(vm1) as tried:
            self.api.detach_interface(vm1['id'], PORT_A['id'])
            self._wait_for_instance_action_event(
                vm1, 'detach_interface', 'compute_detach_interface', 'Error')
        self.assertEqual(4, len(tried))
        self.assertLeakLogged(vm1, PORT_A)
        self.assertEqual([PORT_B['id']], self.vifs(vm1))
        port = self.neutron_port(PORT_A)
        self.assertEqual(('', None), (port['device_id'],
                                      port['binding:profile'].get(
                                          'allocation')))
        self.check_leak(vm1, rows + self.server_rows(vm1, [
            (PORT_A, 'leaked_port_allocation', 'trim_provider'),
            (PORT_B, 'active_instance', 'none')]))

    @comparison.scenario('port_attach_rollback_leak')
    def test_attach_rollback_fails(self):
        """A QoS port's attach fails in the driver; the rollback's
        removal of its bandwidth runs into conflicts.
        """
        vm1 = self.boot_qos('vm1', ports=(PORT_B,))
        rows = self.neighbour()
        with self.placement_conflicts(vm1, let_through=1) as tried, \
                fixtures.MockPatch(
                    'nova.virt.fake.FakeDriver.attach_interface',
                    side_effect=exception.NovaException('hotplug failed')):
            ex = self.assertRaises(
                client.OpenStackApiException, self.api.attach_interface,
                vm1['id'], {'interfaceAttachment': {'port_id': PORT_A['id']}})
        self.assertEqual(500, ex.response.status_code)
        self.assertIn('AllocationUpdateFailed', str(ex))
        self.assertEqual(5, len(tried))
        self.assertLeakLogged(vm1, PORT_A)
        self.assertEqual([PORT_B['id']], self.vifs(vm1))
        self.check_leak(vm1, rows + self.server_rows(vm1, [
            (PORT_A, 'leaked_port_allocation', 'trim_provider'),
            (PORT_B, 'active_instance', 'none')]))

    @comparison.scenario('port_deleted_leak')
    def test_bound_port_deleted_in_neutron(self):
        """neutron deletes a bound QoS port and tells nova.

        nova drops the vif and logs that the bandwidth is leaked until
        the server is deleted (test_delete_bound_port_in_neutron_with_
        resource_request); neutron no longer has the port.
        """
        vm1 = self.boot_qos('vm1')
        rows = self.neighbour()
        self.delete_bound_port(vm1, PORT_A, self.br_ex['host1'])
        self.check_leak(vm1, rows + self.server_rows(vm1, [
            (PORT_A, 'leaked_port_allocation', 'trim_provider'),
            (PORT_B, 'active_instance', 'none')]))

    @comparison.scenario('port_deleted_only_port_leak')
    def test_only_port_deleted_in_neutron(self):
        """neutron deletes the server's only port: nova's info cache is
        left empty (``[]``), which proves nothing by itself. Both front
        ends ask neutron, which binds no port to the server any more.
        """
        vm1 = self.boot_qos('vm1', ports=(PORT_A,))
        rows = self.neighbour()
        self.delete_bound_port(vm1, PORT_A, self.br_ex['host1'])
        self.assertEqual([], self.vifs(vm1))
        self._run_periodics()
        self.assertEqual({self.rp_uuids['host1']: FLAVOR,
                          self.br_ex['host1']: BW_A},
                         self.get_allocations(vm1['id']))
        found = self.run_cycle(rows + self.server_rows(vm1, [
            (PORT_A, 'leaked_port_allocation', 'trim_provider')]))
        self.assertEqual({self.rp_uuids['host1']: FLAVOR},
                         found['cleaned'][vm1['id']]['allocations'])
        self.osc_clean_and_restore(found['before'], found['cleaned'],
                                   [(vm1['id'], self.br_ex['host1'])])
        # nova-orphans-manage where neutron cannot be asked: no [neutron]
        # in its nova.conf, or the network API down.
        query = ('/ports?device_id=%s&fields=id&fields=device_id&'
                 'fields=binding%%3Aprofile' % vm1['id'])
        self.assertUnverifiable(
            vm1, rows, self.write_nova_conf(neutron=False),
            'Configuration error: [neutron] auth_type is not set')
        self.network_front.down = True
        self.assertUnverifiable(
            vm1, rows, self.conf_file,
            'Network request GET %s failed: 503 "{"error": "down"}"' % query,
            retried=RETRIED)

    def assertUnverifiable(self, vm1, rows, conf_file, error, retried=''):
        """``list`` calls vm1's bandwidth unverifiable and the run
        incomplete (2), saying why (and ``retried``, the retries line);
        ``clean`` changes nothing (2).
        """
        before = self.placement_state()
        why = ('neutron could not be asked for the ports bound to 1 '
               'server(s) whose info cache in nova\'s database lists no '
               'port (%s): what they hold on their nodes\' child providers '
               'is unverifiable' % error)
        rc, out = self.run_manage('allocations', 'list', '--all',
                                  '--format', 'json', conf_file=conf_file)
        self.assertEqual((2, 'WARNING: %s.\n%s' % (why, retried)),
                         (rc, self.manage_stderr), out)
        listed = json.loads(out)
        self.assertRows(rows + self.server_rows(vm1, [
            (PORT_A, 'unverifiable', 'none')]), listed)
        self.assertEqual(
            ['No port is known to claim this provider, but nothing proves '
             'it: neutron could not be asked for the ports bound to the '
             'server (%s).' % error],
            [r['details'] for r in listed
             if r['resource_provider'] == self.br_ex['host1']])
        journal = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'journal.jsonl')
        rc, out = self.run_manage('allocations', 'clean', '--journal',
                                  journal, '--format', 'json',
                                  conf_file=conf_file)
        self.assertEqual((2, [], 'WARNING: %s.\n%s' % (why, retried)),
                         (rc, json.loads(out), self.manage_stderr))
        self.assertFalse(os.path.exists(journal))
        self.assertEqual(before, self.placement_state())

    def test_network_api_down(self):
        """openstack cannot ask the network API: nothing is proven, and
        the run is incomplete (2), said on stderr as nova-orphans-manage
        says it; clean changes nothing (2).

        The same leak as test_bound_port_deleted_in_neutron;
        nova-orphans-manage (nova's info cache) still finds it.
        """
        vm1 = self.boot_qos('vm1')
        self.delete_bound_port(vm1, PORT_A, self.br_ex['host1'])
        self.age_nova()
        before = self.placement_state()
        self.network_front.down = True
        rows = self.server_rows(vm1, [(PORT_A, 'unverifiable', 'none'),
                                      (PORT_B, 'unverifiable', 'none')])
        why = ('neutron could not be asked for the ports bound to 1 '
               'server(s) (Network request GET /ports?device_id=%s&fields=id'
               '&fields=device_id&fields=binding%%3Aprofile failed: 503 '
               '"{"error": "down"}"): what they hold on their nodes\' child '
               'providers is unverifiable' % vm1['id'])
        # Before the rows, as nova-orphans-manage says it; then the
        # retries (neutron's 503 is retried, and kept failing).
        said = 'WARNING: %s.\n%s' % (why, RETRIED)
        rc, out, err = self.openstack('allocation', 'orphan', 'list',
                                      '--all', '-f', 'json')
        self.assertEqual((2, said), (rc, err))
        self.assertRows([dict(r, cell=None) for r in rows], json.loads(out))
        journal = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'osc.jsonl')
        rc, out, err = self.openstack('allocation', 'orphan', 'clean',
                                      '--journal', journal, '-f', 'json')
        self.assertEqual((2, [], said), (rc, json.loads(out), err))
        self.assertFalse(os.path.exists(journal))
        self.assertEqual(before, self.placement_state())
        self.network_front.down = False
        self.assertEqual(
            [(vm1['id'], self.br_ex['host1'], 'leaked_port_allocation')],
            [(r['consumer'], r['resource_provider'], r['reason'])
             for r in self.osc_list()])


class PortLookAlikeTest(PortLeakTestBase):
    """The same bandwidth, while nova works on it or cannot be read."""

    # How long nova may stay paused: the whole cycle runs meanwhile. On
    # a busy machine that is more than a minute, after which the gate
    # (and the attach's RPC call) would give up and end nova's operation
    # in an error, so that what the two front ends read is no longer
    # the same picture.
    PAUSE = 600

    def setUp(self):
        super().setUp()
        self.flags(rpc_response_timeout=self.PAUSE)

    def start_attach(self, vm1):
        """Attach port A; nova stops before it binds the port.

        The bandwidth is in the server's allocation already
        (``_allocate_port_resource_for_instance``), the port is not bound
        and not in the info cache yet: exactly the picture of a leak.
        The attach is an RPC call, so it waits in a thread.
        """
        done = threading.Event()
        thread = threading.Thread(target=lambda: (self.api.attach_interface(
            vm1['id'], {'interfaceAttachment': {'port_id': PORT_A['id']}}),
            done.set()))
        self.addCleanup(lambda: thread.join(60))
        gate = self.pause('nova.network.neutron.API.allocate_for_instance',
                          timeout=self.PAUSE)
        thread.start()
        gate.entered()
        return gate, thread, done

    def assertWhy(self, vm1, event):
        """nova set no task state; its running ``event`` is what says
        the port's bandwidth is not to be judged yet (both front ends).
        """
        self.assertIsNone(self.instance_row(vm1['id']).task_state)
        self.age_nova()
        for rows in (self.list_allocations('--all'), self.osc_list('--all')):
            why, = [r['details'] for r in rows
                    if r['resource_provider'] == self.br_ex['host1']]
            self.assertIn('nova has not finished %s' % event, why)

    @comparison.scenario('port_attach_in_progress')
    def test_attach_in_progress(self):
        vm1 = self.boot_qos('vm1', ports=(PORT_B,))
        gate, thread, done = self.start_attach(vm1)
        self.assertEqual({self.rp_uuids['host1']: FLAVOR,
                          self.br_ex['host1']: BW_A,
                          self.br_phys3['host1']: BW_B},
                         self.get_allocations(vm1['id']))
        self.assertEqual([PORT_B['id']], self.vifs(vm1))
        self.assertWhy(vm1, 'compute_attach_interface')
        self.run_cycle(self.server_rows(vm1, [
            (PORT_A, 'in_progress', 'none'),
            (PORT_B, 'active_instance', 'none')]))
        gate.release()
        thread.join(60)
        self.assertTrue(done.is_set())
        self.assertEqual([PORT_B['id'], PORT_A['id']], self.vifs(vm1))

    @comparison.scenario('port_detach_in_progress')
    def test_detach_in_progress(self):
        """Detach port A; nova stops before it removes the bandwidth.

        The port is unbound and gone from the info cache; the bandwidth
        is still in the server's allocation.
        """
        vm1 = self.boot_qos('vm1')
        gate = self.pause(MANAGER + '._deallocate_port_resource_for_instance',
                          timeout=self.PAUSE)
        self.api.detach_interface(vm1['id'], PORT_A['id'])
        gate.entered()
        self.assertEqual([PORT_B['id']], self.vifs(vm1))
        self.assertWhy(vm1, 'compute_detach_interface')
        self.run_cycle(self.server_rows(vm1, [
            (PORT_A, 'in_progress', 'none'),
            (PORT_B, 'active_instance', 'none')]))
        gate.release()
        self._wait_for_instance_action_event(
            vm1, 'detach_interface', 'compute_detach_interface', 'Success')
        self.assertEqual({self.rp_uuids['host1']: FLAVOR,
                          self.br_phys3['host1']: BW_B},
                         self.get_allocations(vm1['id']))

    @comparison.scenario('port_live_migration_in_progress')
    def test_live_migration_in_progress(self):
        """Live migration paused in the driver.

        The instance consumer holds the destination and its bridges, the
        migration consumer the source and its bridges, while the ports
        are still bound on the source (the info cache names the source's
        bridges).
        """
        vm1 = self.boot_qos('vm1')
        gate = self.pause('nova.virt.fake.FakeDriver.live_migration',
                          timeout=self.PAUSE)
        self.api.post_server_action(vm1['id'], {'os-migrateLive': {
            'host': 'host2', 'block_migration': 'auto'}})
        gate.entered()
        mig, = self.migration_rows(vm1['id'])
        self.label(mig.uuid, 'migration')
        self.assertEqual(('live-migration', 'running'),
                         (mig.migration_type, mig.status))
        self.assertEqual([PORT_A['id'], PORT_B['id']], self.vifs(vm1))
        rows = []
        for host, consumer in (('host1', mig.uuid), ('host2', vm1['id'])):
            kind = 'migration' if host == 'host1' else 'instance'
            for rp, used in ((self.rp_uuids[host], FLAVOR),
                             (self.br_ex[host], BW_A),
                             (self.br_phys3[host], BW_B)):
                rows.append(self.row(consumer, rp, host, 'active_migration',
                                     'none', used, consumer_type=kind,
                                     instance=vm1['id']))
        found = self.run_cycle(rows)
        # audit --delete took the destination from the server (a live
        # allocation): put it back before nova goes on.
        doc = found['before'][vm1['id']]
        current = self.placement.get('/allocations/%s' % vm1['id'],
                                     version='1.28').body
        self._ok(self.placement.put(
            '/allocations/%s' % vm1['id'], version='1.28', body={
                'allocations': {rp: {'resources': res} for rp, res in
                                doc['allocations'].items()},
                'project_id': doc['project_id'], 'user_id': doc['user_id'],
                'consumer_generation': current.get('consumer_generation')}))
        gate.release()
        self._wait_for_migration_status(vm1, ['completed'])
        self.assertEqual({self.rp_uuids['host2']: FLAVOR,
                          self.br_ex['host2']: BW_A,
                          self.br_phys3['host2']: BW_B},
                         self.get_allocations(vm1['id']))

    @comparison.scenario('port_info_cache_empty')
    def test_info_cache_empty(self):
        """The server's info cache lost its ports (``[]``): no proof.

        Both front ends ask neutron instead, which still binds both
        ports to the server, with their bandwidth providers.
        """
        vm1 = self.boot_qos('vm1')
        with self.cell_db().begin() as conn:
            conn.execute(sa.text(
                "UPDATE instance_info_caches SET network_info='[]' "
                "WHERE instance_uuid=:u"), {'u': vm1['id']})
        self.assertEqual([], self.vifs(vm1))
        self.run_cycle(self.server_rows(vm1, [
            (PORT_A, 'active_instance', 'none'),
            (PORT_B, 'active_instance', 'none')]))


class ExtendedResourceRequestTest(PortLeakTestBase):
    """neutron's port-resource-request-groups: ``allocation`` is a dict.

    nova's MultiGroupResourceRequestNeutronFixture: port A asks for
    bandwidth (on the bridge) and packet rate (on the agent), each in
    its own request group; the binding profile maps group to provider.
    """

    NEUTRON = nova_rr.MultiGroupResourceRequestNeutronFixture

    PORT = NEUTRON.port_with_resource_request
    BW_GROUP, PPS_GROUP = PORT['resource_request']['request_groups']

    def boot_multi(self):
        """vm1 with the two-group port A and port B."""
        port, bw_group, pps_group = self.PORT, self.BW_GROUP, self.PPS_GROUP
        vm1 = self.boot('vm1', 'host1', flavor=self.qos_flavor,
                        networks=[{'port': port['id']},
                                  {'port': PORT_B['id']}])
        pps = pps_group['resources']
        self.assertEqual({self.rp_uuids['host1']: FLAVOR,
                          self.br_ex['host1']: bw_group['resources'],
                          self.agent['host1']: pps,
                          self.br_phys3['host1']: BW_B},
                         self.get_allocations(vm1['id']))
        self.assertEqual(
            {port['id']: {bw_group['id']: self.br_ex['host1'],
                          pps_group['id']: self.agent['host1']},
             PORT_B['id']: {PORT_B['id']: self.br_phys3['host1']}},
            {p: self.neutron_port({'id': p})['binding:profile'][
                'allocation'] for p in (port['id'], PORT_B['id'])})
        self.assertEqual([port['id'], PORT_B['id']], self.vifs(vm1))
        return vm1

    @comparison.scenario('port_extended_request')
    def test_settled(self):
        vm1 = self.boot_multi()
        self.run_cycle(self.server_rows(vm1, [
            (PORT_A, 'active_instance', 'none'),
            (PORT_B, 'active_instance', 'none')]) + [
            self.row(vm1['id'], self.agent['host1'], 'host1',
                     'active_instance', 'none', self.PPS_GROUP['resources'])])

    @comparison.scenario('port_extended_deleted_leak')
    def test_bound_port_deleted_in_neutron(self):
        """The two-group port deleted in neutron: both its providers
        leak, and clean trims both from the one consumer.
        """
        vm1 = self.boot_multi()
        # nova joins the dict's providers, in its order.
        self.delete_bound_port(vm1, self.PORT, '(%s,%s|%s,%s)' % (
            self.br_ex['host1'], self.agent['host1'], self.agent['host1'],
            self.br_ex['host1']))
        self.assertEqual([PORT_B['id']], self.vifs(vm1))
        self._run_periodics()
        found = self.run_cycle(self.server_rows(vm1, [
            (PORT_A, 'leaked_port_allocation', 'trim_provider'),
            (PORT_B, 'active_instance', 'none')]) + [
            self.row(vm1['id'], self.agent['host1'], 'host1',
                     'leaked_port_allocation', 'trim_provider',
                     self.PPS_GROUP['resources'])])
        self.assertEqual({self.rp_uuids['host1']: FLAVOR,
                          self.br_phys3['host1']: BW_B},
                         found['cleaned'][vm1['id']]['allocations'])
        self.osc_clean_and_restore(
            found['before'], found['cleaned'],
            [(vm1['id'], self.br_ex['host1']),
             (vm1['id'], self.agent['host1'])])


class _VGPUFakeDriver(fake.MediumFakeDriver):
    """Reports a physical GPU as libvirt does: a child of the node,
    named ``<node>_pci_<address>``, with VGPU inventory.
    """

    def update_provider_tree(self, provider_tree, nodename, allocations=None):
        super().update_provider_tree(provider_tree, nodename, allocations)
        pgpu = '%s_pci_0000_06_00_0' % nodename
        if not provider_tree.exists(pgpu):
            provider_tree.new_child(pgpu, nodename)
        provider_tree.update_inventory(pgpu, {'VGPU': {
            'total': 4, 'reserved': 0, 'min_unit': 1, 'max_unit': 4,
            'step_size': 1, 'allocation_ratio': 1.0}})


class FlavorClaimedChildrenTest(PortLeakTestBase):
    """Children of the node the flavor, not a port, asks for.

    A vGPU (``resources:VGPU``) on the physical GPU's provider, and
    bandwidth the flavor itself requests in a granular group
    (``resources1:NET_BW_IGR_KILOBIT_PER_SEC``, ``trait1:``) on a
    bridge: a port class, but no port; the flavor claims it.
    """

    compute_driver = 'fake._VGPUFakeDriver'

    def setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.fake._VGPUFakeDriver', _VGPUFakeDriver))
        super().setUp()

    @comparison.scenario('flavor_claimed_children')
    def test_settled(self):
        flavor = self.api.get_flavor(self._create_flavor(
            name='vgpu-bw', vcpu=1, memory_mb=512, disk=1, ephemeral=0,
            extra_spec={'resources:VGPU': '1',
                        'resources1:NET_BW_IGR_KILOBIT_PER_SEC': '500',
                        'trait1:CUSTOM_PHYSNET3': 'required'}))
        vm1 = self.boot('vm1', 'host1', flavor=flavor)
        pgpu = self._get_provider_uuid_by_name('host1_pci_0000_06_00_0')
        bw = {orc.NET_BW_IGR_KILOBIT_PER_SEC: 500}
        self.assertEqual({self.rp_uuids['host1']: FLAVOR,
                          pgpu: {'VGPU': 1},
                          self.br_phys3['host1']: bw},
                         self.get_allocations(vm1['id']))
        self.assertEqual([], self.vifs(vm1))
        self._run_periodics()
        self.run_cycle([
            self.row(vm1['id'], self.rp_uuids['host1'], 'host1',
                     'active_instance', 'none', FLAVOR),
            self.row(vm1['id'], pgpu, 'host1', 'active_instance', 'none',
                     {'VGPU': 1}),
            self.row(vm1['id'], self.br_phys3['host1'], 'host1',
                     'active_instance', 'none', bw)])
