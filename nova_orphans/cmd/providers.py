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
"""``nova-orphans-manage providers ...``: list, clean."""

import collections
import sys

from cliff.formatters import table as cliff_table

from nova_orphans.cmd import allocations
from nova_orphans.engine import provider_rules
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans import output
from nova_orphans.readers import snapshot as snapshot_mod
from nova_orphans.repair import providers as providers_repair

args = allocations.args

TABLE_COLUMNS = ('uuid', 'name', 'host', 'reason', 'action', 'allocations',
                 'orphan_allocations')
VERBOSE_COLUMNS = ('uuid', 'name', 'root_provider', 'parent_provider',
                   'host', 'cell', 'compute_node', 'reason', 'action',
                   'allocations', 'orphan_allocations', 'details')
HEADERS = {'uuid': 'UUID', 'root_provider': 'Root',
           'parent_provider': 'Parent', 'compute_node': 'Compute node',
           'allocations': 'Allocs', 'orphan_allocations': 'Orphan allocs'}

FILTER_ARGS = (
    args('--resource-provider', metavar='UUID', dest='resource_provider',
         help=_('Only the provider tree holding this provider.')),
    args('--host', metavar='HOST',
         help=_('Only the provider trees of this compute host\'s nodes, '
                'deleted ones included.')),
)


def with_filters(func):
    for decorator in reversed(FILTER_ARGS):
        func = decorator(func)
    return func


def render_table(rows, stream, verbose=False, max_width=None,
                 fit_width=None):
    """Provider rows as cliff draws a table (see output.render_table)."""
    columns = list(VERBOSE_COLUMNS if verbose else TABLE_COLUMNS)
    if rows and 'outcome' in rows[0]:
        columns.append('outcome')
    data = [['' if row[c] is None else row[c] for c in columns]
            for row in rows]
    cliff_table.TableFormatter().emit_list(
        [HEADERS.get(c, c.replace('_', ' ').capitalize()) for c in columns],
        data, stream, output.width_options(max_width, fit_width))


def list_summary(rows, unreadable_cells=(), next_command=None):
    """The lines that close a human ``providers list``."""
    orphans = [r for r in rows if r['action'] != 'none']
    lines = []
    if orphans:
        lines.append(_(
            '%(providers)d resource provider(s) in %(trees)d tree(s) of '
            'deleted compute nodes; %(allocations)d allocation(s) on them, '
            '%(orphans)d of them orphans.') % {
                'providers': len(orphans),
                'trees': len({r['root_provider'] for r in orphans}),
                'allocations': sum(r['allocations'] for r in orphans),
                'orphans': sum(r['orphan_allocations'] for r in orphans)})
    else:
        lines.append(_('No orphaned resource providers found.'))
    if unreadable_cells:
        lines.append(_('Cells not read: %(cells)s; their nodes\' trees '
                       'are unverifiable, and what they may own keeps a '
                       'deleted node\'s tree.') % {
            'cells': ', '.join(unreadable_cells)})
    if orphans and next_command:
        lines.append(_('Next: %(command)s') % {'command': next_command})
    return lines


def repairs_line(outcomes):
    """What was done to the trees' orphaned allocations first."""
    counts = collections.Counter(
        'failed' if o.startswith(output.FAILED) else o for o in outcomes)
    return _('Orphaned allocations on these trees, repaired first: '
             '%(outcomes)s.') % {'outcomes': ', '.join(
                 '%d %s' % (n, o) for o, n in sorted(
                     counts.items(), key=lambda item: (-item[1], item[0])))}


