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
"""Read nova's side of the snapshot from the API and cell databases.

A constant number of statements per database, whatever the cloud's
size: the cells and build requests from the API database; compute
nodes, services, live instances and live migrations from each cell;
then one look-up per table (instance mappings, deleted rows, shadow
tables) for all the consumers that are not live anywhere. Cells are
read in parallel, each in its own short read-only transaction (sqlite
files' bulk reads take turns, see db_utils.serial_reads), and a cell
that cannot be read within ``[nova_orphans] cell_timeout`` is reported,
not fatal.
"""

import datetime
import functools
import time

from oslo_log import log as logging
from oslo_serialization import jsonutils
import sqlalchemy as sa

from nova_orphans.conf import orphans as orphans_conf
from nova_orphans import db_utils
from nova_orphans.engine import claims as claims_mod
from nova_orphans.engine import model
from nova_orphans.engine import rules
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans.readers import base
from nova_orphans.readers import ports
from nova_orphans.readers import scatter

LOG = logging.getLogger(__name__)

CELL0_UUID = '00000000-0000-0000-0000-000000000000'

# Where a look-up's uuids go (see db_utils.rows_in).
_IN = db_utils.IN_VALUES


# The releases whose schemas the readers know (see check_schema).
OLDEST_RELEASE = '27 (2023.1)'
NEWEST_RELEASE = '34 (2026.2)'

# {'api' or 'cell': {table: {column, ...}}}: every column a reader here
# selects, gathered from the declarations below as they are made, so a
# column added to one is checked without further ado.
_NEEDED = {'api': {}, 'cell': {}}

# Columns some supported releases lack, read as NULL where they do:
# {(table, column): the nova release that added it}. Where nova has them
# but left them NULL (rows written before the upgrade), the readers fall
# back the same way (instances.compute_id: to host and node).
OPTIONAL = {
    ('instances', 'compute_id'): '28 (2023.2)',
    ('shadow_instances', 'compute_id'): '28 (2023.2)',
}


def _table(name, *columns, database='cell'):
    _NEEDED[database].setdefault(name, set()).update(columns)
    return sa.table(name, *(sa.column(c) for c in columns))


CELL_MAPPINGS = _table('cell_mappings', 'id', 'uuid', 'name',
                       'database_connection', database='api')
INSTANCE_MAPPINGS = _table('instance_mappings', 'instance_uuid', 'cell_id',
                           'queued_for_delete', database='api')
BUILD_REQUESTS = _table('build_requests', 'instance_uuid', database='api')
# The scheduler hints an instance was created with (see
# rules.missing_details).
REQUEST_SPECS = _table('request_specs', 'instance_uuid', 'spec',
                       database='api')
COMPUTE_NODES = _table('compute_nodes', 'id', 'uuid', 'host',
                       'hypervisor_hostname', 'hypervisor_type', 'deleted')
# Archived nodes: their provider trees may still be in placement. Read
# with the live ones, in the same statement.
SHADOW_COMPUTE_NODES = _table('shadow_compute_nodes', 'uuid', 'host',
                              'hypervisor_hostname', 'hypervisor_type')
_COMPUTE_NODES_READ = sa.union_all(
    sa.select(COMPUTE_NODES, sa.literal_column('0').label('shadow')),
    sa.select(sa.null().label('id'), SHADOW_COMPUTE_NODES.c.uuid,
              SHADOW_COMPUTE_NODES.c.host,
              SHADOW_COMPUTE_NODES.c.hypervisor_hostname,
              SHADOW_COMPUTE_NODES.c.hypervisor_type,
              sa.literal_column('1').label('deleted'),
              sa.literal_column('1').label('shadow')))
SERVICES = _table('services', 'host', 'binary', 'disabled', 'forced_down',
                  'deleted')
_INSTANCE_COLUMNS = ('uuid', 'host', 'node', 'vm_state', 'task_state',
                     'project_id', 'user_id', 'deleted', 'hidden',
                     'compute_id')
_MIGRATION_COLUMNS = ('uuid', 'instance_uuid', 'status', 'migration_type',
                      'source_compute', 'source_node', 'dest_compute',
                      'dest_node', 'deleted', 'hidden')
