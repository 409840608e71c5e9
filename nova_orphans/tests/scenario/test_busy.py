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
"""``clean`` from cron on a busy cloud.

From the end of setUp ``clean`` runs in a thread of its own,
``nova-orphans-manage allocations clean`` and ``openstack allocation
orphan clean`` in turn, while nova's harness drives servers through
boots, resizes and cold migrations confirmed and reverted, live
migration, evacuation from a fenced host, shelve, offload, unshelve and
delete: a run as each of nova's steps begins, as cron would start one
at any moment of nova's work (back to back, the runs would cost the
suite's two cores more than nova's moves, more the slower the machine).
After every step nova's own placement assertions must hold; at the end
the cleaner's journals must name exactly the one leak the test made on
purpose, and nothing else.

Environment (for measuring by hand; CI uses the defaults):

- ``NOVA_ORPHANS_TEST_BUSY_ROUNDS``: how many times to repeat the
  sequence of moves (default 1, to keep the test near a minute on 2
  cores; without the guard nearly every run breaks in the first);
- ``NOVA_ORPHANS_TEST_UNGUARDED=1``: run with the guard disabled (no
  state check, no grace period): nova then breaks.
"""

import datetime
import os
import threading
import time
from unittest import mock

import fixtures
import sqlalchemy as sa

from nova_orphans.repair import journal as journal_mod
from nova_orphans.tests import runners
from nova_orphans.tests.scenario import cycle
from nova_orphans.tests.scenario import test_windows

ROUNDS = int(os.environ.get('NOVA_ORPHANS_TEST_BUSY_ROUNDS', '1'))
UNGUARDED = os.environ.get('NOVA_ORPHANS_TEST_UNGUARDED') == '1'

# placement's DELETE of a consumer not reaching placement (NOTES.md).
DELETE_LOST = mock.patch('nova.scheduler.client.report.SchedulerReportClient.'
                         'delete_allocation_for_instance')

# How each table of base.ScenarioTestCase.ACTIVITY_COLUMNS names its
# instance.
_INSTANCE_OF = {
    'instances': 'uuid = :u',
    'migrations': 'instance_uuid = :u',
    'instance_actions': 'instance_uuid = :u',
    'instance_actions_events': 'action_id IN (SELECT id FROM '
                               'instance_actions WHERE instance_uuid = :u)',
    'instance_info_caches': 'instance_uuid = :u',
}


class Cleaner(threading.Thread):
    """``allocations clean --journal <new file> --format json``, looping
    (with ``pause()`` between two runs).

    In-process, as the tests call the tool elsewhere (runners.manage_main),
    with stdout and stderr taken for each run: nothing else in the test
    writes to them while it runs.
    """

    #: The command, before ``--journal``.
    ARGV = ('allocations', 'clean', '--format', 'json')

    def __init__(self, conf_file, directory):
        super().__init__(name='nova-orphans-cleaner', daemon=True)
        self.conf_file = conf_file
        self.directory = directory
        self.journals = []
        self.codes = []
        self.errors = []
        self._halt = threading.Event()

    #: Return codes of a run that did its job (a repair may fail: nova
    #: can delete a consumer between the audit and the write).
    GOOD = (0, 1, 4)

    def run(self):
        while not self._halt.is_set():
            path = os.path.join(self.directory,
                                'journal-%05d.jsonl' % len(self.journals))
            self.journals.append(path)
            try:
                rc, err = self.clean(path)
            except Exception as e:  # the test reports it
                self.errors.append(repr(e))
                rc, err = None, ''
            self.codes.append(rc)
            if rc not in self.GOOD:
                self.errors.append('rc %s: %s' % (rc, err))
            self.pause()

    def pause(self):
        """Between two runs: none, the next starts at once."""

    def clean(self, path):
        """One run (runners.manage_main); (return code, stderr)."""
        rc, _out, err = runners.manage_main(
            ['--config-file', self.conf_file] + list(self.ARGV) +
            ['--journal', path])
        return rc, err

    def stop(self):
        self._halt.set()
        self.join(120)

    def applied(self):
        """Every change the cleaner made, from its journals."""
        return [entry for path in self.journals if os.path.exists(path)
                for entry in journal_mod.load(path).entries
                if entry.get('applied', True)]


class OpenStackCleaner(Cleaner):
    """The same loop through ``openstack allocation orphan clean``.

    The compute API is the only view of nova it has: the state checks
    and the grace period come from it (readers.compute_api). Its
    return codes are nova-orphans-manage's (nova_orphans.exit_codes).
    """

    def __init__(self, test, directory):
        super().__init__(None, directory)
        self.test = test

    def clean(self, path):
        rc, _out, err = self.test.openstack(
            'allocation', 'orphan', 'clean', '-f', 'json', '--journal', path,
            *getattr(self.test, 'osc_args', ()))
        return rc, err


