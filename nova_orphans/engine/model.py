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
"""The snapshot the engine classifies, and the findings it produces.

Plain records with no I/O: readers build them from placement and nova,
unit tests build them by hand, and the engine never needs to know which.
Nothing changes a record once it is built (``dataclasses.replace`` makes
a new one). The per-row records are ``slots`` dataclasses (``record``)
rather than frozen ones, which cost more to create: a run creates one
per allocation.
"""

import dataclasses
import datetime
import typing

from nova_orphans.engine import reasons

# Placement's MISC_SHARES_VIA_AGGREGATE: such a provider's allocations
# belong to whichever instance holds them, wherever it runs.
SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'
# os-traits' owner traits: a service marks the providers it owns with
# OWNER_<SERVICE>. nova 34 puts OWNER_NOVA on its compute nodes' roots,
# its PCI-in-placement providers and the providers it configures from
# provider config files; Cyborg puts OWNER_CYBORG on its devices'.
OWNER_TRAIT_PREFIX = 'OWNER_'
OWNER_NOVA = 'OWNER_NOVA'
# The trait nova 27 and later put on every compute node's root provider.
COMPUTE_NODE_TRAIT = 'COMPUTE_NODE'
# nova's marks on a compute node's root, as a row names its evidence.
NOVA_NODE_TRAITS = (OWNER_NOVA, COMPUTE_NODE_TRAIT)
# Blazar's reservation providers: a child ``blazar_<host>`` of the
# host's compute node provider, with a CUSTOM_RESERVATION_<reservation>
# class for each instance reservation on the host.
BLAZAR_PREFIX = 'blazar_'
RESERVATION_CLASS_PREFIX = 'CUSTOM_RESERVATION_'


def record(cls):
    """``dataclasses.dataclass(slots=True)``, on every supported Python.

    Python 3.9 (the RHEL 9 family's nova) has no ``slots`` argument. As
    3.10 does, the class is made again with ``__slots__`` holding its
    fields, and without their defaults as class attributes (a slot and a
    class attribute of one name cannot coexist; ``__init__`` keeps the
    defaults). Without ``__slots__``, each of a run's records (one per
    allocation) would carry a ``__dict__`` as well.
    """
    cls = dataclasses.dataclass(cls)
    names = tuple(f.name for f in dataclasses.fields(cls))
    body = dict(cls.__dict__)
    for name in names + ('__dict__', '__weakref__'):
        body.pop(name, None)
    body['__slots__'] = names
    slotted = type(cls)(cls.__name__, cls.__bases__, body)
    slotted.__qualname__ = cls.__qualname__
    return slotted


def _new(factory):
    """A field whose default is a new ``factory()``: each record its own."""
    return dataclasses.field(default_factory=factory)


def foreign_owner(name, parent_name, owner_traits, resource_classes):
    """Why a provider is another service's, or None.

    ``owner_traits``: the OWNER_* traits it carries; ``resource_classes``
    those of its inventories (a reader may pass only the
    CUSTOM_RESERVATION_* ones). Any owner trait other than OWNER_NOVA
    makes it another service's, whatever else it carries. A
    ``blazar_<host>`` child of ``<host>`` is Blazar's before it has any
    reservation's class; any other ``blazar_`` name only with one.
    """
    others = sorted(t for t in owner_traits if t != OWNER_NOVA)
    if others:
        return ', '.join(others)
    if name and name.startswith(BLAZAR_PREFIX):
        if parent_name is not None and name == BLAZAR_PREFIX + parent_name:
            return 'blazar'
        if any(rc.startswith(RESERVATION_CLASS_PREFIX)
               for rc in resource_classes):
            return 'blazar'
    return None


@record
class Provider:
    uuid: str
    name: str
    root_uuid: str
    parent_uuid: typing.Optional[str] = None
    generation: int = 0
    sharing: bool = False
    # Only filled for sharing providers and the roots they share with.
    aggregates: frozenset = frozenset()
    # Another service's provider (see foreign_owner): what says so, an
    # owner trait (OWNER_CYBORG) or 'blazar'; None for any other.
    foreign_owner: typing.Optional[str] = None


@record
class Allocation:
    """One consumer's resources on one provider."""

    consumer: str
    provider: str
    resources: typing.Mapping[str, int]


class GroupedAllocations(list):
    """Allocations, with who holds what as a reader grouped them.

    ``by_consumer``: {consumer: its Allocation, or {provider uuid:
    Allocation} for a consumer holding on several providers}. A reader
    that has to group the rows it reads by consumer anyway (placement's
    database gives one row per resource class) hands that grouping on,
    so the engine's index need not make it again from every allocation
    (engine.index.SnapshotIndex).
    """

    __slots__ = ('by_consumer',)

    def __init__(self, allocations=(), by_consumer=None):
        super().__init__(allocations)
        self.by_consumer = by_consumer


