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
"""The zun site rule: Zun's containers on nova's compute nodes.

Zun with ``host_shared_with_nova`` allocates on nova's compute node
provider under the container's uuid, with the user's project and no
consumer type (as ``allocate(..., consumer_type=None)`` writes); its
database is Zun's schema (fixtures/zun.py).
"""

import json
import os
import uuid as uuidlib

import sqlalchemy as sa

from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import mariadb
from nova_orphans.tests.functional.fixtures import zun as zun_fixture

SECRET = 'zun-s3cret'
UNKNOWN = ('unknown_consumer', 'delete_consumer')
UNVERIFIABLE = ('unverifiable', 'none')


class ZunTestCase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.zun = self.useFixture(zun_fixture.ZunDatabase(
            mariadb=mariadb.server() if self.MARIADB else None))
        self.node = self.add_node('host1')
        self.live = self.boot('host1', self.node)
        self.gone = self.nova.add_instance('cell1', host='host1',
                                           node='host1', deleted=True)
        self.allocate(self.gone, self.node)
        self.container = self.zun.add_container('host1')
        self.capsule = self.zun.add_container(
            'host1', container_type=zun_fixture.CAPSULE, status='Created')
        # Deleted by Zun, which deleted its allocations first: one left
        # behind by a Zun that failed in between is nobody's.
        self.deleted = self.zun.add_container('host1')
        self.zun.delete_container(self.deleted)
        for consumer in (self.container, self.capsule, self.deleted):
            self.allocate(consumer, self.node, consumer_type=None)
        self.zun_conf = self.write_conf(self.zun.url)

    def write_conf(self, zun_url):
        return self.nova.write_nova_conf(
            os.path.join(self.tmp, 'zun-%s.conf' % uuidlib.uuid4().hex),
            self.placement.endpoint,
            extra={'nova_orphans': {'state_path': self.state_path,
                                    'cell_timeout': '20',
                                    'db_retry_interval': '0'},
                   'zun_database': {'connection': zun_url}})

    def rows(self, conf_file):
        rc, out, err = self.manage('allocations', 'list', '--all',
                                   '--format', 'json', conf_file=conf_file)
        return rc, sorted((r['consumer'], r['reason'], r['action'])
                          for r in json.loads(out)), err

    def expected(self, zuns, deleted):
        """``list --all``'s (consumer, reason, action): nova's two, then
        (reason, action) of the container and capsule Zun has, and of
        the one it deleted.
        """
        return sorted([(self.live, 'active_instance', 'none'),
                       (self.gone, 'deleted_instance', 'delete_consumer'),
                       (self.container,) + zuns, (self.capsule,) + zuns,
                       (self.deleted,) + deleted])

    def test_clean_keeps_zun_containers(self):
        # Without the rule, every container's allocation is an orphan.
        rc, rows, err = self.rows(self.conf_file)
        self.assertEqual(3, rc, err)
        self.assertEqual(self.expected(UNKNOWN, UNKNOWN), rows)

        rc, rows, err = self.rows(self.zun_conf)
        self.assertEqual((3, ''), (rc, err))
        self.assertEqual(
            self.expected(('unmanaged_consumer', 'none'), UNKNOWN), rows)
        rc, out, err = self.manage('allocations', 'list', '--all',
                                   '--format', 'json',
                                   conf_file=self.zun_conf)
        details = {r['consumer']: r['details'] for r in json.loads(out)}
        self.assertEqual(
            'Zun capsule %s (status Created, host host1) holds this '
            'allocation.' % self.capsule, details[self.capsule])

        rc, out, err = self.manage('allocations', 'clean', '--format',
                                   'json', conf_file=self.zun_conf)
        self.assertEqual(4, rc, err)
        self.assertEqual(
            sorted([(self.gone, 'done'), (self.deleted, 'done')]),
            sorted((r['consumer'], r['outcome']) for r in json.loads(out)))
        self.assertEqual({self.live, self.container, self.capsule},
                         set(self.placement.dump_state()))

    def test_zun_database_unreadable_fails_closed(self):
        # Nothing listens on port 1: refused at once.
        url = 'mysql+pymysql://zun:%s@127.0.0.1:1/zun' % SECRET
        conf = self.write_conf(url)
        rc, rows, err = self.rows(conf)
        self.assertEqual(5, rc, err)
        self.assertEqual(self.expected(UNVERIFIABLE, UNVERIFIABLE), rows)
        warning, = [line for line in err.splitlines()
                    if line.startswith('WARNING')]
        self.assertTrue(warning.startswith(
            "WARNING: Zun's database mysql+pymysql://zun:***@127.0.0.1:1/zun "
            "could not be read ("), warning)
        self.assertTrue(warning.endswith(
            '); the consumers nova has no trace of are reported as '
            'unverifiable, never as orphans.'), warning)

        rc, out, err = self.manage('allocations', 'clean', '--format',
                                   'json', conf_file=conf)
        self.assertNotIn(SECRET, out + err)
        # The deleted instance is repaired, the run is incomplete.
        self.assertEqual(5, rc, err)
        self.assertEqual([(self.gone, 'done')],
                         [(r['consumer'], r['outcome'])
                          for r in json.loads(out)])
        self.assertEqual(
            {self.live, self.container, self.capsule, self.deleted},
            set(self.placement.dump_state()))


ZunMariaDBTestCase = base.on_mariadb(ZunTestCase,
                                     'test_clean_keeps_zun_containers')


def _columns(url):
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        return [(c['name'], c['nullable']) for c in
                inspector.get_columns('container')]
    finally:
        engine.dispose()


class ZunSchemaTestCase(base.TestCase):

    def test_sqlite_schema_is_zuns(self):
        """fixtures/zun.py's sqlite table has the columns, in the order
        and nullability, that Zun's own migrations give on MariaDB.
        """
        mariadb.require(self)
        maria = mariadb.server()
        migrated = _columns(maria.url(zun_fixture.mariadb_template(maria)))
        fixture = self.useFixture(zun_fixture.ZunDatabase())
        self.assertEqual(migrated, _columns(fixture.url))
