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
"""The queries against one of nova's cell databases, and how each
cell's rows join the snapshot.

A cell is read in one connection, in its own short read-only
transaction (see nova_db), by a CellRead: its
compute nodes, services and live rows first, then the deleted and
archived rows of the few consumers nothing live owns, the activity and
claims of the live instances the rules ask about, and what heals an
instance. merge adds a cell's rows to the snapshot, choosing among the
copies of a row that more than one cell holds the one nova acts on.
"""

import datetime

from oslo_serialization import jsonutils
import sqlalchemy as sa

from nova_orphans import db_utils
from nova_orphans.engine import claims as claims_mod
from nova_orphans.engine import model
from nova_orphans.readers import nova_schema

# Where a look-up's uuids go (see db_utils.rows_in).
_IN = db_utils.IN_VALUES
_table = nova_schema.table


COMPUTE_NODES = _table('compute_nodes', 'id', 'uuid', 'host',
                       'hypervisor_hostname', 'hypervisor_type', 'deleted')
# Archived nodes: their provider trees may still be in placement. Read
# with the live ones, in the same statement.
SHADOW_COMPUTE_NODES = _table('shadow_compute_nodes', 'uuid', 'host',
                              'hypervisor_hostname', 'hypervisor_type')
COMPUTE_NODES_READ = sa.union_all(
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
# after the finish_time the compute host took: later, under load.
ACTIONS = _table('instance_actions', 'id', 'instance_uuid', 'updated_at',
                 'start_time')
ACTION_EVENTS = _table('instance_actions_events', 'action_id', 'event',
                       'start_time', 'finish_time')


class CellRead:
    """The queries against one cell database, in one connection."""

    def __init__(self, db, cell_uuid, node_ids=None, schema=None):
        self.db = db
        self.cell = cell_uuid
        self.schema = schema or nova_schema.Schema()
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
             deleted, shadow) in rows(self.db, COMPUTE_NODES_READ):
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

        Many in a large cloud: sqlite cells take turns, as for live()
        (see db_utils.serial_reads).
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
        # every value: keep one of each, and a large cloud's rows hold
        # far less memory. task_state is mostly NULL, always the same
        # None.
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


def merge(snapshot, cell_read, hidden):
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
