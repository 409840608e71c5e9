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
"""``clean`` and ``restore`` killed with SIGKILL at each step of a repair.

The console script runs as a process of its own and is killed while the
fault proxy holds one of its requests (see processes.py), so each kill
lands on the same step every time:

* after a batch's journal entries are on disk, before its POST is sent
  (the held request is then dropped);
* while a batch's POST is on its way (the held request is forwarded
  after the kill: placement applies it, the tool never hears);
* after placement applied a batch, before the tool heard (and so before
  any outcome was shown);
* in the middle of a restore, on both sides of one of its writes;
* after a restore's writes and mark, as it writes its end record (held
  there in its own process: processes.held_at_end_record);
* inside the journal's write(2) itself, at a page boundary.

After every kill an operator's recovery is checked: ``clean`` run again
ends where an uninterrupted run does, repairing exactly what the killed
run had not; restoring the rerun's journal and then the killed run's
puts placement back exactly as it was before the first run (consumer
generations aside), the killed run's ending 11 (its journal has no end
record: it cannot prove it is whole); the killed run's journal reads.

The runs use ``placement_concurrency = 2``: one stream of batches, so
the held batch is always the same one and every batch before it is
done.
"""

import json
import os

from nova_orphans.repair import journal as journal_mod
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional import processes
from nova_orphans.tests import runners

# The size of a memory page: where a write(2) cut short by SIGKILL stops.
PAGE = 4096
ALREADY = 'skipped: already as before'


class _CrashTestCase(base.FunctionalTestCase):

    # Orphans beyond a batch of 100 only where the batch size matters:
    # placement on sqlite takes seconds per hundred consumers.
    STRANGERS = 16

    def setUp(self):
        super().setUp()
        self.proxy = self.useFixture(
            processes.HoldingProxy(self.placement.endpoint))
        self.conf_file = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'proxied.conf'), self.proxy.endpoint,
            extra={'nova_orphans': {'state_path': self.state_path,
                                    'cell_timeout': '20',
                                    'placement_concurrency': '2'},
                   'placement': {'timeout': '30'}})
        self.cloud = processes.Cloud(self, strangers=self.STRANGERS)
        self.before = self.cloud.state()
        self.repaired = self.cloud.repaired(self.before)
        self.killed = self.journal('killed')
        self.rerun = self.journal('rerun')

    def journal(self, name):
        return os.path.join(self.tmp, name + '.jsonl')

    def argv(self, action, journal, *extra):
        return runners.manage_argv(
            'allocations', action, '--format', 'json', '--journal', journal,
            *extra, conf_file=self.conf_file)

    def run_to_end(self, action, journal, rc=4):
        _code, out, _err = self.assertRanCleanly(
            runners.run(self.argv(action, journal)), rc)
        return json.loads(out)

    def start(self, action, journal, *extra):
        return runners.start(self.argv(action, journal, *extra))

    def orphans(self):
        """Every consumer a complete clean changes."""
        return {c for c in self.before
                if self.before[c] != self.repaired.get(c)}

    def journaled(self, path):
        return {c for e in journal_mod.load(path).entries
                for c in e['consumers']}

    def kill_clean(self, hold, forward=True):
        """Start clean, kill it at ``hold``, let the held request go on
        (``forward``) and return the consumers it carried.
        """
        proc = self.start('clean', self.killed)
        held = set(hold.wait(proc))
        if hold.when == 'before':
            # The whole batch is on disk before its request is sent.
            self.assertLessEqual(held, self.journaled(self.killed))
        self.assertRanCleanly((proc.returncode, '', processes.kill(proc)))
        hold.release(forward)
        self.proxy.wait_idle()
        return held

    def assertRecovers(self, held, applied):
        """The operator's recovery after a killed clean."""
        state = self.cloud.state()
        for consumer in held:
            self.assertEqual(
                (self.repaired if applied else self.before).get(consumer),
                state.get(consumer), consumer)
        done_before = {c for c in self.orphans()
                       if state.get(c) == self.repaired.get(c)}
        # The killed run's journal reads, and holds everything it did.
        self.assertLessEqual(done_before, self.journaled(self.killed))

        # Run again: the same end as an uninterrupted run, each orphan
        # repaired by exactly one of the two runs.
        left = self.orphans() - done_before
        rows = self.run_to_end('clean', self.rerun, rc=4 if left else 0)
        self.assertEqual(['done'] * len(rows), [r['outcome'] for r in rows])
        self.assertEqual(sorted(left), sorted({r['consumer'] for r in rows}))
        self.assertEqual(self.repaired, self.cloud.state())

        # Undo both, newest first: exactly the state before the first.
        if left:
            rows = self.run_to_end('restore', self.rerun)
            self.assertEqual({'done'}, {r['outcome'] for r in rows})
        # The killed run's journal has no end record: never 0 or 4.
        rows = self.run_to_end('restore', self.killed, rc=11)
        outcomes = {r['consumer']: r['outcome'] for r in rows}
        self.assertEqual(
            {c: 'done' if c in done_before else ALREADY for c in outcomes},
            outcomes)
        self.assertLessEqual(done_before, set(outcomes))
        self.assertEqual(self.before, self.cloud.state())


