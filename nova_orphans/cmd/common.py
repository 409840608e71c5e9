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
"""What the nova-orphans-manage categories share: their options, Ctrl-C,
the command lines they print, and how a run is reported.

A category (cmd/allocations.py, cmd/providers.py) parses its options,
calls the application layer (nova_orphans/app) and renders the result
here; what a command does is there, not here.
"""

import contextlib
import functools
import gc
import shlex
import shutil
import sys
import textwrap

from nova_orphans.app import allocations as app_allocations
from nova_orphans.app import sources as sources_mod
from nova_orphans.engine import reasons
from nova_orphans import exception
from nova_orphans import exit_codes
from nova_orphans.i18n import _
from nova_orphans import interrupt
from nova_orphans import output
from nova_orphans import progress as progress_mod


def args(*a, **kw):
    """Attach an argparse argument to an action, as nova-manage does."""
    def decorator(func):
        func.__dict__.setdefault('args', []).insert(0, (a, kw))
        return func
    return decorator


def decorators(*each):
    """One decorator applying ``each`` in the order written."""
    def decorator(func):
        for one in reversed(each):
            func = one(func)
        return func
    return decorator


def with_scope(provider_help, host_help, reasons_=True):
    """--resource-provider, --host (and --reason), as the osc commands'."""
    options = [
        args('--resource-provider', metavar='UUID', dest='resource_provider',
             help=provider_help),
        args('--host', metavar='HOST', help=host_help),
    ]
    if reasons_:
        options.append(args(
            '--reason', metavar='REASON', action='append',
            choices=reasons.REASONS, dest='reasons',
            help=_('Only findings with this reason; repeatable. Choices: '
                   '%s.') % ', '.join(reasons.REASONS)))
    options.append(args(
        '--grace-period', metavar='SECONDS', type=int, dest='grace_period',
        help=_('Leave alone what a live server or its migrations hold if '
               'nova changed them less than this many seconds ago '
               '(default: [nova_orphans] grace_period).')))
    return decorators(*options)


def with_owner(func):
    """--project and --user, as the osc commands'."""
    return decorators(
        args('--project', metavar='PROJECT_ID', dest='project',
             help=_('Only the allocations of consumers of this project '
                    '(its id), as placement records them: those counted '
                    'in its quota usage.')),
        args('--user', metavar='USER_ID', dest='user',
             help=_('Only the allocations of consumers of this user (its '
                    'id).')))(func)


def with_format(*extra, help_extra=''):
    """-f/--format: every format both front ends offer, and ``extra``."""
    choices = output.FORMATS + extra
    return args('-f', '--format', choices=choices, default='table',
                dest='format',
                help=_('Output format: %(choices)s (default: table). value '
                       'and csv print plain fields, resources as '
                       'VCPU=1,MEMORY_MB=512.%(extra)s') % {
                    'choices': ', '.join(choices), 'extra': help_extra})


def with_long(func):
    """--verbose, and osc's name for it, --long."""
    return args('--verbose', '--long', action='store_true', dest='verbose',
                help=_('Show every column in tables (other formats always '
                       'have them all).'))(func)


def with_repair_options(what):
    return decorators(
        args('--dry-run', action='store_true', dest='dry_run',
             help=_('Show what would be changed; change nothing.')),
        args('--journal', metavar='PATH',
             help=_('Journal file to append to (default: a new file in '
                    '[nova_orphans] state_path if set, else in '
                    '$XDG_STATE_HOME/nova-orphans if XDG_STATE_HOME is '
                    'set, else in /var/lib/nova-orphans if this user can '
                    'write there or create it, else in '
                    '~/.local/state/nova-orphans; mode 0600).')),
        args('--max-count', metavar='N', type=int, dest='max_count',
             help=what))


def with_metrics_file(func):
    """``--metrics-file PATH``: see nova_orphans.metrics."""
    return args('--metrics-file', metavar='PATH', dest='metrics_file',
                help=_('Also write the run\'s Prometheus metrics to PATH, '
                       'atomically (for node_exporter\'s textfile '
                       'collector), incomplete runs included; a run that '
                       'stops on an error leaves the file as it was.')
                )(func)