INSTANCES = _table('instances', *_INSTANCE_COLUMNS)
MIGRATIONS = _table('migrations', *_MIGRATION_COLUMNS)
SHADOW_INSTANCES = _table('shadow_instances', *_INSTANCE_COLUMNS)
SHADOW_MIGRATIONS = _table('shadow_migrations', *_MIGRATION_COLUMNS)
INSTANCE_EXTRA = _table('instance_extra', 'instance_uuid', 'flavor',
                        'deleted')
INSTANCE_IMAGES = _table('instances', 'uuid', 'image_ref')
BLOCK_DEVICES = _table('block_device_mapping', 'instance_uuid', 'boot_index',
                       'destination_type', 'deleted')
INFO_CACHES = _table('instance_info_caches', 'instance_uuid', 'network_info',
                     'deleted')
# What a live instance's ports and flavor claim (see model.Claims).
INFO_CACHE_CLAIMS = _table('instance_info_caches', 'instance_uuid',
                           'network_info', 'created_at', 'updated_at')
FLAVOR_CLAIMS = _table('instance_extra', 'instance_uuid', 'flavor')
# When nova last started attaching or detaching a port (model.Claims).
INTERFACE_ACTIONS = _table('instance_actions', 'instance_uuid', 'action',
                           'start_time')
# When nova last worked on an instance (see model.Activity).
INSTANCE_TIMES = _table('instances', 'uuid', 'created_at', 'updated_at')
MIGRATION_TIMES = _table('migrations', 'instance_uuid', 'created_at',
                         'updated_at')
# Of an action and its events, only the times nova's API shows: the
# compute API reader sees no others, and both front ends must name the
# same moment. An event's updated_at is written when conductor saves it,
# after the finish_time the compute host took: a second later, under
# load.
ACTIONS = _table('instance_actions', 'id', 'instance_uuid', 'updated_at',
                 'start_time')
ACTION_EVENTS = _table('instance_actions_events', 'action_id', 'event',
                       'start_time', 'finish_time')


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


class CellConnection:
    """What the API database says about one cell."""

    def __init__(self, uuid, name, url):
        self.uuid = uuid
        self.name = name
        self.url = url


