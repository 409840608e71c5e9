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
"""The placement database reader's use of a second process, and what
that process reads and answers, here in this process.

The second process itself, a real interpreter: the functional suite's
test_second_process.
"""

import contextlib
import operator
import os
import sqlite3
from unittest import mock

import fixtures
from oslotest import base

from nova_orphans import exception
from nova_orphans.readers import placement_db
from nova_orphans.readers import placement_rows
from nova_orphans.readers import second_process

SECRET_URL = 'mysql+pymysql://nova:s3cr3t@127.0.0.1:1/placement'


class RunTestCase(base.BaseTestCase):
    """What is said before any process is started."""

    def test_unknown_interpreter_is_unavailable(self):
        with mock.patch.object(second_process.sys, 'executable', ''):
            e = self.assertRaises(second_process.Unavailable,
                                  second_process.run, operator.add, (2, 3))
        self.assertEqual('no Python interpreter to start', str(e))


def reader():
    """A reader of a placement database nothing serves, which has three
    providers.
    """
    found = placement_db.PlacementDBReader(SECRET_URL, retry_interval=0)
    found._ids = {'rp-%d' % i: i for i in range(3)}
    return found


class PlacementReaderTestCase(base.BaseTestCase):
    """The reader's use of it (the reads themselves: test_fast_mode)."""

    def setUp(self):
        super().setUp()
        self.reader = reader()

    def test_reads_in_background_from_the_threshold(self):
        for threshold, expected in ((3, True), (4, False), (None, False)):
            with mock.patch.object(placement_db, 'SECOND_PROCESS_FROM',
                                   threshold):
                self.assertEqual(expected, self.reader.reads_in_background)

    def test_scoped_read_stays_here(self):
        with mock.patch.object(placement_db, 'SECOND_PROCESS_FROM', 1), \
                mock.patch.object(second_process, 'run') as run:
            self.assertRaises(exception.PlacementDatabaseUnreadable,
                              self.reader.allocations, {'rp-0'})
        run.assert_not_called()

    def test_cancelled_read_is_none(self):
        with mock.patch.object(placement_db, 'SECOND_PROCESS_FROM', 1), \
                mock.patch.object(second_process, 'run',
                                  return_value=None) as run:
            self.assertIsNone(self.reader.allocations(
                set(self.reader._ids), cancelled=lambda: True))
        self.assertEqual(1, run.call_count)


class AllocationColumnsTestCase(base.BaseTestCase):
    """What the second process reads and answers, run here on a file
    with placement's allocations table (its columns only).
    """

    def _columns(self, rows):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'placement.sqlite')
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.execute('CREATE TABLE allocations (id INTEGER PRIMARY KEY, '
                         'resource_provider_id INTEGER, consumer_id '
                         'VARCHAR(36), resource_class_id INTEGER, used '
                         'INTEGER)')
            conn.executemany(
                'INSERT INTO allocations (resource_provider_id, '
                'consumer_id, resource_class_id, used) VALUES (?, ?, ?, ?)',
                rows)
            conn.commit()
        columns, error = placement_rows.allocation_columns(
            'sqlite:///' + path, {})
        self.assertIsNone(error)
        return columns

    def test_runs_in_columns_consumers_joined(self):
        consumers, rp_ids, key_at, keys = self._columns([
            (1, 'a', 0, 2), (1, 'a', 1, 512), (2, 'a', 2, 10),
            (1, 'b', 0, 2), (1, 'b', 1, 512),
            # Not consecutive: a run of its own (merged by build).
            (1, 'a', 2, 5)])
        self.assertEqual('a\na\nb\na', consumers)
        self.assertEqual([1, 2, 1, 1], list(rp_ids))
        self.assertEqual([0, 1, 0, 2], list(key_at))
        self.assertEqual([(0, 2, 1, 512), (2, 10), (2, 5)], keys)
        allocations = placement_rows.build(
            (consumers.split('\n'), rp_ids, key_at, keys),
            {0: 'VCPU', 1: 'MEMORY_MB', 2: 'DISK_GB'},
            {'rp1': 1, 'rp2': 2})
        self.assertEqual(
            [('a', 'rp1', {'VCPU': 2, 'MEMORY_MB': 512, 'DISK_GB': 5}),
             ('a', 'rp2', {'DISK_GB': 10}),
             ('b', 'rp1', {'VCPU': 2, 'MEMORY_MB': 512})],
            [(a.consumer, a.provider, a.resources) for a in allocations])
        self.assertEqual({'a', 'b'}, set(allocations.by_consumer))

    def test_consumer_with_a_newline_goes_as_a_list(self):
        consumers, _rp_ids, _key_at, _keys = self._columns([
            (1, 'a', 0, 1), (1, 'b\nc', 0, 1)])
        self.assertEqual(['a', 'b\nc'], consumers)
