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
"""Read placement's side of the snapshot from placement's database.

The fast mode, used when ``[placement_database] connection`` is set: a
handful of bulk, read-only queries instead of one GET per provider, so
placement itself does no work at all. It answers exactly what
:class:`~nova_orphans.readers.placement_api.PlacementAPIReader` answers:
the same providers with the same sharing flags and aggregates, the same
allocations and the same consumer records, so the findings are the same.
The allocation rows are grouped and made into allocations by
placement_rows, in a second process for a large cloud.

Consumer records (project, user, generation, type) are read in bulk,
all of them or just those the audit asks for, through
``consumer_records()``, so it needs no per-consumer GET and no second
classification; ``consumers()`` answers from the database too.
``consumer()`` still goes to the API: repairs and their re-verification
want placement's own, fresh document, and every write goes through the
API anyway.

Resource class names come from placement's ``resource_classes`` table:
placement stores the standard classes there too (their ids follow
os-resource-classes' order, custom ones start at 10000), so nothing of
placement is imported here.
"""

import collections
import time

from oslo_log import log as logging
import sqlalchemy as sa

from nova_orphans import db_utils
from nova_orphans.engine import hosts
from nova_orphans.engine import model
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans import progress as progress_mod
from nova_orphans.readers import base
from nova_orphans.readers import placement_api
from nova_orphans.readers import placement_rows
from nova_orphans.readers import second_process

LOG = logging.getLogger(__name__)


def _table(name, *columns):
    return sa.table(name, *(sa.column(c) for c in columns))


PROVIDERS = _table('resource_providers', 'id', 'uuid', 'name', 'generation',
                   'root_provider_id', 'parent_provider_id')
CONSUMERS = _table('consumers', 'uuid', 'project_id', 'user_id',
                   'generation', 'consumer_type_id')
PROJECTS = _table('projects', 'id', 'external_id')
USERS = _table('users', 'id', 'external_id')
CONSUMER_TYPES = _table('consumer_types', 'id', 'name')
TRAITS = _table('traits', 'id', 'name')
PROVIDER_TRAITS = _table('resource_provider_traits', 'resource_provider_id',
                         'trait_id')
AGGREGATES = _table('placement_aggregates', 'id', 'uuid')
PROVIDER_AGGREGATES = _table('resource_provider_aggregates',
                             'resource_provider_id', 'aggregate_id')
# Declared where the second process reads them (see placement_rows).
ALLOCATIONS = placement_rows.ALLOCATIONS
RESOURCE_CLASSES = placement_rows.RESOURCE_CLASSES
INVENTORIES = _table('inventories', 'resource_provider_id',
                     'resource_class_id')
# Every field of engine.hosts.Inventory, as placement's API shows it.
INVENTORY_FIELDS = ('total', 'reserved', 'allocation_ratio', 'min_unit',
                    'max_unit', 'step_size')
INVENTORY_ROWS = _table('inventories', 'resource_provider_id',
                        'resource_class_id', *INVENTORY_FIELDS)

# Clouds of at least this many providers have all their allocations read
# in a second process (PlacementDBReader.reads_in_background); None:
# never. At 50,000 providers and 1.15 million allocations on sqlite that
# takes the run about 0.7 s rather than 3.5 s, beside the cells' read;
# below a few thousand providers the read is shorter than a process's
# start.
SECOND_PROCESS_FROM = 5000


