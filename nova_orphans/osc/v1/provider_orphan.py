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
"""``openstack resource provider orphan list|clean|restore``.

The provider trees of compute nodes nova deleted, as
``nova-orphans-manage providers``, through the APIs: a root is called a
deleted ``compute_node`` here only on the proof
:mod:`nova_orphans.readers.provider_proof` describes (nova's mark on
the root, OWNER_NOVA or COMPUTE_NODE, no hypervisor with its uuid,
every cell answering); the columns are the manage command's JSON keys
and the exit codes its table. These commands sit beside osc-placement's
``resource provider ...`` ones. What each does is
nova_orphans/app/providers.py.
"""

from nova_orphans.app import allocations as app_allocations
from nova_orphans.app import providers as app
from nova_orphans.i18n import _
from nova_orphans.osc.v1 import common
from nova_orphans import output

UNREADABLE = _('WARNING: cell %(cell)s could not be read (%(error)s); no '
               'provider tree is called an orphan while a cell is not '
               'read.')


class _ProvidersAudited(common.OrphanLister):
    """Shared by list and clean: the scope's options."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        common.add_scope(
            parser,
            _('Only the provider tree holding this resource provider.'),
            _('Only the provider trees of this compute host\'s live nodes '
              '(the compute API does not name the host of a deleted '
              'node).'), reasons_=False)
        common.add_progress(parser, _('providers read, consumers checked, '
                                      'consumers repaired'))
        return parser

    def scope(self, parsed_args, show_all=False):
        return app_allocations.Scope(parsed_args.resource_provider,
                                     parsed_args.host, show_all=show_all)


class ListProviderOrphan(_ProvidersAudited):
    """List resource provider trees of compute nodes nova deleted.

    One row per provider, children included, with the reason and the
    action "clean" would take. Reads placement and the compute API;
    changes nothing. Through the compute API a tree is called deleted
    only when its root carries nova's mark (OWNER_NOVA or COMPUTE_NODE)
    and no hypervisor has its uuid, every cell answering. Exit codes as
    "allocation orphan list".
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--all', action='store_true', dest='show_all',
            help=_('Also list providers that are fine, with action "none" '
                   'and the reason they are fine.'))
        return parser

    def take_action(self, parsed_args):
        self.result = app.list_providers(
            self.sources(parsed_args),
            self.scope(parsed_args, parsed_args.show_all),
            progress=self.progress(parsed_args))
        self.warn_unreadable(self.result, UNREADABLE)
        return common.listing(parsed_args,
                              output.rows_as_dicts(self.result.rows))


class CleanProviderOrphan(_ProvidersAudited, common.Repairing):
    """Delete the resource provider trees of compute nodes nova deleted.

    Each tree's orphaned allocations are repaired first, as "openstack
    allocation orphan clean" does; a tree that still holds any other
    allocation is skipped, naming its consumers; otherwise it is
    deleted children first, each provider's full record journaled
    before its DELETE. "openstack resource provider orphan restore"
    re-creates them. Exit codes as "allocation orphan clean".
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        common.add_repair_options(parser,
                                  _('Delete at most N provider trees.'))
        return parser

    def take_action(self, parsed_args):
        options = app_allocations.RepairOptions(
            dry_run=parsed_args.dry_run, journal=parsed_args.journal,
            max_count=parsed_args.max_count, notice=self.notice())
        scope = self.scope(parsed_args)
        options.check()
        result = app.clean(
            self.sources(parsed_args), scope, options, self.stop,
            progress=self.progress(parsed_args),
            audited=lambda listing: self.warn_unreadable(listing,
                                                         UNREADABLE))
        return common.listing(parsed_args,
                              self.report(result, _('deletion(s)')))


class RestoreProviderOrphan(common.Restoring):
    """Re-create what a "resource provider orphan clean" deleted.

    The same as "openstack allocation orphan restore", which undoes the
    journal of either command: providers parents first, then the
    allocations that were on them.
    """
