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

Generates the benchmark's synthetic cloud at 20 providers in two cells,
verifies the bulk load through placement's API, serves it with the
benchmark's pre-fork placement server and runs the tool in API mode and
fast mode through the benchmark's runner; both must find exactly the
generated orphans. The full benchmark is ``python tools/bench/run.py``.
"""

import os
import sys

import fixtures
from oslotest import base

from nova_orphans.tests.functional import base as functional_base

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..'))
BENCH = os.path.join(REPO, 'tools', 'bench')


class BenchSmokeTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        functional_base.unset_openstack_environment(self)
        if BENCH not in sys.path:
            sys.path.insert(0, BENCH)
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def test_generated_orphans_are_found(self):
        from orphanbench import generate
        from orphanbench import runner

        from nova_orphans.tests.functional.fixtures import nova_db
        from nova_orphans.tests.functional.fixtures import placement

        cloud = generate.Cloud(self.tmp, 20, cells=2)
        urls = cloud.build(nova_db.schema_templates(), placement._template())
        truth = cloud.truth()
        self.assertEqual(400, truth['allocations'])
        # Every orphan reason is in the generated cloud.
        self.assertEqual(
            {'deleted_instance', 'unknown_consumer', 'evacuated_source',
             'stale_provider', 'finished_migration', 'shelved_offloaded',
             'missing_allocations'}, {o[2] for o in truth['orphans']})
        bench = runner.Bench(cloud, urls, self.tmp)
        self.addCleanup(bench.stop)
        checked = cloud.verify(bench.placement.endpoint)
        self.assertEqual(20, checked['providers_checked'])
        for tool in ('api', 'fast'):
            result = bench.run(tool, timeout=120)
            score = runner.score(truth, result['found'], tool)
            self.assertTrue(score['matches_truth'], (tool, score))
            self.assertEqual(3, result['rc'])
            self.assertGreater(result['rss_mib'], 0)
            if tool == 'api':
                self.assertGreater(result['placement_cpu'], 0)
            else:
                # Only the workers' idle polling: no request was served.
                self.assertLess(result['placement_cpu'], 0.2)
        # The audit's parser and the generator's model of its algorithm.
        self.assertTrue(runner.score(
            truth, truth['audit_expected'], 'audit')['true_positives'])
