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
"""Journals a killed run left behind: cut lines, re-runs, damage.

A SIGKILL inside ``write(2)`` stops the copy into the page cache at a
page boundary, so what a killed run leaves is byte for byte the journal
it was writing truncated at a multiple of 4 KiB: these tests make
exactly that, from journals the real writer wrote (a real SIGKILL: the
functional suite's test_journal_kill).
"""

import errno
import json
import os
import stat

import fixtures
from oslotest import base

from nova_orphans import exception
from nova_orphans import exit_codes
from nova_orphans.repair import journal
from nova_orphans.repair import journal_verify
from nova_orphans.repair import restore

PAGE = 4096
ENDPOINT = 'http://placement.example:8778'


def entry(consumer, pad=0):
    """One consumer's delete_consumer entry, about 200 + pad bytes."""
    return {'action': 'delete_consumer',
            'findings': [{'consumer': consumer, 'details': 'x' * pad}],
            'consumers': {consumer: {
                'before': {'allocations': {'rp1': {'resources': {
                    'VCPU': 1}}}, 'project_id': 'p', 'user_id': 'u',
                    'consumer_generation': 1, 'consumer_type': None},
                'after': {}}}}


def consumers(entries):
    return [list(e['consumers'])[0] for e in entries]


class CutTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, 'j.jsonl')

    def run_(self, names, pad=300, placement=ENDPOINT):
        """One run writing ``names`` as one batch (one write(2))."""
        j = journal.Journal(self.path, placement=placement)
        ids = j.record_many([entry(n, pad) for n in names])
        j.close()
        return ids

    def kill_at(self, offset):
        """What a SIGKILL inside the last write leaves: the file cut at
        a page boundary inside it.
        """
        self.assertEqual(0, offset % PAGE)
        with open(self.path, 'rb') as f:
            data = f.read()
        self.assertLess(offset, len(data))
        # Inside a line, not at its end.
        self.assertNotEqual(b'\n', data[offset - 1:offset])
        with open(self.path, 'r+b') as f:
            f.truncate(offset)
        return data[:offset].count(b'\n') + 1

    def lines(self):
        with open(self.path, 'rb') as f:
            return f.read().split(b'\n')

    def test_run_starts_with_a_header_and_ends_with_an_end_record(self):
        self.run_(['a', 'b'], pad=0)
        lines = [json.loads(line) for line in self.lines()[:-1]]
        first, end = lines[0], lines[-1]
        self.assertEqual(
            {'command': 'clean', 'placement': ENDPOINT,
             'pid': os.getpid(), 'version': 3, 'follows': None},
            {k: first[k] for k in ('command', 'placement', 'pid',
                                   'version', 'follows')})
        self.assertIn('run', first)
        self.assertEqual({'lines': 3, 'entries': 2, 'how': 'completed'},
                         end['end'])
        # Each line's sum chained after the one before it.
        previous = None
        for line in lines:
            self.assertEqual(journal_verify.digest(previous, line),
                             line['sum'])
            previous = line['sum']
        contents = journal.load(self.path)
        self.assertEqual([], contents.unended)
        self.assertEqual(['a', 'b'], consumers(contents.entries))
        run, = contents.runs
        self.assertEqual((ENDPOINT, ['a', 'b'], 'completed'),
                         (run.placement, consumers(run.entries), run.ended))
        # The next run follows the last line.
        self.run_(['c'], pad=0)
        self.assertEqual(end['sum'],
                         json.loads(self.lines()[len(lines)])['follows'])

    def assertUnended(self, contents, *expected):
        """The runs (their first entries' consumers) and cut lines
        (numbers) that leave the journal unproven, in order.
        """
        self.assertEqual(list(expected), [
            (consumers(u.entries)[:1] or [None])[0]
            if isinstance(u, journal_verify.Run) else u
            for u in contents.unended])

    def test_killed_batch_then_same_path_rerun(self):
        """The re-run starts a fresh line and records the cut in its own
        chain; both runs' entries are read; the killed run, which has
        no end record, leaves the journal unproven.
        """
        self.run_(['a'], pad=0)
        self.run_(['b%02d' % n for n in range(20)])
        cut_line = self.kill_at(2 * PAGE)
        # The whole entries before the cut; the killed run is named.
        contents = journal.load(self.path)
        self.assertEqual(['a'] + ['b%02d' % n for n in range(cut_line - 5)],
                         consumers(contents.entries))
        self.assertUnended(contents, 'b00')
        self.assertEqual((4, cut_line), (contents.unended[0].first_line,
                                         contents.unended[0].last_line))
        # The same-path re-run: its header, then its cut mark.
        self.run_(['c0', 'c1'], pad=0)
        lines = self.lines()
        self.assertEqual(b'', lines[-1])
        self.assertIn('run', json.loads(lines[cut_line]))
        mark = json.loads(lines[cut_line + 1])
        self.assertEqual(2 * PAGE, mark['cut'])
        contents = journal.load(self.path)
        self.assertEqual(
            ['a'] + ['b%02d' % n for n in range(cut_line - 5)] +
            ['c0', 'c1'], consumers(contents.entries))
        self.assertUnended(contents, 'b00')
        self.assertEqual(['completed', 'no end record', 'completed'],
                         [r.ended for r in contents.runs])
        # A third run: nothing more to report, nothing doubled.
        self.run_(['d'], pad=0)
        contents = journal.load(self.path)
        self.assertUnended(contents, 'b00')
        self.assertEqual(['c0', 'c1', 'd'],
                         consumers(contents.entries)[-3:])
        self.assertEqual(b'', self.lines()[-1])
        self.assertEqual(1, sum(b'"cut"' in line for line in self.lines()))

    def test_first_entry_cut(self):
        """A first batch over 4 KiB killed in its first entry: nothing
        was sent, nothing to restore, and the journal is readable.
        """
        self.run_(['big'], pad=3 * PAGE)
        self.assertEqual(2, self.kill_at(PAGE))
        contents = journal.load(self.path)
        self.assertEqual(([], []), (contents.entries, contents.runs))
        # Its header alone: a run without an end record.
        self.assertUnended(contents, None)
        self.run_(['next'], pad=0)
        contents = journal.load(self.path)
        self.assertEqual(['next'], consumers(contents.entries))
        self.assertUnended(contents, None)

    def test_only_line_cut(self):
        """Nothing whole: nothing to tell of it but that it is cut."""
        line, _sum = journal_verify.seal(dict(entry('big', pad=2 * PAGE),
                                              id='x', time='t'), None)
        with open(self.path, 'wb') as f:
            f.write(line[:PAGE])
        contents = journal.load(self.path)
        self.assertEqual(([], []), (contents.entries, contents.runs))
        self.assertUnended(contents, 1)

    def test_rerun_killed_inside_its_first_write_too(self):
        """The re-run died too, inside the line recording the cut: both
        cut lines are reported, nothing is refused.
        """
        self.run_(['a'], pad=0)
        self.run_(['b%02d' % n for n in range(20)])
        first = self.kill_at(2 * PAGE)
        j = journal.Journal(self.path, placement=ENDPOINT)
        j.record(entry('c'))
        j.close()
        # Inside the line recording the cut, which starts after the
        # fresh line's newline.
        with open(self.path, 'r+b') as f:
            f.truncate(2 * PAGE + 1 + 10)
        second = first + 1
        self.run_(['d'], pad=0)
        contents = journal.load(self.path)
        self.assertEqual(['a'] + ['b%02d' % n for n in range(first - 5)] +
                         ['d'], consumers(contents.entries))
        # The killed run, and the re-run killed inside its header.
        self.assertUnended(contents, 'b00', second)

    def test_write_failing_halfway_then_the_next_batch(self):
        """A full file system: part of a batch reached the file, the
        batch failed (its change is never sent) and is taken back, and
        the run goes on with the next one.
        """
        j = journal.Journal(self.path, placement=ENDPOINT)
        j.record(entry('a', pad=0))
        size = os.path.getsize(self.path)
        real = os.write

        def full(fd, data):
            if len(data) > PAGE:
                real(fd, data[:PAGE])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(fd, data)
        with fixtures.MonkeyPatch('nova_orphans.repair.journal.os.write',
                                  full):
            e = self.assertRaises(exception.JournalError, j.record_many,
                                  [entry('b%02d' % n) for n in range(20)])
        self.assertIn('No space left on device', str(e))
        self.assertEqual(size, os.path.getsize(self.path))
        j.record(entry('c', pad=0))
        self.assertIsNone(j.close())
        contents = journal.load(self.path)
        self.assertEqual((['a', 'c'], []),
                         (consumers(contents.entries), contents.unended))

    def test_first_write_failing_leaves_no_file(self):
        """A new journal whose first write fails is taken back to
        nothing: the run's close removes it, instead of leaving an
        empty file that restore refuses as no journal.
        """
        j = journal.Journal(self.path, placement=ENDPOINT)

        def full(fd, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        with fixtures.MonkeyPatch('nova_orphans.repair.journal.os.write',
                                  full):
            self.assertRaises(exception.JournalError, j.record,
                              entry('a', pad=0))
        self.assertEqual(0, os.path.getsize(self.path))
        self.assertIsNone(j.close())
        self.assertFalse(os.path.exists(self.path))
        # An existing journal is never removed, even one left empty.
        open(self.path, 'w').close()
        j = journal.Journal(self.path, placement=ENDPOINT)
        j.hold()
        self.assertIsNone(j.close())
        self.assertTrue(os.path.exists(self.path))

    def test_write_that_cannot_be_taken_back(self):
        """The file cannot even be truncated: the run writes nothing
        more to it, and says so; restore then says the journal cannot
        prove it is whole.
        """
        j = journal.Journal(self.path, placement=ENDPOINT)
        j.record(entry('a', pad=0))

        def fail(*args):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        with fixtures.MonkeyPatch('nova_orphans.repair.journal.os.write',
                                  fail), \
                fixtures.MonkeyPatch(
                    'nova_orphans.repair.journal.os.ftruncate', fail):
            self.assertRaises(exception.JournalError, j.record,
                              entry('b', pad=0))
        e = self.assertRaises(exception.JournalError, j.record,
                              entry('c', pad=0))
        self.assertIn('an earlier write failed (Input/output error) and '
                      'could not be taken back', str(e))
        self.assertIn('could not be taken back', j.close())
        contents = journal.load(self.path)
        self.assertEqual(['a'], consumers(contents.entries))
        self.assertUnended(contents, 'a')

    def test_one_run_at_a_time(self):
        """A second run on a journal another run is writing is refused,
        before it reads anything and at its first write.
        """
        j = journal.Journal(self.path, placement=ENDPOINT)
        j.record(entry('a', pad=0))
        refused = ('Journal %s: another run is writing to it now (a "clean" '
                   'or "restore" with the same journal); try again once it '
                   'has ended' % self.path)
        other = journal.Journal(self.path, placement=ENDPOINT)
        mark = journal.Journal(self.path, command='restore',
                               placement=ENDPOINT)
        for refusal in (
                lambda: journal.check_path(self.path),
                lambda: other.record(entry('b', pad=0)),
                # Nor is it restored while a run writes it, nor judged.
                lambda: restore.load(self.path, ENDPOINT, mark=mark),
                lambda: restore.load(self.path, ENDPOINT)):
            e = self.assertRaises(exception.JournalBusy, refusal)
            # Its own code: a refusal to retry, not a bad journal (127).
            self.assertEqual((refused, exit_codes.JOURNAL_BUSY),
                             (str(e), exit_codes.of_error(e)))
        j.close()
        journal.check_path(self.path)
        other.record(entry('b', pad=0))
        other.close()
        self.assertEqual(['a', 'b'],
                         consumers(journal.load(self.path).entries))

    def test_whole_line_missing_only_its_newline(self):
        self.run_(['a', 'b'], pad=0)
        with open(self.path, 'r+b') as f:
            f.truncate(os.path.getsize(self.path) - 1)
        self.run_(['c'], pad=0)
        contents = journal.load(self.path)
        self.assertEqual((['a', 'b', 'c'], []),
                         (consumers(contents.entries), contents.unended))
        # No cut was recorded: nothing was cut.
        self.assertFalse(any(b'"cut"' in line for line in self.lines()))

    def test_cut_followed_by_zeros_after_a_power_loss(self):
        self.run_(['a'], pad=0)
        self.run_(['b%02d' % n for n in range(20)])
        cut_line = self.kill_at(2 * PAGE)
        with open(self.path, 'ab') as f:
            f.write(b'\0' * 100)
        self.run_(['c'], pad=0)
        contents = journal.load(self.path)
        self.assertEqual('c', consumers(contents.entries)[-1])
        self.assertUnended(contents, 'b00')
        self.assertEqual(cut_line, contents.unended[0].last_line)

    def test_directory_is_fsynced_when_the_journal_is_created(self):
        synced = []
        real = os.fsync

        def fsync(fd):
            synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
            real(fd)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.repair.journal.os.fsync', fsync))
        # The directory, the batch, the end record.
        self.run_(['a'])
        self.assertEqual([True, False, False], synced)
        self.run_(['b'])
        self.assertEqual([True, False, False, False, False], synced)

    def test_one_not_applied_line_per_refused_request(self):
        j = journal.Journal(self.path)
        ids = j.record_many([entry('c%03d' % n) for n in range(100)])
        j.not_applied_many(ids, 'consumer generation conflict')
        j.close()
        # Header, 100 entries, one mark, the end record.
        self.assertEqual(103, len(self.lines()) - 1)
        contents = journal.load(self.path)
        self.assertEqual({(False, 'consumer generation conflict')},
                         {(e['applied'], e['reason'])
                          for e in contents.entries})


class DamageTestCase(base.BaseTestCase):
    """Lines no killed run leaves: refused, with their number."""

    def setUp(self):
        super().setUp()
        self.path = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'j.jsonl')

    def write(self, *lines):
        with open(self.path, 'wb') as f:
            f.write(b''.join(lines))

    def assertRefused(self, text):
        e = self.assertRaises(exception.JournalError, journal.load,
                              self.path)
        self.assertEqual('Journal %s: %s' % (self.path, text), str(e))

    def run_(self, *lines):
        """A run's lines as its journal has them: its header, then each
        line chained after the one before.
        """
        data, last = [], None
        for line in ({'run': 'r', 'follows': None},) + lines:
            encoded, last = journal_verify.seal(line, last)
            data.append(encoded)
        return data

    def test_empty_file(self):
        for data in (b'', b'\n\n', b'  \n'):
            self.write(data)
            self.assertRefused('is empty: it is not a journal (a run '
                               'writes its journal only once it changes '
                               'something)')

    def test_cut_line_in_the_middle_of_a_run(self):
        lines = self.run_(entry('a'), entry('b'), entry('c'))
        lines[2] = lines[2][:100] + b'\n'
        self.write(*lines)
        self.assertRefused('line 3 is cut short, yet the run that wrote it '
                           'went on after it: the journal is damaged')

    def test_line_that_is_not_an_entry(self):
        header, whole = self.run_(entry('a'))
        for lines, text in (
                ((header, whole, b'{not json\n'),
                 'line 3 is not a nova-orphans journal entry (Expecting '
                 'property name enclosed in double quotes: line 1 column 2 '
                 '(char 1))'),
                # Not JSON, even as the last line: not a cut entry.
                ((header, whole, b'this is not JSON'),
                 'line 3 is not a nova-orphans journal entry (Expecting '
                 'value: line 1 column 1 (char 0))'),
                ((b'{"hello": "world"}\n',),
                 'line 1 is not a nova-orphans journal entry (version '
                 'None; this release reads version 3)'),
                # Another version, older or newer, whatever it holds.
                ((b'{"version": 2, "consumers": {}}\n',),
                 'line 1 is not a nova-orphans journal entry (version 2; '
                 'this release reads version 3)'),
                ((header, whole, b'{"version": 4, "consumers": {}}\n'),
                 'line 3 is not a nova-orphans journal entry (version 4; '
                 'this release reads version 3)'),
                ((header, whole, b'{"version": 3, "consumers": {}}\n'),
                 'line 3 is not a nova-orphans journal entry (no '
                 'checksum)'),
                ((header, b'[1, 2]\n'),
                 'line 2 is not a nova-orphans journal entry (not a JSON '
                 'object)'),
                (self.run_({'not_applied': ['nope']}),
                 'line 2: refers to no earlier entry'),
                ((b'\xff\xfe{}\n',),
                 'line 1 is not a nova-orphans journal entry (not UTF-8)')):
            self.write(*lines)
            self.assertRefused(text)
