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
allocation an orphan, and
``unknown_consumer`` only fires when nothing anywhere knows the consumer.
A foreign provider protects everything on it but what nova's own ended
consumers hold there and nowhere on nova's nodes (see
``unmanaged_provider``).

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
import itertools
import re

from nova_orphans.engine import claims as claims_mod
from nova_orphans.engine import model
from nova_orphans.engine import nova_states
from nova_orphans.engine import reasons
from nova_orphans import exception
from nova_orphans.i18n import _

# The consumer types nova's consumers may carry in placement (1.38+):
# nova 27 to 34 write none, which placement reads back as "unknown".
NOVA_CONSUMER_TYPES = frozenset(('INSTANCE', 'MIGRATION'))
UNTYPED = 'unknown'
# Placement's consumer type names (CONSUMER_TYPE_PATTERN).
_CONSUMER_TYPE = re.compile(r'^[A-Z0-9_]+$')
# keystone's project ids: a uuid4's hex digits (the SQL resource backend,
# the only one since Mitaka); what nova passes placement from the token.
_PROJECT_ID = re.compile(r'^[0-9a-f]{32}$')


class Verdict(collections.namedtuple('Verdict', 'reason action details')):
    """A rule's decision, which a finding then carries."""

    __slots__ = ()

    @property
    def is_orphan(self):
        return self.action != reasons.NONE


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
                       foreign_provider_details(owner))
    if ctx.node is None and not ctx.sharing:
        if (not ctx.index.holds_on_nova_nodes(ctx.allocation.consumer) and
                (finished_migration(ctx) or deleted_instance(ctx))):
            return None
        return Verdict(reasons.UNMANAGED_PROVIDER, reasons.NONE,
                       _('The provider belongs to no nova compute node tree '
                         'and is not a sharing provider used by one.'))
    return None


def foreign_provider_details(owner):
    """Why a provider (model.Provider.foreign_owner) is never nova's."""
    if owner == 'blazar':
        return _('The provider is Blazar\'s reservation provider '
                 '(blazar_<host>): another service\'s, never judged '
                 'nova\'s.')
    return _('The provider carries %(traits)s: another service\'s, never '
             'judged nova\'s.') % {'traits': owner}


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
    if kind is None or kind == UNTYPED:
        return None
    if kind in declared.consumer_types:
        return Verdict(reasons.UNMANAGED_CONSUMER, reasons.NONE,
                       _('No nova record has this uuid, and its consumer '
                         'type %(type)s is declared foreign (foreign '
                         'consumer types): another service\'s consumer.') %
                       {'type': kind})
    if kind not in NOVA_CONSUMER_TYPES:
        return Verdict(reasons.UNMANAGED_CONSUMER, reasons.NONE,
                       _('No nova record has this uuid, and placement '
                         'records its consumer type as %(type)s, which '
                         'nova never writes: another service\'s '
                         'consumer.') % {'type': kind})
    return None


def foreign(projects=(), consumer_types=(), projects_option='',
            types_option='', error=exception.ConfigError):
    """The model.Foreign the operator declares, checked.

    Project ids only: placement records a consumer's project id, and
    names are not resolved, so that both front ends judge alike from
    the same declaration (``nova-orphans-manage`` reads nova.conf and
    has no identity service to ask) and a name never silently matches
    nothing, which would leave another service's consumers to be
    cleaned. A value that is no keystone project id is refused with
    ``error``, naming ``projects_option`` (or ``types_option``).
    """
    ids = set()
    for value in projects:
        value = value.strip()
        if not _PROJECT_ID.match(value.lower()):
            raise error(reason=_(
                '%(option)s: %(value)s is not a project id (32 hex '
                'digits); project names are not resolved: give the id '
                '("openstack project show -f value -c id NAME")') % {
                'option': projects_option, 'value': value})
        ids.add(value.lower())
    kinds = set()
    for value in consumer_types:
        value = value.strip()
        if not _CONSUMER_TYPE.match(value):
            raise error(reason=_(
                '%(option)s: %(value)s is not a placement consumer type '
                '(upper case letters, digits and _)') % {
                'option': types_option, 'value': value})
        if value in NOVA_CONSUMER_TYPES:
            raise error(reason=_(
                '%(option)s: %(value)s is one of nova\'s own consumer '
                'types') % {'option': types_option, 'value': value})
        kinds.add(value)
    return model.Foreign(projects=frozenset(ids),
                         consumer_types=frozenset(kinds))


