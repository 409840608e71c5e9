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
"""Two operators, or a cron job and an operator, at the same time.

Each run is the console script in a process of its own, with its own
journal, as on two hosts: nothing but placement's consumer generations
keeps them apart, and nothing else has to. Every orphan is repaired by
exactly one run, each journal undoes exactly its own run's changes, and
the run that lost a race says so once, as a skip, not a failure.
"""

import json
import os
import re

from nova_orphans.engine import reasons
from nova_orphans.repair import actions
from nova_orphans.repair import journal as journal_mod
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional import processes
from nova_orphans.tests import runners

DONE = 'done'
OTHER_WRITER = 'skipped: changed by another writer'
GONE = 'skipped: the allocation is gone'
# Read again after a refused batch, and refused again: the other run
# wrote it in between.
TWICE = 'skipped: changed concurrently twice; run again'
# Every "no longer <action>: now <reason>" a row read again may end
# with, by its text: the outcome, which knows whether it is resolved.
NO_LONGER = {str(o): o for o in (
    actions.no_longer(action, now) for action in reasons.ACTIONS
    for now in reasons.REASONS + reasons.ACTIONS)}


class ConcurrentTestCase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.proxy = self.useFixture(
            processes.HoldingProxy(self.placement.endpoint))
        self.conf_file = self.proxied_conf()

    def proxied_conf(self, **options):
        return self.nova.write_nova_conf(
            os.path.join(self.tmp, 'proxied.conf'), self.proxy.endpoint,
            extra={'nova_orphans': dict(options, state_path=self.state_path,
                                        cell_timeout='20'),
                   'placement': {'timeout': '30'}})

    def journal(self, name):
        return os.path.join(self.tmp, name + '.jsonl')

    def argv(self, action, journal, *extra):
        return runners.manage_argv(
            'allocations', action, '--format', 'json', '--journal', journal,
            *extra, conf_file=self.conf_file)

    def finish(self, proc):
        """(rc, JSON rows, stderr lines) of a started run."""
        out, err = proc.communicate(timeout=120)
        self.assertRanCleanly((proc.returncode, out, err))
        return proc.returncode, json.loads(out), err.splitlines()

    def restore(self, journal, rc):
        _code, out, _err = self.assertRanCleanly(
            runners.run(self.argv('restore', journal)), rc)
        return json.loads(out)

    def outcomes(self, rows):
        return {(r['consumer'], r['resource_provider']): r['outcome']
                for r in rows}

    def assertSaidOnce(self, err, conflicts, exactly=True):
        """The race is summed up in one line, never one per consumer.

        Without ``exactly``, ``conflicts`` is the least the line counts:
        a consumer read again after a refused batch may still be this
        run's to repair.
        """
        self.assertEqual([], [line for line in err
                              if 'changed concurrently' in line])
        said = [line for line in err if 'changed by another writer' in line]
        if not exactly and not conflicts:
            self.assertLessEqual(len(said), 1, err)
            return
        self.assertEqual(1 if conflicts else 0, len(said), err)
        if conflicts:
            count = int(re.search(r'(\d+) consumer\(s\) were changed by '
                                  r'another writer', said[0]).group(1))
            if exactly:
                self.assertEqual(conflicts, count)
            else:
                self.assertGreaterEqual(count, conflicts)

    def test_two_cleans_at_once(self):
        """Free-running: whichever wins each consumer, every orphan is
        repaired once, and each journal undoes its own run.
        """
        cloud = processes.Cloud(self, strangers=20)
        before = cloud.state()
        repaired = cloud.repaired(before)
        first, second = self.journal('first'), self.journal('second')
        procs = [runners.start(self.argv('clean', path))
                 for path in (first, second)]
        (rc1, rows1, err1), (rc2, rows2, err2) = map(self.finish, procs)
        self.assertEqual(repaired, cloud.state())
        out1, out2 = self.outcomes(rows1), self.outcomes(rows2)
        # A run whose audit came after the other's write of a consumer
        # (a machine busy enough to start it late) no longer finds that
        # orphan: the other run repaired it.
        both = set(out1) & set(out2)
        self.assertEqual(cloud.orphans, len(set(out1) | set(out2)))
        for key in (set(out1) | set(out2)) - both:
            self.assertEqual(DONE, out1.get(key, out2.get(key)), key)
        for key in both:
            # Exactly one run did it; the other says why it did not.
            self.assertEqual([DONE], [o for o in (out1[key], out2[key])
                                      if o == DONE], key)
            loser, = {out1[key], out2[key]} - {DONE}
            # A move's two consumers are read one after the other: the
            # winner's move between the two reads makes the loser judge
            # it again (no longer return_to_instance) and write nothing.
            self.assertIn(loser, {OTHER_WRITER, GONE, TWICE} | set(
                NO_LONGER), key)
        for rc, out in ((rc1, out1), (rc2, out2)):
            # 3 while a loser's row may still be an orphan ("changed
            # concurrently twice"); else 4 if it repaired any, 0 if not.
            left = not all(NO_LONGER[o].resolved if o in NO_LONGER
                           else o in (DONE, OTHER_WRITER, GONE)
                           for o in out.values())
            self.assertEqual(3 if left else 4 if DONE in out.values() else 0,
                             rc, out)
        for out, err in ((out1, err1), (out2, err2)):
            self.assertSaidOnce(err, list(out.values()).count(OTHER_WRITER),
                                exactly=False)

        # The first run's journal alone undoes the first run only.
        mine = {c for (c, _rp), o in out1.items() if o == DONE}
        theirs = {c for (c, _rp), o in out2.items() if o == DONE}
        self.restore_own(first, mine)
        self.assertEqual(cloud.undone(before, mine), cloud.state())
        self.restore_own(second, theirs)
        self.assertEqual(before, cloud.state())

    def restore_own(self, path, done):
        """Restore one run's journal: it undoes what that run did.

        A run that lost every race wrote no journal (it never got as
        far as a write), or journaled only batches placement then
        refused or found done: either way there is nothing to undo.
        """
        if os.path.exists(path):
            self.restore(path, 4 if done else 0)
        else:
            self.assertEqual(set(), done, path)

    def test_loser_of_a_race_skips_and_says_so_once(self):
        """Both runs read and journaled the same batch; the second
        one's write reaches placement first. The first's is refused as a
        whole (409): each of its consumers is read again, found done by
        the other writer and skipped, its journal marks the batch as
        never applied, and the race is logged once.
        """
        cloud = processes.Cloud(self, strangers=20, returned=0)
        # One stream of batches: each run writes all in one request.
        self.conf_file = self.proxied_conf(placement_concurrency=2)
        before = cloud.state()
        repaired = cloud.repaired(before)
        loser, winner = self.journal('loser'), self.journal('winner')
        first = self.proxy.hold('POST', '/allocations',
                                match=processes.batch(8))
        second = self.proxy.hold('POST', '/allocations',
                                 match=processes.batch(8))
        slow = runners.start(self.argv('clean', loser))
        self.assertEqual(cloud.orphans, len(first.wait(slow)))
        fast = runners.start(self.argv('clean', winner))
        self.assertEqual(cloud.orphans, len(second.wait(fast)))
        second.release()
        rc, won, err = self.finish(fast)
        self.assertEqual((4, {DONE}), (rc, set(self.outcomes(won).values())))
        self.assertSaidOnce(err, 0)
        first.release()
        rc, lost, err = self.finish(slow)
        # The winner repaired them all: nothing is left, nothing done.
        self.assertEqual(0, rc)
        self.assertEqual({k: OTHER_WRITER for k in self.outcomes(won)},
                         self.outcomes(lost))
        self.assertSaidOnce(err, cloud.orphans)
        self.assertEqual(repaired, cloud.state())
        self.assertEqual([409, 204], [r.result for r in self.proxy.requests(
            'POST', '/allocations')])
        self.assertEqual(
            {(False, 'consumer generation conflict')},
            {(e.get('applied'), e.get('reason'))
             for e in journal_mod.load(loser).entries})

        rows = self.restore(loser, 0)
        self.assertEqual(
            {'skipped: never applied (consumer generation conflict)'},
            {r['outcome'] for r in rows})
        self.assertEqual(repaired, cloud.state())
        self.restore(winner, 4)
        self.assertEqual(before, cloud.state())

    def test_restore_during_clean_is_refused_per_consumer(self):
        """A restore and a clean write the same consumer: the restore,
        which read it first, is refused for that consumer (409) and
        restores the others; nothing is half restored, and restoring
        the clean's journal and then the first one gets back to the
        start.
        """
        host1 = self.add_node('host1')
        host2 = self.add_node('host2')
        host3 = self.add_node('host3')
        vm = self.nova.add_instance('cell1', host='host3', node='host3')
        self.allocate(vm, host1, host2, host3)
        self.nova.add_migration('cell1', vm, migration_type='evacuation',
                                status='done', source_compute='host1',
                                source_node='host1', dest_compute='host3',
                                dest_node='host3')
        gone = self.nova.add_instance('cell1', host='host1', node='host1',
                                      vm_state='error')
        self.allocate(gone, host1)
        self.nova.force_delete_instance('cell1', gone)
        before = self.placement.dump_state(generations=False)
        old, new = self.journal('old'), self.journal('new')
        rc, out, err = runners.run(self.argv('clean', old, '--host',
                                             'host1'))
        self.assertEqual(4, rc, err)

        hold = self.proxy.hold('PUT', '/allocations/' + vm)
        restoring = runners.start(self.argv('restore', old))
        hold.wait(restoring)
        rc, out, err = runners.run(self.argv('clean', new, '--host',
                                             'host2'))
        self.assertEqual(4, rc, err)
        hold.release()
        rc, rows, err = self.finish(restoring)
        self.assertEqual(1, rc)
        self.assertEqual(
            {(vm, host1): 'failed: changed concurrently; run restore again',
             (gone, host1): DONE}, self.outcomes(rows))
        state = self.placement.dump_state(generations=False)
        # The clean's change stands whole; the other consumer is back.
        self.assertEqual({host3: base.FLAVOR}, state[vm]['allocations'])
        self.assertEqual(before[gone], state[gone])

        self.restore(new, 4)
        rows = self.restore(old, 4)
        self.assertEqual({(vm, host1): DONE,
                          (gone, host1): 'skipped: already as before'},
                         self.outcomes(rows))
        self.assertEqual(before, self.placement.dump_state(
            generations=False))
