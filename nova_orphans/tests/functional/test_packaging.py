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
"""What an installed tool needs, run as the operator runs it.

The console script is run in a subprocess from the environment the tests
run in, which tools/venv.sh and tox build from requirements.txt: whatever
it needs must be a declared requirement, not something a test requirement
happens to pull in.
"""

import json
import os
import re
import subprocess

from nova_orphans.tests import deploy
from nova_orphans.tests.functional import base
from nova_orphans.tests import programs
from nova_orphans.tests import runners

# What the wheel installs in <prefix>/share/nova-orphans (setup.cfg
# [files] data_files), from where in the checkout; install/index.rst
# says the same.
SHIPPED = {
    'cron/nova-orphans': 'etc/cron/nova-orphans',
    'cron/nova-orphans-metrics': 'etc/cron/nova-orphans-metrics',
    'config/clouds.yaml.sample': 'etc/nova-orphans/clouds.yaml.sample',
    'config/neutron-keystone.conf': 'etc/nova-orphans/neutron-keystone.conf',
    'config/placement-keystone.conf':
        'etc/nova-orphans/placement-keystone.conf',
    'prometheus/nova-orphans.rules.yaml':
        'etc/prometheus/nova-orphans.rules.yaml',
    'prometheus/nova-orphans.rules.test.yaml':
        'etc/prometheus/nova-orphans.rules.test.yaml',
    'grafana/nova-orphans.json': 'etc/grafana/nova-orphans.json',
}
for _service in ('placement', 'nova', 'neutron'):
    SHIPPED['policy/%s-auditor.yaml' % _service] = (
        'etc/policy/%s-auditor.yaml' % _service)
for _name in ('nova-orphans-metrics', 'nova-orphans-clean'):
    for _path in (_name + '.service', _name + '.timer',
                  _name + '.service.d/venv.conf'):
        SHIPPED['systemd/' + _path] = 'etc/systemd/' + _path


class MySQLDriverTestCase(base.FunctionalTestCase):

    CELLS = ('cell1', 'cell2')

    def test_mysql_cell_is_reached_through_the_driver(self):
        # Production nova runs on MySQL or MariaDB: a cell there must fail
        # (nothing listens on port 9) because it is down, not because the
        # driver is missing.
        host1 = self.add_node('host1')
        self.boot('host1', host1)
        self.nova.set_cell_url(
            'cell2', 'mysql+pymysql://nova:Sup3rS3cret@127.0.0.1:9/nova')
        proc = runners.manage('allocations', 'list', '--format', 'json',
                              conf_file=self.conf_file)
        # Incomplete (2): cell2's consumers could not be checked.
        self.assertEqual(2, proc.returncode, proc.stderr)
        self.assertEqual('[]', proc.stdout.strip())
        self.assertIn('WARNING: cell cell2 could not be read', proc.stderr)
        self.assertIn("Can't connect to MySQL server on '127.0.0.1'",
                      proc.stderr)
        self.assertNotIn('No module named', proc.stderr)
        self.assertNotIn('Sup3rS3cret', proc.stdout + proc.stderr)


class OpenStackClientPluginTestCase(base.TestCase):
    """The plugin as ``pip install nova-orphans[osc]`` installs it.

    Nothing listens on the endpoint: these errors come before any request.
    """

    def openstack(self, *argv):
        return runners.openstack(
            '--os-auth-type', 'admin_token', '--os-endpoint',
            'http://127.0.0.1:9', '--os-token', 'admin', *argv)

    def test_usage_error_exits_127(self):
        """argparse's usage error, with the exit-code table's code, as
        nova-orphans-manage's.
        """
        proc = self.openstack('allocation', 'orphan', 'restore')
        self.assertEqual(127, proc.returncode, proc.stderr)
        self.assertEqual('', proc.stdout)
        lines = proc.stderr.splitlines()
        self.assertTrue(lines[0].startswith(
            'usage: openstack allocation orphan restore '), proc.stderr)
        self.assertEqual('openstack allocation orphan restore: error: the '
                         'following arguments are required: --journal',
                         lines[-1])

    def test_invalid_input_exits_127(self):
        proc = self.openstack('allocation', 'orphan', 'list',
                              '--resource-provider', 'xyz')
        self.assertEqual(127, proc.returncode, proc.stderr)
        self.assertEqual('', proc.stdout)
        self.assertEqual(1, len(proc.stderr.splitlines()), proc.stderr)
        self.assertIn('xyz', proc.stderr)


