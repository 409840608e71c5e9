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

import dataclasses

from nova_orphans.engine import claims as claims_mod
from nova_orphans.engine import heal
from nova_orphans.engine import index as index_mod
from nova_orphans.engine import model
from nova_orphans.engine import nova_states
from nova_orphans.engine import reasons
from nova_orphans.engine import rules as rules_mod
from nova_orphans.i18n import _


def classify(snapshot, rules=rules_mod.DEFAULT_RULES, shown=None,
             cloud=None):
    """Return a finding for every allocation in the snapshot's scope.

    Also returns one ``missing_allocations`` finding per live instance on
    a node in scope that holds no allocations at all. Findings come out
    sorted by host, provider name, provider and consumer, so output is
    stable and reads in the order an operator walks the cloud.

    ``shown(verdict)``, if given, keeps only some findings, judging by
    their ``reason``, ``action`` and ``is_orphan`` alone (a Verdict and
    a Finding both have them): only the allocations it keeps get a
    finding built and sorted, which is most of the work when few are.

    ``cloud``: an index.CloudIndex of the snapshot's providers and
    compute nodes, for a caller classifying many small snapshots of one
    cloud.
    """
    index = index_mod.SnapshotIndex(snapshot, cloud)
    findings = []
    append = findings.append
    # Most allocations are live instances on their own node or on a
    # sharing provider: the built-in chain's verdict for them is known
    # without running it (plainly_active), and whether it is shown,
    # once.
    shortcut = (rules is rules_mod.DEFAULT_RULES and
                not index.unreadable_cells)
    plain = {}
    if shortcut:
        for make in (rules_mod.runs_here, rules_mod.shares):
            verdict = make()
            plain[make] = (verdict, shown is None or shown(verdict))
    instances = snapshot.nova.instances if shortcut else {}
    migrations = snapshot.nova.migrations
    claims = snapshot.nova.claims
    provider_facts = index.provider_facts
    # Names looked up in the loop, local: once per allocation of a cloud.
    glance = plainly_active
    for alloc in snapshot.placement.allocations:
        consumer = alloc.consumer
        inst = instances.get(consumer)
        if inst is not None and consumer not in migrations:
            # The cloud index's answer, looked up here (once for most of
            # the allocations of a cloud) rather than through a call.
            provider, node, sharing = (
                provider_facts.get(alloc.provider) or
                index.facts_for_provider(alloc.provider))
            make = glance(inst, node, alloc, claims, sharing)
            if make is not None:
                verdict, show = plain[make]
                if show:
                    append(_finding(index, index.owner(consumer), provider,
                                    node, alloc, verdict))
                continue
        finding = _classify_allocation(index, alloc, rules, shown)
        if finding is not None:
            append(finding)
    findings.extend(f for f in _missing(index) if shown is None or shown(f))
    findings.sort(key=order)
    return findings


def order(finding):
    """classify's order: by host, provider name, provider and consumer."""
    return (finding.host or '', finding.resource_provider_name or '',
            finding.resource_provider or '', finding.consumer)


# vm_states in which some rule before active_instance may decide.
_UNSETTLED_STATES = frozenset((nova_states.BUILDING,
                               nova_states.SOFT_DELETED,
                               nova_states.SHELVED_OFFLOADED))


