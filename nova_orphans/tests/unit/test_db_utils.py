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

import contextlib
from unittest import mock

import fixtures
from oslo_db import exception as db_exc
from oslotest import base
import sqlalchemy as sa

from nova_orphans import db_utils

SECRET_URL = 'mysql+pymysql://nova:s3cr3t@db.example:3306/nova?charset=utf8'


class FormatCellUrlTestCase(base.BaseTestCase):

    def test_template_filled_from_database_connection(self):
        self.assertEqual(
            'mysql+pymysql://nova:s3cr3t@db.example:3306/nova_cell1'
            '?charset=utf8',
            db_utils.format_cell_url(
                '{scheme}://{username}:{password}@{hostname}:{port}/'
                'nova_cell1?{query}', SECRET_URL))

    def test_path_template(self):
        self.assertEqual('sqlite:////var/lib/nova/cell1.db',
                         db_utils.format_cell_url(
                             '{scheme}:////var/lib/nova/cell1.db',
                             'sqlite:////var/lib/nova/cell0.db'))

    def test_plain_url_unchanged(self):
        self.assertEqual('sqlite:////x.db',
                         db_utils.format_cell_url('sqlite:////x.db', None))


class SecretsTestCase(base.BaseTestCase):

    def test_safe_url_hides_password(self):
        self.assertNotIn('s3cr3t', db_utils.safe_url(SECRET_URL))
        self.assertIn('nova:***@db.example', db_utils.safe_url(SECRET_URL))

    def test_safe_error_removes_password_and_url(self):
        error = Exception("(2003) can't connect to %s; password=s3cr3t"
                          % SECRET_URL)
        text = db_utils.safe_error(error, SECRET_URL)
        self.assertNotIn('s3cr3t', text)
        self.assertIn('nova:***@db.example', text)

    def test_location_is_where_and_nothing_else(self):
        """What a journal's run header records of the API database."""
        for url, expected in (
                (SECRET_URL, {'host': 'db.example', 'name': 'nova'}),
                ('mysql+pymysql://nova:s3cr3t@DB.example:3306/nova_api'
                 '?charset=utf8', {'host': 'db.example',
                                   'name': 'nova_api'}),
                ('mysql+pymysql://nova:s3cr3t@db:3307/nova_api',
                 {'host': 'db:3307', 'name': 'nova_api'}),
                ('sqlite:////var/lib/nova/api.sqlite',
                 {'host': None, 'name': '/var/lib/nova/api.sqlite'}),
                (None, None), ('', None), ('not a url', None)):
            self.assertEqual(expected, db_utils.location(url), url)

    def test_sqlite_opened_read_only(self):
        url = db_utils._read_only_url('sqlite:////tmp/cell.db')
        self.assertEqual('sqlite:///file:/tmp/cell.db?mode=ro&uri=true',
                         url.render_as_string())


class ReaderEngineTestCase(base.BaseTestCase):

    def test_mysql_gets_a_connect_timeout(self):
        captured = {}

        def fake_create_engine(url, **kwargs):
            captured.update(kwargs, url=url)
            raise RuntimeError('stop here')

        self.useFixture(fixtures.MonkeyPatch(
            'oslo_db.sqlalchemy.engines.create_engine', fake_create_engine))
        self.assertRaises(RuntimeError, db_utils.create_reader_engine,
                          'mysql+pymysql://nova:pw@db/nova', max_retries=1)
        # oslo.db appends a query string, not a dict.
        self.assertEqual('connect_timeout=10',
                         captured['connection_parameters'])


class ReaderEnginesTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.urls = []
        for name in ('api', 'cell'):
            path = '%s/%s.db' % (tmp, name)
            sa.create_engine('sqlite:///' + path).connect().close()
            self.urls.append('sqlite:///' + path)
        self.created = []
        real = db_utils.create_reader_engine

        def counted(url, **kwargs):
            self.created.append((url, kwargs))
            return real(url, **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.db_utils.create_reader_engine', counted))
        self.engines = db_utils.ReaderEngines(max_retries=2)
        self.addCleanup(self.engines.close)

    def _read(self, url):
        with self.engines.connect(url) as conn:
            return conn.execute(sa.select(sa.literal_column('1'))).scalar()

    def test_one_engine_per_database_for_the_run(self):
        api, cell = self.urls
        for url in (api, cell, api, cell, api):
            self.assertEqual(1, self._read(url))
        self.assertEqual([(api, {'max_retries': 2}),
                          (cell, {'max_retries': 2})], self.created)

    def test_concurrent_reads_get_connections_of_their_own(self):
        api = self.urls[0]
        with self.engines.connect(api) as first:
            with self.engines.connect(api) as second:
                self.assertIsNot(first.connection.dbapi_connection,
                                 second.connection.dbapi_connection)
        self.assertEqual(1, len(self.created))

    def test_close_lets_go_and_a_later_read_starts_again(self):
        api = self.urls[0]
        self._read(api)
        engine = self.engines._engine(api)
        with mock.patch.object(engine, 'dispose') as dispose:
            self.engines.close()
        dispose.assert_called_once_with()
        self._read(api)
        self.assertEqual(2, len(self.created))

    def test_a_database_that_cannot_be_read_is_tried_again(self):
        missing = self.urls[0] + '.missing'
        self.assertRaises(db_exc.DBNonExistentDatabase, self._read, missing)
        self.assertRaises(db_exc.DBNonExistentDatabase, self._read, missing)
        self.assertEqual(2, len(self.created))


class DriverRowsTestCase(base.BaseTestCase):

    def test_rows_as_tuples_in_batches(self):
        engine = db_utils.create_reader_engine('sqlite://')
        self.addCleanup(engine.dispose)
        with engine.connect() as conn:
            rows = list(db_utils.driver_rows(
                conn, sa.select(sa.literal_column("'a'"),
                                sa.literal_column('1')), size=1))
        self.assertEqual([('a', 1)], rows)

    def test_rows_read_in_the_connections_transaction(self):
        engine = db_utils.create_reader_engine('sqlite://')
        self.addCleanup(engine.dispose)
        with engine.connect() as conn:
            list(db_utils.driver_rows(conn, sa.select(sa.literal_column('1'))))
            # Begun as conn.execute() would: on sqlite oslo.db emits
            # BEGIN, so later reads see the same state.
            self.assertTrue(conn.in_transaction())

    def test_look_up_in_chunks(self):
        engine = db_utils.create_reader_engine('sqlite://')
        self.addCleanup(engine.dispose)
        table = sa.table('t', sa.column('k'), sa.column('v'))
        with engine.connect() as conn:
            conn.exec_driver_sql('CREATE TABLE t (k TEXT, v INTEGER)')
            conn.exec_driver_sql(
                "INSERT INTO t VALUES ('a', 1), ('b', 2), ('c', 3), "
                "('d', 4), ('e', 5)")
            statements = []
            conn.connection.dbapi_connection.set_trace_callback(
                statements.append)
            rows = db_utils.rows_in(
                conn, sa.select(table).where(
                    table.c.k.in_(db_utils.IN_VALUES)),
                {'e', 'a', 'c', 'x'}, size=2)
            self.assertEqual([('a', 1), ('c', 3), ('e', 5)],
                             sorted(rows))
            self.assertTrue(conn.in_transaction())
        # Two chunks of sorted values, one statement each, their values
        # bound by the driver.
        self.assertEqual(
            ["SELECT t.k, t.v FROM t WHERE t.k IN ('a', 'c')",
             "SELECT t.k, t.v FROM t WHERE t.k IN ('e', 'x')"],
            [' '.join(sql.split()) for sql in statements
             if sql.lstrip().upper().startswith('SELECT')])

    def test_a_look_up_takes_its_values_only(self):
        table = sa.table('t', sa.column('k'), sa.column('v'))
        conn = mock.Mock()
        conn.dialect = sa.create_engine('sqlite://').dialect
        self.assertRaises(
            ValueError, db_utils.rows_in, conn,
            sa.select(table).where(table.c.k.in_(db_utils.IN_VALUES),
                                   table.c.v == 1), ['a'])
        self.assertRaises(
            ValueError, db_utils.rows_in, conn,
            sa.select(table).where(table.c.v == 1), ['a'])
        conn.connection.cursor.assert_not_called()

    def test_only_sqlite_reads_take_turns(self):
        engine = db_utils.create_reader_engine('sqlite://')
        self.addCleanup(engine.dispose)
        with engine.connect() as conn:
            self.assertIs(db_utils._SQLITE_READS,
                          db_utils.serial_reads(conn))
        mysql = mock.Mock()
        mysql.dialect.name = 'mysql'
        self.assertIsInstance(db_utils.serial_reads(mysql),
                              contextlib.nullcontext)
