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
"""Classification rules: one function per reason, tried in order.

Each rule looks at one allocation (one consumer on one provider) with
what nova knows about its consumer and provider, and either returns a
:class:`Verdict` or ``None`` to let the next rule decide. The order of
``DEFAULT_RULES`` is the safety argument: the rules that protect live
allocations (unreadable cells, other services' providers and
consumers, moves in progress) run before any rule that calls an
allocation an orphan, and ``unknown_consumer`` only fires when nothing
anywhere knows the consumer.

Every rule that repairs what a live instance or one of its migrations
holds (finished_migration, shelved_offloaded, evacuated_source,
stale_provider, leaked_port_allocation) first asks :func:`unsettled`:
nova changes its database and placement in separate steps, so a move
whose status says it is over may still be having its allocations moved
or deleted by nova. Each such rule's docstring says which of nova's
steps it relies on.

A rule is any callable ``rule(ctx) -> Verdict or None``; sites can add
their own through the ``nova_orphans.rules`` entry point namespace.
"""

import collections

from nova_orphans.engine import claims as claims_mod
from nova_orphans.engine import nova_states
from nova_orphans.engine import provider_rules
from nova_orphans.engine import reasons
from nova_orphans.engine import settling
from nova_orphans.i18n import _


class Verdict(collections.namedtuple('Verdict', 'reason action details')):
    """A rule's decision, which a finding then carries."""

    __slots__ = ()

    @property
    def is_orphan(self):
        return self.action != reasons.NONE


def _cells(cells):
    return ', '.join(sorted(c.label for c in cells))


def unverifiable(ctx):
    """Never judge what an unreadable cell might own."""
    down = ctx.index.unreadable_cells
    if not down:
        return None
    if ctx.owner.cell is not None and not ctx.owner.cell.readable:
        return Verdict(reasons.UNVERIFIABLE, reasons.NONE,
                       _('The database of cell %(cell)s, which holds this '
                         'consumer, could not be read.') %
                       {'cell': ctx.owner.cell.label})
    if ctx.node is None and not ctx.sharing:
        return Verdict(reasons.UNVERIFIABLE, reasons.NONE,
                       _('The provider is not a compute node of any readable '
                         'cell and cell(s) %(cells)s could not be read.') %
                       {'cells': _cells(down)})
    if ctx.owner.cell is None and ctx.owner.mapping is None and not (
            ctx.owner.build_request):
        return Verdict(reasons.UNVERIFIABLE, reasons.NONE,
                       _('No readable cell knows this consumer and cell(s) '
                         '%(cells)s could not be read.') %
                       {'cells': _cells(down)})
    return None


def unmanaged_provider(ctx):
    """Providers outside nova's compute node trees are someone else's.

    Except for a consumer nova itself ended (a finished migration, a
    deleted instance) that holds nothing on nova's nodes: no other
    service allocates under nova's uuids, so the provider is one nova
    no longer shows, typically a compute node deleted with its service
    while placement refused to delete its provider. The next rules
    judge it; its repair empties the consumer wherever it is.

    A provider another service marks as its own (an owner trait other
    than OWNER_NOVA, such as Cyborg's OWNER_CYBORG on its devices) or
    Blazar's reservation provider is never nova's, even in a compute
    node's tree, where both services put theirs (see
    model.foreign_owner): nothing on it is judged, whoever holds it.

    A compute node nova deleted is not "outside": its row (deleted, or
    archived to shadow_compute_nodes), or through the compute API
    nova's mark on its root (OWNER_NOVA or COMPUTE_NODE) with no
    hypervisor of that uuid (see
    provider_rules), makes it ``ctx.node``, so this rule lets the next
    ones judge what is on its tree. That is what lets a consumer nova
    has no trace of there be ``unknown_consumer`` rather than
    ``unmanaged_provider``: on a tree nova provably owned, no other
    service can hold it, whereas on a tree nova never knew it may be
    that service's own consumer.
    """
    # None: the allocation's provider is not among the snapshot's.
    owner = ctx.provider.foreign_owner if ctx.provider is not None else None
    if owner is not None:
        return Verdict(reasons.UNMANAGED_PROVIDER, reasons.NONE,
                       provider_rules.foreign_provider_details(owner))
    if ctx.node is None and not ctx.sharing:
        if (not ctx.index.holds_on_nova_nodes(ctx.allocation.consumer) and
                (finished_migration(ctx) or deleted_instance(ctx))):
            return None
        return Verdict(reasons.UNMANAGED_PROVIDER, reasons.NONE,
                       _('The provider belongs to no nova compute node tree '
                         'and is not a sharing provider used by one.'))
    return None


