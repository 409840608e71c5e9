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
"""``allocations restore``: the journal undoes a clean, exactly.

"Exactly" is checked on placement's whole state with ``dump_state``.
The one thing a restore cannot give back is a consumer generation:
placement bumps it on every accepted write and no client can set it.
So a consumer that lived through the clean and the restore (a
``remove_provider``) comes back two generations on, while one that was
emptied (placement deletes it) and re-created starts again at 1, as
it did when nova first wrote it.
"""

import copy
import json
import os
import re

import fixtures

from nova_orphans.repair import journal as journal_mod
from nova_orphans.repair import journal_verify
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional import front_ends
from nova_orphans.tests.functional import test_clean
from nova_orphans.tests import runners

FLAVOR = test_clean.FLAVOR
BIGGER = test_clean.BIGGER
BW = test_clean.BW
held = test_clean.held
PAGE = 4096


def evacuated_from_host1_holding_host2(test):
    """(server, host3's provider): a server evacuated from host1 to
    host3 that still holds host1 and host2: ``clean --host host1``, then
    ``--host host2``, change it twice.
    """
    host3 = test.add_node('host3')
    vm = test.nova.add_instance('cell1', host='host3', node='host3')
    test.allocate(vm, test.host1, test.host2, host3)
    test.nova.add_migration('cell1', vm, migration_type='evacuation',
                            status='done', source_compute='host1',
                            source_node='host1', dest_compute='host3',
                            dest_node='host3')
    return vm, host3


