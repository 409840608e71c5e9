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
"""Placement's allocation rows in columns, and the allocations made of
them: what fast mode reads of a large cloud in a second process
(readers/second_process.py), hands back and builds here.

A row per consumer, provider and resource class, read by one statement
(ALLOCATION_ROWS); its runs are what a consumer holds on a provider,
kept as columns (``runs``), the form that costs least to pickle, send
and load again, and made into the snapshot's allocations (``build``)
where the run goes on. In the second process only this module and
what it imports are loaded.
"""

import array

import sqlalchemy as sa

from nova_orphans import db_utils
from nova_orphans.engine import model
from nova_orphans import exception
from nova_orphans.i18n import _

ALLOCATIONS = sa.table('allocations', *(sa.column(c) for c in (
    'resource_provider_id', 'consumer_id', 'resource_class_id', 'used')))
RESOURCE_CLASSES = sa.table('resource_classes', sa.column('id'),
                            sa.column('name'))

# Every allocation row: one per consumer, provider and resource class.
ALLOCATION_ROWS = sa.select(ALLOCATIONS.c.resource_provider_id,
                            ALLOCATIONS.c.consumer_id,
                            ALLOCATIONS.c.resource_class_id,
                            ALLOCATIONS.c.used)


def runs(rows):
    """The runs of consecutive allocation rows of one consumer on one
    provider, in columns: ``(consumers, provider ids, key indexes,
    keys)``, the i-th run being ``consumers[i]`` on ``provider_ids[i]``
    holding ``keys[key_indexes[i]]``, a key ``(class id, used, class id,
    used, ...)``.

    Placement writes a consumer's rows together, so they come one after
    the other: a run is an allocation, unless its rows were not
    consecutive (see _add_again). Most allocations hold the same few
    amounts (a flavor's), so the keys are a handful. Columns, not a
    record per run: they are what the second process hands back (see
    allocation_columns), the fastest to pickle and load.
    """
    consumers = []
    rp_ids = array.array('q')
    key_at = array.array('q')
    keys = {}
    add_consumer, add_rp_id = consumers.append, rp_ids.append
    add_key, key_index = key_at.append, keys.setdefault
    consumer = rp_id = key = None
    for row_rp, row_consumer, rc_id, used in rows:
        if row_consumer == consumer and row_rp == rp_id:
            key += (rc_id, used)
            continue
        if key is not None:
            add_consumer(consumer)
            add_rp_id(rp_id)
            add_key(key_index(key, len(keys)))
        consumer, rp_id, key = row_consumer, row_rp, (rc_id, used)
    if key is not None:
        add_consumer(consumer)
        add_rp_id(rp_id)
        add_key(key_index(key, len(keys)))
    return consumers, rp_ids, key_at, list(keys)


def build(runs, classes, ids):
    """model.GroupedAllocations of runs' columns.

    ``ids``: {provider uuid: id} of the providers read. Each key's
    resources dict is made once and shared by its allocations, never
    changed once built, rather than each having a copy (a tenth of a
    large run's memory).
    """
    consumers, rp_ids, key_at, keys = runs
    resources = [_resources(classes, key) for key in keys]
    uuids = {id_: uuid for uuid, id_ in ids.items()}
    # {consumer: its first allocation}: a consumer seen again holds on
    # several providers (see _add_again). It is the snapshot's grouping
    # by consumer too (GroupedAllocations).
    first = {}
    allocations = model.GroupedAllocations(by_consumer=first)
    append = allocations.append
    allocation = model.Allocation
    for consumer, rp_id, held in zip(consumers, rp_ids,
                                     map(resources.__getitem__, key_at)):
        provider = uuids.get(rp_id)
        if provider is None:
            # A provider created since providers() was read.
            continue
        alloc = allocation(consumer, provider, held)
        if first.setdefault(consumer, alloc) is alloc:
            append(alloc)
        else:
            _add_again(allocations, first, alloc)
    return allocations


def allocation_columns(url, engine_args):
    """Every allocation row's runs, read in a second process (see
    placement_db.PlacementDBReader.reads_in_background).

    ``(columns, None)`` or ``(None, error)``, the error free of
    credentials. The consumers go joined by newlines, one string to
    pickle and split instead of a million (consumer uuids have none;
    should one, they go as they are).
    """
    engines = db_utils.ReaderEngines(**engine_args)
    try:
        with engines.connect(url) as conn:
            consumers, rp_ids, key_at, keys = runs(
                db_utils.driver_rows(conn, ALLOCATION_ROWS))
    except Exception as e:
        return None, db_utils.safe_error(e, url)
    finally:
        engines.close()
    joined = '\n'.join(consumers)
    if len(consumers) > 1 and joined.count('\n') == len(consumers) - 1:
        consumers = joined
    return (consumers, rp_ids, key_at, keys), None


def unjoined(columns):
    """allocation_columns' columns with their consumers a list again
    (joined for the pipe).
    """
    consumers, rp_ids, key_at, keys = columns
    if isinstance(consumers, str):
        consumers = consumers.split('\n')
    return consumers, rp_ids, key_at, keys


def resource_classes(conn):
    """{resource class id: name}."""
    return dict(conn.execute(
        sa.select(RESOURCE_CLASSES.c.id, RESOURCE_CLASSES.c.name)).all())


def _resources(classes, key):
    """{class name: used} of a runs key."""
    return {(classes[rc_id] if rc_id in classes else
             class_name(classes, rc_id)): used
            for rc_id, used in zip(key[::2], key[1::2])}


def _add_again(allocations, first, alloc):
    """Add ``alloc``, of a consumer already seen, to ``allocations``, or
    merge it into that consumer's earlier allocation on its provider.

    ``first[consumer]`` becomes {provider: allocation} for such consumers.
    """
    consumer = alloc.consumer
    mine = first[consumer]
    if not isinstance(mine, dict):
        mine = first[consumer] = {mine.provider: mine}
    earlier = mine.get(alloc.provider)
    if earlier is None:
        mine[alloc.provider] = alloc
        allocations.append(alloc)
    else:
        # A new dict: the resources dicts are shared.
        earlier.resources = {**earlier.resources, **alloc.resources}


def class_name(classes, rc_id):
    try:
        return classes[rc_id]
    except KeyError:
        raise exception.NovaOrphansException(
            _('resource class id %(id)d is not in the placement '
              'database\'s resource_classes table') % {'id': rc_id})
