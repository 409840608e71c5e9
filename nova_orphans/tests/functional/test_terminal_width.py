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
"""Tables on terminals of 80 and 100 columns: the sandbox's cloud listed
by both console scripts in a pseudo-terminal of that size, and through a
pipe.
"""

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import termios

from nova_orphans.tests.functional import front_ends

UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                  r'[0-9a-f]{12}')
# A run of hex digits and dashes: a uuid, or the part of one that a
# table cell split over lines shows.
HEX_RUN = re.compile(r'[0-9a-f]*-[0-9a-f-]*')


def cut_uuids(line):
    """The parts of uuids on ``line`` that are not whole uuids."""
    return [run for run in HEX_RUN.findall(line)
            if sum(c != '-' for c in run) >= 4 and not UUID.fullmatch(run)]


def in_terminal(argv, env, columns):
    """(exit code, what a terminal of ``columns`` shows, its lines)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ,
                struct.pack('HHHH', 50, columns, 0, 0))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                            env=env, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            # EIO: every holder of the terminal's other end is gone.
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    code = proc.wait(timeout=180)
    text = b''.join(chunks).decode('utf-8').replace('\r\n', '\n')
    return code, text, text.splitlines()


class TerminalWidthTestCase(front_ends.FrontEndsTestCase):

    def setUp(self):
        super().setUp()
        front_ends._sandbox().seed(self.placement, self.nova)
        self.env = {k: v for k, v in self.environment().items()
                    if k not in ('COLUMNS', 'LINES', 'CLIFF_FIT_WIDTH',
                                 'CLIFF_MAX_TERM_WIDTH')}

    def commands(self):
        return {
            'manage': self.manage_argv('allocations', 'list',
                                       '--no-progress'),
            'openstack': self.openstack_argv('allocation', 'orphan', 'list',
                                             '--no-progress')}

    def test_uuids_whole_and_lines_within_the_width(self):
        rc, out, err = self.manage_run('allocations', 'list', '--format',
                                       'json')
        self.assertEqual(3, rc, err)
        consumers = {r['consumer'] for r in json.loads(out)}
        self.assertEqual(5, len(consumers))
        notes = {}
        for columns in (80, 100):
            for name, argv in self.commands().items():
                code, text, lines = in_terminal(argv, self.env, columns)
                where = '%s at %d columns:\n%s' % (name, columns, text)
                self.assertEqual(3, code, where)
                self.assertEqual(
                    [], [line for line in lines if len(line) > columns],
                    where)
                self.assertEqual(
                    [], [line for line in lines if cut_uuids(line)], where)
                self.assertEqual(consumers, set(UUID.findall(text)) &
                                 consumers, where)
                notes[name, columns] = re.findall(
                    r'^Not shown.*?field\)\.$', text, re.M | re.S)
        # What each left out, and how to see it.
        how = ' (--verbose shows every column, -f json every field).'
        for name in ('manage', 'openstack'):
            self.assertEqual(
                ['Not shown, for the terminal\'s width: Type, Host, '
                 'Resources, Action' + how],
                [' '.join(n.split()) for n in notes[name, 80]])
            self.assertEqual(
                ['Not shown, for the terminal\'s width: Type, Host, '
                 'Resources' + how],
                [' '.join(n.split()) for n in notes[name, 100]])

    def test_pipes_keep_cliffs_table(self):
        """No terminal: every column of the short table, nothing left
        out, as cliff prints it.
        """
        for name, argv in self.commands().items():
            rc, out, err = self.run_one(argv)
            self.assertEqual(3, rc, err)
            self.assertNotIn('Not shown', out + err)
            header = [line for line in out.splitlines()
                      if line.startswith('| Consumer')]
            self.assertEqual(
                ['Consumer', 'Type', 'Provider', 'Host', 'Reason', 'Action',
                 'Resources'],
                [h.strip() for h in header[0].strip('|').split('|')], name)
