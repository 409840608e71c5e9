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
"""What the openstack commands share: options, Ctrl-C, exit codes and
their columns.

Every command ends with a code from nova_orphans.exit_codes, the table
nova-orphans-manage shares: ``run`` returns it after every row is
printed (cliff's own convention, 1 for any error and 2 for a usage
error, would tell a script neither what happened nor the same as
nova-orphans-manage). What a command does is nova_orphans/app.
"""

import functools
import os
import shlex
import sys
import textwrap

from cliff import _argparse as cliff_argparse
from cliff.formatters import base as cliff_base
from keystoneauth1 import exceptions as ks_exc
from osc_lib.command import command
import stevedore

from nova_orphans.app import allocations as app_allocations
from nova_orphans.app import api_sources
from nova_orphans.clients import auth as auth_faults
from nova_orphans.conf import orphans as orphans_conf
from nova_orphans import db_utils
from nova_orphans.engine import reasons
from nova_orphans import exception
from nova_orphans import exit_codes
from nova_orphans.i18n import _
from nova_orphans import interrupt
from nova_orphans import output
from nova_orphans import progress as progress_mod

STOPPING = _('%(signal)s: stopping; the requests in flight finish, then '
             'what was done is printed.')


class _HelpFormatter(cliff_argparse.SmartHelpFormatter):
    """Descriptions and the return codes as written, line by line (the
    codes are a list: refilled, they run into one paragraph).
    """

    def _fill_text(self, text, width, indent):
        if '\n' not in text:
            return super()._fill_text(text, width, indent)
        return '\n'.join(indent + line if line else ''
                         for line in text.splitlines())


def _usage_error(parser, message):
    """argparse's usage error, as one line and exit code 127."""
    parser.exit(exit_codes.INVALID_INPUT, '%s: error: %s\n' % (
        parser.prog, message))


def add_progress(parser, what):
    """--progress and --no-progress, as nova-orphans-manage's."""
    parser.add_argument(
        '--progress', action='store_true', dest='progress', default=None,
        help=_('Report progress on stderr (%(what)s), also when stderr is '
               'not a terminal or the output is not a table. Default: on a '
               'terminal, for tables, once the run has lasted a few '
               'seconds.') % {'what': what})
    parser.add_argument('--no-progress', action='store_false',
                        dest='progress', default=None,
                        help=_('Never report progress.'))


def add_retry_options(parser):
    """--retry-budget and --deadline, as [nova_orphans] retry_budget and
    deadline (the retries per request are the cloud's connect_retries
    and status_code_retries, and the timeout osc's --timeout).
    """
    parser.add_argument(
        '--retry-budget', metavar='<seconds>', type=int,
        default=orphans_conf.DEFAULT_RETRY_BUDGET,
        help=_('Seconds a service may fail every request with transient '
               'faults (connection errors, timeouts, 429, 502, 503, 504) '
               'before the run stops retrying it (default: %(default)s; '
               'as [nova_orphans] retry_budget). Reads are retried up to '
               'the cloud\'s connect_retries and status_code_retries '
               'times (default 8 each); a write whose answer was lost is '
               'read back, and sent again only if it was not applied.'))
    parser.add_argument(
        '--deadline', metavar='<seconds>', type=int, default=0,
        help=_('Seconds the run may last: once they have passed no '
               'request is sent (default: 0, none; each request still '
               'waits at most --timeout, by default 60 s).'))


def add_scope(parser, provider_help, host_help, reasons_=True):
    parser.add_argument('--resource-provider', metavar='<uuid>',
                        help=provider_help)
    parser.add_argument('--host', metavar='<host>', help=host_help)
    if reasons_:
        parser.add_argument(
            '--reason', metavar='<reason>', action='append',
            choices=reasons.REASONS, dest='reasons',
            help=_('Only findings with this reason; repeatable. Choices: '
                   '%s.') % ', '.join(reasons.REASONS))
    parser.add_argument(
        '--grace-period', metavar='<seconds>', type=int,
        default=orphans_conf.DEFAULT_GRACE_PERIOD,
        help=_('Leave alone what a live server or its migrations hold if '
               'nova changed the server, a migration or its latest action '
               'less than this many seconds ago (default: %(default)s; as '
               '[nova_orphans] grace_period): nova may still be moving or '
               'deleting those allocations.'))
    # What [nova_orphans] foreign_projects and foreign_consumer_types
    # declare, as there is no configuration file.
    for option, metavar, dest, text in (
            ('--foreign-project', '<project-id>', 'foreign_projects',
             _('A project whose consumers nova has no record of are '
               'another service\'s (unmanaged_consumer, never written); '
               'repeatable. Project ids only: names are not resolved (as '
               '[nova_orphans] foreign_projects).')),
            ('--foreign-consumer-type', '<type>', 'foreign_consumer_types',
             _('A placement consumer type to call another service\'s, on '
               'top of every type nova does not write; repeatable (as '
               '[nova_orphans] foreign_consumer_types).'))):
        parser.add_argument(option, metavar=metavar, action='append',
                            dest=dest, default=[], help=text)


