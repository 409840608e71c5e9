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
"""A synthetic cloud with known orphans, bulk-loaded with SQL.

nova's API and cell databases get nova's real schema (sqlite files
migrated by nova-manage, or a MariaDB migrated the same way); placement's
database gets placement's real schema (its own alembic migrations) and
its resource classes and traits synced. Rows are then bulk-inserted
through the database driver, the way nova and placement leave them, and
the truth is kept: which (consumer, provider) pairs are orphans and why,
and which pairs ``nova-manage placement audit`` flags by its own
algorithm.

Each compute node is a root provider with ``per_provider`` allocations.
Nodes are taken in pairs (A, B) in one cell; each pair holds one
two-node situation (a finished evacuation, a failed cold migration, a
confirmed resize, a resize awaiting confirmation, a live migration or an
evacuation in progress) and one single-node orphan (deleted instance,
unknown consumer, shelved-offloaded instance); every tenth pair also has
a live instance with no allocation and a server still being built. The
rest of the slots are ordinary live instances.

Unless told otherwise (``nested=False``, ``sharing=False``):

* every fifth node has a nested child provider, alternately a bandwidth
  provider (``NET_BW_*_KILOBIT_PER_SEC``, which the audit counts as
  nova's) and a PCI device provider (a custom resource class, which the
  audit ignores). Four of the node's live servers hold resources on the
  child too; one single-node orphan of the kinds above holds the node
  and the child, and an unknown consumer holds only the child (a leaked
  port's bandwidth, say);
* every tenth block of ten nodes is on shared storage: a sharing
  provider (``MISC_SHARES_VIA_AGGREGATE``, ``DISK_GB``) in an aggregate
  with the block's nodes. Their live servers and single-node orphans
  hold ``VCPU`` and ``MEMORY_MB`` on the node and ``DISK_GB`` on the
  sharing provider (so such an orphan is two orphan allocations); the
  two-node situations keep all three on the nodes.

With ``orphans_only=True`` every slot is an orphan (a deleted instance
or an unknown consumer) on a plain node: the cloud for the clean
benchmark. With ``situations_every=K`` only one pair in K holds the
situations above (and only the nested children of its nodes their
orphans): a cloud with a few orphans among many live servers, for the
steady-state scans.
"""

import datetime
import itertools
import json
import operator
import os
import random
import shutil
import uuid as uuidlib

import sqlalchemy as sa

CELL0_UUID = '00000000-0000-0000-0000-000000000000'
SERVICE_VERSION = 74
FLAVOR = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
INVENTORY = {'VCPU': 64, 'MEMORY_MB': 262144, 'DISK_GB': 4000}
# On a node of a block on shared storage: the disk is on the sharing
# provider.
FLAVOR_ON_SHARED = {'VCPU': 1, 'MEMORY_MB': 512}
SHARED_DISK = {'DISK_GB': 1}
SHARED_INVENTORY = {'DISK_GB': 100000}
SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'
# Nested children: what a server holds there, and their inventory.
PCI_CLASS = 'CUSTOM_PCI_8086_1563'
CHILD = {
    'bandwidth': ({'NET_BW_EGR_KILOBIT_PER_SEC': 1000,
                   'NET_BW_IGR_KILOBIT_PER_SEC': 1000},
                  {'NET_BW_EGR_KILOBIT_PER_SEC': 10000000,
                   'NET_BW_IGR_KILOBIT_PER_SEC': 10000000}),
    'pci': ({PCI_CLASS: 1}, {PCI_CLASS: 8}),
}
NESTED_EVERY = 5        # every fifth node has a child provider
NESTED_LIVE = 4         # live servers per child holding resources there
SHARING_BLOCK = 10      # nodes in a sharing provider's aggregate
SHARING_EVERY = 10      # every tenth block is on shared storage
# nova-manage placement audit's NOVA_RCS and in-progress statuses.
AUDIT_RCS = {'VCPU', 'MEMORY_MB', 'DISK_GB', 'VGPU', 'PCPU',
             'NET_BW_EGR_KILOBIT_PER_SEC', 'NET_BW_IGR_KILOBIT_PER_SEC',
             'MEM_ENCRYPTION_CONTEXT'}
