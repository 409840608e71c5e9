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
"""``openstack allocation orphan list|clean|restore``.

The same audit, repairs, journal and safety rules as
``nova-orphans-manage allocations``; only nova's side is read from the
compute API instead of nova's databases (see
:mod:`nova_orphans.readers.compute_api` for what that cannot see). The
columns are exactly the manage command's JSON keys, so ``-f json`` from
either is read by the same tooling.
"""

import contextlib
import os
import shlex
import sys
import time

from cliff.formatters import base as cliff_base
from osc_lib.command import command
from osc_lib import exceptions
import stevedore

from nova_orphans.conf import orphans as orphans_conf
from nova_orphans import db_utils
from nova_orphans.engine import reasons
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans import interrupt
from nova_orphans import metrics
from nova_orphans.osc.v1 import columns as columns_mod
from nova_orphans import output
from nova_orphans.readers import compute_api
from nova_orphans.readers import placement_api
from nova_orphans.readers import provider_proof
from nova_orphans.readers import snapshot as snapshot_mod
from nova_orphans.repair import actions
from nova_orphans.repair import journal
from nova_orphans.repair import restore as restore_mod

# Requests in flight at once, as [nova_orphans] placement_concurrency.
CONCURRENCY = 8


@contextlib.contextmanager
def one_line_errors():
    """nova-orphans' own errors become CommandError: one line, exit 1."""
    try:
        yield
    except exception.NovaOrphansException as e:
        raise exceptions.CommandError(db_utils.safe_error(e)) from e


@contextlib.contextmanager
def interruptible(command):
    """SIGINT/SIGTERM: see nova_orphans.interrupt. Stopped before any
    write, one line, and cliff's exit code for an interrupt (130); a
    command that writes reports what it did (see _Repairing.run).
    """
    command.stop = interrupt.Stop()
    try:
        with command.stop.handled():
            yield command.stop
    except interrupt.Interrupted as e:
        command.app.stderr.write(_(
            'Interrupted by %(signal)s; nothing was changed.\n') % {
            'signal': interrupt.signal_name(e.signum)})
        raise


def state_path():
    """Where journals go without --journal: the user's state directory."""
    base = os.environ.get('XDG_STATE_HOME') or os.path.join(
        os.path.expanduser('~'), '.local', 'state')
    return os.path.join(base, 'nova-orphans')


def nova_reader(clients, grace_period, every_root=True):
    """nova through the compute API, as both command families read it:
    the ports' bindings through the network API (for
    rules.leaked_port_allocation), deleted compute nodes proven by
    their trait (readers/provider_proof.py; ``every_root=False``: only
    the roots that consumers nothing live owns hold).
    """
    if grace_period < 0:
        raise exceptions.CommandError(
            _('--grace-period must not be negative'))
    return provider_proof.ProvingReader(
        compute_api.ComputeAPIReader(
            clients.compute, CONCURRENCY, grace_period=grace_period,
            network=clients.network),
        clients.placement, every_root=every_root)


def add_metrics_file_argument(parser):
    parser.add_argument(
        '--metrics-file', metavar='<path>',
        help=_('Also write the run\'s Prometheus metrics to <path>, '
               'atomically (for node_exporter\'s textfile collector), '
               'incomplete runs included; a run that stops on an error '
               'leaves the file as it was.'))


def shown_by(parsed_args, show_all=False):
    """Which findings the filters show (see Audit.run)."""
    def shown(finding):
        if parsed_args.reasons:
            return finding.reason in parsed_args.reasons
        return show_all or finding.is_orphan
    return shown


