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
"""A flaky control plane: both console scripts through fault-injecting
proxies in front of the real placement and nova's real compute API.

The proxies (fixtures/faults.py) answer a seeded share of the requests
with haproxy's 503 page, reset connections, delay answers, and lose the
answers of writes placement applied. Every run must still do its whole
job with its usual exit code, leave placement exactly as it would
without faults, and never have placement apply a write twice; a
placement that refuses everything ends the run with exit code 8 within
seconds; a provider nova deletes during a run is gone, not an error.
"""

import collections
import json
import os
import urllib.parse
import uuid as uuidlib

from nova_orphans.conf import service as service_conf
from nova_orphans import exit_codes
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import faults
from nova_orphans.tests.functional import front_ends

MANAGE = 'nova-orphans-manage'
OPENSTACK = 'openstack'
FRONT_ENDS = (MANAGE, OPENSTACK)
STRANGER = '5a3a1b50-1c36-4c5f-9d43-8a0ab1a0e0d1'
BW = {'CUSTOM_BW_EGRESS': 10}
RETRIED = ' retried after transient faults ('
# urllib3's warning, which openstack shows, when more requests to one
# host:port were in flight at once than osc's session pools (10): seen
# here at 0 % faults too, when a clean re-verifies many servers through
# the compute API behind the proxy. Not a fault of the run.
POOL_FULL = 'Connection pool is full, discarding connection: '
# The line of a run whose every request to placement failed.
_REFUSED = (r'Placement (at http://127\.0\.0\.1:\d+/ answered 503 Service '
            r'Unavailable with an HTML page \("503 Service Unavailable"\), '
            r'not placement\'s version document: .*|request GET / failed: '
            r'Unable to establish connection to http://127\.0\.0\.1:\d+/: '
            r'.*; check that placement runs there, .*)$')
REFUSED = {MANAGE: '^ERROR: ' + _REFUSED, OPENSTACK: '^ERROR: ' + _REFUSED}


def retries_total(path, command):
    """{(service, reason): count} of nova_orphans_retries_total in the
    metrics file at ``path``, for ``command``.
    """
    from prometheus_client import parser
    with open(path) as f:
        text = f.read()
    found = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == 'nova_orphans_retries_total':
                labels = sample.labels
                if labels['command'] == command and sample.value:
                    found[(labels['service'], labels['reason'])] = int(
                        sample.value)
    return found


