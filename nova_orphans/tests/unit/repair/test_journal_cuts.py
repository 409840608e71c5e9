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
exactly that, from journals the real writer wrote.
"""

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import time

import fixtures
from oslotest import base

from nova_orphans import exception
from nova_orphans.repair import journal

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

    def test_run_starts_with_a_header_naming_placement(self):
        self.run_(['a', 'b'], pad=0)
        first = json.loads(self.lines()[0])
        self.assertEqual(
            {'command': 'clean', 'placement': ENDPOINT,
             'pid': os.getpid(), 'version': 2},
            {k: first[k] for k in ('command', 'placement', 'pid',
                                   'version')})
        self.assertIn('run', first)
        contents = journal.load(self.path)
        self.assertEqual([], contents.warnings)
        self.assertEqual(['a', 'b'], consumers(contents.entries))
        run, = contents.runs
        self.assertEqual((ENDPOINT, ['a', 'b']),
                         (run.placement, consumers(run.entries)))

    def test_killed_batch_then_same_path_rerun(self):
        """The defect: a re-run appended onto the cut line, and the whole
        journal was refused. Now the re-run starts a fresh line and
        records the cut; both runs' entries are read, the cut line is
        reported once, with its number.
        """
        self.run_(['a'], pad=0)
        self.run_(['b%02d' % n for n in range(20)])
        cut_line = self.kill_at(2 * PAGE)
        # The whole entries before the cut, and a warning, once.
        contents = journal.load(self.path)
        self.assertEqual(['a'] + ['b%02d' % n for n in range(cut_line - 4)],
                         consumers(contents.entries))
        self.assertEqual(
            ['WARNING: journal %s, line %d: cut short when the run writing '
             'it was killed; skipped (a change is only sent once its whole '
             'entry is on disk).' % (self.path, cut_line)],
            contents.warnings)
        # The same-path re-run.
        self.run_(['c0', 'c1'], pad=0)
        lines = self.lines()
        self.assertEqual(b'', lines[-1])
        mark = json.loads(lines[cut_line])
        self.assertEqual(2 * PAGE, mark['cut'])
        self.assertIn('run', json.loads(lines[cut_line + 1]))
        contents = journal.load(self.path)
        self.assertEqual(
            ['a'] + ['b%02d' % n for n in range(cut_line - 4)] +
            ['c0', 'c1'], consumers(contents.entries))
        self.assertEqual(1, len(contents.warnings))
        self.assertIn('line %d: cut short' % cut_line, contents.warnings[0])
        self.assertEqual(3, len(contents.runs))
        # A third run: nothing more to report, nothing doubled.
        self.run_(['d'], pad=0)
        contents = journal.load(self.path)
        self.assertEqual(1, len(contents.warnings))
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
        self.assertEqual(1, len(contents.warnings))
        self.assertIn('line 2: cut short', contents.warnings[0])
        self.run_(['next'], pad=0)
        contents = journal.load(self.path)
        self.assertEqual(['next'], consumers(contents.entries))
        self.assertEqual(1, len(contents.warnings))

    def test_only_line_cut_in_a_version_1_journal(self):
        line = json.dumps(dict(entry('big', pad=2 * PAGE), id='x',
                               version=1, time='t'), sort_keys=True)
        with open(self.path, 'w') as f:
            f.write(line[:PAGE])
        contents = journal.load(self.path)
        self.assertEqual(([], []), (contents.entries, contents.runs))
        self.assertIn('line 1: cut short', contents.warnings[0])

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
        self.assertEqual(['a'] + ['b%02d' % n for n in range(first - 4)] +
                         ['d'], consumers(contents.entries))
        self.assertEqual(2, len(contents.warnings))
        self.assertIn('line %d: cut short' % first, contents.warnings[0])
        self.assertIn('line %d: cut short' % second, contents.warnings[1])

    def test_glued_by_an_earlier_release(self):
        """A journal the previous release left: its re-run's first entry
        glued onto the cut line. The cut part is reported, the glued
        entry and the rest of that run read.
        """
        self.run_(['a'], pad=0)
        self.run_(['b%02d' % n for n in range(20)])
        cut_line = self.kill_at(2 * PAGE)
        old = [dict(entry(c, pad=0), id='id-' + c, version=1, time='t')
               for c in ('c0', 'c1')]
        with open(self.path, 'a') as f:
            f.write(''.join(json.dumps(e, sort_keys=True) + '\n'
                            for e in old))
            f.write(json.dumps({'not_applied': 'id-c1', 'reason': 'x',
                                'version': 1, 'time': 't'}) + '\n')
        contents = journal.load(self.path)
        self.assertEqual(['a'] + ['b%02d' % n for n in range(cut_line - 4)] +
                         ['c0', 'c1'], consumers(contents.entries))
        self.assertEqual([None, False], [e.get('applied')
                                         for e in contents.entries[-2:]])
        self.assertEqual(
            ['WARNING: journal %s, line %d: starts with an entry cut short '
             'when the run writing it was killed (skipped: a change is '
             'only sent once its whole entry is on disk); the entry glued '
             'after it is read.' % (self.path, cut_line)],
            contents.warnings)

    def test_write_failing_halfway_then_the_next_batch(self):
        """A full file system: part of a batch reached the file, the
        batch failed (its change is never sent), and the run goes on
        with the next one on a fresh line.
        """
        j = journal.Journal(self.path, placement=ENDPOINT)
        j.record(entry('a', pad=0))
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
        j.record(entry('c', pad=0))
        j.close()
        contents = journal.load(self.path)
        # The batch's lines that reached the file whole are read (their
        # change was never sent: restore finds them as before).
        with open(self.path, 'rb') as f:
            written = f.read()
        cut = written[:written.index(b'"cut"')].count(b'\n')
        self.assertEqual(['a'] + ['b%02d' % n for n in range(cut - 3)] +
                         ['c'], consumers(contents.entries))
        self.assertEqual(1, len(contents.warnings))
        self.assertIn('line %d: cut short' % cut, contents.warnings[0])

    def test_whole_line_missing_only_its_newline(self):
        self.run_(['a', 'b'], pad=0)
        with open(self.path, 'r+b') as f:
            f.truncate(os.path.getsize(self.path) - 1)
        self.run_(['c'], pad=0)
        contents = journal.load(self.path)
        self.assertEqual((['a', 'b', 'c'], []),
                         (consumers(contents.entries), contents.warnings))
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
        self.assertEqual(1, len(contents.warnings))
        self.assertIn('line %d: cut short' % cut_line, contents.warnings[0])

    def test_directory_is_fsynced_when_the_journal_is_created(self):
        synced = []
        real = os.fsync

        def fsync(fd):
            synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
            real(fd)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.repair.journal.os.fsync', fsync))
        self.run_(['a'])
        self.assertEqual([True, False], synced)
        self.run_(['b'])
        self.assertEqual([True, False, False], synced)

    def test_one_not_applied_line_per_refused_request(self):
        j = journal.Journal(self.path)
        ids = j.record_many([entry('c%03d' % n) for n in range(100)])
        j.not_applied_many(ids, 'consumer generation conflict')
        j.close()
        # Header, 100 entries, one mark.
        self.assertEqual(102, len(self.lines()) - 1)
        contents = journal.load(self.path)
        self.assertEqual({(False, 'consumer generation conflict')},
                         {(e['applied'], e['reason'])
                          for e in contents.entries})

    def test_version_1_journal_is_read(self):
        lines = [dict(entry(c, 0), id='id-' + c, version=1, time='t')
                 for c in ('a', 'b')]
        lines.append({'not_applied': 'id-a', 'reason': 'r', 'version': 1,
                      'time': 't'})
        with open(self.path, 'w') as f:
            f.write(''.join(json.dumps(e) + '\n' for e in lines))
        contents = journal.load(self.path)
        self.assertEqual([(False, 'r'), (None, None)],
                         [(e.get('applied'), e.get('reason'))
                          for e in contents.entries])
        run, = contents.runs
        self.assertIsNone(run.placement)


# Writes one batch of 1,000 entries of 16 KiB in one write(2).
_CHILD = """
import sys
from nova_orphans.repair import journal
j = journal.Journal(sys.argv[1], placement=sys.argv[2])
j.record_many([{'action': 'delete_consumer',
                'findings': [{'details': 'x' * 16384}],
                'consumers': {'k%04d' % n: {'before': {}, 'after': {}}}}
               for n in range(1000)])
