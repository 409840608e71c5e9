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
"""``nova-orphans-manage providers ...``: list, clean, restore.

Options, output and exit codes; what each action does is
nova_orphans/app/providers.py.
"""

from nova_orphans.app import allocations as app_allocations
from nova_orphans.app import providers as app
from nova_orphans.cmd import common
from nova_orphans.cmd.common import args
from nova_orphans.i18n import _
from nova_orphans import output

with_scope = common.with_scope(
    _('Only the provider tree holding this provider.'),
    _('Only the provider trees of this compute host\'s nodes, deleted '
      'ones included.'), reasons_=False)

UNREADABLE = _('WARNING: cell %(cell)s could not be read (%(error)s); a '
               'tree nova may still have live there is reported as '
               'unverifiable, never as an orphan.')


class ProviderCommands(common.Commands):
    """Resource provider trees of compute nodes nova deleted."""

    CATEGORY = 'providers'

    @classmethod
    def actions(cls):
        return [('list', cls.list), ('clean', cls.clean),
                ('restore', cls.restore)]

    def scope(self, show_all=False):
        return app_allocations.Scope(self.cmd.resource_provider,
                                     self.cmd.host, show_all=show_all)

    @with_scope
    @args('--all', action='store_true', dest='show_all',
          help=_('Also list providers that are fine, with action "none" '
                 'and the reason they are fine.'))
    @common.with_format()
    @common.with_long
    @common.with_progress(_('providers read, consumers checked'))
    @common.with_table_width
    @common.interruptible
    def list(self):
        """List resource provider trees of compute nodes nova deleted.

        One row per provider, children included, with the reason and
        the action "clean" would take. Reads the nova API database,
        every cell database and placement; changes nothing. Returns 3
        when orphaned trees are listed, 0 when none; 5 and 2 instead
        when a cell could not be read; 130/143 when stopped by
        SIGINT/SIGTERM.
        """
        scope = self.scope(self.cmd.show_all)
        with self.collector_paused():
            listing = app.list_providers(self.sources(), scope,
                                         self.progress())
            self.warn_unreadable(listing, UNREADABLE)
            self.show_listing(listing, output.provider_list_summary)
        return listing.exit_code

    @with_scope
    @common.with_repair_options(_('Delete at most N provider trees.'))
    @common.with_format()
    @common.with_long
    @common.with_progress(_('providers read, consumers checked, '
                            'consumers repaired'))
    @common.with_table_width
    @common.interruptible
    def clean(self):
        """Delete the provider trees of compute nodes nova deleted.

        For each such tree: its orphaned allocations are repaired first
        (re-verified, generation-checked, journaled, as "allocations
        clean" does); a tree that still holds any other allocation is
        skipped, naming the consumers that hold it; otherwise it is
        deleted children first, each provider's full record (inventories,
        traits, aggregates) journaled before its DELETE, so that
        "providers restore" can re-create it. Returns 0 nothing to do,
        3 orphaned trees remain (--dry-run, --max-count, or a tree
        skipped), 4 every orphaned tree deleted, 1 a deletion failed
        (the others were still done); 5 and 2 instead of 3 or 4 and 0
        when a cell could not be read; 130/143 stopped by
        SIGINT/SIGTERM.
        """
        options = app_allocations.RepairOptions(
            dry_run=self.cmd.dry_run, journal=self.cmd.journal,
            max_count=self.cmd.max_count, notice=self.notice())
        scope = self.scope()
        options.check()
        result = app.clean(
            self.sources(), scope, options, self._stop, self.progress(),
            audited=lambda listing: self.warn_unreadable(listing,
                                                         UNREADABLE))
        return self.report(result, _('deletion(s)'),
                           _('No orphaned resource providers found.'))

    @args('--journal', metavar='PATH', required=True,
          help=_('The journal written by "providers clean".'))
    @args('--dry-run', action='store_true', dest='dry_run',
          help=_('Show what would be restored; change nothing.'))
    @common.with_format()
    @common.with_long
    @common.with_progress(_('journal entries restored'))
    @common.with_table_width
    @common.interruptible
    def restore(self):
        """Re-create what a "providers clean" run deleted, parents first,
        then the allocations that were on the trees.

        The same as "allocations restore", which undoes the journal of
        either category. Returns 0 nothing to do, 3 would restore
        (--dry-run), 4 all restored, 1 something refused or failed,
        130/143 stopped by SIGINT/SIGTERM (run it again for the rest).
        """
        return self.restore_journal()