def add_owner(parser):
    """--project and --user, as nova-orphans-manage's."""
    parser.add_argument(
        '--project', metavar='<project-id>',
        help=_('Only the allocations of consumers of this project (its '
               'id), as placement records them: those counted in its '
               'quota usage.'))
    parser.add_argument(
        '--user', metavar='<user-id>',
        help=_('Only the allocations of consumers of this user (its id).'))


def add_repair_options(parser, max_count_help):
    parser.add_argument(
        '--dry-run', action='store_true',
        help=_('Show what would be changed; change nothing.'))
    parser.add_argument(
        '--journal', metavar='<path>',
        help=_('Journal file to append to (default: a new file in '
               '$XDG_STATE_HOME/nova-orphans if XDG_STATE_HOME is set, '
               'else in /var/lib/nova-orphans if this user can write there '
               'or create it, else in ~/.local/state/nova-orphans; mode '
               '0600).'))
    parser.add_argument('--max-count', metavar='<n>', type=int,
                        help=max_count_help)


def listing(parsed_args, dicts):
    """(columns, rows) for a Lister: the manage command's keys, its short
    table with the same headers unless --long or -c asks for more.
    """
    fmt = getattr(parsed_args, 'formatter', None)
    keys = output.columns(dicts, fmt,
                          long=parsed_args.long or bool(parsed_args.columns))
    if fmt != output.TABLE:
        return keys, output.cells(dicts, keys, fmt)
    return _table(parsed_args, keys, output.cells(dicts, keys, fmt))


def record_listing(parsed_args, dicts, keys):
    """(columns, rows) of other records than findings (journals)."""
    data = output.cells(dicts, keys, parsed_args.formatter)
    if getattr(parsed_args, 'formatter', None) != output.TABLE:
        return list(keys), data
    return _table(parsed_args, keys, data)


def _table(parsed_args, keys, data):
    """A table's headers and rows: on a terminal narrower than its rows,
    without the columns that do not fit whole (output.fit_columns), as
    nova-orphans-manage's; they are named once the table is printed
    (OrphanLister.run). Not with --long or -c, which ask for columns.
    """
    if not (parsed_args.long or parsed_args.columns):
        width = output.table_fit_width(
            getattr(parsed_args, 'max_width', None),
            getattr(parsed_args, 'fit_width', None))
        keys, data, parsed_args.dropped_columns = output.fit_columns(
            keys, data, width)
    # -c takes the keys, as in every other format.
    parsed_args.columns = [output.header(c) if c in keys else c
                           for c in parsed_args.columns or ()]
    return [output.header(k) for k in keys], data


