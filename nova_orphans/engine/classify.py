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
"""Turn a snapshot into findings: the pure core of nova-orphans."""

from nova_orphans.engine import index as index_mod
from nova_orphans.engine import model
from nova_orphans.engine import reasons
from nova_orphans.engine import rules as rules_mod
from nova_orphans.i18n import _


def classify(snapshot, rules=rules_mod.DEFAULT_RULES):
    """Return a finding for every allocation in the snapshot's scope.

    Also returns one ``missing_allocations`` finding per live instance on
    a node in scope that holds no allocations at all. Findings come out
    sorted by host, provider name, provider and consumer, so output is
    stable and reads in the order an operator walks the cloud.
    """
    index = index_mod.SnapshotIndex(snapshot)
    findings = [_classify_allocation(index, alloc, rules)
                for alloc in snapshot.placement.allocations]
    findings.extend(_missing(index))
    findings.sort(key=lambda f: (f.host or '', f.resource_provider_name or '',
                                 f.resource_provider or '', f.consumer))
    return findings


def _classify_allocation(index, alloc, rules):
    owner = index.owner(alloc.consumer)
    ctx = rules_mod.AllocationContext(
        index=index, allocation=alloc,
        provider=index.providers.get(alloc.provider),
        node=index.node_for_provider(alloc.provider), owner=owner)
    for rule in rules:
        verdict = rule(ctx)
        if verdict is not None:
            break
    else:
        # Every chain ends in a catch-all; a site chain without one must
        # not turn "no rule matched" into a deletion.
        verdict = rules_mod.Verdict(
            reasons.UNVERIFIABLE, reasons.NONE,
            _('No classification rule matched this allocation.'))
    return _finding(index, owner, ctx.provider, ctx.node, alloc, verdict)


def _finding(index, owner, provider, node, alloc, verdict):
    record = index.consumer_record(alloc.consumer)
    inst = owner.instance
    if inst is not None:
        instance_uuid = inst.uuid
    elif owner.migration is not None:
        instance_uuid = owner.migration.instance_uuid
    elif owner.consumer_type == reasons.INSTANCE:
        instance_uuid = alloc.consumer
    else:
        instance_uuid = None
    cell = owner.cell
    if cell is None and node is not None:
        cell = index.snapshot.nova.cells.get(node.cell)
    return model.Finding(
        consumer=alloc.consumer,
        consumer_type=owner.consumer_type,
        instance=instance_uuid,
        resource_provider=alloc.provider,
        resource_provider_name=provider.name if provider else None,
        root_provider=provider.root_uuid if provider else None,
        host=node.host if node else None,
        cell=cell.label if cell else None,
        reason=verdict.reason,
        action=verdict.action,
        resources=dict(alloc.resources),
        project_id=record.project_id or (inst.project_id if inst else None),
        user_id=record.user_id or (inst.user_id if inst else None),
        details=verdict.details,
    )


def _missing(index):
    for inst, node in rules_mod.missing_allocations(index):
        provider = index.providers.get(node.uuid) if node else None
        cell = index.snapshot.nova.cells.get(inst.cell)
        yield model.Finding(
            consumer=inst.uuid,
            consumer_type=reasons.INSTANCE,
            instance=inst.uuid,
            resource_provider=node.uuid if node else None,
            resource_provider_name=provider.name if provider else None,
            root_provider=provider.root_uuid if provider else None,
            host=inst.host,
            cell=cell.label if cell else None,
            reason=reasons.MISSING_ALLOCATIONS,
            action=reasons.HEAL,
            resources={},
            project_id=inst.project_id,
            user_id=inst.user_id,
            details=_('The instance runs on %(host)s (%(node)s) but holds '
                      'no allocations in placement.') %
            {'host': inst.host, 'node': inst.node},
        )