class NovaDBReader(base.NovaReader):
    """``network``: makes the client that asks neutron for the ports
    bound to servers (``ports``, a ports.NeutronPorts); None: the
    network API is never asked. ``grace_period`` (seconds) and
    ``foreign`` (a model.Foreign): the run's, resolved from its options
    and nova.conf by the application layer.
    """

    def __init__(self, conf, network=None,
                 grace_period=orphans_conf.DEFAULT_GRACE_PERIOD,
                 foreign=model.Foreign()):
        self.conf = conf
        self.ports = ports.NeutronPorts(network)
        self.api_url = conf.api_database.connection
        if not self.api_url:
            raise exception.ConfigError(
                reason=_('[api_database] connection is not set'))
        opts = conf.nova_orphans
        self._engines = db_utils.ReaderEngines(
            max_retries=opts.db_max_retries,
            retry_interval=opts.db_retry_interval)
        self.cell_timeout = opts.cell_timeout
        self.grace_period = datetime.timedelta(seconds=grace_period)
        self.foreign = foreign
        # What each database offers (see check_schema): checked on its
        # first read of the run.
        self._api_checked = False
        self._schemas = {}
        # From read(): {cell_mappings.id: cell uuid} and
        # {cell uuid: {compute_nodes.id: uuid}}.
        self._cell_ids = {}
        self._node_ids = {}

    def close(self):
        self._engines.close()

    @property
    def label(self):
        return self.describe(self.conf)

    @staticmethod
    def describe(conf):
        """What a reader of ``conf`` reads, for the log."""
        return 'nova\'s databases (API database %s)' % db_utils.safe_url(
            conf.api_database.connection or '')

    # API database -------------------------------------------------------

    def _in_api(self, work, step, rows=len):
        """``work(connection)`` on the API database; one clear error.

        Logged at debug level: ``step`` (what it reads), ``rows(result)``
        (how many rows it got) and its time.
        """
        started = time.monotonic()
        try:
            with self._engines.connect(self.api_url) as conn:
                if not self._api_checked:
                    check_schema(conn, 'api', _(
                        'The nova API database %(url)s') % {
                            'url': db_utils.safe_url(self.api_url)})
                    self._api_checked = True
                result = work(conn)
            if LOG.isEnabledFor(logging.DEBUG):
                LOG.debug('nova API database %(url)s, %(step)s: %(rows)s in '
                          '%(seconds).3f s', {
                              'url': db_utils.safe_url(self.api_url),
                              'step': step, 'rows': rows(result),
                              'seconds': time.monotonic() - started})
            return result
        except exception.UnsupportedSchema:
            raise
        except Exception as e:
            raise exception.NovaUnreachable(
                _('The nova API database %(url)s could not be read: '
                  '%(error)s; check [api_database] connection') % {
                    'url': db_utils.safe_url(self.api_url),
                    'error': db_utils.safe_error(e, self.api_url)})

    def read_api(self):
        """The cells and every build request.

        Instance mappings are not read here: only those of consumers no
        live instance owns decide anything (see resolve), a few against
        one per instance of the cloud.
        """
        def read(conn):
            cells = conn.execute(sa.select(
                CELL_MAPPINGS.c.id, CELL_MAPPINGS.c.uuid,
                CELL_MAPPINGS.c.name,
                CELL_MAPPINGS.c.database_connection)).all()
            builds = conn.execute(sa.select(
                BUILD_REQUESTS.c.instance_uuid)).scalars().all()
            return cells, builds
        cells, builds = self._in_api(
            read, 'cells and build requests', lambda result: '%d cell(s), '
            '%d build request(s)' % tuple(map(len, result)))
        default = self.conf.database.connection
        self._cell_ids = {}
        connections = []
        for row in cells:
            self._cell_ids[row.id] = row.uuid
            connections.append(CellConnection(
                row.uuid, row.name,
                db_utils.format_cell_url(row.database_connection or '',
                                         default)))
        return connections, frozenset(builds)

    def _mappings(self, conn, consumers):
        """{uuid: InstanceMapping} of these consumers."""
        mapping, cells = model.InstanceMapping, self._cell_ids
        return {
            uuid: mapping(uuid, cells.get(cell_id), bool(queued))
            for uuid, cell_id, queued in db_utils.rows_in(
                conn, sa.select(INSTANCE_MAPPINGS).where(
                    INSTANCE_MAPPINGS.c.instance_uuid.in_(_IN)), consumers)}

    # Cell databases -----------------------------------------------------

    def read(self):
        """Phase one: every cell's nodes, services and live rows."""
        connections, builds = self.read_api()
        self._connections = connections
        snapshot = model.NovaSnapshot(build_requests=builds,
                                      foreign=self.foreign)
        self._hidden = set()
        results = self._in_cells(connections, lambda read: read.live(),
                                 'live rows')
        for conn in connections:
            data, error = results[conn.uuid]
            if data is not None:
                self._node_ids[conn.uuid] = data.node_ids
            snapshot.cells[conn.uuid] = model.Cell(
                uuid=conn.uuid, name=conn.name, readable=error is None,
                error=error)
            if data is not None:
                _merge(snapshot, data, self._hidden)
        return snapshot

    def resolve(self, snapshot, consumers):
        """Phase two: find the consumers that nothing live owns.

        Reads their instance mappings, looks them up among deleted rows
        and shadow tables, and loads the instances of migration
        consumers. Usually a handful of uuids.
        """
        instances, migrations = snapshot.instances, snapshot.migrations
        missing = set(consumers).difference(instances).difference(migrations)
        owners = {m.instance_uuid for m in migrations.values()
                  if m.uuid in consumers and m.instance_uuid not in instances}
        if not missing and not owners:
            return snapshot
        mappings = snapshot.mappings
        if missing:
            mappings.update(self._in_api(
                lambda conn: self._mappings(conn, missing),
                'instance mappings of %d consumer(s)' % len(missing)))
        readable = [c for c in self._connections
                    if snapshot.cells[c.uuid].readable]

        def lookup(read):
            # Consumers mapped to another cell are settled there.
            here = {c for c in missing | owners
                    if c not in mappings or
                    mappings[c].cell in (None, read.cell)}
            return read.lookup(here & missing, here & owners)

        results = self._in_cells(readable, lookup,
                                 'deleted and archived rows')
        self._merge_results(snapshot, readable, results)
        return snapshot

    def read_activity(self, snapshot, instance_uuids):
        """When nova last worked on these live instances (model.Activity).

        A cell that cannot be read now is marked unreadable, which keeps
        everything it might own from being repaired.
        """
        snapshot.recent_since = base.recent_since(self.grace_period)
        return self._per_instance_cell(snapshot, instance_uuids,
                                       _CellRead.read_activity, 'activity')

    def read_claims(self, snapshot, instance_uuids):
        """What these live instances' ports and flavor claim (model.Claims).

        A cell that cannot be read now is marked unreadable, which keeps
        everything it might own from being repaired. Their ports are
        neutron's word where it can be asked (ports.NeutronPorts).
        """
        self._per_instance_cell(snapshot, instance_uuids,
                                _CellRead.read_claims, 'claims')
        return self.ports.prove(snapshot)

    def _per_instance_cell(self, snapshot, instance_uuids, read, step):
        """``read(cell_read, uuids)`` in each readable cell holding some
        of these instances, merged into the snapshot (``step``: what it
        reads, for the log).
        """
        by_cell = {}
        for uuid in instance_uuids:
            inst = snapshot.instances.get(uuid)
            if inst is not None:
                by_cell.setdefault(inst.cell, set()).add(uuid)
        conns = [c for c in self._connections if c.uuid in by_cell and
                 snapshot.cells[c.uuid].readable]
        results = self._in_cells(
            conns, lambda cell_read: read(cell_read, by_cell[cell_read.cell]),
            step)
        self._merge_results(snapshot, conns, results)
        return snapshot

    def read_consumers(self, audited, consumers):
        """Fresh nova rows for a few consumers, to re-verify before a write.

        Cells, compute nodes and services come from ``audited`` (the audit's
        snapshot); instances, migrations (including every migration of
        the instances involved), mappings and build requests are read
        again now, and the activity and claims of every live instance
        involved.
        """
        consumers = set(consumers)
        mappings, builds = self._api_rows(consumers)
        snapshot = model.NovaSnapshot(
            cells=dict(audited.cells), compute_nodes=audited.compute_nodes,
            services=audited.services, mappings=mappings,
            build_requests=builds,
            recent_since=base.recent_since(self.grace_period),
            foreign=self.foreign)
        readable = [c for c in self._connections
                    if snapshot.cells[c.uuid].readable]
        results = self._in_cells(readable,
                                 lambda read: read.consumers(consumers),
                                 'rows of %d consumer(s) to re-verify' %
                                 len(consumers))
        self._merge_results(snapshot, readable, results)
        return self.ports.prove(snapshot)

    def heal_data(self, instances):
        """{instance uuid: (flavor, boot_from_volume, network_info)}."""
        by_cell = {}
        for inst in instances:
            by_cell.setdefault(inst.cell, set()).add(inst.uuid)
        conns = [c for c in self._connections if c.uuid in by_cell]
        results = self._in_cells(
            conns, lambda read: read.heal_data(by_cell[read.cell]),
            'what heals %d instance(s)' % len(instances))
        data = {}
        for conn in conns:
            found, error = results[conn.uuid]
            if error is not None:
                raise exception.CellUnreachable(cell=conn.name or conn.uuid,
                                                reason=error)
            data.update(found)
        return data

    def read_internal_hints(self, snapshot, instance_uuids):
        """The ``_nova*`` scheduler hints of these instances' request
        specs (NovaSnapshot.internal_hints), from the API database.
        """
        def read(conn):
            return db_utils.rows_in(
                conn, sa.select(REQUEST_SPECS.c.instance_uuid,
                                REQUEST_SPECS.c.spec).where(
                    REQUEST_SPECS.c.instance_uuid.in_(_IN)),
                sorted(instance_uuids))
        for uuid, spec in self._in_api(lambda conn: list(read(conn)),
                                       'request specs'):
            hints = rules.internal_hints(_spec_hints(spec))
            if hints:
                snapshot.internal_hints[uuid] = hints
        return snapshot

    def _api_rows(self, consumers):
        def read(conn):
            builds = frozenset(uuid for uuid, in db_utils.rows_in(
                conn, sa.select(BUILD_REQUESTS.c.instance_uuid).where(
                    BUILD_REQUESTS.c.instance_uuid.in_(_IN)), consumers))
            return self._mappings(conn, consumers), builds
        return self._in_api(
            read, 'mappings and build requests of %d consumer(s)' %
            len(consumers), lambda result: '%d mapping(s), %d build '
            'request(s)' % tuple(map(len, result)))

    def _merge_results(self, snapshot, connections, results):
        for conn in connections:
            data, error = results[conn.uuid]
            if error is not None:
                snapshot.cells[conn.uuid] = model.Cell(
                    uuid=conn.uuid, name=conn.name, readable=False,
                    error=error)
            else:
                _merge(snapshot, data, self._hidden)

    def _in_cells(self, connections, work, step):
        """Run ``work(_CellRead)`` in every cell at once, within the timeout.

        Returns {cell uuid: (result, None) or (None, error text)}.
        ``step``: what it reads, for the log.
        """
        results = scatter.gather(
            {conn.uuid: ('cell-%s' % conn.name,
                         functools.partial(self._run_in_cell, conn, work,
                                           step))
             for conn in connections},
            self.cell_timeout)
        late = (None, _('not read within %(seconds)s seconds') %
                {'seconds': self.cell_timeout})
        results = {uuid: late if result is scatter.TIMED_OUT else result
                   for uuid, result in results.items()}
        for _result, error in results.values():
            if isinstance(error, exception.UnsupportedSchema):
                raise error
        return results

    def _run_in_cell(self, conn, work, step):
        """(work's result, None), or (None, why the cell was not read).

        Logged at debug level: the cell, ``step``, the rows it read and
        its time.
        """
        started = time.monotonic()
        try:
            with self._engines.connect(conn.url) as db:
                schema = self._schemas.get(conn.uuid)
                if schema is None:
                    schema = self._schemas[conn.uuid] = check_schema(
                        db, 'cell', _('The database of nova cell %(cell)s '
                                      '(%(url)s)') % {
                            'cell': conn.name or conn.uuid,
                            'url': db_utils.safe_url(conn.url)})
                read = _CellRead(db, conn.uuid,
                                 self._node_ids.get(conn.uuid), schema)
                result = work(read)
            if LOG.isEnabledFor(logging.DEBUG):
                LOG.debug('Cell %(cell)s (%(url)s), %(step)s: %(rows)s in '
                          '%(seconds).3f s', {
                              'cell': conn.name or conn.uuid,
                              'url': db_utils.safe_url(conn.url), 'step': step,
                              'rows': read.rows(),
                              'seconds': time.monotonic() - started})
            return result, None
        except exception.UnsupportedSchema as e:
            # Not an unreadable cell: the run ends (see _in_cells).
            return None, e
        except Exception as e:
            error = db_utils.safe_error(e, conn.url)
            LOG.warning('Cell %(cell)s (%(url)s) could not be read: '
                        '%(error)s', {'cell': conn.name or conn.uuid,
                                      'url': db_utils.safe_url(conn.url),
                                      'error': error})
            return None, error


