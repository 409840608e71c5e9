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

import sys

from nova_orphans.clients import placement as placement_client
from nova_orphans.engine import reasons
from nova_orphans import output
from nova_orphans.i18n import _
from nova_orphans.readers import nova_db
from nova_orphans.readers import placement_api
from nova_orphans.readers import snapshot as snapshot_mod


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

    def __init__(self, conf):
        self.conf = conf
        self.cmd = conf.category

    @classmethod
    def actions(cls):
        return [('list', cls.list)]

    def _audit(self):
        client = placement_client.PlacementClient.from_conf(self.conf)
        return snapshot_mod.Audit(
            placement_api.PlacementAPIReader(
                client, self.conf.nova_orphans.placement_concurrency),
            nova_db.NovaDBReader(self.conf))

    def _findings(self):
        # Bad input is refused before anything is contacted.
        snapshot_mod.validate_uuid(self.cmd.resource_provider,
                                   _('Resource provider'))
        audit = self._audit()
        findings = audit.run(resource_provider=self.cmd.resource_provider,
                             host=self.cmd.host)
        for cell in audit.snapshot.nova.unreadable_cells:
            print(_('WARNING: cell %(cell)s could not be read (%(error)s); '
                    'its consumers are reported as unverifiable, never as '
                    'orphans.') % {'cell': cell.label, 'error': cell.error},
                  file=sys.stderr)
        return findings

    def _select(self, findings, show_all=False):
        wanted = self.cmd.reasons
        if wanted:
            return [f for f in findings if f.reason in wanted]
        return [f for f in findings if show_all or f.is_orphan]

    @with_filters
    @args('--all', action='store_true', dest='show_all',
          help=_('Also list allocations that are fine, with action '
                 '"none" and the reason they are fine.'))
    @args('--format', choices=('table', 'json'), default='table',
          dest='format', help=_('Output format (default: table).'))
    @args('--verbose', action='store_true',
          help=_('Show every column in tables, and a summary.'))
    def list(self):
        """List orphaned allocations with their reason and repair action.

        Reads the nova API database, every cell database and placement;
        changes nothing. Returns 3 when orphans are listed, 0 when none.
        """
        findings = self._select(self._findings(),
                                self.cmd.show_all)
        rows = output.rows_as_dicts(findings)
        if self.cmd.format == 'json':
            output.render_json(rows, sys.stdout)
        else:
            output.render_table(rows, sys.stdout, verbose=self.cmd.verbose)
            if self.cmd.verbose:
                orphans = [f for f in findings if f.is_orphan]
                print(_('%(orphans)d orphaned allocation(s) of %(consumers)d '
                        'consumer(s).') % {
                    'orphans': len(orphans),
                    'consumers': len({f.consumer for f in orphans})})
        return 3 if any(f.is_orphan for f in findings) else 0