class CrashTestCase(_CrashTestCase):

    # Clean ------------------------------------------------------------

    def test_uninterrupted(self):
        """The reference every recovery must reach."""
        journal = self.journal('run')
        rows = self.run_to_end('clean', journal)
        self.assertEqual(sorted(self.orphans()),
                         sorted({r['consumer'] for r in rows}))
        self.assertEqual({'done'}, {r['outcome'] for r in rows})
        self.assertEqual(self.repaired, self.cloud.state())
        self.run_to_end('restore', journal)
        self.assertEqual(self.before, self.cloud.state())

    def test_killed_after_journal_before_write(self):
        hold = self.proxy.hold('POST', '/allocations',
                               match=processes.batch(8))
        held = self.kill_clean(hold, forward=False)
        self.assertRecovers(held, applied=False)

    def test_killed_after_placement_applied_before_outcome(self):
        hold = self.proxy.hold('POST', '/allocations', when='after',
                               match=processes.batch(8))
        held = self.kill_clean(hold)
        self.assertEqual(204, hold.result)
        # The batch held every orphan but the move (a request of its
        # own): the rerun has only that left, if the kill came first.
        self.assertEqual(self.orphans() - {m for _vm, m in
                                           self.cloud.returned}, held)
        self.assertRecovers(held, applied=True)

    def test_killed_inside_journal_write(self):
        """SIGKILL inside the write(2) of a batch's entries leaves a
        cut last line, at a page boundary: byte for byte what the
        kernel leaves when the copy stops there. The operator then runs
        clean again on the same journal and restores it.
        """
        hold = self.proxy.hold('POST', '/allocations',
                               match=processes.batch(8))
        # Only the batched actions: a move is written on its own, maybe
        # after the batch's entries, and a kill inside the batch's
        # write(2) leaves nothing after it.
        proc = self.start('clean', self.killed, '--reason',
                          'unknown_consumer', '--reason', 'deleted_instance',
                          '--reason', 'evacuated_source')
        held = hold.wait(proc)
        processes.kill(proc)
        hold.release(forward=False)
        self.proxy.wait_idle()
        with open(self.killed, 'rb') as f:
            data = f.read()
        # The batch's entries were written at once: cut at the first
        # page boundary inside them.
        start = min(data.index(c.encode()) for c in held)
        start = data.rindex(b'\n', 0, start) + 1
        cut = (start // PAGE + 1) * PAGE
        self.assertLess(cut, len(data) - 1, 'the batch fits in a page')
        with open(self.killed, 'r+b') as f:
            f.truncate(cut)
        cut_line = data[:cut].count(b'\n') + 1

        # The cut line is read past and reported; the rerun on the same
        # path starts on a fresh line.
        self.run_to_end('clean', self.killed)
        self.assertEqual(self.repaired, self.cloud.state())
        code, out, err = runners.run(self.argv('restore', self.killed))
        self.assertEqual(11, code, err)
        self.assertIn('lines 1 to %d) has no end record' % cut_line, err)
        self.assertIn('cut short at line %d ' % cut_line, err)
        self.assertEqual(self.before, self.cloud.state())

    # Killed mid-retry -------------------------------------------------

    def batch_sent(self):
        """The consumers of the batch POSTs the proxy saw."""
        return {c for r in self.proxy.requests('POST', '/allocations')
                if len(r.body) >= 8 for c in r.body}

    def test_killed_reading_back_a_lost_answer(self):
        """Placement applied the batch and its answer was lost; the tool
        is killed while it reads the batch back to learn whether it was.
        """
        self.proxy.inject('POST', '/allocations', drop='after',
                          match=processes.batch(8))
        # The read after the batch was sent: the read back.
        hold = self.proxy.hold('GET', '/allocations/' +
                               self.cloud.strangers[0],
                               match=lambda _body: bool(self.batch_sent()))
        proc = self.start('clean', self.killed)
        hold.wait(proc)
        processes.kill(proc)
        hold.release(forward=False)
        self.proxy.wait_idle()
        held = self.batch_sent()
        self.assertIn(self.cloud.strangers[0], held)
        self.assertRecovers(held, applied=True)

    def test_killed_before_sending_again(self):
        """The batch never reached placement (the connection dropped);
        read back, it was not applied; the tool is killed as it sends it
        again.
        """
        self.proxy.inject('POST', '/allocations', drop=True,
                          match=processes.batch(8))
        hold = self.proxy.hold('POST', '/allocations',
                               match=processes.batch(8))
        proc = self.start('clean', self.killed)
        held = set(hold.wait(proc))
        processes.kill(proc)
        hold.release(forward=False)
        self.proxy.wait_idle()
        self.assertEqual(held, self.batch_sent())
        self.assertRecovers(held, applied=False)

    # Restore ----------------------------------------------------------

    def test_restore_killed_on_both_sides_of_a_write(self):
        """Killed before a batched write was sent, then again after one
        was applied: a third restore finishes, and nothing is done twice.
        """
        self.run_to_end('clean', self.killed)
        for when in ('before', 'after'):
            hold = self.proxy.hold('POST', '/allocations', when=when)
            proc = self.start('restore', self.killed)
            hold.wait(proc)
            processes.kill(proc)
            hold.release(forward=False)
            self.proxy.wait_idle()
        # Each write is whole entries': nothing half restored.
        state = self.cloud.state()
        undone = set()
        for consumer in self.orphans():
            self.assertIn(state.get(consumer),
                          (self.before[consumer],
                           self.repaired.get(consumer)), consumer)
            if state.get(consumer) == self.before[consumer]:
                undone.add(consumer)
        # The batch placement applied before the second kill is undone.
        self.assertTrue(undone)
        code, out, err = runners.run(self.argv('restore', self.killed))
        rows = json.loads(out)
        outcomes = {r['outcome'] for r in rows}
        self.assertLessEqual(outcomes, {ALREADY, 'done'})
        # The killed runs may have sent every write but the one held.
        self.assertEqual(4 if 'done' in outcomes else 0, code, err)
        self.assertEqual(undone, {r['consumer'] for r in rows
                                  if r['outcome'] == ALREADY})
        self.assertEqual(self.before, self.cloud.state())

    def test_restore_killed_at_its_end_record(self):
        """Killed after its writes and its mark, as it writes its end
        record: placement is as before the clean. Every later restore
        tells that run for what it is, a restore and what it had done,
        and ends as the journal's runs say (0: nothing left to restore;
        the clean's run is whole), never 11.
        """
        cleaned = self.run_to_end('clean', self.killed)
        proc = processes.held_at_end_record(
            self.argv('restore', self.killed)[1:])
        err = processes.kill(proc)
        self.assertNotIn('Traceback', err)
        self.assertEqual(self.before, self.cloud.state())
        contents = journal_mod.load(self.killed)
        clean, = contents.runs
        killed, = contents.unended
        said = (
            'WARNING: journal %s: %s has no end record: that restore was '
            'killed (SIGKILL, the OOM killer, a power cut) after it had '
            'restored %d change(s), 0 refused or failed, as its mark says. '
            'A restore writes no entry: the runs it restored are judged on '
            'their own.' % (self.killed, killed.describe(), len(cleaned)))
        self.assertIn('(restore on ', said)
        for extra in ((), ('--dry-run',), ()):
            code, out, err = runners.run(self.argv('restore', self.killed,
                                                   *extra))
            self.assertEqual((0, [said]), (code, err.splitlines()), err)
            self.assertEqual([ALREADY] * len(cleaned),
                             [r['outcome'] for r in json.loads(out)])
        self.assertEqual(self.before, self.cloud.state())
        # Its header and mark, the mark its rows' count; the restores
        # after it restored nothing, and so wrote nothing.
        self.assertEqual(
            ('completed', 'restore', {'done': len(cleaned), 'failed': 0}),
            (clean.ended, killed.header['command'], killed.restored))
        self.assertEqual(
            [(killed.first_line, killed.first_line + 1)],
            [(r.first_line, r.last_line)
             for r in journal_mod.load(self.killed).unended])


class BigBatchCrashTestCase(_CrashTestCase):
    """A hundred consumers and more: batches of 100 are POSTed."""

    STRANGERS = 104

    def test_killed_while_batch_on_its_way(self):
        hold = self.proxy.hold('POST', '/allocations',
                               match=processes.batch(90))
        held = self.kill_clean(hold, forward=True)
        # The first hundred consumers, but the move among them (written
        # on its own) if there is one.
        self.assertIn(len(held), (99, 100))
        self.assertRecovers(held, applied=True)