class ProviderCommands(allocations.AllocationCommands):
    """Resource provider trees of compute nodes nova deleted."""

    CATEGORY = 'providers'

    @classmethod
    def actions(cls):
        return [('list', cls.list), ('clean', cls.clean)]

    def _command(self, action, *argv):
        return super()._command(action, *argv).replace(
            ' allocations %s' % action, ' %s %s' % (self.CATEGORY, action),
            1)

    def _filters(self):
        argv = []
        if self.cmd.resource_provider:
            argv += ['--resource-provider', self.cmd.resource_provider]
        if self.cmd.host:
            argv += ['--host', self.cmd.host]
        return argv

    def _render(self, rows):
        if self.cmd.format == 'json':
            output.render_json(rows, sys.stdout)
        else:
            render_table(rows, sys.stdout,
                         verbose=getattr(self.cmd, 'verbose', False),
                         max_width=self.cmd.max_width,
                         fit_width=self.cmd.fit_width)

    def _provider_findings(self):
        """(provider findings of the trees in scope, allocation findings).

        Every allocation on those trees is classified, orphans or not:
        a provider's counts, and whether its tree may go, need them all.
        """
        rp = snapshot_mod.validate_uuid(self.cmd.resource_provider,
                                        _('Resource provider'))
        audit = self._audit()
        if rp is not None:
            providers = audit.placement.providers()
            if rp not in providers:
                raise exception.InvalidInput(
                    reason=_('resource provider %(uuid)s does not exist') %
                    {'uuid': rp})
            # The whole tree: a tree goes, or stays, as a whole.
            rp = providers[rp].root_uuid
        findings = self._run(
            audit, rp, lambda verdict: True,
            _('WARNING: cell %(cell)s could not be read (%(error)s); a '
              'tree nova may still have live there is reported as '
              'unverifiable, never as an orphan.'))
        return provider_rules.classify(audit.snapshot, findings), findings

    @with_filters
    @args('--all', action='store_true', dest='show_all',
          help=_('Also list providers that are fine, with action "none" '
                 'and the reason they are fine.'))
    @args('--format', choices=('table', 'json'), default='table',
          dest='format', help=_('Output format (default: table).'))
    @args('--verbose', action='store_true',
          help=_('Show every column in tables.'))
    @allocations.with_progress(_('providers read, consumers checked'))
    @allocations.with_table_width
    @allocations.interruptible
    def list(self):
        """List resource provider trees of compute nodes nova deleted.

        One row per provider, children included, with the reason and
        the action "clean" would take. Reads the nova API database,
        every cell database and placement; changes nothing. Returns 3
        when orphaned trees are listed, 0 when none; 5 and 2 instead
        when a cell could not be read; 130/143 when stopped by
        SIGINT/SIGTERM.
        """
        with self._collector_paused():
            found, _allocs = self._provider_findings()
            shown = [f for f in found if self.cmd.show_all or f.is_orphan]
            rows = output.rows_as_dicts(shown)
            if self.cmd.format == 'json':
                self._render(rows)
            else:
                if rows:
                    self._render(rows)
                self._say(list_summary(
                    rows, self._unreadable,
                    self._command('clean', '--dry-run', *self._filters())))
        return self._complete_or(3 if any(f.is_orphan for f in found)
                                 else 0)

    @with_filters
    @args('--dry-run', action='store_true', dest='dry_run',
          help=_('Show what would be deleted; change nothing.'))
    @args('--journal', metavar='PATH',
          help=_('Journal file to append to (default: a new file in '
                 '[nova_orphans] state_path, mode 0600).'))
    @args('--max-count', metavar='N', type=int, dest='max_count',
          help=_('Delete at most N provider trees.'))
    @args('--format', choices=('table', 'json'), default='table',
          dest='format', help=_('Output format (default: table).'))
    @allocations.with_progress(_('providers read, consumers checked, '
                                 'consumers repaired'))
    @allocations.with_table_width
    @allocations.interruptible
    def clean(self):
        """Delete the provider trees of compute nodes nova deleted.

        For each such tree: its orphaned allocations are repaired first
        (re-verified, generation-checked, journaled, as "allocations
        clean" does); a tree that still holds any other allocation is
        skipped, naming the consumers that hold it; otherwise it is
        deleted children first, each provider's full record (inventories,
        traits, aggregates) journaled before its DELETE, so that
        "allocations restore" can re-create it. Returns 0 nothing to do,
        3 found but nothing changed (--dry-run, or every tree skipped),
        4 deleted, 1 a deletion failed (the others were still done); 5
        and 2 instead of 3 or 4 and 0 when a cell could not be read;
        130/143 stopped by SIGINT/SIGTERM.
        """
        self._check_repair_options()
        found, findings = self._provider_findings()
        orphans = [f for f in found if f.is_orphan]

        def delete_trees(repairer, journal_):
            cleaner = providers_repair.ProviderCleaner(
                self._client(), repairer, journal=journal_,
                dry_run=self.cmd.dry_run, max_count=self.cmd.max_count,
                stop=self._stop)
            rows, outcomes = cleaner.clean(orphans, findings)
            lines = ([repairs_line(cleaner.repair_outcomes)]
                     if cleaner.repair_outcomes else [])
            return rows, outcomes, lines

        return self._repair(orphans, delete_trees,
                            _('No orphaned resource providers found.'),
                            _('deletion(s)'))
