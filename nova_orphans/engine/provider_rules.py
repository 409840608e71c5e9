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
"""Resource provider trees nova left behind: the provider rules.

nova deletes a compute node's provider when it deletes the node (a
compute service deleted through the API, the resource tracker dropping
an ironic node that went away), but ``delete_resource_provider`` gives
up quietly when placement refuses because something still holds an
allocation there; the node's row is deleted all the same. Nothing in
nova ever comes back for that tree: its capacity keeps counting.

A tree is judged by its root alone, because a compute node's uuid is
its root provider's uuid and nova creates the children (bandwidth,
vGPU, PCI) under that root; every provider of the tree gets its root's
verdict. Only ``deleted_compute_node`` acts: nova has a deleted row for
the root's uuid and no readable cell has a live one.

A cell that could not be read leaves that verdict as it is, though it
might hold the same uuid live. Acting on it is still safe: the
allocations of a node live there belong to consumers no readable cell
knows, so they are ``unverifiable``, never orphans, and keep the tree;
a live node with nothing allocated gets its provider back from nova's
resource tracker, under the same uuid (and the journal keeps its
record for ``restore``).

A provider another service owns (model.foreign_owner) is ``unmanaged``
wherever it is. A deleted compute node's tree holding one keeps its
verdict but is never deleted: placement deletes no parent before its
children, and those are not nova's to delete.

The verdicts and their proof: ``doc/source/reference/reasons.rst``
(Resource provider trees). Pure: the readers built the snapshot, the
allocation findings come from classify.classify on the same snapshot.
"""

import collections

from nova_orphans.engine import model
from nova_orphans.engine import reasons
from nova_orphans.i18n import _


def tree_roots(providers):
    """{root uuid: [provider uuids of its tree, parents before children]}."""
    children = collections.defaultdict(list)
    for p in providers.values():
        if p.parent_uuid:
            children[p.parent_uuid].append(p.uuid)
    trees = {}
    for p in providers.values():
        if p.parent_uuid or p.uuid != p.root_uuid:
            continue
        order, todo = [], [p.uuid]
        while todo:
            uuid = todo.pop(0)
            order.append(uuid)
            todo.extend(sorted(children.get(uuid, ()),
                               key=lambda u: (providers[u].name or '', u)))
        trees[p.uuid] = order
    return trees


def judge_root(root, nova):
    """(reason, action, details, compute node or None) of one root."""
    if root.foreign_owner is not None:
        return (reasons.UNMANAGED, reasons.NONE,
                foreign_provider_details(root.foreign_owner), None)
    node = nova.compute_nodes.get(root.uuid)
    down = nova.unreadable_cells
    cells = ', '.join(sorted(c.label or c.uuid for c in down))
    if node is not None and not node.deleted:
        return (reasons.LIVE_COMPUTE_NODE, reasons.NONE,
                _('The tree\'s root is compute node %(node)s '
                  '(%(hypervisor)s on host %(host)s).') %
                {'node': node.uuid, 'hypervisor': node.hypervisor_hostname,
                 'host': node.host}, node)
    if node is not None:
        # Deleted, and live in no readable cell: a cell that could not
        # be read leaves this verdict (see the module docstring).
        return (reasons.DELETED_COMPUTE_NODE, reasons.DELETE_PROVIDER,
                deleted_details(node, nova), node)
    if root.uuid in nova.unverifiable_roots:
        return (reasons.UNVERIFIABLE, reasons.NONE,
                nova.unverifiable_roots[root.uuid], None)
    if down and not root.sharing:
        return (reasons.UNVERIFIABLE, reasons.NONE,
                _('The tree\'s root is no compute node of any readable '
                  'cell and cell(s) %(cells)s could not be read.') %
                {'cells': cells}, None)
    if root.sharing:
        return (reasons.UNMANAGED, reasons.NONE,
                _('A sharing provider; not a compute node.'), None)
    return (reasons.UNMANAGED, reasons.NONE,
            _('The tree\'s root is no compute node nova has or had.'),
            None)


def foreign_provider_details(owner):
    """Why a provider (model.Provider.foreign_owner) is never nova's."""
    if owner == 'blazar':
        return _('The provider is Blazar\'s reservation provider '
                 '(blazar_<host>): another service\'s, never judged '
                 'nova\'s.')
    return _('The provider carries %(traits)s: another service\'s, never '
             'judged nova\'s.') % {'traits': owner}


def foreign_in_tree(providers, tree):
    """The providers of the tree (uuids) that another service owns: a
    tree holding one is never deleted (placement refuses to delete a
    parent before its children, and they are not nova's to delete).
    """
    return sorted(u for u in tree
                  if providers[u].foreign_owner is not None)