class RestoreTestCase(test_clean.RepairTestCase):

    def outcomes(self, rows):
        """(consumer, provider, outcome) of each row, in output order."""
        return [(r['consumer'], r['resource_provider'], r['outcome'])
                for r in rows]

    def test_clean_then_restore_is_identical(self):
        """Every action, typed and untyped consumers, in one run."""
        host3 = self.add_node('host3')
        self.gone('host1', self.host1)
        typed_gone = self.nova.add_instance('cell1', host='host2',
                                            node='host2')
        self.allocate(typed_gone, self.host2, consumer_type='INSTANCE')
        self.nova.force_delete_instance('cell1', typed_gone)
        self.stranger(self.host2)
        evac, bw = self.evacuated()
        stale = self.nova.add_instance('cell1', host='host3', node='host3')
        self.allocate(stale, self.host2, host3, consumer_type='INSTANCE')
        resized = self.nova.add_instance('cell1', host='host2', node='host2')
        confirmed = self.nova.add_migration(
            'cell1', resized, migration_type='resize', status='confirmed',
            source_compute='host1', source_node='host1',
            dest_compute='host2', dest_node='host2')
        self.allocate(confirmed, self.host1, consumer_type='MIGRATION')
        self.allocate(resized, self.host2)
        back, failed_mig = self.failed_migration(consumer_type='MIGRATION')
        shelved = self.nova.add_instance('cell1',
                                         vm_state='shelved_offloaded')
        self.allocate(shelved, host3)
        needy = self.nova.add_instance('cell1', host='host3', node='host3')
        live = self.boot('host3', host3)
        before = self.placement.dump_state()

        rc, rows = self.clean('--heal')
        self.assertEqual(4, rc)
        self.assertEqual(
            sorted(['delete_consumer'] * 5 + ['remove_provider'] * 3 +
                   ['return_to_instance', 'heal']),
            sorted(r['action'] for r in rows))
        self.assertEqual({'done'}, {r['outcome'] for r in rows})
        self.assertEqual({
            evac: held({self.host2: FLAVOR}, generation=2),
            stale: held({host3: FLAVOR}, generation=2,
                        consumer_type='INSTANCE'),
            resized: before[resized],
            back: held({self.host1: FLAVOR}),
            needy: held({host3: {'VCPU': 1, 'MEMORY_MB': 512}}),
            live: before[live],
        }, self.placement.dump_state())

        rc, restored = self.restore()
        self.assertEqual(4, rc)
        self.assertEqual({'done'}, {r['outcome'] for r in restored})
        self.assertEqual(sorted(self.outcomes(rows)),
                         sorted(self.outcomes(restored)))
        expected = copy.deepcopy(before)
        for consumer in (evac, stale):
            expected[consumer]['consumer_generation'] += 2
        self.assertEqual(expected, self.placement.dump_state())
        # Undone is undone.
        rc, again = self.restore()
        self.assertEqual(0, rc)
        self.assertEqual({'skipped: already as before'},
                         {r['outcome'] for r in again})

    def test_restore_replays_newest_first(self):
        """Two runs changed the same consumer: only undoing the second
        change first gets back to the start.
        """
        vm, host3 = evacuated_from_host1_holding_host2(self)
        before = self.placement.dump_state()
        self.assertEqual(4, self.clean('--host', 'host1')[0])
        self.assertEqual(4, self.clean('--host', 'host2')[0])
        self.assertEqual({vm: held({host3: FLAVOR}, generation=3)},
                         self.placement.dump_state())
        self.assertEqual(2, len(self.entries()))
        rc, rows = self.restore()
        self.assertEqual(4, rc)
        # Shown in a list's order; replayed newest first, which alone
        # gets back to the start.
        self.assertEqual([(vm, self.host1, 'done'), (vm, self.host2, 'done')],
                         self.outcomes(rows))
        expected = copy.deepcopy(before)
        expected[vm]['consumer_generation'] += 4
        self.assertEqual(expected, self.placement.dump_state())

    def test_restore_refuses_consumers_changed_since(self):
        """nova resized the instance, and someone allocated for the
        emptied consumer again: both are refused and left as they are,
        the rest is restored.
        """
        vm, bw = self.evacuated()
        stranger = self.stranger(self.host2)
        gone = self.gone('host1', self.host1)
        before = self.placement.dump_state()
        self.assertEqual(4, self.clean()[0])
        self.allocate(vm, {self.host2: BIGGER})
        self.allocate(stranger, self.host1)
        changed = {vm: held({self.host2: BIGGER}, generation=3),
                   stranger: held({self.host1: FLAVOR})}
        self.assertEqual(changed, self.placement.dump_state())
        writes = len(self.writes())

        rc, rows = self.restore()
        self.assertEqual(1, rc)
        refused = 'failed: refused: consumer %s changed since the repair'
        self.assertRows([
            self.done(self.row(vm, self.host1, 'evacuated_source',
                               'restore_allocation', host='host1'),
                      refused % vm),
            self.done(self.row(vm, bw, 'evacuated_source',
                               'restore_allocation', host='host1',
                               name='host1:eth0', root=self.host1,
                               resources=BW),
                      refused % vm),
            self.done(self.row(stranger, self.host2, 'unknown_consumer',
                               'restore_consumer', host='host2',
                               consumer_type='unknown', instance=None),
                      refused % stranger),
            self.done(self.row(gone, self.host1, 'deleted_instance',
                               'restore_consumer', host='host1')),
        ], rows)
        self.assertEqual(dict(changed, **{gone: before[gone]}),
                         self.placement.dump_state())
        self.assertEqual([('PUT', '/allocations/' + gone)],
                         self.writes()[writes:])

    def test_dry_run_changes_nothing(self):
        gone = self.gone('host1', self.host1)
        vm, bw = self.evacuated()
        self.assertEqual(4, self.clean()[0])
        after = self.placement.dump_state()
        writes = len(self.writes())
        rc, rows = self.restore('--dry-run')
        self.assertEqual(3, rc)
        self.assertEqual(sorted([(gone, self.host1, 'skipped: dry run'),
                                 (vm, self.host1, 'skipped: dry run'),
                                 (vm, bw, 'skipped: dry run')]),
                         sorted(self.outcomes(rows)))
        self.assertEqual(after, self.placement.dump_state())
        self.assertEqual(writes, len(self.writes()))
        # Restored: nothing left to do, 0 as without --dry-run.
        self.assertEqual(4, self.restore()[0])
        rc, rows = self.restore('--dry-run')
        self.assertEqual((0, {'skipped: already as before'}),
                         (rc, {r['outcome'] for r in rows}))

    def test_write_refused_by_a_conflict_is_never_undone(self):
        """The clean met a concurrent write (409) and succeeded on its
        second try; the journal marks the first try as never applied,
        so restore undoes only the second, back to nova's change.
        """
        vm, bw = self.evacuated()
        self.proxy.inject('PUT', '/allocations/' + vm, before=lambda:
                          self.allocate(vm, {self.host1: FLAVOR, bw: BW,
                                             self.host2: BIGGER}))
        self.assertEqual(4, self.clean()[0])
        first, second = self.entries()
        self.assertEqual((False, 'consumer generation conflict'),
                         (first.get('applied'), first.get('reason')))
        self.assertNotIn('applied', second)
        self.assertEqual(
            {self.host1: {'resources': FLAVOR}, bw: {'resources': BW},
             self.host2: {'resources': BIGGER}},
            second['consumers'][vm]['before']['allocations'])
        rc, rows = self.restore()
        self.assertEqual(4, rc)
        never = 'skipped: never applied (consumer generation conflict)'
        self.assertEqual([(vm, self.host1, 'done'), (vm, self.host1, never),
                          (vm, bw, 'done'), (vm, bw, never)],
                         self.outcomes(rows))
        self.assertEqual({vm: held({self.host1: FLAVOR, bw: BW,
                                    self.host2: BIGGER}, generation=4)},
                         self.placement.dump_state())

    def test_concurrent_write_during_restore_is_kept(self):
        """nova writes the consumer while restore is about to: placement
        refuses the restore's write (409) and nova's change stays; the
        next restore refuses the changed consumer.
        """
        vm, bw = self.evacuated()
        self.assertEqual(4, self.clean()[0])
        self.proxy.inject('PUT', '/allocations/' + vm, before=lambda:
                          self.allocate(vm, {self.host2: BIGGER}))
        rc, rows = self.restore()
        self.assertEqual(1, rc)
        conflict = 'failed: changed concurrently; run restore again'
        self.assertEqual([(vm, self.host1, conflict), (vm, bw, conflict)],
                         self.outcomes(rows))
        self.assertEqual({vm: held({self.host2: BIGGER}, generation=3)},
                         self.placement.dump_state())
        rc, rows = self.restore()
        self.assertEqual(1, rc)
        self.assertEqual(
            {'failed: refused: consumer %s changed since the repair' % vm},
            {r['outcome'] for r in rows})
        self.assertEqual({vm: held({self.host2: BIGGER}, generation=3)},
                         self.placement.dump_state())

    def test_placement_failure_during_restore(self):
        """A failed write is reported, the rest restored; running restore
        again finishes the job.
        """
        gone = self.gone('host1', self.host1)
        stranger = self.stranger(self.host2)
        before = self.placement.dump_state()
        self.assertEqual(4, self.clean()[0])
        self.proxy.inject('PUT', '/allocations/' + gone, status=500)
        rc, rows = self.restore()
        self.assertEqual(1, rc)
        self.assertEqual(sorted([
            (gone, self.host1, 'failed: error 1'),
            (stranger, self.host2, 'done')]), sorted(self.outcomes(rows)))
        self.assertIn(
            'Error 1 (1 row(s)): Placement request PUT /allocations/%s '
            'failed: 500 injected by the test proxy\n' % gone, self.stderr)
        self.assertEqual({stranger: before[stranger]},
                         self.placement.dump_state())
        rc, rows = self.restore()
        self.assertEqual(4, rc)
        self.assertEqual(sorted([
            (gone, self.host1, 'done'),
            (stranger, self.host2, 'skipped: already as before')]),
            sorted(self.outcomes(rows)))
        self.assertEqual(before, self.placement.dump_state())

    def test_last_line_cut_short_is_ignored(self):
        """A later run died inside its first write: that change was
        never sent (it only follows a whole line), the rest is undone,
        and the journal is not called whole (11).
        """
        gone = self.gone('host1', self.host1)
        before = self.placement.dump_state()
        self.assertEqual(4, self.clean()[0])
        with open(self.journal) as f:
            header = f.readline()
        with open(self.journal, 'a') as f:
            f.write(header[:len(header) // 2])
        rc, rows = self.restore()
        self.assertEqual((11, [(gone, self.host1, 'done')]),
                         (rc, self.outcomes(rows)))
        self.assertEqual(before, self.placement.dump_state())

    def test_table_output(self):
        gone = self.gone('host1', self.host1)
        self.assertEqual(4, self.clean()[0])
        rc, out, err = self.manage('allocations', 'restore', '--journal',
                                   self.journal)
        self.assertEqual(4, rc, err)
        line, = [line for line in out.splitlines() if gone in line]
        self.assertTrue(line.rstrip(' |').endswith('done'), line)
        self.assertEqual(base.PROJECT,
                         self.placement.get_allocations(gone)['project_id'])


class KilledRunTestCase(test_clean.RepairTestCase):
    """A clean killed inside its journal write, then run again with the
    same --journal: both runs restore exactly.

    A SIGKILL inside ``write(2)`` stops the copy at a page boundary, and
    a batch's change is only sent after its whole write and fsync. So
    the killed run leaves placement with the batches before it applied
    and this batch not sent, and the journal cut at a multiple of 4 KiB
    inside this batch's lines. That is made here byte for byte: the
    second batch's POST is answered 500 by the proxy (never forwarded,
    nothing marked), and the journal is cut at the first page boundary
    inside that batch's lines, losing nothing that was written after
    it, since the run stops there (--max-count).
    """

    ORPHANS = 20

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.repair.actions.BATCH', 8))
        self.big = self.add_node('host3', inventory={
            'VCPU': 64, 'MEMORY_MB': 65536, 'DISK_GB': 100})
        self.vms = [self.gone('host3', self.big)
                    for _n in range(self.ORPHANS)]
        self.initial = self.placement.dump_state()

    def killed_run(self):
        """Returns the number of the cut line."""
        self.proxy.inject('POST', '/allocations', skip=1, status=500)
        rc, rows = self.clean('--max-count', '16')
        self.assertEqual(1, rc)
        self.assertEqual(8, [r['outcome'] for r in rows].count('done'))
        with open(self.journal, 'rb') as f:
            data = f.read()
        lines = data.split(b'\n')
        # Header, 8 entries, then the second batch's 8, the end record.
        self.assertEqual(19, len(lines))
        batch2 = len(b'\n'.join(lines[:9])) + 1
        offset = -(-batch2 // PAGE) * PAGE
        self.assertLess(offset, len(data))
        self.assertNotEqual(b'\n', data[offset - 1:offset])
        with open(self.journal, 'r+b') as f:
            f.truncate(offset)
        # The first batch applied, the second never sent.
        done = {r['consumer'] for r in rows if r['outcome'] == 'done'}
        self.assertEqual(
            {c: doc for c, doc in self.initial.items() if c not in done},
            self.placement.dump_state())
        return data[:offset].count(b'\n') + 1

    def restore_both(self, *expected):
        """Restore the journal of both runs: 11 (the killed run has no
        end record), placement exactly as before both; stderr's lines
        match ``expected`` (patterns).
        """
        rc, out, err = self.manage('allocations', 'restore', '--format',
                                   'json', '--journal', self.journal)
        self.assertEqual(11, rc, err)
        lines = err.splitlines()
        self.assertEqual(len(expected), len(lines), err)
        for pattern, line in zip(expected, lines):
            self.assertRegex(line, pattern)
        outcomes = sorted(r['outcome'] for r in json.loads(out))
        self.assertEqual(self.initial, self.placement.dump_state())
        return outcomes

    def unended(self, cut):
        """The lines saying the killed run has no end record."""
        return ((r'^WARNING: journal %s: run \S+ \(clean .* lines 1 to %d\) '
                 r'has no end record: .* cut short at line %d ' %
                 (re.escape(self.journal), cut, cut)),
                r'^The journal cannot prove it is whole\.')

    def test_killed_then_rerun_on_the_same_journal(self):
        cut = self.killed_run()
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        self.assertEqual(['done'] * 12, [r['outcome'] for r in rows])
        self.assertEqual({}, self.placement.dump_state())
        whole = cut - 10
        outcomes = self.restore_both(*self.unended(cut))
        # The second run's 12 and the first batch's 8 are undone; the
        # killed batch's whole entries were never sent.
        self.assertEqual(['done'] * 20 +
                         ['skipped: already as before'] * whole, outcomes)

    def test_line_of_another_version_is_refused_before_any_write(self):
        """A line of another journal version (an entry as a version
        without checksums had it) is no journal entry: refused with its
        number, as any other.
        """
        self.assertEqual(4, self.clean()[0])
        with open(self.journal, 'rb') as f:
            lines = f.read().split(b'\n')
        line = json.loads(lines[1])
        del line['sum']
        lines[1] = json.dumps(dict(line, version=2),
                              sort_keys=True).encode()
        with open(self.journal, 'wb') as f:
            f.write(b'\n'.join(lines))
        after = self.placement.dump_state()
        writes = len(self.writes())
        rc, out, err = self.manage('allocations', 'restore', '--journal',
                                   self.journal)
        self.assertEqual((127, ''), (rc, out))
        self.assertEqual(
            ['ERROR: Journal %s: line 2 is not a nova-orphans journal entry '
             '(version 2; this release reads version 3)' % self.journal],
            err.splitlines())
        self.assertEqual(after, self.placement.dump_state())
        self.assertEqual(writes, len(self.writes()))

    def test_damaged_journal_is_refused_before_any_write(self):
        self.assertEqual(4, self.clean()[0])
        with open(self.journal, 'rb') as f:
            lines = f.read().split(b'\n')
        lines[3] = lines[3][:50]
        with open(self.journal, 'wb') as f:
            f.write(b'\n'.join(lines))
        after = self.placement.dump_state()
        writes = len(self.writes())
        rc, out, err = self.manage('allocations', 'restore', '--journal',
                                   self.journal)
        self.assertEqual((127, ''), (rc, out))
        self.assertEqual(
            ['ERROR: Journal %s: line 4 is cut short, yet the run that wrote '
             'it '
             'went on after it: the journal is damaged' % self.journal],
            err.splitlines())
        self.assertEqual(after, self.placement.dump_state())
        self.assertEqual(writes, len(self.writes()))


class CloudTestCase(test_clean.RepairTestCase):
    """A journal names the cloud it changed; restore refuses it where
    an address both runs know differs, whatever providers they share,
    and takes it where --journal-cloud names the journal's cloud.
    """

    def setUp(self):
        super().setUp()
        # Straight to placement, not through the proxy clean went by.
        self.direct_conf = os.path.join(self.tmp, 'nova.conf')

    def test_header_names_the_cloud(self):
        self.gone('host1', self.host1)
        self.assertEqual(4, self.clean()[0])
        run, = journal_mod.load(self.journal).runs
        self.assertEqual(
            (self.proxy.endpoint, {
                'front_end': 'nova-orphans-manage',
                'config_files': [self.conf_file],
                'api_database': {'host': None, 'name': os.path.join(
                    self.nova.dir, 'nova_api.sqlite')}}),
            (run.placement, run.cloud))

    def test_same_cloud_at_another_address(self):
        """Refused, though every provider of the journal exists here,
        and nothing written; restored exactly once named.
        """
        gone = self.gone('host1', self.host1)
        before = self.placement.dump_state()
        self.assertEqual(4, self.clean()[0])
        after = self.placement.dump_state()
        rc, out, err = self.manage('allocations', 'restore', '--journal',
                                   self.journal, conf_file=self.direct_conf)
        self.assertEqual((127, ''), (rc, out))
        self.assertEqual(
            ['ERROR: Journal %s: written against another '
             'cloud (placement %s, API database %s, configuration %s) than '
             'the one this run reaches (placement %s, API database %s, '
             'configuration %s): nothing was restored. If it is the same '
             'cloud, now reached at another address, restore with '
             '--journal-cloud %s' % (
                 self.journal, self.proxy.endpoint, self.api_db,
                 self.conf_file, self.placement.endpoint, self.api_db,
                 self.direct_conf, self.proxy.endpoint)],
            err.splitlines())
        self.assertEqual(after, self.placement.dump_state())
        rc, out, err = self.manage(
            'allocations', 'restore', '--journal', self.journal,
            '--journal-cloud', 'http://elsewhere:8778',
            conf_file=self.direct_conf)
        self.assertEqual((127, 'ERROR: Journal %s: '
                               '--journal-cloud http://elsewhere:8778 names '
                               'no run of it' % self.journal),
                         (rc, err[:len(err.split(' (its')[0])]))
        self.assertEqual(after, self.placement.dump_state())
        rc, out, err = self.manage(
            'allocations', 'restore', '--format', 'json', '--journal',
            self.journal, '--journal-cloud', self.proxy.endpoint,
            conf_file=self.direct_conf)
        self.assertEqual((4, ''), (rc, err))
        self.assertEqual([(gone, 'done')], [(r['consumer'], r['outcome'])
                                            for r in json.loads(out)])
        self.assertEqual(before, self.placement.dump_state())
        # The restore's mark names where it restored, and the option.
        mark, = journal_mod.load(self.journal).restores
        self.assertEqual(
            (1, self.placement.endpoint, 'nova-orphans-manage',
             [self.proxy.endpoint]),
            (mark['done'], mark['placement'], mark['cloud']['front_end'],
             mark['journal_cloud']))

    @property
    def api_db(self):
        return os.path.join(self.nova.dir, 'nova_api.sqlite')


class DryRunTestCase(test_clean.RepairTestCase):
    """``restore --dry-run`` says what the real run would do."""

    def outcomes(self, rows):
        return [(r['consumer'], r['resource_provider'], r['outcome'])
                for r in rows]

    def test_judged_against_what_newer_restores_leave(self):
        """Two runs changed the same consumer: the older entry only
        matches once the newer one is undone, and the dry run sees that.
        """
        vm, _host3 = evacuated_from_host1_holding_host2(self)
        self.assertEqual(4, self.clean('--host', 'host1')[0])
        self.assertEqual(4, self.clean('--host', 'host2')[0])
        after = self.placement.dump_state()
        writes = len(self.writes())
        rc, rows = self.restore('--dry-run')
        self.assertEqual(3, rc)
        self.assertEqual([(vm, self.host1, 'skipped: dry run'),
                          (vm, self.host2, 'skipped: dry run')],
                         self.outcomes(rows))
        self.assertEqual(after, self.placement.dump_state())
        self.assertEqual(writes, len(self.writes()))
        rc, rows = self.restore()
        self.assertEqual((4, [(vm, self.host1, 'done'),
                              (vm, self.host2, 'done')]),
                         (rc, self.outcomes(rows)))

    def test_refusals_are_reported_as_the_real_run_reports_them(self):
        vm, bw = self.evacuated()
        gone = self.gone('host1', self.host1)
        self.assertEqual(4, self.clean()[0])
        self.allocate(vm, {self.host2: BIGGER})
        changed = self.placement.dump_state()
        writes = len(self.writes())
        rc, rows = self.restore('--dry-run')
        refused = ('failed: refused: consumer %s changed since the repair' %
                   vm)
        self.assertEqual(1, rc)
        self.assertEqual(sorted([(vm, self.host1, refused),
                                 (vm, bw, refused),
                                 (gone, self.host1, 'skipped: dry run')]),
                         sorted(self.outcomes(rows)))
        self.assertEqual(changed, self.placement.dump_state())
        self.assertEqual(writes, len(self.writes()))
        rc, real = self.restore()
        self.assertEqual(1, rc)
        self.assertEqual(
            [(c, rp, o.replace('skipped: dry run', 'done'))
             for c, rp, o in self.outcomes(rows)], self.outcomes(real))


class RefusedBatchTestCase(test_clean.RepairTestCase):
    """A refused request is one journal line, however many consumers it
    carried: two runs meeting on the same consumers stay proportionate.
    """

    def test_one_mark_per_refused_request(self):
        rp = self.add_node('host3', inventory={
            'VCPU': 64, 'MEMORY_MB': 65536, 'DISK_GB': 100})
        vms = [self.gone('host3', rp) for _n in range(10)]
        initial = self.placement.dump_state()
        # Another writer gets to one of them between the read and the
        # POST: the whole request is refused.
        self.proxy.inject('POST', '/allocations', before=lambda:
                          self.allocate(vms[0], rp, resources=BIGGER))
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        with open(self.journal) as f:
            marks = [json.loads(line) for line in f
                     if '"not_applied"' in line]
        mark, = marks
        entries = self.entries()
        self.assertEqual([e['id'] for e in entries[:10]],
                         mark['not_applied'])
        self.assertEqual('consumer generation conflict', mark['reason'])
        self.assertEqual([False] * 10, [e['applied'] for e in entries[:10]])
        rc, rows = self.restore()
        self.assertEqual(4, rc)
        # What the other writer left, and the clean then removed (the
        # instance is still deleted), comes back: emptied and written
        # again, the consumer starts again at generation 1.
        self.assertEqual(dict(initial, **{vms[0]: held({rp: BIGGER})}),
                         self.placement.dump_state())


class BatchedRestoreTestCase(test_clean.RepairTestCase):
    """Many entries: their consumers read together, written in one
    generation-checked POST /allocations.
    """

    COUNT = 10

    def setUp(self):
        super().setUp()
        self.rp = self.add_node('host3', inventory={
            'VCPU': 64, 'MEMORY_MB': 65536, 'DISK_GB': 100})
        self.vms = [self.gone('host3', self.rp) for _n in range(self.COUNT)]
        self.initial = self.placement.dump_state()
        self.assertEqual(4, self.clean()[0])
        self.assertEqual({}, self.placement.dump_state())
        self.before = len(self.writes())

    def test_one_post(self):
        rc, rows = self.restore()
        self.assertEqual((4, ['done'] * self.COUNT),
                         (rc, [r['outcome'] for r in rows]))
        self.assertEqual([('POST', '/allocations')],
                         self.writes()[self.before:])
        post = self.proxy.requests('POST')[-1]
        self.assertEqual(
            {vm: {'allocations': {self.rp: {'resources': FLAVOR}},
                  'consumer_generation': None,
                  'project_id': base.PROJECT, 'user_id': base.USER}
             for vm in self.vms}, post.body)
        self.assertEqual(self.initial, self.placement.dump_state())

    def test_refused_batch_is_restored_entry_by_entry(self):
        """Someone allocates for one of the consumers between the reads
        and the POST: placement refuses it whole, and each entry is read
        and judged again on its own; that one is refused, the rest
        restored.
        """
        taken = self.vms[3]
        self.proxy.inject('POST', '/allocations', before=lambda:
                          self.allocate(taken, self.rp, resources=BIGGER))
        rc, rows = self.restore()
        self.assertEqual(1, rc)
        self.assertEqual(
            sorted([(vm, 'done') for vm in self.vms if vm != taken] + [
                (taken, 'failed: refused: consumer %s changed since the '
                        'repair' % taken)]),
            sorted((r['consumer'], r['outcome']) for r in rows))
        self.assertEqual([409], [p.result for p in
                                 self.proxy.requests('POST')[-1:]])
        self.assertEqual(
            [('POST', '/allocations')] + sorted(
                ('PUT', '/allocations/' + vm)
                for vm in self.vms if vm != taken),
            self.writes()[self.before:self.before + 1] +
            sorted(self.writes()[self.before + 1:]))
        self.assertEqual(
            dict(self.initial, **{taken: held({self.rp: BIGGER})}),
            self.placement.dump_state())

    def test_server_error_fails_the_batch_and_a_rerun_finishes(self):
        self.proxy.inject('POST', '/allocations', status=500)
        rc, rows = self.restore()
        self.assertEqual(1, rc)
        self.assertEqual(
            {'failed: Placement request POST /allocations failed: 500 '
             'injected by the test proxy'}, {r['outcome'] for r in rows})
        self.assertEqual({}, self.placement.dump_state())
        self.assertEqual(4, self.restore()[0])
        self.assertEqual(self.initial, self.placement.dump_state())

    def test_dry_run_writes_nothing(self):
        rc, rows = self.restore('--dry-run')
        self.assertEqual((3, ['skipped: dry run'] * self.COUNT),
                         (rc, [r['outcome'] for r in rows]))
        self.assertEqual([], self.writes()[self.before:])


def rechained(path, change):
    """Rewrite the journal at ``path``: ``change(line)`` applied to each
    line (a dict), then every checksum and ``follows`` computed again, as
    anyone who can write the file can.
    """
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    previous = last = None
    for line in lines:
        change(line)
        if 'run' in line:
            line['follows'] = last
            previous = None
        line['sum'] = last = previous = journal_verify.digest(previous,
                                                              line)
    with open(path, 'w') as f:
        f.writelines(json.dumps(line, sort_keys=True) + '\n'
                     for line in lines)


class WrittenRowsTestCase(front_ends.FrontEndsTestCase):
    """A restore's rows are what it writes, from both front ends: an
    entry's "before" altered (VCPU 1 made 5, then 5 made 3) and its
    journal chained again is restored as it reads, and shown as it is
    written.
    """

    def setUp(self):
        super().setUp()
        self.host1 = self.add_node('host1', inventory=dict(
            base.INVENTORY, VCPU=64))
        self.boot('host1', self.host1)
        self.gone = self.boot('host1', self.host1, vm_state='error')
        self.nova.force_delete_instance('cell1', self.gone)

    def altered(self, name, vcpu):
        """A clean's journal of the orphan, its "before" altered."""
        path = os.path.join(self.tmp, name + '.jsonl')
        rc, out, err = self.manage('allocations', 'clean', '--journal', path)
        self.assertEqual(4, rc, err)

        def change(line):
            for spec in line.get('consumers', {}).values():
                spec['before']['allocations'][self.host1]['resources'][
                    'VCPU'] = vcpu
        rechained(path, change)
        self.assertEqual(1, len(journal_verify.load(path).entries))
        return path

    def assertWritten(self, vcpu, result):
        rc, out, err = result
        self.assertEqual(4, rc, err)
        row, = json.loads(out)
        held = self.placement.get_allocations(self.gone)
        self.assertEqual(
            (self.gone, 'done', dict(FLAVOR, VCPU=vcpu)),
            (row['consumer'], row['outcome'],
             held['allocations'][self.host1]['resources']))
        self.assertEqual(held['allocations'][self.host1]['resources'],
                         row['resources'])
        self.assertEqual((held['project_id'], held['user_id']),
                         (row['project_id'], row['user_id']))

    def test_both_front_ends(self):
        path = self.altered('manage', 5)
        self.assertWritten(5, self.manage(
            'allocations', 'restore', '--format', 'json', '--journal', path))
        path = self.altered('openstack', 3)
        self.assertWritten(3, runners.openstack_shell(
            ['--os-cloud', 'cloud', 'allocation', 'orphan', 'restore', '-f',
             'json', '--journal', path],
            {'OS_CLIENT_CONFIG_FILE': self.clouds_yaml}))


RestoreMariaDBTestCase = base.on_mariadb(
    RestoreTestCase, 'test_clean_then_restore_is_identical',
    'test_restore_refuses_consumers_changed_since',
    'test_concurrent_write_during_restore_is_kept')
