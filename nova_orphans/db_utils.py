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
"""Read-only database access for tools: short retries, no credentials shown.

Engines come from oslo.db so nova's URL forms and dialect quirks work as
they do in nova, but with the retry budget of an interactive tool.
"""

import contextlib
import itertools
import threading
import urllib.parse as urlparse

import sqlalchemy as sa
from sqlalchemy.engine import url as sa_url


def safe_url(url):
    """The URL with its password replaced, for messages and logs."""
    try:
        return sa_url.make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: an unparsable URL is shown as nothing
        return '<unparsable database URL>'


def safe_error(error, *urls):
    """An exception's text with any credentials removed."""
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    for url in urls:
        if not url:
            continue
        text = text.replace(url, safe_url(url))
        password = _password(url)
        if password:
            text = text.replace(password, '***')
    # Imported here: it compiles its many patterns on import, which
    # every run would pay for, and they mostly mask nothing.
    from oslo_utils import strutils
    return strutils.mask_password(text)


# The servers' own ports, as a URL without one reaches them.
_PORTS = {'mysql': 3306, 'mariadb': 3306, 'postgresql': 5432}


def location(url):
    """Where a database is, and nothing else: {'host': host[:port] or
    None, 'name': the database (a sqlite file's path)}, the same
    however the URL writes its server's default port; None for no or an
    unparsable URL. For a journal's run header: never its user or
    password.
    """
    try:
        parsed = sa_url.make_url(url)
    except Exception:  # noqa: an unparsable URL names nothing
        return None
    host = parsed.host.lower() if parsed.host else None
    backend = parsed.get_backend_name()
    if host and parsed.port and parsed.port != _PORTS.get(backend):
        host = '%s:%d' % (host, parsed.port)
    if not (host or parsed.database):
        return None
    return {'host': host or None, 'name': parsed.database}


def _password(url):
    try:
        return sa_url.make_url(url).password
    except Exception:  # noqa
        return None


def format_cell_url(template, default):
    """Fill a cell mapping's URL template the way nova does.

    Mirrors ``nova.objects.cell_mapping.CellMapping._format_url``: the
    ``{scheme}``, ``{username}``, ``{password}``, ``{hostname}``,
    ``{port}``, ``{path}``, ``{query}`` and ``{fragment}`` of the running
    ``[database] connection``, plus indexed keys for multi-host netlocs.
    """
    if not default or '{' not in template:
        return template
    default_url = urlparse.urlparse(default)
    subs = {key: getattr(default_url, key)
            for key in ('username', 'password', 'hostname', 'port', 'scheme',
                        'query', 'fragment')}
    subs['path'] = default_url.path.lstrip('/')
    if ',' in default_url.netloc:
        for index, netloc in enumerate(default_url.netloc.split(','), 1):
            parsed = urlparse.urlparse('//' + netloc)
            for key in ('username', 'password', 'hostname', 'port'):
                subs['%s%i' % (key, index)] = getattr(parsed, key)
    return template.format(**subs)


def _read_only_url(url):
    """Open sqlite files read-only, so a wrong path is an error, not a file.

    (sqlite would otherwise create an empty database where a cell's
    database was expected.)
    """
    parsed = sa_url.make_url(url)
    if parsed.get_backend_name() != 'sqlite' or not parsed.database or (
            parsed.database == ':memory:' or
            parsed.query.get('uri') == 'true'):
        return parsed
    return parsed.set(database='file:%s' % parsed.database,
                      query={'mode': 'ro', 'uri': 'true'})


def create_reader_engine(url, max_retries=1, retry_interval=1,
                         connect_timeout=10):
    parsed = _read_only_url(url)
    params = None
    if parsed.get_backend_name() == 'mysql' and (
            'connect_timeout' not in parsed.query):
        # oslo.db appends this query string to the URL.
        params = 'connect_timeout=%d' % connect_timeout
    # Imported here: the tool's commands load it only when they read a
    # database.
    from oslo_db.sqlalchemy import engines
    engine = engines.create_engine(
        parsed, max_retries=max_retries, retry_interval=retry_interval,
        connection_parameters=params, thread_checkin=False)
    if engine.dialect.name == 'mysql':
        # On checkout, once per connection, not on connect: oslo.db has
        # already opened (and pooled) a first connection, to test it,
        # and the first read would get that one as it was.
        @sa.event.listens_for(engine, 'checkout')
        def _read_only(dbapi_conn, record, proxy):
            if not record.info.get('read_only'):
                cursor = dbapi_conn.cursor()
                cursor.execute('SET SESSION TRANSACTION READ ONLY')
                cursor.close()
                record.info['read_only'] = True
    return engine