class PlacementDBReader(base.PlacementReader):
    """PlacementAPIReader's interface, answered from placement's database.

    ``api_reader`` (a PlacementAPIReader) serves ``consumer()``, the one
    read that must be placement's own fresh document.
    """

    reads_records_in_bulk = True

    def __init__(self, url, api_reader=None, max_retries=1,
                 retry_interval=1):
        self.url = url
        self.api_reader = api_reader
        self._engines = db_utils.ReaderEngines(
            max_retries=max_retries, retry_interval=retry_interval)
        self._ids = {}              # provider uuid -> internal id
        self._records = {}          # consumer uuid -> model.Consumer
        # The last allocations(): (them, all providers read?).
        self._allocated = (model.GroupedAllocations(by_consumer={}), False)

    @property
    def label(self):
        return 'placement\'s database %s' % db_utils.safe_url(self.url)

    # Plumbing -----------------------------------------------------------

    def close(self):
        self._engines.close()

    def _read(self, work, step, rows=len):
        """Run ``work(connection)`` in one short read-only transaction.

        Logged at debug level: ``step`` (what it reads), ``rows(result)``
        (how many rows it got) and its time.
        """
        started = time.monotonic()
        try:
            with self._engines.connect(self.url) as conn:
                result = work(conn)
            progress_mod.log_time(
                LOG, started, '%(source)s, %(step)s: %(rows)s in '
                '%(seconds).3f s', {'source': self.label, 'step': step,
                                    'rows': rows(result)})
            return result
        except exception.NovaOrphansException:
            raise
        except Exception as e:
            raise exception.PlacementDatabaseUnreadable(
                url=db_utils.safe_url(self.url),
                error=db_utils.safe_error(e, self.url))

    # The reader interface -----------------------------------------------

    def providers(self):
        """All providers, with sharing flags and the aggregates that matter.

        As the API reader: aggregates are only kept for sharing providers
        and, on other providers, only the aggregates a sharing provider
        is in.
        """
        return self._read(self._providers, 'resource providers')

    def _providers(self, conn):
        root = PROVIDERS.alias('root_rp')
        parent = PROVIDERS.alias('parent_rp')
        rows = conn.execute(
            sa.select(PROVIDERS.c.id, PROVIDERS.c.uuid, PROVIDERS.c.name,
                      PROVIDERS.c.generation,
                      root.c.uuid.label('root_uuid'),
                      parent.c.uuid.label('parent_uuid'),
                      parent.c.name.label('parent_name'))
            .select_from(
                PROVIDERS.outerjoin(
                    root, PROVIDERS.c.root_provider_id == root.c.id)
                .outerjoin(parent,
                           PROVIDERS.c.parent_provider_id == parent.c.id))
        ).all()
        sharing = (
            sa.select(PROVIDER_TRAITS.c.resource_provider_id)
            .select_from(PROVIDER_TRAITS.join(
                TRAITS, PROVIDER_TRAITS.c.trait_id == TRAITS.c.id))
            .where(TRAITS.c.name == model.SHARING_TRAIT))
        sharing_ids = set(conn.execute(sharing).scalars())
        aggregates = collections.defaultdict(set)
        if sharing_ids:
            shared = PROVIDER_AGGREGATES.alias('shared')
            # Every membership in an aggregate that a sharing provider is
            # in: what "GET ?member_of=<agg>" for each of them returns.
            for rp_id, agg_uuid in conn.execute(
                    sa.select(PROVIDER_AGGREGATES.c.resource_provider_id,
                              AGGREGATES.c.uuid)
                    .select_from(PROVIDER_AGGREGATES.join(
                        AGGREGATES,
                        PROVIDER_AGGREGATES.c.aggregate_id == AGGREGATES.c.id))
                    .where(PROVIDER_AGGREGATES.c.aggregate_id.in_(
                        sa.select(shared.c.aggregate_id).where(
                            shared.c.resource_provider_id.in_(
                                sharing))))
                    .distinct()):
                aggregates[rp_id].add(agg_uuid)
        foreign = self._foreign_owners(conn, rows)
        # Unpacked, not read by name: a row's attributes cost more than
        # the rest of the work, once per provider of the cloud.
        self._ids = {uuid: id_ for id_, uuid, *_rest in rows}
        provider, none = model.Provider, frozenset()
        return {
            uuid: provider(uuid, name, root_uuid or uuid, parent_uuid,
                           generation or 0, id_ in sharing_ids,
                           frozenset(aggregates[id_]) if id_ in aggregates
                           else none, foreign.get(id_))
            for id_, uuid, name, generation, root_uuid, parent_uuid, _parent
            in rows}

    @staticmethod
    def _foreign_owners(conn, rows):
        """{provider id: model.foreign_owner} of the providers another
        service owns: what their owner traits and, for ``blazar_``
        names, their reservation classes say.
        """
        owners = collections.defaultdict(set)
        for rp_id, trait in conn.execute(
                sa.select(PROVIDER_TRAITS.c.resource_provider_id,
                          TRAITS.c.name)
                .select_from(PROVIDER_TRAITS.join(
                    TRAITS, PROVIDER_TRAITS.c.trait_id == TRAITS.c.id))
                .where(TRAITS.c.name.startswith(model.OWNER_TRAIT_PREFIX,
                                                autoescape=True))):
            owners[rp_id].add(trait)
        blazar = {id_: (name, parent_name)
                  for id_, _uuid, name, _gen, _root, _parent, parent_name
                  in rows
                  if name and name.startswith(model.BLAZAR_PREFIX)}
        classes = collections.defaultdict(set)
        if blazar:
            for rp_id, rc in conn.execute(
                    sa.select(INVENTORIES.c.resource_provider_id,
                              RESOURCE_CLASSES.c.name)
                    .select_from(INVENTORIES.join(
                        RESOURCE_CLASSES, INVENTORIES.c.resource_class_id ==
                        RESOURCE_CLASSES.c.id))
                    .where(RESOURCE_CLASSES.c.name.startswith(
                        model.RESERVATION_CLASS_PREFIX, autoescape=True))):
                classes[rp_id].add(rc)
        found = {}
        for id_ in set(owners) | set(blazar):
            name, parent_name = blazar.get(id_, (None, None))
            owner = model.foreign_owner(name, parent_name,
                                        owners.get(id_, ()),
                                        classes.get(id_, ()))
            if owner is not None:
                found[id_] = owner
        return found

    @property
    def reads_in_background(self):
        """Whether a read of every provider's allocations is done in a
        second process (Audit.run then reads nova meanwhile).

        Known once providers() was read: only for clouds of at least
        SECOND_PROCESS_FROM providers, where the read takes seconds; for
        smaller ones starting a process would cost more than it saves.
        """
        return (SECOND_PROCESS_FROM is not None and
                len(self._ids) >= SECOND_PROCESS_FROM)

    def allocations(self, provider_uuids, progress=None, cancelled=None):
        """Allocations on the given providers.

        One query, chunked by provider when only some providers are in
        scope; their consumers' records are read by
        ``consumer_records()``. ``progress`` is told once, with the
        number of providers read. When every provider of a large cloud
        is read, the rows are read in a second process (see
        reads_in_background); ``cancelled()``, if given, is then asked
        while it reads, and once it says yes None is returned.
        """
        provider_uuids = set(provider_uuids)
        if self.reads_in_background and self._ids.keys() <= provider_uuids:
            read = self._read_elsewhere(provider_uuids, cancelled)
            if read is None:
                return None
        else:
            read = self._read_here(provider_uuids)
        allocations, everything = read
        # Their consumers' set only if consumer_records() needs it: the
        # audit makes its own.
        self._allocated = (allocations, everything)
        if progress:
            progress(len(provider_uuids))
        return allocations

    def _read_here(self, provider_uuids):
        """(allocations, whether every provider was read), read here."""
        return self._read(
            lambda conn: self._allocations(conn, provider_uuids),
            'allocations of %d provider(s)' % len(provider_uuids),
            lambda result: '%d allocation(s)' % len(result[0]))

    def _read_elsewhere(self, provider_uuids, cancelled):
        """Every allocation, read in a second process: (allocations,
        True), or None if cancelled. Read here if no process answers.
        """
        started = time.monotonic()
        try:
            answer = second_process.run(
                placement_rows.allocation_columns,
                (self.url, self._engines.engine_args), cancelled)
            progress_mod.log_time(
                LOG, started, '%(source)s, every allocation, in a second '
                'process: read in %(seconds).3f s', {'source': self.label})
        except second_process.Unavailable as e:
            LOG.warning('Reading placement\'s allocations in a second '
                        'process failed (%(why)s); reading them here.',
                        {'why': db_utils.safe_error(e, self.url)})
            return self._read_here(provider_uuids)
        if answer is None:
            return None
        columns, error = answer
        if error is not None:
            raise exception.PlacementDatabaseUnreadable(
                url=db_utils.safe_url(self.url), error=error)
        classes = self._read(placement_rows.resource_classes,
                             'resource classes')
        return placement_rows.build(placement_rows.unjoined(columns), classes,
                                    self._ids), True

    def _allocations(self, conn, provider_uuids):
        """(allocations, whether every provider was read)."""
        if not self._ids:
            self._ids = dict(conn.execute(
                sa.select(PROVIDERS.c.uuid, PROVIDERS.c.id)).all())
        wanted = [self._ids[u] for u in provider_uuids if u in self._ids]
        everything = bool(wanted) and len(wanted) == len(self._ids)
        rows = _where_in(conn, placement_rows.ALLOCATION_ROWS,
                         ALLOCATIONS.c.resource_provider_id, wanted,
                         everything)
        return placement_rows.build(
            placement_rows.runs(rows), placement_rows.resource_classes(conn),
            self._ids), everything

    def _consumer_records(self, conn, consumers, everything=False):
        if everything:
            return self._all_consumer_records(conn, consumers)
        query = (
            sa.select(CONSUMERS.c.uuid,
                      PROJECTS.c.external_id.label('project'),
                      USERS.c.external_id.label('user'),
                      CONSUMERS.c.generation,
                      CONSUMER_TYPES.c.name.label('type'))
            .select_from(
                CONSUMERS
                .outerjoin(PROJECTS, CONSUMERS.c.project_id == PROJECTS.c.id)
                .outerjoin(USERS, CONSUMERS.c.user_id == USERS.c.id)
                .outerjoin(CONSUMER_TYPES,
                           CONSUMERS.c.consumer_type_id == CONSUMER_TYPES.c.id)
            ))
        rows = _where_in(conn, query, CONSUMERS.c.uuid, consumers,
                         everything=False)
        # Untyped consumers read back as 'unknown' from the API (1.38+);
        # the engine treats None and 'unknown' alike.
        consumer = model.Consumer
        return {uuid: consumer(uuid, project, user, generation, type_)
                for uuid, project, user, generation, type_ in rows}

    def _all_consumer_records(self, conn, consumers):
        """The same, from one scan of the whole consumers table.

        The project, user and type names are read once each and looked
        up, rather than joined (and copied) into every row.
        """
        projects, users, types = (
            dict(conn.execute(sa.select(table.c.id, name)).all())
            for table, name in ((PROJECTS, PROJECTS.c.external_id),
                                (USERS, USERS.c.external_id),
                                (CONSUMER_TYPES, CONSUMER_TYPES.c.name)))
        consumer = model.Consumer
        rows = db_utils.driver_rows(
            conn, sa.select(CONSUMERS.c.uuid, CONSUMERS.c.project_id,
                            CONSUMERS.c.user_id, CONSUMERS.c.generation,
                            CONSUMERS.c.consumer_type_id))
        return {uuid: consumer(uuid, projects.get(project), users.get(user),
                               generation, types.get(type_))
                for uuid, project, user, generation, type_ in rows
                if uuid in consumers}

    def consumer_records(self, consumers=None):
        """Placement's records of these consumers: {uuid: model.Consumer}.

        By default, of every consumer of the last ``allocations()`` read:
        one scan of the consumers table when every provider was read.
        The audit uses them as they are (see app.audit.Audit). A
        consumer without a consumers row (placement's "incomplete
        consumers", or none at all) has none.
        """
        allocations, everything = self._allocated
        wanted = set(allocations.by_consumer if consumers is None
                     else consumers)
        missing = wanted - self._records.keys()
        if missing:
            # Most of them (``list --all`` wants every consumer's): one
            # scan is cheaper than looking each up (about 0.7 against 5
            # us a consumer on sqlite), and shares the project and user
            # names.
            scan = everything and (consumers is None or
                                   len(missing) * 5 > len(allocations))
            self._records.update(self._read(
                lambda conn: self._consumer_records(conn, missing,
                                                    everything=scan),
                'records of %d consumer(s)' % len(missing)))
        records = self._records
        return {c: records[c] for c in wanted if c in records}

    def fully_reserved(self, provider_uuids):
        """As PlacementAPIReader.fully_reserved, from inventories()."""
        found = {uuid: placement_api.whole({
            rc: {'total': inv.total, 'reserved': inv.reserved}
            for rc, inv in inventories.items()})
            for uuid, inventories in self.inventories(provider_uuids).items()}
        return {uuid: classes for uuid, classes in found.items() if classes}

    def inventories(self, provider_uuids):
        """As PlacementAPIReader.inventories, in one read of the
        inventories table (a provider with none has none).
        """
        wanted = set(provider_uuids)

        def work(conn):
            classes = placement_rows.resource_classes(conn)
            found = {uuid: {} for uuid in wanted}
            for uuid, rc_id, *fields in conn.execute(
                    sa.select(PROVIDERS.c.uuid,
                              INVENTORY_ROWS.c.resource_class_id,
                              *(INVENTORY_ROWS.c[f] for f in INVENTORY_FIELDS))
                    .select_from(INVENTORY_ROWS.join(
                        PROVIDERS, INVENTORY_ROWS.c.resource_provider_id ==
                        PROVIDERS.c.id))):
                if uuid in wanted:
                    found[uuid][placement_rows.class_name(classes, rc_id)] = (
                        hosts.Inventory(**dict(zip(INVENTORY_FIELDS,
                                                   fields))))
            return found
        return self._read(work, 'inventories of %d provider(s)' % len(wanted))

    def traits(self, names):
        """As PlacementAPIReader.traits: {provider uuid: the traits of
        ``names`` it carries}, in one query.
        """
        if not names:
            return {}

        def work(conn):
            carried = collections.defaultdict(set)
            for uuid, name in conn.execute(
                    sa.select(PROVIDERS.c.uuid, TRAITS.c.name)
                    .select_from(PROVIDER_TRAITS.join(
                        TRAITS, PROVIDER_TRAITS.c.trait_id == TRAITS.c.id)
                        .join(PROVIDERS, PROVIDER_TRAITS.c.resource_provider_id
                              == PROVIDERS.c.id))
                    .where(TRAITS.c.name.in_(sorted(names)))):
                carried[uuid].add(name)
            return {uuid: frozenset(found) for uuid, found in carried.items()}
        return self._read(work, 'providers with %d trait(s)' % len(names))

    def resource_classes(self):
        """As PlacementAPIReader.resource_classes: the resource_classes
        table, which holds the standard classes too (see the module's
        docstring).
        """
        return frozenset(self._read(
            placement_rows.resource_classes, 'resource classes').values())

    def consumer(self, consumer_uuid):
        """Placement's own, fresh allocation document (through the API)."""
        if self.api_reader is None:
            raise exception.ConfigError(
                reason=_('the placement API is needed to read consumer '
                         '%(consumer)s') % {'consumer': consumer_uuid})
        return self.api_reader.consumer(consumer_uuid)

    def consumers(self, consumer_uuids):
        """Consumer records and allocations, from the database.

        Returns ``(records, allocations_by_consumer)`` like the API
        reader; the allocations are ``{provider uuid: {'resources':
        {...}}}``. Records already read with the allocations are reused.
        """
        consumer_uuids = set(consumer_uuids)
        return self._read(
            lambda conn: self._consumers(conn, consumer_uuids),
            'records and allocations of %d consumer(s)' %
            len(consumer_uuids),
            lambda result: '%d record(s)' % len(result[0]))

    def _consumers(self, conn, consumer_uuids):
        missing = consumer_uuids - set(self._records)
        if missing:
            self._records.update(self._consumer_records(conn, missing))
        records = {c: self._records[c] for c in consumer_uuids
                   if c in self._records}
        allocations = _allocations_of(conn, consumer_uuids)
        # A consumer with no record and no allocations reads as placement
        # answers GET /allocations/{uuid} for it: nothing.
        for consumer in consumer_uuids - set(records):
            records[consumer] = model.Consumer(uuid=consumer)
        return records, allocations


