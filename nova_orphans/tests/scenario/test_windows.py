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
"""``clean`` run while nova is inside a confirm or a revert.

nova records a move as ended before it has finished with the move's
allocations:

- confirm: ``drop_move_claim_at_source`` sets the migration to
  ``confirmed`` (and the instance to ACTIVE); only then does
  ``_delete_allocation_after_move`` delete what the migration holds on
  the source, with a GET of the consumer generation and a PUT of empty
  allocations;
- revert: ``drop_move_claim_at_dest`` sets the migration to
  ``reverted``; the source compute then puts the instance back on the
  source and ``_revert_allocation`` moves the migration's allocation
  back to the instance.

Each test stops nova at the worst point of one window (after the GET
in the confirm, at ``_revert_allocation`` in the revert), runs
``allocations clean`` through both front ends, lets nova go on and
checks that the tool changed nothing, that nova's operation completed
and that the server holds exactly what nova's own assertions expect.
The ``Unguarded`` tests run the same with the guard disabled and show
that nova then breaks, which is what the guard is for.
"""

import json
import os

import fixtures

from nova.tests.fixtures import NeutronFixture
from nova.tests.functional.api import client

from nova_orphans.repair import journal as journal_mod
from nova_orphans.tests.scenario import cycle

REPORT_CLIENT = 'nova.scheduler.client.report.SchedulerReportClient'
MANAGER = 'nova.compute.manager.ComputeManager'


def disable_guard(test):
    """What a run of the tool without its guard for nova's windows does.

    No state check (``rules.unsettled`` never answers) and no grace
    period. For tests only: the tool has no switch for it.
    """
    test.useFixture(fixtures.MonkeyPatch(
        'nova_orphans.engine.rules.unsettled', lambda ctx: None))
    no_grace_period(test)


def no_grace_period(test):
    """``grace_period = 0`` for both front ends: only nova's states count.
    """
    test.conf_file = test.write_nova_conf(
        extra={'nova_orphans': {'grace_period': 0}})
    test.osc_args = ('--grace-period', '0')