class _CellRead:
    """The queries against one cell database, in one connection."""

    def __init__(self, db, cell_uuid, node_ids=None, schema=None):
        self.db = db
        self.cell = cell_uuid
        self.schema = schema or Schema()
        self.nodes = {}
        self.services = []
        self.instances = {}
        self.migrations = {}
        # uuids whose only row here is a hidden cross-cell copy.
        self.hidden = set()
        self.activity = {}
        self.claims = {}
        # {compute_nodes.id: uuid}, to turn instances.compute_id around:
        # read by live(), which every later read of the cell follows.
        self.node_ids = node_ids if node_ids is not None else {}

    def rows(self):
        """What this read found, in words, for the log."""
        found = [(len(self.nodes), 'compute node(s)'),
                 (len(self.services), 'service(s)'),
                 (len(self.instances), 'instance(s)'),
                 (len(self.migrations), 'migration(s)'),
                 (len(self.activity), 'instance(s)\' activity'),
                 (len(self.claims), 'instance(s)\' claims')]
        return ', '.join('%d %s' % (n, what) for n, what in found
                         if n) or 'no row'

    def live(self):
        self.node_ids = {}
        rows = db_utils.driver_rows
        archived = []
        for (id_, uuid, host, hypervisor_hostname, hypervisor_type,
             deleted, shadow) in rows(self.db, _COMPUTE_NODES_READ):
            if shadow:
                archived.append((uuid, host, hypervisor_hostname,
                                 hypervisor_type))
                continue
            self.node_ids[id_] = uuid
            self.nodes[uuid] = model.ComputeNode(
                uuid=uuid, host=host, hypervisor_hostname=hypervisor_hostname,
                hypervisor_type=hypervisor_type, cell=self.cell,
                deleted=bool(deleted))
        for uuid, host, hypervisor_hostname, hypervisor_type in archived:
            # An archived row under the uuid of a live one is its past.
            if uuid and uuid not in self.nodes:
                self.nodes[uuid] = model.ComputeNode(
                    uuid=uuid, host=host,
                    hypervisor_hostname=hypervisor_hostname,
                    hypervisor_type=hypervisor_type, cell=self.cell,
                    deleted=True, archived=True)
        self.services = [
            model.Service(host=host, binary=binary, cell=self.cell,
                          disabled=bool(disabled),
                          forced_down=bool(forced_down),
                          deleted=bool(deleted))
            for host, binary, disabled, forced_down, deleted in rows(
                self.db, sa.select(SERVICES))]
        # Whole tables but for deleted rows: read as plain tuples. The
        # reads above began the transaction (and waited out any lock on
        # the database) in parallel with the other cells.
        live = sa.literal_column('0')
        with db_utils.serial_reads(self.db):
            self._instances(INSTANCES, INSTANCES.c.deleted == live)
            self._migrations(MIGRATIONS, MIGRATIONS.c.deleted == live)
        return self

    def lookup(self, consumers, instance_uuids):
        """Deleted, then archived, rows for the given uuids.

        Tens of thousands of them in a large cloud: sqlite cells take
        turns, as for live() (see db_utils.serial_reads).
        """
        with db_utils.serial_reads(self.db):
            for table, loader, uuids in (
                    (INSTANCES, self._instances, consumers | instance_uuids),
                    (SHADOW_INSTANCES, self._instances,
                     consumers | instance_uuids),
                    (MIGRATIONS, self._migrations, consumers),
                    (SHADOW_MIGRATIONS, self._migrations, consumers)):
                wanted = uuids.difference(self.instances, self.migrations)
                if wanted:
                    loader(table, table.c.uuid.in_(_IN), wanted,
                           archived=table.name.startswith('shadow_'))
        return self

    def consumers(self, consumers):
        """Every row that decides these consumers' fate, deleted or not,
        and the activity of the live instances among them.
        """
        self._migrations(MIGRATIONS, MIGRATIONS.c.uuid.in_(_IN), consumers)
        instance_uuids = set(consumers) | {
            m.instance_uuid for m in self.migrations.values()}
        self._instances(INSTANCES, INSTANCES.c.uuid.in_(_IN), instance_uuids)
        self._migrations(MIGRATIONS, MIGRATIONS.c.instance_uuid.in_(_IN),
                         instance_uuids)
        self.lookup(set(consumers), instance_uuids)
        live = {uuid for uuid, inst in self.instances.items()
                if not (inst.deleted or inst.archived)}
        self.read_claims(live)
        return self.read_activity(live)

    def read_claims(self, instance_uuids):
        """model.Claims of these instances: their info cache's network
        info (and when nova wrote it) and their current flavor.

        Two look-ups per call, for the few instances that hold a port's
        classes on a child provider (classify.claim_candidates).
        """
        rows_in = db_utils.rows_in
        caches = {uuid: (info, created, updated)
                  for uuid, info, created, updated in rows_in(
                      self.db, sa.select(INFO_CACHE_CLAIMS).where(
                          INFO_CACHE_CLAIMS.c.instance_uuid.in_(_IN)),
                      instance_uuids)}
        flavors = dict(rows_in(self.db, sa.select(FLAVOR_CLAIMS).where(
            FLAVOR_CLAIMS.c.instance_uuid.in_(_IN)), instance_uuids))
        changed = {}
        # The action filtered here: a look-up takes no other parameter.
        for uuid, action, start in rows_in(self.db, sa.select(
                INTERFACE_ACTIONS).where(
                INTERFACE_ACTIONS.c.instance_uuid.in_(_IN)),
                instance_uuids):
            start = _when(start)
            if action in _INTERFACE_ACTIONS and start is not None and (
                    uuid not in changed or start > changed[uuid]):
                changed[uuid] = start
        for uuid in instance_uuids:
            info, created, updated = caches.get(uuid, (None, None, None))
            self.claims[uuid] = claims_mod.claims(
                info, claims_mod.flavor_record(flavors.get(uuid)),
                network_changed_at=_when(updated) or _when(created),
                ports_changed_at=changed.get(uuid))
        return self

    def read_activity(self, instance_uuids):
        """model.Activity of these instances, from their rows, their
        migrations, their latest instance action and its events.

        Four look-ups per call: the instances asked about are the few
        whose allocations would otherwise be repaired.
        """
        changed, pending = {}, {}

        def seen(uuid, *times):
            for when in times:
                when = _when(when)
                if when is not None and (uuid not in changed or
                                         when > changed[uuid]):
                    changed[uuid] = when

        rows_in, db = db_utils.rows_in, self.db
        for uuid, created, updated in rows_in(db, sa.select(
                INSTANCE_TIMES).where(INSTANCE_TIMES.c.uuid.in_(_IN)),
                instance_uuids):
            seen(uuid, created, updated)
        for uuid, created, updated in rows_in(db, sa.select(
                MIGRATION_TIMES).where(
                    MIGRATION_TIMES.c.instance_uuid.in_(_IN)),
                instance_uuids):
            seen(uuid, created, updated)
        # nova's "latest action" (action_get_by_request_id's
        # counterpart): the newest row, ids only grow.
        latest = sa.select(sa.func.max(ACTIONS.c.id)).where(
            ACTIONS.c.instance_uuid.in_(_IN)).group_by(
                ACTIONS.c.instance_uuid)
        actions = {}
        for action_id, uuid, updated, start in rows_in(
                db, sa.select(ACTIONS).where(ACTIONS.c.id.in_(latest)),
                instance_uuids):
            actions[action_id] = uuid
            seen(uuid, updated, start)
        for action_id, event, start, finish in rows_in(
                db, sa.select(ACTION_EVENTS).where(
                    ACTION_EVENTS.c.action_id.in_(_IN)), actions):
            uuid = actions[action_id]
            seen(uuid, start, finish)
            if finish is None:
                pending[uuid] = (event, _when(start))
        for uuid in set(changed) | set(pending):
            event, since = pending.get(uuid, (None, None))
            self.activity[uuid] = model.Activity(
                changed_at=changed.get(uuid), pending_event=event,
                pending_since=since)
        return self

    def heal_data(self, instance_uuids):
        found = {}
        for chunk in db_utils.chunks(instance_uuids):
            flavors = dict(self.db.execute(sa.select(
                INSTANCE_EXTRA.c.instance_uuid, INSTANCE_EXTRA.c.flavor).where(
                    INSTANCE_EXTRA.c.instance_uuid.in_(chunk))).all())
            images = dict(self.db.execute(sa.select(
                INSTANCE_IMAGES.c.uuid, INSTANCE_IMAGES.c.image_ref).where(
                    INSTANCE_IMAGES.c.uuid.in_(chunk))).all())
            volume_roots = set(self.db.execute(sa.select(
                BLOCK_DEVICES.c.instance_uuid).where(
                    BLOCK_DEVICES.c.instance_uuid.in_(chunk),
                    BLOCK_DEVICES.c.boot_index == 0,
                    BLOCK_DEVICES.c.destination_type == 'volume',
                    BLOCK_DEVICES.c.deleted == 0)).scalars())
            caches = dict(self.db.execute(sa.select(
                INFO_CACHES.c.instance_uuid, INFO_CACHES.c.network_info).where(
                    INFO_CACHES.c.instance_uuid.in_(chunk))).all())
            for uuid in chunk:
                if uuid not in flavors:
                    continue
                found[uuid] = (
                    _flavor(flavors[uuid]),
                    uuid in volume_roots or not images.get(uuid),
                    jsonutils.loads(caches.get(uuid) or '[]'))
        return found

    def _rows(self, table, where, values=None):
        """The table's columns, in declaration order, as tuples.

        A look-up (``where`` holds db_utils.IN_VALUES, for ``values``):
        hidden cross-cell copies come first, so a visible row overrides
        them. A bulk read (no ``values``): ``where`` has no parameters
        and the table is ``instances`` or ``migrations``, whose uuids are
        unique (nova's uniq_instances0uuid and migrations_uuid), so no
        row can override another; the rows are read unsorted. Both
        through the driver (see db_utils.driver_rows and rows_in).
        """
        query = self.schema.select(table).where(where)
        if values is None:
            return db_utils.driver_rows(self.db, query)
        return db_utils.rows_in(
            self.db, query.order_by(table.c.hidden.desc()), values)

    def _instances(self, table, where, values=None, archived=False):
        node_ids = self.node_ids
        hidden = self.hidden
        instance = model.Instance
        # Hosts, nodes, vm_states, projects and users repeat from
        # instance to instance, but the driver makes a new string for
        # every value: keep one of each (they took a third of a large
        # run's memory). task_state is mostly NULL, always the same None.
        same = {}.setdefault
        for (uuid, host, node, vm_state, task_state, project_id, user_id,
             deleted, is_hidden, compute_id) in self._rows(table, where,
                                                           values):
            if is_hidden:
                hidden.add(uuid)
            else:
                hidden.discard(uuid)
            # Positional, in field order (one per instance of the cloud).
            self.instances[uuid] = instance(
                uuid, self.cell, same(host, host), same(node, node),
                same(vm_state, vm_state), task_state,
                bool(deleted), archived, same(project_id, project_id),
                same(user_id, user_id),
                None if compute_id is None else node_ids.get(compute_id))

    def _migrations(self, table, where, values=None, archived=False):
        hidden = self.hidden
        migration = model.Migration
        for (uuid, instance_uuid, status, migration_type, source_compute,
             source_node, dest_compute, dest_node, deleted,
             is_hidden) in self._rows(table, where, values):
            if uuid is None:
                continue
            if is_hidden:
                hidden.add(uuid)
            else:
                hidden.discard(uuid)
            self.migrations[uuid] = migration(
                uuid=uuid, instance_uuid=instance_uuid, cell=self.cell,
                status=status, migration_type=migration_type,
                source_compute=source_compute, source_node=source_node,
                dest_compute=dest_compute, dest_node=dest_node,
                deleted=bool(deleted), archived=archived)


