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
"""The second process itself: a real interpreter, no database (what the
reader asks of it: the unit tests' test_second_process).
"""

import importlib
import math
import operator
import os
import time
from unittest import mock

import fixtures
from oslotest import base

from nova_orphans import exception
from nova_orphans.readers import placement_db
from nova_orphans.readers import second_process
from nova_orphans.tests.unit.readers import test_second_process


class RunTestCase(base.BaseTestCase):

    def test_answer(self):
        self.assertEqual(5, second_process.run(operator.add, (2, 3)))

    def test_large_answer_passes_both_pipes(self):
        # More than a pipe holds, on stdout.
        self.assertEqual('x' * (1 << 22),
                         second_process.run(operator.mul, ('x', 1 << 22)))

    def test_failure_is_unavailable_with_its_last_line(self):
        e = self.assertRaises(second_process.Unavailable,
                              second_process.run, math.sqrt, (-1,))
        self.assertEqual('it ended with exit code 1: ValueError: math '
                         'domain error', str(e))

    def test_imports_nothing_from_where_it_was_started(self):
        here = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(here, 'nova_orphans_probe.py'), 'w') as f:
            f.write('PLANTED = True\n')
        self.addCleanup(os.chdir, os.getcwd())
        os.chdir(here)
        self.useFixture(fixtures.EnvironmentVariable('PYTHONPATH', here))
        e = self.assertRaises(second_process.Unavailable,
                              second_process.run, importlib.import_module,
                              ('nova_orphans_probe',))
        self.assertEqual("it ended with exit code 1: ModuleNotFoundError: "
                         "No module named 'nova_orphans_probe'", str(e))

    def test_no_interpreter_is_unavailable(self):
        with mock.patch.object(second_process.sys, 'executable',
                               '/nonexistent/python3'):
            e = self.assertRaises(second_process.Unavailable,
                                  second_process.run, operator.add, (2, 3))
        self.assertIn('could not start /nonexistent/python3: ', str(e))

    def test_cancelled_returns_none_and_ends_it(self):
        processes = []
        real = second_process.subprocess.Popen

        def popen(*args, **kwargs):
            processes.append(real(*args, **kwargs))
            return processes[-1]

        with mock.patch.object(second_process.subprocess, 'Popen', popen):
            self.assertIsNone(second_process.run(
                time.sleep, (60,), cancelled=lambda: True))
        # Killed, not waited for (its 60 s sleep would have ended it
        # with 0), and reaped: no process left reading for nobody.
        self.assertEqual(-9, processes[0].returncode)


class PlacementReaderTestCase(base.BaseTestCase):
    """The reader's read in the second process."""

    def test_database_error_there_is_unreadable_without_password(self):
        reader = test_second_process.reader()
        with mock.patch.object(placement_db, 'SECOND_PROCESS_FROM', 1):
            e = self.assertRaises(
                exception.PlacementDatabaseUnreadable,
                reader.allocations, set(reader._ids))
        self.assertNotIn('s3cr3t', str(e))
        self.assertIn('mysql+pymysql://nova:***@127.0.0.1:1/placement',
                      str(e))
        self.assertIn("Can't connect", str(e))