class WindowTestBase(cycle.CycleTestCase):
    """One server, moved and then confirmed or reverted while paused."""

    HOSTS = ('host1', 'host2')
    #: Where the server goes: 'host2', or 'host1' for a same-host move.
    DEST = 'host2'
    #: 'resize' (to ``self.big``) or 'migrate' (cold, same flavor).
    MOVE = 'resize'
    #: Boot with neutron's minimum-bandwidth port (bridges on each host).
    QOS_PORT = False
    #: Run with the guard disabled (see ``disable_guard``).
    UNGUARDED = False
    #: Run with ``grace_period = 0`` (see ``no_grace_period``).
    NO_GRACE_PERIOD = False

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.runs = 0
        self.osc_args = ()
        self.big = self.api.get_flavor(self._create_flavor(
            vcpu=2, memory_mb=1024, disk=2, ephemeral=0))
        self.src = self.rp_uuids['host1']
        self.dst = self.rp_uuids[self.DEST]
        networks = 'none'
        self.bridges = {}
        if self.QOS_PORT:
            for host in self.HOSTS:
                agent = self.post_provider('%s:Open vSwitch agent' % host,
                                           self.rp_uuids[host])
                self.bridges[host] = self.post_provider(
                    '%s:Open vSwitch agent:br-ex' % host,
                    agent['uuid'])['uuid']
                self.put_inventory(self.bridges[host], {
                    'NET_BW_IGR_KILOBIT_PER_SEC': 10000,
                    'NET_BW_EGR_KILOBIT_PER_SEC': 10000,
                }, traits=['CUSTOM_VNIC_TYPE_NORMAL', 'CUSTOM_PHYSNET2'])
            self.port = NeutronFixture.port_with_resource_request
            networks = [{'port': self.port['id']}]
        server = self._build_server(flavor_id=self.flavor['id'],
                                    networks=networks, host='host1')
        self.server = self._wait_for_state_change(
            self.api.post_server({'server': server}), 'ACTIVE')
        self.assertAllocation(self.flavor, self.src)

        if self.MOVE == 'resize':
            self.new_flavor = self.big
            self._resize_server(self.server, self.big['id'])
        else:
            self.new_flavor = self.flavor
            self._migrate_server(self.server)
        self.server = self.api.get_server(self.server['id'])
        self.assertEqual(self.DEST, self.server['OS-EXT-SRV-ATTR:host'])
        self.mig = self.get_migration_uuid_for_instance(self.server['id'])
        # VERIFY_RESIZE: the migration holds the old flavor on the
        # source, the server the new one on the destination.
        self.assertAllocation(self.flavor, self.src, self.mig)
        self.assertAllocation(self.new_flavor, self.dst)
        if self.UNGUARDED:
            disable_guard(self)
        elif self.NO_GRACE_PERIOD:
            no_grace_period(self)

    # -- nova's expectations -------------------------------------------------

    def assertAllocation(self, flavor, rp, consumer=None):
        """nova's assertFlavorMatchesAllocation, bandwidth included."""
        consumer = consumer or self.server['id']
        if not self.QOS_PORT:
            self.assertFlavorMatchesAllocation(flavor, consumer, rp)
            return
        expected = dict(self._resources_from_flavor(flavor))
        expected.update(self.port['resource_request']['resources'])
        self.assertEqual(
            expected, {rc: amount for res in self.get_allocations(
                consumer).values() for rc, amount in res.items()})
        host = {u: h for h, u in self.rp_uuids.items()}[rp]
        self.assertEqual(
            {rp, self.bridges[host]}, set(self.get_allocations(consumer)))

    def migration_status(self):
        return self.admin_api.api_get(
            '/os-migrations?instance_uuid=%s' % self.server['id']
        ).body['migrations'][0]['status']

    def assertSettled(self, status, flavor, rp):
        """nova finished: migration ``status``, server ACTIVE on ``rp``."""
        self._wait_for_migration_status(self.server, [status])
        server = self.api.get_server(self.server['id'])
        self.assertEqual('ACTIVE', server['status'])
        self.assertIsNone(server['OS-EXT-STS:task_state'])
        self.assertNotIn('fault', server)
        self.assertEqual({v: k for k, v in self.rp_uuids.items()}[rp],
                         server['OS-EXT-SRV-ATTR:host'])
        self.assertAllocation(flavor, rp)
        self.assertEqual({}, self.get_allocations(self.mig))
        usage = dict(self._resources_from_flavor(flavor))
        if self.QOS_PORT:
            usage.update(self.port['resource_request']['resources'])
        self.assertRequestMatchesUsage(usage, rp)
        for other in set(self.rp_uuids.values()) - {rp}:
            self.assertEqual(
                {'VCPU': 0, 'MEMORY_MB': 0, 'DISK_GB': 0},
                self._get_provider_usages(other))

    # -- pausing nova --------------------------------------------------------

    def start_confirm(self):
        """Confirm; nova stops after reading the migration consumer.

        That is inside ``_delete_allocation_after_move``: the migration
        is ``confirmed``, nova has just read the consumer's generation
        and is about to PUT it empty.
        """
        url = '/allocations/%s' % self.mig
        gate = self.pause(REPORT_CLIENT + '.put',
                          when=lambda client, path, *a, **kw: path == url)
        self.api.post_server_action(self.server['id'],
                                    {'confirmResize': None})
        gate.entered()
        self.assertEqual('confirmed', self.migration_status())
        return gate

    def start_revert(self):
        """Revert; nova stops before moving the allocation back.

        That is at ``_revert_allocation`` on the source: the migration
        is ``reverted``, the instance back on the source (host, node,
        old flavor) in task ``resize_reverting``, the migration still
        holds the source and the instance the destination.
        """
        gate = self.pause(MANAGER + '._revert_allocation')
        self.api.post_server_action(self.server['id'],
                                    {'revertResize': None})
        gate.entered()
        self.assertEqual('reverted', self.migration_status())
        server = self.api.get_server(self.server['id'])
        self.assertEqual(('host1', 'resize_reverting'),
                         (server['OS-EXT-SRV-ATTR:host'],
                          server['OS-EXT-STS:task_state']))
        return gate

    def wait_confirmed(self):
        return self._wait_for_instance_action_event(
            self.server, 'confirmResize', 'compute_confirm_resize',
            'success' if not self.UNGUARDED else 'error')

    def wait_reverted(self):
        return self._wait_for_instance_action_event(
            self.server, 'revertResize', 'compute_finish_revert_resize',
            'success')

    # -- the tool ------------------------------------------------------------

    def journal(self):
        self.runs += 1
        return os.path.join(self.tmp, 'journal-%d.jsonl' % self.runs)

    def run_clean(self, fronts=('manage', 'osc')):
        """clean through each front end: [(front, rc, rows, journal)]."""
        runs = []
        for front in fronts:
            path = self.journal()
            if front == 'manage':
                rc, out = self.run_manage('allocations', 'clean', '--format',
                                          'json', '--journal', path)
            else:
                rc, out, err = self.openstack(
                    'allocation', 'orphan', 'clean', '--journal', path,
                    '-f', 'json', *self.osc_args)
                out = out or json.dumps(err)
            runs.append((front, rc, json.loads(out), path))
        return runs

    def applied(self, path):
        if not os.path.exists(path):
            return []
        return [e for e in journal_mod.load(path).entries
                if e.get('applied', True)]

    def listed(self):
        """{front: {(consumer, rp): reason}} of list --all, this server's."""
        mine = {self.server['id'], self.mig}
        rows = self.rows = {
            'manage': self.list_allocations('--all'),
            'osc': self.osc_json('allocation', 'orphan', 'list', '--all',
                                 *self.osc_args),
        }
        return {front: {(r['consumer'], r['resource_provider']):
                        (r['reason'], r['action'])
                        for r in found if r['consumer'] in mine}
                for front, found in rows.items()}

    def assertCleanChangesNothing(self, expected):
        """clean (both front ends) changes nothing; list shows ``expected``.

        ``expected`` is {(consumer, rp): reason} for the server's and its
        migration's allocations, all with action ``none``.
        """
        before = self.placement_state()
        for front, rc, rows, path in self.run_clean():
            self.assertEqual((front, 0, [], []),
                             (front, rc, rows, self.applied(path)))
        self.assertEqual(before, self.placement_state())
        expected = {key: (reason, 'none') for key, reason in expected.items()}
        self.assertEqual({'manage': expected, 'osc': expected},
                         self.listed())

    def assertWhy(self, text):
        """Both front ends say ``text`` about the migration's row."""
        for front, rows in self.rows.items():
            details = [r['details'] for r in rows if r['consumer'] == self.mig]
            self.assertTrue(details)
            for why in details:
                self.assertIn(text, why, front)

    def window_rows(self, confirm):
        """What list must say about the server inside the window."""
        rows = {(self.mig, self.src): 'in_progress'}
        if self.DEST == 'host1':
            rows[(self.server['id'], self.src)] = 'active_instance'
        elif confirm:
            rows[(self.server['id'], self.dst)] = 'active_instance'
        else:
            # The instance is back on the source but still holds the
            # destination until _revert_allocation swaps the two; its
            # task protects it.
            rows[(self.server['id'], self.dst)] = 'active_instance'
        if self.QOS_PORT:
            for (consumer, rp), reason in list(rows.items()):
                host = {u: h for h, u in self.rp_uuids.items()}[rp]
                rows[(consumer, self.bridges[host])] = reason
        return rows