class EitherCleaner(OpenStackCleaner):
    """Both front ends' cleans in turn, in one loop.

    One busy nova for both: the moves cost the suite's two cores more
    than either front end's runs, and both front ends' runs in one
    thread keep their captures of stdout and stderr apart.
    """

    def __init__(self, test, conf_file, directory):
        super().__init__(test, directory)
        self.conf_file = conf_file
        self.runs = {'nova-orphans-manage': 0, 'openstack': 0}
        self._stepped = threading.Event()

    def step(self):
        """nova has taken a step: the next run starts (at once if the
        last has ended) as the test starts the next.
        """
        self._stepped.set()

    def pause(self):
        self._stepped.wait()
        self._stepped.clear()

    def stop(self):
        self._halt.set()
        self._stepped.set()
        self.join(120)

    def clean(self, path):
        if len(self.journals) % 2:
            self.runs['openstack'] += 1
            return super().clean(path)
        self.runs['nova-orphans-manage'] += 1
        return Cleaner.clean(self, path)


class BusyNovaTest(cycle.CycleTestCase):

    HOSTS = ('host1', 'host2', 'host3')

    def setUp(self):
        super().setUp()
        self.big = self.api.get_flavor(self._create_flavor(
            vcpu=2, memory_mb=1024, disk=2, ephemeral=0))
        # consumer -> {host: flavor}: what nova must hold in placement.
        self.holds = {}
        if UNGUARDED:
            test_windows.disable_guard(self)
        self.cleaner = self.make_cleaner(
            self.useFixture(fixtures.TempDir()).path)
        self.cleaner.start()
        self.addCleanup(self.cleaner.stop)

    def make_cleaner(self, directory):
        # Before the cleaner's thread starts (see openstack_environment).
        for name, value in self.openstack_environment().items():
            self.useFixture(fixtures.EnvironmentVariable(name, value))
        return EitherCleaner(self, self.conf_file, directory)

    # -- nova's placement assertions -----------------------------------------

    def hold(self, consumer, **flavors):
        """Record what ``consumer`` must hold: host=flavor, or nothing."""
        self.holds[consumer] = flavors

    def check(self, step):
        """After a step: every consumer and provider as nova expects;
        then the cleaner's next run may start.
        """
        usage = {host: [] for host in self.HOSTS}
        for consumer, flavors in self.holds.items():
            self.assertEqual(
                {self.rp_uuids[host]: dict(self._resources_from_flavor(f))
                 for host, f in flavors.items()},
                self.get_allocations(consumer), '%s: %s' % (step, consumer))
            if len(flavors) == 1:
                (host, flavor), = flavors.items()
                self.assertFlavorMatchesAllocation(flavor, consumer,
                                                   self.rp_uuids[host])
            for host, flavor in flavors.items():
                usage[host].append(flavor)
        for host, flavors in usage.items():
            self.assertFlavorMatchesUsage(self.rp_uuids[host], *flavors)
        self.cleaner.step()

    def host_of(self, server):
        return self.api.get_server(server['id'])['OS-EXT-SRV-ATTR:host']

    def migration_of(self, server, migration_type):
        """The newest migration of the server (as nova records it)."""
        rows = [r for r in self.migration_rows(server['id'])
                if r.migration_type == migration_type]
        return rows[-1].uuid

    # -- moves --------------------------------------------------------------

    def boot_on(self, name, host, flavor=None):
        flavor = flavor or self.flavor
        server = self.boot(name, host, flavor=flavor)
        self.hold(server['id'], **{host: flavor})
        self.check('boot %s' % name)
        return server

    def resize(self, server, old, new, confirm):
        source = self.host_of(server)
        self._resize_server(server, new['id'])
        self.finish_move(server, 'resize', source, old, new, confirm)

    def cold_migrate(self, server, flavor, host, confirm):
        source = self.host_of(server)
        self._migrate_server(server, host=host)
        self.finish_move(server, 'migration', source, flavor, flavor,
                         confirm)

    def finish_move(self, server, kind, source, old, new, confirm):
        dest = self.host_of(server)
        mig = self.migration_of(server, kind)
        self.hold(server['id'], **{dest: new})
        self.hold(mig, **{source: old})
        self.check('%s %s to %s' % (kind, server['name'], dest))
        if confirm:
            self._confirm_resize(server)
            self.hold(server['id'], **{dest: new})
        else:
            self._revert_resize(server)
            self.hold(server['id'], **{source: old})
        self.hold(mig)
        self.check('%s %s %s' % ('confirm' if confirm else 'revert', kind,
                                 server['name']))

    def round(self, n):
        a = self.boot_on('a%d' % n, 'host1')
        self.resize(a, self.flavor, self.big, confirm=True)
        self.resize(a, self.big, self.flavor, confirm=False)
        b = self.boot_on('b%d' % n, 'host2')
        self.cold_migrate(b, self.flavor, 'host3', confirm=True)
        self.cold_migrate(b, self.flavor, 'host1', confirm=False)
        self._live_migrate(b, host='host2')
        self.hold(b['id'], host2=self.flavor)
        self.hold(self.migration_of(b, 'live-migration'))
        self.check('live migration b%d' % n)
        self._shelve_server(a)
        self.hold(a['id'])
        self.check('shelve and offload a%d' % n)
        self._unshelve_server(a)
        self.hold(a['id'], **{self.host_of(a): self.big})
        self.check('unshelve a%d' % n)
        for server in a, b:
            self._delete_server(server)
            self.hold(server['id'])
            self.check('delete %s' % server['name'])

    def evacuate(self):
        c = self.boot_on('c', 'host3')
        service = self.force_down('host3')
        self._evacuate_server(c, extra_post_args={'host': 'host1'},
                              expected_host='host1')
        self._check_allocation_during_evacuate(
            self.flavor, c['id'], self.rp_uuids['host3'],
            self.rp_uuids['host1'])
        self.hold(c['id'], host3=self.flavor, host1=self.flavor)
        self.check('evacuate c')
        # The fenced host comes back and nova removes the source.
        self.computes['host3'] = self.restart_compute_service(
            self.computes['host3'])
        self.admin_api.put_service(service['id'], {'forced_down': False})
        self.hold(c['id'], host1=self.flavor)
        self.check('host3 back')
        return c

    def leak(self):
        """A confirm whose DELETE never reached placement, long ago.

        The migration keeps the old flavor on the source for good: the
        one true orphan of this test. Its timestamps are then put back
        by an hour, past the grace period.
        """
        d = self.boot_on('d', 'host2')
        self._resize_server(d, self.big['id'])
        mig = self.migration_of(d, 'resize')
        with DELETE_LOST:
            self._confirm_resize(d)
        self.hold(d['id'], **{self.host_of(d): self.big})
        self.hold(mig, host2=self.flavor)
        self.check('leak')
        self.age(d['id'])
        return d, mig

    def age(self, server_id, hours=1):
        """age_nova, for one instance only: the others stay recent."""
        with self.cell_db().begin() as conn:
            for table, columns in self.ACTIVITY_COLUMNS.items():
                conn.execute(sa.text('UPDATE %s SET %s WHERE %s' % (
                    table, self.moved_back(columns, hours),
                    _INSTANCE_OF[table])), {'u': server_id})

    def wait_repaired(self, consumer, timeout=120):
        deadline = time.monotonic() + timeout
        while self.get_allocations(consumer):
            if time.monotonic() > deadline:
                self.fail('the cleaner never repaired %s' % consumer)
            self.cleaner.step()
            time.sleep(0.2)

    # -- the test ------------------------------------------------------------

    def test_busy_nova(self):
        started = datetime.datetime.now(datetime.timezone.utc)
        for n in range(ROUNDS):
            self.round(n)
        c = self.evacuate()
        d, mig = self.leak()
        self.wait_repaired(mig)
        self.hold(mig)
        self.check('leak repaired')
        for server in c, d:
            self._delete_server(server)
            self.hold(server['id'])
        self.check('all deleted')
        runs_before_stop = dict(self.cleaner.runs)
        self.cleaner.stop()

        self.assertEqual([], self.cleaner.errors)
        # Each front end ran through the moves, many times.
        self.assertGreater(min(runs_before_stop.values()), 5,
                           runs_before_stop)
        applied = self.cleaner.applied()
        self.assertEqual(
            [('delete_consumer', {mig: {self.rp_uuids['host2']: dict(
                self._resources_from_flavor(self.flavor))}})],
            [(e['action'], {consumer: {rp: a['resources'] for rp, a in
                                       change['before']['allocations']
                                       .items()}
                            for consumer, change in e['consumers'].items()})
             for e in applied])
        self.assertGreater(
            datetime.datetime.fromisoformat(applied[0]['time']), started)