MIGRATION_DONE = ('confirmed', 'reverted', 'error', 'failed', 'completed',
                  'cancelled', 'done')
TWO_NODE = ('evacuated_source', 'stale_provider', 'finished_migration',
            'resize_in_progress', 'live_migration_in_progress',
            'evacuation_in_progress')
ONE_NODE = ('deleted_instance', 'unknown_consumer', 'shelved_offloaded')
_POWER_STATE = {'active': 1, 'stopped': 4, 'resized': 1,
                'shelved_offloaded': 4, 'deleted': 0}


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def sqlite_url(path):
    return 'sqlite:///' + os.path.abspath(path)


class Cloud:
    """The generated state and its truth; ``build()`` writes it.

    ``nova_urls`` (optional) are empty, migrated nova databases to load
    into instead of sqlite copies: {'api': url, 'cell0': url, 'cell1':
    url, ...} (the MariaDB mode). ``nested`` and ``sharing``: the nested
    children and sharing providers described above (ignored with
    ``orphans_only``).
    """

    def __init__(self, workdir, providers, cells=1, per_provider=20,
                 seed=42, orphans_only=False, nova_urls=None, nested=True,
                 sharing=True, situations_every=1):
        self.workdir = workdir
        self.n = providers
        self.cells = ['cell%d' % (i + 1) for i in range(cells)]
        self.per_provider = per_provider
        self.rand = random.Random(seed)
        self.orphans_only = orphans_only
        self.nested = nested and not orphans_only
        self.sharing = sharing and not orphans_only
        self.situations_every = situations_every
        self.nova_urls = nova_urls
        # The generated leftovers have been there for a day: past any
        # grace period (rules.unsettled), as an operator finds them.
        self.now = _now() - datetime.timedelta(days=1)
        self.projects = ['%032x' % self.rand.getrandbits(128)
                         for _i in range(20)]
        self.users = ['%032x' % self.rand.getrandbits(128)
                      for _i in range(40)]
        # In-memory model: what is written, and what the truth is.
        self.nodes = []            # dicts: uuid, host, cell
        # Placement's providers: the nodes first (same index), then the
        # nested children, then the sharing providers. Dicts: uuid, name,
        # root and parent (indexes), inventory, traits, aggregates.
        self.rps = []
        self.children = {}         # node index -> (child index, kind)
        self.shared_by = {}        # node index -> sharing provider index
        self.instances = []        # dicts
        self.migrations = []       # dicts
        self.build_requests = []   # (uuid, project)
        self.allocations = []      # (consumer, provider index, resources)
        self.consumers = {}        # uuid -> (project, user)
        self.orphans = set()       # (consumer, rp uuid or None, reason)

    def _uuid(self):
        return str(uuidlib.UUID(int=self.rand.getrandbits(128), version=4))

    def _owner(self):
        return self.rand.choice(self.projects), self.rand.choice(self.users)

    # The model ------------------------------------------------------------

    def _instance(self, node, vm_state='active', task_state=None,
                  deleted=False, host=True):
        uuid = self._uuid()
        project, user = self._owner()
        n = self.nodes[node] if node is not None else None
        self.instances.append({
            'uuid': uuid, 'cell': (n or self.nodes[0])['cell'],
            'host': n['host'] if n and host else None,
            'node': n['host'] if n and host else None,
            'vm_state': vm_state, 'task_state': task_state,
            'deleted': deleted, 'project_id': project, 'user_id': user})
        self.consumers[uuid] = (project, user)
        return uuid

    def _migration(self, instance, src, dst, mtype, status):
        uuid = self._uuid()
        inst = next(i for i in reversed(self.instances)
                    if i['uuid'] == instance)
        self.migrations.append({
            'uuid': uuid, 'instance_uuid': instance, 'cell': inst['cell'],
            'source': self.nodes[src]['host'],
            'dest': self.nodes[dst]['host'], 'migration_type': mtype,
            'status': status, 'project_id': inst['project_id'],
            'user_id': inst['user_id']})
        self.consumers[uuid] = (inst['project_id'], inst['user_id'])
        return uuid

    def _alloc(self, consumer, rp, resources=FLAVOR):
        self.allocations.append((consumer, rp, resources))

    def _place(self, consumer, node, child=False):
        """A server's allocations on ``node`` (its sharing provider and,
        with ``child``, its child provider too); their providers.
        """
        share = self.shared_by.get(node)
        if share is None:
            self._alloc(consumer, node)
            held = [node]
        else:
            self._alloc(consumer, node, FLAVOR_ON_SHARED)
            self._alloc(consumer, share, SHARED_DISK)
            held = [node, share]
        if child:
            index, kind = self.children[node]
            self._alloc(consumer, index, CHILD[kind][0])
            held.append(index)
        return held

    def _orphan(self, consumer, rp, reason):
        self.orphans.add((consumer, self.rps[rp]['uuid']
                          if rp is not None else None, reason))

    def _provider(self, uuid, name, inventory, root=None, parent=None,
                  traits=(), aggregates=()):
        index = len(self.rps)
        self.rps.append({'uuid': uuid, 'name': name, 'inventory': inventory,
                         'root': index if root is None else root,
                         'parent': parent, 'traits': list(traits),
                         'aggregates': list(aggregates)})
        return index

    def plan(self):
        for i in range(self.n):
            cell = self.cells[(i // 2) % len(self.cells)]
            self.nodes.append({'uuid': self._uuid(), 'host': 'cmp%06d' % i,
                               'cell': cell})
            self._provider(self.nodes[i]['uuid'], self.nodes[i]['host'],
                           INVENTORY)
        if self.nested:
            for i in range(NESTED_EVERY - 1, self.n, NESTED_EVERY):
                kind = ('bandwidth', 'pci')[(i // NESTED_EVERY) % 2]
                node = self.nodes[i]
                self.children[i] = (self._provider(
                    self._uuid(), '%s_%s' % (node['host'], kind),
                    CHILD[kind][1], root=i, parent=i), kind)
        if self.sharing:
            for start in range(0, self.n, SHARING_BLOCK * SHARING_EVERY):
                aggregate = self._uuid()
                share = self._provider(
                    self._uuid(), 'shared-storage-%06d' % start,
                    SHARED_INVENTORY, traits=[SHARING_TRAIT],
                    aggregates=[aggregate])
                for i in range(start, min(start + SHARING_BLOCK, self.n)):
                    self.shared_by[i] = share
                    self.rps[i]['aggregates'].append(aggregate)
        used = [0] * self.n
        for a in range(0, self.n, 2):
            b = a + 1 if a + 1 < self.n else None
            k = a // 2
            if self.orphans_only or k % self.situations_every:
                continue
            k //= self.situations_every
            if b is not None:
                self._two_node(TWO_NODE[k % len(TWO_NODE)], a, b, used)
                one = b if k % 2 else a
            else:
                one = a
            self._one_node(ONE_NODE[k % len(ONE_NODE)], one, used)
            if k % 10 == 0:
                inst = self._instance(a)
                self._orphan(inst, a, 'missing_allocations')
                queued = self._uuid()
                self.build_requests.append((queued, self._owner()))
                self.consumers[queued] = self.build_requests[-1][1]
                self._alloc(queued, a)
                used[a] += 1
        for i, (child, _kind) in sorted(self.children.items()):
            if (i // 2) % self.situations_every:
                continue
            # An orphan of the node's tree, and a stranger on the child.
            self._one_node(ONE_NODE[(i // NESTED_EVERY) % len(ONE_NODE)],
                           i, used, child=True)
            stray = self._uuid()
            self.consumers[stray] = self._owner()
            self._alloc(stray, child, CHILD[_kind][0])
            self._orphan(stray, child, 'unknown_consumer')
        for i in range(self.n):
            on_child = NESTED_LIVE if i in self.children else 0
            for _slot in range(used[i], self.per_provider):
                if self.orphans_only:
                    self._one_node(ONE_NODE[_slot % 2], i, used)
                else:
                    self._place(self._instance(i), i, child=on_child > 0)
                    on_child -= 1

    def _two_node(self, what, a, b, used):
        used[a] += 1
        used[b] += 1
        if what == 'evacuated_source':
            inst = self._instance(b)
            self._alloc(inst, a)
            self._alloc(inst, b)
            self._migration(inst, a, b, 'evacuation', 'done')
            self._orphan(inst, a, 'evacuated_source')
        elif what == 'stale_provider':
            inst = self._instance(a, vm_state='stopped')
            self._alloc(inst, a)
            self._alloc(inst, b)
            self._migration(inst, a, b, 'migration', 'error')
            self._orphan(inst, b, 'stale_provider')
        elif what == 'finished_migration':
            inst = self._instance(b)
            mig = self._migration(inst, a, b, 'resize', 'confirmed')
            self._alloc(mig, a)
            self._alloc(inst, b)
            self._orphan(mig, a, 'finished_migration')
        elif what == 'resize_in_progress':
            inst = self._instance(b, vm_state='resized')
            mig = self._migration(inst, a, b, 'resize', 'finished')
            self._alloc(mig, a)
            self._alloc(inst, b)
        elif what == 'live_migration_in_progress':
            inst = self._instance(a, task_state='migrating')
            mig = self._migration(inst, a, b, 'live-migration', 'running')
            self._alloc(mig, a)
            self._alloc(inst, b)
        elif what == 'evacuation_in_progress':
            inst = self._instance(a, task_state='rebuilding')
            self._alloc(inst, a)
            self._alloc(inst, b)
            self._migration(inst, a, b, 'evacuation', 'pre-migrating')

    def _one_node(self, what, node, used, child=False):
        """An orphan consumer on the node (and its sharing provider and,
        with ``child``, its child): every allocation it holds is one.
        """
        used[node] += 1
        if what == 'deleted_instance':
            inst = self._instance(node, vm_state='deleted', deleted=True)
        elif what == 'unknown_consumer':
            inst = self._uuid()
            self.consumers[inst] = self._owner()
        else:
            inst = self._instance(node, vm_state='shelved_offloaded',
                                  host=False)
        for rp in self._place(inst, node, child=child):
            self._orphan(inst, rp, what)

    def audit_expected(self):
        """(consumer, rp) pairs nova-manage placement audit flags.

        Its algorithm: an allocation with a nova resource class on a
        provider is flagged unless its consumer is a live instance on
        the compute node that is the provider's root, or an in-progress
        migration from or to it. A sharing provider is its own root and
        no compute node: every allocation of a nova class on it is
        flagged, and so is none of a custom class anywhere.
        """
        on_node = {}
        for inst in self.instances:
            if not inst['deleted'] and inst['host']:
                on_node.setdefault(inst['host'], set()).add(inst['uuid'])
        for mig in self.migrations:
            if mig['status'] not in MIGRATION_DONE:
                for host in (mig['source'], mig['dest']):
                    on_node.setdefault(host, set()).add(mig['uuid'])
        flagged = set()
        for consumer, index, resources in self.allocations:
            rp = self.rps[index]
            root = rp['root']
            host = self.nodes[root]['host'] if root < self.n else None
            if set(resources) & AUDIT_RCS and consumer not in on_node.get(
                    host, ()):
                flagged.add((consumer, rp['uuid']))
        return flagged

    def truth(self):
        orphans = sorted([c, rp, r] for c, rp, r in self.orphans)
        return {
            'providers': self.n, 'cells': len(self.cells),
            'resource_providers': len(self.rps),
            'nested_providers': len(self.children),
            'sharing_providers': len(set(self.shared_by.values())),
            'allocations': len(self.allocations),
            'consumers': len({c for c, _n, _r in self.allocations}),
            'orphans': orphans,
            'audit_expected': sorted(list(p) for p in self.audit_expected()),
            'held_hosts': self.held_hosts(),
        }

    def held_hosts(self):
        """The root providers of the compute nodes whose trees a clean
        gives something back on (list --group-by host's rows): those of
        every orphan but missing_allocations, sharing providers aside.
        """
        by_uuid = {rp['uuid']: rp for rp in self.rps}
        roots = {by_uuid[rp]['root'] for _c, rp, reason in self.orphans
                 if reason != 'missing_allocations' and rp is not None}
        return sorted(self.rps[root]['uuid'] for root in roots
                      if root < self.n)

    def shape(self):
        """What the cloud holds besides compute nodes, for the results."""
        shape = '+'.join(
            [name for name, on in (('nested', self.nested),
                                   ('sharing', self.sharing)) if on] or
            ['plain'])
        if self.situations_every > 1:
            shape += ', situations 1/%d' % self.situations_every
        return shape

    # Writing --------------------------------------------------------------

    def build(self, nova_templates, placement_template, placement_url=None):
        """Write the databases; returns {'api': url, cells..., 'placement'}.

        ``placement_url``: an empty, migrated and synced placement DB to
        load instead of a copy of the sqlite ``placement_template``.
        """
        self.plan()
        os.makedirs(self.workdir, exist_ok=True)
        urls = {}
        if self.nova_urls:
            urls.update(self.nova_urls)
        else:
            for name, template in [('api', 'api.sqlite'),
                                   ('cell0', 'cell.sqlite')] + [
                    (c, 'cell.sqlite') for c in self.cells]:
                path = os.path.join(self.workdir, 'nova_%s.sqlite' % name)
                shutil.copyfile(os.path.join(nova_templates, template), path)
                urls[name] = sqlite_url(path)
        if placement_url:
            urls['placement'] = placement_url
        else:
            path = os.path.join(self.workdir, 'placement.sqlite')
            shutil.copyfile(placement_template, path)
            urls['placement'] = sqlite_url(path)
        self.urls = urls
        self._write_nova(urls)
        self._write_placement(urls['placement'])
        with open(os.path.join(self.workdir, 'truth.json'), 'w') as f:
            json.dump(self.truth(), f)
        return urls

    def _engine(self, url):
        return sa.create_engine(url, poolclass=sa.pool.NullPool)

    @staticmethod
    def _tables(engine):
        md = sa.MetaData()
        md.reflect(engine)
        return md.tables

    def _write_nova(self, urls):
        api = self._engine(urls['api'])
        t = self._tables(api)
        cell_ids = {}
        with api.begin() as conn:
            now = _stamp(conn, self.now)
            for i, name in enumerate(['cell0'] + self.cells):
                uuid = CELL0_UUID if name == 'cell0' else self._uuid()
                cell_ids[name] = i + 1
                conn.execute(t['cell_mappings'].insert().values(
                    id=i + 1, uuid=uuid, name=name, transport_url='none:///',
                    database_connection=urls[name], disabled=False,
                    created_at=self.now))
            _insert_many(conn, t['host_mappings'], (
                {'host': n['host'], 'cell_id': cell_ids[n['cell']],
                 'created_at': now} for n in self.nodes))
            _insert_many(conn, t['instance_mappings'], itertools.chain((
                {'instance_uuid': i['uuid'], 'cell_id': cell_ids[i['cell']],
                 'project_id': i['project_id'], 'user_id': i['user_id'],
                 'queued_for_delete': i['deleted'], 'created_at': now}
                for i in self.instances), (
                {'instance_uuid': uuid, 'cell_id': None, 'project_id': p,
                 'user_id': u, 'queued_for_delete': False, 'created_at': now}
                for uuid, (p, u) in self.build_requests)))
            _insert_many(conn, t['build_requests'], (
                {'instance_uuid': uuid, 'project_id': p,
                 'created_at': now,
                 'instance': json.dumps(_build_instance(uuid, p, u))}
                for uuid, (p, u) in self.build_requests))
        api.dispose()
        for cell in self.cells:
            self._write_cell(urls[cell], cell)

    def _write_cell(self, url, cell):
        engine = self._engine(url)
        t = self._tables(engine)
        nodes = [n for n in self.nodes if n['cell'] == cell]
        node_ids = {n['host']: i + 1 for i, n in enumerate(nodes)}
        with engine.begin() as conn:
            now = _stamp(conn, self.now)
            _insert_many(conn, t['services'], (
                {'id': i + 1, 'uuid': self._uuid(), 'host': n['host'],
                 'binary': 'nova-compute', 'topic': 'compute',
                 'report_count': 1, 'disabled': False, 'forced_down': False,
                 'version': SERVICE_VERSION, 'updated_at': now,
                 'last_seen_up': now, 'created_at': now, 'deleted': 0}
                for i, n in enumerate(nodes)))
            _insert_many(conn, t['compute_nodes'], (
                {'id': i + 1, 'uuid': n['uuid'], 'host': n['host'],
                 'hypervisor_hostname': n['host'], 'service_id': None,
                 'vcpus': INVENTORY['VCPU'],
                 'memory_mb': INVENTORY['MEMORY_MB'],
                 'local_gb': INVENTORY['DISK_GB'], 'vcpus_used': 0,
                 'memory_mb_used': 0, 'local_gb_used': 0,
                 'free_ram_mb': INVENTORY['MEMORY_MB'],
                 'free_disk_gb': INVENTORY['DISK_GB'],
                 'disk_available_least': INVENTORY['DISK_GB'],
                 'current_workload': 0, 'running_vms': 0,
                 'hypervisor_type': 'fake', 'hypervisor_version': 1,
                 'cpu_info': '{}', 'stats': '{}',
                 'host_ip': '127.0.0.1', 'cpu_allocation_ratio': 16.0,
                 'ram_allocation_ratio': 1.5,
                 'disk_allocation_ratio': 1.0, 'mapped': 1,
                 'created_at': now, 'deleted': 0}
                for i, n in enumerate(nodes)))

            def instance_row(iid, inst):
                host = inst['host']
                return {
                    'id': iid, 'uuid': inst['uuid'],
                    'project_id': inst['project_id'],
                    'user_id': inst['user_id'], 'host': host, 'node': host,
                    'launched_on': host, 'compute_id': node_ids.get(host),
                    'vm_state': inst['vm_state'],
                    'task_state': inst['task_state'],
                    'power_state': _POWER_STATE.get(inst['vm_state'], 1),
                    'instance_type_id': 1, 'vcpus': 1, 'memory_mb': 512,
                    'root_gb': 1, 'ephemeral_gb': 0,
                    'display_name': 'srv-' + inst['uuid'][:8],
                    'hostname': 'srv-' + inst['uuid'][:8],
                    'availability_zone': 'nova',
                    'launched_at': now, 'locked': False, 'cleaned': 0,
                    'hidden': False, 'shutdown_terminate': False,
                    'disable_terminate': False, 'created_at': now,
                    'terminated_at': now if inst['deleted'] else None,
                    'deleted_at': now if inst['deleted'] else None,
                    'deleted': iid if inst['deleted'] else 0}
            _insert_many(conn, t['instances'], (
                instance_row(i + 1, inst) for i, inst in enumerate(
                    x for x in self.instances if x['cell'] == cell)))
            _insert_many(conn, t['migrations'], ({
                'uuid': m['uuid'], 'instance_uuid': m['instance_uuid'],
                'migration_type': m['migration_type'],
                'status': m['status'], 'source_compute': m['source'],
                'source_node': m['source'], 'dest_compute': m['dest'],
                'dest_node': m['dest'], 'dest_host': '127.0.0.1',
                'old_instance_type_id': 1, 'new_instance_type_id': 1,
                'hidden': False, 'cross_cell_move': False,
                'project_id': m['project_id'], 'user_id': m['user_id'],
                'created_at': now, 'updated_at': now, 'deleted': 0}
                for m in self.migrations if m['cell'] == cell))
        engine.dispose()

    def _write_placement(self, url):
        engine = self._engine(url)
        t = self._tables(engine)
        with engine.begin() as conn:
            now = _stamp(conn, self.now)
            classes = dict(conn.execute(sa.select(
                t['resource_classes'].c.name,
                t['resource_classes'].c.id)).all())
            custom = sorted({rc for rp in self.rps for rc in rp['inventory']
                             if rc not in classes})
            # Custom classes' ids start at 10000, as placement's own.
            _insert_many(conn, t['resource_classes'], (
                {'id': 10000 + i, 'name': rc, 'created_at': now}
                for i, rc in enumerate(custom)))
            classes.update({rc: 10000 + i for i, rc in enumerate(custom)})
            traits = dict(conn.execute(sa.select(
                t['traits'].c.name, t['traits'].c.id)).all())
            # Roots before children (the foreign keys): the order of rps.
            _insert_many(conn, t['resource_providers'], (
                {'id': i + 1, 'uuid': rp['uuid'], 'name': rp['name'],
                 'generation': 3, 'root_provider_id': rp['root'] + 1,
                 'parent_provider_id': None if rp['parent'] is None
                 else rp['parent'] + 1, 'created_at': now}
                for i, rp in enumerate(self.rps)))
            _insert_many(conn, t['inventories'], (
                {'resource_provider_id': i + 1,
                 'resource_class_id': classes[rc], 'total': total,
                 'reserved': 0, 'min_unit': 1, 'max_unit': total,
                 'step_size': 1, 'allocation_ratio': 1.0,
                 'created_at': now}
                for i, rp in enumerate(self.rps)
                for rc, total in rp['inventory'].items()))
            _insert_many(conn, t['resource_provider_traits'], (
                {'resource_provider_id': i + 1, 'trait_id': traits[name],
                 'created_at': now}
                for i, rp in enumerate(self.rps) for name in rp['traits']))
            aggregates = {}
            for rp in self.rps:
                for agg in rp['aggregates']:
                    aggregates.setdefault(agg, len(aggregates) + 1)
            _insert_many(conn, t['placement_aggregates'], (
                {'id': i, 'uuid': agg, 'created_at': now}
                for agg, i in aggregates.items()))
            _insert_many(conn, t['resource_provider_aggregates'], (
                {'resource_provider_id': i + 1,
                 'aggregate_id': aggregates[agg], 'created_at': now}
                for i, rp in enumerate(self.rps)
                for agg in rp['aggregates']))
            project_ids = {p: i + 1 for i, p in enumerate(self.projects)}
            user_ids = {u: i + 1 for i, u in enumerate(self.users)}
            _insert_many(conn, t['projects'], (
                {'id': i, 'external_id': p, 'created_at': now}
                for p, i in project_ids.items()))
            _insert_many(conn, t['users'], (
                {'id': i, 'external_id': u, 'created_at': now}
                for u, i in user_ids.items()))
            allocated = sorted({c for c, _n, _r in self.allocations})
            _insert_many(conn, t['consumers'], (
                {'uuid': c, 'project_id': project_ids[self.consumers[c][0]],
                 'user_id': user_ids[self.consumers[c][1]],
                 'generation': 1, 'consumer_type_id': None,
                 'created_at': now}
                for c in allocated))
            _insert_many(conn, t['allocations'], (
                {'resource_provider_id': rp + 1, 'consumer_id': consumer,
                 'resource_class_id': classes[rc], 'used': used,
                 'created_at': now}
                for consumer, rp, resources in self.allocations
                for rc, used in resources.items()))
        engine.dispose()

    # Verification through placement's API ----------------------------------

    def verify(self, endpoint, samples=20):
        """Spot-check the bulk load through placement's own API.

        For some compute nodes, nested children and sharing providers:
        their allocations, usages, tree, traits and aggregates; for some
        consumers: their allocation documents, project and user. Raises
        AssertionError with what differs.
        """
        import requests
        http = requests.Session()
        http.trust_env = False
        headers = {'X-Auth-Token': 'admin', 'Accept': 'application/json',
                   'OpenStack-API-Version': 'placement 1.39'}

        def get(path):
            resp = http.get(endpoint + path, headers=headers)
            assert resp.status_code == 200, (path, resp.status_code,
                                             resp.text)
            return resp.json()

        listed = get('/resource_providers')['resource_providers']
        assert len(listed) == len(self.rps), (len(listed), len(self.rps))
        rand = random.Random(7)
        by_rp = {}
        by_consumer = {}
        for consumer, index, resources in self.allocations:
            uuid = self.rps[index]['uuid']
            by_rp.setdefault(uuid, {})[consumer] = dict(resources)
            by_consumer.setdefault(consumer, {})[uuid] = dict(resources)
        children = [c for c, _k in self.children.values()]
        shares = sorted(set(self.shared_by.values()))
        picked = (rand.sample(range(self.n), min(samples, self.n)) +
                  rand.sample(children, min(samples // 4, len(children))) +
                  rand.sample(shares, min(samples // 4, len(shares))))
        for index in picked:
            rp = self.rps[index]
            uuid = rp['uuid']
            got = get('/resource_providers/%s/allocations' % uuid)
            got = {c: a['resources'] for c, a in got['allocations'].items()}
            want = by_rp.get(uuid, {})
            assert got == want, ('allocations of', uuid, got, want)
            usages = get('/resource_providers/%s/usages' % uuid)['usages']
            want_usage = {rc: 0 for rc in rp['inventory']}
            for res in want.values():
                for rc, used in res.items():
                    want_usage[rc] += used
            assert usages == want_usage, ('usages of', uuid, usages,
                                          want_usage)
            doc = get('/resource_providers/%s' % uuid)
            tree = (doc['root_provider_uuid'], doc['parent_provider_uuid'])
            want_tree = (self.rps[rp['root']]['uuid'], None
                         if rp['parent'] is None
                         else self.rps[rp['parent']]['uuid'])
            assert tree == want_tree, ('tree of', uuid, tree, want_tree)
            traits = get('/resource_providers/%s/traits' % uuid)['traits']
            assert sorted(traits) == sorted(rp['traits']), (
                'traits of', uuid, traits)
            aggs = get('/resource_providers/%s/aggregates' % uuid)[
                'aggregates']
            assert sorted(aggs) == sorted(rp['aggregates']), (
                'aggregates of', uuid, aggs)
        consumers = rand.sample(sorted(by_consumer),
                                min(samples, len(by_consumer)))
        for c in consumers:
            doc = get('/allocations/%s' % c)
            got = {rp: a['resources'] for rp, a in doc['allocations'].items()}
            assert got == by_consumer[c], ('consumer', c, got)
            assert (doc['project_id'], doc['user_id']) == self.consumers[c]
            assert doc['consumer_generation'] == 1, doc
        http.close()
        return {'providers_checked': len(picked),
                'consumers_checked': len(consumers)}


def _stamp(conn, when):
    """A timestamp as the driver should get it for a DATETIME column:
    on sqlite, the text SQLAlchemy itself stores (nova and placement
    read it back through SQLAlchemy).
    """
    if conn.dialect.name == 'sqlite':
        return when.strftime('%Y-%m-%d %H:%M:%S.%f')
    return when


def _insert_many(conn, table, rows, size=20000):
    """Insert dicts (all with the same keys) through the driver.

    SQLAlchemy's own executemany costs more than the database's work
    at a million rows; the rows are plain values here already (see
    _stamp), so the driver's executemany is all that is needed, in the
    connection's transaction, a batch at a time (rows can be a
    generator: a million instance rows are never held at once).
    """
    rows = iter(rows)
    first = next(rows, None)
    if first is None:
        return
    columns = list(first)
    get = operator.itemgetter(*columns)
    mark = '?' if conn.dialect.paramstyle == 'qmark' else '%s'
    quote = conn.dialect.identifier_preparer.quote
    sql = 'INSERT INTO %s (%s) VALUES (%s)' % (
        quote(table.name), ', '.join(quote(c) for c in columns),
        ', '.join([mark] * len(columns)))
    if len(columns) == 1:
        def get(row, _get=get):
            return (_get(row),)
    cursor = conn.connection.cursor()
    try:
        rows = itertools.chain([first], rows)
        while True:
            batch = [get(row) for row in itertools.islice(rows, size)]
            if not batch:
                break
            cursor.executemany(sql, batch)
    finally:
        cursor.close()


def _build_instance(uuid, project, user):
    return {'nova_object.name': 'Instance', 'nova_object.namespace': 'nova',
            'nova_object.version': '2.8',
            'nova_object.data': {'uuid': uuid, 'project_id': project,
                                 'user_id': user},
            'nova_object.changes': ['project_id', 'user_id', 'uuid']}