def plainly_active(inst, node, alloc, claims, sharing):
    """DEFAULT_RULES' verdict at a glance, when it is active_instance's:
    ``runs_here`` or ``shares`` (the function making it), else None.

    For the instance's own allocation (its consumer is no migration),
    when every cell could be read: most allocations of a cloud, which
    classify then spares the whole chain. ``node``: the compute node
    whose tree holds the provider (or None); ``sharing``: whether the
    provider is a sharing provider nova uses; ``claims``: the
    snapshot's (NovaSnapshot.claims).

    Every rule before active_instance returns None for a live instance
    in none of these vm_states, on its own node or on a sharing
    provider: unverifiable (every cell read), unmanaged_provider (a
    node's tree, where the index puts no provider of another service,
    or sharing), unmanaged_consumer (nova knows the consumer),
    finished_migration and active_migration (no
    migration consumer; on its node or sharing), deleted_instance
    (live), building, soft_deleted and shelved_offloaded (its
    vm_state), and leaked_port_allocation: never on a sharing provider,
    and on the node's tree only for what holds a port's classes below
    the root that no port claims. A rule added before active_instance
    must be reflected here and in PLAINLY_ACTIVE_ANSWERS_FOR (a unit
    test holds that to DEFAULT_RULES); the unit tests also compare both
    ways on every kind of allocation.
    """
    if inst.deleted or inst.archived or inst.vm_state in _UNSETTLED_STATES:
        return None
    if not on_node(inst, node):
        return rules_mod.shares if sharing else None
    if alloc.provider == node.uuid or claims_mod.PORT_CLASSES.isdisjoint(
            alloc.resources):
        return rules_mod.runs_here
    found = claims.get(inst.uuid)
    if (found is not None and found.port_providers is not None and
            alloc.provider in found.port_providers):
        return rules_mod.runs_here
    return None


# The rules plainly_active answers for, by what it checks: every one
# before active_instance in DEFAULT_RULES. A rule added there must be
# reflected in plainly_active, and named here: a unit test
# (test_fast_paths) fails while this and DEFAULT_RULES disagree.
PLAINLY_ACTIVE_ANSWERS_FOR = (
    rules_mod.unverifiable, rules_mod.unmanaged_provider,
    rules_mod.unmanaged_consumer, rules_mod.finished_migration,
    rules_mod.deleted_instance, rules_mod.building, rules_mod.soft_deleted,
    rules_mod.active_migration, rules_mod.shelved_offloaded,
    rules_mod.leaked_port_allocation)


def unsettled_candidates(snapshot, findings):
    """The live instances whose activity could change these findings.

    Only an orphan held by a live instance or one of its migrations can
    turn out to be in progress (rules.unsettled), and reading activity
    costs queries per instance: so it is read for these only, after a
    first classification, and their consumers classified again
    (with_activity).
    """
    nova = snapshot.nova
    candidates = set()
    for f in findings:
        if f.is_orphan and f.instance is not None and (
                f.instance not in nova.activity):
            inst = nova.instances.get(f.instance)
            if inst is not None and not (inst.deleted or inst.archived):
                candidates.add(f.instance)
    return candidates


def claim_candidates(snapshot):
    """The live instances whose claims (model.Claims) the rules need.

    Those holding, as their own consumer, classes a port requests on a
    child provider of the node they run on: only there does
    rules.leaked_port_allocation judge, and reading an instance's
    network info and flavor costs queries (or API calls) per instance,
    so most of a cloud's servers are never read. Instances whose claims
    were read already are left out.
    """
    providers = snapshot.placement.providers
    nodes = snapshot.nova.compute_nodes
    instances = snapshot.nova.instances
    known = snapshot.nova.claims
    port_classes = claims_mod.PORT_CLASSES
    candidates = set()
    for alloc in snapshot.placement.allocations:
        provider = providers.get(alloc.provider)
        if provider is None or provider.parent_uuid is None:
            continue
        inst = instances.get(alloc.consumer)
        if (inst is None or inst.uuid in candidates or inst.uuid in known or
                inst.deleted or inst.archived or
                port_classes.isdisjoint(alloc.resources)):
            continue
        if on_node(inst, nodes.get(provider.root_uuid)):
            candidates.add(inst.uuid)
    return candidates


