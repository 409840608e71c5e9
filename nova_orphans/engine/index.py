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
"""Look-up tables over a snapshot, built once per run.

Rules ask questions like "which compute node is this provider tree?" or
"does this instance have an evacuation from that node?"; answering them
from dictionaries keeps classification linear in the number of
allocations.
"""

import collections
import typing

from nova_orphans.engine import model
from nova_orphans.engine import nova_states
from nova_orphans.engine import reasons


@model.record
class Owner:
    """What nova knows about one consumer uuid."""

    consumer: str
    consumer_type: str
    instance: typing.Optional[model.Instance] = None
    migration: typing.Optional[model.Migration] = None
    mapping: typing.Optional[model.InstanceMapping] = None
    build_request: bool = False
    # The cell holding the instance or migration, or the one its mapping
    # names; None when nova has no trace of it.
    cell: typing.Optional[model.Cell] = None

    @property
    def untraced(self):
        """nova has no trace of the consumer: no instance, migration,
        instance mapping or build request (see unknown_to_nova).
        """
        return (self.instance is None and self.migration is None and
                self.mapping is None and not self.build_request)


_UNREAD = model.Consumer('')


def unknown_to_nova(nova, consumers):
    """The consumers nova has no trace of: no migration, instance,
    instance mapping or build request.

    Only theirs among the placement records change what the rules see
    (the owner's type, see SnapshotIndex.owner).
    """
    # Instances first: they leave a handful, which the rest then sift
    # (each pass over every consumer costs a look-up per consumer).
    return (set(consumers).difference(nova.instances)
            .difference(nova.migrations).difference(nova.mappings)
            .difference(nova.build_requests))


class CloudIndex:
    """The look-ups that depend only on the providers and compute nodes.

    A repair classifies each consumer again with fresh nova rows, but
    against the audit's providers and compute nodes: built once for the
    run, these keep each of those classifications proportional to the
    consumer's own allocations, not to the size of the cloud.
    """

    def __init__(self, providers, compute_nodes):
        self.providers = providers
        self.nodes_by_uuid = compute_nodes
        self.nodes_by_host_node = {}
        for node in compute_nodes.values():
            # A live row wins over a deleted one for the same name.
            key = (node.host, node.hypervisor_hostname)
            if key not in self.nodes_by_host_node or not node.deleted:
                self.nodes_by_host_node[key] = node
        self.nova_sharing = self._nova_sharing_providers()
        # Every provider's (provider, compute node whose tree holds it,
        # shared by nova?), asked of every allocation: answered once.
        # Another service's provider is in no compute node's tree, even
        # under a node's root (see rules.unmanaged_provider).
        nodes, sharing = self.nodes_by_uuid, self.nova_sharing
        self.provider_facts = {
            uuid: (provider,
                   None if provider.foreign_owner is not None
                   else nodes.get(provider.root_uuid),
                   uuid in sharing)
            for uuid, provider in self.providers.items()}

    def facts_for_provider(self, provider_uuid):
        """(provider or None, its compute node or None, nova sharing?)."""
        facts = self.provider_facts.get(provider_uuid)
        if facts is None:
            # A provider placement did not list (created since).
            facts = (None, self.nodes_by_uuid.get(provider_uuid),
                     provider_uuid in self.nova_sharing)
        return facts

    def serves(self, snapshot):
        """Whether it was built from this snapshot's providers and nodes."""
        return (self.providers is snapshot.placement.providers and
                self.nodes_by_uuid is snapshot.nova.compute_nodes)

    def _nova_sharing_providers(self):
        """Sharing providers that share with at least one compute node
        (none that another service owns).
        """
        node_aggregates = set()
        for provider in self.providers.values():
            if provider.uuid in self.nodes_by_uuid:
                node_aggregates.update(provider.aggregates)
        return frozenset(
            p.uuid for p in self.providers.values()
            if p.sharing and p.foreign_owner is None and
            p.aggregates & node_aggregates)


