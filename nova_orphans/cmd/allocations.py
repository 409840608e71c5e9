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
"""``nova-orphans-manage allocations ...``: list, clean, restore."""

import contextlib
import functools
import gc
import os
import shlex
import sys
import time

from nova_orphans.conf import placement as placement_conf
from nova_orphans.engine import reasons
from nova_orphans.engine import site_rules
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans import interrupt
from nova_orphans import metrics
from nova_orphans import output
from nova_orphans import progress as progress_mod
from nova_orphans.readers import nova_db
from nova_orphans.readers import placement_api
from nova_orphans.readers import placement_db
from nova_orphans.readers import snapshot as snapshot_mod
from nova_orphans.repair import actions
from nova_orphans.repair import journal
from nova_orphans.repair import restore as restore_mod


def args(*a, **kw):
    """Attach an argparse argument to an action, as nova-manage does."""
    def decorator(func):
        func.__dict__.setdefault('args', []).insert(0, (a, kw))
        return func
    return decorator


FILTER_ARGS = (
    args('--resource-provider', metavar='UUID', dest='resource_provider',
         help=_('Only allocations on this provider and its descendants.')),
    args('--host', metavar='HOST',
         help=_('Only allocations on the provider trees of this compute '
                'host\'s nodes.')),
    args('--reason', metavar='REASON', action='append',
         choices=reasons.REASONS, dest='reasons',
         help=_('Only findings with this reason; repeatable. Choices: '
                '%s.') % ', '.join(reasons.REASONS)),
)


def with_filters(func):
    for decorator in reversed(FILTER_ARGS):
        func = decorator(func)
    return func


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


def with_metrics_file(func):
    """``--metrics-file PATH``: see nova_orphans.metrics."""
    return args('--metrics-file', metavar='PATH', dest='metrics_file',
                help=_('Also write the run\'s Prometheus metrics to PATH, '
                       'atomically (for node_exporter\'s textfile '
                       'collector), incomplete runs included; a run that '
                       'stops on an error leaves the file as it was.')
                )(func)


def interruptible(func):
    """SIGINT and SIGTERM end the action with 130 or 143, never a
    traceback (see nova_orphans.interrupt).

    An action that is stopped while it only reads says so in one line;
    one that writes calls ``self._stop.start_writing()`` first, and
    reports what it did itself.
    """
    @functools.wraps(func)
    def wrapper(self):
        self._stop = interrupt.Stop(
            exit_now=_exit_now if self.console else None)
        try:
            with self._stop.handled():
                return func(self)
        except interrupt.Interrupted as e:
            if self._progress_:
                self._progress_.abandon()
            print(_nothing_changed(e.signum), file=sys.stderr)
            return interrupt.exit_code(e.signum)
    return wrapper


def _nothing_changed(signum):
    return _('Interrupted by %(signal)s; nothing was changed.') % {
        'signal': interrupt.signal_name(signum)}


def _exit_now(signum):
    """The console script, stopped before any write: one line and out
    at once (see interrupt.Stop), the request in flight abandoned.
    """
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    interrupt.say(('\n' if progress_mod.is_terminal(sys.stderr) else '') +
                  _nothing_changed(signum))
    os._exit(interrupt.exit_code(signum))


