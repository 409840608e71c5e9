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
"""Kept reads never change what a scan says: seeded random sequences.

Each sequence builds a small cloud (two cells, compute nodes carrying
nova's COMPUTE_NODE trait, live servers, a deleted instance's and an
unknown consumer's allocations), then changes it step by step the way
nova and operators do: an orphan's allocations deleted with DELETE, a
live server moved by a PUT that drops its old host (its instance row
moved with it), a new unknown consumer, an instance deleted in SQL or
archived, inventory and trait changes, a server's allocations emptied
by PUT, a migration swap by POST, a provider deleted and re-created, a
compute node deleted in nova with its provider left behind, a new
server. After every step, nova-orphans-manage's default scans (kept
reads, one state directory for the whole sequence) and ``--full-read``
scans (another) must give the same rows and exit code: ``allocations
list`` each time and, after every other step, in turn ``providers
list`` or the Prometheus metrics but for their times. openstack
(test_openstack) scans its cloud as built, damaged, cleaned and
restored, then follows a sequence to its end, where its kept reads
(and nova-orphans-manage's), standing for every change since, must give
what a ``--full-read`` scan gives: the front ends share the audit, and
openstack's own part (its sources, its state directory) is what its
scans check.

A failure names the seed and the steps so far; ``KEPT_SEEDS`` (comma
separated) in the environment runs other seeds.
"""

import collections
import datetime
import glob
import json
import os
import random
import re
import uuid as uuidlib

from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import nova_db
from nova_orphans.tests.functional.fixtures import placement as placement_fx
from nova_orphans.tests.functional import front_ends
from nova_orphans.tests import runners

# Steps of each sequence.
STEPS = 4
NODE_TRAITS = ['COMPUTE_NODE']
OTHER_TRAITS = ['COMPUTE_STATUS_DISABLED', 'CUSTOM_KEPT_READS']
# Migration statuses of a swap: in progress, and over (what is left on
# the source is then an orphan).
IN_PROGRESS = ('migrating', 'post-migrating')
OVER = ('confirmed', 'error', 'completed')
# What a metrics scan prints that differs from run to run.
TIMES = re.compile(r'^nova_orphans_(scan_duration_seconds|'
                   r'last_scan_timestamp_seconds|scan_full_read) .*$',
                   re.MULTILINE)


def settled():
    """When nova last changed what a step moves (naive UTC): outside the
    grace period, so that what is left behind is an orphan to repair.
    """
    return datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None) - nova_db.SETTLED_FOR


# The scans beside nova-orphans-manage's allocation list, one after
# each change in turn.
EXTRA = (
    ('providers', 'list', '--format', 'json'),
    ('allocations', 'list', '--format', 'prometheus'),
)
MANAGE_LIST = ('allocations', 'list', '--format', 'json')
OSC_LIST = ('allocation', 'orphan', 'list', '-f', 'json')


