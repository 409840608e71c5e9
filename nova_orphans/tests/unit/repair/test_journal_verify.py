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
"""A journal that proves itself: every cut, alteration, removal,
duplicate, move and glue of a real journal's lines, in turn.

The journal is written once by the real writer, from the entries of a
real clean of the sandbox: four runs, a "not applied" line, a restore's
mark. They are read from ``journals/sandbox.jsonl``, the same four runs
as this writer wrote them, which every later reader must still read.
"""

import json
import os
import re
from unittest import mock

import fixtures
from oslotest import base

from nova_orphans.app import allocations
from nova_orphans.app import results
from nova_orphans import exception
from nova_orphans import interrupt
from nova_orphans import outcomes
from nova_orphans.repair import actions
from nova_orphans.repair import journal
from nova_orphans.repair import journal_verify

SANDBOX = os.path.join(os.path.dirname(__file__), 'journals',
                       'sandbox.jsonl')
PLACEMENT = 'http://placement.example:8778'
CLOUD = {'front_end': 'nova-orphans-manage',
         'config_files': ['/etc/nova/nova.conf'],
         'api_database': {'host': 'db.example', 'name': 'nova_api'}}


def _entries():
    """The sandbox journal's entries, as a clean gives them to be
    written.
    """
    return [{k: v for k, v in entry.items()
             if k not in ('id', 'time', 'version', 'sum', 'applied',
                          'reason')}
            for entry in journal.load(SANDBOX).entries]


def _write_journal(path):
    """Four runs: two cleans (one with a refused request), a providers
    clean, a restore's mark.
    """
    entries = _entries()
    j = journal.Journal(path, placement=PLACEMENT, cloud=CLOUD)
    j.record_many(entries[:2])
    j.record(entries[2])
    j.close()
    j = journal.Journal(path, placement=PLACEMENT, cloud=CLOUD)
    ids = j.record_many(entries[3:5])
    j.not_applied_many(ids[1:], 'consumer generation conflict')
    j.close(journal.ERROR)
    j = journal.Journal(path, placement=PLACEMENT, cloud=CLOUD,
                        command='clean')
    j.record(entries[5])
    j.close('SIGTERM')
    j = journal.Journal(path, placement=PLACEMENT, cloud=dict(
        CLOUD, front_end='openstack'), command='restore')
    j.restored(3, 0)
    j.close()


