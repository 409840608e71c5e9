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
"""Servers that are gone, or hold no host, and still hold allocations."""

import io
import json
import os
from unittest import mock

import fixtures
from nova.cmd import manage as nova_manage
from nova.tests.functional.api import client

from nova_orphans.tests.scenario import comparison
from nova_orphans.tests.scenario import cycle

FLAVOR = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
# placement's DELETE /allocations/{consumer} not reaching placement.
DELETE_LOST = mock.patch('nova.scheduler.client.report.SchedulerReportClient.'
                         'delete_allocation_for_instance')


class DeletedServerTest(cycle.CycleTestCase):

    HOSTS = ('host1', 'host2')

    def setUp(self):
        super().setUp()
        # Booted first, so vm1's instances.id is not 1 (see NOTES.md).
        self.vm0 = self.boot('vm0', 'host2')
        self.vm1 = self.boot('vm1', 'host1')
        self.rp1, self.rp2 = self.rp_uuids['host1'], self.rp_uuids['host2']
        self.live = self.row(self.vm0['id'], self.rp2, 'host2',
                             'active_instance', 'none', FLAVOR)

    def nova_manage_db(self, command, **kwargs):
        out = io.StringIO()
        with fixtures.MonkeyPatch('sys.stdout', out):
            rc = getattr(nova_manage.DbCommands(), command)(**kwargs)
        return rc, out.getvalue()

    @comparison.scenario('sql_force_deleted')
    def test_forced_to_deleted_in_sql(self):
        """Seed 003: an ERROR server forced to deleted with an UPDATE.

        ``deleted=1`` is not ``deleted=id``: the API says 404, and
        nova's periodic "does not know what to do" with the allocation.
        """
        vm1 = self.vm1['id']
        self.admin_api.post_server_action(
            vm1, {'os-resetState': {'state': 'error'}})
        self.force_delete_in_sql(vm1)
        self.assertEqual(404, self.api.api_get(
            '/servers/%s' % vm1, check_response_status=[404]).status)
        self._run_periodics()
        self.run_cycle([
            self.row(vm1, self.rp1, 'host1', 'deleted_instance',
                     'delete_consumer', FLAVOR),
            self.live,
        ])

    def test_orphan_counted_in_quota_until_clean(self):
        """With cores counted from placement, the orphan of a server
        forced to deleted in SQL still takes its project's cores: a boot
        is refused for quota until ``clean --project`` repairs it.
        """
        self.flags(count_usage_from_placement=True, group='quota')
        # vm0 and vm1 take both cores the project may use.
        self.flags(cores=2, group='quota')
        vm1, project = self.vm1['id'], self.api.project_id
        self.admin_api.post_server_action(
            vm1, {'os-resetState': {'state': 'error'}})
        self.force_delete_in_sql(vm1)
        refused = self.assertRaises(client.OpenStackApiException,
                                    self.boot, 'vm2', 'host1')
        self.assertEqual(403, refused.response.status_code)
        self.assertIn('Quota exceeded for cores', str(refused))

        orphan = self.row(vm1, self.rp1, 'host1', 'deleted_instance',
                          'delete_consumer', FLAVOR)
        self.assertRows([orphan], self.list_allocations('--project',
                                                        project))
        self.assertEqual([], self.list_allocations('--project', 'other'))
        rc, out = self.run_manage('allocations', 'list', '--group-by',
                                  'project', '--format', 'json')
        self.assertEqual((3, [{'project_id': project, 'consumers': 1,
                               'allocations': 1, 'resources': FLAVOR}]),
                         (rc, json.loads(out)))
        # The same from the compute API (which sees the server deleted).
        with cycle._fresh_cells():
            osc_rc, osc_out, err = self.openstack(
                'allocation', 'orphan', 'list', '--group-by', 'project',
                '-f', 'json')
        self.assertEqual((rc, json.loads(out)),
                         (osc_rc, json.loads(osc_out)), err)

        journal = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'journal.jsonl')
        rc, out = self.run_manage('allocations', 'clean', '--project',
                                  project, '--journal', journal, '--format',
                                  'json')
        self.assertEqual(4, rc, out + self.manage_stderr)
        self.assertEqual([(vm1, self.rp1, 'done')], [
            (r['consumer'], r['resource_provider'], r['outcome'])
            for r in json.loads(out)])
        self.boot('vm2', 'host1')

    @comparison.scenario('deleted_host_down', 'deleted_archived',
                         'deleted_purged')
    def test_deleted_then_archived_then_purged(self):
        """A server deleted while its host was down; the DELETE was lost.

        The API deletes it locally (``deleted=id``) and asks placement
        to drop its allocation, which does not happen. The same orphan
        is then seen after ``nova-manage db archive_deleted_rows``
        (the instance is only in shadow tables, its mapping is gone),
        and after ``nova-manage db purge`` (no trace of it at all).
        """
        vm1 = self.vm1['id']
        service = self.force_down('host1')
        with DELETE_LOST:
            self.api.delete_server(vm1)
            self._wait_until_deleted(self.vm1)
        row = self.instance_row(vm1)
        self.assertEqual((row.id, 'deleted'), (row.deleted, row.vm_state))
        orphan = self.row(vm1, self.rp1, 'host1', 'deleted_instance',
                          'delete_consumer', FLAVOR)
        self.run_cycle([orphan, self.live], reset=True,
                       key='deleted_host_down')

        rc, out = self.nova_manage_db('archive_deleted_rows', verbose=True,
                                      until_complete=True, all_cells=True)
        self.assertEqual(1, rc, out)   # 1: some rows were archived
        self.assertIsNone(self.instance_row(vm1))
        self.assertIsNotNone(self.instance_row(vm1, 'shadow_instances'))
        # Now even the returning host cannot clean it up: nova's
        # periodic finds no instance and skips the allocation.
        self.admin_api.put_service(service['id'], {'forced_down': False})
        self.restart_compute_service(self.computes['host1'])
        self._run_periodics()
        self.run_cycle([orphan, self.live], reset=True,
                       key='deleted_archived')

        rc, out = self.nova_manage_db('purge', purge_all=True,
                                      all_cells=True)
        self.assertEqual(0, rc, out)
        self.assertIsNone(self.instance_row(vm1, 'shadow_instances'))
        orphan.update(reason='unknown_consumer', consumer_type='unknown',
                      instance=None)
        self.run_cycle([orphan, self.live], key='deleted_purged')

    @comparison.scenario('shelve_offloaded')
    def test_shelve_offloaded(self):
        """Shelve-offload frees the host; that DELETE is lost."""
        vm1 = self.vm1['id']
        with mock.patch('nova.compute.resource_tracker.ResourceTracker.'
                        'delete_allocation_for_shelve_offloaded_instance'):
            self.api.post_server_action(vm1, {'shelve': {}})
            self._wait_for_server_parameter(
                self.vm1, {'status': 'SHELVED_OFFLOADED',
                           'OS-EXT-SRV-ATTR:host': None})
        self._run_periodics()
        self.run_cycle([
            self.row(vm1, self.rp1, 'host1', 'shelved_offloaded',
                     'delete_consumer', FLAVOR),
            self.live,
        ])