@record
class Consumer:
    """Placement's consumer record; ``None`` fields were not read."""

    uuid: str
    project_id: typing.Optional[str] = None
    user_id: typing.Optional[str] = None
    generation: typing.Optional[int] = None
    # Placement's type: 'INSTANCE', 'MIGRATION', 'unknown' or None (not
    # read: placement older than 1.38, or read in bulk without it).
    consumer_type: typing.Optional[str] = None


@dataclasses.dataclass
class PlacementSnapshot:
    providers: typing.Dict[str, Provider] = _new(dict)
    # Allocations on the providers that were read (see ``scope``).
    allocations: typing.List[Allocation] = _new(list)
    consumers: typing.Dict[str, Consumer] = _new(dict)
    # Provider uuids whose allocations were read; None means all of them.
    scope: typing.Optional[frozenset] = None
    # Consumers outside the scope known to hold allocations somewhere:
    # filled for scoped reads so that "has no allocations at all" holds.
    consumers_elsewhere: frozenset = frozenset()
    # The only instances that may be reported missing allocations, when
    # a part of the allocations is classified again (None: any).
    missing_among: typing.Optional[frozenset] = None
    # {provider uuid: its resource classes}: providers holding no
    # allocation whose every inventory is reserved whole (reserved at
    # least total). Read only for the provider commands.
    fully_reserved: typing.Dict[str, tuple] = _new(dict)
    # Providers whose allocations are as an earlier scan read them, not
    # read in this one (readers/kept_reads.py): no reported finding rests
    # on them (engine.resting). Empty: every provider in scope was read.
    kept: frozenset = frozenset()


@dataclasses.dataclass(frozen=True)
class Foreign:
    """What the operator declares not nova's to judge.

    ``projects``: project ids ([nova_orphans] foreign_projects);
    ``consumer_types``: placement consumer types ([nova_orphans]
    foreign_consumer_types), on top of every type nova does not write.
    See rules.unmanaged_consumer.
    """

    projects: frozenset = frozenset()
    consumer_types: frozenset = frozenset()


@dataclasses.dataclass(frozen=True)
class Cell:
    uuid: str
    name: typing.Optional[str]
    # False when the cell's database could not be read; ``error`` says why
    # (already free of credentials).
    readable: bool = True
    error: typing.Optional[str] = None
    # True where the source cannot tell cells apart (the compute API):
    # findings then say ``cell: null``, "not known", rather than a guess.
    anonymous: bool = False

    @property
    def label(self):
        return None if self.anonymous else (self.name or self.uuid)


@record
class ComputeNode:
    uuid: str
    host: str
    hypervisor_hostname: str
    cell: str
    deleted: bool = False
    hypervisor_type: typing.Optional[str] = None
    # Found only in shadow_compute_nodes (archived by nova-manage); such a
    # node is deleted too.
    archived: bool = False
    # Known deleted without a row (the compute API shows none): its root
    # provider carries nova's marks, these of NOVA_NODE_TRAITS (OWNER_NOVA
    # from nova 34 on, COMPUTE_NODE from nova 27 on), and no hypervisor
    # has its uuid, every cell answering (readers/provider_proof.py).
    # Empty for a node nova has a row of.
    proven_by_trait: tuple = ()


@record
class Service:
    host: str
    binary: str
    cell: str
    disabled: bool = False
    forced_down: bool = False
    deleted: bool = False


@record
class Instance:
    uuid: str
    cell: str
    host: typing.Optional[str] = None
    node: typing.Optional[str] = None
    vm_state: typing.Optional[str] = None
    task_state: typing.Optional[str] = None
    deleted: bool = False
    # Found only in shadow_instances (archived by nova-manage).
    archived: bool = False
    project_id: typing.Optional[str] = None
    user_id: typing.Optional[str] = None
    # The compute node nova records it on (instances.compute_id), when
    # known: it survives an ironic node moving to another compute service,
    # which host and node names do not.
    compute_node: typing.Optional[str] = None


@record
class Migration:
    uuid: str
    instance_uuid: str
    cell: str
    status: str
    migration_type: typing.Optional[str] = None
    source_compute: typing.Optional[str] = None
    source_node: typing.Optional[str] = None
    dest_compute: typing.Optional[str] = None
    dest_node: typing.Optional[str] = None
    deleted: bool = False
    archived: bool = False