class _FlakyControlPlane(front_ends.FrontEndsTestCase):
    """The proxies, the cloud's states and the runs through them. The
    tests are in three classes, each with its own cloud, so that
    stestr's workers can share them out (.stestr.conf keeps a class,
    which shares its cloud, in one worker).
    """

    def setUp(self):
        super().setUp()
        self.proxy = self.useFixture(
            faults.FaultProxy(self.placement.endpoint))
        compute = urllib.parse.urlsplit(self.cloud.compute)
        self.compute_proxy = self.useFixture(faults.FaultProxy(
            '%s://%s' % (compute.scheme, compute.netloc)))
        self.write_clouds(proxied={
            'placement': self.proxy.endpoint,
            'compute': self.compute_proxy.endpoint + compute.path})
        self.proxied_conf = self.nova_conf(self.proxy.endpoint,
                                           name='proxied.conf')
        self.journal = os.path.join(self.tmp, 'journal.jsonl')

    # The cloud ----------------------------------------------------------

    def orphans(self, count=10, inventory=base.INVENTORY):
        """Two hosts, each with live servers, ``count`` servers forced
        to deleted in SQL and a consumer nova never had: the orphans.
        """
        self.host1 = self.add_node('host1', inventory=inventory)
        self.host2 = self.add_node('host2', inventory=inventory)
        for host, rp in (('host1', self.host1), ('host2', self.host2)):
            for _n in range(2):
                self.boot(host, rp)
        gone = []
        for n in range(count):
            host, rp = (('host1', self.host1), ('host2', self.host2))[n % 2]
            vm = self.boot(host, rp, vm_state='error')
            self.nova.force_delete_instance('cell1', vm)
            gone.append(vm)
        stranger = str(uuidlib.uuid4())
        self.allocate(stranger, self.host2)
        return sorted(gone + [stranger])

    def dead_tree(self, host='dead1'):
        """A compute node nova deleted whose tree placement kept: its
        root and a child with inventory, held by a consumer nova never
        had.
        """
        root = self.add_node(host)
        gen = self.placement._ok('GET', '/resource_providers/%s' % root
                                 ).json()['generation']
        # nova's mark on its compute nodes, which the openstack commands
        # prove a deleted node by.
        self.placement._ok('PUT', '/resource_providers/%s/traits' % root, {
            'resource_provider_generation': gen, 'traits': ['COMPUTE_NODE']})
        child = self.placement.create_provider(
            host + ':eth0', parent=root, inventory={'CUSTOM_BW_EGRESS': 1000})
        self.allocate(STRANGER, {root: {'VCPU': 1}, child: BW})
        self.nova.execute('cell1', 'UPDATE compute_nodes SET deleted = id '
                          "WHERE uuid = '%s'" % root)
        self.nova.execute('cell1', 'UPDATE services SET deleted = id '
                          "WHERE host = '%s'" % host)
        return root, child

    # Running the front ends ---------------------------------------------

    def argv(self, front_end, category, action, *argv, proxied=True):
        """The command line of ``category action`` (nova-orphans-manage's
        names) for ``front_end``, JSON out, through the proxies.
        """
        if front_end == MANAGE:
            return self.manage_argv(
                category, action, '--format', 'json', *argv,
                conf_file=self.proxied_conf if proxied else None)
        words = {('allocations', 'list'): ('allocation', 'orphan', 'list'),
                 ('allocations', 'clean'): ('allocation', 'orphan', 'clean'),
                 ('allocations', 'restore'): ('allocation', 'orphan',
                                              'restore'),
                 ('providers', 'list'): ('resource', 'provider', 'orphan',
                                         'list'),
                 ('providers', 'clean'): ('resource', 'provider', 'orphan',
                                          'clean')}[(category, action)]
        return self.openstack_argv(*words, '-f', 'json', *argv,
                                   cloud='proxied' if proxied else 'cloud')

    def json_and_retries(self, front_end, category, action, *argv,
                         proxied=True):
        """(exit code, rows, stderr's lines but the retries line,
        the retries line or None) of a run (run_json).
        """
        rc, rows = self.run_json(command=self.argv(
            front_end, category, action, *argv, proxied=proxied))
        lines = self.stderr.splitlines()
        retried = [line for line in lines if RETRIED in line]
        self.assertLessEqual(len(retried), 1, self.stderr)
        return (rc, rows,
                [line for line in lines if RETRIED not in line and
                 not line.startswith(POOL_FULL)],
                retried[0] if retried else None)

    def applied_writes(self):
        """{consumer: how many writes placement applied to it}, through
        either proxy's placement.
        """
        counts = collections.Counter()
        for request in self.proxy.requests():
            if not (request.method in faults.WRITES and
                    request.path.startswith('/allocations') and
                    request.forwarded is not None and
                    200 <= request.forwarded < 300):
                continue
            if request.method == 'POST':
                counts.update(list(request.body))
            else:
                counts[request.path.rsplit('/', 1)[-1]] += 1
        return counts

    def seen(self):
        """Where each proxy's log is now, for faults_met."""
        return len(self.proxy.requests()), len(self.compute_proxy.requests())

    def faults_met(self, since):
        """{(service, reason): count} of the faults the proxies made
        since ``since`` (seen()), as the tool counts them.
        """
        met = collections.Counter()
        for service, proxy, start in (('placement', self.proxy, since[0]),
                                      ('compute', self.compute_proxy,
                                       since[1])):
            for request in proxy.requests()[start:]:
                if request.fault in (None, faults.DELAY):
                    continue
                met[(service, '502' if request.result == 502 else
                     '503' if request.result == 503 else 'connection')] += 1
        return met

    def undo_line(self, front_end):
        if front_end == MANAGE:
            return ('To undo: nova-orphans-manage --config-file %s '
                    'allocations restore --journal %s' % (
                        self.proxied_conf, self.journal))
        return ('To undo: openstack --os-cloud proxied allocation orphan '
                'restore --journal %s' % self.journal)

    # Transient faults at a rate -----------------------------------------

    def assertJobDone(self, front_end, rate, seed):
        """list, clean and restore at ``rate`` faults: their usual exit
        codes, the rows of a run without faults, placement exactly as
        without faults, and each write applied once.
        """
        orphans = self.orphans()
        initial = self.placement.dump_state()
        rc, expected, err, retried = self.json_and_retries(
            front_end, 'allocations', 'list', proxied=False)
        self.assertEqual((exit_codes.ORPHANS_FOUND, [], None),
                         (rc, err, retried))
        self.assertEqual(orphans, sorted(r['consumer'] for r in expected))

        self.proxy.random_faults(seed, rate=rate)
        self.compute_proxy.random_faults(seed + 1, rate=rate)
        rc, rows, err, retried = self.json_and_retries(
            front_end, 'allocations', 'list')
        self.assertEqual((exit_codes.ORPHANS_FOUND, []), (rc, err))
        self.assertEqual(expected, rows)

        seen = self.seen()
        metrics = os.path.join(self.tmp, 'clean.prom')
        rc, rows, err, retried = self.json_and_retries(
            front_end, 'allocations', 'clean', '--journal', self.journal,
            '--metrics-file', metrics)
        self.assertEqual(exit_codes.REPAIRED, rc, err)
        self.assertEqual([(c, 'done') for c in orphans],
                         sorted((r['consumer'], r['outcome']) for r in rows))
        self.assertEqual(['Journal: %s' % self.journal,
                          self.undo_line(front_end)], err)
        # Each fault met (but a delay) was one retry, or one write read
        # back: counted by service and reason, and said.
        faults_met = self.faults_met(seen)
        self.assertEqual(faults_met, retries_total(metrics, 'clean'))
        if faults_met:
            self.assertRegex(retried, r'^\d+ requests? retried after '
                             r'transient faults \(%s\)\.$' % ', '.join(
                                 '%s %s: %d' % (service, reason, n)
                                 for (service, reason), n in sorted(
                                     faults_met.items())))
        else:
            self.assertIsNone(retried)
        self.assertEqual({c: v for c, v in initial.items()
                          if c not in orphans}, self.placement.dump_state())
        self.assertEqual(dict.fromkeys(orphans, 1), self.applied_writes())

        rc, rows, err, retried = self.json_and_retries(
            front_end, 'allocations', 'restore', '--journal', self.journal)
        self.assertEqual(exit_codes.REPAIRED, rc, err)
        self.assertEqual([(c, 'done') for c in orphans],
                         sorted((r['consumer'], r['outcome']) for r in rows))
        self.assertEqual(initial, self.placement.dump_state())
        self.assertEqual(dict.fromkeys(orphans, 2), self.applied_writes())
        # The faults were met, and said.
        faulted = self.proxy.faulted() + self.compute_proxy.faulted()
        self.assertGreater(len(faulted), 0)
        return faulted

    def assertProvidersCleaned(self, front_end, rate, seed):
        """providers clean, then restore, at ``rate`` faults: the tree
        deleted, then back exactly.
        """
        root, child = self.dead_tree()
        self.add_node('live1')
        before = self.placement.providers_state()
        self.proxy.random_faults(seed, rate=rate)
        self.compute_proxy.random_faults(seed + 1, rate=rate)
        rc, rows, err, _retried = self.json_and_retries(
            front_end, 'providers', 'clean', '--journal', self.journal)
        self.assertEqual(exit_codes.REPAIRED, rc, err)
        self.assertEqual([(root, 'done'), (child, 'done')],
                         [(r['uuid'], r['outcome']) for r in rows])
        providers, allocations = self.placement.providers_state()
        self.assertEqual({}, allocations)
        self.assertEqual(sorted(set(before[0]) - {root, child}),
                         sorted(providers))
        self.assertEqual({STRANGER: 1}, self.applied_writes())
        deletes = [r.path for r in self.proxy.requests('DELETE')
                   if r.forwarded == 204]
        self.assertEqual(['/resource_providers/%s' % child,
                          '/resource_providers/%s' % root], deletes)

        rc, rows, err, _retried = self.json_and_retries(
            front_end, 'allocations', 'restore', '--journal', self.journal)
        self.assertEqual(exit_codes.REPAIRED, rc, err)
        self.assertEqual(before, self.placement.providers_state())
        created = [r.body['uuid'] for r in self.proxy.requests(
            'POST', '/resource_providers') if r.forwarded == 200]
        self.assertEqual([root, child], created)

    # Every answer to a write lost ---------------------------------------

    def assertAppliedOnce(self, front_end):
        """Placement applies every write, and every answer is lost (a
        reset or haproxy's 502): each is read back, found applied, and
        never sent again.
        """
        orphans = self.orphans(count=3)
        root, child = self.dead_tree()
        initial = self.placement.providers_state()
        lost = self.proxy.random_faults(0, rates={faults.LOST: 1.0})
        rc, rows, err, retried = self.json_and_retries(
            front_end, 'providers', 'clean', '--journal', self.journal)
        self.assertEqual(exit_codes.REPAIRED, rc, err)
        self.assertEqual([(root, 'done'), (child, 'done')],
                         [(r['uuid'], r['outcome']) for r in rows])
        first = len(self.proxy.requests())
        rc, rows, err, retried = self.json_and_retries(
            front_end, 'allocations', 'clean', '--journal', self.journal)
        self.assertEqual(exit_codes.REPAIRED, rc, err)
        self.assertEqual([(c, 'done') for c in orphans],
                         sorted((r['consumer'], r['outcome']) for r in rows))
        # Every write's answer was lost, and every one was applied once.
        writes = [r for r in self.proxy.requests()
                  if r.method in faults.WRITES]
        self.assertEqual([faults.LOST] * len(writes),
                         [r.fault for r in writes])
        self.assertEqual(dict.fromkeys(orphans + [STRANGER], 1),
                         self.applied_writes())
        self.assertEqual(
            ['/resource_providers/%s' % child,
             '/resource_providers/%s' % root],
            [r.path for r in self.proxy.requests('DELETE')])
        # Said: each lost answer is a request retried (read back).
        these = [r for r in self.proxy.requests()[first:]
                 if r.method in faults.WRITES]
        self.assertTrue(retried.startswith('%d requests%s' % (
            len(these), RETRIED)), retried)

        rc, rows, err, retried = self.json_and_retries(
            front_end, 'allocations', 'restore', '--journal', self.journal)
        self.assertEqual(exit_codes.REPAIRED, rc, err)
        self.assertEqual(initial, self.placement.providers_state())
        self.assertEqual(dict.fromkeys(orphans + [STRANGER], 2),
                         self.applied_writes())
        created = [r.body['uuid'] for r in self.proxy.requests(
            'POST', '/resource_providers')]
        self.assertEqual([root, child], created)
        self.assertEqual({faults.LOST: 1.0}, lost.rates)