def _allocations_of(conn, consumer_uuids):
    """{consumer: {provider uuid: {'resources': {class: used}}}}, as
    ``GET /allocations/{consumer}`` shows them (every consumer a key).
    """
    classes = placement_rows.resource_classes(conn)
    allocations = {c: {} for c in consumer_uuids}
    for consumer, rp_uuid, rc_id, used in db_utils.rows_in(
            conn, sa.select(ALLOCATIONS.c.consumer_id, PROVIDERS.c.uuid,
                            ALLOCATIONS.c.resource_class_id,
                            ALLOCATIONS.c.used)
            .select_from(ALLOCATIONS.join(
                PROVIDERS, ALLOCATIONS.c.resource_provider_id ==
                PROVIDERS.c.id))
            .where(ALLOCATIONS.c.consumer_id.in_(db_utils.IN_VALUES)),
            consumer_uuids):
        allocations[consumer].setdefault(
            rp_uuid, {'resources': {}})['resources'][
                placement_rows.class_name(classes, rc_id)] = used
    return allocations


def _where_in(conn, query, column, values, everything):
    """The rows of ``query``: all of them (one scan), or those whose
    ``column`` is in ``values`` (chunked ``IN`` look-ups).
    """
    if everything:
        return db_utils.driver_rows(conn, query)
    return db_utils.rows_in(conn, query.where(column.in_(db_utils.IN_VALUES)),
                            values)


