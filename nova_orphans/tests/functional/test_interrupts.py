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
"""Ctrl-C and SIGTERM sent to the console script in the middle of a run.

The moment is made exact by the fault proxy: it holds one request of the
tool's until the signal has been received, then lets it through. The
request in flight must finish, nothing after it may be sent, and the
command prints what it did and exits 130 (SIGINT) or 143 (SIGTERM).
"""

import json
import os
import signal
import threading
import time

from nova_orphans.repair import journal as journal_mod
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import faults
from nova_orphans.tests.functional import front_ends
from nova_orphans.tests.functional import processes
from nova_orphans.tests.functional import test_clean
from nova_orphans.tests import runners

STOPPING = '%s: stopping; the requests in flight finish, then what was ' \
           'done is printed.'


def undo(cmd):
    """The Result of the command to undo a run, as the run printed it."""
    program, *argv = cmd.split()
    assert program == runners.MANAGE, cmd
    return runners.manage(*argv)


class Console:
    """The console script running in the background, its stderr read
    line by line as it comes.
    """

    def __init__(self, test, *argv):
        self.proc = runners.start(runners.manage_argv(*argv))
        test.addCleanup(self._kill)
        self.lines = []
        self._seen = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stderr:
            with self._seen:
                self.lines.append(line.rstrip('\n'))
                self._seen.notify_all()

    def wait_for_line(self, line, timeout=30):
        with self._seen:
            if not self._seen.wait_for(lambda: line in self.lines, timeout):
                raise AssertionError('%r never printed; stderr: %s' %
                                     (line, self.lines))

    def finish(self, timeout=60):
        """(rc, stdout, stderr lines)."""
        out = self.proc.stdout.read()
        rc = self.proc.wait(timeout)
        self._reader.join(timeout)
        return rc, out, self.lines

    def _kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


