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
"""``journals list|prune`` of both front ends, on journals real cleans and
restores wrote.
"""

import json
import os
import shutil
import time

from nova_orphans.tests.functional import base
from nova_orphans.tests import runners

DAY = 86400


class JournalsTestCase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.host1 = self.add_node('host1')
        self.gone = []
        for _i in range(2):
            vm = self.nova.add_instance('cell1', host='host1', node='host1',
                                        vm_state='error')
            self.allocate(vm, self.host1)
            self.nova.force_delete_instance('cell1', vm)
            self.gone.append(vm)
        self.dir = os.path.join(self.tmp, 'journals')
        os.mkdir(self.dir)

    def manage(self, *argv):
        return self.assertRanCleanly(runners.manage(
            *argv, conf_file=self.conf_file))

    def openstack(self, *argv):
        """``openstack allocation orphan journal ARGV`` with no cloud:
        no clouds.yaml, no OS_* variable, no credentials.
        """
        done = runners.openstack(
            'allocation', 'orphan', 'journal', *argv,
            env=runners.environment(OS_CLIENT_CONFIG_FILE=os.path.join(
                self.tmp, 'none.yaml')))
        return self.assertRanCleanly(done)

    def clean(self, name, *argv):
        path = os.path.join(self.dir, name)
        code, _out, err = self.manage('allocations', 'clean', '--journal',
                                      path, *argv)
        return code, path, err

    def listed(self, front_end):
        code, out, err = front_end('list', '--journal-dir', self.dir,
                                   '-f', 'json')
        self.assertEqual((0, ''), (code, err))
        return json.loads(out)

    def test_list_tells_restored_runs(self):
        self.assertEqual(3, self.clean('journal-1.jsonl', '--max-count',
                                       '1')[0])
        code, second, _err = self.clean('journal-2.jsonl')
        self.assertEqual(4, code)
        first = os.path.join(self.dir, 'journal-1.jsonl')
        code, _out, err = self.manage('allocations', 'restore',
                                      '--journal', first)
        self.assertEqual(4, code, err)
        for front_end in (self.manage_journals, self.openstack):
            rows = self.listed(front_end)
            self.assertEqual(
                [(first, 'clean', 'completed', 1, 0, True,
                  self.placement.endpoint, 'nova-orphans-manage'),
                 (second, 'clean', 'completed', 1, 0, False, None, None)],
                [(r['journal'], r['command'], r['ended'], r['entries'],
                  r['not_applied'], r['restored'] is not None,
                  r['restored_into'], r['restored_by'])
                 for r in rows])
            self.assertEqual(['journal', 'run', 'command', 'cloud',
                              'placement', 'host', 'started', 'ended',
                              'entries', 'not_applied', 'restored',
                              'restored_into', 'restored_by'],
                             list(rows[0]))
        # A restore of a restored journal still reads its entries.
        code, out, err = self.manage('allocations', 'restore', '--journal',
                                     first, '--format', 'json')
        self.assertEqual((0, ['skipped: already as before']),
                         (code, [r['outcome'] for r in json.loads(out)]),
                         err)

    def manage_journals(self, *argv):
        return self.manage('journals', *argv)

    def test_both_front_ends_find_the_same_journals_by_default(self):
        """No state_path, no --journal-dir: both front ends' journal
        directory (here $XDG_STATE_HOME/nova-orphans, as the base class
        sets it), and openstack lists it without a cloud or credentials.
        A --cloud that matches nothing says so.
        """
        conf = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'default.conf'), self.placement.endpoint)
        code, _out, err = runners.manage('allocations', 'clean',
                                         conf_file=conf)
        self.assertEqual(4, code, err)
        directory = os.path.join(os.environ['XDG_STATE_HOME'],
                                 'nova-orphans')
        # The journal, beside the kept reads of the clean's scan.
        path, = [os.path.join(directory, name)
                 for name in os.listdir(directory)
                 if not name.startswith('kept-reads-')]
        for front_end in (lambda *a: runners.manage(
                'journals', *a, conf_file=conf),
                self.openstack):
            code, out, err = front_end('list', '-f', 'json')
            self.assertEqual((0, ''), (code, err))
            self.assertEqual([(path, conf, self.placement.endpoint)],
                             [(r['journal'], r['cloud'], r['placement'])
                              for r in json.loads(out)])
            code, out, err = front_end('list', '--cloud', 'elsewhere')
            self.assertEqual(
                (0, 'No run against cloud elsewhere in %s; its 1 run(s) '
                    'are against: %s.\n' % (directory, conf), ''),
                (code, out, err))

    def test_prune_by_age(self):
        code, old, _err = self.clean('journal-old.jsonl')
        self.assertEqual(4, code)
        kept = os.path.join(self.dir, 'journal-new.jsonl')
        shutil.copy(old, kept)
        elsewhere = os.path.join(self.dir, 'mine.jsonl')
        shutil.copy(old, elsewhere)
        ten_days_ago = time.time() - 10 * DAY
        for path in (old, elsewhere):
            os.utime(path, (ten_days_ago, ten_days_ago))
        for front_end in (self.manage_journals, self.openstack):
            code, out, err = front_end('prune', '--journal-dir', self.dir,
                                       '--older-than', '7', '--dry-run',
                                       '-f', 'json')
            # 3: it would act, as every --dry-run says.
            self.assertEqual((3, [(old, 'skipped: dry run')]),
                             (code, [(r['journal'], r['outcome'])
                                     for r in json.loads(out)]), err)
        self.assertTrue(os.path.exists(old))
        code, out, err = self.openstack('prune', '--journal-dir', self.dir,
                                        '--older-than', '7', '-f', 'json')
        self.assertEqual((0, [(old, 'done')]),
                         (code, [(r['journal'], r['outcome'])
                                 for r in json.loads(out)]), err)
        # Nothing left to remove: 0, dry run or not.
        for front_end in (self.manage_journals, self.openstack):
            code, out, err = front_end('prune', '--journal-dir', self.dir,
                                       '--older-than', '7', '--dry-run',
                                       '-f', 'json')
            self.assertEqual((0, []), (code, json.loads(out)), err)
        # Only clean's own journal files; the new one stays.
        self.assertEqual(sorted(['journal-new.jsonl', 'mine.jsonl']),
                         sorted(os.listdir(self.dir)))
        code, _out, err = self.manage('journals', 'prune', '--journal-dir',
                                      self.dir, '--older-than', '0')
        # The option spec's bound (app/options.py), as every option's.
        self.assertEqual((127, 'ERROR: Invalid input: --older-than must be '
                               'at least 1\n'), (code, err))
