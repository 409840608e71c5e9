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
"""Deleted compute nodes, as far as the compute API can prove them.

The compute API shows no deleted compute node: ``os-hypervisors`` lists
the live ones only. What it does show, with placement, is enough to
prove a node deleted:

- the root provider carries nova's mark: ``OWNER_NOVA``, which nova 34
  puts on its compute nodes' roots (and on other providers it owns,
  never roots), or ``COMPUTE_NODE``, which every nova from 27 on puts on
  every compute node's root provider; no other service puts either
  there. The row names the mark it carries;
- ``os-hypervisors`` answered, and it reads every cell in turn and
  fails (500) when one does not answer (nova 27 to 34,
  ``compute_node_get_all``): a listing means every cell was read;
- no hypervisor has the root's uuid.

A cell that does not answer leaves nothing proven, all the trees
``unverifiable``. ``nova-orphans-manage`` then still calls a node
deleted in a cell it read ``deleted_compute_node`` (see
engine/provider_rules.py): a deleted row is evidence in itself. Here
the only evidence is an absence from a listing of every cell, which a
down cell rules out: ``os-hypervisors`` fails outright, and the compute
API never says which cell a node was in.

One gap remains: ``os-hypervisors`` leaves out a live compute node whose
service it cannot find (a host not yet mapped by ``nova-manage cell_v2
discover_hosts``, a service row deleted by hand). Such a host still has
its nova-compute service in ``os-services``; so while any nova-compute
service has no hypervisor listed, no root is proven deleted, and the
roots with the trait that no hypervisor has are ``unverifiable``.
"""

import concurrent.futures

from nova_orphans.engine import model
from nova_orphans.i18n import _
from nova_orphans.readers import base
from nova_orphans.readers import compute_api


class ProvingReader(base.NovaReader):
    """A ComputeAPIReader that adds the compute nodes proven deleted
    (``model.ComputeNode.proven_by_trait``) and marks the roots it
    cannot judge (``NovaSnapshot.unverifiable_roots``).

    ``every_root``: ``read`` proves every root with the trait, for the
    provider commands, which judge every tree, the empty ones too.
    Otherwise (``allocation orphan``) only the roots that
    ``prove_deleted_nodes`` is asked about.
    """

    def __init__(self, reader, placement_client, every_root=True):
        self._reader = reader
        self._placement = placement_client
        self.every_root = every_root

    def __getattr__(self, name):
        return getattr(self._reader, name)

    @property
    def label(self):
        # base.NovaReader has it too: __getattr__ would not be asked.
        return self._reader.label

    def read_claims(self, snapshot, instance_uuids):
        # base.NovaReader has it too: __getattr__ would not be asked.
        return self._reader.read_claims(snapshot, instance_uuids)

    def read_internal_hints(self, snapshot, instance_uuids):
        # As read_claims.
        return self._reader.read_internal_hints(snapshot, instance_uuids)

    def read(self):
        nova = self._reader.read()
        if self.every_root:
            marked = {}
            for trait in model.NOVA_NODE_TRAITS:
                for rp in self._placement.get(
                        '/resource_providers?required=%s' % trait)[
                        'resource_providers']:
                    marked.setdefault(rp['uuid'], dict(rp, traits=[]))[
                        'traits'].append(trait)
            prove(nova, [marked[uuid] for uuid in sorted(marked)])
        return nova

    def prove_host(self, nova, providers, host):
        """Prove deleted the roots named as ``host``'s nodes are named
        by the servers and migrations listed (node_hosts), where no
        hypervisor has their uuid: a retired host's trees.
        """
        if self.every_root or nova.unreadable_cells:
            return
        names = {node for node, named in node_hosts(nova).items()
                 if named == host}
        roots = sorted(p.uuid for p in providers.values()
                       if p.name in names and p.uuid == p.root_uuid and
                       p.uuid not in nova.compute_nodes)
        proven = [self._marks(uuid) for uuid in roots]
        prove(nova, [{'uuid': uuid, 'name': providers[uuid].name,
                      'traits': marks} for uuid, marks in proven if marks])

    def prove_deleted_nodes(self, nova, providers, allocations, consumers):
        """Prove deleted the roots, no live hypervisor's, that hold
        allocations of ``consumers`` (those no live server owns).

        Called by the audit once nova's side is resolved, so that
        ``allocation orphan`` judges what is on such a tree as the
        provider commands and ``nova-orphans-manage`` do: on nova's
        deleted node a consumer nova has no trace of is
        ``unknown_consumer``, on a tree nova never had
        ``unmanaged_provider`` (see rules.unmanaged_provider). One
        request per such root, for its traits: a run where every
        consumer off the live hypervisors' trees is a live server's
        (or where there is none) reads nothing more.
        """
        if self.every_root or nova.unreadable_cells:
            # Proven in read() already; or nothing can be (see prove).
            return
        roots = set()
        for alloc in allocations:
            if alloc.consumer not in consumers:
                continue
            provider = providers.get(alloc.provider)
            root = providers.get(provider.root_uuid) if provider else None
            if (root is not None and not root.sharing and
                    root.uuid not in nova.compute_nodes):
                roots.add(root.uuid)
        if not roots:
            return
        with concurrent.futures.ThreadPoolExecutor(
                min(len(roots), self._reader.concurrency)) as pool:
            proven = list(pool.map(self._marks, sorted(roots)))
        prove(nova, [{'uuid': uuid, 'name': providers[uuid].name,
                      'traits': marks}
                     for uuid, marks in proven if marks])

    def _marks(self, uuid):
        """(uuid, nova's marks the provider carries: those of
        model.NOVA_NODE_TRAITS); a provider gone meanwhile carries none.
        """
        resp = self._placement.request(
            'GET', '/resource_providers/%s/traits' % uuid,
            expected=(200, 404))
        traits = resp.json()['traits'] if resp.status_code == 200 else ()
        return uuid, [t for t in model.NOVA_NODE_TRAITS if t in traits]