PROMETHEUS_HELP = _(' "prometheus": the run\'s metrics (node_exporter '
                    'textfile collector) instead of its rows.')


def with_progress(what):
    """``--progress`` and ``--no-progress``: by default progress is shown
    on a terminal, for table output, once a run lasts a few seconds.
    """
    def decorator(func):
        func = args('--no-progress', action='store_false', dest='progress',
                    default=None,
                    help=_('Never report progress.'))(func)
        return args('--progress', action='store_true', dest='progress',
                    default=None,
                    help=_('Report progress on stderr (%(what)s), also when '
                           'stderr is not a terminal or the output is not '
                           'a table. Default: on a terminal, for tables, '
                           'once the run has lasted a few seconds.') %
                    {'what': what})(func)
    return decorator


def with_table_width(func):
    """cliff's table options, so both front ends fit a terminal alike."""
    func = args('--fit-width', action='store_true', dest='fit_width',
                default=None,
                help=_('Fit the table to the terminal\'s width (the default '
                       'when stdout is a terminal); CLIFF_FIT_WIDTH=1 '
                       'does the same.'))(func)
    return args('--max-width', metavar='N', type=int, dest='max_width',
                default=None,
                help=_('Fit the table to N columns (less than 1: do not '
                       'fit); takes precedence over CLIFF_MAX_TERM_WIDTH.')
                )(func)


def interruptible(func):
    """SIGINT and SIGTERM end the action with 130 or 143, never a
    traceback (see nova_orphans.interrupt).

    An action stopped while it only reads says so in one line; one that
    writes reports what it did (Commands.report). A signal that comes
    after the last write, while the report is printed, is said too, and
    ends the run 130/143 all the same.
    """
    @functools.wraps(func)
    def wrapper(self):
        self._stop = interrupt.Stop(
            exit_now=interrupt.exit_now if self.console else None)
        try:
            with self._stop.handled():
                code = func(self)
                self.say_retries()
                if (self._stop.signum is not None and
                        code != exit_codes.of_signal(self._stop.signum)):
                    print(_('Interrupted by %(signal)s as the run ended; '
                            'its report above is complete.') % {
                        'signal': interrupt.signal_name(
                            self._stop.signum)}, file=sys.stderr)
                    code = exit_codes.of_signal(self._stop.signum)
                return code
        except interrupt.Interrupted as e:
            if self._progress_:
                self._progress_.abandon()
            print(interrupt.nothing_changed(e.signum), file=sys.stderr)
            return exit_codes.of_signal(e.signum)
    return wrapper


STOPPING = _('%(signal)s: stopping; the requests in flight finish, then '
             'what was done is printed.')


