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

from nova_orphans.tests.functional import base
from nova_orphans.tests.functional import test_clean

FLAVOR = test_clean.FLAVOR
BIGGER = test_clean.BIGGER
BW = test_clean.BW
held = test_clean.held


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
        host3 = self.add_node('host3')
        vm = self.nova.add_instance('cell1', host='host3', node='host3')
        self.allocate(vm, self.host1, self.host2, host3)
        self.nova.add_migration('cell1', vm, migration_type='evacuation',
                                status='done', source_compute='host1',
                                source_node='host1', dest_compute='host3',
                                dest_node='host3')
        before = self.placement.dump_state()
        self.assertEqual(4, self.clean('--host', 'host1')[0])
        self.assertEqual(4, self.clean('--host', 'host2')[0])
        self.assertEqual({vm: held({host3: FLAVOR}, generation=3)},
                         self.placement.dump_state())
        self.assertEqual(2, len(self.entries()))
        rc, rows = self.restore()
        self.assertEqual(4, rc)
        self.assertEqual([(vm, self.host2, 'done'), (vm, self.host1, 'done')],
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
                               'remove_provider', host='host1'),
                      refused % vm),
            self.done(self.row(vm, bw, 'evacuated_source', 'remove_provider',
                               host='host1', name='host1:eth0',
                               root=self.host1, resources=BW),
                      refused % vm),
            self.done(self.row(stranger, self.host2, 'unknown_consumer',
                               'delete_consumer', host='host2',
                               consumer_type='unknown', instance=None),
                      refused % stranger),
            self.done(self.row(gone, self.host1, 'deleted_instance',
                               'delete_consumer', host='host1')),
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
        self.assertEqual([(vm, self.host1, 'done'), (vm, bw, 'done'),
                          (vm, self.host1, never), (vm, bw, never)],
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
            (gone, self.host1, 'failed: Placement request PUT '
             '/allocations/%s failed: 500 injected by the test proxy' %
             gone),
            (stranger, self.host2, 'done')]), sorted(self.outcomes(rows)))
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
        """The tool died while writing an entry: that change was never
        sent (it only follows a whole line), the rest can be undone.
        """
        gone = self.gone('host1', self.host1)
        before = self.placement.dump_state()
        self.assertEqual(4, self.clean()[0])
        with open(self.journal) as f:
            whole = f.read()
        with open(self.journal, 'a') as f:
            f.write(whole[:len(whole) // 2])
        rc, rows = self.restore()
        self.assertEqual((4, [(gone, self.host1, 'done')]),
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


RestoreMariaDBTestCase = base.on_mariadb(
    RestoreTestCase, 'test_clean_then_restore_is_identical',
    'test_restore_refuses_consumers_changed_since',
    'test_concurrent_write_during_restore_is_kept')