class Sequences(front_ends.FrontEndsTestCase):
    """The sequences of ``SEEDS`` (CI's: each builds its cloud afresh and
    takes STEPS steps), one test each, and openstack's (test_openstack).
    """

    SEEDS = ()

    def setUp(self):
        super().setUp()
        self.homes = {}
        self.confs = {}
        for chain in ('kept', 'full'):
            home = os.path.join(self.tmp, chain)
            os.makedirs(home)
            self.homes[chain] = home
            self.confs[chain] = self.nova_conf(
                self.placement.endpoint, name='%s.conf' % chain,
                nova_orphans={'state_path': os.path.join(home,
                                                         'nova-orphans')})

    # The scans ------------------------------------------------------------

    def manage_scan(self, chain, *argv):
        rc, out, err = runners.manage_main(
            ['--config-file', self.confs[chain]] + list(argv) +
            (['--full-read'] if chain == 'full' else []))
        self.assertNotIn('Traceback', err)
        return rc, out

    def osc_scan(self, chain, *argv):
        rc, out, err = runners.openstack_shell(
            ['--os-cloud', 'cloud'] + list(argv) +
            (['--full-read'] if chain == 'full' else []),
            {'OS_CLIENT_CONFIG_FILE': self.clouds_yaml,
             'XDG_STATE_HOME': self.homes[chain]})
        self.assertNotIn('Traceback', err)
        return rc, out

    def scans(self, chain, step, last=False):
        """{scan: (exit code, what it printed)} of one chain after the
        ``step``-th change: nova-orphans-manage's ``allocations list``,
        and after every other change one of EXTRA in turn; after the
        ``last``, openstack's
        ``allocation orphan list`` too (each of its scans costs the
        compute API's time).
        """
        found = {}
        argvs = [(self.manage_scan, MANAGE_LIST)]
        if step % 2:
            argvs.append((self.manage_scan,
                          EXTRA[step // 2 % len(EXTRA)]))
        if last:
            argvs.append((self.osc_scan, OSC_LIST))
        for scan, argv in argvs:
            rc, out = scan(chain, *argv)
            name = '%s %s' % (scan.__name__, ' '.join(argv))
            if 'prometheus' in argv:
                found[name] = (rc, TIMES.sub('', out))
            else:
                found[name] = (rc, json.loads(out) if out.strip() else out)
        return found

    def check(self, seed, steps, last=False):
        step = len(steps)
        kept = self.scans('kept', step, last)
        full = self.scans('full', step, last)
        for name in kept:
            self.assertEqual(
                full[name], kept[name],
                'seed %d, after %s: %s differs from --full-read' % (
                    seed, ' / '.join(steps) or 'nothing', name))

    # The cloud ------------------------------------------------------------

    def build(self, rng):
        self.rng = rng
        self.nodes = []
        for cell in front_ends.CELLS:
            for i in range(3):
                host = '%s-host%d' % (cell, i)
                uuid = self.nova.add_compute_node(cell, host)
                self.placement.create_provider(
                    host, uuid=uuid, inventory=base.INVENTORY,
                    traits=NODE_TRAITS)
                self.nodes.append({'host': host, 'cell': cell, 'rp': uuid,
                                   'live': True})
        # A bandwidth child on the first node: an unknown consumer's leak.
        self.child = self.placement.create_provider(
            'bw', parent=self.nodes[0]['rp'],
            inventory={'NET_BW_EGR_KILOBIT_PER_SEC': 100000})
        # A live server on each node, two on each cell's first.
        self.servers = {}
        for node in self.nodes + self.nodes[::3]:
            self.boot_on(node)
        # Orphans: their consumers, whose allocations may be deleted.
        self.orphans = set()
        gone = self.nova.add_instance('cell1', host=self.nodes[1]['host'],
                                      node=self.nodes[1]['host'],
                                      deleted=True)
        self.allocate(gone, self.nodes[1]['rp'])
        self.orphans.add(gone)
        self.orphans.add(self.new_consumer({
            self.nodes[0]['rp']: base.FLAVOR,
            self.child: {'NET_BW_EGR_KILOBIT_PER_SEC': 1000}}))
        self.archived = False

    def new_consumer(self, allocations):
        """A consumer nova has no trace of, holding ``{rp: resources}``."""
        consumer = str(uuidlib.uuid4())
        self.allocate(consumer, allocations)
        return consumer

    def boot_on(self, node):
        uuid = self.nova.add_instance(node['cell'], host=node['host'],
                                      node=node['host'])
        self.allocate(uuid, node['rp'])
        self.servers[uuid] = dict(node=node, holds=True)
        return uuid

    def live_nodes(self, cell=None):
        return [n for n in self.nodes if n['live'] and
                (cell is None or n['cell'] == cell)]

    def holding(self):
        """Live servers that hold allocations, sorted."""
        return sorted(u for u, s in self.servers.items() if s['holds'])

    def move_row(self, uuid, node):
        """The instance's row on ``node``, as nova leaves it after a move
        (settled: outside the grace period).
        """
        cell = node['cell']
        instances = self.nova.table(cell, 'instances')
        nodes = self.nova.table(cell, 'compute_nodes')
        compute_id = self.nova.execute(cell, nodes.select().with_only_columns(
            nodes.c.id).where(nodes.c.uuid == node['rp']))[0][0]
        self.nova.execute(cell, instances.update().where(
            instances.c.uuid == uuid).values(
            host=node['host'], node=node['host'], compute_id=compute_id,
            updated_at=settled()))
        self.servers[uuid]['node'] = node

    def other_node(self, node):
        others = [n for n in self.live_nodes(node['cell']) if n is not node]
        return self.rng.choice(others) if others else None

    # The changes: each returns its name, or None when it cannot apply -----

    def delete_orphan(self):
        if not self.orphans:
            return None
        consumer = self.rng.choice(sorted(self.orphans))
        self.placement.request('DELETE', '/allocations/%s' % consumer)
        self.orphans.discard(consumer)
        return 'DELETE of orphan %s' % consumer[:8]

    def move_server(self):
        choices = [u for u in self.holding()
                   if self.other_node(self.servers[u]['node'])]
        if not choices:
            return None
        uuid = self.rng.choice(choices)
        target = self.other_node(self.servers[uuid]['node'])
        self.allocate(uuid, target['rp'])
        self.move_row(uuid, target)
        return 'server %s moved by PUT to %s' % (uuid[:8], target['host'])

    def new_unknown(self):
        node = self.rng.choice(self.live_nodes())
        self.orphans.add(self.new_consumer({node['rp']: base.FLAVOR}))
        return 'unknown consumer on %s' % node['host']

    def delete_in_sql(self):
        choices = sorted(self.servers)
        if not choices:
            return None
        uuid = self.rng.choice(choices)
        server = self.servers.pop(uuid)
        self.nova.force_delete_instance(server['node']['cell'], uuid)
        if server['holds']:
            self.orphans.add(uuid)
        return 'instance %s deleted in SQL' % uuid[:8]

    def archive(self):
        if self.archived:
            return None
        # nova's own soft delete, then nova-manage's archive of the cell.
        cells = [s['node']['cell'] for s in self.servers.values()]
        if not cells:
            return None
        cell = self.rng.choice(sorted(cells))
        uuid = self.rng.choice(sorted(
            u for u, s in self.servers.items() if s['node']['cell'] == cell))
        server = self.servers.pop(uuid)
        self.nova.force_delete_instance(cell, uuid)
        self.nova.archive(cell)
        if server['holds']:
            self.orphans.add(uuid)
        self.archived = True
        return 'instance %s deleted and %s archived' % (uuid[:8], cell)

    def inventory(self):
        node = self.rng.choice(self.live_nodes())
        inventory = dict(base.INVENTORY,
                         VCPU=self.rng.choice((16, 24, 32)))
        gen = self.placement.provider_allocations(node['rp'])[
            'resource_provider_generation']
        self.placement.request(
            'PUT', '/resource_providers/%s/inventories' % node['rp'], json={
                'resource_provider_generation': gen,
                'inventories': {rc: {'total': total, 'max_unit': total}
                                for rc, total in inventory.items()}})
        return 'inventory of %s' % node['host']

    def traits(self):
        node = self.rng.choice(self.live_nodes())
        traits = NODE_TRAITS + [t for t in OTHER_TRAITS
                                if self.rng.random() < 0.5]
        self.placement.request('PUT', '/traits/CUSTOM_KEPT_READS')
        gen = self.placement.provider_allocations(node['rp'])[
            'resource_provider_generation']
        self.placement.request(
            'PUT', '/resource_providers/%s/traits' % node['rp'], json={
                'resource_provider_generation': gen, 'traits': traits})
        return 'traits of %s: %s' % (node['host'], ', '.join(traits))

    def empty_server(self):
        choices = self.holding()
        if not choices:
            return None
        uuid = self.rng.choice(choices)
        self.allocate(uuid, {})
        self.servers[uuid]['holds'] = False
        return 'server %s emptied by PUT' % uuid[:8]

    def migration_swap(self):
        choices = [u for u in self.holding()
                   if self.other_node(self.servers[u]['node'])]
        if not choices:
            return None
        uuid = self.rng.choice(choices)
        source = self.servers[uuid]['node']
        target = self.other_node(source)
        migration = str(uuidlib.uuid4())
        status = self.rng.choice(IN_PROGRESS + OVER)
        current = self.placement.get_allocations(uuid)
        resp = self.placement.request('POST', '/allocations', json={
            migration: {'allocations': {source['rp']: {
                'resources': base.FLAVOR}},
                'project_id': base.PROJECT, 'user_id': base.USER,
                'consumer_generation': None},
            uuid: {'allocations': {target['rp']: {
                'resources': base.FLAVOR}},
                'project_id': base.PROJECT, 'user_id': base.USER,
                'consumer_generation': current['consumer_generation']}},
            version=placement_fx.UNTYPED_VERSION)
        self.assertEqual(204, resp.status_code, resp.text)
        self.nova.add_migration(
            source['cell'], uuid, uuid=migration,
            migration_type='migration', status=status,
            source_compute=source['host'], source_node=source['host'],
            dest_compute=target['host'], dest_node=target['host'])
        self.move_row(uuid, target)
        if status in OVER:
            self.orphans.add(migration)
        return 'migration %s of %s (%s) by POST' % (
            migration[:8], uuid[:8], status)

    def recreate_provider(self):
        """A node nothing live holds on, its orphans' allocations deleted
        first (placement refuses to delete a provider holding any).
        """
        held = {s['node']['rp'] for s in self.servers.values()
                if s['holds']}
        choices = [n for n in self.nodes[1:] if n['rp'] not in held]
        if not choices:
            return None
        node = self.rng.choice(choices)
        for consumer in self.placement.provider_allocations(node['rp'])[
                'allocations']:
            self.placement.request('DELETE', '/allocations/%s' % consumer)
            self.orphans.discard(consumer)
        resp = self.placement.delete_provider(node['rp'])
        self.assertEqual(204, resp.status_code, resp.text)
        self.placement.create_provider(node['host'], uuid=node['rp'],
                                       inventory=base.INVENTORY,
                                       traits=NODE_TRAITS)
        return 'provider of %s deleted and re-created' % node['host']

    def delete_node(self):
        """nova deletes a compute node and its service, its provider left
        behind (placement refused: something still holds there).
        """
        held = {s['node']['rp'] for s in self.servers.values()}
        choices = [n for n in self.live_nodes()[1:]
                   if n['rp'] not in held and len(self.live_nodes(
                       n['cell'])) > 1]
        if not choices:
            return None
        node = self.rng.choice(choices)
        cell = node['cell']
        nodes = self.nova.table(cell, 'compute_nodes')
        services = self.nova.table(cell, 'services')
        self.nova.execute(cell, nodes.update().where(
            nodes.c.uuid == node['rp']).values(deleted=nodes.c.id))
        self.nova.execute(cell, services.update().where(
            services.c.host == node['host']).values(deleted=services.c.id))
        node['live'] = False
        return 'compute node %s deleted in nova' % node['host']

    def boot(self):
        node = self.rng.choice(self.live_nodes())
        return 'server %s booted on %s' % (self.boot_on(node)[:8],
                                           node['host'])

    # What a generation does not show (an orphan deleted, a server moved
    # off a provider) twice as often as the rest.
    CHANGES = ('delete_orphan', 'delete_orphan', 'move_server',
               'move_server', 'new_unknown',
               'delete_in_sql', 'archive', 'inventory', 'traits',
               'empty_server', 'migration_swap', 'recreate_provider',
               'delete_node', 'boot')

    def check_sequence(self, seed, openstack=False):
        """The sequence of ``seed`` from its cloud as built, checked
        after every step; with ``openstack``, from the cloud as it is,
        which openstack has scanned, checked (openstack's scans too) at
        its end only: its kept reads stand for every change since.
        """
        rng = random.Random(seed)
        if not openstack:
            self.build(rng)
            self.check(seed, [])
        self.rng = rng
        steps = []
        while len(steps) < STEPS:
            step = getattr(self, rng.choice(self.CHANGES))()
            if step is None:
                continue
            steps.append(step)
            if not openstack or len(steps) == STEPS:
                self.check(seed, steps, last=openstack)


class EquivalenceTestCase(Sequences):

    SEEDS = (11, 23)

    def test_openstack(self):
        """openstack on this cloud: a second scan reads the provider list
        and what its findings rest on; a damaged file is a full read with
        the same rows; clean and restore after kept scans stay exact; then
        a sequence (seed 37), whose end openstack's kept reads see as a
        full read does.
        """
        self.build(random.Random(5))
        mark = len(self.placement.requests)
        first = self.osc_scan('kept', *OSC_LIST)
        cold = self.placement.requests_since(mark)
        self.assertEqual(3, first[0])
        providers = sorted([n['rp'] for n in self.nodes] + [self.child])
        self.assertEqual(providers, placement_fx.allocation_reads(cold))
        mark = len(self.placement.requests)
        self.assertEqual(first, self.osc_scan('kept', *OSC_LIST))
        kept = self.placement.requests_since(mark)
        # The deleted instance's node, the unknown consumer's node and
        # child; every other request as the first scan sent it.
        rest_on = sorted([self.nodes[0]['rp'], self.nodes[1]['rp'],
                          self.child])
        self.assertEqual(rest_on, placement_fx.allocation_reads(kept))
        unread = collections.Counter(
            ('GET', '/resource_providers/%s/allocations' % rp)
            for rp in set(providers) - set(rest_on))
        self.assertEqual(collections.Counter(cold) - unread,
                         collections.Counter(kept))
        # Damaged: a full read, the same rows.
        path, = glob.glob(os.path.join(self.homes['kept'], 'nova-orphans',
                                       'kept-reads-*.json'))
        with open(path, 'r+b') as f:
            f.truncate(os.path.getsize(path) // 2)
        mark = len(self.placement.requests)
        self.assertEqual(first, self.osc_scan('kept', *OSC_LIST))
        self.assertEqual(providers, self.placement.allocation_reads(mark))
        # A clean after kept scans repairs what a full read finds, and its
        # restore puts everything back.
        before = self.placement.dump_state(generations=False)
        journal = os.path.join(self.tmp, 'clean.jsonl')
        rc, out = self.osc_scan('kept', 'allocation', 'orphan', 'clean',
                                '-f', 'json', '--journal', journal)
        self.assertEqual(4, rc, out)
        self.assertEqual(sorted(self.orphans),
                         sorted({r['consumer'] for r in json.loads(out)}))
        self.assertEqual(
            {c: state for c, state in before.items()
             if c not in self.orphans},
            self.placement.dump_state(generations=False))
        rc, out = self.osc_scan('kept', 'allocation', 'orphan', 'restore',
                                '-f', 'json', '--journal', journal)
        self.assertEqual(4, rc, out)
        self.assertEqual(before, self.placement.dump_state(generations=False))
        self.check_sequence(37, openstack=True)


def _add_tests(given):
    seeds = ([int(seed) for seed in given.split(',')] if given
             else EquivalenceTestCase.SEEDS)
    for seed in seeds:
        setattr(EquivalenceTestCase, 'test_seed_%d' % seed,
                lambda self, seed=seed: self.check_sequence(seed))


_add_tests(os.environ.get('KEPT_SEEDS'))