# nova's instance actions that change which ports a server has.
_INTERFACE_ACTIONS = ('attach_interface', 'detach_interface')


def _spec_hints(serialized):
    """The scheduler hints of a serialized RequestSpec, or {}."""
    try:
        spec = jsonutils.loads(serialized or '{}')
    except ValueError:
        return {}
    data = spec.get('nova_object.data', spec) if isinstance(
        spec, dict) else None
    hints = data.get('scheduler_hints') if isinstance(data, dict) else None
    return hints if isinstance(hints, dict) else {}


def _when(value):
    """A timestamp column's value as a naive UTC datetime.

    MySQL's driver returns datetimes; sqlite's returns nova's text.
    """
    if value is None or isinstance(value, datetime.datetime):
        return value
    return datetime.datetime.fromisoformat(value)


def _flavor(serialized):
    """The current flavor from instance_extra.flavor, as a plain dict."""
    data = jsonutils.loads(serialized or '{}').get('cur') or {}
    return dict(data.get('nova_object.data', data))


def _rank(record, hidden):
    """Which copy of a row seen in several cells nova acts on."""
    return (not (record.deleted or record.archived), not hidden)


def _merge(snapshot, cell_read, hidden):
    nodes = snapshot.compute_nodes
    for uuid, node in cell_read.nodes.items():
        # A node live in one cell is live, whatever another cell deleted
        # (an ironic node moved between cells keeps its uuid).
        if node.deleted and uuid in nodes and not nodes[uuid].deleted:
            continue
        nodes[uuid] = node
    snapshot.activity.update(cell_read.activity)
    snapshot.claims.update(cell_read.claims)
    snapshot.services.extend(cell_read.services)
    for mine, theirs in ((cell_read.instances, snapshot.instances),
                         (cell_read.migrations, snapshot.migrations)):
        if theirs.keys().isdisjoint(mine):
            # The first cell read, or none of its rows was seen in the
            # cells before (as usual): every row is taken as it is.
            theirs.update(mine)
            hidden.difference_update(mine)
            hidden.update(cell_read.hidden.intersection(mine))
            continue
        for uuid, record in mine.items():
            known = theirs.get(uuid)
            is_hidden = uuid in cell_read.hidden
            if known is None or _rank(record, is_hidden) > _rank(
                    known, uuid in hidden):
                theirs[uuid] = record
                if is_hidden:
                    hidden.add(uuid)
                else:
                    hidden.discard(uuid)