class TransientFaultsTestCase(_FlakyControlPlane):
    """Transient faults at a rate, on allocations: the job done."""

    def test_5_percent_manage(self):
        self.assertJobDone(MANAGE, 0.05, seed=5)

    def test_5_percent_openstack(self):
        self.assertJobDone(OPENSTACK, 0.05, seed=50)

    def test_20_percent_manage(self):
        self.assertJobDone(MANAGE, 0.2, seed=20)

    def test_20_percent_openstack(self):
        self.assertJobDone(OPENSTACK, 0.2, seed=200)


class ProviderFaultsTestCase(_FlakyControlPlane):
    """Providers cleaned through faults, and every answer to a write lost."""

    def test_providers_5_percent_manage(self):
        self.assertProvidersCleaned(MANAGE, 0.05, seed=7)

    def test_providers_5_percent_openstack(self):
        self.assertProvidersCleaned(OPENSTACK, 0.05, seed=70)

    def test_providers_20_percent_manage(self):
        self.assertProvidersCleaned(MANAGE, 0.2, seed=27)

    def test_providers_20_percent_openstack(self):
        self.assertProvidersCleaned(OPENSTACK, 0.2, seed=270)

    def test_lost_answers_manage(self):
        self.assertAppliedOnce(MANAGE)

    def test_lost_answers_openstack(self):
        self.assertAppliedOnce(OPENSTACK)


