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
"""The commands both front ends are made from, their options and the
outcomes of their rows.
"""

import argparse

from oslotest import base

from nova_orphans.app import commands
from nova_orphans.app import options
from nova_orphans.app import report as report_mod
from nova_orphans.app import results
from nova_orphans import exception
from nova_orphans import exit_codes
from nova_orphans import outcomes


class OptionTestCase(base.BaseTestCase):

    def test_defaults_come_from_the_configuration(self):
        p1, p2 = 'a' * 32, 'b' * 32
        given = {'grace_period': None, 'foreign_projects': [p2]}
        opts = [options.GRACE_PERIOD, options.FOREIGN_PROJECT]
        # nova-orphans-manage: nova.conf's values; a list is added to.
        self.assertEqual(
            {'grace_period': 60, 'foreign_projects': [p1, p2]},
            options.resolve(opts, given, {'grace_period': 60,
                                          'foreign_projects': [p1]}))
        # openstack: the options' own defaults.
        self.assertEqual(
            {'grace_period': 300, 'foreign_projects': [p2]},
            options.resolve(opts, given))
        self.assertEqual({'grace_period': 10, 'foreign_projects': []},
                         options.resolve(opts, {'grace_period': 10}))

    def test_bounds_refused_naming_the_option(self):
        for option, value, message in (
                (options.GRACE_PERIOD, -1,
                 '--grace-period must not be negative'),
                (options.MAX_COUNT, 0, '--max-count must be at least 1')):
            e = self.assertRaises(exception.InvalidInput, options.resolve,
                                  [option], {option.dest: value})
            self.assertEqual('Invalid input: ' + message, str(e))

    def test_configuration_refused_naming_its_option(self):
        """nova.conf's value goes through the option's own bounds, and
        the error names the configuration option (exit code 7).
        """
        for option, config, message in (
                (options.GRACE_PERIOD, {'grace_period': -1},
                 '[nova_orphans] grace_period must not be negative'),
                (options.OLDER_THAN, {'journal_retention_days': 0},
                 '[nova_orphans] journal_retention_days must be at least '
                 '1'),
                (options.FOREIGN_CONSUMER_TYPE,
                 {'foreign_consumer_types': ['INSTANCE']},
                 '[nova_orphans] foreign_consumer_types: INSTANCE is one '
                 'of nova\'s own consumer types'),
                # An empty value (``grace_period =``) reads as None.
                (options.GRACE_PERIOD, {'grace_period': None},
                 '[nova_orphans] grace_period has no value'),
                (options.OLDER_THAN, {'journal_retention_days': None},
                 '[nova_orphans] journal_retention_days has no value')):
            e = self.assertRaises(exception.ConfigError, options.resolve,
                                  [option], {option.dest: None}, config)
            self.assertEqual('Configuration error: ' + message, str(e))
            self.assertEqual(exit_codes.CONFIG_ERROR,
                             exit_codes.of_error(e))
        # The same value on the command line is the user's input.
        e = self.assertRaises(exception.InvalidInput, options.resolve,
                              [options.OLDER_THAN], {'older_than': 0})
        self.assertEqual('Invalid input: --older-than must be at least 1',
                         str(e))

    def test_bounds_are_the_spec_alone(self):
        """An option that a command-line option overrides is bounded by
        the option spec only: [nova_orphans] declares no bound of its
        own that could disagree with it.
        """
        conf_opts = {opt.dest: opt for opt in
                     options.orphans_conf.ORPHANS_OPTS}
        bounded = [o for c in commands.COMMANDS for o in c.options
                   if o.config and o.minimum is not None]
        self.assertEqual(
            {'grace_period', 'retry_budget', 'deadline',
             'metrics_max_projects', 'metrics_max_hosts',
             'journal_retention_days', 'full_read_interval'},
            {o.config for o in bounded})
        for option in bounded:
            self.assertEqual(
                (None, None), (conf_opts[option.config].type.min,
                               conf_opts[option.config].type.max),
                option.config)

    def test_one_declaration_two_spellings(self):
        for style, metavar in ((options.metavar_upper, 'PROJECT_ID'),
                               (options.metavar_osc, '<project-id>')):
            parser = argparse.ArgumentParser()
            parser.add_argument(*options.PROJECT.flags,
                                **options.PROJECT.argparse_kwargs(style))
            self.assertIn('--project %s' % metavar, parser.format_usage())
            self.assertEqual('p', parser.parse_args(
                ['--project', 'p']).project)

    def test_but_rewords_one_option(self):
        trees = options.MAX_COUNT.but(help='Trees.')
        self.assertEqual(('Trees.', options.MAX_COUNT.flags, 1),
                         (trees.help, trees.flags, trees.minimum))


class CommandTestCase(base.BaseTestCase):

    def test_every_command_once_in_both_front_ends_words(self):
        self.assertEqual(8, len(commands.COMMANDS))
        self.assertEqual(len(commands.COMMANDS),
                         len({c.osc for c in commands.COMMANDS}))

    def test_help_lists_only_the_codes_an_action_returns(self):
        listing = commands.find('allocations', 'list').epilog()
        codes = [line.split()[0] for line in listing.splitlines()[1:]
                 if line.startswith('  ') and line.split()[0].isdigit()]
        self.assertEqual([str(c) for c in exit_codes.LIST_CODES], codes)
        self.assertIn('the first of 130/143, 5, 2, 3, 0 wins', ' '.join(
            listing.split()))
        self.assertIn('3    orphans found', listing)
        journals = commands.find('journals', 'list').epilog()
        self.assertNotIn('\n  1 ', journals)
        self.assertNotIn('When several apply', journals)


