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
"""``openstack allocation orphan`` against nova's real compute API.

``openstack`` (python-openstackclient's shell, with this plugin and
osc-placement both loaded) runs in-process against the harness: placement
through keystoneauth's ``admin_token`` plugin, nova's API through
``compute_endpoint_override`` and a small WSGI front that turns the token
into the identity headers nova's API fixture expects. Its JSON must be
what ``nova-orphans-manage``, reading nova's databases, prints for the
same cloud; the only key that differs is ``cell``, which the compute API
does not expose (it is null).
"""

import json
import os

import fixtures

from nova.tests import fixtures as nova_fixtures

from nova_orphans.tests.functional.fixtures import zun as zun_fixture
from nova_orphans.tests.scenario import base
from nova_orphans.tests.scenario.base import uuids
from nova_orphans.tests.scenario import osc


# A service project (Zun's containers' users' project, say): an id.
ZUN_PROJECT = '5e1f0c2b9a7d4e3f8c6b1a0d9e8f7a6b'


class OpenStackPluginTestBase(osc.OpenStackClientMixin,
                              base.ScenarioTestCase):

    def setUp(self):
        super().setUp()
        self.setup_openstack()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def assertSameRows(self, manage_rows, osc_rows):
        """Equal, but the compute API cannot name cells: ``cell`` is null."""
        self.assertTrue(any(row['cell'] for row in manage_rows))
        self.assertEqual([None] * len(osc_rows),
                         [row['cell'] for row in osc_rows])
        self.assertEqual([dict(row, cell=None) for row in manage_rows],
                         osc_rows)


