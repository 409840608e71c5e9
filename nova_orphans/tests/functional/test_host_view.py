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
"""``list --group-by host`` judged against placement itself.

On a real placement and nova's real schema, with nova's real compute
API for ``openstack``: for raw shapes and for flavors (PCPU under
``hw:cpu_policy=dedicated``, ``resources:*`` extra specs, a required
trait only one host carries, a private flavor), on hosts with reserved
amounts, an allocation ratio, a step size and a nested provider:

- ``now`` is how many servers of the shape placement accepts on the
  host: the test fills the host, asking placement for a candidate in
  its tree and writing it (``PUT /allocations``), until placement has
  none or refuses, then removes what it wrote;
- ``free`` is placement's capacity less its usages, as the test reads
  them from placement;
- ``held`` is what a real ``allocations clean`` then removes from the
  host's tree (its usages before and after), and ``after_clean`` and
  ``free_after_clean`` are the same measures after it;
- nova-orphans-manage (placement's API, and its database in fast mode)
  and openstack print the same rows.
"""

import csv
import io
import json
import os
import uuid as uuidlib

from prometheus_client import parser
import yaml

from nova_orphans.engine import hosts
from nova_orphans import exit_codes
from nova_orphans import output
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional import front_ends

VERSION = '1.39'
GPU = 'CUSTOM_GPU'
FAST = 'CUSTOM_FAST'
RAW = ['--resource', 'VCPU=3', '--resource', 'MEMORY_MB=1000']
RAW_NAME = 'VCPU=3,MEMORY_MB=1000'
# name: (vcpus, memory_mb, root_gb, ephemeral_gb, swap, is_public, specs)
FLAVORS = {
    'f.small': (1, 512, 1, 0, 0, True, {}),
    'f.pinned': (2, 1024, 10, 0, 0, True, {'hw:cpu_policy': 'dedicated'}),
    'f.gpu': (1, 256, 20, 0, 0, True, {'resources:%s' % GPU: '1',
                                       'resources:DISK_GB': '5'}),
    # Private: an admin lists it with is_public=None.
    'f.fast': (2, 1024, 5, 0, 512, False,
               {'trait:%s' % FAST: 'required'}),
}
# What each flavor asks placement for, as the test reads nova's rules.
SHAPES = {
    RAW_NAME: ({'VCPU': 3, 'MEMORY_MB': 1000}, ()),
    'f.small': ({'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}, ()),
    'f.pinned': ({'PCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10}, ()),
    'f.gpu': ({'VCPU': 1, 'MEMORY_MB': 256, 'DISK_GB': 5, GPU: 1}, ()),
    'f.fast': ({'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 6}, (FAST,)),
}
ORPHAN = {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10}
MOVED = {'VCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 20}


class HostViewTestCase(front_ends.FrontEndsTestCase):

    def setUp(self):
        super().setUp()
        self.fast_conf = self.nova_conf(
            self.placement.endpoint, name='fast.conf',
            placement_database={'connection': self.placement.db_url},
            nova_orphans={'capacity_flavors': 'f.pinned'})
        for name, (vcpus, ram, root, ephemeral, swap, public,
                   specs) in FLAVORS.items():
            self.nova.add_flavor(name, vcpus, ram, root, ephemeral, swap,
                                 public, specs)

    # Building the cloud ---------------------------------------------------

    def ok(self, method, path, json=None, codes=(200, 204)):
        resp = self.placement.request(method, path, json=json,
                                      version=VERSION)
        self.assertIn(resp.status_code, codes, (method, path, resp.text))
        return resp.json() if resp.status_code == 200 else None

    def put_provider(self, rp, inventories, traits=()):
        gen = self.ok('GET', '/resource_providers/%s' % rp)['generation']
        gen = self.ok('PUT', '/resource_providers/%s/inventories' % rp, {
            'resource_provider_generation': gen,
            'inventories': inventories})['resource_provider_generation']
        if traits:
            for trait in traits:
                if trait.startswith('CUSTOM_'):
                    self.ok('PUT', '/traits/%s' % trait, codes=(201, 204))
            self.ok('PUT', '/resource_providers/%s/traits' % rp, {
                'resource_provider_generation': gen,
                'traits': list(traits)})

    def build(self):
        """Three compute hosts; orphans on two of them."""
        self.host1 = self.add_node('host1')
        self.put_provider(self.host1, {
            'VCPU': {'total': 4, 'allocation_ratio': 2.0},
            'MEMORY_MB': {'total': 4096, 'reserved': 512},
            'DISK_GB': {'total': 40},
            'PCPU': {'total': 4}}, traits=['COMPUTE_NODE'])
        self.gpu = self.add_child(self.host1, 'host1_gpu', {GPU: 2})
        self.host2 = self.add_node('host2')
        self.put_provider(self.host2, {
            'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096},
            'DISK_GB': {'total': 60, 'step_size': 2}},
            traits=['COMPUTE_NODE', FAST])
        self.host3 = self.add_node('host3')
        self.put_provider(self.host3, {
            'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096},
            'DISK_GB': {'total': 60}}, traits=['COMPUTE_NODE'])
        self.roots = {'host1': self.host1, 'host2': self.host2,
                      'host3': self.host3}
        # A live server on host1, and what nobody owns beside it.
        self.boot('host1', self.host1)
        self.allocate(str(uuidlib.uuid4()),
                      {self.host1: ORPHAN, self.gpu: {GPU: 1}})
        # Seed 001: a failed cold migration kept its target, host2.
        vm = self.nova.add_instance('cell1', host='host3', node='host3',
                                    vm_state='stopped')
        self.allocate(vm, {self.host3: MOVED, self.host2: MOVED})
        self.nova.add_migration('cell1', vm, migration_type='migration',
                                status='error', source_compute='host3',
                                source_node='host3', dest_compute='host2',
                                dest_node='host2')

    # What placement says --------------------------------------------------

    def tree(self, root):
        return [p['uuid'] for p in self.ok(
            'GET', '/resource_providers?in_tree=%s' % root)[
                'resource_providers']]

    def usages(self, root):
        total = {}
        for rp in self.tree(root):
            for rc, used in self.ok('GET', '/resource_providers/%s/usages' %
                                    rp)['usages'].items():
                total[rc] = total.get(rc, 0) + used
        return total

    def free(self, root):
        """Placement's capacity less its usages, by class, over the
        tree (as placement computes capacity: rounded down).
        """
        free = {}
        for rp in self.tree(root):
            used = self.ok('GET', '/resource_providers/%s/usages' %
                           rp)['usages']
            for rc, inv in self.ok('GET', '/resource_providers/%s/'
                                   'inventories' % rp)['inventories'].items():
                room = int((inv['total'] - inv['reserved']) *
                           inv['allocation_ratio']) - used.get(rc, 0)
                free[rc] = free.get(rc, 0) + room
        return free

    def fill(self, root, resources, required):
        """How many servers of the shape placement accepts in the tree:
        a candidate asked for and written, until placement has none or
        refuses the write; what was written is then removed.
        """
        query = '/allocation_candidates?resources=%s&in_tree=%s&limit=1' % (
            ','.join('%s:%d' % item for item in sorted(resources.items())),
            root)
        if required:
            query += '&required=%s' % ','.join(required)
        written = []
        try:
            while len(written) < 50:
                found = self.ok('GET', query)['allocation_requests']
                if not found:
                    break
                consumer = str(uuidlib.uuid4())
                resp = self.placement.request(
                    'PUT', '/allocations/%s' % consumer, version=VERSION,
                    json={'allocations': found[0]['allocations'],
                          'project_id': base.PROJECT,
                          'user_id': base.USER, 'consumer_generation': None,
                          'consumer_type': 'INSTANCE'})
                if resp.status_code == 409:
                    break
                self.assertEqual(204, resp.status_code, resp.text)
                written.append(consumer)
        finally:
            for consumer in written:
                self.ok('DELETE', '/allocations/%s' % consumer)
        return len(written)

    def fits(self, host):
        return [{'shape': name, 'now': self.fill(self.roots[host], *shape),
                 'after_clean': None} for name, shape in SHAPES.items()]

    # The tests -----------------------------------------------------------

    def views(self, code=exit_codes.ORPHANS_FOUND):
        """The JSON rows of nova-orphans-manage (placement's API, then
        its database), and of openstack, all three the same.
        """
        argv = ('--group-by', 'host', '--all') + tuple(RAW) + tuple(
            arg for name in FLAVORS for arg in ('--flavor', name))
        results = self.run_all(
            self.manage_argv('allocations', 'list', *argv, '-f', 'json'),
            self.manage_argv('allocations', 'list', *argv, '-f', 'json',
                             conf_file=self.fast_conf),
            self.openstack_argv('allocation', 'orphan', 'list', *argv,
                                '-f', 'json'))
        rows = []
        for result in results:
            rc, out, err = self.assertRanCleanly(result, (code,))
            rows.append(json.loads(out))
        self.assertEqual(rows[0], rows[1], 'fast mode')
        self.assertEqual(rows[0], rows[2], 'openstack')
        return {row['host']: row for row in rows[0]}

    def test_numbers_are_placements(self):
        self.build()
        before = self.views()
        self.assertEqual(['host1', 'host2', 'host3'], sorted(before))
        # The largest share of a class held first: half of host1's
        # CUSTOM_GPU and of host2's VCPU, a tie the host's name breaks.
        self.assertEqual(['host1', 'host2', 'host3'], list(before))
        measured = {}
        for host, root in self.roots.items():
            row = before[host]
            self.assertEqual(root, row['provider'])
            self.assertEqual(self.free(root), row['free'], host)
            measured[host] = (self.usages(root), self.fits(host))
        # The flavors' shapes, as nova asks placement for them.
        self.assertEqual(
            {'host1': {**ORPHAN, GPU: 1}, 'host2': MOVED, 'host3': {}},
            {h: r['held'] for h, r in before.items()})

        rc, out, err = self.manage('allocations', 'clean')
        self.assertEqual(exit_codes.REPAIRED, rc, err)

        after = self.views(exit_codes.SUCCESS)
        for host, root in self.roots.items():
            used_before, fits = measured[host]
            used_after = self.usages(root)
            given_back = {rc: used_before[rc] - used_after.get(rc, 0)
                          for rc in used_before
                          if used_before[rc] != used_after.get(rc, 0)}
            self.assertEqual(given_back, before[host]['held'], host)
            self.assertEqual(self.free(root),
                             before[host]['free_after_clean'], host)
            for fit in fits:
                fit['after_clean'] = self.fill(root, *SHAPES[fit['shape']])
            self.assertEqual(fits, before[host]['fits'], host)
            # Nothing held any more: what was after the clean is now.
            self.assertEqual({}, after[host]['held'])
            self.assertEqual([{'shape': f['shape'], 'now': f['after_clean'],
                               'after_clean': f['after_clean']}
                              for f in fits], after[host]['fits'])
        # The shapes the test measured are not all nothing or all alike.
        counts = [(f['now'], f['after_clean']) for _used, fits in
                  measured.values() for f in fits]
        self.assertLess(3, len(set(counts)))

    def test_summary_and_metrics(self):
        self.build()
        rc, out, err = self.manage(
            'allocations', 'list', '--group-by', 'host', *RAW, '--flavor',
            'f.fast', conf_file=self.fast_conf)
        self.assertEqual((exit_codes.ORPHANS_FOUND, ''), (rc, err))
        lines = out.splitlines()
        self.assertEqual(
            ['A clean would give back VCPU=6, MEMORY_MB=3072, DISK_GB=30, '
             'CUSTOM_GPU=1, on 2 compute host(s).',
             'VCPU=3,MEMORY_MB=1000: 2 more server(s) after a clean, on 2 '
             'host(s).',
             'f.fast: 2 more server(s) after a clean, on 1 host(s).'],
            lines[-4:-1])
        self.assertTrue(lines[-1].startswith('Next: nova-orphans-manage '))
        # The scan's metrics: capacity_flavors (f.pinned) and --flavor.
        path = os.path.join(self.tmp, 'scan.prom')
        rc, out, err = self.manage(
            'allocations', 'list', '--flavor', 'f.small', '--metrics-file',
            path, '-f', 'json', conf_file=self.fast_conf)
        self.assertEqual(exit_codes.ORPHANS_FOUND, rc, err)
        with open(path) as f:
            families = {fam.name: fam for fam in
                        parser.text_string_to_metric_families(f.read())}
        held = {(s.labels['host'], s.labels['resource_provider_name'],
                 s.labels['resource_class']): s.value
                for s in families['nova_orphans_host_resources'].samples}
        self.assertEqual(
            {('host1', 'host1', 'VCPU'): 2, ('host1', 'host1', 'MEMORY_MB'):
             1024, ('host1', 'host1', 'DISK_GB'): 10,
             ('host1', 'host1_gpu', GPU): 1, ('host2', 'host2', 'VCPU'): 4,
             ('host2', 'host2', 'MEMORY_MB'): 2048,
             ('host2', 'host2', 'DISK_GB'): 20}, held)
        view = self.views()
        servers = {(s.labels['flavor'], s.labels['state']): s.value
                   for s in families['nova_orphans_flavor_servers'].samples}
        expected = {}
        for flavor in ('f.pinned', 'f.small'):
            fits = [f for row in view.values() for f in row['fits']
                    if f['shape'] == flavor]
            expected[(flavor, 'now')] = sum(f['now'] for f in fits)
            expected[(flavor, 'after_clean')] = sum(f['after_clean']
                                                    for f in fits)
        self.assertEqual(expected, servers)
        # Every format, the same keys and values from both front ends.
        shapes = ['--group-by', 'host', '--all'] + RAW + ['--flavor',
                                                          'f.gpu']
        commands = []
        for fmt in ('yaml', 'csv', 'value'):
            commands += [
                self.manage_argv('allocations', 'list', *shapes, '-f', fmt),
                self.openstack_argv('allocation', 'orphan', 'list', *shapes,
                                    '-f', fmt)]
        results = self.run_all(*commands)
        outputs = [self.assertRanCleanly(
            result, (exit_codes.ORPHANS_FOUND,))[1] for result in results]
        for fmt, manage, osc in zip(('yaml', 'csv', 'value'), outputs[::2],
                                    outputs[1::2]):
            self.assertEqual(manage, osc, fmt)
        rows = list(view.values())
        for row in rows:
            row['fits'] = [f for f in row['fits']
                           if f['shape'] in (RAW_NAME, 'f.gpu')]
        self.assertEqual(rows, yaml.safe_load(outputs[0]))
        table = list(csv.reader(io.StringIO(outputs[2])))
        self.assertEqual(list(hosts.HOST_KEYS), table[0])
        self.assertEqual(
            [[r['host'], r['provider'], output.plain_resources(r['held']),
              output.plain_resources(r['free']),
              output.plain_resources(r['free_after_clean']),
              ';'.join('%(shape)s:%(now)d:%(after_clean)d' % f
                       for f in r['fits'])] for r in rows], table[1:])
        # value: the same fields, an empty one "-".
        self.assertEqual([' '.join(v or '-' for v in line)
                          for line in table[1:]], outputs[4].splitlines())

    def test_unknown_flavor_or_class(self):
        for options, line in (
                (['--flavor', 'f.none'], 'nova has no flavor f.none'),
                (['--resource', 'CUSTOM_NONE=1'],
                 'shape CUSTOM_NONE=1: placement has no resource class '
                 'CUSTOM_NONE')):
            results = self.run_all(
                self.manage_argv('allocations', 'list', '--group-by', 'host',
                                 *options),
                self.manage_argv('allocations', 'list', '--group-by', 'host',
                                 *options, conf_file=self.fast_conf),
                self.openstack_argv('allocation', 'orphan', 'list',
                                    '--group-by', 'host', *options))
            for rc, out, err in results:
                self.assertEqual((exit_codes.INVALID_INPUT, '',
                                  'ERROR: Invalid input: %s\n' % line),
                                 (rc, out, err))
