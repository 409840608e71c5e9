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
"""Is this host really full? What orphans cost each compute node.

For each compute node's provider tree (its root provider and every
provider under it), from the snapshot, each provider's inventories, the
allocations the scan read and its findings: ``held``, by class, what a
clean would take away from the tree now (engine.changes.given_back:
the same rule repair writes); ``free``, by class, each provider's
capacity as placement computes it, ``int((total - reserved) *
allocation_ratio)``, less its usage (what its allocations sum to, which
is what placement's usages are); ``free_after_clean``, the same with
``held`` given back; ``fits``, for each shape (engine.shapes), how many
servers of it placement would accept on the tree now and after the
clean. The fields: doc/source/admin/capacity.rst ("A row").

A shape is counted as placement answers ``GET /allocation_candidates``
for one unnumbered request group (placement's ``objects/
allocation_candidate.py`` and ``research_context.py``), server after
server; doc/source/admin/capacity.rst ("How servers are counted") says
what that takes into account, and where the count is a lower bound.

When the snapshot was read for part of the cloud (``scope``), only the
trees, and the sharing providers, whose allocations were all read are
counted.
"""

import collections
import dataclasses
import typing

from nova_orphans.engine import changes
from nova_orphans.engine import model
from nova_orphans.engine import shapes as shapes_mod

# Placement's default max_unit (its largest integer).
MAX_UNIT = 2147483647

# The exact keys of a host row (``list --group-by host``), in output
# order: a contract, as model.FINDING_KEYS.
HOST_KEYS = ('host', 'provider', 'held', 'free', 'free_after_clean', 'fits')
FIT_KEYS = ('shape', 'now', 'after_clean')


@model.record
class Inventory:
    """One class of one provider, as ``GET /resource_providers/{uuid}/
    inventories`` gives it.
    """

    total: int
    reserved: int = 0
    allocation_ratio: float = 1.0
    min_unit: int = 1
    max_unit: int = MAX_UNIT
    step_size: int = 1

    @property
    def capacity(self):
        """What placement lets allocations sum to (its own arithmetic)."""
        return int((self.total - self.reserved) * self.allocation_ratio)

    def takes(self, amount):
        """Whether one allocation of ``amount`` is within the units."""
        return (self.min_unit <= amount <= self.max_unit and
                amount % self.step_size == 0)

    @classmethod
    def from_dict(cls, data):
        return cls(**{f.name: data[f.name]
                      for f in dataclasses.fields(cls) if f.name in data})


def inventories_from_api(body):
    """{class: Inventory} of placement's inventories answer."""
    return {rc: Inventory.from_dict(inv)
            for rc, inv in body['inventories'].items()}


@model.record
class Fit:
    shape: str
    now: int
    after_clean: int

    def to_dict(self):
        return {'shape': self.shape, 'now': self.now,
                'after_clean': self.after_clean}


@model.record
class HostRow:
    """One compute node's tree. ``given_back``: {provider name: {class:
    amount}} of ``held`` by provider of the tree (the metrics label
    providers by name, as placement exporters do); ``share``: the
    largest part of a class's capacity ``held`` is (the rows' order).
    """

    host: str
    provider: str
    provider_name: str
    held: typing.Dict[str, int]
    free: typing.Dict[str, int]
    free_after_clean: typing.Dict[str, int]
    fits: typing.List[Fit]
    given_back: typing.Dict[str, typing.Dict[str, int]]
    share: float = 0.0

    def to_dict(self):
        return {'host': self.host, 'provider': self.provider,
                'held': dict(self.held), 'free': dict(self.free),
                'free_after_clean': dict(self.free_after_clean),
                'fits': [f.to_dict() for f in self.fits]}


@model.record
class ShapeTotal:
    """A shape across the cloud: servers placement would accept now and
    after a clean, summed over the compute nodes, and on how many nodes
    it would accept more (``hosts``).
    """

    shape: str
    now: int
    after_clean: int
    hosts: int

    @property
    def more(self):
        return self.after_clean - self.now


@model.record
class Summary:
    """``held``: what a clean gives back across the cloud's compute node
    trees and the sharing providers they use; ``shapes``: ShapeTotal of
    each shape, in the order asked.
    """

    held: typing.Dict[str, int]
    shapes: typing.List[ShapeTotal]