def unsettled(ctx):
    """nova may still be working on the consumer's live instance.

    nova records a move's end in its database before it deals with the
    move's allocations: confirming, ``drop_move_claim_at_source`` sets
    the migration ``confirmed`` (and the instance ACTIVE) and only then
    is the migration's allocation on the source deleted; reverting,
    ``drop_move_claim_at_dest`` sets it ``reverted`` while the instance
    is already back on its source host in task state
    ``resize_reverting``, and only then does the source move the
    migration's allocation back to the instance. What the rules would
    repair in that window is exactly what nova is about to write,
    under a consumer generation it has already read: repairing it makes
    nova's write fail and can leave the server with no allocation at
    all. A re-read does not help, it shows the same state.

    So nothing a live instance or its migrations hold is repaired while
    the instance has a task state, is ``resized``, has an event of its
    latest instance action still running, or nova recorded a change to
    it, its migrations or that action within the grace period. Deleted
    and archived instances are not asked: whatever nova still does for
    them removes the same allocations a repair removes.
    """
    inst = ctx.instance
    if inst is None or inst.deleted or inst.archived:
        return None
    return instance_unsettled(inst, ctx.index.snapshot.nova)


def instance_unsettled(inst, nova):
    """unsettled's verdict for a live instance, or None if it is settled."""
    if inst.task_state is not None:
        why = _('The instance has task_state %(task)s: nova is not done '
                'with it.') % {'task': inst.task_state}
    elif inst.vm_state == nova_states.RESIZED:
        why = _('The instance is resized: its move is being confirmed or '
                'awaits confirmation.')
    else:
        activity = nova.activity.get(inst.uuid)
        if activity is None:
            return None
        if activity.pending_event is not None:
            why = _('nova has not finished %(event)s on the instance '
                    '(started %(since)s UTC).') % {
                'event': activity.pending_event,
                'since': _time(activity.pending_since)}
        elif (nova.recent_since is not None and
                activity.changed_at is not None and
                activity.changed_at >= nova.recent_since):
            why = _('nova changed the instance, one of its migrations or '
                    'its latest action at %(time)s UTC, within '
                    '[nova_orphans] grace_period of this run.') % {
                'time': _time(activity.changed_at)}
        else:
            return None
    return Verdict(reasons.IN_PROGRESS, reasons.NONE,
                   why + ' ' + _('Run again once it settles.'))


