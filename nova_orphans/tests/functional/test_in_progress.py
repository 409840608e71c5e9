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
"""What nova is still working on is never repaired.

The state is what nova's confirm leaves between its database write and
its placement write: the migration ``confirmed``, the instance ACTIVE on
the destination, the migration still holding the source. Whether nova
is done is read from nova's rows (updated_at of the instance and its
migrations, the latest instance action and its events) by both modes,
and again right before a write.
"""

import datetime
import json
import os
from unittest import mock

from nova_orphans.readers import nova_db as nova_db_reader
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import nova_db


def _ago(**kwargs):
    return (datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None) - datetime.timedelta(**kwargs))


class InProgressTestCase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.host1 = self.add_node('host1')
        self.host2 = self.add_node('host2')
        self.fast_conf = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'fast.conf'), self.placement.endpoint,
            extra={'nova_orphans': {'state_path': self.state_path},
                   'placement_database': {
                       'connection': self.placement.db_url}})

    def confirmed(self, changed_at=None):
        """A resize nova has confirmed in its database, not in placement."""
        vm = self.nova.add_instance('cell1', host='host2', node='host2',
                                    changed_at=changed_at)
        mig = self.nova.add_migration(
            'cell1', vm, migration_type='resize', status='confirmed',
            source_compute='host1', source_node='host1',
            dest_compute='host2', dest_node='host2', changed_at=changed_at)
        self.allocate(mig, self.host1)
        self.allocate(vm, self.host2)
        return vm, mig

    def _allocations(self, consumer):
        return {rp: body['resources'] for rp, body in
                self.placement.get_allocations(consumer)[
                    'allocations'].items()}

    def conf(self, fast, **orphans):
        if not orphans:
            return self.fast_conf if fast else self.conf_file
        extra = {'nova_orphans': dict(state_path=self.state_path,
                                      **orphans)}
        if fast:
            extra['placement_database'] = {
                'connection': self.placement.db_url}
        return self.nova.write_nova_conf(
            os.path.join(self.tmp, 'grace-%s.conf' % fast),
            self.placement.endpoint, extra=extra)

    def listed(self, conf_file, *argv):
        rc, out, err = self.manage('allocations', 'list', '--format',
                                   'json', *argv, conf_file=conf_file)
        return rc, {(r['consumer'], r['resource_provider']): (
            r['reason'], r['action']) for r in json.loads(out)}, err

    def assertBothModes(self, expected_rc, expected, *argv, **orphans):
        for fast in (False, True):
            rc, rows, err = self.listed(self.conf(fast, **orphans), *argv)
            self.assertEqual((expected_rc, expected), (rc, rows),
                             'fast mode' if fast else 'API mode')

    def test_changed_within_the_grace_period(self):
        vm, mig = self.confirmed(changed_at=_ago(seconds=30))
        self.assertBothModes(0, {
            (mig, self.host1): ('in_progress', 'none'),
            (vm, self.host2): ('active_instance', 'none')}, '--all')
        self.assertBothModes(0, {})
        self.assertBothModes(0, {(mig, self.host1): ('in_progress', 'none')},
                             '--reason', 'in_progress')

    def test_grace_period_is_the_option(self):
        vm, mig = self.confirmed(changed_at=_ago(seconds=30))
        self.assertBothModes(
            3, {(mig, self.host1): ('finished_migration', 'delete_consumer')},
            grace_period='10')
        self.assertBothModes(
            3, {(mig, self.host1): ('finished_migration', 'delete_consumer')},
            grace_period='0')

    def test_unfinished_event_of_the_latest_action(self):
        # Long past any grace period, but compute_confirm_resize has not
        # returned: nova has yet to delete the source allocation.
        vm, mig = self.confirmed()
        long_ago = _ago(hours=2)
        self.nova.add_instance_action('cell1', vm, 'resize', started_at=(
            long_ago - datetime.timedelta(minutes=5)), events=[
            ('compute_resize_instance', long_ago - datetime.timedelta(
                minutes=5), long_ago - datetime.timedelta(minutes=4))])
        self.nova.add_instance_action(
            'cell1', vm, 'confirmResize', started_at=long_ago,
            events=[('compute_confirm_resize', long_ago, None)])
        self.assertBothModes(0, {
            (mig, self.host1): ('in_progress', 'none'),
            (vm, self.host2): ('active_instance', 'none')}, '--all')
        for fast in (False, True):
            rc, out, err = self.manage(
                'allocations', 'clean', '--format', 'json',
                conf_file=self.conf(fast))
            self.assertEqual((0, []), (rc, json.loads(out)), err)
        self.assertEqual({self.host1: base.FLAVOR},
                         self._allocations(mig))

    def test_the_time_named_is_the_one_the_compute_api_shows(self):
        # conductor saves a finished event (its updated_at) after the
        # compute host took its finish_time, a second later under load.
        # The compute API shows only the finish_time: both front ends
        # name it.
        vm, mig = self.confirmed(changed_at=_ago(hours=2))
        finished = _ago(seconds=30).replace(microsecond=900000)
        self.nova.add_instance_action(
            'cell1', vm, 'confirmResize', started_at=finished,
            events=[('compute_confirm_resize', finished, finished)],
            saved_after=datetime.timedelta(seconds=1))
        for fast in (False, True):
            rc, out, err = self.manage(
                'allocations', 'list', '--format', 'json', '--reason',
                'in_progress', conf_file=self.conf(fast))
            self.assertEqual(
                (0, [(mig, 'nova changed the instance, one of its '
                      'migrations or its latest action at %s UTC, within '
                      '[nova_orphans] grace_period of this run. Run again '
                      'once it settles.' % finished.isoformat(
                          sep=' ', timespec='seconds'))]),
                (rc, [(r['consumer'], r['details'])
                      for r in json.loads(out)]), err)

    def test_an_older_action_left_unfinished_does_not_count(self):
        vm, mig = self.confirmed()
        long_ago = _ago(hours=2)
        self.nova.add_instance_action('cell1', vm, 'stop', started_at=(
            long_ago - datetime.timedelta(minutes=5)), events=[
            ('compute_stop_instance', long_ago, None)])
        self.nova.add_instance_action(
            'cell1', vm, 'confirmResize', started_at=long_ago,
            events=[('compute_confirm_resize', long_ago, long_ago)])
        self.assertBothModes(
            3, {(mig, self.host1): ('finished_migration', 'delete_consumer')})

    def test_repair_reverifies_activity_right_before_the_write(self):
        # Settled when listed; nova starts confirming (an event starts)
        # between the audit and the repair's fresh read.
        vm, mig = self.confirmed()
        original = nova_db_reader.NovaDBReader.read_consumers

        def nova_starts_meanwhile(reader, base_snapshot, consumers):
            self.nova.add_instance_action(
                'cell1', vm, 'confirmResize', started_at=_ago(seconds=1),
                events=[('compute_confirm_resize', _ago(seconds=1), None)])
            return original(reader, base_snapshot, consumers)

        with mock.patch.object(nova_db_reader.NovaDBReader,
                               'read_consumers', nova_starts_meanwhile):
            rc, out, err = self.manage('allocations', 'clean', '--format',
                                       'json')
        self.assertEqual(3, rc, err)
        rows = json.loads(out)
        self.assertEqual(
            [(mig, 'skipped: no longer delete_consumer: now in_progress')],
            [(r['consumer'], r['outcome']) for r in rows])
        self.assertEqual({self.host1: base.FLAVOR},
                         self._allocations(mig))

    def test_finished_long_ago_is_still_repaired(self):
        vm, mig = self.confirmed(changed_at=_ago(seconds=301))
        self.assertEqual(nova_db.SETTLED_FOR, datetime.timedelta(hours=1))
        for fast in (False, True):
            rc, rows, err = self.listed(self.conf(fast))
            self.assertEqual(
                (3, {(mig, self.host1): ('finished_migration',
                                         'delete_consumer')}), (rc, rows))
        rc, out, err = self.manage('allocations', 'clean', '--format',
                                   'json')
        self.assertEqual(4, rc, err)
        self.assertEqual({}, self._allocations(mig))