def deleted_details(node, nova):
    if node.proven_by_trait:
        return _('The tree\'s root %(node)s carries %(traits)s, nova\'s '
                 'mark on its compute nodes, and the compute API, every '
                 'cell answering, lists no hypervisor with its uuid: nova '
                 'deleted that compute node.') % {
            'node': node.uuid,
            'traits': _(' and ').join(node.proven_by_trait)}
    cell = nova.cells.get(node.cell)
    args = {'node': node.uuid, 'hypervisor': node.hypervisor_hostname,
            'host': node.host, 'cell': cell.label if cell else node.cell,
            'down': ', '.join(sorted(c.label or c.uuid
                                     for c in nova.unreadable_cells))}
    if node.archived:
        where = _('Compute node %(node)s (%(hypervisor)s on host %(host)s) '
                  'was deleted and archived (only in shadow_compute_nodes '
                  'of cell %(cell)s)') % args
    else:
        where = _('Compute node %(node)s (%(hypervisor)s on host %(host)s) '
                  'is deleted in cell %(cell)s') % args
    if not args['down']:
        return _('%(where)s; no cell has it live.') % {'where': where}
    return _('%(where)s; no readable cell has it live. Cell(s) %(down)s '
             'could not be read: what they may own on the tree is '
             'unverifiable, and keeps it.') % dict(args, where=where)


def classify(snapshot, findings):
    """A ProviderFinding for every provider of every tree in scope.

    ``findings``: the allocation findings of the same snapshot (all of
    them, not only the orphans), which give each provider its counts
    and each deleted tree the consumers that keep it (see details).
    A tree is in scope when any of its providers is in
    ``snapshot.placement.scope`` (None: every tree). Sorted by host,
    root name and root, each tree top-down.
    """
    placement, nova = snapshot.placement, snapshot.nova
    providers = placement.providers
    scope = placement.scope
    held = collections.Counter(a.provider for a in placement.allocations)
    orphans = collections.Counter()
    kept_by = collections.defaultdict(set)
    for f in findings:
        if f.reason == reasons.MISSING_ALLOCATIONS:
            # Not an allocation: the instance holds none.
            continue
        if f.is_orphan:
            orphans[f.resource_provider] += 1
        elif f.root_provider:
            kept_by[f.root_provider].add(f.consumer)
    rows = []
    for root_uuid, tree in tree_roots(providers).items():
        if scope is not None and not scope.intersection(tree):
            continue
        root = providers[root_uuid]
        reason, action, details, node = judge_root(root, nova)
        if action != reasons.NONE and kept_by.get(root_uuid):
            consumers = sorted(kept_by[root_uuid])
            details += ' ' + _(
                'Allocations of %(consumers)s on the tree are not orphans: '
                'clean leaves the tree until they are gone.') % {
                'consumers': ', '.join(consumers)}
        foreign = foreign_in_tree(providers, tree)
        if action != reasons.NONE and foreign:
            details += ' ' + _(
                'Provider(s) %(providers)s on the tree are another '
                'service\'s: clean leaves the tree.') % {
                'providers': ', '.join(foreign)}
        cell = nova.cells.get(node.cell) if node is not None else None
        host = node.host if node is not None else None
        rows.extend(
            (host or '', root.name or '', root_uuid, position,
             _row(p, root_uuid, host, cell, node, reason, action, details,
                  held, orphans, placement.fully_reserved))
            for position, p in enumerate(providers[u] for u in tree))
    rows.sort(key=lambda row: row[:4])
    return [row[4] for row in rows]


def _row(p, root_uuid, host, cell, node, reason, action, details, held,
         orphans, fully_reserved=None):
    """One provider's finding: its tree's verdict, unless another
    service owns it (then ``unmanaged``, whatever its tree is), or it is
    a live node's provider whose capacity nobody holds.
    """
    if p.foreign_owner is not None and p.uuid != root_uuid:
        reason, action = reasons.UNMANAGED, reasons.NONE
        details = foreign_provider_details(p.foreign_owner)
    elif (reason == reasons.LIVE_COMPUTE_NODE and not held[p.uuid] and
            p.uuid in (fully_reserved or ())):
        reason = reasons.FULLY_RESERVED
        details = fully_reserved_details(fully_reserved[p.uuid]) + ' ' + (
            details)
    return model.ProviderFinding(
        uuid=p.uuid, name=p.name, root_provider=root_uuid,
        parent_provider=p.parent_uuid, host=host,
        cell=cell.label if cell is not None else None,
        compute_node=node.uuid if node is not None else None,
        reason=reason, action=action, allocations=held[p.uuid],
        orphan_allocations=orphans[p.uuid], details=details)


def fully_reserved_details(classes):
    """Why a live node's provider holding nothing has no free capacity.

    nova reserves a provider's whole inventory on purpose: its ironic
    driver while a node is unavailable (cleaning, maintenance), and
    until it is available again after its instance left; a one-time-use
    PCI device once it was used, until the operator clears it
    (``one_time_use`` in ``[pci] device_spec``). Nothing in placement
    holds it, so no allocation is an orphan, and nothing is cleaned:
    the provider is nova's, and what it reserves is nova's (or the
    operator's) to give back.
    """
    return _('All of its %(classes)s is reserved and nothing is allocated '
             'on it: capacity nobody holds (an ironic node being cleaned '
             'or in maintenance, a one-time-use PCI device already used, '
             'an operator\'s reservation); nova or the operator gives it '
             'back, never clean.') % {'classes': ', '.join(classes)}


def kept_by(findings, tree):
    """The consumers holding allocations on the tree that are not
    orphans: what stops a deleted tree from being deleted.
    """
    tree = set(tree)
    return sorted({f.consumer for f in findings
                   if f.resource_provider in tree and not f.is_orphan and
                   f.reason != reasons.MISSING_ALLOCATIONS})