class ServiceDownTestCase(_FlakyControlPlane):
    """Placement down for good or too slow, and a cloud that changes
    under the run.
    """

    def test_placement_refusing_everything(self):
        """Every request answered with haproxy's 503 page or reset: exit
        code 8 and today's one line, within seconds of the retry
        budget, nothing changed.
        """
        orphans = self.orphans(count=2)
        before = self.placement.dump_state()
        self.proxy.random_faults(1, rates={faults.HTML_503: 0.5,
                                           faults.RESET: 0.5})
        # list and clean read placement the same way: each action once,
        # from one front end each.
        for front_end, action in ((MANAGE, 'clean'), (OPENSTACK, 'list')):
            seen = len(self.proxy.requests())
            rc, out, err = self.run_one(self.argv(
                front_end, 'allocations', action))
            self.assertEqual(exit_codes.UNREACHABLE, rc, err)
            self.assertEqual('', out)
            # Today's line, of the fault the last try met: haproxy's page
            # instead of placement's version document, or the connection
            # reset.
            line, = err.splitlines()
            self.assertRegex(line, REFUSED[front_end])
            # The retries of one request, and no other request: the run
            # gave up on placement's version document after its
            # connection and status retries.
            sent = self.proxy.requests()[seen:]
            self.assertEqual({('GET', '/')},
                             {(r.method, r.path) for r in sent})
            self.assertLessEqual(len(sent), 1 + 2 * service_conf.RETRIES)
        self.assertEqual(before, self.placement.dump_state())
        self.assertEqual([], [r for r in self.proxy.requests()
                              if r.method in faults.WRITES])
        self.assertEqual(3, len(orphans))

    def test_deadline(self):
        """A placement that answers too slowly: no request waits past
        the run's deadline, and the run ends there with exit code 8.
        """
        self.orphans(count=2)
        before = self.placement.dump_state()
        deadline = self.nova_conf(self.proxy.endpoint, name='deadline.conf',
                                  nova_orphans={'deadline': '2'})
        for argv in (self.manage_argv('allocations', 'clean',
                                      conf_file=deadline),
                     self.openstack_argv('allocation', 'orphan', 'clean',
                                         '--deadline', '2',
                                         cloud='proxied')):
            rule = self.proxy.inject('GET', '/resource_providers',
                                     delay=50, until_gone=True)
            rc, out, err = self.run_one(argv)
            self.assertEqual((exit_codes.UNREACHABLE, ''), (rc, out), err)
            line, = err.splitlines()
            self.assertRegex(line, '^(ERROR: )?Placement request GET '
                             '/resource_providers failed: .*timed out')
            # The run hung up on the request before its answer, which
            # would have come after 50 s, within the tool's own 60 s
            # timeout; and it did not send it again: the deadline ended
            # the run.
            self.proxy.wait_idle()
            self.assertEqual(1, rule.fired)
            self.assertEqual(['client gone'], [
                r.result for r in self.proxy.requests(
                    'GET', '/resource_providers')][-1:])
        self.assertEqual(before, self.placement.dump_state())

    def test_provider_deleted_during_the_run(self):
        """nova deletes a compute node's provider between the run's
        listing of the providers and its read of that provider's
        allocations (as on every compute node or Ironic node delete):
        gone with its allocations; the run finishes as usual.
        """
        orphans = self.orphans(count=2)
        expected = {}
        for front_end in FRONT_ENDS:
            rc, rows, err, _r = self.json_and_retries(
                front_end, 'allocations', 'list', proxied=False)
            self.assertEqual((exit_codes.ORPHANS_FOUND, []), (rc, err))
            expected[front_end] = rows
        for n, (front_end, action) in enumerate(
                (f, a) for f in FRONT_ENDS for a in ('list', 'clean')):
            going = self.add_node('going%d' % n)
            deleted = []

            def delete(going=going, deleted=deleted):
                self.placement.delete_provider(going)
                deleted.append(going)
            self.proxy.inject(
                'GET', '/resource_providers/%s/allocations' % going,
                before=delete)
            argv = ('--dry-run',) if action == 'clean' else ()
            rc, rows, err, _r = self.json_and_retries(
                front_end, 'allocations', action, *argv)
            self.assertEqual((exit_codes.ORPHANS_FOUND, []), (rc, err))
            self.assertEqual([going], deleted)
            if action == 'list':
                self.assertEqual(expected[front_end], rows)
            else:
                self.assertEqual(
                    [(c, 'skipped: dry run') for c in orphans],
                    sorted((r['consumer'], r['outcome']) for r in rows))

    def test_server_deleted_during_the_run(self):
        """nova deletes a server (its instance, then its allocations)
        after the run listed it as an orphan's holder and before it
        writes: the server and its allocation are gone, the run goes on
        with the other orphans and ends as usual. nova-orphans-manage
        in both modes (fast mode reads placement's database, so the
        delete comes as its write is sent, which placement then refuses
        for the consumer's generation), openstack as it reads the server
        again.
        """
        fast = self.nova_conf(self.proxy.endpoint, name='fast.conf',
                              placement_database={
                                  'connection': self.placement.db_url})
        gone_now = 'skipped: the allocation is gone'
        # Met by the write: the writer placement's 409 names did it.
        other_writer = 'skipped: changed by another writer'
        for n, (front_end, conf, where, outcome) in enumerate((
                (MANAGE, self.proxied_conf, 'GET /allocations/', gone_now),
                (MANAGE, fast, 'PUT /allocations/', other_writer),
                (OPENSTACK, None, 'GET %s/servers/' % urllib.parse.urlsplit(
                    self.cloud.compute).path, gone_now))):
            self.cloud.reset()
            host1 = self.add_node('host1')
            host2 = self.add_node('host2')
            vm = self.nova.add_instance('cell1', host='host2', node='host2')
            self.allocate(vm, {host1: base.FLAVOR, host2: base.FLAVOR})
            self.nova.add_migration(
                'cell1', vm, migration_type='evacuation', status='done',
                source_compute='host1', source_node='host1',
                dest_compute='host2', dest_node='host2')
            gone = self.boot('host1', host1, vm_state='error')
            self.nova.force_delete_instance('cell1', gone)
            deleted = []

            def delete(vm=vm, deleted=deleted):
                if deleted:
                    return
                self.nova.execute(
                    'cell1', "UPDATE instances SET deleted = id, "
                    "vm_state = 'deleted' WHERE uuid = '%s'" % vm)
                self.placement.request('DELETE', '/allocations/%s' % vm)
                deleted.append(vm)
            method, path = where.split(' ')
            proxy = self.compute_proxy if front_end == OPENSTACK else \
                self.proxy
            proxy.inject(method, path + (vm if path.endswith('/') else ''),
                         before=delete)
            argv = self.argv(front_end, 'allocations', 'clean', '--journal',
                             os.path.join(self.tmp, 'journal-%d.jsonl' % n))
            if conf is not None:
                argv[argv.index('--config-file') + 1] = conf
            rc, out, err = self.assertRanCleanly(
                self.run_one(argv), msg='%s %s' % (front_end, where))
            label = '%s %s' % (front_end, where)
            self.assertEqual([vm], deleted, label)
            outcomes = sorted((r['consumer'], r['outcome'])
                              for r in json.loads(out))
            self.assertEqual(sorted([(gone, 'done'), (vm, outcome)]),
                             outcomes, label)
            self.assertEqual(exit_codes.REPAIRED, rc, label + err)
            self.assertEqual({}, self.placement.dump_state(), label)