class _Prometheus:
    """"-f prometheus" for this command only: a cliff formatter plugin
    would offer it to every openstack listing.
    """

    def _load_formatter_plugins(self):
        manager = super()._load_formatter_plugins()
        if self.formatter_namespace != 'cliff.formatter.list':
            return manager
        prometheus = stevedore.extension.Extension(
            'prometheus', None, PrometheusFormatter, PrometheusFormatter())
        return stevedore.ExtensionManager.make_test_instance(
            list(manager) + [prometheus], namespace=manager.namespace)

    def metrics_text(self, parsed_args, text):
        if parsed_args.formatter == 'prometheus':
            self._formatter_plugins['prometheus'].obj.text = text

    def repair_metrics(self, parsed_args, rows, outcomes,
                       unreadable_cells=0):
        """A clean's or restore's metrics (``metrics_command``), for -f
        prometheus and --metrics-file; ``started`` is set by _Repairing.
        """
        if parsed_args.formatter == 'prometheus' or parsed_args.metrics_file:
            with one_line_errors():
                self.metrics_text(parsed_args, metrics.repair(
                    self.metrics_command, rows, outcomes,
                    time.monotonic() - self.started,
                    unreadable_cells=unreadable_cells,
                    metrics_file=parsed_args.metrics_file))


class _Audited(command.Lister):
    """Shared by list and clean: filters, and one audit of the cloud."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--resource-provider', metavar='<uuid>',
            help=_('Only allocations on this resource provider and its '
                   'descendants.'))
        parser.add_argument(
            '--host', metavar='<host>',
            help=_('Only allocations on the provider trees of this compute '
                   'host\'s nodes.'))
        parser.add_argument(
            '--reason', metavar='<reason>', action='append',
            choices=reasons.REASONS, dest='reasons',
            help=_('Only findings with this reason; repeatable. Choices: '
                   '%s.') % ', '.join(reasons.REASONS))
        parser.add_argument(
            '--grace-period', metavar='<seconds>', type=int,
            default=orphans_conf.DEFAULT_GRACE_PERIOD,
            help=_('Leave alone what a live server or its migrations hold '
                   'if nova changed the server, a migration or its latest '
                   'action less than this many seconds ago (default: '
                   '%(default)s; as [nova_orphans] grace_period): nova may '
                   'still be moving or deleting those allocations.'))
        columns_mod.add_long_argument(parser)
        add_metrics_file_argument(parser)
        return parser

    def audit(self, parsed_args, show_all=False, everything=False):
        """Findings shown by the filters; keeps the readers for repairs."""
        snapshot_mod.validate_uuid(parsed_args.resource_provider,
                                   _('Resource provider'))
        clients = self.app.client_manager.nova_orphans
        self.placement = clients.placement
        # On a tree that is provably a compute node nova deleted, a
        # consumer nova has no trace of is unknown_consumer, as the
        # provider commands say: the roots such consumers hold are
        # proven, and only those.
        self.nova = nova_reader(clients, parsed_args.grace_period,
                                every_root=False)
        audit = snapshot_mod.Audit(
            placement_api.PlacementAPIReader(clients.placement, CONCURRENCY),
            self.nova)
        findings = audit.run(resource_provider=parsed_args.resource_provider,
                             host=parsed_args.host,
                             shown=None if everything else shown_by(
                                 parsed_args, show_all))
        self.snapshot = audit.snapshot
        for cell in audit.snapshot.nova.unreadable_cells:
            self.app.stderr.write(_(
                'WARNING: cell %(cell)s could not be read (%(error)s); its '
                'consumers are reported as unverifiable, never as '
                'orphans.\n') % {'cell': cell.label, 'error': cell.error})
        return findings


class ListOrphan(_Prometheus, _Audited):
    """List placement allocations that no live nova object owns.

    Reads placement and, through the compute API, nova's hypervisors,
    services, servers (deleted ones too) and migrations; changes
    nothing. Each row is one consumer's allocation on one resource
    provider, with the reason it is an orphan and the repair action
    "clean" would take.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--all', action='store_true', dest='show_all',
            help=_('Also list allocations that are fine, with action '
                   '"none" and the reason they are fine.'))
        return parser

    def take_action(self, parsed_args):
        with interruptible(self):
            return self._take_action(parsed_args)

    def _take_action(self, parsed_args):
        start = time.monotonic()
        every = (parsed_args.formatter == 'prometheus' or
                 bool(parsed_args.metrics_file))
        with one_line_errors():
            if parsed_args.metrics_file:
                metrics.check_path(parsed_args.metrics_file)
            findings = self.audit(parsed_args, show_all=parsed_args.show_all,
                                  everything=every)
            if every:
                self.metrics_text(parsed_args, metrics.scan(
                    findings, time.monotonic() - start,
                    unreadable_cells=len(self.snapshot.nova.unreadable_cells),
                    metrics_file=parsed_args.metrics_file))
        if parsed_args.formatter == 'prometheus':
            return columns_mod.listing(parsed_args, [])
        if every:
            shown = shown_by(parsed_args, parsed_args.show_all)
            findings = [f for f in findings if shown(f)]
        return columns_mod.listing(parsed_args, findings)

    def run(self, parsed_args):
        """Print every row (or metric) first; then fail if incomplete."""
        self.snapshot = None
        result = super().run(parsed_args)
        columns_mod.raise_if_incomplete(self.snapshot)
        return result


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


