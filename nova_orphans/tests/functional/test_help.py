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
"""--help of both console scripts, as an operator reads it."""

import re

from oslotest import base

from nova_orphans.tests import runners

# What Sphinx would render, and a terminal shows verbatim.
RST = re.compile(r'``|:(mod|doc|ref|class|func|meth|option|program):`')


def _run(program, *argv):
    """The Result of console script ``program`` run in 80 columns."""
    return runners.run([runners.script(program)] + list(argv),
                       env=runners.environment(COLUMNS='80'))


LIST = [0, 2, 3, 5, 6, 7, 8, 9, 10, 127, 130, 143, 255]
CLEAN = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 127, 130, 143, 255]
RESTORE = [0, 1, 3, 4, 7, 8, 9, 11, 12, 127, 130, 143, 255]


def _return_codes(text):
    """The codes of the "Return codes:" block of a --help."""
    block = text.split('Return codes:\n', 1)[1].split('\n\n', 1)[0]
    return [int(m.group(1)) for m in
            re.finditer(r'^  (\d+) ', block, re.M)]


class ManageHelpTestCase(base.BaseTestCase):

    def help(self, *argv):
        done = _run('nova-orphans-manage', *(argv + ('--help',)))
        self.assertEqual((0, ''), (done.returncode, done.stderr))
        return done.stdout

    def test_top_level_has_a_description(self):
        out = self.help()
        self.assertIn('\n\nFind and repair placement allocations that no '
                      'live nova object owns, reading\n', out)
        self.assertIn('"allocations restore" undoes a clean.', out)

    def test_top_level_tells_both_journals_apart(self):
        out = ' '.join(self.help().split())
        self.assertIn('to journald with --use-journal', out)
        self.assertIn('--use-journal is about logging; the repair journal '
                      'that "restore" reads is the --journal PATH option of '
                      '"allocations clean" and "allocations restore" (and '
                      'of "providers clean").', out)
        self.assertIn('to stderr only with --debug', out)

    def test_each_action_lists_only_its_return_codes(self):
        for action, codes in (
                ('list', LIST),
                ('clean', CLEAN),
                ('restore', RESTORE)):
            self.assertEqual(codes, _return_codes(
                self.help('allocations', action)), action)
        # The category's: every code one of its actions returns.
        self.assertEqual(sorted(set(CLEAN + RESTORE)),
                         _return_codes(self.help('allocations')))

    def test_providers_actions_return_codes_as_allocations(self):
        for action, codes in (
                ('list', LIST), ('clean', CLEAN), ('restore', RESTORE)):
            out = self.help('providers', action)
            self.assertEqual(codes, _return_codes(out), action)
        out = ' '.join(self.help('providers', 'clean').split())
        for option in ('--host HOST', '--resource-provider UUID',
                       '--dry-run', '--journal PATH', '--max-count N',
                       '-f {table,json,value,csv,yaml}, --format '
                       '{table,json,value,csv,yaml}'):
            self.assertIn(option, out)
        self.assertIn('"providers list" and "providers clean" do the same',
                      ' '.join(self.help().split()))

    def test_restore_codes_say_what_they_mean_for_restore(self):
        out = self.help('allocations', 'restore')
        self.assertIn('  0    nothing to restore (every entry was already '
                      'undone)\n', out)
        self.assertIn('  3    entries would be restored (--dry-run)\n', out)
        self.assertIn('  4    everything restored\n', out)
        text = ' '.join(out.split())
        self.assertIn('11 the journal cannot prove it is whole (a clean\'s '
                      'run in it has no end record: it was killed, or the '
                      'file was cut short); the entries that verify were '
                      'restored (with --dry-run, judged), and a line says '
                      'what to check', text)
        self.assertIn('When several apply, the first of 130/143, 1, 12, 11, '
                      '4, 3, 0 wins.', text)
        self.assertIn('--journal-cloud PLACEMENT_URL', text)

    def test_repair_journal_explained_where_it_is_an_option(self):
        for action in ('clean', 'restore'):
            out = ' '.join(self.help('allocations', action).split())
            self.assertIn('--journal PATH is the repair journal', out)
            self.assertIn("It is not oslo.log's --use-journal (given before "
                          "the category), which sends log records to "
                          "journald.", out)
        self.assertNotIn('repair journal', self.help('allocations', 'list'))