@dataclasses.dataclass
class HostView:
    """``rows``: every compute node's HostRow, most held first;
    ``shared``: {sharing provider uuid: {class: amount}}, what a clean
    gives back on the sharing providers those trees use.
    """

    rows: typing.List[HostRow]
    shared: typing.Dict[str, typing.Dict[str, int]]

    def shown(self, every=False):
        """The rows a listing shows: those whose tree orphans hold
        something on, or with ``every`` all of them.
        """
        return list(self.rows) if every else [r for r in self.rows
                                              if r.held]

    def summary(self):
        held = collections.Counter()
        for row in self.rows:
            held.update(row.held)
        for amounts in self.shared.values():
            held.update(amounts)
        totals = collections.OrderedDict()
        for row in self.rows:
            for fit in row.fits:
                now, after, hosts = totals.get(fit.shape, (0, 0, 0))
                totals[fit.shape] = (now + fit.now,
                                     after + fit.after_clean,
                                     hosts + (fit.after_clean > fit.now))
        return Summary(
            dict(shapes_mod.ordered(dict(+held))),
            [ShapeTotal(name, *values) for name, values in totals.items()])


def usage(allocations):
    """{provider: {class: amount}}: what the allocations sum to, in
    plain dicts rather than Counters (it runs once per allocation of
    the cloud).
    """
    used = {}
    get = used.get
    for alloc in allocations:
        per = get(alloc.provider)
        if per is None:
            per = used[alloc.provider] = {}
        for rc, amount in alloc.resources.items():
            per[rc] = per.get(rc, 0) + amount
    return used


def providers_to_read(snapshot, findings, every=False):
    """The providers whose inventories host_view needs: with ``every``,
    those of every compute node's tree and the sharing providers they
    use; else only those of the trees a clean gives something back on,
    and their sharing providers.

    Without ``every`` the other trees' rows have no inventory: their
    ``free`` is empty and nothing fits them, so only the rows shown
    (HostView.shown()) and the summary's ``more`` and ``hosts`` are
    whole, less what a clean gives back on a sharing provider to trees
    with nothing held of their own.
    """
    placement, nova = snapshot.placement, snapshot.nova
    providers = placement.providers
    back = changes.given_back(findings, placement.allocations,
                              nova.migrations)
    roots = {uuid for uuid, node in nova.compute_nodes.items()
             if not node.deleted and uuid in providers}
    if not every:
        roots &= {providers[rp].root_uuid for rp in back if rp in providers}
    members = [p for p in providers.values() if p.root_uuid in roots]
    aggregates = frozenset().union(*(p.aggregates for p in members))
    return {p.uuid for p in members} | {
        p.uuid for p in providers.values()
        if p.sharing and p.foreign_owner is None and
        p.aggregates & aggregates}


def host_view(snapshot, findings, inventories, shapes=(), traits=None):
    """The HostView of ``snapshot``'s compute nodes (not deleted).

    ``findings``: every finding of the scan; ``inventories``: {provider
    uuid: {class: Inventory}} of the trees' providers and the sharing
    providers; ``shapes``: engine.shapes.Shape; ``traits``: {provider
    uuid: its traits}, needed only for the traits the shapes name.
    """
    placement, nova = snapshot.placement, snapshot.nova
    providers = placement.providers
    scope = placement.scope
    traits = traits or {}
    used = usage(placement.allocations)
    back = changes.given_back(findings, placement.allocations,
                              nova.migrations)
    trees = collections.defaultdict(list)
    for provider in providers.values():
        trees[provider.root_uuid].append(provider)
    sharing = [p for p in providers.values()
               if p.sharing and p.foreign_owner is None and p.aggregates and
               (scope is None or p.uuid in scope)]

    rows, shared = [], {}
    for node in nova.compute_nodes.values():
        root = providers.get(node.uuid)
        if node.deleted or root is None or root.root_uuid != root.uuid:
            continue
        members = sorted(trees[root.uuid], key=lambda p: p.uuid)
        # Only the trees whose every provider's allocations were read.
        if scope is not None and not all(p.uuid in scope for p in members):
            continue
        aggregates = frozenset().union(*(p.aggregates for p in members))
        mine = {p.uuid for p in members}
        offered = members + [p for p in sharing if p.uuid not in mine and
                             p.aggregates & aggregates]
        for p in offered[len(members):]:
            if p.uuid in back:
                shared[p.uuid] = back[p.uuid]
        rows.append(_row(node, root, members, offered, inventories, used,
                         back, shapes, traits))
    rows.sort(key=lambda r: (-r.share, r.host, r.provider))
    return HostView(rows, shared)