class WheelTestCase(base.FunctionalTestCase):
    """The wheel .ci/run builds, installed in a virtualenv of its own
    (NOVA_ORPHANS_WHEEL_BIN is its bin directory), run from a directory
    outside the repository: nothing comes from the checkout.
    """

    def setUp(self):
        super().setUp()
        self.bin = os.environ.get('NOVA_ORPHANS_WHEEL_BIN')
        if not self.bin:
            if programs.in_ci():
                self.fail('CI=%s but NOVA_ORPHANS_WHEEL_BIN is not set: '
                          '.ci/run builds and installs the wheel'
                          % os.environ['CI'])
            self.skipTest('no installed wheel (NOVA_ORPHANS_WHEEL_BIN)')

    def run_installed(self, program, *argv):
        """``program`` of the wheel's virtualenv run (runners.run)."""
        return runners.run([runners.script(program, self.bin)] + list(argv),
                           env=runners.outside(), cwd=self.tmp)

    def test_version_help_and_list(self):
        done = self.run_installed(
            'python', '-c',
            'import nova_orphans; print(nova_orphans.__file__)')
        self.assertTrue(done.stdout.startswith(
            os.path.dirname(os.path.realpath(self.bin))), done.stdout)
        done = self.run_installed('nova-orphans-manage', '--version')
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertRegex(done.stdout, r'^\d+\.\d+\.\d+\S*\n$')
        done = self.run_installed('nova-orphans-manage', 'allocations',
                                  'list', '--help')
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertIn('Return codes', done.stdout)
        host1 = self.add_node('host1')
        gone = self.nova.add_instance('cell1', host='host1', node='host1',
                                      vm_state='error')
        self.allocate(gone, host1)
        self.nova.force_delete_instance('cell1', gone)
        done = self.run_installed('nova-orphans-manage', '--config-file',
                                  self.conf_file, 'allocations', 'list',
                                  '--format', 'json')
        self.assertEqual((3, ''), (done.returncode, done.stderr))
        self.assertEqual([(gone, host1, 'deleted_instance')], [
            (r['consumer'], r['resource_provider'], r['reason'])
            for r in json.loads(done.stdout)])
        self.assertFalse(re.search('Traceback', done.stderr))

    def test_shipped_files(self):
        """The deployment files are in <prefix>/share/nova-orphans, as
        they are in the checkout; the cron script and the drop-in's
        command run from there write metrics promtool accepts.
        """
        done = self.run_installed(
            'python', '-c',
            'import sysconfig; print(sysconfig.get_path("data"))')
        self.assertEqual(0, done.returncode, done.stderr)
        share = os.path.join(done.stdout.strip(), 'share', 'nova-orphans')
        found = {}
        for top, _dirs, files in os.walk(share):
            for name in files:
                path = os.path.join(top, name)
                with open(path, 'rb') as f:
                    found[os.path.relpath(path, share)] = (
                        f.read(), os.access(path, os.X_OK))
        expected = {}
        for name, source in SHIPPED.items():
            with open(os.path.join(programs.REPO, source), 'rb') as f:
                expected[name] = (f.read(), name.endswith('-metrics'))
        self.assertEqual(expected, found)
        host1 = self.add_node('host1')
        self.boot('host1', host1)
        stranger = '4b2e0c1a-2f8d-4c57-9a5d-0d1c2e3f4a5b'
        self.allocate(stranger, host1)
        env = {'PATH': self.bin + ':/usr/bin:/bin',
               'NOVA_ORPHANS_CONFIG': self.conf_file,
               'NOVA_ORPHANS_METRICS': os.path.join(self.tmp, 'cron.prom')}
        cron = subprocess.run(
            [os.path.join(share, 'cron', 'nova-orphans-metrics')],
            capture_output=True, text=True, env=env, cwd=self.tmp,
            stdin=subprocess.DEVNULL, timeout=120)
        self.assertEqual((0, '', ''),
                         (cron.returncode, cron.stdout, cron.stderr))
        with open(env['NOVA_ORPHANS_METRICS']) as f:
            text = f.read()
        programs.check_metrics(self, text)
        self.assertIn('nova_orphans_consumers{reason="unknown_consumer"} '
                      '1.0\n', text)
        # The virtualenv drop-in's command, its /opt/nova-orphans/bin
        # this virtualenv's.
        keys = deploy.unit('nova-orphans-metrics.service', 'venv.conf',
                           directory=os.path.join(share, 'systemd'))
        env['NOVA_ORPHANS_METRICS'] = os.path.join(self.tmp, 'unit.prom')
        env['NOVA_ORPHANS_LOCK'] = os.path.join(self.tmp, 'lock')
        argv = deploy.exec_start(keys, env)
        self.assertEqual(['flock', env['NOVA_ORPHANS_LOCK'],
                          '/opt/nova-orphans/bin/nova-orphans-manage'],
                         argv[:3])
        unit = subprocess.run(
            argv[:2] + [os.path.join(self.bin, 'nova-orphans-manage')] +
            argv[3:],
            capture_output=True, text=True, env=env, cwd=self.tmp,
            stdin=subprocess.DEVNULL, timeout=120)
        self.assertEqual((3, ''), (unit.returncode, unit.stderr))
        self.assertIn(unit.returncode, deploy.success_codes(keys))
        with open(env['NOVA_ORPHANS_METRICS']) as f:
            programs.check_metrics(self, f.read())