def unmanaged_consumer(ctx):
    """A consumer nova has no trace of that the operator or placement
    says is another service's.

    Zun with ``host_shared_with_nova`` allocates its containers on
    nova's compute node providers, under the container's uuid and the
    user's project, with no consumer type: to nova's databases such a
    consumer is exactly an unknown one (``nova-manage placement audit
    --delete`` removes it). Placement's consumer record is all that
    tells it apart: its project, one of the operator's foreign projects,
    or its consumer type (microversion 1.38), one nova never writes or
    one the operator lists. Only consumers nova has no trace of are
    asked: an instance of a service project (an Octavia amphora, a
    Trove database) is nova's, and its leftovers are orphans like any
    other's.
    """
    if not ctx.owner.untraced:
        return None
    record = ctx.index.consumer_record(ctx.allocation.consumer)
    declared = ctx.index.snapshot.nova.foreign
    if record.project_id is not None and (
            record.project_id in declared.projects):
        return Verdict(reasons.UNMANAGED_CONSUMER, reasons.NONE,
                       _('No nova record has this uuid, and its project '
                         '%(project)s is declared foreign (foreign '
                         'projects): another service\'s consumer.') %
                       {'project': record.project_id})
    kind = record.consumer_type
    if kind is None or kind == reasons.UNTYPED:
        return None
    if kind in declared.consumer_types:
        return Verdict(reasons.UNMANAGED_CONSUMER, reasons.NONE,
                       _('No nova record has this uuid, and its consumer '
                         'type %(type)s is declared foreign (foreign '
                         'consumer types): another service\'s consumer.') %
                       {'type': kind})
    if kind not in reasons.NOVA_CONSUMER_TYPES:
        return Verdict(reasons.UNMANAGED_CONSUMER, reasons.NONE,
                       _('No nova record has this uuid, and placement '
                         'records its consumer type as %(type)s, which '
                         'nova never writes: another service\'s '
                         'consumer.') % {'type': kind})
    return None


def unsettled(ctx):
    """nova may still be working on the consumer's live instance: the
    ``in_progress`` verdict, or None (see settling for why it matters).
    Deleted and archived instances are not asked: whatever nova still
    does for them removes the same allocations a repair removes.
    """
    inst = ctx.instance
    if inst is None or inst.deleted or inst.archived:
        return None
    why = settling.why_unsettled(inst, ctx.index.snapshot.nova)
    return None if why is None else Verdict(
        reasons.IN_PROGRESS, reasons.NONE,
        why + ' ' + _('Run again once it settles.'))


