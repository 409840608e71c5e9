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
"""A throw-away MariaDB for the benchmark's nova databases.

Needs the ``mariadb-server`` package (``apt-get install -y
mariadb-server``); no system service is used or touched: the server runs
from a datadir, socket and port of the benchmark's own on 127.0.0.1, and
is stopped at the end. nova's schema is created once by nova's own
migrations (``nova-manage api_db sync`` / ``db sync``) into template
databases; each generated cloud gets copies (``CREATE TABLE ... LIKE``).
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from nova_orphans.tests.functional.fixtures import nova_db
from orphanbench import runner

TEMPLATE_API = 'tmpl_nova_api'
TEMPLATE_CELL = 'tmpl_nova_cell'
TEMPLATE_PLACEMENT = 'tmpl_placement'
# placement's schema by its own migrations, then the traits and standard
# resource classes it syncs at start-up, as the sqlite template has them.
_PLACEMENT_SYNC = '''
import sys
from oslo_config import cfg
from placement import conf as placement_conf
from placement import db_api
from placement import deploy
from placement.db.sqlalchemy import migration
conf = cfg.ConfigOpts()
placement_conf.register_opts(conf)
conf.set_override("connection", sys.argv[1], group="placement_database")
conf([], project="placement", default_config_files=[],
     default_config_dirs=[])
db_api.configure(conf)
migration.upgrade("head")
deploy.update_database(conf)
'''


def available():
    return bool(shutil.which('mariadbd') or os.path.exists(
        '/usr/sbin/mariadbd')) and bool(shutil.which('mariadb-install-db'))


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class MariaDB:

    def __init__(self, workdir):
        self.workdir = workdir
        self.dir = os.path.join(workdir, 'mariadb')
        self.datadir = os.path.join(self.dir, 'data')
        self.socket = os.path.join(self.dir, 'mysqld.sock')
        self.port = _free_port()
        os.makedirs(self.dir, exist_ok=True)
        subprocess.run(
            ['mariadb-install-db', '--no-defaults', '--user=root',
             '--datadir=' + self.datadir, '--auth-root-authentication-method'
             '=normal', '--skip-test-db'],
            check=True, capture_output=True)
        mariadbd = shutil.which('mariadbd') or '/usr/sbin/mariadbd'
        self.log = open(os.path.join(self.dir, 'mariadbd.log'), 'w')
        self.proc = subprocess.Popen(
            [mariadbd, '--no-defaults', '--user=root',
             '--datadir=' + self.datadir, '--socket=' + self.socket,
             '--port=%d' % self.port, '--bind-address=127.0.0.1',
             '--pid-file=' + os.path.join(self.dir, 'mysqld.pid'),
             '--skip-name-resolve', '--innodb-buffer-pool-size=1G',
             '--innodb-flush-log-at-trx-commit=0', '--skip-log-bin',
             '--max-connections=200'],
            stdout=self.log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)
        deadline = time.time() + 60
        while True:
            try:
                self.execute('SELECT 1')
                break
            except Exception:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError('mariadbd did not start; see %s' %
                                       self.log.name)
                time.sleep(0.2)

    def cpu_seconds(self):
        """CPU seconds the server has used so far (from /proc)."""
        with open('/proc/%d/stat' % self.proc.pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf(
            'SC_CLK_TCK')

    def url(self, database):
        return 'mysql+pymysql://root@127.0.0.1:%d/%s?charset=utf8' % (
            self.port, database)

    def connect(self, database=None):
        import pymysql
        return pymysql.connect(host='127.0.0.1', port=self.port,
                               user='root', database=database,
                               autocommit=True)

    def execute(self, sql, database=None):
        conn = self.connect(database)
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
                return cur.fetchall()
        finally:
            conn.close()

    def make_templates(self, workdir):
        """nova's schema, by nova's migrations, in two template DBs."""
        if self.execute("SHOW DATABASES LIKE '%s'" % TEMPLATE_CELL):
            return
        for db in (TEMPLATE_API, TEMPLATE_CELL):
            self.execute('CREATE DATABASE %s CHARACTER SET utf8' % db)
        conf = nova_db.write_ini(os.path.join(self.dir, 'sync.conf'), {
            'api_database': {'connection': self.url(TEMPLATE_API)},
            'database': {'connection': self.url(TEMPLATE_CELL)}})
        env = dict(os.environ, OS_NOVA_DISABLE_EVENTLET_PATCHING='True')
        for args in (['api_db', 'sync'], ['db', 'sync']):
            subprocess.run(
                [sys.executable, '-c', runner._NOVA_MANAGE, '--config-file',
                 conf, '--config-dir', self.dir] + args,
                check=True, env=env, capture_output=True, cwd=runner.REPO)
        # db sync looked cell0 up in the API DB: leave the template empty.
        self.execute('DELETE FROM cell_mappings', TEMPLATE_API)

    def make_placement_template(self):
        if self.execute("SHOW DATABASES LIKE '%s'" % TEMPLATE_PLACEMENT):
            return
        self.execute('CREATE DATABASE %s CHARACTER SET utf8' %
                     TEMPLATE_PLACEMENT)
        subprocess.run([sys.executable, '-c', _PLACEMENT_SYNC,
                        self.url(TEMPLATE_PLACEMENT)], check=True,
                       capture_output=True, cwd=runner.REPO)

    def placement_url(self, prefix='bench'):
        self.make_placement_template()
        return self.copy_schema(TEMPLATE_PLACEMENT, prefix + '_placement',
                                with_rows=True)

    def copy_schema(self, template, database, with_rows=False):
        """A fresh ``database`` with ``template``'s tables (and rows)."""
        self.execute('DROP DATABASE IF EXISTS %s' % database)
        self.execute('CREATE DATABASE %s CHARACTER SET utf8' % database)
        tables = [r[0] for r in self.execute(
            "SELECT table_name FROM information_schema.tables WHERE "
            "table_schema = '%s' AND table_type = 'BASE TABLE'" % template)]
        conn = self.connect(database)
        try:
            with conn.cursor() as cur:
                cur.execute('SET FOREIGN_KEY_CHECKS = 0')
                # resource_classes: VCPU's id is 0, as placement keeps it.
                cur.execute("SET SESSION sql_mode = CONCAT(@@sql_mode, "
                            "',NO_AUTO_VALUE_ON_ZERO')")
                for table in tables:
                    cur.execute('CREATE TABLE `%s`.`%s` LIKE `%s`.`%s`' % (
                        database, table, template, table))
                    if with_rows or table == 'alembic_version':
                        cur.execute('INSERT INTO `%s`.`%s` SELECT * FROM '
                                    '`%s`.`%s`' % (database, table, template,
                                                   table))
        finally:
            conn.close()
        # CREATE TABLE ... LIKE keeps indexes but not foreign keys: that
        # only relaxes the bulk load; every read path is the same.
        return self.url(database)

    def nova_urls(self, cells, prefix='bench'):
        urls = {'api': self.copy_schema(TEMPLATE_API, prefix + '_nova_api')}
        for cell in ['cell0'] + list(cells):
            urls[cell] = self.copy_schema(TEMPLATE_CELL,
                                          '%s_nova_%s' % (prefix, cell))
        return urls

    def explain(self, database, statement, parameters):
        """EXPLAIN rows (as dicts) of one SELECT with its parameters."""
        conn = self.connect(database)
        try:
            with conn.cursor() as cur:
                cur.execute('EXPLAIN ' + statement, parameters or None)
                names = [d[0] for d in cur.description]
                return [dict(zip(names, row)) for row in cur.fetchall()]
        finally:
            conn.close()

    def stop(self, remove=True):
        """Stop the server; ``remove`` its datadir and our work dir."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        if remove:
            shutil.rmtree(self.workdir, ignore_errors=True)