class ReaderEngines:
    """The read-only engines of one run, one per database, reused.

    A new engine per read would open a new connection for each: with
    PyMySQL, which offers TLS unless told not to, that is a new TLS
    context loading the system's certificates, paid by ``clean`` for
    every batch of consumers it re-verifies.
    Each read still gets a connection of its own from the pool, so
    concurrent reads (cells in threads, repair streams) never share one.
    """

    def __init__(self, **engine_args):
        # create_reader_engine's arguments: those of another process's
        # ReaderEngines for the same reads (readers/second_process.py).
        self.engine_args = engine_args
        self._engines = {}
        self._lock = threading.Lock()

    def connect(self, url):
        """A new connection of the pool of ``url``'s engine."""
        return self._engine(url).connect()

    def _engine(self, url):
        with self._lock:
            engine = self._engines.get(url)
        if engine is not None:
            return engine
        # Created outside the lock: creating one connects, and a slow
        # cell must not hold up the reads of the others.
        engine = create_reader_engine(url, **self.engine_args)
        with self._lock:
            kept = self._engines.setdefault(url, engine)
        if kept is not engine:
            engine.dispose()
        return kept

    def close(self):
        with self._lock:
            engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            engine.dispose()


def driver_rows(conn, query, size=10000):
    """The rows of a query without parameters, as the driver's tuples.

    For the bulk reads of a whole table: SQLAlchemy's Row objects would
    cost more than the database's own work. The query runs on the
    connection's own DB-API cursor, in the same transaction. The tables
    are declared with untyped columns, so SQLAlchemy would not convert
    any value either: the rows are the same. Fetched in batches, and
    chained in C: nothing runs in Python per row.
    """
    sql = str(query.compile(dialect=conn.dialect))
    return itertools.chain.from_iterable(
        _batches(conn, [(sql, None)], size))


def _batches(conn, statements, size):
    """The rows of each (sql, parameters or None) in turn, in batches of
    ``size``, run on the connection's own DB-API cursor.

    Every read that passes SQLAlchemy by (driver_rows, rows_in) goes
    through here: the benchmark counts the statements here too.
    """
    if not conn.in_transaction():
        # What conn.execute() would do first. On sqlite it is what
        # makes oslo.db emit BEGIN: without it every read on the
        # driver's cursor would be a transaction of its own, and the
        # reads of one connection could see different states.
        conn.begin()
    cursor = conn.connection.cursor()
    try:
        for sql, parameters in statements:
            if parameters is None:
                cursor.execute(sql)
            else:
                cursor.execute(sql, parameters)
            while True:
                batch = cursor.fetchmany(size)
                if not batch:
                    break
                yield batch
    finally:
        cursor.close()


# Uuids per "IN (...)" look-up. Large enough that a look-up is one
# statement per table in any cloud (they are for the consumers nothing
# live owns); small enough for sqlite's 32,766 parameters and to keep
# MySQL's range optimiser (range_optimizer_max_mem_size, about 230
# bytes a value) from falling back to a table scan.
IN_LIST_SIZE = 10000


# See serial_reads.
_SQLITE_READS = threading.Lock()


def serial_reads(conn):
    """A lock for bulk reads on this connection, if they must take turns.

    sqlite hands back the interpreter lock for every row it steps
    through: bulk reads of several sqlite files in threads pass it back
    and forth on each row, and take longer than one after the other.
    So they take turns (sqlite files are local: there is no network wait
    to overlap). Reads from a server (MySQL) need not.
    """
    return (_SQLITE_READS if conn.dialect.name == 'sqlite'
            else contextlib.nullcontext())


# Where a look-up's values go: ``column.in_(IN_VALUES)``, then rows_in.
IN_VALUES = sa.bindparam('in_values', expanding=True)
_IN_MARKER = '__[POSTCOMPILE_in_values]'


def rows_in(conn, query, values, size=IN_LIST_SIZE):
    """The rows of a look-up, as the driver's tuples, ``size`` values at
    a time.

    ``query`` holds ``IN_VALUES`` once and no other parameter. Its text
    is compiled once and each chunk's values handed to the driver's
    cursor: SQLAlchemy would compile a statement and a name for every
    value and make a Row of each row, which cost more than the
    database's own work for the many consumers of a large cloud that
    nothing live owns.
    """
    compiled = query.compile(dialect=conn.dialect)
    if set(compiled.params) != {IN_VALUES.key}:
        raise ValueError('a look-up takes IN_VALUES as its only parameter')
    head, marker, tail = str(compiled).partition(_IN_MARKER)
    if not marker or _IN_MARKER in tail:
        raise ValueError('a look-up takes IN_VALUES once')
    mark = '?' if conn.dialect.paramstyle == 'qmark' else '%s'
    statements = ((head + ', '.join([mark] * len(chunk)) + tail, chunk)
                  for chunk in chunks(values, size))
    return itertools.chain.from_iterable(
        _batches(conn, statements, IN_LIST_SIZE))


def chunks(items, size=IN_LIST_SIZE):
    items = sorted(items)
    for start in range(0, len(items), size):
        yield items[start:start + size]