def finished_migration(ctx):
    """A migration consumer outlives its migration only by mistake.

    Relies on nova dealing with a move's allocations once the move's
    instance is settled (see unsettled): until then the migration's
    status alone does not say nova is done with them.
    """
    mig = ctx.migration
    inst = ctx.instance
    cut_off = mig is not None and nova_states.cut_off(mig, inst)
    if mig is None or (nova_states.migration_in_progress(mig) and
                       not (mig.deleted or mig.archived) and not cut_off):
        return None
    verdict = unsettled(ctx)
    if verdict is not None:
        return verdict
    if cut_off:
        details = _('Migration %(migration)s (%(type)s) of instance '
                    '%(instance)s still says %(status)s, but nova stopped '
                    'working on it before the guest left %(source)s: the '
                    'instance is there with no task state (a compute cut '
                    'off, then started again).') % {
            'migration': mig.uuid, 'type': mig.migration_type,
            'instance': mig.instance_uuid, 'status': mig.status,
            'source': mig.source_compute}
    else:
        details = _('Migration %(migration)s (%(type)s) of instance '
                    '%(instance)s ended with status %(status)s.') % {
            'migration': mig.uuid, 'type': mig.migration_type,
            'instance': mig.instance_uuid, 'status': mig.status}
    if ((mig.status in nova_states.MIGRATION_FAILED or cut_off) and
            inst is not None and
            not inst.deleted and not inst.archived and
            ctx.node is not None and
            (inst.host, inst.node) == (mig.source_compute, mig.source_node) and
            (ctx.node.host, ctx.node.hypervisor_hostname) ==
            (mig.source_compute, mig.source_node) and
            ctx.node.uuid not in ctx.index.roots_of(inst.uuid)):
        return Verdict(reasons.FINISHED_MIGRATION,
                       reasons.RETURN_TO_INSTANCE,
                       details + ' ' + _('The instance is back on the source '
                                         'node without allocations of its '
                                         'own there.'))
    return Verdict(reasons.FINISHED_MIGRATION, reasons.DELETE_CONSUMER,
                   details)


def deleted_instance(ctx):
    """Deleted, archived or vanished instances own nothing.

    Needs no grace period: nova deletes an instance's row first and its
    allocations after (``_delete_instance`` then ``_complete_deletion``,
    or the API's local delete), and whichever of nova and the repair
    comes second finds nothing left to delete (nova's delete of a
    consumer that is gone is a no-op).
    """
    inst = ctx.instance
    if inst is None:
        if ctx.migration is None:
            return None
        return Verdict(reasons.DELETED_INSTANCE, reasons.DELETE_CONSUMER,
                       _('Instance %(instance)s of migration %(migration)s '
                         'no longer exists.') %
                       {'instance': ctx.migration.instance_uuid,
                        'migration': ctx.migration.uuid})
    if inst.archived:
        return Verdict(reasons.DELETED_INSTANCE, reasons.DELETE_CONSUMER,
                       _('Instance %(instance)s is deleted and archived '
                         '(found only in shadow tables).') %
                       {'instance': inst.uuid})
    if inst.deleted:
        return Verdict(reasons.DELETED_INSTANCE, reasons.DELETE_CONSUMER,
                       _('Instance %(instance)s is deleted.') %
                       {'instance': inst.uuid})
    return None


def building(ctx):
    """The scheduler allocates before the instance has a cell or host.

    A build request (or a mapping without a cell) and an instance still
    in task state ``scheduling`` say the same: the compute API shows a
    build request as such an instance.
    """
    owner = ctx.owner
    inst = owner.instance
    if (inst is None and (
            owner.build_request or
            (owner.mapping is not None and owner.mapping.cell is None))) or (
            inst is not None and inst.vm_state == nova_states.BUILDING and
            inst.task_state == nova_states.SCHEDULING):
        return Verdict(reasons.BUILDING, reasons.NONE,
                       _('The instance is being scheduled.'))
    if inst is not None and inst.vm_state == nova_states.BUILDING:
        return Verdict(reasons.BUILDING, reasons.NONE,
                       _('The instance is building.'))
    return None


def soft_deleted(ctx):
    """Soft-deleted instances keep their allocations until reclaimed."""
    inst = ctx.instance
    if inst is not None and inst.vm_state == nova_states.SOFT_DELETED:
        return Verdict(reasons.SOFT_DELETED, reasons.NONE,
                       _('The instance is soft-deleted and can still be '
                         'restored.'))
    return None