def _wait_for_handler(proc, signum, timeout=30):
    """Until ``proc`` catches ``signum`` (Linux: /proc/PID/status)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open('/proc/%d/status' % proc.pid) as f:
                status = dict(line.split(':', 1) for line in f
                              if ':' in line)
        except FileNotFoundError:
            break
        if int(status['SigCgt'], 16) & (1 << (signum - 1)):
            return
        time.sleep(0.002)
    raise AssertionError('%s never took %s' % (proc.args, signum))


class Hold:
    """A proxy ``before`` hook: holds the request until released (or
    for processes.HOLD_TIMEOUT seconds, so that a test that forgot to
    release it never hangs); ``passed`` once it went on.
    """

    def __init__(self):
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.passed = threading.Event()

    def __call__(self):
        self.arrived.set()
        self.release.wait(processes.HOLD_TIMEOUT)
        self.passed.set()

    def wait(self, test):
        test.assertTrue(self.arrived.wait(30), 'the request never came')


class InterruptTestCase(test_clean.RepairTestCase):

    COUNT = 5

    def setUp(self):
        super().setUp()
        # One request at a time: the order of the writes is the order of
        # the consumers, and one is in flight when the signal comes.
        self.conf_file = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'serial.conf'), self.proxy.endpoint,
            extra={'nova_orphans': {'state_path': self.state_path,
                                    'cell_timeout': '20',
                                    'placement_concurrency': '1'},
                   'placement': {'timeout': '30'}})
        self.gones = [self.gone('host1', self.host1)
                      for _n in range(self.COUNT)]
        self.initial = self.placement.dump_state()

    def console(self, *argv):
        return Console(self, '--config-file', self.conf_file, *argv)

    def interrupt(self, console, hold, signum):
        """Signal the tool while ``hold`` holds its request; then let the
        request through.
        """
        hold.wait(self)
        console.proc.send_signal(signum)
        console.wait_for_line(STOPPING % signal.Signals(signum).name)
        hold.release.set()

    def put_consumers(self):
        return [r.path.rsplit('/', 1)[1]
                for r in self.proxy.requests('PUT', '/allocations/.*')]

    def interrupted_clean(self, signum, *argv):
        """clean, stopped while its second write is in flight."""
        hold = Hold()
        # Under BATCH_MIN consumers: written one by one, in order.
        self.proxy.inject('PUT', '/allocations/.*', skip=1, before=hold)
        console = self.console('allocations', 'clean', '--journal',
                               self.journal, *argv)
        self.interrupt(console, hold, signum)
        return console.finish()

    def test_sigint_stops_clean_after_the_write_in_flight(self):
        rc, out, err = self.interrupted_clean(signal.SIGINT, '--format',
                                              'json')
        self.assertEqual(130, rc, err)
        written = self.put_consumers()
        # The first write, and the one in flight; nothing after.
        self.assertEqual(2, len(written), written)
        rows = json.loads(out)
        self.assertEqual(
            sorted((c, 'done' if c in written else 'skipped: interrupted')
                   for c in self.gones),
            sorted((r['consumer'], r['outcome']) for r in rows))
        self.assertEqual({c: v for c, v in self.initial.items()
                          if c not in written}, self.placement.dump_state())
        # Only the sent writes were journaled; the run's end record
        # says the signal ended it.
        self.assertEqual(sorted(written),
                         sorted(c for e in self.entries()
                                for c in e['consumers']))
        self.assertEqual(['SIGINT'], [r.ended for r in journal_mod.load(
            self.journal).runs])
        cmd = ('nova-orphans-manage --config-file %s allocations restore '
               '--journal %s' % (self.conf_file, self.journal))
        self.assertEqual([
            'SIGINT: stopping; the requests in flight finish, then what '
            'was done is printed.',
            'Journal: %s' % self.journal,
            'To undo: %s' % cmd,
            'Interrupted by SIGINT: 2 repair(s) done; 3 not attempted '
            '(skipped: interrupted).'],
            [line for line in err if not line[:4].isdigit()])

        # The printed command puts placement back exactly.
        done = undo(cmd)
        self.assertEqual(4, done.returncode, done.stderr)
        self.assertEqual(self.initial, self.placement.dump_state())

    def test_sigterm_stops_clean_and_prints_the_table(self):
        rc, out, err = self.interrupted_clean(signal.SIGTERM,
                                              '--max-width', '0')
        self.assertEqual(143, rc, err)
        written = self.put_consumers()
        self.assertEqual(2, len(written), written)
        lines = out.splitlines()
        for consumer in self.gones:
            row, = [line for line in lines if consumer in line]
            self.assertEqual(
                'done' if consumer in written else 'skipped: interrupted',
                row.split('|')[-2].strip())
        self.assertEqual('Outcomes: 3 skipped: interrupted, 2 done.',
                         lines[-1])
        self.assertIn('Interrupted by SIGTERM: 2 repair(s) done; 3 not '
                      'attempted (skipped: interrupted).', err)
        self.assertEqual(4, self.restore()[0])
        self.assertEqual(self.initial, self.placement.dump_state())

    def test_sigterm_stops_restore_then_restore_finishes(self):
        self.assertEqual(4, self.clean()[0])
        self.assertEqual({}, self.placement.dump_state())
        hold = Hold()
        self.proxy.inject('PUT', '/allocations/.*', skip=1, before=hold)
        console = self.console('allocations', 'restore', '--journal',
                               self.journal, '--format', 'json')
        self.interrupt(console, hold, signal.SIGTERM)
        rc, out, err = console.finish()
        self.assertEqual(143, rc, err)
        restored = self.put_consumers()[-2:]
        self.assertEqual(
            sorted((c, 'done' if c in restored else 'skipped: interrupted')
                   for c in self.gones),
            sorted((r['consumer'], r['outcome']) for r in json.loads(out)))
        self.assertEqual({c: v for c, v in self.initial.items()
                          if c in restored}, self.placement.dump_state())
        rest = ('To restore the rest: nova-orphans-manage --config-file %s '
                'allocations restore --journal %s' % (self.conf_file,
                                                      self.journal))
        self.assertEqual([
            'SIGTERM: stopping; the requests in flight finish, then what '
            'was done is printed.',
            'Interrupted by SIGTERM: 2 restore(s) done; 3 not attempted '
            '(skipped: interrupted).',
            rest], [line for line in err if not line[:4].isdigit()])
        self.assertEqual(4, self.restore()[0])
        self.assertEqual(self.initial, self.placement.dump_state())

    def test_signal_as_the_last_write_is_in_flight(self):
        """Every repair done, but a signal came: its code (never 4), and
        the journal with the command that undoes it.
        """
        for signum in (signal.SIGINT, signal.SIGTERM):
            hold = Hold()
            self.proxy.inject('PUT', '/allocations/.*',
                              skip=len(self.gones) - 1, before=hold)
            journal = self.journal + signal.Signals(signum).name
            console = self.console('allocations', 'clean', '--journal',
                                   journal, '--format', 'json')
            self.interrupt(console, hold, signum)
            rc, out, err = console.finish()
            name = signal.Signals(signum).name
            self.assertEqual(128 + signum, rc, err)
            self.assertEqual(sorted((c, 'done') for c in self.gones),
                             sorted((r['consumer'], r['outcome'])
                                    for r in json.loads(out)))
            self.assertEqual({}, self.placement.dump_state())
            cmd = ('nova-orphans-manage --config-file %s allocations '
                   'restore --journal %s' % (self.conf_file, journal))
            self.assertEqual([
                STOPPING % name,
                'Journal: %s' % journal,
                'To undo: %s' % cmd,
                'Interrupted by %s: 5 repair(s) done; 0 not attempted '
                '(skipped: interrupted).' % name],
                [line for line in err if not line[:4].isdigit()])
            done = undo(cmd)
            self.assertEqual(4, done.returncode, done.stderr)
            self.assertEqual(self.initial, self.placement.dump_state())

    def test_signal_before_the_imports_end(self):
        """From the moment the console script takes the signals (before
        it imports the command), at several delays while it imports and
        reads: one line, nothing changed, 130 or 143, no traceback.

        Earlier, while the interpreter itself starts (site, .pth files),
        no code of the tool has run yet and Python's defaults apply.
        """
        for delay in (0, 0.05, 0.1, 0.2, 0.3):
            for signum in (signal.SIGINT, signal.SIGTERM):
                console = self.console('allocations', 'clean')
                _wait_for_handler(console.proc, signal.SIGTERM)
                time.sleep(delay)
                console.proc.send_signal(signum)
                rc, out, err = console.finish()
                self.assertEqual(
                    (128 + signum, '', ['Interrupted by %s; nothing was '
                                        'changed.' % signum.name]),
                    (rc, out, [line for line in err if line]),
                    'after %ss' % delay)
        self.assertEqual(self.initial, self.placement.dump_state())

    def test_sigint_during_list_is_one_line(self):
        hold = Hold()
        self.proxy.inject('GET', '/resource_providers/.*/allocations',
                          before=hold)
        # A placement timeout longer than the hold: a run that waited for
        # the request would end only after the hold.
        patient = self.nova_conf(
            self.proxy.endpoint, name='patient.conf',
            nova_orphans={'placement_concurrency': '1'},
            placement={'timeout': str(2 * processes.HOLD_TIMEOUT)})
        console = Console(self, '--config-file', patient, 'allocations',
                          'list')
        hold.wait(self)
        console.proc.send_signal(signal.SIGINT)
        rc, out, err = console.finish(timeout=processes.HOLD_TIMEOUT)
        # It did not wait for the request it was stopped in: that is
        # still held.
        self.assertFalse(hold.passed.is_set())
        hold.release.set()
        self.assertEqual((130, '', ['Interrupted by SIGINT; nothing was '
                                    'changed.']), (rc, out, err))


class OutputTestCase(test_clean.RepairTestCase):
    """What a person reads: the summary, and one line per failure."""

    def table(self, *argv, conf_file=None):
        return self.assertRanCleanly(self.manage(
            'allocations', *argv, '--max-width', '0', conf_file=conf_file))

    def test_nothing_found_is_one_line(self):
        self.boot('host1', self.host1)
        self.assertEqual((0, 'No orphaned allocations found.\n'),
                         self.table('list')[:2])
        self.assertEqual((0, 'No orphaned allocations found.\n'),
                         self.table('clean')[:2])

    def test_list_ends_with_a_summary(self):
        self.gone('host1', self.host1)
        self.stranger(self.host1)
        rc, out, err = self.table('list', '--host', 'host1')
        self.assertEqual(3, rc, err)
        self.assertEqual([
            '2 orphaned allocation(s) of 2 consumer(s) on 1 resource '
            'provider(s) hold VCPU=2, MEMORY_MB=1024, DISK_GB=2.',
            'Projects most affected: %s (2 consumer(s): VCPU=2, '
            'MEMORY_MB=1024, DISK_GB=2).' % base.PROJECT,
            'Next: nova-orphans-manage --config-file %s allocations clean '
            '--dry-run --host host1' % self.conf_file],
            out.splitlines()[-3:])
        self.assertEqual(
            '| Consumer                             | Type     | Provider '
            '| Host  | Reason           | Action          | Resources       '
            '                 |', out.splitlines()[1])

    def test_placement_down_during_restore_is_one_line(self):
        gones = [self.gone('host1', self.host1) for _n in range(3)]
        self.assertEqual(4, self.clean()[0])
        self.proxy.inject('PUT', '/allocations/.*', count=None, status=500)
        rc, out, err = self.table('restore', '--journal', self.journal)
        self.assertEqual(1, rc, err)
        rows = [line for line in out.splitlines()
                if any(c in line for c in gones)]
        self.assertEqual(['failed: error 1'] * 3,
                         [r.split('|')[-2].strip() for r in rows])
        self.assertEqual('Outcomes: 3 failed.', out.splitlines()[-1])
        errors = [line for line in err.splitlines()
                  if line.startswith('Error ')]
        self.assertEqual(1, len(errors), err)
        self.assertTrue(errors[0].startswith(
            'Error 1 (3 row(s)): Placement request PUT /allocations/'),
            errors[0])


class OpenstackInterruptTestCase(front_ends.FrontEndsTestCase):
    """``openstack allocation orphan clean`` stopped by a signal, over
    nova's real compute API.
    """

    def test_signals(self):
        host1 = self.add_node('host1')
        gones = []
        for _n in range(2):
            vm = self.boot('host1', host1, vm_state='error')
            self.nova.force_delete_instance('cell1', vm)
            gones.append(vm)
        initial = self.placement.dump_state()
        proxy = self.useFixture(faults.FaultProxy(self.placement.endpoint))
        self.write_clouds(proxied={'placement': proxy.endpoint})
        journal = os.path.join(self.tmp, 'journal.jsonl')

        # While it reads: one line, nothing changed, at once.
        hold = Hold()
        proxy.inject('GET', '/resource_providers/.*/allocations',
                     before=hold)
        proc = self.start(self.openstack_argv(
            'allocation', 'orphan', 'clean', cloud='proxied'))
        hold.wait(self)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=processes.HOLD_TIMEOUT)
        # It did not wait for the request it was stopped in: that is
        # still held.
        self.assertFalse(hold.passed.is_set())
        hold.release.set()
        self.assertEqual((130, '', 'Interrupted by SIGINT; nothing was '
                                   'changed.\n'), (proc.returncode, out, err))
        self.assertEqual(initial, self.placement.dump_state())

        # The last write in flight: every repair done, still 143.
        hold = Hold()
        proxy.inject('PUT', '/allocations/.*', skip=len(gones) - 1,
                     before=hold)
        proc = self.start(self.openstack_argv(
            'allocation', 'orphan', 'clean', '-f', 'json', '--journal',
            journal, cloud='proxied'))
        hold.wait(self)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        hold.release.set()
        out, err = proc.communicate(timeout=60)
        self.assertEqual(143, proc.returncode, err)
        self.assertEqual(sorted((c, 'done') for c in gones),
                         sorted((r['consumer'], r['outcome'])
                                for r in json.loads(out)))
        self.assertEqual([
            STOPPING % 'SIGTERM',
            'Journal: %s' % journal,
            'To undo: openstack --os-cloud proxied allocation orphan restore '
            '--journal %s' % journal,
            'Interrupted by SIGTERM: 2 repair(s) done; 0 not attempted '
            '(skipped: interrupted).'], err.splitlines())
        self.assertEqual([c for c in initial if c not in gones],
                         list(self.placement.dump_state()))