def _row(node, root, members, offered, inventories, used, back, shapes,
         traits):
    held, free, capacity = (collections.Counter() for _i in range(3))
    given_back = {}
    for p in members:
        amounts = back.get(p.uuid)
        if amounts:
            held.update(amounts)
            given_back[p.name] = dict(shapes_mod.ordered(amounts))
        for rc, inv in inventories.get(p.uuid, {}).items():
            capacity[rc] += inv.capacity
            free[rc] += inv.capacity - used.get(p.uuid, {}).get(rc, 0)
    after = {rc: free[rc] + held[rc] for rc in free}
    fits = []
    for shape in shapes:
        now_slots, after_slots = _slots(shape, offered, inventories, used,
                                        back, traits)
        fits.append(Fit(shape.name, servers(now_slots, shape.required),
                        servers(after_slots, shape.required)))
    return HostRow(
        host=node.host, provider=root.uuid, provider_name=root.name,
        held=dict(shapes_mod.ordered(+held)),
        free=dict(shapes_mod.ordered(free)),
        free_after_clean=dict(shapes_mod.ordered(after)), fits=fits,
        given_back=given_back, share=_share(held, capacity))


def _share(held, capacity):
    share = 0.0
    for rc, amount in held.items():
        if amount > 0:
            cap = capacity.get(rc, 0)
            share = max(share, amount / cap if cap > 0 else float('inf'))
    return share


def _slots(shape, offered, inventories, used, back, traits):
    """({class: [(servers, traits)]} now, and the same after a clean): for
    each class of the shape, each provider that may give it and how many
    servers' amounts it has room for.
    """
    now, after = {}, {}
    for rc, amount in shape.resources.items():
        now[rc], after[rc] = [], []
        for p in offered:
            inv = inventories.get(p.uuid, {}).get(rc)
            carried = frozenset(traits.get(p.uuid, ()))
            if inv is None or not inv.takes(amount) or (
                    carried & shape.forbidden):
                continue
            room = inv.capacity - used.get(p.uuid, {}).get(rc, 0)
            given = back.get(p.uuid, {}).get(rc, 0)
            now[rc].append((max(0, room // amount), carried))
            after[rc].append((max(0, (room + given) // amount), carried))
    return now, after


def servers(slots, required=frozenset()):
    """How many servers ``slots`` ({class: [(servers, traits)]}: what
    each provider offering the class has room for, and its traits) take,
    each taking each class from one provider, the providers of each
    server together carrying ``required``.
    """
    pools = {rc: [(n, t) for n, t in options if n > 0]
             for rc, options in slots.items()}
    if not pools or not all(pools.values()):
        return 0
    needed = set(required)
    for options in pools.values():
        # Whatever a server takes of this class carries these.
        needed -= frozenset.intersection(*(t for _n, t in options))
    totals = {rc: sum(n for n, _t in options) for rc, options in pools.items()}
    if not needed:
        return min(totals.values())
    for trait in needed:
        if not any(trait in t for options in pools.values()
                   for _n, t in options):
            return 0
    if len(needed) == 1:
        trait, = needed
        carrying = [sum(n for n, t in options if trait in t)
                    for options in pools.values()]
        return _most_covered(carrying, min(totals.values()))
    return _greedy(pools, frozenset(needed))


def _most_covered(carrying, most):
    """The most servers N (at most ``most``) such that each can take one
    class from a provider carrying the one trait needed: each class
    gives it to min(carrying, N) distinct servers, so N is possible
    exactly when those add up to N (placed cyclically, they cover all).
    """
    low, high = 0, most
    while low < high:
        mid = (low + high + 1) // 2
        if sum(min(c, mid) for c in carrying) >= mid:
            low = mid
        else:
            high = mid - 1
    return low


def _greedy(pools, needed):
    """Servers placed one combination of providers at a time: of those
    covering ``needed``, the one spending the fewest of the needed
    traits' providers, then with the most room left; as many servers at
    once as half its least room.
    """
    classes = sorted(pools)
    left = {rc: [n for n, _t in pools[rc]] for rc in classes}
    placed = 0
    while True:
        best = None
        for choice in _choices([len(pools[rc]) for rc in classes]):
            if any(left[rc][i] <= 0 for rc, i in zip(classes, choice)):
                continue
            picked = [pools[rc][i][1] & needed
                      for rc, i in zip(classes, choice)]
            if not needed <= frozenset().union(*picked):
                continue
            room = min(left[rc][i] for rc, i in zip(classes, choice))
            key = (sum(len(t) for t in picked), -room)
            if best is None or key < best[0]:
                best = (key, choice, room)
        if best is None:
            return placed
        _key, choice, room = best
        step = max(1, room // 2)
        for rc, i in zip(classes, choice):
            left[rc][i] -= step
        placed += step


def _choices(sizes):
    if not sizes:
        yield ()
        return
    for rest in _choices(sizes[1:]):
        for i in range(sizes[0]):
            yield (i,) + rest
