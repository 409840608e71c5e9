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
"""nova-orphans-manage's command line refused in one line, whichever
parser refuses it (oslo.config's, before the action; the action's own),
and nova.conf's values refused by the options' own bounds. In process:
nothing is read before these refusals.
"""

import io
import os

import fixtures
from oslotest import base

from nova_orphans.cmd import manage


class RefusedTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.conf = self.write('[api_database]\n'
                               'connection = sqlite:///%s/api.db\n' %
                               self.tmp)

    def write(self, text):
        path = os.path.join(self.tmp, 'nova.conf')
        with open(path, 'w') as f:
            f.write(text)
        return path

    def main(self, *argv):
        """(exit code, stdout, stderr's lines)."""
        out = self.useFixture(fixtures.MonkeyPatch('sys.stdout',
                                                   io.StringIO())).new_value
        err = self.useFixture(fixtures.MonkeyPatch('sys.stderr',
                                                   io.StringIO())).new_value
        code = manage.main(list(argv))
        return code, out.getvalue(), err.getvalue().splitlines()

    def assertRefused(self, argv, lines, code=127):
        self.assertEqual((code, '', lines), self.main(*argv))

    def test_before_the_action(self):
        for argv, message in (
                (['--bogus', '--config-file', self.conf, 'allocations',
                  'list'], 'unrecognized arguments: --bogus'),
                (['--conf', self.conf, 'allocations', 'list'],
                 'ambiguous option: --conf could match --config-dir, '
                 '--config-file'),
                (['--config-file', self.conf, 'allocations', '--long',
                  'list'], 'unrecognized arguments: --long'),
                (['--debug=yes', '--config-file', self.conf, 'journals',
                  'list'], 'invalid arguments: --debug=yes --config-file '
                           '%s journals' % self.conf)):
            self.assertRefused(argv, ['ERROR: Invalid input: ' + message])

    def test_by_the_action(self):
        self.assertRefused(
            ['--config-file', self.conf, 'allocations', 'clean',
             '--max-count', 'many'],
            ["ERROR: Invalid input: argument --max-count: invalid int "
             "value: 'many'"])
        self.assertRefused(
            ['--config-file', self.conf, 'allocations', 'restore'],
            ['ERROR: Invalid input: the following arguments are required: '
             '--journal'])
        # A global option after the action: named, and where it goes.
        self.assertRefused(
            ['--config-file', self.conf, 'journals', 'list', '-d',
             '--nouse-syslog'],
            ['ERROR: Invalid input: unrecognized arguments: -d '
             '--nouse-syslog',
             '-d, --nouse-syslog must come before the category, as in: '
             'nova-orphans-manage -d ... journals ACTION'])

    def test_bounds_of_the_command_line(self):
        self.assertRefused(
            ['--config-file', self.conf, 'allocations', 'list',
             '--grace-period', '-1'],
            ['ERROR: Invalid input: --grace-period must not be negative'])
        self.assertRefused(
            ['--config-file', self.conf, 'journals', 'prune',
             '--journal-dir', self.tmp, '--older-than', '0'],
            ['ERROR: Invalid input: --older-than must be at least 1'])

    def test_bounds_of_the_configuration(self):
        """nova.conf's values meet the same bounds, as configuration
        errors (7), before anything is read.
        """
        self.write('[nova_orphans]\ngrace_period = -1\n'
                   'journal_retention_days = 0\n')
        self.assertRefused(
            ['--config-file', self.conf, 'allocations', 'list'],
            ['ERROR: Configuration error: [nova_orphans] grace_period '
             'must not be negative'], code=7)
        self.assertRefused(
            ['--config-file', self.conf, 'journals', 'prune',
             '--journal-dir', self.tmp],
            ['ERROR: Configuration error: [nova_orphans] '
             'journal_retention_days must be at least 1'], code=7)
        # A value oslo.config cannot read as the option's type.
        self.write('[nova_orphans]\ndeadline = soon\n')
        code, out, err = self.main('--config-file', self.conf,
                                   'allocations', 'list')
        self.assertEqual((7, '', 1), (code, out, len(err)))
        self.assertTrue(err[0].startswith(
            'ERROR: Configuration error: Value for option deadline '), err)


class ConfigDirsTestCase(base.BaseTestCase):
    """Every --config-dir given, which oslo.config reads but lists only
    the last of.
    """

    def test_every_one_before_the_category(self):
        self.assertEqual(
            ['/a', '/b', '/c'],
            manage._config_dirs_in([
                '--config-dir', '/a', '--config-file', '/f',
                '--config-dir=/b', '--config-d', '/c', 'allocations',
                'list', '--config-dir', '/late']))
        self.assertEqual([], manage._config_dirs_in(
            ['--config-file', '/f', 'journals', 'list']))

    def test_the_config_keeps_them_all(self):
        dirs = [self.useFixture(fixtures.TempDir()).path for _n in '12']
        conf = manage.Config()
        conf(['--config-dir', dirs[0], '--config-dir', dirs[1]],
             project='nova', default_config_files=[],
             default_config_dirs=[])
        self.assertEqual(dirs, conf.config_dirs_given)
