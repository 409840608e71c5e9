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
"""Where a run of nova-orphans-manage spends its time, phase by phase.

Runs the command as its console script does, with its arguments, and
writes to stderr, for each phase of the audit as it ends, when it
started (seconds after the command's modules were imported), its wall
time and the CPU seconds of the whole process meanwhile (the cells' read
threads included)::

    python tools/bench/phases.py --config-file C/fast/nova.conf \\
        --config-dir C/fast allocations list --format json > out.json

where C is a cloud the benchmark kept (``run.py --keep``). A profiler
would slow the many small calls of a large run unevenly; this only
wraps the phases, so their sum is the run's time.
"""

import functools
import resource
import sys
import time

from nova_orphans.engine import classify
from nova_orphans.engine import index
from nova_orphans import output
from nova_orphans.readers import nova_db
from nova_orphans.readers import placement_db

_START = time.perf_counter()


def _cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(owner, name, label):
    function = getattr(owner, name)

    @functools.wraps(function)
    def timed(*args, **kwargs):
        began, cpu = time.perf_counter(), _cpu()
        try:
            return function(*args, **kwargs)
        finally:
            sys.stderr.write('%-28s start %6.2f  wall %6.2f  cpu %6.2f\n' % (
                label, began - _START, time.perf_counter() - began,
                _cpu() - cpu))
    setattr(owner, name, timed)


for _owner, _name, _label in (
        (placement_db.PlacementDBReader, 'providers', 'placement providers'),
        (nova_db.NovaDBReader, 'read', 'nova read'),
        (placement_db.PlacementDBReader, 'allocations',
         'placement allocations'),
        (nova_db.NovaDBReader, 'resolve', 'nova resolve'),
        (placement_db.PlacementDBReader, 'consumer_records',
         'placement consumer records'),
        (classify, 'claim_candidates', 'claim candidates'),
        (nova_db.NovaDBReader, 'read_claims', 'nova claims'),
        (index.CloudIndex, '__init__', 'cloud index'),
        (classify, 'classify', 'classify'),
        (nova_db.NovaDBReader, 'read_activity', 'nova activity'),
        (classify, 'with_activity', 'classify with activity'),
        (output.JSONFormatter, 'emit_list', 'render json')):
    _timed(_owner, _name, _label)


def main():
    from nova_orphans.cmd import manage
    sys.argv[0] = 'nova-orphans-manage'
    try:
        return manage.main()
    finally:
        sys.stderr.write('%-28s       %6s  wall %6.2f  cpu %6.2f\n' % (
            'total', '', time.perf_counter() - _START, _cpu()))


if __name__ == '__main__':
    sys.exit(main())
