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
"""What fast mode's reads and classification cost at the least.

The floor (run.py) fetches the rows and drops them. A run must keep
them, as records it can look up, and classify every allocation. This
times, each step on its own with nothing else running, the tool's own
code for each against the least that step can be:

* each cell's live instances: fetched and dropped, against the tool's
  read of them into records (``nova_cells.CellRead._instances``), and
  against a dict of the driver's own tuples, with the memory each
  holds (traced by tracemalloc in a run of its own);
* placement's allocation rows: fetched and dropped, against the second
  process's grouping of them (``placement_rows.allocation_columns``) and
  the run's making allocations of its answer (``placement_rows.build``);
* on the snapshot a run builds: ``classify``, against a loop doing
  nothing but the one look-up per allocation classifying needs (its
  consumer's instance).

It runs ``allocations list`` as phases.py does and measures when the
run has its snapshot; the run then goes on (its output is the
command's). On a cloud kept with ``run.py --keep``::

    python tools/bench/bounds.py --config-file C/fast/nova.conf \\
        --config-dir C/fast allocations list --format json > out.json

writes a line per step to stderr: the best of three wall times.
"""

import sys
import time
import tracemalloc

import sqlalchemy as sa

from nova_orphans.app import audit
from nova_orphans import db_utils
from nova_orphans.engine import classify
from nova_orphans.engine import index
from nova_orphans.readers import nova_cells
from nova_orphans.readers import placement_rows

REPEAT = 3


def _best(work):
    best = None
    for _i in range(REPEAT):
        began = time.perf_counter()
        work()
        took = time.perf_counter() - began
        best = took if best is None else min(best, took)
    return best


def _held(work):
    """MiB that what ``work()`` returns holds."""
    tracemalloc.start()
    try:
        kept = work()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return held / 2 ** 20


def _report(label, least, tool, held=None):
    sys.stderr.write('%-40s least %6.2f  tool %6.2f  (%+.2f)%s\n' % (
        label, least, tool, tool - least,
        '' if held is None else '  %.0f MiB held' % held))


def _drop(rows):
    for _row in rows:
        pass


def _cells(nova):
    live = nova_cells.INSTANCES.c.deleted == sa.literal_column('0')
    engines = db_utils.ReaderEngines()
    try:
        for conn in nova._connections:
            with engines.connect(conn.url) as db:
                # The run's own, checked when it read the cell.
                schema = nova._schemas[conn.uuid]
                query = schema.select(nova_cells.INSTANCES).where(live)
                node_ids = nova._node_ids.get(conn.uuid)

                def records():
                    read = nova_cells.CellRead(db, conn.uuid, node_ids, schema)
                    read._instances(nova_cells.INSTANCES, live)
                    return read

                def tuples():
                    return {row[0]: row
                            for row in db_utils.driver_rows(db, query)}

                fetched = _best(lambda: _drop(db_utils.driver_rows(db,
                                                                   query)))
                _report('cell %s: live instances' % conn.name, fetched,
                        _best(records), _held(records))
                _report('cell %s: as the driver\'s tuples' % conn.name,
                        fetched, _best(tuples), _held(tuples))
    finally:
        engines.close()


def _placement(reader):
    engines = db_utils.ReaderEngines()
    try:
        with engines.connect(reader.url) as db:
            fetch = _best(lambda: _drop(db_utils.driver_rows(
                db, placement_rows.ALLOCATION_ROWS)))
            classes = placement_rows.resource_classes(db)
    finally:
        engines.close()
    answer = []
    grouped = _best(lambda: answer.append(placement_rows.allocation_columns(
        reader.url, reader._engines.engine_args)))
    columns = placement_rows.unjoined(answer[-1][0])
    _report('placement: allocation rows, grouped', fetch, grouped)
    _report('placement: allocations made of them', 0.0, _best(
        lambda: placement_rows.build(columns, classes, reader._ids)))


def _classify(run, snap, shown):
    first = None if shown is None else (
        lambda verdict: verdict.is_orphan or shown(verdict))
    cloud = index.CloudIndex(snap.placement.providers,
                             snap.nova.compute_nodes)
    instance = snap.nova.instances.get
    allocations = snap.placement.allocations

    def look_up():
        for alloc in allocations:
            instance(alloc.consumer)

    _report('classify: %d allocations' % len(allocations), _best(look_up),
            _best(lambda: classify.classify(snap, run.rules, shown=first,
                                            cloud=cloud)))


_classify_run = audit.Audit._classify


def _measured(run, snap, shown):
    """Audit._classify, once the steps are measured."""
    _cells(run.nova)
    _placement(run.placement)
    _classify(run, snap, shown)
    return _classify_run(run, snap, shown)


def main():
    from nova_orphans.cmd import manage
    audit.Audit._classify = _measured
    sys.argv[0] = 'nova-orphans-manage'
    return manage.main()


if __name__ == '__main__':
    sys.exit(main())