def with_activity(snapshot, findings, instances, rules, shown=None,
                  cloud=None):
    """The findings, with those of these instances' consumers (their own
    and their migrations') classified again now that their activity has
    been read.

    Nothing but a consumer's own allocations, its instance's and nova's
    rows decide its findings, so the rest are kept as they are.
    """
    nova, placement = snapshot.nova, snapshot.placement
    affected = set(instances) | {m.uuid for m in nova.migrations.values()
                                 if m.instance_uuid in instances}
    part = model.PlacementSnapshot(
        providers=placement.providers,
        allocations=index_mod.held_by(placement.allocations, affected),
        consumers=placement.consumers, scope=placement.scope,
        consumers_elsewhere=placement.consumers_elsewhere,
        # Only these instances may be missing allocations here.
        missing_among=frozenset(instances) if placement.missing_among is None
        else placement.missing_among.intersection(instances))
    again = classify(model.Snapshot(placement=part, nova=nova), rules,
                     shown=shown, cloud=cloud)
    kept = [f for f in findings if f.consumer not in affected]
    return sorted(kept + [f for f in again if f.consumer in affected],
                  key=order)


class AllocationContext:
    """What the rules know about one allocation.

    Built once per allocation and read by every rule in the chain, so
    what they all ask (the instance, the migration, whether the provider
    is a sharing provider, whether it is the instance's node) is worked
    out here once rather than on each access.
    """

    __slots__ = ('index', 'allocation', 'provider', 'node', 'owner',
                 'instance', 'migration', 'sharing', '_on_instance_node')

    def __init__(self, index, allocation, provider, node, owner,
                 sharing=None):
        self.index = index
        self.allocation = allocation
        self.provider = provider
        # The compute node whose provider tree holds the allocation.
        self.node = node
        self.owner = owner
        self.instance = inst = owner.instance
        self.migration = owner.migration
        self.sharing = (index.is_nova_sharing(allocation.provider)
                        if sharing is None else sharing)
        self._on_instance_node = inst is not None and on_node(inst, node)

    def on_instance_node(self):
        """Whether the allocation is on the node the instance runs on."""
        return self._on_instance_node


def on_node(inst, node):
    """Whether the compute node (or None) is the one the instance is on."""
    return node is not None and (
        node.uuid == inst.compute_node or
        (node.host == inst.host and node.hypervisor_hostname == inst.node))


def _classify_allocation(index, alloc, rules, shown=None):
    """The allocation's finding, or None if ``shown`` rejects its verdict."""
    owner, provider, node, _rule, verdict = _decide(index, alloc, rules)
    if shown is not None and not shown(verdict):
        return None
    return _finding(index, owner, provider, node, alloc, verdict)


def _decide(index, alloc, rules):
    """(owner, provider, node, rule, verdict): the first rule of the
    chain to decide the allocation (None: none did), and its verdict.
    """
    owner = index.owner(alloc.consumer)
    provider, node, sharing = index.facts_for_provider(alloc.provider)
    ctx = AllocationContext(index, alloc, provider, node, owner, sharing)
    for rule in rules:
        verdict = rule(ctx)
        if verdict is not None:
            return owner, provider, node, rule, verdict
    # Every chain ends in a catch-all; a site chain without one must not
    # turn "no rule matched" into a deletion.
    return owner, provider, node, None, rules_mod.Verdict(
        reasons.UNVERIFIABLE, reasons.NONE,
        _('No classification rule matched this allocation.'))


def decisions(snapshot, rules=rules_mod.DEFAULT_RULES):
    """[(consumer, [(provider, rule name, verdict)])]: which rule of the
    chain decided each allocation in the snapshot's scope, and each
    live instance's missing allocations, by consumer (sorted).

    What classify finds, told rule by rule for a person who doubts it
    (the front ends' --debug): the chain is run for every allocation,
    without classify's shortcut for plainly active ones, whose verdict
    is the chain's by construction.
    """
    index = index_mod.SnapshotIndex(snapshot)
    decided = {}
    for alloc in snapshot.placement.allocations:
        _owner, _provider, _node, rule, verdict = _decide(index, alloc,
                                                          rules)
        name = None if rule is None else (
            getattr(rule, '__name__', None) or type(rule).__name__)
        decided.setdefault(alloc.consumer, []).append(
            (alloc.provider, name, verdict))
    for finding in _missing(index):
        decided.setdefault(finding.consumer, []).append(
            (finding.resource_provider, reasons.MISSING_ALLOCATIONS,
             rules_mod.Verdict(finding.reason, finding.action,
                               finding.details)))
    return sorted(decided.items())