class ListTest(OpenStackPluginTestBase):
    """Orphans of four kinds, and live allocations, on three hosts."""

    def setUp(self):
        super().setUp()
        self.resources = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
        rps = self.rp_uuids
        # evacuated_source on host1 (plus the live copy on host2).
        self.evacuated = self._boot_and_check_allocations(self.flavor,
                                                          'host1')
        self.force_down('host1')
        self._evacuate_server(self.evacuated,
                              extra_post_args={'host': 'host2'},
                              expected_host='host2')
        # The API shows the server moved before host2 records the end of
        # its rebuild event: until then the source's allocation is in
        # progress for one reason (the running event), afterwards for
        # another (the grace period). Two front ends run one after the
        # other must see the same one.
        self._wait_for_instance_action_event(
            self.evacuated, 'evacuate', 'compute_rebuild_instance',
            'success')
        # A cold migration awaiting confirmation: the migration consumer
        # holds host3, the server host2 (active_migration, not orphans).
        self.migrated = self._boot('host3')
        self._migrate_server(self.migrated, host='host2')
        # deleted_instance: allocations put back after the delete.
        deleted = self._boot('host3')
        self._delete_server(deleted)
        self._put_allocations(deleted['id'], rps['host3'])
        # unknown_consumer: nova never heard of it.
        self._put_allocations(uuids.stranger, rps['host3'])
        self.deleted = deleted

    def _boot(self, host):
        return self._create_server(flavor_id=self.flavor['id'],
                                   networks='none', az='nova:%s' % host)

    def _put_allocations(self, consumer, rp_uuid,
                         project=nova_fixtures.PROJECT_ID):
        body = {'allocations': {rp_uuid: {'resources': self.resources}},
                'project_id': project,
                'user_id': 'admin', 'consumer_generation': None}
        resp = self.placement.put('/allocations/%s' % consumer, body,
                                  version='1.28')
        self.assertEqual(204, resp.status, resp.content)

    def test_just_evacuated_is_in_progress_from_both_front_ends(self):
        # nova recorded the evacuation moments ago: both front ends wait.
        rows = self.list_allocations('--all')
        self.assertEqual(
            ('in_progress', 'none'),
            {(r['consumer'], r['host']): (r['reason'], r['action'])
             for r in rows}[(self.evacuated['id'], 'host1')])
        self.assertSameRows(rows, self.osc_json('allocation', 'orphan',
                                                'list', '--all'))
        self.assertNotIn(self.evacuated['id'], {
            r['consumer'] for r in self.osc_json('allocation', 'orphan',
                                                 'clean')})

    def test_json_equals_manage(self):
        self.age_nova()
        for args in ((), ('--all',), ('--host', 'host3'),
                     ('--resource-provider', self.rp_uuids['host1'], '--all'),
                     ('--reason', 'unknown_consumer', '--reason',
                      'active_migration')):
            with self.subTest(args=args):
                rows = self.list_allocations(*args)
                self.assertSameRows(rows, self.osc_json(
                    'allocation', 'orphan', 'list', *args))

        rows = self.list_allocations()
        self.assertEqual(
            {(self.evacuated['id'], 'host1', 'evacuated_source'),
             (self.deleted['id'], 'host3', 'deleted_instance'),
             (uuids.stranger, 'host3', 'unknown_consumer')},
            {(r['consumer'], r['host'], r['reason']) for r in rows})
        self.assertIn('active_migration', {
            r['reason'] for r in self.list_allocations('--all')})

    def test_clean_and_restore(self):
        self.age_nova()
        before = self.osc_json('allocation', 'orphan', 'list', '--all')
        journal = os.path.join(self.tmp, 'journal.jsonl')

        dry = self.osc_json('allocation', 'orphan', 'clean', '--dry-run')
        self.assertEqual(3, len(dry))
        self.assertEqual({'skipped: dry run'}, {r['outcome'] for r in dry})
        self.assertFalse(os.path.exists(journal))

        done = self.osc_json('allocation', 'orphan', 'clean', '--journal',
                             journal)
        self.assertEqual({'done'}, {r['outcome'] for r in done})
        self.assertEqual([], self.osc_json('allocation', 'orphan', 'list'))
        self.assertEqual([], self.list_allocations())
        self.assertEqual({self.rp_uuids['host2']: self.resources},
                         self.get_allocations(self.evacuated['id']))

        restored = self.osc_json('allocation', 'orphan', 'restore',
                                 '--journal', journal)
        self.assertEqual({'done'}, {r['outcome'] for r in restored})
        self.assertEqual(before, self.osc_json('allocation', 'orphan',
                                               'list', '--all'))

    def test_foreign_project_kept_by_clean_in_both_front_ends(self):
        # Zun with host_shared_with_nova: a container's allocation on
        # nova's own node, written straight to placement under the
        # container's uuid and its project, with no consumer type. Nova
        # has no trace of it, as of the stranger next to it.
        self.age_nova()
        self._put_allocations(uuids.container, self.rp_uuids['host3'],
                              project=ZUN_PROJECT)
        foreign = ('--foreign-project', ZUN_PROJECT)
        kept = ('unmanaged_consumer', 'none')
        rows = self.osc_json('allocation', 'orphan', 'list', '--all',
                             *foreign)
        verdicts = {r['consumer']: (r['reason'], r['action']) for r in rows}
        self.assertEqual(
            (kept, ('unknown_consumer', 'delete_consumer')),
            (verdicts[uuids.container], verdicts[uuids.stranger]))
        journal = os.path.join(self.tmp, 'osc.jsonl')
        done = self.osc_json('allocation', 'orphan', 'clean', '--journal',
                             journal, *foreign)
        cleaned = {(self.evacuated['id'], 'done'),
                   (self.deleted['id'], 'done'), (uuids.stranger, 'done')}
        self.assertEqual(cleaned,
                         {(r['consumer'], r['outcome']) for r in done})
        self.assertEqual({self.rp_uuids['host3']: self.resources},
                         self.get_allocations(uuids.container))
        self.assertEqual({}, self.get_allocations(uuids.stranger))
        # Without the declaration it is an unknown consumer like any.
        self.assertEqual([(uuids.container, 'unknown_consumer')], [
            (r['consumer'], r['reason'])
            for r in self.osc_json('allocation', 'orphan', 'list')])

        # nova-orphans-manage, from nova.conf, after a restore.
        self.osc_json('allocation', 'orphan', 'restore', '--journal',
                      journal)
        self.assertManageCleanKeeps(
            {'nova_orphans': {'foreign_projects': ZUN_PROJECT}}, kept,
            cleaned)
        # Fast mode reads the record from placement's tables: the same.
        self.conf_file = self.write_nova_conf(
            extra={'nova_orphans': {'foreign_projects': ZUN_PROJECT}},
            placement_db=True)
        self.assertEqual([(uuids.container, 'unmanaged_consumer')], [
            (r['consumer'], r['reason'])
            for r in self.list_allocations('--all')
            if r['reason'] == 'unmanaged_consumer'])

    def test_zun_container_kept_by_clean_in_both_front_ends(self):
        """The zun rule, without any declaration: Zun's container holds
        its allocation on nova's node (host_shared_with_nova), and Zun
        says so, from its API to openstack (Zun in the catalog) and from
        its database to nova-orphans-manage (``[zun_database]``).
        """
        self.age_nova()
        self._put_allocations(uuids.container, self.rp_uuids['host3'],
                              project=ZUN_PROJECT)
        kept = ('unmanaged_consumer', 'none',
                'Zun container %s (status Running, host host3) holds this '
                'allocation.' % uuids.container)
        cleaned = {(self.evacuated['id'], 'done'),
                   (self.deleted['id'], 'done'), (uuids.stranger, 'done')}
        self.serve_zun()
        self.zun_front.add(uuids.container, 'host3')
        verdicts = {r['consumer']: (r['reason'], r['action'], r['details'])
                    for r in self.osc_json('allocation', 'orphan', 'list',
                                           '--all')}
        self.assertEqual(
            (kept, ('unknown_consumer', 'delete_consumer')),
            (verdicts[uuids.container], verdicts[uuids.stranger][:2]))
        journal = os.path.join(self.tmp, 'osc.jsonl')
        done = self.osc_json('allocation', 'orphan', 'clean', '--journal',
                             journal)
        self.assertEqual(cleaned,
                         {(r['consumer'], r['outcome']) for r in done})
        self.assertEqual({self.rp_uuids['host3']: self.resources},
                         self.get_allocations(uuids.container))
        self.assertEqual({}, self.get_allocations(uuids.stranger))

        # nova-orphans-manage, from Zun's database, after a restore.
        self.osc_json('allocation', 'orphan', 'restore', '--journal',
                      journal)
        zun = self.useFixture(zun_fixture.ZunDatabase())
        zun.add_container('host3', uuid=uuids.container,
                          project_id=ZUN_PROJECT)
        self.assertManageCleanKeeps(
            {'zun_database': {'connection': zun.url}}, kept, cleaned)

    def assertManageCleanKeeps(self, extra, kept, cleaned):
        """nova-orphans-manage with ``extra`` in nova.conf: the
        container is ``kept`` (reason, action and, if given, details),
        and ``clean`` repairs the ``cleaned`` consumers and only them.
        """
        self.conf_file = self.write_nova_conf(extra=extra)
        self.assertEqual(kept, {
            r['consumer']: (r['reason'], r['action'], r['details'])[
                :len(kept)]
            for r in self.list_allocations('--all')}[uuids.container])
        rc, out = self.run_manage(
            'allocations', 'clean', '--format', 'json', '--journal',
            os.path.join(self.tmp, 'manage.jsonl'))
        self.assertEqual((4, cleaned),
                         (rc, {(r['consumer'], r['outcome'])
                               for r in json.loads(out)}), out)
        self.assertEqual({self.rp_uuids['host3']: self.resources},
                         self.get_allocations(uuids.container))
        self.assertEqual([], self.list_allocations())

    def test_table_and_columns(self):
        rc, out, err = self.openstack('allocation', 'orphan', 'list')
        self.assertEqual(3, rc, err)
        header = out.splitlines()[1]
        # nova-orphans-manage's headers.
        self.assertEqual(
            ['Consumer', 'Type', 'Provider', 'Host', 'Reason', 'Action',
             'Resources'],
            [c.strip() for c in header.strip('|').split('|')])
        self.assertIn('DISK_GB=1, MEMORY_MB=512, VCPU=1', out)

        rc, out, err = self.openstack('allocation', 'orphan', 'list', '-f',
                                      'value', '-c', 'consumer', '-c',
                                      'reason', '--reason',
                                      'unknown_consumer')
        self.assertEqual((3, '%s unknown_consumer\n' % uuids.stranger),
                         (rc, out), err)