"""


class RealKillTestCase(base.BaseTestCase):
    """The cut made by a real SIGKILL inside the journal's write(2)."""

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def kill_inside_the_write(self, path):
        """Start a run writing one big batch; SIGKILL it as soon as the
        batch's bytes start to reach the file. Returns the file's bytes.
        """
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        child = subprocess.Popen([sys.executable, '-c', _CHILD, path,
                                  ENDPOINT], env=env)
        self.addCleanup(child.wait)
        deadline = time.monotonic() + 60
        while child.poll() is None and time.monotonic() < deadline:
            if os.path.exists(path) and os.path.getsize(path):
                break
            time.sleep(0.0002)
        child.send_signal(signal.SIGKILL)
        child.wait()
        with open(path, 'rb') as f:
            return f.read()

    def test_sigkill_inside_the_write_then_same_path_rerun(self):
        path = os.path.join(self.dir, 'j.jsonl')
        # The kernel may finish the copy before the signal lands; it
        # never did in practice, but a few tries make sure.
        for _attempt in range(5):
            data = self.kill_inside_the_write(path)
            if not data.endswith(b'\n'):
                break
            os.unlink(path)
        else:
            self.fail('the write always finished before the SIGKILL')
        # Cut at a page boundary, inside a line.
        self.assertEqual(0, len(data) % PAGE)
        cut = data.count(b'\n') + 1
        whole = cut - 2
        j = journal.Journal(path, placement=ENDPOINT)
        j.record(entry('rerun'))
        j.close()
        contents = journal.load(path)
        self.assertEqual(
            ['k%04d' % n for n in range(whole)] + ['rerun'],
            consumers(contents.entries))
        self.assertEqual(
            ['WARNING: journal %s, line %d: cut short when the run writing '
             'it was killed; skipped (a change is only sent once its whole '
             'entry is on disk).' % (path, cut)], contents.warnings)
        with open(path, 'rb') as f:
            lines = f.read().split(b'\n')
        self.assertEqual(len(data), json.loads(lines[cut])['cut'])


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

    def whole(self, consumer):
        return (json.dumps(dict(entry(consumer), version=2),
                           sort_keys=True) + '\n').encode()

    def test_cut_line_in_the_middle_of_a_run(self):
        cut = self.whole('b')[:100] + b'\n'
        self.write(self.whole('a'), cut, self.whole('c'))
        self.assertRefused('line 2 is cut short, yet the run that wrote it '
                           'went on after it: the journal is damaged')

    def test_line_that_is_not_an_entry(self):
        for lines, text in (
                ((self.whole('a'), b'{not json\n', self.whole('c')),
                 'line 2 is not a nova-orphans journal entry (Expecting '
                 'property name enclosed in double quotes: line 1 column 2 '
                 '(char 1))'),
                # Not JSON, even as the last line: not a cut entry.
                ((self.whole('a'), b'this is not JSON'),
                 'line 2 is not a nova-orphans journal entry (Expecting '
                 'value: line 1 column 1 (char 0))'),
                ((b'{"hello": "world"}\n',),
                 'line 1 is not a nova-orphans journal entry (version '
                 'None; this release reads versions 1, 2)'),
                ((self.whole('a'), b'{"version": 3, "consumers": {}}\n'),
                 'line 2 is not a nova-orphans journal entry (version 3; '
                 'this release reads versions 1, 2)'),
                ((b'{"version": 2, "run": "x"}\n', b'[1, 2]\n'),
                 'line 2 is not a nova-orphans journal entry (not a JSON '
                 'object)'),
                ((b'{"version": 2, "not_applied": ["nope"]}\n',),
                 'line 1: refers to no earlier entry'),
                ((b'\xff\xfe{}\n',),
                 'line 1 is not a nova-orphans journal entry (not UTF-8)')):
            self.write(*lines)
            self.assertRefused(text)