class AllocationCommands:
    """Placement allocations that no live nova object owns."""

    def __init__(self, conf, console=False):
        self.conf = conf
        self.console = console
        self.cmd = conf.category
        self._placement = None
        self._nova = None
        self._placement_db = None
        self._progress_ = None
        self._stop = interrupt.Stop()
        self._snapshot = None
        self._started = time.monotonic()

    def close(self):
        """Let go of the database connections the command kept."""
        for reader in (self._nova, self._placement_db):
            if reader is not None:
                reader.close()

    @classmethod
    def actions(cls):
        return [('list', cls.list), ('clean', cls.clean),
                ('restore', cls.restore)]

    def _client(self):
        if self._placement is None:
            # keystoneauth, and [placement]'s options, only from here on
            # (see nova_orphans.conf.register_opts).
            from nova_orphans.clients import placement as placement_client
            placement_conf.register_opts(self.conf)
            self._placement = placement_client.PlacementClient.from_conf(
                self.conf)
        return self._placement

    def _api_reader(self):
        return placement_api.PlacementAPIReader(
            self._client(), self.conf.nova_orphans.placement_concurrency)

    def _audit(self):
        self._nova = nova_db.NovaDBReader(self.conf)
        self._placement_db = None
        if self.conf.placement_database.connection:
            # Fast mode: bulk reads from placement's database; the API
            # still serves fresh consumer documents and every write.
            opts = self.conf.nova_orphans
            reader = self._placement_db = placement_db.PlacementDBReader(
                self.conf.placement_database.connection,
                api_reader=_OnFirstUse(self._api_reader),
                max_retries=opts.db_max_retries,
                retry_interval=opts.db_retry_interval)
        else:
            reader = self._api_reader()
        self._rules = site_rules.chain(self.conf)
        return snapshot_mod.Audit(reader, self._nova,
                                  progress=self._progress(),
                                  rules=self._rules)

    @contextlib.contextmanager
    def _collector_paused(self):
        """No cyclic collection while the snapshot is built and shown.

        See snapshot.gc_paused. Run as the console script, whatever is
        alive at the end is frozen too, as manage.main froze the imports:
        else turning the collector back on walks all of it once more
        (a tenth of a second at 10,000 nodes) right before it is freed.
        """
        with snapshot_mod.gc_paused():
            yield
            if self.console:
                gc.freeze()

    def _progress(self):
        """The run's Progress, or None: see with_progress."""
        if self._progress_ is None:
            forced = getattr(self.cmd, 'progress', None)
            terminal = progress_mod.is_terminal(sys.stderr)
            if forced:
                self._progress_ = progress_mod.Progress(sys.stderr,
                                                        tty=terminal)
            elif (forced is None and terminal and
                    getattr(self.cmd, 'format', 'table') == 'table'):
                self._progress_ = progress_mod.Progress(
                    sys.stderr, tty=True, delay=progress_mod.AUTO_DELAY)
            else:
                self._progress_ = False
        return self._progress_ or None

    def _findings(self, show_all=False, everything=False):
        # Bad input is refused before anything is contacted.
        snapshot_mod.validate_uuid(self.cmd.resource_provider,
                                   _('Resource provider'))
        return self._run(
            self._audit(), self.cmd.resource_provider,
            None if everything else self._shown(show_all),
            _('WARNING: cell %(cell)s could not be read (%(error)s); its '
              'consumers are reported as unverifiable, never as orphans.'))

    def _run(self, audit, resource_provider, shown, unreadable_warning):
        """The audit's findings; each unreadable cell is warned about
        first, on stderr, so that no output can look complete.
        """
        findings = audit.run(resource_provider=resource_provider,
                             host=self.cmd.host, shown=shown)
        self._snapshot = audit.snapshot
        unreadable = audit.snapshot.nova.unreadable_cells
        self._unreadable = [c.label for c in unreadable]
        for cell in unreadable:
            print(unreadable_warning % {'cell': cell.label,
                                        'error': cell.error},
                  file=sys.stderr)
        return findings

    def _shown(self, show_all):
        """Which findings to show, by reason and action (see Audit.run).

        Called once per allocation, so the options are read once, here.
        """
        reasons_ = self.cmd.reasons
        if reasons_:
            return lambda finding: finding.reason in reasons_
        if show_all:
            return lambda finding: True
        return lambda finding: finding.is_orphan

    @with_filters
    @args('--all', action='store_true', dest='show_all',
          help=_('Also list allocations that are fine, with action '
                 '"none" and the reason they are fine.'))
    @args('--format', choices=('table', 'json', 'prometheus'),
          default='table', dest='format',
          help=_('Output format (default: table). "prometheus" writes '
                 'node_exporter textfile-collector metrics for every '
                 'reason, ignoring --reason and --all.'))
    @args('--verbose', action='store_true',
          help=_('Show every column in tables.'))
    @with_metrics_file
    @with_progress(_('providers read, consumers checked'))
    @with_table_width
    @interruptible
    def list(self):
        """List orphaned allocations with their reason and repair action.

        Reads the nova API database, every cell database and placement;
        changes nothing. Returns 3 when orphans are listed, 0 when none;
        5 and 2 instead when a cell could not be read; 130/143 when
        stopped by SIGINT/SIGTERM. A table ends with what the orphans
        hold and the command to run next.
        """
        self._check_metrics_file()
        if self.cmd.format == 'prometheus':
            return self._metrics()
        # The snapshot stays alive while the rows are built: no
        # collector passes over it.
        with self._collector_paused():
            findings = self._findings(self.cmd.show_all,
                                      everything=bool(self.cmd.metrics_file))
            if self.cmd.metrics_file:
                self._scan_metrics(findings)
                shown = self._shown(self.cmd.show_all)
                findings = [f for f in findings if shown(f)]
            if self.cmd.format == 'json':
                # Streamed: a row is made when it is written.
                self._render(output.iter_dicts(findings))
            else:
                rows = output.rows_as_dicts(findings)
                if rows:
                    self._render(rows)
                self._say(output.list_summary(
                    rows, self._unreadable,
                    self._command('clean', '--dry-run', *self._filters())))
        return self._complete_or(3 if any(f.is_orphan for f in findings)
                                 else 0)

    def _metrics(self):
        with self._collector_paused():
            findings = self._findings(everything=True)
            sys.stdout.write(self._scan_metrics(findings))
        return self._complete_or(3 if any(f.is_orphan for f in findings)
                                 else 0)

    def _check_metrics_file(self):
        if getattr(self.cmd, 'metrics_file', None):
            metrics.check_path(self.cmd.metrics_file)

    def _unreadable_cells(self):
        return (len(self._snapshot.nova.unreadable_cells)
                if self._snapshot is not None else 0)

    def _scan_metrics(self, findings):
        return metrics.scan(findings, time.monotonic() - self._started,
                            unreadable_cells=self._unreadable_cells(),
                            metrics_file=self.cmd.metrics_file)

    def _complete_or(self, code):
        """``code``, unless part of the cloud could not be read.

        A run that could not read a cell has not shown that the cell's
        consumers are fine: it must not exit 0, which a cron job or an
        alert reads as "no orphans". 2 when the part read had no orphan,
        5 when it had (listed or repaired); 1, a failed repair, still
        wins. See manage's return codes.
        """
        if code == 1 or self._snapshot is None or (
                not self._snapshot.nova.unreadable_cells):
            return code
        return 5 if code in (3, 4) else 2

    def _render(self, rows):
        if self.cmd.format == 'json':
            output.render_json(rows, sys.stdout)
        else:
            output.render_table(rows, sys.stdout,
                                verbose=getattr(self.cmd, 'verbose', False),
                                max_width=self.cmd.max_width,
                                fit_width=self.cmd.fit_width)

    def _say(self, lines, stream=None):
        for line in lines:
            print(line, file=stream or sys.stdout)

    def _command(self, action, *argv):
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
        words += ['allocations', action] + list(argv)
        return ' '.join(shlex.quote(w) for w in words)

    def _filters(self):
        argv = []
        if self.cmd.resource_provider:
            argv += ['--resource-provider', self.cmd.resource_provider]
        if self.cmd.host:
            argv += ['--host', self.cmd.host]
        for reason in self.cmd.reasons or ():
            argv += ['--reason', reason]
        return argv

    def _finish_repairs(self, rows, outcomes, nothing):
        """Print the rows of a clean or restore, what failed once per
        cause, and the summary.
        """
        shown, causes = output.group_failures(outcomes)
        if (getattr(self.cmd, 'metrics_file', None) or
                self.cmd.format == 'prometheus'):
            text = metrics.repair(
                self.cmd.action_fn, rows, outcomes,
                time.monotonic() - self._started,
                unreadable_cells=self._unreadable_cells(),
                metrics_file=self.cmd.metrics_file)
            if self.cmd.format == 'prometheus':
                sys.stdout.write(text)
                self._say(output.failure_lines(causes), sys.stderr)
                return
        dicts = output.rows_as_dicts(rows, shown)
        # A restore of "providers clean" has rows of both kinds: one
        # table each, one JSON list.
        providers = [d for d in dicts if 'consumer' not in d]
        if self.cmd.format == 'json' or len(providers) < len(dicts):
            self._render(dicts if self.cmd.format == 'json' else
                         [d for d in dicts if 'consumer' in d])
        if providers and self.cmd.format != 'json':
            from nova_orphans.cmd import providers as providers_cmd
            providers_cmd.render_table(providers, sys.stdout,
                                       max_width=self.cmd.max_width,
                                       fit_width=self.cmd.fit_width)
        if self.cmd.format != 'json':
            self._say([output.outcome_summary(outcomes)] if outcomes
                      else [nothing])
        self._say(output.failure_lines(causes), sys.stderr)

    def _interrupted(self, outcomes, what):
        signum = self._stop.signum
        print(_('Interrupted by %(signal)s: %(done)d %(what)s done; '
                '%(left)d not attempted (skipped: interrupted).') % {
            'signal': interrupt.signal_name(signum),
            'done': sum(1 for o in outcomes if o == actions.DONE),
            'left': sum(1 for o in outcomes if o == actions.interrupted()),
            'what': what}, file=sys.stderr)
        return interrupt.exit_code(signum)

    @with_filters
    @args('--dry-run', action='store_true', dest='dry_run',
          help=_('Show what would be repaired; change nothing.'))
    @args('--journal', metavar='PATH',
          help=_('Journal file to append to (default: a new file in '
                 '[nova_orphans] state_path, mode 0600).'))
    @args('--max-count', metavar='N', type=int, dest='max_count',
          help=_('Change at most N consumers.'))
    @args('--heal', action='store_true',
          help=_('Also create allocations for live instances that have '
                 'none (missing_allocations), from their flavor.'))
    @args('--format', choices=('table', 'json', 'prometheus'),
          default='table', dest='format',
          help=_('Output format (default: table). "prometheus": the '
                 'run\'s metrics, not its rows.'))
    @with_metrics_file
    @with_progress(_('providers read, consumers checked, consumers '
                     'repaired'))
    @with_table_width
    @interruptible
    def clean(self):
        """Repair orphaned allocations, journaled and generation-checked.

        Each consumer is re-verified against nova and placement right
        before its write; the journal (written before every change)
        lets "restore" undo the run. Returns 0 nothing to do, 3 found
        but nothing changed (--dry-run, or every finding skipped), 4
        repaired, 1 a repair failed (the others were still done); 5 and
        2 instead of 3 or 4 and 0 when a cell could not be read; 130/143
        stopped by SIGINT/SIGTERM (what was done is printed).
        """
        self._check_repair_options()
        findings = [f for f in self._findings() if f.is_orphan]

        def repair(repairer, journal_):
            rows, outcomes = repairer.clean(findings)
            return rows, outcomes, ()

        return self._repair(findings, repair,
                            _('No orphaned allocations found.'),
                            _('repair(s)'), max_count=self.cmd.max_count,
                            heal=self.cmd.heal)

    def _check_repair_options(self):
        """Refuse bad --max-count and --journal before anything is read."""
        if self.cmd.max_count is not None and self.cmd.max_count < 1:
            raise exception.InvalidInput(
                reason=_('--max-count must be at least 1'))
        self._check_metrics_file()
        if self.cmd.journal is not None and not self.cmd.dry_run:
            journal.check_path(self.cmd.journal)

    def _repair(self, orphans, work, nothing, what, **options):
        """One clean run of either category, around ``work``.

        ``work(repairer, journal)`` does the writes and returns (rows,
        outcomes, lines to say before the rows). The journal is opened
        only when there is something to write and closed whatever
        happens; its path and the command that undoes the run are
        printed once it holds anything. ``options`` go to the Repairer.
        """
        journal_ = None
        if orphans and not self.cmd.dry_run:
            journal_ = journal.Journal(
                self.cmd.journal or
                journal.default_path(self.conf.nova_orphans.state_path),
                placement=self._client().endpoint)
        repairer = actions.Repairer(
            self._client(), self._nova, self._snapshot, journal=journal_,
            dry_run=self.cmd.dry_run,
            concurrency=self.conf.nova_orphans.placement_concurrency,
            progress=self._progress(), rules=self._rules,
            placement_db=self._placement_db, stop=self._stop, **options)
        self._stop.start_writing(_STOPPING)
        try:
            rows, outcomes, lines = work(repairer, journal_)
        finally:
            if journal_ is not None:
                journal_.close()
        if repairer.conflicts:
            print(actions.other_writers_note(repairer.conflicts),
                  file=sys.stderr)
        if lines and self.cmd.format == 'table':
            self._say(lines)
        self._finish_repairs(rows, outcomes, nothing)
        if journal_ is not None and journal_.entries:
            print(_('Journal: %(path)s') % {'path': journal_.path},
                  file=sys.stderr)
            # restore is an "allocations" action whichever category ran.
            undo = AllocationCommands._command(self, 'restore', '--journal',
                                               journal_.path)
            print(_('To undo: %(command)s') % {'command': undo},
                  file=sys.stderr)
        if _stopped_short(self._stop, outcomes):
            return self._interrupted(outcomes, what)
        return self._complete_or(_repair_code(outcomes))

    @args('--journal', metavar='PATH', required=True,
          help=_('The journal written by "clean".'))
    @args('--dry-run', action='store_true', dest='dry_run',
          help=_('Show what would be restored; change nothing.'))
    @args('--format', choices=('table', 'json', 'prometheus'),
          default='table', dest='format',
          help=_('Output format (default: table). "prometheus": the '
                 'run\'s metrics, not its rows.'))
    @with_metrics_file
    @with_progress(_('journal entries restored'))
    @with_table_width
    @interruptible
    def restore(self):
        """Put back what a "clean" run changed, newest change first.

        Journals of "allocations clean" and "providers clean" alike: a
        deleted provider is re-created (parents first) before the
        allocations that were on it, and refused if a provider with its
        uuid or name exists again. A consumer that changed since the
        repair is refused and reported, never overwritten. Returns 0
        nothing to do, 3 would restore (--dry-run), 4 all restored, 1
        something refused or failed, 130/143 stopped by SIGINT/SIGTERM
        (run it again for the rest).
        """
        self._check_metrics_file()
        client = self._client()
        entries = restore_mod.load(
            client, self.cmd.journal,
            warn=lambda warning: print(warning, file=sys.stderr))
        if self.conf.placement_database.connection:
            # Fast mode: each batch's consumers in one read (see
            # restore_mod.restore); every write still goes to the API.
            opts = self.conf.nova_orphans
            self._placement_db = placement_db.PlacementDBReader(
                self.conf.placement_database.connection,
                api_reader=_OnFirstUse(self._api_reader),
                max_retries=opts.db_max_retries,
                retry_interval=opts.db_retry_interval)
        self._stop.start_writing(_STOPPING)
        results = restore_mod.restore(
            client, entries, dry_run=self.cmd.dry_run,
            concurrency=self.conf.nova_orphans.placement_concurrency,
            progress=self._progress(), stop=self._stop,
            placement_db=self._placement_db)
        rows = [f for f, _o in results]
        outcomes = [o for _f, o in results]
        self._finish_repairs(rows, outcomes,
                             _('The journal holds no change to restore.'))
        if _stopped_short(self._stop, outcomes):
            code = self._interrupted(outcomes, _('restore(s)'))
            print(_('To restore the rest: %(command)s') % {
                'command': self._command('restore', '--journal',
                                         self.cmd.journal)},
                  file=sys.stderr)
            return code
        return _repair_code(outcomes, restoring=True)