class Commands:
    """One category's actions over one run's sources."""

    CATEGORY = None

    def __init__(self, conf, console=False):
        self.conf = conf
        self.console = console
        self.cmd = conf.category
        self._sources = None
        self._progress_ = None
        self._stop = interrupt.Stop()

    def close(self):
        """Let go of the database connections the run kept."""
        if self._sources is not None:
            self._sources.close()

    def sources(self):
        if self._sources is None:
            grace = getattr(self.cmd, 'grace_period', None)
            if grace is not None:
                if grace < 0:
                    raise exception.InvalidInput(
                        reason=_('--grace-period must not be negative'))
                self.conf.set_override('grace_period', grace,
                                       group='nova_orphans')
            self._sources = sources_mod.DatabaseSources(self.conf)
        return self._sources

    @contextlib.contextmanager
    def collector_paused(self):
        """No cyclic collection while a run's snapshot is built and
        shown (see app.allocations.collector_paused). Run as the console
        script, whatever is alive at the end is frozen too, as
        manage.main froze the imports: else turning the collector back
        on walks all of it once more (a tenth of a second at 10,000
        nodes) right before it is freed.
        """
        with app_allocations.collector_paused():
            yield
            if self.console:
                gc.freeze()

    def progress(self):
        """The run's Progress, or None: see with_progress."""
        if self._progress_ is None:
            self._progress_ = progress_mod.for_run(
                getattr(self.cmd, 'progress', None),
                getattr(self.cmd, 'format', 'table') == 'table',
                sys.stderr) or False
        return self._progress_ or None

    def notice(self):
        return STOPPING

    def say_retries(self):
        """The requests retried, once the run is reported, on stderr."""
        line = output.retries_line(
            self._sources.retries if self._sources is not None else None)
        if line:
            print(line, file=sys.stderr)

    def metrics(self):
        """The run's app.allocations.Metrics, or None when neither
        --format prometheus nor --metrics-file asks for them.
        """
        path = getattr(self.cmd, 'metrics_file', None)
        if path or self.cmd.format == 'prometheus':
            return app_allocations.Metrics(
                path, self.conf.nova_orphans.metrics_max_projects)
        return None

    # Output ------------------------------------------------------------

    @property
    def table(self):
        return self.cmd.format == output.TABLE

    def render(self, rows):
        self.say_dropped(output.render(
            rows, self.cmd.format, sys.stdout,
            verbose=getattr(self.cmd, 'verbose', False),
            max_width=getattr(self.cmd, 'max_width', None),
            fit_width=getattr(self.cmd, 'fit_width', None)))

    def render_records(self, dicts, keys):
        """Other records than findings (journals, projects), as render."""
        self.say_dropped(output.render_records(
            dicts, keys, self.cmd.format, sys.stdout,
            max_width=getattr(self.cmd, 'max_width', None),
            fit_width=getattr(self.cmd, 'fit_width', None),
            verbose=getattr(self.cmd, 'verbose', False)))

    def say_dropped(self, dropped):
        """Under a table that left columns out for the terminal's width,
        which ones and how to see them.
        """
        if dropped:
            self.say([output.dropped_note(dropped)])

    def width(self):
        """The columns a line may take on stdout, or None: a terminal's
        width (or --max-width), so that no line of a table's summary
        runs past it.
        """
        max_width = getattr(self.cmd, 'max_width', None)
        if max_width is not None:
            return max_width if max_width > 0 else None
        if progress_mod.is_terminal(sys.stdout):
            return shutil.get_terminal_size().columns
        return None

    def say(self, lines, stream=None):
        """Lines of prose, wrapped to the terminal; a command stays one
        shell command, continued with backslashes.
        """
        stream = stream or sys.stdout
        width = self.width() if stream is sys.stdout else None
        for line in lines:
            print(_wrap(line, width), file=stream)

    def command(self, action, *argv, category=None):
        """The nova-orphans-manage command line that runs ``action``
        with the configuration this run read, ready to paste.
        """
        words = ['nova-orphans-manage']
        files = list(self.conf.config_file or ())
        if files != list(self.conf.default_config_files or ()):
            for path in files:
                words += ['--config-file', path]
        # oslo.config keeps every --config-dir given, as a list.
        dirs = self.conf.config_dir or ()
        if isinstance(dirs, str):
            dirs = [dirs]
        if list(dirs) != list(self.conf.default_config_dirs or ()):
            for path in dirs:
                words += ['--config-dir', path]
        words += [category or self.CATEGORY, action] + list(argv)
        return ' '.join(shlex.quote(w) for w in words)

    def filters(self):
        """The scope's options, for the command printed as "Next:"."""
        argv = []
        if self.cmd.resource_provider:
            argv += ['--resource-provider', self.cmd.resource_provider]
        if self.cmd.host:
            argv += ['--host', self.cmd.host]
        for reason in getattr(self.cmd, 'reasons', None) or ():
            argv += ['--reason', reason]
        for option in ('project', 'user'):
            if getattr(self.cmd, option, None) is not None:
                argv += ['--' + option, getattr(self.cmd, option)]
        return argv

    def show_listing(self, listing, summary, groups=None):
        """A list's rows in the chosen format, or ``groups`` instead
        (``(keys, dicts)`` of other records: a row per project); a
        table closes with ``summary(rows, cells not read, the command
        to run next)``.
        """
        if groups is None and self.cmd.format == 'json':
            # Streamed: a row is made when it is written.
            self.render(output.iter_dicts(listing.rows))
            return
        rows = output.rows_as_dicts(listing.rows)
        if groups is not None:
            keys, dicts = groups
            if dicts or not self.table:
                self.render_records(dicts, keys)
        elif rows or not self.table:
            self.render(rows)
        if self.table:
            self.say(summary(
                rows, [c.label for c in listing.unreadable_cells],
                self.command('clean', '--dry-run', *self.filters())))

    def warn_unreadable(self, listing, warning):
        """Each unreadable cell, and anything else not read, first, on
        stderr: no output can look complete.
        """
        for cell in listing.unreadable_cells:
            print(warning % {'cell': cell.label, 'error': cell.error},
                  file=sys.stderr)
        for line in output.unread_lines(listing.unread,
                                        listing.unreadable_services):
            print(line, file=sys.stderr)

    def report(self, result, what, nothing, metrics=None):
        """Print a clean's or restore's rows (or its ``metrics``, for
        --format prometheus), what failed once per cause, its summary,
        its journal and what a signal stopped; return its exit code.
        """
        if result.conflicts:
            print(result.conflicts_note(), file=sys.stderr)
        if result.allocation_outcomes and self.table:
            self.say([output.repairs_line(result.allocation_outcomes)])
        shown, causes = output.group_failures(result.outcomes)
        dicts = output.rows_as_dicts(result.rows, shown)
        if self.cmd.format == 'prometheus':
            sys.stdout.write(metrics.text)
        elif dicts or not self.table:
            self.render(dicts)
        if self.table:
            self.say([output.outcome_summary(result.outcomes)]
                     if result.outcomes else [nothing])
        self.say(output.failure_lines(causes), sys.stderr)
        if result.journal_path is not None:
            print(_('Journal: %(path)s') % {'path': result.journal_path},
                  file=sys.stderr)
            # restore is an "allocations" action whichever category ran.
            print(_('To undo: %(command)s') % {'command': self.command(
                'restore', '--journal', result.journal_path,
                category='allocations')}, file=sys.stderr)
        if result.signum is not None:
            print(_('Interrupted by %(signal)s: %(done)d %(what)s done; '
                    '%(left)d not attempted (skipped: interrupted).') % {
                'signal': interrupt.signal_name(result.signum),
                'done': result.done, 'left': result.not_attempted,
                'what': what}, file=sys.stderr)
        return result.exit_code

    def restore_journal(self):
        """Either category's restore: the same journal replay."""
        metrics = self.metrics()
        result = app_allocations.restore(
            self.sources(), self.cmd.journal, self._stop,
            dry_run=self.cmd.dry_run, progress=self.progress(),
            warn=lambda warning: print(warning, file=sys.stderr),
            notice=self.notice(), metrics=metrics)
        code = self.report(result, _('restore(s)'),
                           _('The journal holds no change to restore.'),
                           metrics)
        if result.signum is not None and result.not_attempted:
            print(_('To restore the rest: %(command)s') % {
                'command': self.command('restore', '--journal',
                                        self.cmd.journal)},
                  file=sys.stderr)
        return code


def _wrap(line, width):
    """``line`` in lines of at most ``width``; a line naming a command
    is continued with backslashes, so that it still pastes as one.
    """
    if width is None or len(line) <= width:
        return line
    if 'nova-orphans-manage ' not in line:
        return '\n'.join(textwrap.wrap(line, width, break_long_words=False,
                                       break_on_hyphens=False))
    return ' \\\n'.join(textwrap.wrap(
        line, max(width - 2, 20), break_long_words=False,
        break_on_hyphens=False, subsequent_indent='    '))
