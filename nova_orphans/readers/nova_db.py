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
not fatal. The queries against a cell are nova_cells'; the check that a
database offers what they select, nova_schema's.
"""

import collections
import datetime
import functools
import time

from oslo_log import log as logging
from oslo_serialization import jsonutils
import sqlalchemy as sa

from nova_orphans.conf import orphans as orphans_conf
from nova_orphans import db_utils
from nova_orphans.engine import heal
from nova_orphans.engine import model
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans import progress as progress_mod
from nova_orphans.readers import base
from nova_orphans.readers import nova_cells
from nova_orphans.readers import nova_schema
from nova_orphans.readers import ports
from nova_orphans.readers import scatter

LOG = logging.getLogger(__name__)

# Where a look-up's uuids go (see db_utils.rows_in).
_IN = db_utils.IN_VALUES
_table = nova_schema.table

CELL_MAPPINGS = _table('cell_mappings', 'id', 'uuid', 'name',
                       'database_connection', database='api')
INSTANCE_MAPPINGS = _table('instance_mappings', 'instance_uuid', 'cell_id',
                           database='api')
BUILD_REQUESTS = _table('build_requests', 'instance_uuid', database='api')
# The scheduler hints an instance was created with (see
# heal.missing_details).
REQUEST_SPECS = _table('request_specs', 'instance_uuid', 'spec',
                       database='api')
# The flavors a host view's --flavor and capacity_flavors name.
FLAVOR_FIELDS = ('name', 'vcpus', 'memory_mb', 'root_gb', 'ephemeral_gb',
                 'swap')
FLAVORS = _table('flavors', 'id', *FLAVOR_FIELDS, database='api')
FLAVOR_EXTRA_SPECS = _table('flavor_extra_specs', 'flavor_id', 'key',
                            'value', database='api')


# What the API database says about one cell.
CellConnection = collections.namedtuple('CellConnection', 'uuid name url')


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
        # What each database offers (see nova_schema.check_schema):
        # checked on its first read of the run.
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
                    nova_schema.check_schema(conn, 'api', _(
                        'The nova API database %(url)s') % {
                            'url': db_utils.safe_url(self.api_url)})
                    self._api_checked = True
                result = work(conn)
            progress_mod.log_time(
                LOG, started, 'nova API database %(url)s, %(step)s: %(rows)s '
                'in %(seconds).3f s', {'url': db_utils.safe_url(self.api_url),
                                       'step': step, 'rows': rows(result)})
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
        self._cell_ids = {row.id: row.uuid for row in cells}
        connections = [
            CellConnection(row.uuid, row.name, db_utils.format_cell_url(
                row.database_connection or '', default))
            for row in cells]
        return connections, frozenset(builds)

    def _mappings(self, conn, consumers):
        """{uuid: InstanceMapping} of these consumers."""
        mapping, cells = model.InstanceMapping, self._cell_ids
        return {
            uuid: mapping(uuid, cells.get(cell_id))
            for uuid, cell_id in db_utils.rows_in(
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
            snapshot.cells[conn.uuid] = model.Cell(
                uuid=conn.uuid, name=conn.name, readable=error is None,
                error=error)
            if data is not None:
                self._node_ids[conn.uuid] = data.node_ids
                nova_cells.merge(snapshot, data, self._hidden)
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
        return self._per_instance_cell(
            snapshot, instance_uuids, nova_cells.CellRead.read_activity,
            'activity')

    def read_claims(self, snapshot, instance_uuids):
        """What these live instances' ports and flavor claim (model.Claims).

        A cell that cannot be read now is marked unreadable, which keeps
        everything it might own from being repaired. Their ports are
        neutron's word where it can be asked (ports.NeutronPorts).
        """
        self._per_instance_cell(snapshot, instance_uuids,
                                nova_cells.CellRead.read_claims, 'claims')
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
            hints = heal.internal_hints(_spec_hints(spec))
            if hints:
                snapshot.internal_hints[uuid] = hints
        return snapshot

    def flavors(self, names):
        """{name: flavor} of the flavors of these names the API database
        has, public and private (a name nova has none of is not a key):
        plain mappings of its ``flavors`` row (engine.shapes' keys) with
        their ``extra_specs``.
        """
        def read(conn):
            rows = conn.execute(sa.select(FLAVORS).where(
                FLAVORS.c.name.in_(sorted(names)))).all()
            found = {row.id: dict(zip(FLAVOR_FIELDS, row[1:]),
                                  extra_specs={}) for row in rows}
            if found:
                for flavor_id, key, value in conn.execute(
                        sa.select(FLAVOR_EXTRA_SPECS).where(
                            FLAVOR_EXTRA_SPECS.c.flavor_id.in_(
                                sorted(found)))):
                    found[flavor_id]['extra_specs'][key] = value
            return {f['name']: f for f in found.values()}
        return self._in_api(read, 'flavors %s' % ', '.join(sorted(names)))

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
                nova_cells.merge(snapshot, data, self._hidden)

    def _in_cells(self, connections, work, step):
        """Run ``work(CellRead)`` in every cell at once, within the timeout.

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
                    schema = nova_schema.check_schema(
                        db, 'cell', _('The database of nova cell %(cell)s '
                                      '(%(url)s)') % {
                            'cell': conn.name or conn.uuid,
                            'url': db_utils.safe_url(conn.url)})
                    self._schemas[conn.uuid] = schema
                read = nova_cells.CellRead(
                    db, conn.uuid, self._node_ids.get(conn.uuid), schema)
                result = work(read)
            progress_mod.log_time(
                LOG, started, 'Cell %(cell)s (%(url)s), %(step)s: %(rows)s in '
                '%(seconds).3f s', {'cell': conn.name or conn.uuid,
                                    'url': db_utils.safe_url(conn.url),
                                    'step': step, 'rows': read.rows()})
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
