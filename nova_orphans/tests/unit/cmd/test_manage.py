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
"""nova-orphans-manage's command line refused: argparse's usage error
(as nova-manage prints it) and exit code 127, whichever parser refuses
it (oslo.config's, before the action; the action's own); and nova.conf's
values refused by the options' own bounds. In process: nothing is read
before these refusals.
"""

import io
import os

import fixtures
from oslo_config import cfg
from oslotest import base

from nova_orphans.app import sources
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

    def assertUsageError(self, argv, message, prog='nova-orphans-manage'):
        """argparse's usage and its error line on stderr, 127, nothing
        on stdout and no traceback.
        """
        code, out, err = self.main(*argv)
        self.assertEqual((127, ''), (code, out))
        self.assertTrue(err[0].startswith('usage: %s ' % prog), err)
        self.assertEqual('%s: error: %s' % (prog, message), err[-1])
        self.assertNotIn('Traceback', '\n'.join(err))

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
                  'list'], "argument --debug/-d: ignored explicit argument "
                           "'yes'"),
                (['--config-file', self.conf],
                 'the following arguments are required: category')):
            self.assertUsageError(argv, message)
        self.assertUsageError(
            ['--config-file', self.conf, 'allocations'],
            'the following arguments are required: action',
            prog='nova-orphans-manage allocations')

    def test_by_the_action(self):
        self.assertUsageError(
            ['--config-file', self.conf, 'allocations', 'clean',
             '--max-count', 'many'],
            "argument --max-count: invalid int value: 'many'",
            prog='nova-orphans-manage allocations clean')
        self.assertUsageError(
            ['--config-file', self.conf, 'allocations', 'restore'],
            'the following arguments are required: --journal',
            prog='nova-orphans-manage allocations restore')
        # A global option after the action: nothing takes it there.
        self.assertUsageError(
            ['--config-file', self.conf, 'journals', 'list', '-d',
             '--nouse-syslog'], 'unrecognized arguments: -d --nouse-syslog')

    def test_help_and_version_end_with_0(self):
        for argv in (['--help'], ['--config-file', self.conf, 'journals',
                                  'list', '--help'], ['--version']):
            code, out, err = self.main(*argv)
            self.assertEqual((0, []), (code, err), argv)
            self.assertNotEqual('', out)

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
    """Every --config-dir given, which oslo.config reads and lists in
    ``config_dirs`` (its ``config_dir`` keeps the last): the run's
    configuration, for the journal's cloud and the command to paste.
    """

    def test_the_sources_keep_them_all(self):
        dirs = [self.useFixture(fixtures.TempDir()).path for _n in '12']
        conf = cfg.ConfigOpts()
        self.assertIsNone(manage._parse(conf, [
            '--config-dir', dirs[0], '--config-dir', dirs[1], 'journals',
            'list']))
        self.assertEqual(
            dirs, sources.DatabaseSources(conf).config_dirs)