class SnapshotIndex:

    def __init__(self, snapshot, cloud=None):
        """``cloud``, a CloudIndex of the same providers and compute
        nodes, is used rather than built again.
        """
        self.snapshot = snapshot
        placement, nova = snapshot.placement, snapshot.nova
        if cloud is None or not cloud.serves(snapshot):
            cloud = CloudIndex(placement.providers, nova.compute_nodes)
        self.providers = cloud.providers
        self._records = placement.consumers
        self.unreadable_cells = nova.unreadable_cells
        self.nodes_by_uuid = cloud.nodes_by_uuid
        self.nodes_by_host_node = cloud.nodes_by_host_node
        self.nova_sharing = cloud.nova_sharing

        self.in_progress = collections.defaultdict(list)
        self.evacuations = collections.defaultdict(list)
        for mig in nova.migrations.values():
            if mig.deleted or mig.archived:
                continue
            if nova_states.migration_in_progress(mig) and not (
                    nova_states.cut_off(
                        mig, nova.instances.get(mig.instance_uuid))):
                self.in_progress[mig.instance_uuid].append(mig)
            elif (mig.migration_type == nova_states.EVACUATION and
                  mig.status in nova_states.MIGRATION_SUCCEEDED):
                self.evacuations[mig.instance_uuid].append(mig)

        self.provider_facts = cloud.provider_facts
        self._cloud = cloud
        # {consumer: its Allocation, or {provider: Allocation}}: as the
        # reader grouped them, or grouped here.
        self.by_consumer = _grouping(placement.allocations)
        if self.by_consumer is None:
            self.by_consumer = group_by_consumer(placement.allocations)
        # Only the rules that look beyond one allocation ask for a
        # consumer's roots, of a few consumers: made when asked.
        self._roots = {}
        # Instances whose migration consumers hold allocations: they are
        # not "missing" any, whatever the migration's state.
        self.held_by_migration = {
            mig.instance_uuid for mig in nova.migrations.values()
            if mig.uuid in self.by_consumer}
        self._owners = {}

    def facts_for_provider(self, provider_uuid):
        """(provider or None, its compute node or None, nova sharing?)."""
        return self._cloud.facts_for_provider(provider_uuid)

    def roots_of(self, consumer):
        """The roots of the trees the consumer holds allocations in,
        each once, in the order of its allocations.
        """
        roots = self._roots.get(consumer)
        if roots is None:
            roots = []
            for alloc in _each(self.by_consumer.get(consumer)):
                provider = self.providers.get(alloc.provider)
                root = provider.root_uuid if provider else alloc.provider
                if root not in roots:
                    roots.append(root)
            roots = self._roots[consumer] = tuple(roots)
        return roots

    def node_for_host_node(self, host, node):
        if host is None or node is None:
            return None
        return self.nodes_by_host_node.get((host, node))

    def is_nova_sharing(self, provider_uuid):
        return provider_uuid in self.nova_sharing

    def holds_on_nova_nodes(self, consumer):
        """Whether the consumer holds anything in a compute node's tree or
        on a sharing provider nova uses.
        """
        return any(root in self.nodes_by_uuid or root in self.nova_sharing
                   for root in self.roots_of(consumer))

    def owner(self, consumer):
        owner = self._owners.get(consumer)
        if owner is None:
            owner = self._owners[consumer] = self._resolve(consumer)
        return owner

    def _resolve(self, consumer):
        # Owner(consumer, consumer_type, instance, migration, mapping,
        # build_request, cell), positional: this runs once per consumer.
        nova = self.snapshot.nova
        mapping = nova.mappings.get(consumer)
        build_request = consumer in nova.build_requests
        migration = nova.migrations.get(consumer)
        if migration is not None:
            return Owner(consumer, reasons.MIGRATION,
                         nova.instances.get(migration.instance_uuid),
                         migration, None, False,
                         nova.cells.get(migration.cell))
        instance = nova.instances.get(consumer)
        if instance is not None:
            return Owner(consumer, reasons.INSTANCE, instance, None, mapping,
                         build_request, nova.cells.get(instance.cell))
        if mapping is not None or build_request:
            cell = nova.cells.get(mapping.cell) if mapping else None
            return Owner(consumer, reasons.INSTANCE, mapping=mapping,
                         build_request=build_request, cell=cell)
        placement_type = self.consumer_record(consumer).consumer_type
        consumer_type = {'INSTANCE': reasons.INSTANCE,
                         'MIGRATION': reasons.MIGRATION}.get(
                             placement_type, reasons.UNKNOWN)
        return Owner(consumer, consumer_type)

    def consumer_record(self, consumer):
        """Placement's record, or one that knows nothing (not read)."""
        return self._records.get(consumer) or _UNREAD


def _grouping(allocations):
    """A reader's grouping by consumer (model.GroupedAllocations), or
    None.
    """
    if isinstance(allocations, model.GroupedAllocations):
        return allocations.by_consumer
    return None


def _each(held):
    """The allocations of one consumer's entry in a grouping."""
    if held is None:
        return ()
    if isinstance(held, dict):
        return held.values()
    return (held,)


def consumers_of(allocations):
    """The consumers holding these allocations, a set or a set-like view
    (of a reader's grouping, rather than a set of every one made again).
    """
    grouped = _grouping(allocations)
    if grouped is not None:
        return grouped.keys()
    return {a.consumer for a in allocations}


def held_by(allocations, consumers):
    """The allocations of these consumers, from a reader's grouping when
    there is one (a few consumers' out of every allocation).
    """
    grouped = _grouping(allocations)
    if grouped is None:
        return [a for a in allocations if a.consumer in consumers]
    return [alloc for consumer in consumers
            for alloc in _each(grouped.get(consumer))]


def on_nova_trees(placement, nova, consumers):
    """Those of ``consumers`` holding an allocation in a compute node's
    tree (not on another service's provider there) or on a sharing
    provider, or on a provider placement did not list: the only ones
    whose placement record a built-in rule may ask for (elsewhere
    rules.unmanaged_provider decides first).
    """
    providers, nodes = placement.providers, nova.compute_nodes
    found = set()
    for alloc in held_by(placement.allocations, consumers):
        p = providers.get(alloc.provider)
        if p is None or p.sharing or (p.foreign_owner is None and
                                      p.root_uuid in nodes):
            found.add(alloc.consumer)
    return found


def group_by_consumer(allocations):
    """{consumer: its Allocation, or {provider: Allocation} when it holds
    on several}: model.GroupedAllocations' grouping, for allocations a
    reader did not group.
    """
    grouped = {}
    for alloc in allocations:
        consumer = alloc.consumer
        held = grouped.setdefault(consumer, alloc)
        if held is alloc:
            continue
        if not isinstance(held, dict):
            held = grouped[consumer] = {held.provider: held}
        held[alloc.provider] = alloc
    return grouped
