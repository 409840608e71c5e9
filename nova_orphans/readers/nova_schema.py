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
"""The check that one of nova's databases offers what the readers
select from it.

Every table and column a reader of nova's databases selects is declared
through ``table`` (the API database's in nova_db, the cells' in
nova_cells), so that one check (check_schema), made on a database's
first read of a run, names everything an unsupported release or an
unfinished upgrade lacks, rather than a query failing half-way through
a read.
"""

from oslo_log import log as logging
import sqlalchemy as sa

from nova_orphans import exception

LOG = logging.getLogger(__name__)

# The releases whose schemas the readers know (see check_schema).
OLDEST_RELEASE = '27 (2023.1)'
NEWEST_RELEASE = '34 (2026.2)'

# {'api' or 'cell': {table: {column, ...}}}: every column a reader of
# nova's databases selects, gathered from its declaration (``table``) as
# it is made, so a column added to one is checked without further ado.
_NEEDED = {'api': {}, 'cell': {}}

# Columns some supported releases lack, read as NULL where they do:
# {(table, column): the nova release that added it}. Where nova has them
# but left them NULL (rows written before the upgrade), the readers fall
# back the same way (instances.compute_id: to host and node).
OPTIONAL = {
    ('instances', 'compute_id'): '28 (2023.2)',
    ('shadow_instances', 'compute_id'): '28 (2023.2)',
}


def table(name, *columns, database='cell'):
    """A table the readers select ``columns`` of, in an 'api' or 'cell'
    database: what check_schema asks the database for.
    """
    _NEEDED[database].setdefault(name, set()).update(columns)
    return sa.table(name, *(sa.column(c) for c in columns))


def _columns(conn, tables):
    """{table: {column, ...}} of those of ``tables`` the database has.

    One statement, from the catalogue, where the dialect has one to
    query; the inspector's one per table elsewhere.
    """
    if conn.dialect.name == 'sqlite':
        query = sa.text(
            "SELECT m.name, p.name FROM sqlite_master AS m "
            "JOIN pragma_table_info(m.name) AS p "
            "WHERE m.type = 'table' AND m.name IN :names")
    elif conn.dialect.name == 'mysql':
        query = sa.text(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = DATABASE() AND table_name IN :names")
    else:
        inspector = sa.inspect(conn)
        return {table: {c['name'] for c in inspector.get_columns(table)}
                for table in tables if inspector.has_table(table)}
    found = {}
    query = query.bindparams(sa.bindparam('names', expanding=True))
    for table, column in conn.execute(query, {'names': sorted(tables)}):
        found.setdefault(table, set()).add(column)
    return found


class Schema:
    """What one database offers of the columns the readers select.

    Decided once per database and run (see check_schema), so that the
    queries fit the schema from the start: trying a query and falling
    back when it fails would cost a failed statement on every read, and
    mean telling a missing column from any other error by its message.
    """

    def __init__(self, absent=frozenset()):
        # The OPTIONAL (table, column) pairs this database lacks.
        self.absent = absent

    def select(self, table):
        """SELECT of the table's declared columns, NULL for absent ones."""
        absent = self.absent
        return sa.select(*(
            sa.null().label(c.name) if (table.name, c.name) in absent else c
            for c in table.c))


def check_schema(conn, database, label):
    """The Schema of ``conn``, an 'api' or 'cell' database.

    Raises UnsupportedSchema, naming every missing table and column,
    when it lacks anything the readers select but the OPTIONAL columns:
    an older release than the readers know, or an upgrade that did not
    finish. Reading such a database as "unreadable" would hide it.
    """
    needed = _NEEDED[database]
    found = _columns(conn, needed)
    missing, absent = [], set()
    for table, columns in sorted(needed.items()):
        if table not in found:
            missing.append(table)
            continue
        for column in sorted(columns - found[table]):
            if (table, column) in OPTIONAL:
                absent.add((table, column))
            else:
                missing.append('%s.%s' % (table, column))
    if missing:
        raise exception.UnsupportedSchema(
            database=label, missing=', '.join(missing),
            oldest=OLDEST_RELEASE, newest=NEWEST_RELEASE)
    if absent:
        LOG.debug('%(database)s has no %(columns)s (a nova release older '
                  'than %(release)s): read as NULL',
                  {'database': label,
                   'columns': ', '.join('%s.%s' % c for c in sorted(absent)),
                   'release': max(OPTIONAL[c] for c in absent)})
    return Schema(frozenset(absent))