class WindowTests:
    """The two windows, for every kind of move a subclass sets up."""

    #: What list says about the migration in each window, if not null.
    WHY_CONFIRM = WHY_REVERT = None

    def test_confirm(self):
        gate = self.start_confirm()
        self.assertCleanChangesNothing(self.window_rows(confirm=True))
        if self.WHY_CONFIRM:
            self.assertWhy(self.WHY_CONFIRM)
        gate.release()
        self.wait_confirmed()
        self.assertSettled('confirmed', self.new_flavor, self.dst)

    def test_revert(self):
        gate = self.start_revert()
        self.assertCleanChangesNothing(self.window_rows(confirm=False))
        if self.WHY_REVERT:
            self.assertWhy(self.WHY_REVERT)
        gate.release()
        self.wait_reverted()
        self.assertSettled('reverted', self.flavor, self.src)


class ResizeCrossHostTest(WindowTests, WindowTestBase):

    def test_revert_before_the_source(self):
        """The revert's first half: the destination is done, the source
        not started (``finish_revert_resize`` not yet run there).

        The migration is ``reverted`` and the instance, in task
        ``resize_reverting``, still on the destination.
        """
        gate = self.pause(MANAGER + '.finish_revert_resize')
        self.api.post_server_action(self.server['id'],
                                    {'revertResize': None})
        gate.entered()
        self.assertEqual('reverted', self.migration_status())
        server = self.api.get_server(self.server['id'])
        self.assertEqual(('host2', 'resize_reverting'),
                         (server['OS-EXT-SRV-ATTR:host'],
                          server['OS-EXT-STS:task_state']))
        self.assertCleanChangesNothing({
            (self.mig, self.src): 'in_progress',
            (self.server['id'], self.dst): 'active_instance'})
        gate.release()
        self.wait_reverted()
        self.assertSettled('reverted', self.flavor, self.src)


class ResizeSameHostTest(WindowTests, WindowTestBase):

    HOSTS = ('host1',)
    DEST = 'host1'

    def setUp(self):
        self.flags(allow_resize_to_same_host=True)
        super().setUp()