def prove(nova, trait_providers):
    """Add to ``nova`` what ``trait_providers`` (placement's providers
    carrying nova's marks, each with the ``traits`` of
    model.NOVA_NODE_TRAITS it carries) prove; see the module docstring.
    """
    if nova.unreadable_cells:
        # No listing of every cell, so no absence from one: nothing is
        # proven (see the module docstring); the rules keep every root
        # unverifiable.
        return
    listed_hosts = {n.host for n in nova.compute_nodes.values()}
    unlisted = sorted({s.host for s in nova.services
                       if s.binary == 'nova-compute' and not s.deleted and
                       s.host not in listed_hosts})
    hosts = node_hosts(nova)
    for rp in trait_providers:
        uuid = rp['uuid']
        if rp.get('parent_provider_uuid') or uuid in nova.compute_nodes:
            continue
        marks = tuple(t for t in model.NOVA_NODE_TRAITS
                      if t in rp['traits'])
        if unlisted:
            nova.unverifiable_roots[uuid] = _(
                'The tree\'s root carries %(traits)s, nova\'s mark on its '
                'compute nodes, and no hypervisor has its uuid, but the '
                'compute API lists no hypervisor for the nova-compute '
                'service(s) of %(hosts)s (hosts not mapped to a cell yet? '
                'see "nova-manage cell_v2 discover_hosts"): it may be one '
                'of theirs.') % {
                'traits': _(' and ').join(marks),
                'hosts': ', '.join(unlisted)}
            continue
        nova.compute_nodes[uuid] = model.ComputeNode(
            uuid=uuid, host=hosts.get(rp['name']),
            hypervisor_hostname=rp['name'],
            cell=compute_api.API_CELL.uuid, deleted=True,
            proven_by_trait=marks)


def node_hosts(nova):
    """{node name: its host} as the servers (deleted ones too) and
    migrations the compute API listed name them, where one host only
    names the node: the host of a node nova deleted, which no
    hypervisor names any more, as nova's databases keep it.
    """
    pairs = set()
    for inst in nova.instances.values():
        pairs.add((inst.node, inst.host))
    for mig in nova.migrations.values():
        pairs.add((mig.source_node, mig.source_compute))
        pairs.add((mig.dest_node, mig.dest_compute))
    hosts = {}
    for node, host in pairs:
        if node and host:
            hosts.setdefault(node, set()).add(host)
    return {node: found.pop() for node, found in hosts.items()
            if len(found) == 1}
