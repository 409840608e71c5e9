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
"""``providers clean`` killed with SIGKILL between its allocation repairs
and its provider deletes (see test_crash.py for the method).

A deleted compute node's tree, a root and a child, holds one unknown
consumer. clean repairs the consumer, then deletes the child, then the
root. It is killed while the proxy holds the child's DELETE: before it
is sent (dropped: never sent), on its way (forwarded after the kill),
or after placement applied it. The operator's recovery: ``providers
clean`` again finishes the job; restoring the rerun's journal, then the
killed run's, puts placement back exactly as it was (generations
aside), the killed run's ending 11: its journal has no end record.
"""

import json
import os

from nova_orphans.repair import journal as journal_mod
from nova_orphans.tests.functional import processes
from nova_orphans.tests.functional import test_providers
from nova_orphans.tests import runners


class ProviderCrashTestCase(test_providers.ProvidersTestCase):

    def setUp(self):
        super().setUp()
        self.proxy = self.useFixture(
            processes.HoldingProxy(self.placement.endpoint))
        self.conf_file = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'held.conf'), self.proxy.endpoint,
            extra={'nova_orphans': {'state_path': self.state_path,
                                    'cell_timeout': '20'},
                   'placement': {'timeout': '30'}})
        self.root, self.agent, self.pf = self.dead_tree()
        self.before = self.placement.providers_state()
        self.killed = os.path.join(self.tmp, 'killed.jsonl')
        self.rerun = os.path.join(self.tmp, 'rerun.jsonl')

    def argv(self, *argv):
        return runners.manage_argv(*argv, '--format', 'json',
                                   conf_file=self.conf_file)

    def kill_at_child_delete(self, when, forward):
        hold = self.proxy.hold('DELETE', '/resource_providers/%s' % self.pf,
                               when=when)
        proc = runners.start(self.argv('providers', 'clean',
                                       '--journal', self.killed))
        hold.wait(proc)
        entries = journal_mod.load(self.killed).entries
        # The consumer was repaired, and the child's record is on disk
        # before its DELETE is sent.
        self.assertEqual(['delete_consumer', 'delete_provider'],
                         [e['action'] for e in entries])
        self.assertEqual(self.pf, entries[1]['provider']['uuid'])
        self.assertRanCleanly((proc.returncode, '', processes.kill(proc)))
        hold.release(forward)
        self.proxy.wait_idle()

    def recover(self, child_deleted):
        providers, _allocs = self.placement.providers_state()
        self.assertEqual(not child_deleted, self.pf in providers)
        self.assertIn(self.root, providers)
        rc, out, err = runners.run(self.argv(
            'providers', 'clean', '--journal', self.rerun))
        self.assertEqual(4, rc, err)
        done = [(r['uuid'], r['outcome']) for r in json.loads(out)]
        self.assertEqual(
            [(self.root, 'done'), (self.agent, 'done'),
             (self.pf, 'done')] if not child_deleted else
            [(self.root, 'done'), (self.agent, 'done')], done)
        self.assertEqual([self.live],
                         list(self.placement.providers_state()[0]))
        # The killed run's journal has no end record: restored all the
        # same, and never called whole (11).
        for journal, code in ((self.rerun, 4), (self.killed, 11)):
            rc, out, err = runners.run(self.argv(
                'allocations', 'restore', '--journal', journal))
            self.assertEqual(code, rc, err)
        self.assertIn('has no end record: the run was killed', err)
        self.assertEqual(self.before, self.placement.providers_state())

    def test_killed_before_delete_sent(self):
        self.kill_at_child_delete('before', forward=False)
        self.recover(child_deleted=False)

    def test_killed_while_delete_on_its_way(self):
        self.kill_at_child_delete('before', forward=True)
        self.recover(child_deleted=True)

    def test_killed_after_delete_applied(self):
        self.kill_at_child_delete('after', forward=True)
        self.recover(child_deleted=True)

    # Killed mid-retry: the DELETE's answer lost.

    def kill_at(self, hold):
        proc = runners.start(self.argv('providers', 'clean',
                                       '--journal', self.killed))
        hold.wait(proc)
        self.assertRanCleanly((proc.returncode, '', processes.kill(proc)))
        hold.release(forward=False)
        self.proxy.wait_idle()

    def test_killed_reading_back_a_lost_delete(self):
        """placement deleted the child, its answer was lost; killed while
        the provider is read back to learn whether it is gone.
        """
        url = '/resource_providers/%s' % self.pf
        self.proxy.inject('DELETE', url, drop='after')
        self.kill_at(self.proxy.hold(
            'GET', url, match=lambda _body: bool(self.proxy.requests(
                'DELETE', url))))
        self.recover(child_deleted=True)

    def test_killed_sending_a_delete_again(self):
        """The child's DELETE never reached placement; read back, the
        child is there as journaled; killed as the DELETE is sent again.
        """
        url = '/resource_providers/%s' % self.pf
        self.proxy.inject('DELETE', url, drop=True)
        self.kill_at(self.proxy.hold('DELETE', url))
        self.assertEqual(2, len(self.proxy.requests('DELETE', url)))
        self.recover(child_deleted=False)

    # The tests of the base class run once, there.
    for name in dir(test_providers.ProvidersTestCase):
        if name.startswith('test_'):
            locals()[name] = None
    del name