class HealTest(OpenStackPluginTestBase):

    def test_heal_from_embedded_flavor(self):
        server = self._boot_and_check_allocations(self.flavor, 'host2')
        self._delete_server_allocations(server['id'])
        # Just booted: nova could still be writing them (rules.unsettled).
        self.assertEqual([], self.list_allocations())
        self.age_nova()
        rows = self.list_allocations()
        self.assertEqual([(server['id'], 'missing_allocations', 'heal')],
                         [(r['consumer'], r['reason'], r['action'])
                          for r in rows])
        self.assertSameRows(rows, self.osc_json('allocation', 'orphan',
                                                'list'))

        skipped = self.osc_json('allocation', 'orphan', 'clean', '--journal',
                                os.path.join(self.tmp, 'j'))
        self.assertEqual(['skipped: healing needs --heal'],
                         [r['outcome'] for r in skipped])
        healed = self.osc_json('allocation', 'orphan', 'clean', '--heal',
                               '--journal', os.path.join(self.tmp, 'j'))
        self.assertEqual(['done'], [r['outcome'] for r in healed])
        self.assertEqual(
            {self.rp_uuids['host2']: {'VCPU': 1, 'MEMORY_MB': 512,
                                      'DISK_GB': 1}},
            self.get_allocations(server['id']))


