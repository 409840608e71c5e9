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
either is read by the same tooling, and the exit codes are its table
(nova_orphans.exit_codes). What each command does is
nova_orphans/app/allocations.py.
"""

from nova_orphans.app import allocations as app
from nova_orphans.conf import orphans as orphans_conf
from nova_orphans.i18n import _
from nova_orphans.osc.v1 import common
from nova_orphans import output

UNREADABLE = _('WARNING: cell %(cell)s could not be read (%(error)s); its '
               'consumers are reported as unverifiable, never as orphans.')


class _Audited(common.OrphanLister):
    """Shared by list and clean: the scope's options."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        common.add_scope(
            parser,
            _('Only allocations on this resource provider and its '
              'descendants.'),
            _('Only allocations on the provider trees of this compute '
              'host\'s nodes.'))
        common.add_owner(parser)
        common.add_progress(parser, _('providers read, consumers checked, '
                                      'consumers repaired'))
        return parser

    def scope(self, parsed_args, show_all=False):
        return app.Scope(parsed_args.resource_provider, parsed_args.host,
                         parsed_args.reasons, show_all,
                         project=parsed_args.project, user=parsed_args.user)

    def sources(self, parsed_args):
        # On a tree that is provably a compute node nova deleted, a
        # consumer nova has no trace of is unknown_consumer, as the
        # provider commands say: the roots such consumers hold are
        # proven, and only those.
        return super().sources(parsed_args, every_root=False)


class ListOrphan(common.WithMetrics, _Audited):
    """List placement allocations that no live nova object owns.

    Reads placement and, through the compute API, nova's hypervisors,
    services, servers (deleted ones too) and migrations, and Zun's
    containers when the cloud's catalog has Zun; changes nothing. Each
    row is one consumer's allocation on one resource provider, with
    the reason it is an orphan and the repair action "clean" would
    take. Exit codes: 0 none found, 3 orphans found, 2
    and 5 a cell, neutron, or Zun could not be read (see
    "nova-orphans-manage allocations list --help" and the docs'
    exit-code table).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--all', action='store_true', dest='show_all',
            help=_('Also list allocations that are fine, with action '
                   '"none" and the reason they are fine.'))
        parser.add_argument(
            '--group-by', choices=('project',),
            help=_('One row per project instead of one per allocation: '
                   'its orphaned consumers, allocations and the resources '
                   'they hold, which placement counts in its quota usage; '
                   'the projects with most orphaned consumers first.'))
        parser.add_argument(
            '--metrics-max-projects', metavar='<n>', type=int,
            default=orphans_conf.DEFAULT_METRICS_MAX_PROJECTS,
            help=_('Projects with series of their own in '
                   'nova_orphans_project_resources, those with most '
                   'orphaned consumers; the others are summed under '
                   'project_id="other" (default: %(default)s; as '
                   '[nova_orphans] metrics_max_projects).'))
        return parser

    def take_action(self, parsed_args):
        scope = self.scope(parsed_args, parsed_args.show_all)
        metrics = self.metrics(parsed_args)
        self.result = app.list_allocations(
            self.sources(parsed_args), scope,
            progress=self.progress(parsed_args), metrics=metrics,
            rows=parsed_args.formatter != 'prometheus')
        self.warn_unreadable(self.result, UNREADABLE)
        self.show_metrics(parsed_args, metrics)
        if parsed_args.group_by:
            keys, dicts = output.project_records(app.projects(self.result))
            return common.record_listing(parsed_args, dicts, keys)
        return common.listing(parsed_args,
                              output.rows_as_dicts(self.result.rows))


class CleanOrphan(common.WithMetrics, _Audited, common.Repairing):
    """Repair orphaned allocations, journaled and generation-checked.

    Each consumer is read again from nova and placement right before its
    write and repaired only if it is still an orphan with the same
    action; the write carries the consumer generation just read. The
    journal, written before every change, lets "restore" undo the
    run. Repairs that fail are reported in the outcome column after the
    others are done. Exit codes: 4 every orphan repaired, 3 orphans
    remain (--dry-run, --max-count, skipped), 1 a repair failed, 0
    nothing to do, 2 and 5 a cell, neutron, or Zun could not be read.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        common.add_repair_options(parser,
                                  _('Change at most N consumers.'))
        parser.add_argument(
            '--heal', action='store_true',
            help=_('Also create allocations for live servers that have '
                   'none (missing_allocations), from the flavor embedded '
                   'in the server. Servers with ports are left to '
                   '"nova-manage placement heal_allocations".'))
        return parser

    def take_action(self, parsed_args):
        options = app.RepairOptions(
            dry_run=parsed_args.dry_run, journal=parsed_args.journal,
            max_count=parsed_args.max_count, heal=parsed_args.heal,
            notice=self.notice())
        scope = self.scope(parsed_args)
        options.check()
        metrics = self.metrics(parsed_args)
        result = app.clean(
            self.sources(parsed_args), scope, options, self.stop,
            progress=self.progress(parsed_args),
            audited=lambda listing: self.warn_unreadable(listing,
                                                         UNREADABLE),
            metrics=metrics)
        rows = self.report(result, _('repair(s)'))
        self.show_metrics(parsed_args, metrics)
        return common.listing(parsed_args, rows)


class RestoreOrphan(common.WithMetrics, common.Restoring):
    """Put back what a "clean" run changed, newest change first.

    Journals of "allocation orphan clean" and "resource provider orphan
    clean" alike: a deleted provider is re-created (parents first)
    before the allocations that were on it, and refused if a provider
    with its uuid or name exists again. A consumer that changed since
    the repair is refused and reported, never overwritten; the command
    then exits 1 after restoring the rest. Exit codes: 4 all restored,
    3 would restore (--dry-run), 0 nothing to restore.
    """
