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
"""tools/test-workers.py and the worker files it wrote for the suites."""

import datetime
import io
import os
import re

import fixtures
from oslotest import base
from stestr import scheduler
import subunit
import yaml

from nova_orphans.tests import programs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
# Worker groups: the functional and scenario tests also wait (for servers
# to start, tokens to expire, nova's polls), and a third worker keeps both
# cores busy meanwhile.
SUITES = {'nova_orphans/tests/functional': 3, 'nova_orphans/tests/scenario': 3}


tool = programs.tool('tools', 'test-workers.py')
T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def stream(*tests):
    """A subunit v2 stream of (id, status, seconds) runs."""
    out = io.BytesIO()
    result = subunit.StreamResultToBytes(out)
    for test_id, status, seconds in tests:
        result.status(test_id=test_id, test_status='inprogress',
                      timestamp=T0)
        result.status(test_id=test_id, test_status=status,
                      timestamp=T0 + datetime.timedelta(seconds=seconds))
    out.seek(0)
    return out


class ToolTestCase(base.BaseTestCase):

    PKG = 'nova_orphans.tests.scenario.'

    def test_durations_at_their_longest_and_skipped_tests_none(self):
        self.assertEqual(
            {'a.T.test_1': 3.0, 'a.T.test_2': 1.5, 'a.T.test_3': 9.0,
             'a.U.test_2': None},
            tool.durations(stream(('a.T.test_1', 'success', 2),
                                  ('a.T.test_2', 'success', 1.5),
                                  ('a.T.test_1', 'success', 3),
                                  ('a.T.test_3', 'fail', 9),
                                  ('a.U.test_2', 'skip', 0))))

    def test_estimate_by_method_name_else_median(self):
        self.assertEqual(
            {'a.T.test_1': 2.0, 'a.T.test_2': 4.0, 'a.T.test_3': 9.0,
             'a.U.test_1': 2.0, 'a.U.test_4': 4.0},
            tool.estimate({'a.T.test_1': 2.0, 'a.T.test_2': 4.0,
                           'a.T.test_3': 9.0, 'a.U.test_1': None,
                           'a.U.test_4': None}))

    def test_partition_longest_first_to_the_least_loaded(self):
        times = {'a': 10, 'b': 7, 'c': 5, 'd': 4, 'e': 1}
        self.assertEqual([(14.0, ['a', 'd']), (13.0, ['b', 'c', 'e'])],
                         tool.partition(times, 2))

    def test_a_class_sharing_what_it_starts_stays_together(self):
        here = __name__ + '.'
        times = {here + '_SharesACloud.test_1': 3.0,
                 here + '_SharesACloud.test_2': 2.0,
                 here + '_InheritsTheCloud.test_1': 1.0,
                 here + '_SharesNothing.test_1': 4.0,
                 here + '_SharesNothing.test_2': 2.5,
                 here + '_NotImportable.test_1': 1.5}
        self.assertEqual({
            here + '_SharesACloud': (5.0, [here + '_SharesACloud.test_1',
                                           here + '_SharesACloud.test_2']),
            here + '_InheritsTheCloud': (
                1.0, [here + '_InheritsTheCloud.test_1']),
            here + '_SharesNothing.test_1': (
                4.0, [here + '_SharesNothing.test_1']),
            here + '_SharesNothing.test_2': (
                2.5, [here + '_SharesNothing.test_2']),
            here + '_NotImportable': (1.5, [here + '_NotImportable.test_1']),
        }, tool.units(times))

    def partitions(self, path, ids):
        return scheduler.generate_worker_partitions(ids, path)

    def test_previous_file_counts_for_the_tests_still_here(self):
        """--previous: an earlier worker file's durations count for the
        tests still in the tree, at their longest with the stream's; a
        test whose module, class or method is gone is left out.
        """
        here = __name__ + '.'
        kept = here + 'ToolTestCase.test_partition_longest_first_to_the_' \
                      'least_loaded'
        made = here + 'MadeByAFunction.check'
        new = here + 'ToolTestCase.test_estimate_by_method_name_else_median'
        recorded = {kept: 6.0, made: 4.0,
                    # Set to None by the function: not a test there.
                    here + 'MadeByAFunction.gone': 3.0,
                    here + 'ToolTestCase.test_removed': 2.0,
                    'nova_orphans.tests.unit.test_removed.T.test_1': 1.0}
        tmp = self.useFixture(fixtures.TempDir()).path
        old = os.path.join(tmp, 'old.yaml')
        with open(old, 'w') as f:
            f.write(tool.render('nova_orphans/tests/unit',
                                [(16.0, sorted(recorded))], recorded))
        self.assertEqual(recorded, tool.previous(old))
        path = os.path.join(tmp, 'workers.yaml')
        with fixtures.MonkeyPatch('sys.stdin', io.TextIOWrapper(stream(
                (new, 'success', 5.0), (kept, 'success', 1.0)))), \
                fixtures.MonkeyPatch('sys.stdout', io.StringIO()):
            self.assertEqual(0, tool.main(
                ['nova_orphans/tests/unit', '--workers', '1', '--previous',
                 old, '--output', path]))
        self.assertEqual({kept: 6.0, made: 4.0, new: 5.0},
                         tool.previous(path))

    def test_stestr_runs_each_test_once_and_a_new_one_apart(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        times = {self.PKG + 'test_a.A.test_1': 10.0,
                 self.PKG + 'test_a.A.test_2': 4.0,
                 self.PKG + 'test_b.B.test_1': 5.0,
                 self.PKG + 'test_b.B.test_10': 3.0}
        path = os.path.join(tmp, 'workers.yaml')
        out = io.StringIO()
        with fixtures.MonkeyPatch('sys.stdin', io.TextIOWrapper(stream(
                *((i, 'success', s) for i, s in times.items())))), \
                fixtures.MonkeyPatch('sys.stdout', out):
            self.assertEqual(0, tool.main(
                ['nova_orphans/tests/scenario/', '--output', path]))
        # A class's tests together (these cannot be imported: they
        # might share what the class starts).
        self.assertEqual('worker 1: 2 tests, 14 s\n'
                         'worker 2: 2 tests, 8 s\n', out.getvalue())
        new = self.PKG + 'test_b.B.test_100'
        # test_b.B.test_1 is a prefix of the others: anchored regexes.
        self.assertEqual(
            [[self.PKG + 'test_a.A.test_1', self.PKG + 'test_a.A.test_2'],
             [self.PKG + 'test_b.B.test_1', self.PKG + 'test_b.B.test_10'],
             [new]],
            self.partitions(path, sorted(times) + [new]))
        # Nothing new: the catch-all is empty and stestr drops it.
        self.assertEqual(2, len(self.partitions(path, sorted(times))))


# Test classes without tests, for ToolTestCase: a class that starts
# something for all its tests (as the functional front-end tests'
# cloud), one that inherits that, and one whose tests share nothing.
class _SharesACloud(base.BaseTestCase):

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()


class _InheritsTheCloud(_SharesACloud):
    pass


class _SharesNothing(base.BaseTestCase):
    pass


# A class made by a function, as base.on_mariadb makes them: its tests'
# ids name it MadeByAFunction, the module _MadeByAFunction.
_MadeByAFunction = type('MadeByAFunction', (base.BaseTestCase,), {
    '__module__': __name__, 'check': lambda self: None, 'gone': None})


class CheckedInTestCase(base.BaseTestCase):
    """Each suite's workers.yaml names a test at most once, every regex
    anchored, each in a module the suite has, and ends with the group
    for every other test.
    """

    def test_worker_files(self):
        for suite, workers in SUITES.items():
            path = os.path.join(ROOT, suite, 'workers.yaml')
            with open(path) as f:
                groups = [g['worker'] for g in yaml.safe_load(f)]
            package = suite.replace('/', '.')
            *named, (rest,) = groups
            self.assertEqual(workers, len(named), path)
            ids = []
            for group in named:
                self.assertTrue(group, path)
                for regex in group:
                    m = re.fullmatch(r'\^(.*)\$', regex)
                    self.assertIsNotNone(m, regex)
                    test_id = m.group(1).replace('\\', '')
                    self.assertTrue(re.match(regex, test_id), regex)
                    ids.append(test_id)
            self.assertEqual(len(ids), len(set(ids)), path)
            self.assertTrue(all(i.startswith(package + '.') for i in ids))
            # A module moved or removed: its tests would run in the last
            # group, measured as nothing. (The file, not an import: the
            # scenario suite's package imports nova.)
            modules = {i.rsplit('.', 2)[0] for i in ids}
            self.assertEqual([], sorted(
                m for m in modules if not os.path.isfile(
                    os.path.join(ROOT, *m.split('.')) + '.py')), path)
            new = package + '.test_new.NewTestCase.test_new'
            self.assertEqual([[new]], scheduler.generate_worker_partitions(
                ids + [new], path)[len(named):])
