#!/usr/bin/env python3
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
"""Write a suite's stestr worker file from measured test durations.

stestr splits tests between its workers by the durations of earlier runs
in the local ``.stestr`` repository; a fresh clone has none and splits
blindly, so one worker can finish minutes after the other. A worker file
(``stestr run --worker-file``) fixes the split whatever the history.

    stestr --repo-url .stestr-suites/scenario last --subunit |
        tools/test-workers.py nova_orphans/tests/scenario

reads the durations from the subunit stream on stdin (one or more runs;
a test seen more than once counts at its longest, so a run on a fresh
machine, paying for test_releases' builds, can be added to a warm one;
a skipped test counts as the same test in another class, else as the
median). With ``--previous FILE`` (the suite's worker file as it is),
the durations FILE records count too, for the tests still in the tree:
a run of only the tests added or moved since is then enough

    stestr --test-path nova_orphans/tests/functional run --concurrency 1 \
        REGEX-OF-THE-NEW-TESTS
    stestr last --subunit | tools/test-workers.py --workers 3 \
        --previous nova_orphans/tests/functional/workers.yaml \
        nova_orphans/tests/functional

It then gives each test, or each test class whose tests share what the
class starts (a ``setUpClass`` or ``tearDownClass`` of its own or of a
base, as the functional front-end tests share a cloud; a class that
cannot be imported counts as one too), to the worker with the least
work so far, longest first, and writes
``<suite>/workers.yaml``: one worker per group, each test an anchored
regex with its measured seconds as a comment. A last group catches
every test the others do not name (a test added since), so nothing is
left out; stestr drops it while it is empty, and runs it as one more
worker when it is not, until the file is written again.
"""

import argparse
import importlib
import importlib.util
import os
import re
import sys
import unittest

import subunit
import testtools


def durations(stream):
    """{test id: seconds} of the tests in a subunit v2 stream.

    A test that did not run (skipped) is None, for estimate() to fill.
    """
    found = {}

    def record(test):
        start, stop = test['timestamps']
        if test['status'] != 'skip' and start and stop:
            seconds = (stop - start).total_seconds()
            found[test['id']] = max(seconds, found.get(test['id']) or 0.0)
        else:
            found.setdefault(test['id'], None)

    result = testtools.StreamToDict(record)
    result.startTestRun()
    try:
        subunit.ByteStreamToStreamResult(
            stream, non_subunit_name='stdout').run(result)
    finally:
        result.stopTestRun()
    return found