@record
class Activity:
    """When nova last worked on an instance, and what it is still doing.

    nova writes its database and then placement (or the other way
    round) in separate steps: right after a move's status says it is
    over, nova may not have touched the move's allocations yet. So the
    rules never repair what a live instance holds while nova may still
    be on it (see rules.unsettled).
    """

    # The latest change nova recorded to the instance, any of its
    # migrations, its latest instance action or that action's events.
    changed_at: typing.Optional[datetime.datetime] = None
    # An event of the instance's latest action that has not finished
    # (e.g. compute_confirm_resize), and when it started.
    pending_event: typing.Optional[str] = None
    pending_since: typing.Optional[datetime.datetime] = None


@record
class Claims:
    """What a live instance's own requests claim below its node's root.

    Read only for the instances that hold resources a port may have
    requested on a child provider of their node (see
    engine.claims.candidates), to prove or disprove that something
    still claims them (rules.leaked_port_allocation). ``None`` fields
    could not be read, and the ``*_error`` fields say why (already
    free of credentials): nothing is then proven either way.
    """

    # Providers the binding profiles of the instance's ports name.
    port_providers: typing.Optional[frozenset] = None
    ports_error: typing.Optional[str] = None
    # nova's info cache lists no port: only the network API, which owns
    # the bindings, can tell whether any port is bound to the instance
    # (see engine.claims.with_listed_ports).
    ports_unlisted: bool = False
    # Resource classes the instance's flavor requests, wherever nova
    # may place them (its own amounts and every ``resources*:`` spec).
    flavor_classes: typing.Optional[frozenset] = None
    flavor_error: typing.Optional[str] = None
    # When nova last wrote the instance's network info (its info cache),
    # naive UTC; None when not known.
    network_changed_at: typing.Optional[datetime.datetime] = None
    # port_providers come from nova's info cache alone: neutron, which
    # owns the bindings, was not asked (engine.claims.with_listed_ports
    # clears it). nova refreshes the cache on neutron's events only
    # (its periodic refresh is off by default since nova 31.0.0).
    cache_only: bool = False
    # When nova last started attaching or detaching a port of the
    # instance (its latest attach_interface or detach_interface
    # action), naive UTC; None when none is known.
    ports_changed_at: typing.Optional[datetime.datetime] = None


@record
class ZunContainer:
    """A row of Zun's ``container`` table: a container or a capsule.

    Zun keeps both in that table (``container_type``, see ZUN_KINDS) and
    deletes a row only after it deleted the row's allocations from
    placement: while the row exists, Zun owns what its uuid holds.
    """

    uuid: str
    kind: str
    status: typing.Optional[str] = None
    host: typing.Optional[str] = None


# Zun's container_type values (zun.common.consts, zun 18.0.0).
ZUN_KINDS = {0: 'container', 1: 'capsule', 2: 'capsule container',
             3: 'capsule init container'}


@dataclasses.dataclass
class ZunSnapshot:
    """What Zun's database says of the consumers nova has no trace of.

    Zun with ``host_shared_with_nova`` allocates on nova's compute node
    providers under its containers' uuids, with no consumer type: only
    Zun's database tells such a consumer from an unknown one (see
    site_rules.zun). ``asked``: the consumers it was read for, the only
    ones it says anything about; ``containers``: {uuid: ZunContainer} of
    those Zun knows; ``error``: why it could not be read (already free
    of credentials), None when it was; ``label``: the database, as a
    message names it.
    """

    asked: frozenset = frozenset()
    containers: typing.Dict[str, ZunContainer] = _new(dict)
    error: typing.Optional[str] = None
    label: str = 'Zun'


@record
class InstanceMapping:
    instance_uuid: str
    # None while the instance is being scheduled (no cell yet).
    cell: typing.Optional[str] = None


