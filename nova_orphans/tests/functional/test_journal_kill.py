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
"""A journal's writer killed by a real SIGKILL inside its write(2).

The cuts such a kill leaves, made exactly from journals the real writer
wrote, are the unit tests' (tests/unit/repair/test_journal_cuts.py);
this one kills a process for real.
"""

import json
import os
import signal
import subprocess
import sys
import time

import fixtures
from oslotest import base

from nova_orphans.repair import journal
from nova_orphans.tests.unit.repair import test_journal_cuts as cuts


# Writes one batch of 1,000 entries of 16 KiB in one write(2).
_CHILD = """
import sys
from nova_orphans.repair import journal
from nova_orphans.repair import journal_verify
from nova_orphans.repair import restore
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
                                  cuts.ENDPOINT], env=env)
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
        self.assertEqual(0, len(data) % cuts.PAGE)
        cut = data.count(b'\n') + 1
        whole = cut - 2
        j = journal.Journal(path, placement=cuts.ENDPOINT)
        j.record(cuts.entry('rerun'))
        j.close()
        contents = journal.load(path)
        self.assertEqual(
            ['k%04d' % n for n in range(whole)] + ['rerun'],
            cuts.consumers(contents.entries))
        killed, = contents.unended
        self.assertEqual((1, cut, whole), (killed.first_line,
                                           killed.last_line,
                                           len(killed.entries)))
        with open(path, 'rb') as f:
            lines = f.read().split(b'\n')
        self.assertEqual(len(data), json.loads(lines[cut + 1])['cut'])