def active_migration(ctx):
    """A move in progress owns allocations on both of its nodes."""
    mig = ctx.migration
    if mig is not None:
        return Verdict(reasons.ACTIVE_MIGRATION, reasons.NONE,
                       _('Migration %(migration)s (%(type)s) is in progress '
                         'with status %(status)s.') %
                       {'migration': mig.uuid, 'type': mig.migration_type,
                        'status': mig.status})
    inst = ctx.instance
    if inst is None or ctx.on_instance_node() or ctx.sharing:
        return None
    return _moving(ctx, inst)


def _moving(ctx, inst):
    """The verdict of the instance's move in progress, or None."""
    migs = ctx.index.in_progress.get(inst.uuid)
    if migs:
        mig = migs[0]
        return Verdict(reasons.ACTIVE_MIGRATION, reasons.NONE,
                       _('The instance has migration %(migration)s '
                         '(%(type)s) in progress with status %(status)s.') %
                       {'migration': mig.uuid, 'type': mig.migration_type,
                        'status': mig.status})
    return None


def shelved_offloaded(ctx):
    """Offloading frees the host; only an unshelve may allocate again.

    nova deletes the allocations before it sets ``shelved_offloaded``
    (``_shelve_offload_instance``), and an unshelve sets its task state
    before the scheduler allocates; a failed unshelve's clean-up is
    covered by unsettled.
    """
    inst = ctx.instance
    if (inst is not None and
            inst.vm_state == nova_states.SHELVED_OFFLOADED and
            inst.task_state not in nova_states.UNSHELVE_TASK_STATES):
        return unsettled(ctx) or Verdict(
            reasons.SHELVED_OFFLOADED, reasons.DELETE_CONSUMER,
            _('The instance is shelved and offloaded; it holds no host.'))
    return None