class OrphanLister(command.Lister):
    """Every command's base: its signals, its errors and its exit code.

    ``take_action`` keeps its run's result (app.results) in
    ``self.result``; ``finished()`` says what the rows cannot (the
    cells not read) once they are printed.
    """

    # The codes its --help lists (nova_orphans.exit_codes).
    CODES = exit_codes.LIST_CODES
    RESTORING = False
    # Whether it asks the cloud anything (--retry-budget, --deadline).
    REQUESTS = True

    def get_epilog(self):
        return exit_codes.help_text(self.CODES, restoring=self.RESTORING,
                                    bullets=True)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.formatter_class = _HelpFormatter
        parser.error = functools.partial(_usage_error, parser)
        parser.add_argument(
            '--long', '--verbose', action='store_true', dest='long',
            help=_('Show every column in tables (other formats always '
                   'have them all).'))
        if self.REQUESTS:
            add_retry_options(parser)
        return parser

    def sources(self, parsed_args, every_root=True):
        self._sources = api_sources.APISources(
            self.app.client_manager.nova_orphans,
            getattr(parsed_args, 'grace_period',
                    orphans_conf.DEFAULT_GRACE_PERIOD),
            every_root=every_root,
            foreign_projects=getattr(parsed_args, 'foreign_projects', ()),
            foreign_consumer_types=getattr(parsed_args,
                                           'foreign_consumer_types', ()),
            retry_budget=getattr(parsed_args, 'retry_budget', None),
            deadline=getattr(parsed_args, 'deadline', None))
        return self._sources

    def progress(self, parsed_args):
        """The run's Progress, or None (see add_progress), on the
        process's stderr only: progress is for a person at a terminal.
        """
        return progress_mod.for_run(
            parsed_args.progress,
            getattr(parsed_args, 'formatter', None) == output.TABLE,
            sys.stderr) if self.app.stderr is sys.stderr else None

    def say(self, line):
        self.app.stderr.write(line + '\n')

    def notice(self):
        """What a signal prints at once, if the app's stderr is ours."""
        return STOPPING if self.app.stderr is sys.stderr else None

    def warn_unreadable(self, listing, warning):
        for cell in listing.unreadable_cells:
            self.say(warning % {'cell': cell.label, 'error': cell.error})
        for line in output.unread_lines(listing.unread,
                                        listing.unreadable_services):
            self.say(line)

    def finished(self):
        cells = self.result.unreadable_cells if self.result else []
        for what in self.result.unread if self.result else ():
            self.say(_('Incomplete: %(what)s.') % {'what': what})
        if cells:
            self.say(_('Incomplete: %(count)d cell(s) could not be read '
                       '(%(cells)s); their consumers were not checked, and '
                       'are neither listed nor repaired as orphans.') % {
                'count': len(cells),
                'cells': ', '.join(sorted(c.label for c in cells))})

    def own_process(self):
        """Whether this command is the ``openstack`` process itself: not
        a command of osc's interactive shell, nor of a program that runs
        osc's shell in-process. Only then may a signal end the process
        at once, as it ends ``nova-orphans-manage``.
        """
        return (not self.app.interactive_mode and
                os.path.basename(sys.argv[0]) == 'openstack')

    def run(self, parsed_args):
        self.stop = interrupt.Stop(
            exit_now=interrupt.exit_now if self.own_process() else None)
        self.result = None
        self._sources = None
        try:
            with self.stop.handled():
                super().run(parsed_args)
                dropped = getattr(parsed_args, 'dropped_columns', None)
                if dropped:
                    # As wide as the table it follows.
                    self.say(textwrap.fill(
                        output.dropped_note(dropped),
                        output.table_fit_width(parsed_args.max_width,
                                               parsed_args.fit_width),
                        break_on_hyphens=False))
                self.finished()
                line = output.retries_line(
                    self._sources.retries if self._sources else None)
                if line:
                    self.say(line)
                code = self.result.exit_code
                if (self.stop.signum is not None and
                        code != exit_codes.of_signal(self.stop.signum)):
                    self.say(_('Interrupted by %(signal)s as the run ended; '
                               'its report above is complete.') % {
                        'signal': interrupt.signal_name(self.stop.signum)})
                    code = exit_codes.of_signal(self.stop.signum)
                return code
        except interrupt.Interrupted as e:
            self.say(interrupt.nothing_changed(e.signum))
            return exit_codes.of_signal(e.signum)
        except ks_exc.ClientException as e:
            # Authentication happens on the first request, in osc's
            # session: keystone's answer, not a request of ours.
            error = auth_faults.fault(e) or exception.NovaOrphansException(
                str(e))
            self.say(db_utils.safe_error(error))
            return exit_codes.of_error(error)
        except exception.NovaOrphansException as e:
            self.say(db_utils.safe_error(e))
            return exit_codes.of_error(e)


