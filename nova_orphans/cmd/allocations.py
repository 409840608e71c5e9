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
import gc
import sys
import time

from nova_orphans.conf import placement as placement_conf
from nova_orphans.engine import reasons
from nova_orphans.engine import site_rules
from nova_orphans import exception
from nova_orphans.i18n import _
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
        self._snapshot = None

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
        if getattr(self.cmd, 'progress', False):
            if self._progress_ is None:
                self._progress_ = progress_mod.Progress(sys.stderr)
            return self._progress_
        return None

    def _findings(self, show_all=False, everything=False):
        # Bad input is refused before anything is contacted.
        snapshot_mod.validate_uuid(self.cmd.resource_provider,
                                   _('Resource provider'))
        audit = self._audit()
        findings = audit.run(resource_provider=self.cmd.resource_provider,
                             host=self.cmd.host,
                             shown=None if everything else
                             self._shown(show_all))
        self._snapshot = audit.snapshot
        for cell in audit.snapshot.nova.unreadable_cells:
            print(_('WARNING: cell %(cell)s could not be read (%(error)s); '
                    'its consumers are reported as unverifiable, never as '
                    'orphans.') % {'cell': cell.label, 'error': cell.error},
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
          help=_('Show every column in tables, and a summary.'))
    @args('--progress', action='store_true',
          help=_('Report progress on stderr (providers read, consumers '
                 'checked).'))
    def list(self):
        """List orphaned allocations with their reason and repair action.

        Reads the nova API database, every cell database and placement;
        changes nothing. Returns 3 when orphans are listed, 0 when none;
        5 and 2 instead when a cell could not be read.
        """
        if self.cmd.format == 'prometheus':
            return self._metrics()
        # The snapshot stays alive while the rows are built: no
        # collector passes over it.
        with self._collector_paused():
            findings = self._findings(self.cmd.show_all)
            self._render(output.rows_as_dicts(findings))
        if self.cmd.format != 'json' and self.cmd.verbose:
            orphans = [f for f in findings if f.is_orphan]
            print(_('%(orphans)d orphaned allocation(s) of %(consumers)d '
                    'consumer(s).') % {
                'orphans': len(orphans),
                'consumers': len({f.consumer for f in orphans})})
        return self._complete_or(3 if any(f.is_orphan for f in findings)
                                 else 0)

    def _metrics(self):
        start = time.monotonic()
        with self._collector_paused():
            findings = self._findings(everything=True)
            sys.stdout.write(metrics.render(
                findings, time.monotonic() - start,
                unreadable_cells=len(self._snapshot.nova.unreadable_cells)))
        return self._complete_or(3 if any(f.is_orphan for f in findings)
                                 else 0)

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
                                verbose=getattr(self.cmd, 'verbose', False))

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
    @args('--format', choices=('table', 'json'), default='table',
          dest='format', help=_('Output format (default: table).'))
    @args('--progress', action='store_true',
          help=_('Report progress on stderr (providers read, consumers '
                 'checked, consumers repaired).'))
    def clean(self):
        """Repair orphaned allocations, journaled and generation-checked.

        Each consumer is re-verified against nova and placement right
        before its write; the journal (written before every change)
        lets "restore" undo the run. Returns 0 nothing to do, 3 found
        but nothing changed (--dry-run, or every finding skipped), 4
        repaired, 1 a repair failed (the others were still done); 5 and
        2 instead of 3 or 4 and 0 when a cell could not be read.
        """
        if self.cmd.max_count is not None and self.cmd.max_count < 1:
            raise exception.InvalidInput(
                reason=_('--max-count must be at least 1'))
        if self.cmd.journal is not None and not self.cmd.dry_run:
            journal.check_path(self.cmd.journal)
        findings = [f for f in self._findings() if f.is_orphan]
        journal_ = None
        if findings and not self.cmd.dry_run:
            journal_ = journal.Journal(
                self.cmd.journal or
                journal.default_path(self.conf.nova_orphans.state_path))
        repairer = actions.Repairer(
            self._client(), self._nova, self._snapshot, journal=journal_,
            dry_run=self.cmd.dry_run, max_count=self.cmd.max_count,
            heal=self.cmd.heal,
            concurrency=self.conf.nova_orphans.placement_concurrency,
            progress=self._progress(), rules=self._rules,
            placement_db=self._placement_db)
        try:
            rows, outcomes = repairer.clean(findings)
        finally:
            if journal_ is not None:
                journal_.close()
        self._render(output.rows_as_dicts(rows, outcomes))
        if journal_ is not None and journal_.entries:
            print(_('Journal: %(path)s') % {'path': journal_.path},
                  file=sys.stderr)
        return self._complete_or(_repair_code(outcomes))

    @args('--journal', metavar='PATH', required=True,
          help=_('The journal written by "clean".'))
    @args('--dry-run', action='store_true', dest='dry_run',
          help=_('Show what would be restored; change nothing.'))
    @args('--format', choices=('table', 'json'), default='table',
          dest='format', help=_('Output format (default: table).'))
    def restore(self):
        """Put back what a "clean" run changed, newest change first.

        A consumer that changed since the repair is refused and
        reported, never overwritten. Returns 0 nothing to do, 3 would
        restore (--dry-run), 4 all restored, 1 something refused or
        failed.
        """
        entries = journal.read(self.cmd.journal)
        results = restore_mod.restore(self._client(), entries,
                                      dry_run=self.cmd.dry_run)
        rows = [f for f, _o in results]
        outcomes = [o for _f, o in results]
        self._render(output.rows_as_dicts(rows, outcomes))
        return _repair_code(outcomes, restoring=True)


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
