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
"""Tables on terminals of 60, 80 and 100 columns: every command's table
of both console scripts, on the sandbox's cloud, in a pseudo-terminal
of that size (the run's standard streams), and through a pipe.

What a terminal must show (output.TableFormatter): no line wider than
it; no uuid, journal or value split over lines; a table that leaves a
column out names it below; otherwise a box per row with every column
of the table (never without the provider that tells two rows of a
consumer apart, or the run, start and restore that pick a journal).
The journals are named as ``clean`` names them, with the longest
process id a machine gives (seven digits).
"""

import fcntl
import json
import os
import pty
import re
import struct
import termios
import threading

from nova_orphans.app import journals
from nova_orphans.engine import hosts
from nova_orphans.engine import model
from nova_orphans import output
from nova_orphans.tests.functional import front_ends
from nova_orphans.tests import runners

UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                  r'[0-9a-f]{12}')
BORDER = re.compile(r'^\+-[-+]*\+$')
ONE_WORD = re.compile(r'^ *[^ |]+( \\)?$')
NOTE = re.compile(r'Not shown, for the terminal\'s width: (.*?) '
                  r'\(--verbose shows every column, -f json every field\)\.')
WIDTHS = (60, 80, 100)


def in_terminal(argv, env, columns):
    """(exit code, what a terminal of ``columns`` shows, its lines): the
    run's standard streams, and descriptors 0 to 2, are a pseudo-terminal
    of that size.
    """
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ,
                struct.pack('HHHH', 50, columns, 0, 0))
    chunks = []

    def read():
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                # EIO: every holder of the terminal's other end is gone.
                return
            if not chunk:
                return
            chunks.append(chunk)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    streams = [open(slave, mode, encoding='utf-8', closefd=False,
                    buffering=1) for mode in ('r', 'w', 'w')]
    # The descriptors too: cliff asks descriptor 1 for the width.
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    try:
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        code = runners.here(argv, env, stdin=streams[0],
                            stdout=streams[1], stderr=streams[2])[0]
    finally:
        for stream in streams:
            stream.close()
        for fd, copy in enumerate(saved):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(slave)
    reader.join(60)
    os.close(master)
    text = b''.join(chunks).decode('utf-8').replace('\r\n', '\n')
    return code, text, text.splitlines()


def drawn(lines):
    """[('table', headers) or ('box', fields)] of what ``lines`` draw."""
    found = []
    i = 0
    while i + 2 < len(lines):
        if not (BORDER.match(lines[i]) and BORDER.match(lines[i + 2])):
            i += 1
            continue
        header = [c.strip() for c in lines[i + 1].strip('|').split('|')]
        end = i + 3
        while end < len(lines) and not BORDER.match(lines[end]):
            end += 1
        if header == ['Field', 'Value']:
            # A wrapped value's lines have no field; a wrapped field's
            # next lines are indented (its spaces aside: see squeezed).
            fields = []
            for line in lines[i + 3:end]:
                field = line.split('|')[1]
                if field.startswith('  ') and field.strip():
                    fields[-1] += field.strip()
                elif field.strip():
                    fields.append(field.strip())
            found.append(('box', squeezed(fields)))
        else:
            found.append(('table', header))
        i = end + 1
    return found


def squeezed(names):
    """Headers without their spaces, as a box's wrapped ones are read."""
    return [name.replace(' ', '') for name in names]


def notes_of(text):
    """The columns each note under a table names as left out."""
    return NOTE.findall(' '.join(text.split()))


def headers(keys):
    return [output.header(k) for k in keys]


# What each kind of row shows: (short table, --long).
FINDINGS = (headers(output.columns([{'consumer': 1}], output.TABLE)),
            headers(model.FINDING_KEYS))
PROVIDERS = (headers(output.columns([{'uuid': 1}], output.TABLE)),
             headers(model.PROVIDER_KEYS))
JOURNALS = (headers(journals.JournalRun.KEYS),) * 2
HOSTS = (headers(hosts.HOST_KEYS),) * 2
# The host view: every compute host, a shape of seed 001's and a small.
HOST_VIEW = ('--group-by', 'host', '--all', '--resource', 'VCPU=30',
             '--resource', 'MEMORY_MB=741376', '--resource', 'DISK_GB=1638')