class Repairing(OrphanLister):
    """clean and restore: every row is printed first, with its outcome;
    then what failed, the journal, and what a signal stopped.
    """

    CODES = exit_codes.CLEAN_CODES

    def report(self, result, what):
        """The rows' outcomes as shown: one line per cause of failure."""
        self.result = result
        shown, causes = output.group_failures(result.outcomes)
        for line in output.failure_lines(causes):
            self.say(line)
        if result.allocation_outcomes:
            self.say(output.repairs_line(result.allocation_outcomes))
        if result.conflicts:
            self.say(result.conflicts_note())
        if result.journal_path is not None:
            self.say(_('Journal: %(path)s') % {'path': result.journal_path})
            self.say(_('To undo: %(command)s') % {
                'command': self.restore_command(result)})
        if result.signum is not None:
            self.say(_('Interrupted by %(signal)s: %(done)d %(what)s done; '
                       '%(left)d not attempted (skipped: interrupted).') % {
                'signal': interrupt.signal_name(result.signum),
                'done': result.done, 'left': result.not_attempted,
                'what': what})
        return output.rows_as_dicts(result.rows, shown)

    def restore_command(self, result):
        """The command that undoes ``result``'s run: against the cloud
        it ran on (--os-cloud, when clouds.yaml named it), whatever
        cloud the shell that runs it defaults to.
        """
        argv = ['openstack']
        if result.cloud.get('name'):
            argv += ['--os-cloud', result.cloud['name']]
        argv += ['allocation', 'orphan', 'restore', '--journal',
                 result.journal_path]
        return ' '.join(shlex.quote(word) for word in argv)


class Restoring(Repairing):
    """restore, of either command family: the same journal replay."""

    CODES = exit_codes.RESTORE_CODES
    RESTORING = True

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--journal', metavar='<path>', required=True,
            help=_('The journal written by "clean".'))
        parser.add_argument(
            '--dry-run', action='store_true',
            help=_('Show what would be restored; change nothing.'))
        add_progress(parser, _('journal entries restored'))
        return parser

    def metrics(self, parsed_args):
        """No metrics, but where WithMetrics comes first."""
        return None

    def show_metrics(self, parsed_args, metrics):
        pass

    def take_action(self, parsed_args):
        metrics = self.metrics(parsed_args)
        result = app_allocations.restore(
            self.sources(parsed_args), parsed_args.journal, self.stop,
            dry_run=parsed_args.dry_run, progress=self.progress(parsed_args),
            warn=self.say, notice=self.notice(), metrics=metrics)
        rows = self.report(result, _('restore(s)'))
        self.show_metrics(parsed_args, metrics)
        return listing(parsed_args, rows)


class PrometheusFormatter(cliff_base.ListFormatter):
    """node_exporter textfile-collector metrics of the run (see
    nova_orphans.metrics): of the whole scan for list, of the rows for
    clean and restore, as "nova-orphans-manage allocations ... --format
    prometheus"; the rows of the listing are not printed.
    """

    text = ''

    def add_argument_group(self, parser):
        pass

    def emit_list(self, column_names, data, stdout, parsed_args):
        stdout.write(self.text)


class WithMetrics:
    """``-f prometheus`` and ``--metrics-file`` (the allocation orphan
    commands), first among a command's bases.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--metrics-file', metavar='<path>',
            help=_('Also write the run\'s Prometheus metrics to <path>, '
                   'atomically (for node_exporter\'s textfile '
                   'collector), incomplete runs included; a run that '
                   'stops on an error leaves the file as it was.'))
        return parser

    def _load_formatter_plugins(self):
        # "-f prometheus" for these commands only: a cliff formatter
        # plugin would offer it to every openstack listing.
        manager = super()._load_formatter_plugins()
        if self.formatter_namespace != 'cliff.formatter.list':
            return manager
        prometheus = stevedore.extension.Extension(
            'prometheus', None, PrometheusFormatter, PrometheusFormatter())
        return stevedore.ExtensionManager.make_test_instance(
            list(manager) + [prometheus], namespace=manager.namespace)

    def metrics(self, parsed_args):
        """The run's app.allocations.Metrics, or None."""
        if parsed_args.metrics_file or parsed_args.formatter == 'prometheus':
            return app_allocations.Metrics(
                parsed_args.metrics_file, getattr(
                    parsed_args, 'metrics_max_projects',
                    orphans_conf.DEFAULT_METRICS_MAX_PROJECTS))
        return None

    def show_metrics(self, parsed_args, metrics):
        if parsed_args.formatter == 'prometheus':
            self._formatter_plugins['prometheus'].obj.text = metrics.text