class OpenStackHelpTestCase(base.BaseTestCase):
    """openstack's --help of this plugin's commands."""

    def test_no_rst_markup(self):
        for action in ('list', 'clean', 'restore'):
            done = _run('openstack', 'allocation', 'orphan', action, '--help')
            self.assertEqual(0, done.returncode, done.stderr)
            self.assertIn('usage: openstack allocation orphan %s' % action,
                          done.stdout)
            self.assertIsNone(RST.search(done.stdout), done.stdout)
        self.assertIn('the action "clean" would take', ' '.join(
            _run('openstack', 'allocation', 'orphan', 'list',
                 '--help').stdout.split()))

    def test_each_command_lists_the_table_of_manage(self):
        """The same codes as nova-orphans-manage's same action."""
        for argv, codes in (
                (('allocation', 'orphan', 'list'), LIST),
                (('allocation', 'orphan', 'clean'), CLEAN),
                (('allocation', 'orphan', 'restore'), RESTORE),
                (('resource', 'provider', 'orphan', 'list'), LIST),
                (('resource', 'provider', 'orphan', 'clean'), CLEAN),
                (('resource', 'provider', 'orphan', 'restore'), RESTORE)):
            done = _run('openstack', *(argv + ('--help',)))
            self.assertEqual(0, done.returncode, done.stderr)
            block = done.stdout.split('Return codes:\n\n', 1)[1]
            self.assertEqual(codes, [int(m.group(1)) for m in re.finditer(
                r'^\* (\d+): ', block, re.M)], argv)
            self.assertIn('doc/source/cli/exit-codes.rst', block)
            if argv[-1] == 'restore':
                self.assertIn('--journal-cloud <placement-url>',
                              done.stdout)
                self.assertIn('When several apply, the first of 130/143, '
                              '1, 12, 11, 4, 3, 0 wins.',
                              ' '.join(block.split()))


class JournalDirectoryHelpTestCase(base.BaseTestCase):
    """Every option whose default is the journal directory states the
    one rule (repair/journal.py's default_directory, admin/journal.rst),
    in its order.
    """

    RULE = ('[nova_orphans] state_path if set (nova-orphans-manage), else '
            '$XDG_STATE_HOME/nova-orphans if XDG_STATE_HOME is set, else '
            '/var/lib/nova-orphans if this user can write there or create '
            'it, else ~/.local/state/nova-orphans')

    def test_every_default_states_the_rule(self):
        for argv, option in (
                (('nova-orphans-manage', 'allocations', 'clean'),
                 '--journal'),
                (('nova-orphans-manage', 'providers', 'clean'),
                 '--journal'),
                (('nova-orphans-manage', 'journals', 'list'),
                 '--journal-dir'),
                (('nova-orphans-manage', 'journals', 'prune'),
                 '--journal-dir'),
                (('openstack', 'allocation', 'orphan', 'clean'),
                 '--journal'),
                (('openstack', 'resource', 'provider', 'orphan', 'clean'),
                 '--journal'),
                (('openstack', 'allocation', 'orphan', 'journal', 'list'),
                 '--journal-dir')):
            done = _run(*(argv + ('--help',)))
            self.assertEqual(0, done.returncode, done.stderr)
            # Joined as wrapped: argparse breaks lines after hyphens.
            text = re.sub(r'(\w)- (\w)', r'\1-\2',
                          ' '.join(done.stdout.split()))
            # One rule in both front ends' help: it is declared once.
            self.assertIn(self.RULE, text, argv)
