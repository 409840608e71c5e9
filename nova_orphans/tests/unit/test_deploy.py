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
"""The shipped systemd units and cron files, read as systemd and cron
read them (checked by systemd-analyze, sh and promtool, and run: the
functional suite's test_deploy.py).
"""

import os

from oslotest import base

from nova_orphans.repair import journal
from nova_orphans.tests import deploy

SERVICES = deploy.SERVICES
VENV_BIN = deploy.VENV_BIN
LOCKED = deploy.LOCKED


class SystemdTestCase(base.BaseTestCase):

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
