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
"""``providers list`` and ``clean``: the trees of deleted compute nodes.

A tree's orphaned allocations are repaired first, through the same
repair run as ``allocations clean`` (app/allocations.py); ``restore``
is the allocations' one, which re-creates providers too.
"""

from oslo_log import log as logging

from nova_orphans.app import allocations
from nova_orphans.app import audit as audit_mod
from nova_orphans.app import results
from nova_orphans.engine import provider_rules
from nova_orphans.repair import providers as providers_repair

LOG = logging.getLogger(__name__)

# Undoing a providers clean is the same journal replay.
restore = allocations.restore


def list_providers(sources, scope, progress=None):
    """Provider findings of the trees in scope (``findings``, the rows
    the scope shows in ``rows``) and every allocation finding on them
    (``allocations``): a provider's counts, and whether its tree may
    go, need them all.
    """
    rp = scope.resource_provider
    if rp is not None:
        providers = sources.placement_reader().providers()
        audit_mod.require_provider(providers, rp)
        # The whole tree: a tree goes, or stays, as a whole.
        rp = providers[rp].root_uuid
    # The trees shown rest on what their providers hold, each read in
    # this run (the allocation rows are not shown: what they hold is).
    audit = allocations.audit(
        sources, scope, lambda verdict: True, progress, resource_provider=rp,
        reported=lambda finding: False, trees=lambda snapshot, findings: {
            f.root_provider for f in provider_rules.classify(
                snapshot, findings) if scope.show_all or f.is_orphan})
    if scope.show_all:
        # Only --all shows healthy rows: no read for the others.
        _read_fully_reserved(sources, audit.snapshot)
    found = provider_rules.classify(audit.snapshot, audit.findings)
    if LOG.isEnabledFor(logging.DEBUG):
        for f in found:
            LOG.debug('Provider %(uuid)s (%(name)s): %(reason)s -> '
                      '%(action)s: %(details)s', {
                          'uuid': f.uuid, 'name': f.name, 'reason': f.reason,
                          'action': f.action, 'details': f.details})
    return results.Listing(
        found, audit.snapshot, allocations=audit.findings,
        rows=[f for f in found if scope.show_all or f.is_orphan])


def _read_fully_reserved(sources, snapshot):
    """Which providers of live nodes' trees in scope, holding nothing,
    have all their capacity reserved (provider_rules: fully_reserved):
    read for those only, one inventory read each.
    """
    placement, nova = snapshot.placement, snapshot.nova
    held = {a.provider for a in placement.allocations}
    scope = placement.scope
    empty = []
    for root, tree in provider_rules.tree_roots(placement.providers).items():
        node = nova.compute_nodes.get(root)
        if node is None or node.deleted or (
                scope is not None and not scope.intersection(tree)):
            continue
        empty.extend(u for u in tree if u not in held)
    if empty:
        placement.fully_reserved.update(
            sources.placement_reader().fully_reserved(empty))


def read_for_clean(sources, scope, options, progress=None):
    """The listing a providers clean deletes from, once the options that
    cannot work (a journal) are refused.
    """
    options.check(sources.journal_dir())
    return list_providers(sources, scope, progress)


def clean(sources, listing, options, stop, progress=None):
    """Delete the orphaned trees of ``listing`` (read_for_clean's),
    children first, each provider's record journaled before its DELETE;
    a tree's orphaned allocations are repaired first, and a tree still
    holding others is skipped.
    """
    with allocations.Writes(sources, listing, options, stop,
                            progress) as writes:
        cleaner = providers_repair.ProviderCleaner(
            sources.placement, writes.repairer, journal=writes.journal,
            dry_run=options.dry_run, max_count=options.max_count,
            stop=stop)
        rows, outcomes = cleaner.clean(listing.orphans, listing.allocations)
    return writes.result(rows, outcomes, cleaner.repair_outcomes)