class DownCellTest(OpenStackPluginTestBase):

    def test_down_cell_judges_nothing(self):
        """nova cannot list hypervisors then: every allocation unverifiable.
        """
        server = self._boot_and_check_allocations(self.flavor, 'host1')
        with nova_fixtures.DownCellFixture([self.cell_mappings['cell1']]):
            rc, out, err = self.openstack('allocation', 'orphan', 'list',
                                          '--all', '-f', 'json')
        self.assertEqual(
            [(server['id'], self.rp_uuids['host1'], 'unverifiable', 'none')],
            [(r['consumer'], r['resource_provider'], r['reason'],
              r['action']) for r in json.loads(out)])
        # The line that says the rows are not the whole cloud, and 2: not
        # "nothing found". (The other lines on stderr are nova's own
        # logs.)
        self.assertEqual(2, rc, err)
        said = [line for line in err.splitlines()
                if line.startswith('WARNING: cell (down) could not be read')]
        self.assertEqual(1, len(said), err)
        self.assertTrue(said[0].endswith(
            '; its consumers are reported as unverifiable, never as '
            'orphans.'), said)


class ErrorTest(OpenStackPluginTestBase):
    """Bad input ends in one line on stderr and exit 127 (a compute API
    too old: 7, the configuration), no traceback.
    """

    def assertOneLineError(self, expected, *argv, code=127):
        rc, out, err = self.openstack(*argv)
        self.assertEqual(code, rc, err)
        self.assertEqual('', out)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn(expected, err)
        self.assertRanCleanly((rc, out, err))

    def test_errors(self):
        # osc-placement is loaded in the same run and unaffected.
        self.assertEqual(
            sorted(self.rp_uuids.values()),
            sorted(rp['uuid'] for rp in self.osc_json(
                '--os-placement-api-version', '1.14', 'resource', 'provider',
                'list')))
        self.assertOneLineError(
            'Resource provider not-a-uuid is not a valid UUID',
            'allocation', 'orphan', 'list', '--resource-provider',
            'not-a-uuid')
        self.assertOneLineError(
            'no compute host nowhere in any readable cell',
            'allocation', 'orphan', 'clean', '--host', 'nowhere')
        self.assertOneLineError(
            'resource provider %s does not exist' % uuids.nothing,
            'allocation', 'orphan', 'list', '--resource-provider',
            uuids.nothing)
        self.assertOneLineError(
            '--max-count must be at least 1',
            'allocation', 'orphan', 'clean', '--max-count', '0')
        self.assertOneLineError(
            'Journal %s' % os.path.join(self.tmp, 'missing'),
            'allocation', 'orphan', 'restore', '--journal',
            os.path.join(self.tmp, 'missing'))
        self.front.max_version = '2.60'
        self.assertOneLineError(
            'supports microversions up to 2.60; nova-orphans needs 2.69',
            'allocation', 'orphan', 'list', code=7)