@dataclasses.dataclass
class NovaSnapshot:
    cells: typing.Dict[str, Cell] = _new(dict)
    compute_nodes: typing.Dict[str, ComputeNode] = _new(dict)
    services: typing.List[Service] = _new(list)
    instances: typing.Dict[str, Instance] = _new(dict)
    migrations: typing.Dict[str, Migration] = _new(dict)
    # Those of the consumers no live instance owns: the only ones the
    # rules consult (an instance's own row says more than its mapping).
    mappings: typing.Dict[str, InstanceMapping] = _new(dict)
    build_requests: typing.FrozenSet[str] = frozenset()
    # {instance uuid: Activity}, read only for the live instances whose
    # allocations the rules would otherwise repair (Audit reads them
    # after a first classification; a repair's fresh read has them for
    # every instance involved). An instance without one is judged by
    # its vm_state and task_state alone.
    activity: typing.Dict[str, Activity] = _new(dict)
    # {instance uuid: Claims}, read only for the live instances holding
    # what a port may have requested below their node's root (see
    # engine.claims.candidates). An instance without one has nothing
    # proven about those allocations.
    claims: typing.Dict[str, Claims] = _new(dict)
    # What Zun's database says of the consumers nova has no trace of,
    # when the zun site rule is on (None: not read; see ZunSnapshot).
    zun: typing.Optional[ZunSnapshot] = None
    # Changes nova recorded at or after this instant (UTC, naive as nova
    # stores them) are too recent to act on: the time of the read minus
    # [nova_orphans] grace_period. None: no time limit.
    recent_since: typing.Optional[datetime.datetime] = None
    # {instance uuid: the internal scheduler hints (names starting with
    # ``_nova``) its request spec carries}, read only for the live
    # instances holding no allocation at all, and only those that carry
    # some (see heal.missing_details).
    internal_hints: typing.Dict[str, tuple] = _new(dict)
    # {root provider uuid: why}: roots that may be compute nodes nobody
    # could tell live or deleted (see readers/provider_proof.py); the
    # provider rules call their trees unverifiable.
    unverifiable_roots: typing.Dict[str, str] = _new(dict)
    # What else the readers could not read, each a sentence saying what
    # and why (the network API, asked for the ports of instances whose
    # info cache lists none): what it would have proven is unverifiable,
    # and the run is incomplete as with a cell not read.
    unread: typing.List[str] = _new(list)

    # The consumers the operator declares not nova's (the nova reader's
    # configuration, as recent_since is): every NovaSnapshot a reader
    # makes for the run carries it, the fresh ones of a repair too.
    foreign: Foreign = Foreign()

    @property
    def unreadable_cells(self):
        return [c for c in self.cells.values() if not c.readable]

    @property
    def unreadable_services(self):
        """The other services' databases the rules needed and could not
        read (each with ``label`` and ``error``, as a cell): what they
        might own is unverifiable, and the run incomplete.
        """
        return [self.zun] if self.zun is not None and self.zun.error else []


@dataclasses.dataclass
class Snapshot:
    placement: PlacementSnapshot
    nova: NovaSnapshot


# The exact keys of a finding, in output order. Both front ends print
# these and nothing else: other tooling parses them.
FINDING_KEYS = (
    'consumer', 'consumer_type', 'instance', 'resource_provider',
    'resource_provider_name', 'root_provider', 'host', 'cell', 'reason',
    'action', 'resources', 'project_id', 'user_id', 'details',
)


@record
class Finding:
    consumer: str
    consumer_type: str
    instance: typing.Optional[str]
    resource_provider: typing.Optional[str]
    resource_provider_name: typing.Optional[str]
    root_provider: typing.Optional[str]
    host: typing.Optional[str]
    cell: typing.Optional[str]
    reason: str
    action: str
    resources: typing.Mapping[str, int]
    project_id: typing.Optional[str]
    user_id: typing.Optional[str]
    details: str

    @property
    def is_orphan(self):
        return self.action != reasons.NONE

    def to_dict(self):
        # Spelled out, in FINDING_KEYS order (a unit test compares): it
        # is called for every row printed.
        return {
            'consumer': self.consumer, 'consumer_type': self.consumer_type,
            'instance': self.instance,
            'resource_provider': self.resource_provider,
            'resource_provider_name': self.resource_provider_name,
            'root_provider': self.root_provider, 'host': self.host,
            'cell': self.cell, 'reason': self.reason, 'action': self.action,
            'resources': dict(self.resources),
            'project_id': self.project_id, 'user_id': self.user_id,
            'details': self.details}

    @classmethod
    def from_dict(cls, data):
        return cls(**{key: data[key] for key in FINDING_KEYS})


# The exact keys of a resource provider finding (``providers list``), in
# output order: a contract, as FINDING_KEYS.
PROVIDER_KEYS = (
    'uuid', 'name', 'root_provider', 'parent_provider', 'host', 'cell',
    'compute_node', 'reason', 'action', 'allocations', 'orphan_allocations',
    'details',
)


@record
class ProviderFinding:
    """One resource provider and what its tree is to nova.

    ``allocations`` counts the allocations on this provider,
    ``orphan_allocations`` those of them the allocation rules call
    orphans; ``compute_node`` is the uuid of the compute node nova has
    (or had) for the tree's root, None when nova never had one.
    """

    uuid: str
    name: str
    root_provider: str
    parent_provider: typing.Optional[str]
    host: typing.Optional[str]
    cell: typing.Optional[str]
    compute_node: typing.Optional[str]
    reason: str
    action: str
    allocations: int
    orphan_allocations: int
    details: str

    @property
    def is_orphan(self):
        return self.action != reasons.NONE

    def to_dict(self):
        return {key: getattr(self, key) for key in PROVIDER_KEYS}

    @classmethod
    def from_dict(cls, data):
        return cls(**{key: data[key] for key in PROVIDER_KEYS})