class RealJournalTestCase(base.BaseTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tmp = fixtures.TempDir()
        tmp.setUp()
        cls.addClassCleanup(tmp.cleanUp)
        path = os.path.join(tmp.path, 'whole.jsonl')
        _write_journal(path)
        with open(path, 'rb') as f:
            cls.data = f.read()
        cls.lines = cls.data.split(b'\n')[:-1]
        cls.parsed = [json.loads(line) for line in cls.lines]

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'j.jsonl')

    def load(self, data):
        with open(self.path, 'wb') as f:
            f.write(data)
        return journal.load(self.path)

    def refused(self, data):
        e = self.assertRaises(exception.JournalError, self.load, data)
        return str(e)

    def expected(self, count):
        """(entry ids, which were refused) of the journal's first
        ``count`` lines.
        """
        ids, refused = [], set()
        for line in self.parsed[:count]:
            if 'consumers' in line or 'provider' in line:
                ids.append(line['id'])
            refused.update(line.get('not_applied', ()))
        return ids, sorted(refused & set(ids))

    def assertRead(self, contents, count):
        self.assertEqual(self.expected(count), (
            [e['id'] for e in contents.entries],
            sorted(e['id'] for e in contents.entries
                   if e.get('applied') is False)))

    def test_the_journal(self):
        kinds = [next(k for k in ('run', 'cut', 'end', 'not_applied',
                                  'restored', 'consumers', 'provider')
                      if k in line) for line in self.parsed]
        self.assertEqual(
            ['run', 'consumers', 'consumers', 'consumers', 'end',
             'run', 'consumers', 'consumers', 'not_applied', 'end',
             'run', 'provider', 'end', 'run', 'restored', 'end'], kinds)
        contents = self.load(self.data)
        self.assertRead(contents, len(self.lines))
        self.assertEqual([], contents.unended)
        self.assertEqual(['completed', 'error', 'SIGTERM'],
                         [r.ended for r in contents.runs])
        mark, = contents.restores
        self.assertEqual((3, 0, PLACEMENT, 'openstack'),
                         (mark['done'], mark['failed'], mark['placement'],
                          mark['cloud']['front_end']))
        self.assertEqual([], journal_verify.proof_lines(self.path, contents))

    def test_cut_at_every_line_boundary(self):
        """What verifies is read; without its end record a journal is
        never proven (a cut after an end record cannot be told from the
        end of the file).
        """
        offset = 0
        self.assertIn('is empty', self.refused(b''))
        for count, line in enumerate(self.lines, 1):
            offset += len(line) + 1
            contents = self.load(self.data[:offset])
            self.assertRead(contents, count)
            self.assertEqual('end' not in self.parsed[count - 1],
                             bool(contents.unended), count)
            if contents.unended:
                run, = contents.unended
                self.assertEqual(count, run.last_line)
                lines = journal_verify.proof_lines(self.path, contents)
                restores = journal_verify.restore_lines(self.path, contents)
                # The last run is a restore's (lines 14 to 16): cut in
                # it, the journal's changes are all there, and it is told
                # as a restore.
                self.assertEqual(count in (14, 15), run.restoring, count)
                if not run.restoring:
                    self.assertEqual((2, []), (len(lines), restores))
                    self.assertIn('has no end record: the run was killed',
                                  lines[0])
                    continue
                self.assertEqual([], lines)
                self.assertEqual(
                    ['WARNING: journal %s: %s has no end record: that '
                     'restore was killed (SIGKILL, the OOM killer, a power '
                     'cut) %s. A restore writes no entry: the runs it '
                     'restored are judged on their own.' % (
                         self.path, run.describe(),
                         'after it had restored 3 change(s), 0 refused or '
                         'failed, as its mark says' if count == 15 else
                         'before its mark, which says what it did, was '
                         'written whole, or this file was cut short after '
                         'line 14')], restores)
                self.assertIn('(restore on ', run.describe())

    def test_cut_inside_every_line(self):
        """Cut inside a line (a write(2) killed, a partial copy): read
        as far as the line before it, never proven. Every byte of every
        line is taken for a cut (strings, escapes, numbers, nested
        objects, null); the whole file is read at three of each line's.
        """
        offset = 0
        for number, line in enumerate(self.lines, 1):
            for cut in range(1, len(line)):
                self.assertTrue(journal_verify.cut_short(line[:cut]),
                                (number, line[:cut]))
            for cut in (1, len(line) // 2, len(line) - 1):
                contents = self.load(self.data[:offset + cut])
                self.assertRead(contents, number - 1)
                self.assertTrue(contents.unended, (number, cut))
            offset += len(line) + 1

    def test_one_byte_or_one_number_changed_in_each_line(self):
        for number, line in enumerate(self.lines, 1):
            text = line.decode()
            changes = [
                # A character of its time (every line has one).
                re.sub(r'("time": "\d)\d', lambda m: m.group(1) + 'x', text,
                       count=1),
                # One of its checksum's.
                re.sub(r'("sum": ")(.)', lambda m: m.group(1) + (
                    '0' if m.group(2) != '0' else '1'), text, count=1)]
            numbers = [m for m in re.finditer(r'(?<=[:\[ ])\d+(?=[,}\]])',
                                              text)
                       if not text[:m.start()].endswith('"version": ')]
            if numbers:
                # Each line's number in the middle of it, one more.
                m = numbers[len(numbers) // 2]
                changes.append(text[:m.start()] + str(int(m.group()) + 1) +
                               text[m.end():])
            for changed in changes:
                self.assertNotEqual(text, changed)
                lines = list(self.lines)
                lines[number - 1] = changed.encode()
                message = self.refused(b'\n'.join(lines) + b'\n')
                self.assertIn('line %d does not verify' % number, message)

    def test_lines_removed_duplicated_swapped_glued(self):
        last = len(self.lines)
        for i in range(last):
            lines = list(self.lines)
            del lines[i]
            data = b'\n'.join(lines) + b'\n'
            if i == last - 1:
                # The last end record removed: a file cut there.
                self.assertTrue(self.load(data).unended)
            else:
                self.assertIn('line %d' % (i + 1), self.refused(data))
            lines = list(self.lines)
            lines.insert(i, lines[i])
            self.assertIn('line %d' % (i + 2),
                          self.refused(b'\n'.join(lines) + b'\n'))
            if i + 1 < last:
                lines = list(self.lines)
                lines[i], lines[i + 1] = lines[i + 1], lines[i]
                self.assertIn('line %d' % (i + 1),
                              self.refused(b'\n'.join(lines) + b'\n'))
                lines = list(self.lines)
                lines[i:i + 2] = [lines[i] + lines[i + 1]]
                self.assertEqual(
                    'Journal %s: line %d: two lines glued together: the '
                    'newline between them is missing' % (self.path, i + 1),
                    self.refused(b'\n'.join(lines) + b'\n'))

    def test_runs_removed_or_moved(self):
        starts = [i for i, line in enumerate(self.parsed) if 'run' in line]
        runs = [self.lines[a:b] for a, b in zip(starts, starts[1:] + [None])]
        for order in ([runs[0], runs[2], runs[3]],
                      [runs[1], runs[0], runs[2], runs[3]],
                      [runs[0], runs[1], runs[1], runs[2], runs[3]]):
            data = b'\n'.join(line for run in order for line in run) + b'\n'
            self.assertIn('does not follow the line before it',
                          self.refused(data))
        # The first run alone, or the last removed: nothing tells.
        self.assertRead(self.load(b'\n'.join(runs[0]) + b'\n'),
                        len(runs[0]))

    def test_a_line_of_another_run(self):
        """The run id is each chain's nonce: an entry moved into another
        run, even where its own sum was, does not verify.
        """
        lines = list(self.lines)
        lines.insert(7, lines[2])
        self.assertIn('line 8 does not verify', self.refused(
            b'\n'.join(lines) + b'\n'))

    def test_header_only(self):
        """A run whose header alone is there: a run without an end
        record (killed, or the file cut), nothing to restore.
        """
        contents = self.load(self.lines[0] + b'\n')
        self.assertEqual(([], 1), (contents.entries, len(contents.unended)))

    def test_appended_after_a_cut(self):
        """A run appended to a copy cut inside a line: the run's chain
        records the cut, which is then verified too.
        """
        cut = len(b'\n'.join(self.lines[:6])) + 40
        with open(self.path, 'wb') as f:
            f.write(self.data[:cut])
        j = journal.Journal(self.path, placement=PLACEMENT, cloud=CLOUD)
        j.record(_entries()[0])
        j.close()
        contents = journal.load(self.path)
        self.assertEqual(1, len(contents.unended))
        with open(self.path, 'rb') as f:
            data = f.read()
        lines = data.split(b'\n')
        # The new run follows the last whole line; its cut mark names
        # where the cut one ends.
        self.assertEqual((self.parsed[5]['sum'], cut),
                         (json.loads(lines[7])['follows'],
                          json.loads(lines[8])['cut']))
        # The cut mark, and the cut it names, are verified.
        for wrong in (data.replace(b'"cut": %d' % cut,
                                   b'"cut": %d' % (cut - 1)),
                      data[:cut - 1] + data[cut:]):
            self.assertIn('line 9', self.refused(wrong))


class RestoreRunTestCase(base.BaseTestCase):
    """A restore's run: its mark verified as any line, and only a run
    of a restore's lines is one.
    """

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'j.jsonl')

    def write(self, *lines):
        data, previous = [], None
        for line in lines:
            encoded, previous = journal_verify.seal(line, previous)
            data.append(encoded)
        with open(self.path, 'wb') as f:
            f.write(b''.join(data))

    def test_malformed_mark_is_damage(self):
        for mark in ('3 done', {'done': 3}, {'done': '3', 'failed': 0}):
            self.write({'run': 'r', 'command': 'restore', 'follows': None},
                       {'restored': mark})
            e = self.assertRaises(exception.JournalError, journal.load,
                                  self.path)
            self.assertEqual(
                'Journal %s: line 2 is not a nova-orphans journal entry (a '
                'malformed restore mark)' % self.path, str(e))

    def test_a_run_with_entries_is_no_restore_s(self):
        self.write({'run': 'r', 'command': 'restore', 'follows': None},
                   _entries()[0])
        contents = journal.load(self.path)
        run, = contents.unended
        self.assertFalse(run.restoring)
        self.assertEqual(([], 2), (
            journal_verify.restore_lines(self.path, contents),
            len(journal_verify.proof_lines(self.path, contents))))


class ExitCodeTestCase(base.BaseTestCase):
    """A restore of a journal that cannot prove it is whole: never 0,
    3 or 4; a failure (1) and a signal still win.
    """

    def test_codes(self):
        done, failed = outcomes.done(), outcomes.failed('x')
        skipped = outcomes.skipped('already', resolved=True)
        for rows, signum, code in (
                ([done], None, 11), ([skipped], None, 11),
                ([outcomes.dry_run()], None, 11), ([], None, 11),
                ([done, failed], None, 1), ([done], 15, 143)):
            result = results.Repair([None] * len(rows), rows, signum=signum,
                                    restoring=True, unproven=['x'])
            self.assertEqual(code, result.exit_code)
            result.unproven = []
            self.assertNotEqual(11, result.exit_code)

    def test_no_success_in_the_metrics(self):
        result = results.Repair([], [], restoring=True, unproven=['x'])
        for unproven, last in ((['x'], '0.0'), ([], '1.7e+09')):
            result.unproven = unproven
            metrics = allocations.Metrics()
            with mock.patch('time.time', return_value=1700000000):
                metrics.repair('restore', result)
            self.assertIn('\nnova_orphans_restore_last_success_timestamp_'
                          'seconds %s\n' % last, metrics.text)


class EndRecordTestCase(base.BaseTestCase):
    """A clean's journal ends with how the run ended: on an error too
    (the journal is closed whatever happens).
    """

    def test_error(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'j')
        sources = mock.Mock(concurrency=2, placement_db=None)
        sources.placement.endpoint = PLACEMENT
        sources.cloud.return_value = CLOUD

        def clean():
            with allocations.Writes(
                    sources, mock.Mock(orphans=[mock.Mock()]),
                    actions.RepairOptions(journal=path),
                    interrupt.Stop()) as writes:
                writes.journal.record(_entries()[0])
                raise RuntimeError('boom')
        self.assertRaises(RuntimeError, clean)
        run, = journal.load(path).runs
        self.assertEqual(('error', CLOUD, PLACEMENT),
                         (run.ended, run.cloud, run.placement))