_STOPPING = _('%(signal)s: stopping; the requests in flight finish, then '
              'what was done is printed.')


class _OnFirstUse:
    """An object built by ``factory()`` the first time it is used.

    Fast mode hands the placement API reader to the database reader for
    the rare reads that must come from the API; a ``list`` makes none,
    and loading keystoneauth's auth plugin looks through the installed
    packages' entry points (a quarter of a second when stevedore's cache
    of them is cold).
    """

    def __init__(self, factory):
        self._factory = factory
        self._obj = None

    def __getattr__(self, name):
        if self._obj is None:
            self._obj = self._factory()
        return getattr(self._obj, name)


def _stopped_short(stop, outcomes):
    """Whether a signal left rows undone: one that came while the last
    writes were in flight stopped nothing, and the run's code stands.
    """
    return stop.signum is not None and actions.interrupted() in outcomes


def _repair_code(outcomes, restoring=False):
    """nova-manage style return code of a clean or restore run.

    A clean run that changed nothing still found orphans (3), whatever
    it skipped them for; a restore with nothing but entries already
    undone has nothing to do (0).
    """
    if any(o.startswith('failed') for o in outcomes):
        return 1
    if any(o == actions.DONE for o in outcomes):
        return 4
    if not restoring and outcomes:
        return 3
    if any(o == actions.skipped(_('dry run')) for o in outcomes):
        return 3
    return 0
