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

import threading
import types

import fixtures
from oslotest import base

from nova_orphans.readers import scatter


class GatherTestCase(base.BaseTestCase):

    def test_every_task_at_once(self):
        started = threading.Barrier(3, timeout=10)

        def task(value):
            # Each waits for the others: run one after another, they
            # would never all get here.
            started.wait()
            return value
        self.assertEqual(
            {'a': 1, 'b': 2, 'c': 3},
            scatter.gather({key: ('cell-%s' % key,
                                  lambda value=value: task(value))
                            for key, value in (('a', 1), ('b', 2),
                                               ('c', 3))}, 10))

    def test_hung_tasks_cost_one_timeout_and_their_late_answer_is_lost(self):
        release = threading.Event()
        late = []

        def hung(key):
            release.wait(30)
            late.append(key)
            return 'late'

        # A clock that moves only while gather waits for a thread that
        # is still running: the time it waits, whatever the machine's
        # load.
        clock = types.SimpleNamespace(now=1000.0)
        join = threading.Thread.join

        def waiting(thread, timeout=None):
            if thread.name.startswith('cell-hung'):
                clock.now += timeout
            else:
                join(thread, 10)
        with fixtures.MonkeyPatch(
                'nova_orphans.readers.scatter.time',
                types.SimpleNamespace(monotonic=lambda: clock.now)), \
                fixtures.MonkeyPatch('threading.Thread.join', waiting):
            results = scatter.gather(
                {'ok': ('cell-ok', lambda: 'read'),
                 'hung1': ('cell-hung1', lambda: hung('hung1')),
                 'hung2': ('cell-hung2', lambda: hung('hung2'))}, 0.5)
        self.assertEqual({'ok': 'read', 'hung1': scatter.TIMED_OUT,
                          'hung2': scatter.TIMED_OUT}, results)
        # Both hung cells together: one timeout, not one each.
        self.assertEqual(1000.5, clock.now)
        release.set()
        for thread in threading.enumerate():
            if thread.name.startswith('cell-hung'):
                thread.join(10)
        self.assertEqual(['hung1', 'hung2'], sorted(late))
        self.assertEqual(scatter.TIMED_OUT, results['hung1'])
