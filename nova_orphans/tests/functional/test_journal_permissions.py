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
"""Journals other users could write, refused by both console scripts.

A clean refuses a --journal in a directory others can write before it
reads anything; a restore refuses a journal that a group with another
member than the run's user (here, one the group database does not
know) can write before it reads an entry. One line each, exit code
127, placement and the journal as they were. The unit tests
(unit/repair/test_journal.py) cover every mode, owner, group and
directory.
"""

import json
import os

from nova_orphans import exit_codes
from nova_orphans.tests.functional import front_ends
from nova_orphans.tests.functional import processes

# No group of this machine.
OTHER_GROUP = 424242


class JournalPermissionsTestCase(front_ends.FrontEndsTestCase):

    def setUp(self):
        super().setUp()
        self.cloud_state = processes.Cloud(self, deleted=1, strangers=1,
                                           evacuated=1, returned=0, live=1)
        self.before = self.cloud_state.state()

    def refused(self, result, line):
        code, out, err = result
        self.assertEqual((exit_codes.INVALID_INPUT, '', 'ERROR: %s\n' % line),
                         (code, out, err))

    def check(self, run):
        """``run(category, action, *argv)`` of one front end."""
        if os.geteuid() != 0:
            self.skipTest('only root can give a journal to another group')
        shared = os.path.join(self.tmp, 'shared')
        os.mkdir(shared)
        os.chmod(shared, 0o777)
        path = os.path.join(shared, 'journal.jsonl')
        self.refused(
            run('allocations', 'clean', '--journal', path),
            'Journal %(path)s: the directory %(dir)s can be written by '
            'other users (mode 0777), who could replace the journal: run '
            '"chmod go-w %(dir)s" or write journals in a directory of your '
            'own' % {'path': path, 'dir': shared})
        self.assertEqual([], os.listdir(shared))
        self.assertEqual(self.before, self.cloud_state.state())

        path = os.path.join(self.tmp, 'journal.jsonl')
        code, out, err = run('allocations', 'clean', '--journal', path)
        self.assertEqual(exit_codes.REPAIRED, code, err)
        self.assertEqual({'done'}, {r['outcome'] for r in json.loads(out)})
        repaired = self.cloud_state.state()
        self.assertEqual(self.cloud_state.repaired(self.before), repaired)

        os.chown(path, -1, OTHER_GROUP)
        os.chmod(path, 0o660)
        with open(path, 'rb') as f:
            written = f.read()
        self.refused(
            run('allocations', 'restore', '--journal', path),
            'Journal %(path)s: can be written by the group %(group)s (mode '
            '0660), which has other members than root, who could have '
            'rewritten it: check it and run "chmod g-w %(path)s"' % {
                'path': path, 'group': OTHER_GROUP})
        self.assertEqual(repaired, self.cloud_state.state())
        with open(path, 'rb') as f:
            self.assertEqual(written, f.read())

    def test_nova_orphans_manage(self):
        self.check(lambda *argv: self.manage_run(*argv, '--format', 'json'))

    def test_openstack(self):
        words = {'allocations': ('allocation', 'orphan')}
        self.check(lambda category, action, *argv: self.openstack_run(
            *words[category], action, *argv, '-f', 'json'))