class _Repairing:
    """clean and restore: every row is printed first; then the run ends
    130/143 if a signal stopped it, else in an error if a change failed.
    """

    def report(self, outcomes):
        """The rows' outcomes as shown: one line per cause of failure."""
        self.outcomes = outcomes
        shown, causes = output.group_failures(outcomes)
        for line in output.failure_lines(causes):
            self.app.stderr.write(line + '\n')
        self.stopped_short = (self.stop.signum is not None and
                              actions.interrupted() in outcomes)
        if self.stopped_short:
            self.app.stderr.write(_(
                'Interrupted by %(signal)s: %(done)d done; %(left)d not '
                'attempted (skipped: interrupted).\n') % {
                'signal': interrupt.signal_name(self.stop.signum),
                'done': outcomes.count(actions.DONE),
                'left': outcomes.count(actions.interrupted())})
        return shown

    def _notice(self):
        """What a signal prints at once, if the app's stderr is ours."""
        return _STOPPING if self.app.stderr is sys.stderr else None

    def repair(self, parsed_args, orphans, work, **options):
        """One clean run of either command, around ``work``.

        ``work(repairer, journal)`` does the writes and returns (rows,
        outcomes, lines for stderr). The journal is opened only when
        there is something to write and closed whatever happens; its
        path and the command that undoes the run are said once it holds
        anything. ``options`` go to the Repairer.
        """
        journal_ = None
        if orphans and not parsed_args.dry_run:
            journal_ = journal.Journal(
                parsed_args.journal or journal.default_path(state_path()),
                placement=self.placement.endpoint)
        repairer = actions.Repairer(
            self.placement, self.nova, self.snapshot, journal=journal_,
            dry_run=parsed_args.dry_run, concurrency=CONCURRENCY,
            stop=self.stop, **options)
        self.stop.start_writing(self._notice())
        try:
            rows, outcomes, lines = work(repairer, journal_)
        finally:
            if journal_ is not None:
                journal_.close()
        for line in lines:
            self.app.stderr.write(line + '\n')
        if repairer.conflicts:
            self.app.stderr.write(
                actions.other_writers_note(repairer.conflicts) + '\n')
        if journal_ is not None and journal_.entries:
            self.app.stderr.write(_('Journal: %(path)s\n') %
                                  {'path': journal_.path})
            self.app.stderr.write(_(
                'To undo: openstack allocation orphan restore --journal '
                '%(path)s\n') % {'path': shlex.quote(journal_.path)})
        return rows, outcomes

    def run(self, parsed_args):
        self.started = time.monotonic()
        self.outcomes = []
        self.stop = interrupt.Stop()
        self.stopped_short = False
        result = super().run(parsed_args)
        if self.stopped_short:
            return interrupt.exit_code(self.stop.signum)
        columns_mod.raise_if_failed(self.outcomes)
        return result