def leaked_port_allocation(ctx):
    """A port's resources a live, settled server holds and nothing claims.

    nova leaks them in two places, and says so in its logs: detaching a
    port with a resource request (or rolling back a failed attach) when
    removing its resources from the server's allocation keeps meeting
    generation conflicts (``remove_resources_from_instance_allocation``),
    and neutron deleting a bound port with a resource request
    (``_process_instance_vif_deleted_event``). Either way the server's
    own consumer keeps the port's resources on a child provider of its
    node (a bandwidth provider, an SR-IOV physical function) until the
    server is deleted.

    The proof, all of it required:

    - The allocation is the instance's own (no migration consumer, see
      the rules before this one), on a provider of its own node's tree
      that is not the root and not a sharing provider, and holds only
      classes a port requests (claims.PORT_CLASSES). Anything else on
      a child (vGPU, PCI devices, accelerators) is not judged here; a
      provider holding both cannot be trimmed and is ``unverifiable``.
    - No port claims the provider: no vif in the instance's network
      info names it in its binding profile's ``allocation`` (a provider
      uuid, or a dict of request group to provider). A port claims its
      providers from its binding, before nova writes the network info
      and until the port is unbound.
    - The flavor requests none of those classes (its ``resources*:``
      specs in any group).
    - Both records were read and parse: an empty or unparsable network
      info, an unreadable flavor, a network API that cannot be reached
      prove nothing (``unverifiable``). Nor does network info naming a
      provider outside the node's tree: it predates a move, or names a
      provider that is gone.
    - nova is not working on the instance: no task state, no migration
      in progress, no event of its latest instance action still running,
      no change to it or its network info within the grace period (see
      unsettled). nova 34 sets no task state for an interface attach or
      detach: what covers them is the action's running event
      (compute_attach_interface, compute_detach_interface). An attach
      allocates before it binds the port and writes the network info; a
      detach writes the network info before it removes the resources.
    """
    inst = ctx.instance
    alloc = ctx.allocation
    if (inst is None or ctx.migration is not None or inst.deleted or
            inst.archived or ctx.sharing or not ctx.on_instance_node() or
            alloc.provider == ctx.node.uuid):
        return None
    port_classes = claims_mod.PORT_CLASSES.intersection(alloc.resources)
    if not port_classes:
        return None
    found = ctx.index.snapshot.nova.claims.get(inst.uuid)
    if found is None:
        return Verdict(reasons.UNVERIFIABLE, reasons.NONE,
                       _('What the instance\'s ports and flavor claim was '
                         'not read: nothing proves this child provider\'s '
                         'allocation is still claimed or not.'))
    if (found.port_providers is not None and
            alloc.provider in found.port_providers):
        return None
    if (found.flavor_classes is not None and
            found.flavor_classes & port_classes):
        return None
    for error in (found.ports_error, found.flavor_error):
        if error is not None:
            return Verdict(reasons.UNVERIFIABLE, reasons.NONE,
                           _('No port is known to claim this provider, but '
                             'nothing proves it: %(why)s.') % {'why': error})
    others = set(alloc.resources).difference(claims_mod.PORT_CLASSES)
    if others:
        return Verdict(reasons.UNVERIFIABLE, reasons.NONE,
                       _('No port claims this provider, but the allocation '
                         'also holds %(classes)s, which no port requests: '
                         'it is not trimmed.') %
                       {'classes': ', '.join(sorted(others))})
    verdict = unsettled(ctx) or _moving(ctx, inst)
    if verdict is not None:
        return verdict
    nova = ctx.index.snapshot.nova
    when = settling.timestamp
    if (nova.recent_since is not None and
            found.network_changed_at is not None and
            found.network_changed_at >= nova.recent_since):
        return Verdict(reasons.IN_PROGRESS, reasons.NONE,
                       _('nova wrote the instance\'s network info at '
                         '%(time)s UTC, within [nova_orphans] grace_period '
                         'of this run. Run again once it settles.') %
                       {'time': when(found.network_changed_at)})
    if (found.cache_only and found.ports_changed_at is not None and
            inst.uuid in nova.activity and (
                found.network_changed_at is None or
                found.network_changed_at < found.ports_changed_at)):
        # The cache predates nova's last change to the server's ports;
        # only neutron could say what they claim now. Judged once the
        # instance's activity is read (an orphan's is: see
        # classify.unsettled_candidates), so that an interface change
        # still running is in_progress rather than this.
        return Verdict(reasons.UNVERIFIABLE, reasons.NONE,
                       _('No port in nova\'s info cache claims this '
                         'provider, but the cache (written %(cache)s UTC) '
                         'is older than the server\'s last interface '
                         'change (%(change)s UTC) and neutron was not '
                         'asked: it proves nothing.') % {
                           'cache': when(found.network_changed_at),
                           'change': when(found.ports_changed_at)})
    elsewhere = sorted(
        rp for rp in found.port_providers
        if getattr(ctx.index.providers.get(rp), 'root_uuid',
                   None) != ctx.node.uuid)
    if elsewhere:
        # Written before a move (nova binds the ports to the new node's
        # providers, then refreshes the network info), or naming a
        # provider placement no longer has: it does not describe where
        # the ports are bound now.
        return Verdict(reasons.UNVERIFIABLE, reasons.NONE,
                       _('No port claims this provider, but the network '
                         'info names %(providers)s, not in this node\'s '
                         'tree: it may predate a move.') %
                       {'providers': ', '.join(elsewhere)})
    details = _('No port of the instance claims this provider (its ports\' '
                'binding profiles name %(providers)s) and its flavor '
                'requests none of %(classes)s.') % {
        'providers': ', '.join(sorted(found.port_providers)) or
        _('no provider'),
        'classes': ', '.join(sorted(port_classes))}
    if found.cache_only:
        details += ' ' + _(
            'The ports are those of nova\'s info cache, written %(cache)s '
            'UTC: neutron was not asked, and nova refreshes the cache only '
            'on neutron\'s events (no longer periodically by default '
            'since nova 31.0.0).') % {
            'cache': when(found.network_changed_at)}
    return Verdict(reasons.LEAKED_PORT_ALLOCATION, reasons.TRIM_PROVIDER,
                   details)