def _time(when):
    return when.isoformat(sep=' ', timespec='seconds') if when else '?'


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
        verdict = unsettled(ctx)
        if verdict is not None:
            return verdict
        return Verdict(reasons.SHELVED_OFFLOADED, reasons.DELETE_CONSUMER,
                       _('The instance is shelved and offloaded; it holds no '
                         'host.'))
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
    verdict = unsettled(ctx)
    if verdict is not None:
        return verdict
    nova = ctx.index.snapshot.nova
    migs = ctx.index.in_progress.get(inst.uuid)
    if migs:
        return Verdict(reasons.ACTIVE_MIGRATION, reasons.NONE,
                       _('The instance has migration %(migration)s '
                         '(%(type)s) in progress with status %(status)s.') %
                       {'migration': migs[0].uuid,
                        'type': migs[0].migration_type,
                        'status': migs[0].status})
    if (nova.recent_since is not None and
            found.network_changed_at is not None and
            found.network_changed_at >= nova.recent_since):
        return Verdict(reasons.IN_PROGRESS, reasons.NONE,
                       _('nova wrote the instance\'s network info at '
                         '%(time)s UTC, within [nova_orphans] grace_period '
                         'of this run. Run again once it settles.') %
                       {'time': _time(found.network_changed_at)})
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
                           'cache': _time(found.network_changed_at),
                           'change': _time(found.ports_changed_at)})
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
            'cache': _time(found.network_changed_at)}
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
        return shares if sharing else None
    if alloc.provider == node.uuid or claims_mod.PORT_CLASSES.isdisjoint(
            alloc.resources):
        return runs_here
    found = claims.get(inst.uuid)
    if (found is not None and found.port_providers is not None and
            alloc.provider in found.port_providers):
        return runs_here
    return None


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
            verdict = unsettled(ctx)
            if verdict is not None:
                return verdict
            return Verdict(reasons.EVACUATED_SOURCE, reasons.REMOVE_PROVIDER,
                           _('Evacuated from %(source)s to %(dest)s by '
                             'migration %(migration)s (%(status)s); the '
                             'instance now runs on %(host)s.') %
                           {'source': mig.source_compute,
                            'dest': mig.dest_compute,
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
    verdict = unsettled(ctx)
    if verdict is not None:
        return verdict
    return Verdict(reasons.STALE_PROVIDER, reasons.REMOVE_PROVIDER,
                   _('The instance runs on %(host)s (%(node)s), not on this '
                     'node, and no move is in progress.') %
                   {'host': inst.host, 'node': inst.node})


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
# The rules plainly_active answers for, by what it checks: every one
# before active_instance in DEFAULT_RULES. A rule added there must be
# reflected in plainly_active, and named here: a unit test
# (test_fast_paths) fails while this and DEFAULT_RULES disagree.
PLAINLY_ACTIVE_ANSWERS_FOR = (
    unverifiable, unmanaged_provider, unmanaged_consumer,
    finished_migration, deleted_instance, building, soft_deleted,
    active_migration, shelved_offloaded, leaked_port_allocation)


# The scheduler hint nova's own rebuild sets (never saved), which the
# scheduler reads as "check the current host, claim nothing".
CHECK_TYPE_HINT = '_nova_check_type'


def internal_hints(hints):
    """The names of nova's internal scheduler hints (``_nova*``) among
    ``hints`` (a request spec's or a server's), sorted.
    """
    return tuple(sorted(str(k) for k in hints or ()
                        if str(k).startswith('_nova')))


def missing_details(inst, nova):
    """The details of a missing_allocations finding for ``inst``.

    A request spec that carries nova's internal ``_nova_check_type``
    hint was created with it: nova's rebuild sets it on a copy it never
    saves (``del request_spec.id`` in compute.api.API.rebuild), while
    nova before 31.3.1, 32.2.1 and 33.0.2 kept a user's hints at create
    as given, and its scheduler then skipped placement and the claim
    (``request_is_rebuild``): the server runs with no allocation
    (nova bug 2151252, fixed by stripping ``_nova`` hints at create).
    """
    details = _('The instance runs on %(host)s (%(node)s) but holds no '
                'allocations in placement.') % {
        'host': inst.host, 'node': inst.node}
    if CHECK_TYPE_HINT in nova.internal_hints.get(inst.uuid, ()):
        details += ' ' + _(
            'Its request spec carries the scheduler hint %(hint)s, given '
            'at create: the scheduler skipped the claim (OSSA-2026-022, '
            'CVE-2026-46448, nova bug 2151252; fixed in nova 31.3.1, '
            '32.2.1 and 33.0.2).') % {'hint': CHECK_TYPE_HINT}
    return details


def missing_allocations(index):
    """Live, placed instances that hold nothing at all: heal them."""
    placement = index.snapshot.placement
    instances = index.snapshot.nova.instances
    among = (instances if placement.missing_among is None else
             [uuid for uuid in placement.missing_among if uuid in instances])
    # Whether it holds allocations (in scope or elsewhere), asked first,
    # of every instance, in C: most do, and it is then the one question
    # asked of them (a set of every instance, made to take a difference,
    # cost twice as much). The order does not matter: classify sorts.
    elsewhere = placement.consumers_elsewhere
    for uuid in itertools.filterfalse(index.by_consumer.__contains__,
                                      among):
        if uuid in elsewhere or uuid in index.held_by_migration:
            continue
        inst = instances[uuid]
        if (inst.deleted or inst.archived or not inst.host or
                not inst.node or
                inst.vm_state in (nova_states.BUILDING,
                                  nova_states.SOFT_DELETED,
                                  nova_states.SHELVED_OFFLOADED) or
                instance_unsettled(inst, index.snapshot.nova)):
            continue
        node = (index.nodes_by_uuid.get(inst.compute_node) or
                index.node_for_host_node(inst.host, inst.node))
        if placement.scope is not None and (
                node is None or node.uuid not in placement.scope):
            continue
        yield inst, node