class CleanOrphan(_Prometheus, _Repairing, _Audited):
    """Repair orphaned allocations, journaled and generation-checked.

    Each consumer is read again from nova and placement right before its
    write and repaired only if it is still an orphan with the same
    action; the write carries the consumer generation just read. The
    journal, written before every change, lets "restore" undo the
    run. Repairs that fail are reported in the outcome column after the
    others are done, and the command then exits 1.
    """

    metrics_command = 'clean'

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--dry-run', action='store_true',
            help=_('Show what would be repaired; change nothing.'))
        parser.add_argument(
            '--journal', metavar='<path>',
            help=_('Journal file to append to (default: a new file in '
                   '$XDG_STATE_HOME/nova-orphans, mode 0600).'))
        parser.add_argument(
            '--max-count', metavar='<n>', type=int,
            help=_('Change at most N consumers.'))
        parser.add_argument(
            '--heal', action='store_true',
            help=_('Also create allocations for live servers that have '
                   'none (missing_allocations), from the flavor embedded '
                   'in the server. Servers with ports are left to '
                   '"nova-manage placement heal_allocations".'))
        return parser

    def take_action(self, parsed_args):
        if parsed_args.max_count is not None and parsed_args.max_count < 1:
            raise exceptions.CommandError(_('--max-count must be at least 1'))
        with one_line_errors():
            if parsed_args.metrics_file:
                metrics.check_path(parsed_args.metrics_file)
        with interruptible(self):
            return self._take_action(parsed_args)

    def _take_action(self, parsed_args):
        with one_line_errors():
            findings = [f for f in self.audit(parsed_args) if f.is_orphan]

            def repair(repairer, journal_):
                rows, outcomes = repairer.clean(findings)
                return rows, outcomes, ()

            rows, outcomes = self.repair(
                parsed_args, findings, repair,
                max_count=parsed_args.max_count, heal=parsed_args.heal)
        self.repair_metrics(
            parsed_args, rows, outcomes,
            unreadable_cells=len(self.snapshot.nova.unreadable_cells))
        return columns_mod.listing(parsed_args, rows,
                                   self.report(outcomes))

    def run(self, parsed_args):
        """Every row first; then a signal, a failed repair, or a cell that
        could not be read ends the run (see _Repairing).
        """
        self.snapshot = None
        result = super().run(parsed_args)
        if not self.stopped_short:
            columns_mod.raise_if_incomplete(self.snapshot)
        return result


class RestoreOrphan(_Prometheus, _Repairing, command.Lister):
    """Put back what a "clean" run changed, newest change first.

    Journals of "allocation orphan clean" and "resource provider orphan
    clean" alike: a deleted provider is re-created (parents first)
    before the allocations that were on it, and refused if a provider
    with its uuid or name exists again. A consumer that changed since
    the repair is refused and reported,
    never overwritten; the command then exits 1 after restoring the
    rest.
    """

    metrics_command = 'restore'

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--journal', metavar='<path>', required=True,
            help=_('The journal written by "clean".'))
        parser.add_argument(
            '--dry-run', action='store_true',
            help=_('Show what would be restored; change nothing.'))
        columns_mod.add_long_argument(parser)
        add_metrics_file_argument(parser)
        return parser

    def take_action(self, parsed_args):
        with interruptible(self):
            with one_line_errors():
                if parsed_args.metrics_file:
                    metrics.check_path(parsed_args.metrics_file)
                client = self.app.client_manager.nova_orphans.placement
                entries = restore_mod.load(
                    client, parsed_args.journal,
                    warn=lambda warning: self.app.stderr.write(
                        warning + '\n'))
                self.stop.start_writing(self._notice())
                results = restore_mod.restore(
                    client, entries, dry_run=parsed_args.dry_run,
                    stop=self.stop)
        self.repair_metrics(parsed_args, [f for f, _o in results],
                            [o for _f, o in results])
        return columns_mod.listing(
            parsed_args, [f for f, _o in results],
            self.report([o for _f, o in results]))


_STOPPING = _('%(signal)s: stopping; the requests in flight finish, then '
              'what was done is printed.')