def active_instance(ctx):
    """The instance's own node tree, any sharing provider, or a task."""
    inst = ctx.instance
    if inst is None:
        return None
    if ctx.on_instance_node():
        return runs_here()
    if ctx.sharing:
        return shares()
    if inst.task_state is not None:
        # A task may be about to move the instance; judge once it settles.
        return Verdict(reasons.ACTIVE_INSTANCE, reasons.NONE,
                       _('The instance has task_state %(task)s in progress; '
                         'run again when it settles.') %
                       {'task': inst.task_state})
    return None


def runs_here():
    """active_instance's verdict on the node the instance runs on."""
    return Verdict(reasons.ACTIVE_INSTANCE, reasons.NONE,
                   _('The instance runs on this node.'))


def shares():
    """active_instance's verdict on a sharing provider nova uses."""
    return Verdict(reasons.ACTIVE_INSTANCE, reasons.NONE,
                   _('Sharing provider used by the instance.'))


def evacuated_source(ctx):
    """The guide's case: evacuated away, allocation left on the source.

    nova removes the source's allocation only when the source compute
    starts again (``_destroy_evacuated_instances``), with a
    generation-checked write of the same result; the evacuation itself
    is over once its migration is done and the instance settled.
    """
    inst = ctx.instance
    if inst is None or ctx.node is None:
        return None
    for mig in ctx.index.evacuations.get(inst.uuid, ()):
        if ((mig.source_compute, mig.source_node) ==
                (ctx.node.host, ctx.node.hypervisor_hostname) and
                (inst.host, inst.node) != (mig.source_compute,
                                           mig.source_node)):
            return unsettled(ctx) or Verdict(
                reasons.EVACUATED_SOURCE, reasons.REMOVE_PROVIDER,
                _('Evacuated from %(source)s to %(dest)s by migration '
                  '%(migration)s (%(status)s); the instance now runs on '
                  '%(host)s.') % {
                    'source': mig.source_compute, 'dest': mig.dest_compute,
                    'migration': mig.uuid, 'status': mig.status,
                    'host': inst.host})
    return None


def stale_provider(ctx):
    """A live instance holding resources on a node it is not on.

    During a revert the instance is back on its source host while it
    still holds the destination, until the source moves the migration's
    allocation back to it; unsettled keeps that window (and any other
    move's) from looking stale.
    """
    inst = ctx.instance
    if inst is None:
        return None
    return unsettled(ctx) or Verdict(
        reasons.STALE_PROVIDER, reasons.REMOVE_PROVIDER,
        _('The instance runs on %(host)s (%(node)s), not on this node, and '
          'no move is in progress.') % {'host': inst.host, 'node': inst.node})


def unknown_consumer(ctx):
    """Nothing in the API database or any cell knows the consumer.

    Reached only for allocations on nova's trees, live or deleted
    compute nodes' and the sharing providers they use (see
    unmanaged_provider), and only when every cell was read (see
    unverifiable).
    """
    if ctx.owner.instance is None and ctx.owner.migration is None:
        if ctx.owner.mapping is not None:
            return Verdict(reasons.UNKNOWN_CONSUMER, reasons.DELETE_CONSUMER,
                           _('An instance mapping exists but cell %(cell)s '
                             'has no instance or migration with this '
                             'uuid.') % {'cell': ctx.owner.cell.label
                                         if ctx.owner.cell else None})
        return Verdict(reasons.UNKNOWN_CONSUMER, reasons.DELETE_CONSUMER,
                       _('No instance, migration, build request or instance '
                         'mapping has this uuid.'))
    return None


DEFAULT_RULES = (
    unverifiable,
    unmanaged_provider,
    unmanaged_consumer,
    finished_migration,
    deleted_instance,
    building,
    soft_deleted,
    active_migration,
    shelved_offloaded,
    leaked_port_allocation,
    active_instance,
    evacuated_source,
    stale_provider,
    unknown_consumer,
)
