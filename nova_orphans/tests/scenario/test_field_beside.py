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
"""``clean`` looping beside nova's own graceful-shutdown and ironic
rebalance tests: none of nova's assertions may break, and the cleaner
may change nothing (nova's tests leave no orphan).

nova's test classes run unchanged, their setUp, their tests and their
assertions, with base.ScenarioTestCase's plumbing mixed in before them
(the databases the tool reads, its nova.conf) and test_busy's Cleaner
running ``allocations clean`` in a thread from the end of setUp to the
test's end. Only one of nova's graceful-shutdown tests is run here:
each waits half a minute for a stopped service to be seen down.
"""

import fixtures

from nova.tests.functional.regressions import test_bug_1853009
from nova.tests.functional import test_graceful_shutdown

from nova_orphans.tests.scenario import base
from nova_orphans.tests.scenario import test_busy


class _PacedCleaner(test_busy.Cleaner):
    """test_busy's cleaner, a second between runs: nova's
    graceful-shutdown tests wait half a minute for a stopped service to
    be seen down, and a cleaner running flat out all that time would
    double what the test costs the suite's two cores.
    """

    def pause(self):
        self._halt.wait(1)


class _CleanBeside(base.ScenarioTestCase):
    """ScenarioTestCase's plumbing, no computes of its own, a cleaner."""

    HOSTS = ()

    def setUp(self):
        super().setUp()
        self.cleaner = _PacedCleaner(
            self.conf_file, self.useFixture(fixtures.TempDir()).path)
        self.cleaner.start()
        # Before nova's services stop (cleanups run last added first).
        self.addCleanup(self.cleaner_changed_nothing)

    def cleaner_changed_nothing(self):
        self.cleaner.stop()
        self.assertEqual([], self.cleaner.errors)
        self.assertTrue(self.cleaner.codes)
        self.assertEqual([], self.cleaner.applied())


def _only(cls, *names):
    """``cls``'s tests but ``names`` made not tests (not callable)."""
    for name in dir(cls):
        if name.startswith('test') and name not in names:
            setattr(cls, name, None)
    return cls


class GracefulShutdownBesideCleanTest(
        _CleanBeside, test_graceful_shutdown.TestComputeGracefulShutdown):

    compute_driver = (
        test_graceful_shutdown.TestComputeGracefulShutdown.compute_driver)


_only(GracefulShutdownBesideCleanTest,
      'test_live_migration_source_compute_graceful_shutdown')


class IronicRebalanceBesideCleanTest(
        _CleanBeside,
        test_bug_1853009.NodeRebalanceDeletedComputeNodeRaceTestCase):

    compute_driver = (test_bug_1853009.
                      NodeRebalanceDeletedComputeNodeRaceTestCase.
                      compute_driver)

    # nova deletes a node's provider between the cleaner's listing of
    # providers and its read of that provider's allocations: gone
    # (placement_api.gone_if_missing), where it once ended the run with
    # 255.
