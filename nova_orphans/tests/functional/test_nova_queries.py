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
"""How many statements the nova reader sends, on nova's real schema.

The count must not grow with the cloud: a fixed set of bulk reads per
database, and one look-up per table for the consumers nothing live owns,
however many there are. Counted by sqlite itself (its trace callback),
so the reads that run on the driver's cursor are counted too.
"""

import collections
import os
import uuid

import fixtures
from oslo_config import cfg
from oslotest import base
import sqlalchemy as sa

from nova_orphans import conf as conf_mod
from nova_orphans.readers import nova_db as nova_db_reader
from nova_orphans.tests.functional.fixtures import nova_db


class TestStatementsPerDatabase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(nova_db.NovaDatabases(
            cells=('cell1', 'cell2')))
        tmp = self.useFixture(fixtures.TempDir()).path
        conf_file = self.nova.write_nova_conf(
            os.path.join(tmp, 'nova.conf'), 'http://127.0.0.1:9')
        self.conf = cfg.ConfigOpts()
        conf_mod.register_opts(self.conf, placement_opts=False)
        self.conf(['--config-file', conf_file])
        self.addCleanup(self.conf.reset)
        self.names = {
            os.path.basename(sa.engine.make_url(url).database): name
            for name, url in dict(self.nova.cell_urls,
                                  api=self.nova.api_url).items()}
        # Rows the look-ups must find among the unknown uuids.
        self.live = self.nova.add_instance('cell1', host='h1', node='h1')
        self.deleted = self.nova.add_instance('cell1', host='h1', node='h1')
        self.nova.force_delete_instance('cell1', self.deleted)
        self.elsewhere = self.nova.add_instance('cell2', host='h2',
                                                node='h2')
        self.nova.force_delete_instance('cell2', self.elsewhere)

    def _selects(self, consumers, claims_of=()):
        """(snapshot, {database: SELECT statements}) of read + resolve,
        then read_claims of ``claims_of`` when given.
        """
        counts = collections.Counter()

        def on_connect(dbapi_conn, _record):
            path = dbapi_conn.execute('PRAGMA database_list').fetchone()[2]
            name = self.names[os.path.basename(path)]

            def trace(statement):
                if statement.lstrip().upper().startswith('SELECT'):
                    counts[name] += 1
            dbapi_conn.set_trace_callback(trace)

        sa.event.listen(sa.engine.Engine, 'connect', on_connect)
        try:
            reader = nova_db_reader.NovaDBReader(self.conf)
            snapshot = reader.read()
            unowned = set(consumers).difference(snapshot.instances)
            reader.resolve(snapshot, unowned)
            if claims_of:
                reader.read_claims(snapshot, claims_of)
        finally:
            sa.event.remove(sa.engine.Engine, 'connect', on_connect)
        return snapshot, dict(counts)

    def _consumers(self, unknown):
        return {self.live, self.deleted, self.elsewhere} | {
            str(uuid.uuid4()) for _n in range(unknown)}

    def test_constant_whatever_the_number_of_unowned_consumers(self):
        _snap, few = self._selects(self._consumers(3))
        snapshot, many = self._selects(self._consumers(2500))
        # Each database: its columns, once per run (see
        # nova_db.check_schema). API: cells, build requests, the unowned
        # consumers' mappings. Each cell: compute nodes, services, live
        # instances and live migrations, then instances, shadow_instances,
        # migrations and shadow_migrations by uuid.
        expected = {'api': 4, 'cell0': 9, 'cell1': 9, 'cell2': 9}
        self.assertEqual(expected, few)
        self.assertEqual(expected, many)
        self.assertFalse(snapshot.instances[self.live].deleted)
        self.assertTrue(snapshot.instances[self.deleted].deleted)
        self.assertEqual(self.nova.cell_uuids['cell2'],
                         snapshot.instances[self.elsewhere].cell)
        self.assertEqual(3, len(snapshot.instances))

    def test_no_unowned_consumer_no_look_up(self):
        _snap, counts = self._selects({self.live})
        self.assertEqual({'api': 3, 'cell0': 5, 'cell1': 5, 'cell2': 5},
                         counts)

    def test_claims_three_statements_per_cell_asked(self):
        """The info caches, flavors and interface actions of the
        instances asked about, in their own cells only, whatever their
        number.
        """
        more = [self.nova.add_instance('cell1', host='h1', node='h1')
                for _n in range(30)]
        for vm in more[:10]:
            self.nova.set_network_info('cell1', vm, [nova_db.vif()])
        _snap, plain = self._selects({self.live})
        snapshot, counts = self._selects({self.live}, set(more))
        self.assertEqual(dict(plain, cell1=plain['cell1'] + 3), counts)
        self.assertEqual(set(more), set(snapshot.claims))
        self.assertEqual(
            (frozenset(), 10),
            (snapshot.claims[more[0]].port_providers,
             sum(c.port_providers is not None
                 for c in snapshot.claims.values())))
