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
"""The benchmark (tools/bench) still works: a tiny cloud, two tool runs.

Generates the benchmark's synthetic cloud at 20 compute nodes in two
cells, with its nested children (bandwidth and PCI) and its sharing
provider, verifies the bulk load through placement's API, serves it
with the benchmark's pre-fork placement server and runs the tool in API
mode and fast mode through the benchmark's runner; both must find
exactly the generated orphans, those on the children and the sharing
provider included, and once from another checkout (``--compare``).
Then the floor: fast mode's statements, recorded at the driver, run
again through the driver alone. The full benchmark is
``python tools/bench/run.py``.
"""

import collections
import json
import os
import random
import subprocess
import sys

from nova_orphans.tests.functional import base as functional_base

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..'))
BENCH = os.path.join(REPO, 'tools', 'bench')


class BenchSmokeTestCase(functional_base.TestCase):

    def setUp(self):
        super().setUp()
        if BENCH not in sys.path:
            sys.path.insert(0, BENCH)

    def _bench_script(self, script, bench, truth):
        """The stderr lines of a tools/bench script running ``allocations
        list`` on the bench's cloud in fast mode, which must still find
        the generated orphans.
        """
        run = subprocess.run(
            [sys.executable, os.path.join(BENCH, script),
             '--config-file', bench.fast_conf, '--config-dir',
             os.path.dirname(bench.fast_conf), 'allocations', 'list',
             '--format', 'json'],
            capture_output=True, text=True, env=bench.env, timeout=120)
        self.assertEqual(3, run.returncode, run.stderr)
        self.assertEqual(sorted(truth['orphans']), sorted(
            [f['consumer'], f['resource_provider'], f['reason']]
            for f in json.loads(run.stdout)))
        return run.stderr.splitlines()

    def test_generated_orphans_are_found(self):
        from orphanbench import generate
        from orphanbench import runner

        from nova_orphans.tests.functional.fixtures import nova_db
        from nova_orphans.tests.functional.fixtures import placement

        cloud = generate.Cloud(self.tmp, 20, cells=2)
        urls = cloud.build(nova_db.schema_templates(), placement._template())
        truth = cloud.truth()
        # 20 nodes; children under nodes 4, 9, 14 and 19 (bandwidth,
        # PCI, bandwidth, PCI); nodes 0-9 on one sharing provider.
        self.assertEqual(
            (20, 25, 4, 1, 613),
            (truth['providers'], truth['resource_providers'],
             truth['nested_providers'], truth['sharing_providers'],
             truth['allocations']))
        kind = {}
        for i, rp in enumerate(cloud.rps):
            kind[rp['uuid']] = (
                'node' if i < cloud.n else 'sharing' if rp['traits']
                else rp['name'].rsplit('_', 1)[1])
        self.assertEqual(collections.Counter({
            ('node', 'deleted_instance'): 6,
            ('node', 'unknown_consumer'): 4,
            ('node', 'shelved_offloaded'): 4,
            ('node', 'stale_provider'): 2,
            ('node', 'finished_migration'): 2,
            ('node', 'evacuated_source'): 2,
            ('node', 'missing_allocations'): 1,
            ('sharing', 'deleted_instance'): 3,
            ('sharing', 'unknown_consumer'): 3,
            ('sharing', 'shelved_offloaded'): 1,
            ('bandwidth', 'unknown_consumer'): 2,
            ('bandwidth', 'shelved_offloaded'): 1,
            ('bandwidth', 'deleted_instance'): 1,
            ('pci', 'unknown_consumer'): 3,
            ('pci', 'deleted_instance'): 1,
        }), collections.Counter((kind[rp], reason)
                                for _c, rp, reason in truth['orphans']))
        # The audit's algorithm flags every DISK_GB on the sharing
        # provider (not a compute node), live servers' too, and nothing
        # of the PCI children's custom class.
        self.assertEqual(
            {'node': 23, 'sharing': 189, 'bandwidth': 4},
            collections.Counter(kind[rp]
                                for _c, rp in truth['audit_expected']))
        # A checkout of its own for --compare, which says it ran.
        stub = os.path.join(self.tmp, 'stub')
        os.makedirs(os.path.join(stub, 'nova_orphans', 'cmd'))
        for name, text in (('__init__.py', ''), ('cmd/__init__.py', ''),
                           ('cmd/manage.py', 'def main(argv=None):\n'
                            '    print("[]")\n    return 0\n')):
            with open(os.path.join(stub, 'nova_orphans', name), 'w') as f:
                f.write(text)
        bench = runner.Bench(cloud, urls, self.tmp, trees={'stub': stub})
        self.addCleanup(bench.stop)
        checked = cloud.verify(bench.placement.endpoint)
        # 20 nodes, 5 children (20 // 4, at most the 4 there are) and
        # the sharing provider.
        self.assertEqual(25, checked['providers_checked'])
        for tool in ('api', 'fast'):
            result = bench.run(tool, timeout=120)
            self.assertEqual(sorted(truth['orphans']), result['found'],
                             tool)
            self.assertEqual(3, result['rc'])
            self.assertGreater(result['rss_mib'], 0)
            # Sampled: the one process's sum, within a sample of its peak.
            self.assertGreater(result['rss_all_mib'], 0)
            self.assertLess(result['rss_all_mib'], result['rss_mib'] * 1.5)
            if tool == 'api':
                self.assertGreater(result['placement_cpu'], 0)
                # The first scan: every provider's allocations read.
                self.assertEqual(25, result['allocation_reads'])
                self.assertGreater(result['placement_requests'], 25)
            else:
                # Only the workers' idle polling: no request was served.
                self.assertLess(result['placement_cpu'], 0.2)
                self.assertEqual(0, result['placement_requests'])
        # The steady state: kept reads, a churn that changes no finding,
        # and a cold scan once they are forgotten.
        steady = bench.run('api', timeout=120)
        self.assertEqual(sorted(truth['orphans']), steady['found'])
        self.assertLess(steady['allocation_reads'], 25)
        # Two nodes' providers at least (a server on shared storage moves
        # its sharing provider's too).
        self.assertGreaterEqual(bench.churn(0.1, random.Random(1)), 2)
        churned = bench.run('api', timeout=120)
        self.assertEqual(sorted(truth['orphans']), churned['found'])
        bench.forget_kept_reads()
        self.assertEqual(25, bench.run('api', timeout=120)[
            'allocation_reads'])
        # TOOL@LABEL runs the tool of that checkout, not this one's.
        result = bench.run('fast@stub', timeout=120)
        self.assertEqual((0, []), (result['rc'], result['found']))
        # phases.py: the same findings, and a line for every phase.
        labels = [line.split('  ')[0].strip() for line in
                  self._bench_script('phases.py', bench, truth)]
        self.assertEqual('total', labels[-1])
        self.assertLessEqual(
            {'placement providers', 'nova read', 'placement allocations',
             'nova resolve', 'placement consumer records', 'classify',
             'render json'}, set(labels))
        # bounds.py: the run still gives its findings, and every step
        # is measured, each cell's (cell0 has no instances).
        steps = [line.split('  least ')[0].strip() for line in
                 self._bench_script('bounds.py', bench, truth)]
        self.assertEqual(
            ['cell cell1: live instances',
             "cell cell1: as the driver's tuples",
             'cell cell2: live instances',
             "cell cell2: as the driver's tuples",
             'placement: allocation rows, grouped',
             'placement: allocations made of them',
             'classify: %d allocations' % truth['allocations']],
            [s for s in steps if not s.startswith('cell cell0: ')])
        # Situations on one pair in 5 only: pairs 0 and 5, their orphans
        # on nodes 0 and 11 and the sharing provider of nodes 0 to 9.
        sparse = generate.Cloud(self.tmp, 20, cells=2, situations_every=5)
        sparse.plan()
        self.assertEqual('nested+sharing, situations 1/5', sparse.shape())
        index = {rp['uuid']: i for i, rp in enumerate(sparse.rps)}
        self.assertEqual({0, 11, sparse.shared_by[0]},
                         {index[rp] for _c, rp, _r in sparse.orphans})
        self.assertEqual(6, len(sparse.orphans))
        # The audit's parser and the generator's model of its algorithm.
        self.assertTrue(runner.score(
            truth, truth['audit_expected'], 'audit')['true_positives'])

        # The floor: every row-returning statement fast mode gave the
        # driver, per database, run again and every row read.
        plan = bench.floor_plan(bench.count_queries('fast'))
        self.assertEqual({'api', 'cell0', 'cell1', 'cell2', 'placement'},
                         {db['name'] for db in plan})
        placement_sql = [' '.join(sql.split()) for sql, _u in next(
            db for db in plan if db['name'] == 'placement')['statements']]
        self.assertTrue(any('FROM allocations' in sql
                            for sql in placement_sql), placement_sql)
        floor = bench.floor(plan, timeout=120)
        self.assertEqual(0, floor['rc'])
        rows = {d['database']: d['rows'] for d in floor['databases']}
        # At least every allocation row (one per resource class) and
        # every cell's live instance.
        self.assertGreaterEqual(rows['placement'], sum(
            len(r) for _c, _rp, r in cloud.allocations))
        self.assertGreaterEqual(rows['cell1'] + rows['cell2'], sum(
            1 for i in cloud.instances if not i['deleted']))
        self.assertGreater(floor['wall'], 0)
