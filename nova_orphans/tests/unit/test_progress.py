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
import io
import os
import signal
import threading

from oslotest import base

from nova_orphans import exit_codes
from nova_orphans import interrupt
from nova_orphans import progress


class Clock:

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class ProgressTestCase(base.BaseTestCase):

    def run_stages(self, **kw):
        out, clock = io.StringIO(), Clock()
        p = progress.Progress(out, clock=clock, **kw)
        p.stage('providers read', 3)
        for _n in range(3):
            clock.now += 1
            p()
        p.stage('consumers checked', 2)
        clock.now += 1
        p(2)
        p.finish()
        return out.getvalue()

    def test_lines(self):
        self.assertEqual('providers read: 1/3\nproviders read: 2/3\n'
                         'providers read: 3/3\nproviders read: 3/3\n'
                         'consumers checked: 2/2\nconsumers checked: 2/2\n',
                         self.run_stages())

    def test_terminal_rewrites_one_line_per_stage(self):
        self.assertEqual(
            '\rproviders read: 1/3\x1b[K\rproviders read: 2/3\x1b[K'
            '\rproviders read: 3/3\x1b[K\rproviders read: 3/3\x1b[K\n'
            '\rconsumers checked: 2/2\x1b[K\rconsumers checked: 2/2\x1b[K\n',
            self.run_stages(tty=True))

    def test_quiet_for_the_first_seconds(self):
        self.assertEqual(
            '\rproviders read: 3/3\x1b[K\rproviders read: 3/3\x1b[K\n'
            '\rconsumers checked: 2/2\x1b[K\rconsumers checked: 2/2\x1b[K\n',
            self.run_stages(tty=True, delay=2.5))
        self.assertEqual('', self.run_stages(tty=True, delay=5))

    def test_abandon_ends_the_line(self):
        out, clock = io.StringIO(), Clock()
        p = progress.Progress(out, clock=clock, tty=True)
        p.stage('consumers repaired', 10)
        clock.now += 1
        p(4)
        p.abandon()
        p.finish()
        self.assertEqual('\rconsumers repaired: 4/10\x1b[K\n', out.getvalue())

    def test_is_terminal(self):
        self.assertFalse(progress.is_terminal(io.StringIO()))
        self.assertFalse(progress.is_terminal(object()))


class StopTestCase(base.BaseTestCase):
    """The handler raises while nothing is written, then only flags."""

    def kill(self, signum):
        os.kill(os.getpid(), signum)

    def test_raises_while_reading(self):
        stop = interrupt.Stop()
        with stop.handled():
            e = self.assertRaises(interrupt.Interrupted, self.kill,
                                  signal.SIGTERM)
        self.assertEqual(signal.SIGTERM, e.signum)
        self.assertEqual(143, exit_codes.of_signal(e.signum))
        self.assertTrue(stop.is_set())

    def test_only_flags_once_writing_and_restores_handlers(self):
        before = signal.getsignal(signal.SIGINT)
        stop = interrupt.Stop()
        with stop.handled():
            stop.start_writing()
            self.kill(signal.SIGINT)
            self.kill(signal.SIGTERM)
            self.assertEqual(signal.SIGINT, stop.signum)
            self.assertTrue(stop.is_set())
        self.assertIs(before, signal.getsignal(signal.SIGINT))

    def test_signal_before_the_first_write(self):
        stop = interrupt.Stop()
        stop.set(signal.SIGINT)
        self.assertRaises(interrupt.Interrupted, stop.start_writing)

    def test_exit_now_instead_of_raising(self):
        seen = []
        stop = interrupt.Stop(exit_now=seen.append)
        with stop.handled():
            self.assertRaises(interrupt.Interrupted, self.kill,
                              signal.SIGINT)
        self.assertEqual([signal.SIGINT], seen)

    def test_other_threads_leave_the_handlers_alone(self):
        before = signal.getsignal(signal.SIGINT)
        seen = []

        def run():
            with interrupt.Stop().handled():
                seen.append(signal.getsignal(signal.SIGINT))
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        self.assertEqual([before], seen)