class OutcomeTestCase(base.BaseTestCase):

    def test_kinds_and_codes(self):
        self.assertEqual('done', str(outcomes.done()))
        self.assertEqual('skipped: dry run', str(outcomes.dry_run()))
        self.assertEqual(outcomes.INTERRUPTED, outcomes.interrupted().cause)
        for rows, code in (
                ([], exit_codes.SUCCESS),
                ([outcomes.done()], exit_codes.REPAIRED),
                ([outcomes.done(), outcomes.dry_run()],
                 exit_codes.ORPHANS_FOUND),
                ([outcomes.skipped('moot', resolved=True)],
                 exit_codes.SUCCESS),
                ([outcomes.done(), outcomes.failed('boom')],
                 exit_codes.REPAIR_FAILED)):
            self.assertEqual(code, outcomes.exit_code(rows), rows)

    def test_refused_credentials(self):
        """A write the service refused for the credentials (an error of
        code 9) ends the run with 9 while nothing was done; with
        something done, a repair failed (1).
        """
        refused = exception.PlacementError(
            method='PUT', url='/x', reason='403 Forbidden', status_code=403,
            exit_code=exit_codes.CREDENTIALS_REFUSED)
        other = exception.PlacementError(method='PUT', url='/x',
                                         reason='400 Bad Request')
        self.assertEqual(outcomes.CREDENTIALS_REFUSED,
                         outcomes.failed_by(refused).cause)
        self.assertEqual('failed: ' + str(refused),
                         str(outcomes.failed_by(refused)))
        self.assertEqual('failed: no room',
                         str(outcomes.failed_by(refused, 'no room')))
        self.assertIsNone(outcomes.failed_by(other).cause)
        for rows, code in (
                ([outcomes.failed_by(refused)],
                 exit_codes.CREDENTIALS_REFUSED),
                ([outcomes.failed_by(refused), outcomes.failed_by(other),
                  outcomes.dry_run()], exit_codes.CREDENTIALS_REFUSED),
                ([outcomes.failed_by(other)], exit_codes.REPAIR_FAILED),
                ([outcomes.done(), outcomes.failed_by(refused)],
                 exit_codes.REPAIR_FAILED)):
            self.assertEqual(code, outcomes.exit_code(iter(rows)), rows)

    def test_nothing_to_undo_when_every_write_was_refused(self):
        """A clean whose every write was refused changed nothing: no
        "To undo" line; one done, or a failure whose write may have been
        applied, keeps it.
        """
        refused = outcomes.failed_by(exception.PlacementError(
            method='PUT', url='/x', reason='403', status_code=403,
            exit_code=exit_codes.CREDENTIALS_REFUSED))
        lost = outcomes.failed_by(exception.PlacementError(
            method='PUT', url='/x', reason='timed out', transient='timeout'))

        def notes(rows, allocation_outcomes=()):
            report = commands._repaired(results.Repair(
                [], rows, journal_path='j.jsonl',
                allocation_outcomes=allocation_outcomes), 'clean(s)', '')
            return [line.render(lambda c: ' '.join(
                [c.category, c.action] + c.argv))
                if isinstance(line, report_mod.Line) else line
                for line in report.notes]

        self.assertEqual(['Journal: j.jsonl'],
                         [n for n in notes([refused, refused,
                                            outcomes.dry_run()])
                          if not n.startswith('Error')])
        for rows, allocation_outcomes in (
                ([refused, outcomes.done()], ()),
                ([refused, lost], ()),
                ([refused], [outcomes.done()])):
            self.assertEqual(
                'To undo: allocations restore --journal j.jsonl',
                notes(rows, allocation_outcomes)[-1], rows)
        self.assertFalse(outcomes.may_have_changed(
            [refused, outcomes.dry_run(), outcomes.interrupted()]))

    def test_a_journal_in_use_is_a_refusal_to_run_again(self):
        """A row another run's journal lock failed is 12, which a
        failure of another kind (1) wins over, and which wins over what
        the other rows did.
        """
        busy = outcomes.failed_by(exception.JournalBusy(
            path='j', reason='in use'))
        self.assertEqual(
            ('failed: Journal j: in use', outcomes.JOURNAL_BUSY),
            (str(busy), busy.cause))
        other = outcomes.failed_by(exception.PlacementError(
            method='POST', url='/allocations', reason='500'),
            detail='error 1')
        self.assertEqual(('failed: error 1', None),
                         (str(other), other.cause))
        for rows, code in (
                ([busy], exit_codes.JOURNAL_BUSY),
                ([outcomes.done(), busy, outcomes.dry_run()],
                 exit_codes.JOURNAL_BUSY),
                ([busy, other], exit_codes.REPAIR_FAILED)):
            self.assertEqual(code, outcomes.exit_code(rows), rows)

    def test_a_translation_changes_no_kind(self):
        # What code asks does not depend on the text a person reads.
        translated = outcomes.Outcome(outcomes.SKIPPED, 'unterbrochen',
                                      outcomes.INTERRUPTED)
        self.assertEqual(1, outcomes.count([translated],
                                           cause=outcomes.INTERRUPTED))
        self.assertEqual('numbered', outcomes.failed('x').with_detail(
            'numbered').detail)
