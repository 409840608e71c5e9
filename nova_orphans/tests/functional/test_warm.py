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
"""A warm run is the console script's run: the tests that use one rely
on it (nova_orphans.tests.warm).
"""

import os
import select
import signal
import socket
import subprocess
import time

import fixtures
from oslotest import base

from nova_orphans.tests.functional import test_endpoint_diagnostics
from nova_orphans.tests import programs
from nova_orphans.tests import runners
from nova_orphans.tests import warm

MANAGE = runners.script(runners.MANAGE)
# nova.conf of a cloud whose nova databases are missing: a command
# asks placement (its endpoint) first.
NOVA_CONF = test_endpoint_diagnostics.NOVA_CONF


class WarmRunTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def both(self, argv, **kwargs):
        """(the console script's, the warm run's) (code, out, err)."""
        runs = []
        for run in (subprocess.run, warm.run):
            done = run([MANAGE] + argv, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60, **kwargs)
            runs.append((done.returncode, done.stdout, done.stderr))
        return runs

    def test_streams_and_exit_code_as_the_script(self):
        real, ran = self.both(['--version'])
        self.assertEqual(real, ran)
        self.assertEqual(0, ran[0])
        real, ran = self.both(['allocations', 'list', '--no-such-option'])
        self.assertEqual(real, ran)
        self.assertEqual((127, ''), ran[:2])
        self.assertIn('unrecognized arguments: --no-such-option', ran[2])

    def test_its_own_environment_and_working_directory(self):
        home = self.useFixture(fixtures.TempDir()).path
        env = dict(os.environ, HOME=home)
        real, ran = self.both(['allocations', 'list'], env=env,
                              cwd=self.tmp)
        self.assertEqual(real, ran)
        self.assertEqual(7, ran[0])
        self.assertIn('no configuration file was found', ran[2])
        # A relative --config-file, found in the working directory.
        with open(os.path.join(self.tmp, 'nova.conf'), 'w') as f:
            f.write(NOVA_CONF.format(tmp=self.tmp,
                                     endpoint='http://127.0.0.1:1'))
        real, ran = self.both(['--config-file', 'nova.conf', 'allocations',
                               'list'], env=env, cwd=self.tmp)
        self.assertEqual(real, ran)
        self.assertEqual(8, ran[0])

    def blocked(self, popen=warm.Popen):
        """A run waiting for a placement that never answers."""
        hole = socket.socket()
        self.addCleanup(hole.close)
        hole.bind(('127.0.0.1', 0))
        hole.listen(1)
        conf = os.path.join(self.tmp, 'nova.conf')
        with open(conf, 'w') as f:
            f.write(NOVA_CONF.format(
                tmp=self.tmp,
                endpoint='http://127.0.0.1:%d' % hole.getsockname()[1]))
        proc = popen([MANAGE, '--config-file', conf, 'allocations', 'list'],
                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        # Its request is in the listener's queue, never accepted.
        self.assertEqual([hole], select.select([hole], [], [], 60)[0])
        return proc

    def test_signal_passed_on(self):
        ends = []
        for popen in (subprocess.Popen, warm.Popen):
            proc = self.blocked(popen)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
            ends.append((proc.returncode, out, err))
        self.assertEqual(
            [(143, '', 'Interrupted by SIGTERM; nothing was changed.\n')] * 2,
            ends)

    def test_killed_launcher_takes_its_run(self):
        proc = self.blocked()
        zygote = warm._zygotes['nova-orphans-manage'][0].pid
        runs = programs.children(zygote)
        self.assertEqual(1, len(runs))
        proc.kill()
        self.assertEqual(-signal.SIGKILL, proc.wait(timeout=60))
        deadline = time.monotonic() + 30
        while runs[0] in programs.children(zygote):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