def _finding(index, owner, provider, node, alloc, verdict):
    record = index.consumer_record(alloc.consumer)
    inst = owner.instance
    if inst is not None:
        instance_uuid = inst.uuid
        project_id = record.project_id or inst.project_id
        user_id = record.user_id or inst.user_id
    else:
        if owner.migration is not None:
            instance_uuid = owner.migration.instance_uuid
        elif owner.consumer_type == reasons.INSTANCE:
            instance_uuid = alloc.consumer
        else:
            instance_uuid = None
        project_id = record.project_id or None
        user_id = record.user_id or None
    cell = owner.cell
    if cell is None and node is not None:
        cell = index.snapshot.nova.cells.get(node.cell)
    if provider is not None:
        provider_name, root_provider = provider.name, provider.root_uuid
    else:
        provider_name = root_provider = None
    # Positional, in FINDING_KEYS order: keyword arguments cost more,
    # and this is the one object built for every allocation. Records
    # are never changed once built, so the resources need no copy.
    return model.Finding(
        alloc.consumer, owner.consumer_type, instance_uuid, alloc.provider,
        provider_name, root_provider, node.host if node is not None else None,
        cell.label if cell is not None else None, verdict.reason,
        verdict.action, alloc.resources, project_id, user_id,
        verdict.details)


def with_records(findings, records):
    """The findings as if these placement consumer records had been read.

    A record gives its consumer's findings their project and user, ahead
    of the instance's; nothing else in a finding made by the built-in
    rules depends on a record once the consumers nova has no trace of
    had theirs (index.unknown_to_nova). So the records of the consumers
    shown can be read after classifying, rather than every one before.
    """
    completed = []
    for f in findings:
        record = records.get(f.consumer)
        # A finding is only made again where the record changes it:
        # mostly it names the instance's own project and user.
        if record is not None and (
                (record.project_id or f.project_id) != f.project_id or
                (record.user_id or f.user_id) != f.user_id):
            f = dataclasses.replace(
                f, project_id=record.project_id or f.project_id,
                user_id=record.user_id or f.user_id)
        completed.append(f)
    return completed


def _missing(index):
    for inst, node in heal.missing_allocations(index):
        provider = index.providers.get(node.uuid) if node else None
        cell = index.snapshot.nova.cells.get(inst.cell)
        yield model.Finding(
            consumer=inst.uuid, consumer_type=reasons.INSTANCE,
            instance=inst.uuid, resource_provider=node.uuid if node else None,
            resource_provider_name=provider.name if provider else None,
            root_provider=provider.root_uuid if provider else None,
            host=inst.host, cell=cell.label if cell else None,
            reason=reasons.MISSING_ALLOCATIONS, action=reasons.HEAL,
            resources={}, project_id=inst.project_id, user_id=inst.user_id,
            details=heal.missing_details(inst, index.snapshot.nova))


def with_internal_hints(findings, nova):
    """The findings, those of missing allocations with the details their
    instance's request spec now read gives (NovaSnapshot.internal_hints,
    read after classifying: only those instances need it).
    """
    result = []
    for f in findings:
        inst = nova.instances.get(f.consumer)
        if (f.reason == reasons.MISSING_ALLOCATIONS and inst is not None and
                inst.uuid in nova.internal_hints):
            f = dataclasses.replace(
                f, details=heal.missing_details(inst, nova))
        result.append(f)
    return result
