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
"""``nova-orphans-manage allocations ...``: list, clean, restore.

Options, output and exit codes; what each action does is
nova_orphans/app/allocations.py.
"""

import sys

from nova_orphans.app import allocations as app
from nova_orphans.cmd import common
from nova_orphans.cmd.common import args
from nova_orphans.i18n import _
from nova_orphans import output

with_scope = common.with_scope(
    _('Only allocations on this provider and its descendants.'),
    _('Only allocations on the provider trees of this compute host\'s '
      'nodes.'))

UNREADABLE = _('WARNING: cell %(cell)s could not be read (%(error)s); its '
               'consumers are reported as unverifiable, never as orphans.')


class AllocationCommands(common.Commands):
    """Placement allocations that no live nova object owns."""

    CATEGORY = 'allocations'

    @classmethod
    def actions(cls):
        return [('list', cls.list), ('clean', cls.clean),
                ('restore', cls.restore)]

    def scope(self, show_all=False):
        return app.Scope(self.cmd.resource_provider, self.cmd.host,
                         self.cmd.reasons, show_all, project=self.cmd.project,
                         user=self.cmd.user)

    @with_scope
    @common.with_owner
    @args('--all', action='store_true', dest='show_all',
          help=_('Also list allocations that are fine, with action '
                 '"none" and the reason they are fine.'))
    @args('--group-by', choices=('project',), dest='group_by',
          help=_('One row per project instead of one per allocation: '
                 'its orphaned consumers, allocations and the resources '
                 'they hold, which placement counts in its quota usage; '
                 'the projects with most orphaned consumers first.'))
    @common.with_format('prometheus', help_extra=_(
        ' "prometheus" writes node_exporter textfile-collector metrics for '
        'every reason and project, ignoring --reason, --all, --project and '
        '--user.'))
    @common.with_long
    @common.with_metrics_file
    @common.with_progress(_('providers read, consumers checked'))
    @common.with_table_width
    @common.interruptible
    def list(self):
        """List orphaned allocations with their reason and repair action.

        Reads the nova API database, every cell database and placement;
        changes nothing. Returns 3 when orphans are listed, 0 when none;
        5 and 2 instead when a cell, or neutron (asked about servers
        whose info cache lists no port), could not be read; 130/143
        when stopped by SIGINT/SIGTERM. A table ends with what the orphans
        hold, the projects they cost most and the command to run next.
        """
        scope = self.scope(self.cmd.show_all)
        metrics = self.metrics()
        prometheus = self.cmd.format == 'prometheus'
        # The snapshot stays alive while the rows are built: no
        # collector passes over it.
        with self.collector_paused():
            listing = app.list_allocations(self.sources(), scope,
                                           self.progress(), metrics=metrics,
                                           rows=not prometheus)
            self.warn_unreadable(listing, UNREADABLE)
            if prometheus:
                sys.stdout.write(metrics.text)
            elif self.cmd.group_by:
                self.show_listing(
                    listing, output.list_summary,
                    groups=output.project_records(app.projects(listing)))
            else:
                self.show_listing(listing, output.list_summary)
        return listing.exit_code

    @with_scope
    @common.with_owner
    @common.with_repair_options(_('Change at most N consumers.'))
    @args('--heal', action='store_true',
          help=_('Also create allocations for live instances that have '
                 'none (missing_allocations), from their flavor.'))
    @common.with_format('prometheus', help_extra=common.PROMETHEUS_HELP)
    @common.with_long
    @common.with_metrics_file
    @common.with_progress(_('providers read, consumers checked, consumers '
                            'repaired'))
    @common.with_table_width
    @common.interruptible
    def clean(self):
        """Repair orphaned allocations, journaled and generation-checked.

        Each consumer is re-verified against nova and placement right
        before its write; the journal (written before every change)
        lets "restore" undo the run. Returns 0 nothing to do, 3 orphans
        remain (--dry-run, --max-count, or a finding skipped), 4 every
        orphan repaired, 1 a repair failed (the others were still
        done); 5 and 2 instead of 3 or 4 and 0 when a cell, or neutron,
        could not be read; 130/143 stopped by SIGINT/SIGTERM (what was
        done is printed).
        """
        options = app.RepairOptions(
            dry_run=self.cmd.dry_run, journal=self.cmd.journal,
            max_count=self.cmd.max_count, heal=self.cmd.heal,
            notice=self.notice())
        scope = self.scope()
        options.check()
        metrics = self.metrics()
        result = app.clean(
            self.sources(), scope, options, self._stop, self.progress(),
            audited=lambda listing: self.warn_unreadable(listing,
                                                         UNREADABLE),
            metrics=metrics)
        return self.report(result, _('repair(s)'),
                           _('No orphaned allocations found.'), metrics)

    @args('--journal', metavar='PATH', required=True,
          help=_('The journal written by "clean".'))
    @args('--dry-run', action='store_true', dest='dry_run',
          help=_('Show what would be restored; change nothing.'))
    @common.with_format('prometheus', help_extra=common.PROMETHEUS_HELP)
    @common.with_long
    @common.with_metrics_file
    @common.with_progress(_('journal entries restored'))
    @common.with_table_width
    @common.interruptible
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
        return self.restore_journal()