def estimate(times):
    """Every None filled: the mean of the measured tests of the same
    method name (a class run again on another database, skipped here),
    else the median of all.
    """
    measured = sorted(t for t in times.values() if t is not None)
    by_name = {}
    for test_id, seconds in times.items():
        if seconds is not None:
            by_name.setdefault(test_id.rsplit('.', 1)[-1], []).append(seconds)
    filled = {}
    for test_id, seconds in times.items():
        if seconds is None:
            same = by_name.get(test_id.rsplit('.', 1)[-1])
            seconds = (sum(same) / len(same) if same else
                       measured[len(measured) // 2] if measured else 1.0)
        filled[test_id] = seconds
    return filled


def class_of(test_id):
    return test_id.rsplit('.', 1)[0]


def test_class(class_id):
    """The class of ``class_id`` (``module.Class``), or None if its
    module has no such class. A test's id names its class by its
    __qualname__, which a class made by a function (base.on_mariadb)
    does not share with the module's name for it.
    """
    module, _dot, name = class_id.rpartition('.')
    found = vars(importlib.import_module(module))
    cls = found.get(name)
    if isinstance(cls, type) and cls.__qualname__ == name:
        return cls
    return next((c for c in found.values() if isinstance(c, type) and
                 c.__qualname__ == name), None)


def shares_state(class_id):
    """Whether the tests of ``class_id`` share what the class starts.

    Run apart, in several workers, each worker would start it again.
    """
    try:
        cls = test_class(class_id)
    except Exception:  # not importable here: kept together
        return True
    if cls is None:
        return True
    return any(attr in vars(klass) for klass in cls.__mro__
               if klass not in (unittest.TestCase, object)
               for attr in ('setUpClass', 'tearDownClass'))


# A test of a worker file, with the seconds render() recorded for it.
_RECORDED = re.compile(r"^  - '\^(?P<id>[^']*)\$'  # (?P<seconds>[\d.]+) s$")


def previous(path):
    """{test id: seconds} as the worker file at ``path`` records them."""
    found = {}
    with open(path) as f:
        for line in f:
            m = _RECORDED.match(line.rstrip('\n'))
            if m:
                found[m.group('id').replace('\\', '')] = float(
                    m.group('seconds'))
    return found


def exists(test_id):
    """Whether ``test_id`` still names a test of this tree: False once
    its module, class or method is gone (moved, renamed, removed); True
    when its module cannot be imported here to tell.
    """
    class_id, _dot, method = test_id.rpartition('.')
    module = class_id.rpartition('.')[0]
    try:
        if importlib.util.find_spec(module) is None:
            return False
    except ImportError:  # a package above it is gone
        return False
    try:
        cls = test_class(class_id)
    except Exception:  # not importable here: kept
        return True
    # on_mariadb's classes set the tests they do not run again to None.
    return cls is not None and callable(getattr(cls, method, None))


def units(times):
    """{unit: (seconds, test ids)}: a test alone, or a class whose tests
    share state.
    """
    classes = {}
    for test_id in sorted(times):
        classes.setdefault(class_of(test_id), []).append(test_id)
    found = {}
    for name, ids in classes.items():
        members = ([(name, ids)] if shares_state(name)
                   else [(test_id, [test_id]) for test_id in ids])
        for unit, unit_ids in members:
            found[unit] = (sum(times[t] for t in unit_ids), unit_ids)
    return found


def partition(times, workers):
    """Longest first, each to the least loaded worker: [(seconds, ids)]."""
    groups = [[0.0, []] for _ in range(workers)]
    for test_id in sorted(times, key=lambda t: (-times[t], t)):
        group = min(groups, key=lambda g: (g[0], len(g[1])))
        group[0] += times[test_id]
        group[1].append(test_id)
    return [(total, sorted(ids)) for total, ids in groups]


def _quote(regex):
    return "'%s'" % regex.replace("'", "''")


def render(suite, groups, times):
    package = suite.strip('/').replace('/', '.')
    prefix = re.escape(package + '.')
    lines = [
        '# stestr worker groups for %s, from measured durations:' % package,
        '# written by tools/test-workers.py, which says how to run it.',
        '# Each test is in exactly one group; the last group is every test',
        '# the others do not name (one added since this file was written).',
    ]
    names = []
    for number, (total, ids) in enumerate(groups, 1):
        lines.append('# worker %d: %d tests, %.0f s'
                     % (number, len(ids), total))
        lines.append('- worker:')
        for test_id in ids:
            lines.append('  - %s  # %.1f s' % (
                _quote('^%s$' % re.escape(test_id)), times[test_id]))
        names.extend(ids)
    rest = '|'.join(re.escape(test_id[len(package) + 1:])
                    for test_id in sorted(names))
    lines.append('# the rest')
    lines.append('- worker:')
    lines.append('  - %s' % _quote('^(?!%s(?:%s)$)' % (prefix, rest)))
    return '\n'.join(lines) + '\n'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('suite', help='the suite directory, e.g. '
                        'nova_orphans/tests/scenario')
    parser.add_argument('--workers', type=int, default=2,
                        help='worker groups (default 2: CI has 2 cores)')
    parser.add_argument('--output', help='default <suite>/workers.yaml')
    parser.add_argument('--previous', metavar='FILE',
                        help='an earlier worker file, whose recorded '
                        'durations count for the tests still in the tree')
    args = parser.parse_args(argv)
    package = args.suite.strip('/').replace('/', '.') + '.'
    measured = durations(sys.stdin.buffer)
    if args.previous:
        for test_id, seconds in previous(args.previous).items():
            if exists(test_id):
                measured[test_id] = max(seconds,
                                        measured.get(test_id) or 0.0)
    times = estimate({test_id: seconds for test_id, seconds in
                      measured.items() if test_id.startswith(package)})
    if not times:
        parser.error('no passing test of %s in the stream' % args.suite)
    output = args.output or os.path.join(args.suite, 'workers.yaml')
    found = units(times)
    groups = [(total, sorted(t for unit in chosen for t in found[unit][1]))
              for total, chosen in partition(
                  {unit: seconds for unit, (seconds, _ids) in found.items()},
                  args.workers)]
    with open(output, 'w') as f:
        f.write(render(args.suite, groups, times))
    for number, (total, ids) in enumerate(groups, 1):
        print('worker %d: %d tests, %.0f s' % (number, len(ids), total))
    return 0


if __name__ == '__main__':
    sys.exit(main())