class ColdMigrationCrossHostTest(WindowTests, WindowTestBase):

    MOVE = 'migrate'


class ColdMigrationSameHostTest(WindowTests, WindowTestBase):

    HOSTS = ('host1',)
    DEST = 'host1'
    MOVE = 'migrate'
    compute_driver = 'fake.SameHostColdMigrateDriver'

    def setUp(self):
        self.flags(allow_resize_to_same_host=True)
        super().setUp()


class ResizeWithQoSPortTest(WindowTests, WindowTestBase):
    """The port's bandwidth moves with the server, on nested providers."""

    QOS_PORT = True


class NoGracePeriodTest(WindowTests, WindowTestBase):
    """``grace_period = 0``: nova's states alone close both windows.

    Confirming, the instance is ACTIVE with no task, but its
    ``compute_confirm_resize`` event has not finished; reverting, it is
    in task ``resize_reverting``.
    """

    NO_GRACE_PERIOD = True
    WHY_CONFIRM = 'nova has not finished compute_confirm_resize'
    WHY_REVERT = 'task_state resize_reverting'


class ConfirmSourceDownTest(WindowTestBase):
    """A confirm asked for while the source compute is down.

    nova 34 refuses it: the API checks the source service before it
    touches the migration (409, "Service is unavailable at this time",
    migration still ``finished``), and so does the dest's
    ``_poll_unconfirmed_resizes``. No window opens while the source is
    down; the move stays in VERIFY_RESIZE, which the tool must leave
    alone too, and the confirm runs once the source is back.
    """

    def test_confirm_source_down(self):
        source = self.force_down('host1')
        ex = self.assertRaises(
            client.OpenStackApiException, self.api.post_server_action,
            self.server['id'], {'confirmResize': None})
        self.assertEqual(409, ex.response.status_code)
        self.assertEqual('finished', self.migration_status())
        self.assertCleanChangesNothing({
            (self.mig, self.src): 'active_migration',
            (self.server['id'], self.dst): 'active_instance'})

        self.restart_compute_service(self.computes['host1'])
        self.admin_api.put_service(source['id'], {'forced_down': False})
        gate = self.start_confirm()
        self.assertCleanChangesNothing(self.window_rows(confirm=True))
        gate.release()
        self.wait_confirmed()
        self.assertSettled('confirmed', self.new_flavor, self.dst)


class UnguardedTest(WindowTestBase):
    """Without the guard, the same runs break nova, with either front end.

    These show what the guard protects against; each would pass on a
    tool that ignores nova's unsettled moves.
    """

    UNGUARDED = True

    def clean_alone(self, front):
        """One front end's clean: it deletes the migration consumer."""
        (front, rc, rows, path), = self.run_clean(fronts=(front,))
        self.assertEqual(
            (4, [(self.mig, self.src, 'finished_migration',
                  'delete_consumer', 'done')]),
            (rc, [(r['consumer'], r['resource_provider'], r['reason'],
                   r['action'], r['outcome']) for r in rows]))
        self.assertEqual(1, len(self.applied(path)))

    def check_confirm_fails(self, front):
        """nova's PUT of the empty allocations gets a 409: server ERROR."""
        gate = self.start_confirm()
        self.clean_alone(front)
        gate.release()
        self.wait_confirmed()
        server = self._wait_for_state_change(self.server, 'ERROR')
        self.assertIn('Failed to delete allocations for consumer %s'
                      % self.mig, server['fault']['message'])

    def check_revert_loses_the_source(self, front):
        """nova has nothing to move back.

        The server ends ACTIVE on the source holding nothing there, only
        the new flavor on the destination it left.
        """
        gate = self.start_revert()
        self.clean_alone(front)
        gate.release()
        self.wait_reverted()
        server = self._wait_for_state_change(self.server, 'ACTIVE')
        self.assertEqual('host1', server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual({self.dst: {'VCPU': 2, 'MEMORY_MB': 1024,
                                     'DISK_GB': 2}},
                         self.get_allocations(self.server['id']))
        self.assertEqual({}, self.get_allocations(self.mig))

    def test_confirm_fails_manage(self):
        self.check_confirm_fails('manage')

    def test_confirm_fails_osc(self):
        self.check_confirm_fails('osc')

    def test_revert_loses_the_source_manage(self):
        self.check_revert_loses_the_source('manage')

    def test_revert_loses_the_source_osc(self):
        self.check_revert_loses_the_source('osc')