def consumer_documents(reader, consumer_uuids, typed=True):
    """Placement's current documents of these consumers, in bulk.

    {uuid: document} as ``repair.documents.normalize`` makes of ``GET
    /allocations/{uuid}``, for a repair to re-verify many consumers with
    one read instead of one GET each. The consumer rows (generation
    first) are read before the allocations: an allocation written after
    that read bumped the generation, so a write carrying it is refused.
    ``typed``: untyped consumers read as placement's API shows them at
    1.38+ (``unknown``); otherwise no type at all, as below 1.38.
    """
    consumer_uuids = set(consumer_uuids)

    def work(conn):
        records = reader._consumer_records(conn, consumer_uuids)
        allocations = _allocations_of(conn, consumer_uuids)
        docs = {}
        for consumer in consumer_uuids:
            record = records.get(consumer)
            if record is None or not allocations[consumer]:
                # As the API answers: no owner or generation without
                # allocations (and none for allocations without a record).
                docs[consumer] = {
                    'allocations': {}, 'project_id': None, 'user_id': None,
                    'consumer_generation': None, 'consumer_type': None}
                continue
            consumer_type = record.consumer_type if typed else None
            if typed and consumer_type is None:
                consumer_type = 'unknown'
            docs[consumer] = {
                'allocations': allocations[consumer],
                'project_id': record.project_id, 'user_id': record.user_id,
                'consumer_generation': record.generation,
                'consumer_type': consumer_type}
        return docs
    return reader._read(work, 'documents of %d consumer(s)' %
                        len(consumer_uuids))
