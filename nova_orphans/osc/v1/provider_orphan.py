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
"""``openstack resource provider orphan list|clean``.

The same rules, repairs and journal as ``nova-orphans-manage
providers``. The compute API shows no deleted compute node, so a tree
is ``deleted_compute_node`` here only on the proof
:mod:`nova_orphans.readers.provider_proof` describes (nova's
COMPUTE_NODE trait on the root, no hypervisor with its uuid, every cell
answering); the columns are the manage command's JSON keys. These
commands sit beside osc-placement's ``resource provider ...`` ones;
``allocation orphan restore`` undoes a clean.
"""


from osc_lib.command import command
from osc_lib import exceptions

from nova_orphans.cmd import providers as providers_cmd
from nova_orphans.conf import orphans as orphans_conf
from nova_orphans.engine import model
from nova_orphans.engine import provider_rules
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans.osc.v1 import columns as columns_mod
from nova_orphans.osc.v1 import orphan
from nova_orphans.readers import placement_api
from nova_orphans.readers import snapshot as snapshot_mod
from nova_orphans.repair import providers as providers_repair


def listing(parsed_args, rows, outcomes=None):
    """(columns, rows) of provider findings for a Lister."""
    names = list(model.PROVIDER_KEYS)
    if outcomes is not None:
        names.append(columns_mod.OUTCOME)
    dicts = [f.to_dict() for f in rows]
    if outcomes is not None:
        for row, outcome in zip(dicts, outcomes):
            row[columns_mod.OUTCOME] = outcome
    if (getattr(parsed_args, 'formatter', None) == 'table' and
            not parsed_args.columns and not parsed_args.long):
        names = [n for n in names if n in providers_cmd.TABLE_COLUMNS or
                 n == columns_mod.OUTCOME]
    return names, [tuple(row[n] for n in names) for row in dicts]


class _ProvidersAudited(command.Lister):
    """Shared by list and clean: filters, and one audit of the cloud."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--resource-provider', metavar='<uuid>',
            help=_('Only the provider tree holding this resource '
                   'provider.'))
        parser.add_argument(
            '--host', metavar='<host>',
            help=_('Only the provider trees of this compute host\'s live '
                   'nodes (the compute API does not name the host of a '
                   'deleted node).'))
        parser.add_argument(
            '--grace-period', metavar='<seconds>', type=int,
            default=orphans_conf.DEFAULT_GRACE_PERIOD,
            help=_('As for "openstack allocation orphan": what a live '
                   'server changed this recently holds is left alone '
                   '(default: %(default)s).'))
        columns_mod.add_long_argument(parser)
        return parser

    def audit(self, parsed_args):
        """(provider findings, allocation findings) of the trees in
        scope; keeps the readers for repairs.
        """
        rp = snapshot_mod.validate_uuid(parsed_args.resource_provider,
                                        _('Resource provider'))
        clients = self.app.client_manager.nova_orphans
        self.nova = orphan.nova_reader(clients, parsed_args.grace_period)
        self.placement = clients.placement
        reader = placement_api.PlacementAPIReader(clients.placement,
                                                  orphan.CONCURRENCY)
        if rp is not None:
            providers = reader.providers()
            if rp not in providers:
                raise exception.InvalidInput(
                    reason=_('resource provider %(uuid)s does not exist') %
                    {'uuid': rp})
            rp = providers[rp].root_uuid
        audit = snapshot_mod.Audit(reader, self.nova)
        findings = audit.run(resource_provider=rp, host=parsed_args.host,
                             shown=lambda verdict: True)
        self.snapshot = audit.snapshot
        for cell in audit.snapshot.nova.unreadable_cells:
            self.app.stderr.write(_(
                'WARNING: cell %(cell)s could not be read (%(error)s); no '
                'provider tree is called an orphan while a cell is not '
                'read.\n') % {'cell': cell.label, 'error': cell.error})
        return provider_rules.classify(audit.snapshot, findings), findings


class ListProviderOrphan(_ProvidersAudited):
    """List resource provider trees of compute nodes nova deleted.

    One row per provider, children included, with the reason and the
    action "clean" would take. Reads placement and the compute API;
    changes nothing. Through the compute API a tree is called deleted
    only when its root carries nova's COMPUTE_NODE trait and no
    hypervisor has its uuid, every cell answering.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--all', action='store_true', dest='show_all',
            help=_('Also list providers that are fine, with action "none" '
                   'and the reason they are fine.'))
        return parser

    def take_action(self, parsed_args):
        with orphan.interruptible(self):
            with orphan.one_line_errors():
                found, _findings = self.audit(parsed_args)
        return listing(parsed_args, [f for f in found if
                                     parsed_args.show_all or f.is_orphan])

    def run(self, parsed_args):
        """Print every row first; then fail if incomplete."""
        self.snapshot = None
        result = super().run(parsed_args)
        columns_mod.raise_if_incomplete(self.snapshot)
        return result


class CleanProviderOrphan(orphan._Repairing, _ProvidersAudited):
    """Delete the resource provider trees of compute nodes nova deleted.

    Each tree's orphaned allocations are repaired first, as "openstack
    allocation orphan clean" does; a tree that still holds any other
    allocation is skipped, naming its consumers; otherwise it is
    deleted children first, each provider's full record journaled
    before its DELETE. "openstack allocation orphan restore" re-creates
    them.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--dry-run', action='store_true',
            help=_('Show what would be deleted; change nothing.'))
        parser.add_argument(
            '--journal', metavar='<path>',
            help=_('Journal file to append to (default: a new file in '
                   '$XDG_STATE_HOME/nova-orphans, mode 0600).'))
        parser.add_argument(
            '--max-count', metavar='<n>', type=int,
            help=_('Delete at most N provider trees.'))
        return parser

    def take_action(self, parsed_args):
        if parsed_args.max_count is not None and parsed_args.max_count < 1:
            raise exceptions.CommandError(_('--max-count must be at least 1'))
        with orphan.interruptible(self):
            return self._take_action(parsed_args)

    def _take_action(self, parsed_args):
        with orphan.one_line_errors():
            found, findings = self.audit(parsed_args)
            orphans = [f for f in found if f.is_orphan]

            def delete_trees(repairer, journal_):
                cleaner = providers_repair.ProviderCleaner(
                    self.placement, repairer, journal=journal_,
                    dry_run=parsed_args.dry_run,
                    max_count=parsed_args.max_count, stop=self.stop)
                rows, outcomes = cleaner.clean(orphans, findings)
                lines = ([providers_cmd.repairs_line(
                    cleaner.repair_outcomes)]
                    if cleaner.repair_outcomes else [])
                return rows, outcomes, lines

            rows, outcomes = self.repair(parsed_args, orphans, delete_trees)
        return listing(parsed_args, rows, self.report(outcomes))

    def run(self, parsed_args):
        self.snapshot = None
        result = super().run(parsed_args)
        if not self.stopped_short:
            columns_mod.raise_if_incomplete(self.snapshot)
        return result