class TerminalWidthTestCase(front_ends.FrontEndsTestCase):

    def setUp(self):
        super().setUp()
        self.made = front_ends._sandbox().seed(self.placement, self.nova)
        self.env = {k: v for k, v in self.environment().items()
                    if k not in ('COLUMNS', 'LINES', 'CLIFF_FIT_WIDTH',
                                 'CLIFF_MAX_TERM_WIDTH')}
        self.journals = os.path.join(self.tmp, 'journals')
        os.mkdir(self.journals)

    def argv(self, front_end, category, action, *options):
        """The command line of either front end, no progress shown."""
        if category != 'journals':
            options += ('--no-progress',)
        if front_end == 'manage':
            return self.manage_argv(category, action, *options)
        words = {'allocations': ['allocation', 'orphan'],
                 'providers': ['resource', 'provider', 'orphan'],
                 'journals': ['allocation', 'orphan', 'journal']}[category]
        return self.openstack_argv(*(words + [action] + list(options)))

    def shown(self, runs):
        """{(front end, width, command): (exit code, text, lines)} of
        ``runs``, [(front end, width, category, action, *options)].
        """
        def one(run):
            front_end, width, *command = run
            return (front_end, width, ' '.join(command)), in_terminal(
                self.argv(front_end, *command), self.env, width)
        return dict(map(one, runs))

    def assertWhole(self, where, text, lines, width, kinds, known):
        """Within ``width``; each known uuid whole; each table's left-out
        columns named below it, each box with every column of a kind of
        ``kinds`` ([headers]).
        """
        # But a word alone on its line (a journal's path, longer than
        # the terminal: prose and commands are wrapped at their spaces).
        self.assertEqual([], [line for line in lines if len(line) > width
                              and not ONE_WORD.match(line)], where)
        for uuid in known:
            self.assertEqual(
                (text.count(uuid),) * 2,
                (text.count(uuid[:8]), text.count(uuid[-12:])),
                '%s: %s split in\n%s' % (where, uuid, text))
        tables = drawn(lines)
        self.assertNotEqual([], tables, where)
        left_out = set()
        for kind, names in tables:
            if kind == 'box':
                self.assertIn(names, [squeezed(k) for k in kinds], where)
                continue
            full = next((k for k in kinds if set(names) <= set(k)), None)
            self.assertIsNotNone(full, (where, names))
            left_out.update(set(full) - set(names))
        notes = notes_of(text)
        self.assertEqual(sorted(left_out), sorted(
            ', '.join(notes).split(', ')) if notes else [], where)
        return tables

    def test_every_table_whole(self):
        """Every command's table, short and --long, of both front ends,
        at 60, 80 and 100 columns: the listings; then at each width
        a clean and a restore of each kind by each front end (each
        restore puts the cloud back as it was, a provider tree
        included); then the journal list of their twelve runs.
        """
        both = ('manage', 'openstack')
        listings = [(f, w, c, 'list') + extra for f in both for w in WIDTHS
                    for c in ('allocations', 'providers')
                    for extra in ((), ('--long',))]
        listings += [(f, w, 'allocations', 'list') + HOST_VIEW + extra
                     for f in both for w in WIDTHS
                     for extra in ((), ('--long',)) if w == 80 or not extra]
        shown = self.shown(listings)
        paths = []
        for width in WIDTHS:
            for front_end in both:
                for category in ('allocations', 'providers'):
                    journal = os.path.join(
                        self.journals, 'journal-20261128T173641.%06dZ-'
                        '4194304.jsonl' % len(paths))
                    paths.append(journal)
                    shown.update(self.shown([
                        (front_end, width, category, action, '--journal',
                         journal) for action in ('clean', 'restore')]))
        shown.update(self.shown([
            (f, w, 'journals', 'list', '--journal-dir', self.journals) +
            extra for f in both for w in WIDTHS
            for extra in ((), ('--long',))]))
        rc, out, err = self.manage_run('journals', 'list', '--journal-dir',
                                       self.journals, '-f', 'json')
        runs = json.loads(out)
        self.assertEqual((0, 12, paths), (rc, len(runs),
                                          [r['journal'] for r in runs]), err)
        known = set(UUID.findall(''.join(t for _c, t, _l in shown.values())))
        known |= {r['run'] for r in runs}
        known |= set(self.made['nodes'].values())
        known |= {v for k, v in self.made.items() if k != 'nodes'}
        codes = {'list': 3, 'clean': 4, 'restore': 4}
        for (front_end, width, command), (code, text, lines) in sorted(
                shown.items()):
            where = '%s %s at %d columns:\n%s' % (front_end, command, width,
                                                  text)
            category, action = command.split()[:2]
            self.assertEqual(0 if category == 'journals' else codes[action],
                             code, where)
            long = '--long' in command
            kinds = {'allocations': [FINDINGS[long], PROVIDERS[long]],
                     'providers': [FINDINGS[long], PROVIDERS[long]],
                     'journals': [JOURNALS[long]]}[category]
            if '--group-by' in command:
                kinds = [HOSTS[long]]
            if action in ('clean', 'restore'):
                kinds = [k + ['Outcome'] for k in kinds]
            tables = self.assertWhole(where, text, lines, width, kinds,
                                      known)
            if category == 'journals':
                # A box per run, each journal by its whole file name.
                self.assertEqual([('box', squeezed(JOURNALS[0]))] * 12,
                                 tables, where)
                for path in paths:
                    self.assertIn('| %s ' % os.path.basename(path), text)
        # The provider tree's restore: its providers, parents first,
        # after the allocations that were on it.
        _code, text, lines = shown[(
            'openstack', 80, 'providers restore --journal ' + paths[7])]
        providers = ['UUID' in names for _kind, names in drawn(lines)]
        self.assertEqual([False, True], sorted(set(providers)), text)
        self.assertEqual(sorted(providers), providers, text)
        self.assertIn(self.made['nodes']['devstack4'], text)
        # The listing left out, and said so, what the terminal could not
        # show; at 60 columns not even the columns kept fit: a box per
        # row, with every column. The same from both.
        how = {80: 'Type, Host, Resources, Action',
               100: 'Type, Host, Resources'}
        for front_end in both:
            for width in WIDTHS:
                _code, text, lines = shown[(front_end, width,
                                            'allocations list')]
                self.assertEqual([how[width]] if width in how else [],
                                 notes_of(text))
                self.assertEqual(width == 60, all(
                    kind == 'box' for kind, _names in drawn(lines)))
        # The host view's table, a row per host, keeps the host (and at
        # 100 columns what orphans hold there, bandwidth included); its
        # summary is the same from both.
        every = 'Provider, Free, Free after clean, Held'
        hosts_how = {60: every, 80: every,
                     100: 'Provider, Free, Free after clean'}
        summaries = set()
        for front_end in both:
            for width in WIDTHS:
                _code, text, lines = shown[(
                    front_end, width, 'allocations list ' +
                    ' '.join(HOST_VIEW))]
                self.assertEqual([hosts_how[width]], notes_of(text))
                self.assertEqual(['table'], [kind for kind, names
                                             in drawn(lines)], text)
                summaries.add(' '.join(text[text.index('A clean would'):
                                            text.index('Next:')].split()))
        self.assertEqual(1, len(summaries), summaries)

    def test_pipes_keep_cliffs_table(self):
        """No terminal: every column of the short table, nothing left
        out, as cliff prints it.
        """
        for front_end in ('manage', 'openstack'):
            rc, out, err = self.run_one(self.argv(front_end, 'allocations',
                                                  'list'))
            self.assertEqual(3, rc, err)
            self.assertNotIn('Not shown', out + err)
            header = [line for line in out.splitlines()
                      if line.startswith('| Consumer')]
            self.assertEqual(
                ['Consumer', 'Type', 'Provider', 'Host', 'Reason', 'Action',
                 'Resources'],
                [h.strip() for h in header[0].strip('|').split('|')],
                front_end)
