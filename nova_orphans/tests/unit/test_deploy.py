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
"""The shipped alert rules, systemd units and cron files, checked by
the tools that read them (their runs: tests/functional/test_deploy.py).
"""

import os
import shutil
import subprocess
import sys

import fixtures
from oslotest import base

from nova_orphans.repair import journal
from nova_orphans.tests import deploy
from nova_orphans.tests import programs

RULES = os.path.join(deploy.PROMETHEUS, 'nova-orphans.rules.yaml')
UNITS = ('nova-orphans-metrics.service', 'nova-orphans-metrics.timer',
         'nova-orphans-clean.service', 'nova-orphans-clean.timer')
SERVICES = ('nova-orphans-metrics.service', 'nova-orphans-clean.service')
# The virtualenv the shipped drop-ins name.
VENV_BIN = '/opt/nova-orphans/bin'
# Each service's command, under the lock the two share (flock(1)).
LOCKED = 'ExecStart=flock ${NOVA_ORPHANS_LOCK} '


class RulesTestCase(base.BaseTestCase):

    def test_check_rules(self):
        self.assertIn('SUCCESS: 6 rules found',
                      programs.run(self, 'promtool', 'check', 'rules', RULES))

    def test_each_alert_fires_and_does_not(self):
        """nova-orphans.rules.test.yaml: orphans for an hour, a cell not
        read, a stale scan, a failed clean, no clean success for days.
        """
        out = programs.run(self, 'promtool', 'test', 'rules', os.path.join(
            deploy.PROMETHEUS, 'nova-orphans.rules.test.yaml'))
        self.assertIn('SUCCESS', out)


class SystemdTestCase(base.BaseTestCase):

    def test_verify(self):
        """systemd-analyze verify, offline: it wants ExecStart's program
        in systemd's own search path, and a test's console script is in
        a virtualenv, so the copies verified name it by its path.
        """
        tmp = self.useFixture(fixtures.TempDir()).path
        script = shutil.which('nova-orphans-manage') or os.path.join(
            os.path.dirname(sys.executable), 'nova-orphans-manage')
        for name in UNITS:
            with open(os.path.join(deploy.SYSTEMD, name)) as f:
                text = f.read()
            self.assertEqual(name.endswith('.service'),
                             '\n%snova-orphans-manage ' % LOCKED in text)
            with open(os.path.join(tmp, name), 'w') as f:
                f.write(text.replace('\n%snova-orphans-manage ' % LOCKED,
                                     '\n%s%s ' % (LOCKED, script)))
        self.assertEqual('', programs.run(
            self, 'systemd-analyze', 'verify', '--man=no',
            *[os.path.join(tmp, name) for name in UNITS]))
        # Again with the virtualenv drop-ins, which systemd-analyze
        # reads from NAME.d beside each unit.
        for name in SERVICES:
            os.mkdir(os.path.join(tmp, name + '.d'))
            path = os.path.join(name + '.d', 'venv.conf')
            with open(os.path.join(deploy.SYSTEMD, path)) as f:
                text = f.read()
            self.assertIn('\n%s%s/nova-orphans-manage ' % (LOCKED, VENV_BIN),
                          text)
            with open(os.path.join(tmp, path), 'w') as f:
                f.write(text.replace(VENV_BIN + '/nova-orphans-manage',
                                     script))
        self.assertEqual('', programs.run(
            self, 'systemd-analyze', 'verify', '--man=no',
            *[os.path.join(tmp, name) for name in SERVICES]))

    def test_venv_dropins(self):
        """Each drop-in replaces its unit's command by the same command
        from the virtualenv, and changes nothing else.
        """
        self.assertEqual(
            sorted(n + '.d' for n in SERVICES),
            sorted(n for n in os.listdir(deploy.SYSTEMD)
                   if n.endswith('.d')))
        for name in SERVICES:
            self.assertEqual(
                ['venv.conf'],
                os.listdir(os.path.join(deploy.SYSTEMD, name + '.d')))
            keys = deploy.unit(name)
            venv = deploy.unit(name, 'venv.conf')
            [command] = keys['ExecStart']
            lock = LOCKED[len('ExecStart='):]
            self.assertTrue(command.startswith(lock + 'nova-orphans-manage '))
            self.assertEqual(
                dict(keys, ExecStart=[
                    lock + VENV_BIN + '/' + command[len(lock):]]), venv)

    def test_users_and_state_directory(self):
        for name in SERVICES:
            keys = deploy.unit(name)
            self.assertEqual((['nova'], ['nova']),
                             (keys['User'], keys['Group']), name)
            # The journals' default directory, made for user nova, 0700,
            # and the lock the two services share in it.
            self.assertEqual([journal.SYSTEM_STATE_PATH],
                             ['/var/lib/' + d for d in keys['StateDirectory']])
            self.assertEqual(['0700'], keys['StateDirectoryMode'])
            self.assertEqual(journal.SYSTEM_STATE_PATH + '/lock',
                             deploy.environment(keys)['NOVA_ORPHANS_LOCK'])
        keys = deploy.unit('nova-orphans-clean.service')
        self.assertEqual({0, 3, 4}, deploy.success_codes(keys))
        self.assertEqual({0, 2, 3, 5}, deploy.success_codes(
            deploy.unit('nova-orphans-metrics.service')))


class CronTestCase(base.BaseTestCase):

    def test_script_parses(self):
        script = os.path.join(deploy.CRON, 'nova-orphans-metrics')
        self.assertTrue(os.access(script, os.X_OK))
        proc = subprocess.run(['sh', '-n', script], capture_output=True,
                              text=True)
        self.assertEqual((0, ''), (proc.returncode, proc.stderr))

    def test_crontab(self):
        env, jobs = deploy.crontab('nova-orphans')
        self.assertEqual(['NOVA_ORPHANS_CLEAN_METRICS', 'NOVA_ORPHANS_CONFIG',
                          'NOVA_ORPHANS_METRICS', 'PATH'], sorted(env))
        # The scan skipped while the clean holds the lock (it would
        # queue up behind a long one); the clean waits for a scan.
        lock = 'flock %s/lock ' % journal.SYSTEM_STATE_PATH
        self.assertEqual(
            [('*/15 * * * *', 'nova',
              'flock -n %s/lock %s' % (journal.SYSTEM_STATE_PATH,
                                       deploy.METRICS_SCRIPT)),
             ('30 3 * * *', 'nova')],
            [jobs[0], jobs[1][:2]])
        self.assertTrue(jobs[1][2].startswith(lock + 'nova-orphans-manage '))
        # cron ends a command at an unescaped %.
        self.assertNotIn('%', jobs[1][2])
