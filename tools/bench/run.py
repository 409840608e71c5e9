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
"""Benchmark nova-orphans against ``nova-manage placement audit``.

For each size: generate a synthetic cloud (nova's real schema, a real
placement database, known orphans), verify it through placement's API,
serve placement with N worker processes on 127.0.0.1, and run
``nova-orphans-manage allocations list --format json`` (API mode and
fast mode) and ``nova-manage placement audit --verbose`` alternately,
``--repeat`` times each, and after each fast-mode run the floor: the
statements fast mode gave the database driver, run again through the
driver with every row fetched and dropped. Reports median wall time,
peak RSS, placement CPU seconds, ratios against the audit and the
floor, and whether each tool's findings match the generated truth.

    python tools/bench/run.py --providers 500 2000 --cells 1 3 --repeat 3
    python tools/bench/run.py --providers 10000 --repeat 1 --audit-repeat 1
    python tools/bench/run.py --providers 50000 --cells 3 --tools fast
    python tools/bench/run.py --clean 10000         # clean vs audit --delete
    python tools/bench/run.py --providers 2000 --mariadb   # nova on MariaDB
    python tools/bench/run.py --steady 2000 10000 --situations-every 100 \
        --compare main=/path/to/another/checkout   # kept reads, steady
    python tools/bench/run.py --plot --results bench-results/results.json

Results go to ``--out`` (default ./bench-results): results.json, the
markdown tables results.md (and results.rst) and, with --plot,
time-vs-allocations.png.
"""

import argparse
import itertools
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, REPO)

from orphanbench import generate  # noqa: E402
from orphanbench import runner  # noqa: E402

TOOLS = ('audit', 'api', 'fast')
# The host view (list --group-by host, one --resource shape), in API and
# fast mode: timed beside the plain list it adds its reads to.
HOST_TOOLS = runner.HOST_TOOLS
LIST_TOOLS = TOOLS + HOST_TOOLS


def templates():
    from nova_orphans.tests.functional.fixtures import nova_db
    from nova_orphans.tests.functional.fixtures import placement
    return nova_db.schema_templates(), placement._template()


def log(msg):
    print('[%s] %s' % (time.strftime('%H:%M:%S'), msg), file=sys.stderr,
          flush=True)


def machine():
    mem = 0
    with open('/proc/meminfo') as f:
        for line in f:
            if line.startswith('MemTotal:'):
                mem = int(line.split()[1]) // 1024
    cpu = ''
    with open('/proc/cpuinfo') as f:
        for line in f:
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
    return {'cores': os.cpu_count(), 'memory_mib': mem, 'cpu': cpu,
            'python': platform.python_version(),
            'kernel': platform.release()}


def build(args, workdir, providers, cells, orphans_only=False, maria=None,
          situations_every=1):
    nova_t, placement_t = templates()
    nova_urls = placement_url = None
    if maria is not None and args.mariadb:
        nova_urls = maria.nova_urls(['cell%d' % (i + 1)
                                     for i in range(cells)])
    if maria is not None and (args.placement_mariadb or orphans_only):
        placement_url = maria.placement_url()
    cloud = generate.Cloud(workdir, providers, cells=cells,
                           per_provider=args.per_provider,
                           orphans_only=orphans_only, nova_urls=nova_urls,
                           nested=not args.plain, sharing=not args.plain,
                           situations_every=situations_every)
    start = time.monotonic()
    urls = cloud.build(nova_t, placement_t, placement_url=placement_url)
    cloud.generated_in = time.monotonic() - start
    log('generated %d compute nodes (%d resource providers: %d nested, %d '
        'sharing), %d allocations, %d orphans in %d cell(s) in %.1fs' % (
            providers, len(cloud.rps), len(cloud.children),
            len(set(cloud.shared_by.values())), len(cloud.allocations),
            len(cloud.orphans), cells, cloud.generated_in))
    uses_maria = maria is not None and (
        nova_urls is not None or placement_url is not None)
    bench = runner.Bench(cloud, urls, workdir, workers=args.workers,
                         concurrency=args.concurrency,
                         db_cpu=maria.cpu_seconds if uses_maria else None,
                         trees=dict(args.compare))
    try:
        checked = cloud.verify(bench.placement.endpoint)
    except BaseException:
        bench.stop()
        raise
    log('verified through placement\'s API: %s' % checked)
    return cloud, bench, checked


def backends(bench):
    def kind(url):
        return 'mariadb' if url.startswith('mysql') else 'sqlite'
    return {'nova_backend': kind(bench.urls['api']),
            'placement_backend': kind(bench.urls['placement'])}


def summarize(entry, runs, truth):
    walls = [r['wall'] for r in runs]
    entry.update({
        'runs': [{k: v for k, v in r.items() if k not in ('found',)}
                 for r in runs],
        'median_wall': statistics.median(walls),
        'min_wall': min(walls),
        'peak_rss_mib': max(r['rss_mib'] for r in runs),
        'peak_rss_all_mib': max(r.get('rss_all_mib', 0.0) for r in runs),
        'median_placement_cpu': statistics.median(
            r['placement_cpu'] for r in runs),
        'median_tool_cpu': statistics.median(r['cpu'] for r in runs),
        'loadavg_before': [r['loadavg_before'] for r in runs],
        'score': runner.score(truth, runs[-1]['found'],
                              'audit' if entry['tool'].startswith('audit')
                              else entry['tool']),
    })
    return entry


def bench_list(args, providers, cells, maria=None):
    workdir = tempfile.mkdtemp(prefix='orphanbench-%d-%d-' % (providers,
                                                              cells),
                               dir=args.tmp)
    cloud, bench, checked = build(args, workdir, providers, cells,
                                  maria=maria)
    truth = cloud.truth()
    results = []
    try:
        tools = [t for t in args.tools
                 if not (t == 'audit' and args.audit_max_providers and
                         providers > args.audit_max_providers)]
        # Each of this checkout's modes, then the same from the others.
        tools = [variant for t in tools for variant in [t] + [
            '%s@%s' % (t, label) for label, _tree in args.compare
            if t != 'audit' and t not in HOST_TOOLS]]
        floor = args.floor and 'fast' in tools
        counted = None
        if args.count_queries or floor:
            # Untimed, before the timed runs: every statement counted,
            # and what the driver was given recorded for the floor.
            log('%d providers, %d cell(s): recording fast mode\'s '
                'statements' % (providers, cells))
            counted = bench.count_queries('fast')
        plan = bench.floor_plan(counted) if floor else None
        runs = {t: [] for t in tools}
        floors = {}
        for i in range(args.repeat):
            for tool in tools:
                if tool == 'audit' and i >= args.audit_repeat:
                    continue
                log('%d providers, %d cell(s): %s run %d (load %.2f)' % (
                    providers, cells, tool, i + 1, os.getloadavg()[0]))
                r = bench.run(tool, timeout=args.timeout)
                log('  %.2fs wall, %.2fs CPU, %.0f MiB, placement CPU '
                    '%.2fs%s' % (r['wall'], r['cpu'], r['rss_mib'],
                                 r['placement_cpu'], _db_cpu(r)))
                runs[tool].append(r)
                if tool.partition('@')[0] == 'fast' and floor:
                    f = bench.floor(plan, timeout=args.timeout)
                    log('  floor: %.2fs wall (%s), %.2fs CPU%s; fast mode '
                        '/ floor %.2f' % (
                            f['wall'], ', '.join(
                                '%s %.2fs' % (d['database'], d['seconds'])
                                for d in f['databases']),
                            f['cpu'], _db_cpu(f), r['wall'] / f['wall']))
                    floors.setdefault(tool, []).append(f)
        for tool in tools:
            entry = {'providers': providers, 'cells': cells,
                     'allocations': truth['allocations'],
                     'orphans': len(truth['orphans']), 'tool': tool,
                     'verified': checked, 'shape': cloud.shape(),
                     'resource_providers': truth['resource_providers'],
                     'generated_in': cloud.generated_in}
            entry.update(backends(bench))
            results.append(summarize(entry, runs[tool], truth))
            if tool in floors:
                entry['floor'] = floor_summary(runs[tool], floors[tool])
        if args.count_queries:
            per_db = bench.per_database_queries(counted)
            for entry in results:
                if entry['tool'] == 'fast':
                    entry['queries'] = per_db
            if maria is not None:
                explain = explain_queries(maria, bench, counted)
                for entry in results:
                    if entry['tool'] == 'fast':
                        entry['explain'] = explain
    finally:
        bench.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return results


# The steady-state scans (bench_steady), in the order each round runs
# them: what each is, and the extra arguments of its list.
STEADY = (
    ('cold', 'first scan: no kept reads (a full read, which it keeps)', ()),
    ('today', 'each --compare checkout\'s tool, as today@LABEL', ()),
    ('unchanged', 'nothing changed since the scan before', ()),
    ('full', '--full-read', ('--full-read',)),
    ('churn', 'after %(churn)s of the compute nodes changed', ()),
    ('full-churn', '--full-read, after as many changed again',
     ('--full-read',)),
)


def bench_steady(args, providers, cells):
    """API-mode scans of one cloud again and again: the first (cold)
    scan, the same cloud unchanged, and after ``--churn`` of its compute
    nodes' providers changed, each beside a full read, round after
    round, the kinds alternating. Each ``--compare`` checkout's tool
    also runs beside the cold scan (``today@LABEL``).
    """
    workdir = tempfile.mkdtemp(prefix='orphanbench-steady-%d-' % providers,
                               dir=args.tmp)
    cloud, bench, checked = build(args, workdir, providers, cells,
                                  situations_every=args.situations_every)
    truth = cloud.truth()
    rand = random.Random(providers)
    labels = [label for label, _tree in args.compare]
    kinds = [(k, tool, extra) for kind, _what, extra in STEADY
             for k, tool in (
                 [('today@%s' % label, 'api@%s' % label)
                  for label in labels] if kind == 'today'
                 else [(kind, 'api')])]
    runs = {kind: [] for kind, _tool, _extra in kinds}
    try:
        # Untimed: the first scan of a cloud just built warms placement's
        # workers and the page cache, which the first timed run would
        # otherwise pay for.
        log('%d compute nodes: warm-up (untimed)' % providers)
        bench.run('api', timeout=args.timeout, extra=('--full-read',))
        for label in labels:
            bench.run('api@%s' % label, timeout=args.timeout)
        for round_ in range(args.repeat):
            for kind, tool, extra in kinds:
                if kind == 'cold':
                    bench.forget_kept_reads()
                changed = None
                if kind in ('churn', 'full-churn'):
                    changed = bench.churn(args.churn / 100.0, rand)
                log('%d compute nodes: %s, round %d%s (load %.2f)' % (
                    providers, kind, round_ + 1,
                    '' if changed is None else
                    ', %d providers changed' % changed,
                    os.getloadavg()[0]))
                r = bench.run(tool, timeout=args.timeout, extra=extra)
                r['round'] = round_ + 1
                if changed is not None:
                    r['providers_changed'] = changed
                log('  %.2fs wall, %.2fs CPU, %.0f MiB, placement CPU '
                    '%.2fs, %d requests (%d allocation reads)' % (
                        r['wall'], r['cpu'], r['rss_mib'],
                        r['placement_cpu'], r['placement_requests'],
                        r['allocation_reads']))
                runs[kind].append(r)
    finally:
        bench.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    results = []
    for kind, _tool, _extra in kinds:
        entry = {'providers': providers, 'cells': cells,
                 'allocations': truth['allocations'],
                 'orphans': len(truth['orphans']),
                 'tool': 'steady-%s' % kind, 'verified': checked,
                 'shape': cloud.shape(), 'churn_percent': args.churn,
                 'resource_providers': truth['resource_providers'],
                 'generated_in': cloud.generated_in}
        entry.update(backends(bench))
        summarize(entry, runs[kind], truth)
        entry['median_placement_requests'] = statistics.median(
            r['placement_requests'] for r in runs[kind])
        entry['median_allocation_reads'] = statistics.median(
            r['allocation_reads'] for r in runs[kind])
        results.append(entry)
    return results


def steady_table(results):
    """The steady-state scans, every run, and each kind of scan against
    the full read of the same round.
    """
    lines = [
        '| compute nodes (providers) | orphans | scan | round | wall (s) | '
        'tool CPU (s) | placement CPU (s) | placement requests | '
        'allocation reads | full read / this: placement CPU, wall | '
        'load average before | findings vs truth |',
        '|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---|']
    steady = [r for r in results if r['tool'].startswith('steady-')]
    for r in sorted(steady, key=lambda r: (
            r['providers'], [k for k, _w, _e in STEADY].index(
                r['tool'][len('steady-'):].partition('@')[0]),
            r['tool'])):
        kind = r['tool'][len('steady-'):]
        full = next((x for x in steady if _key(x) == _key(r) and
                     x['tool'] == ('steady-full-churn' if kind == 'churn'
                                   else 'steady-full')), None)
        for i, run in enumerate(r['runs']):
            ratio = ''
            if full is not None and full is not r and i < len(full['runs']):
                f = full['runs'][i]
                ratio = '%.1fx, %.1fx' % (
                    f['placement_cpu'] / max(run['placement_cpu'], 0.01),
                    f['wall'] / run['wall'])
            s = r['score']
            lines.append(
                '| %d (%d) | %d | %s%s | %d | %.2f | %.2f | %.2f | %d | %d '
                '| %s | %.1f | %s |' % (
                    r['providers'], r['resource_providers'], r['orphans'],
                    kind, ' (%d changed)' % run['providers_changed']
                    if 'providers_changed' in run else '',
                    run.get('round', i + 1), run['wall'], run['cpu'],
                    run['placement_cpu'], run['placement_requests'],
                    run['allocation_reads'], ratio, run['loadavg_before'],
                    'match' if s['matches_truth'] else 'differs'))
    return '\n'.join(lines) + '\n'


def _shared(r, above):
    """Whether a fast-mode result is plotted by its CPU (see plot)."""
    loads = [x['loadavg_before'] for x in r['runs']
             if 'loadavg_before' in x]
    return bool(above is not None and r['tool'] == 'fast' and loads and
                statistics.median(loads) > above)


def _db_cpu(r):
    return ', MariaDB CPU %.2fs' % r['db_cpu'] if 'db_cpu' in r else ''


def floor_summary(fast_runs, floor_runs):
    """Fast mode against the floor, run by run (each floor run follows
    its fast-mode run). CPU includes the database server's when it is
    one (MariaDB), for both.
    """
    def cpu(r):
        return r['cpu'] + r.get('db_cpu', 0.0)
    return {
        'runs': [{k: v for k, v in f.items()} for f in floor_runs],
        'median_wall': statistics.median(f['wall'] for f in floor_runs),
        'wall_ratios': [r['wall'] / f['wall']
                        for r, f in zip(fast_runs, floor_runs)],
        'cpu_ratios': [cpu(r) / cpu(f)
                       for r, f in zip(fast_runs, floor_runs)],
        'statements': sum(d['statements']
                          for d in floor_runs[0]['databases']),
        'rows': sum(d['rows'] for d in floor_runs[0]['databases']),
    }


def explain_queries(maria, bench, counted):
    """EXPLAIN every distinct SELECT the tool sent to the nova databases."""
    from sqlalchemy.engine import url as sa_url
    names = {sa_url.make_url(url).database: db
             for db, url in bench.urls.items() if db != 'placement'}
    plans = []
    for db, statement, params in counted['statements']:
        if db not in names or not statement.lstrip().upper().startswith(
                'SELECT'):
            continue
        rows = maria.explain(db, statement, params)
        plans.append({'database': names[db], 'statement': ' '.join(
            statement.split())[:300], 'plan': [
            {k: row.get(k) for k in ('table', 'type', 'key', 'rows',
                                     'Extra')} for row in rows]})
    return plans


def bench_clean(args, maria=None):
    """``allocations clean`` vs ``nova-manage placement audit --delete``.

    The same all-orphans cloud (fresh copies) for each; every orphan is
    a deleted instance or an unknown consumer, 20 per provider. Each of
    ``--clean-repeat`` rounds runs every tool in turn; after each
    ``clean`` its journal is restored (``allocations restore``) and the
    orphans must all be back.
    """
    providers = max(1, args.clean // args.per_provider)
    cores = os.cpu_count()
    tools = [t for t in ('fast', 'api', 'audit') if t in args.clean_tools]
    runs = {t: [] for t in tools}
    restores = {t: [] for t in tools}
    truth = None
    for round_ in range(args.clean_repeat):
        for tool in tools:
            workdir = tempfile.mkdtemp(prefix='orphanbench-clean-',
                                       dir=args.tmp)
            cloud, bench, checked = build(args, workdir, providers, 1,
                                          orphans_only=True, maria=maria)
            truth = cloud.truth()
            try:
                log('clean round %d: %s on %d orphans (load %.2f)' % (
                    round_ + 1, tool, len(truth['orphans']),
                    os.getloadavg()[0]))
                r = bench.run(tool, timeout=args.timeout, delete=True)
                r['round'] = round_ + 1
                cpu_floor(r, cores)
                log('  %.2fs wall, %.0f MiB, placement CPU %.2fs, tool CPU '
                    '%.2fs%s; CPU floor %.2fs, wall / floor %.2f' % (
                        r['wall'], r['rss_mib'], r['placement_cpu'],
                        r['cpu'], _db_cpu(r), r['cpu_floor'],
                        r['wall_over_cpu_floor']))
                left = bench.run('fast')
                r['orphans_left'] = len(left['found'])
                log('  orphans left afterwards: %d' % r['orphans_left'])
                if tool != 'audit' and args.restore:
                    rs = bench.restore(r.pop('journal'), tool,
                                       timeout=args.timeout)
                    rs['round'] = round_ + 1
                    cpu_floor(rs, cores)
                    back = bench.run('fast')
                    rs['orphans_back'] = runner.score(
                        truth, back['found'], 'fast')
                    rs['clean_wall'] = r['wall']
                    log('  restore: %.2fs wall (clean %.2fs), %d entries '
                        '%s, placement CPU %.2fs, tool CPU %.2fs%s; CPU '
                        'floor %.2fs; orphans back as generated: %s' % (
                            rs['wall'], r['wall'], rs['entries'],
                            dict(rs['outcomes']), rs['placement_cpu'],
                            rs['cpu'], _db_cpu(rs), rs['cpu_floor'],
                            rs['orphans_back']['matches_truth']))
                    restores[tool].append(rs)
                r.pop('journal', None)
                runs[tool].append(r)
            finally:
                bench.stop()
                if not args.keep:
                    shutil.rmtree(workdir, ignore_errors=True)
    results = []
    for tool in tools:
        entry = {'providers': providers, 'cells': 1,
                 'allocations': truth['allocations'],
                 'orphans': len(truth['orphans']), 'shape': 'orphans-only',
                 'tool': ('clean-%s%s' % (
                     tool, '-c%d' % args.concurrency
                     if args.concurrency else '')
                     if tool != 'audit' else 'audit --delete'),
                 'orphans_left': max(r['orphans_left'] for r in runs[tool]),
                 'nova_backend': 'sqlite',
                 'placement_backend': (
                     'mariadb' if maria is not None else 'sqlite')}
        results.append(summarize(entry, runs[tool], truth))
        if tool != 'audit':
            entry['outcomes'] = dict(runs[tool][-1].get('outcomes', {}))
            if 'audit' in runs:
                entry['x_audit_runs'] = [
                    a['wall'] / r['wall']
                    for r, a in zip(runs[tool], runs['audit'])]
        if restores[tool]:
            results.append({
                'providers': providers, 'cells': 1,
                'allocations': truth['allocations'],
                'orphans': len(truth['orphans']), 'shape': 'orphans-only',
                'tool': 'restore-%s' % tool, 'runs': restores[tool],
                'median_wall': statistics.median(
                    r['wall'] for r in restores[tool]),
                'nova_backend': entry['nova_backend'],
                'placement_backend': entry['placement_backend']})
    return results


def cpu_floor(r, cores):
    """The CPU floor of a run that writes through placement: placement's,
    the database server's and the tool's CPU seconds spread on the
    machine's cores (they all share them).
    """
    r['cpu_floor'] = (r['placement_cpu'] + r.get('db_cpu', 0.0) +
                      r['cpu']) / cores
    r['wall_over_cpu_floor'] = r['wall'] / r['cpu_floor']


def _key(r):
    """What makes a result's cloud: results of the same key compare."""
    return (r['providers'], r['cells'], r['nova_backend'],
            r.get('placement_backend', 'sqlite'), r.get('shape', 'plain'))


def table(results):
    results = [r for r in results
               if not r['tool'].startswith(('restore', 'steady-'))]
    key = _key
    audit = {key(r): r for r in results if r['tool'] == 'audit'}
    lines = [
        '| providers | cells | allocations | nova / placement DB | cloud | '
        'tool | runs | median wall (s) | x faster than audit | '
        'placement CPU (s) | tool CPU (s) | peak RSS (MiB) | '
        'findings vs truth |',
        '|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---|']
    for r in sorted(results, key=lambda r: (
            r['tool'].startswith('clean') or r['tool'].endswith('--delete'),
            r['nova_backend'] != 'sqlite', r['cells'], r['providers'],
            LIST_TOOLS.index(r['tool']) if r['tool'] in LIST_TOOLS
            else 9)):
        ref = audit.get(key(r))
        if r['tool'].startswith('clean'):
            ref = next((x for x in results if x['tool'] == 'audit --delete'
                        and x['providers'] == r['providers']), None)
        ratio = ('%.1f' % (ref['median_wall'] / r['median_wall'])
                 if ref and ref is not r else '')
        s = r['score']
        if 'hosts' in s:
            verdict = '%d host(s), %s' % (s['hosts'], 'held as the truth'
                                          if s['matches_truth'] else
                                          'held NOT as the truth')
        elif s['matches_truth']:
            verdict = 'match (%d)' % s['true_positives']
        else:
            verdict = ('%d found, %d false, %d missed' % (
                s['true_positives'], s['false_positives'], s['missed']))
        if 'orphans_left' in r:
            verdict += '; %d left after' % r['orphans_left']
        lines.append('| %d | %d | %d | %s | %s | %s | %d | %.2f | %s | '
                     '%.2f | %.2f | %.0f | %s |' % (
                         r['providers'], r['cells'], r['allocations'],
                         '%s / %s' % (r['nova_backend'],
                                      r.get('placement_backend', 'sqlite')),
                         r.get('shape', 'plain'), r['tool'], len(r['runs']),
                         r['median_wall'], ratio,
                         r['median_placement_cpu'], r['median_tool_cpu'],
                         r['peak_rss_mib'],
                         verdict))
    return '\n'.join(lines) + '\n'


def _runs(values, fmt='%.2f'):
    return ', '.join(fmt % v for v in values)


def floor_table(results):
    """Fast mode against the floor, every run."""
    lines = [
        '| compute nodes | cells | allocations | nova / placement DB | '
        'cloud | tool | fast mode wall (s) | floor wall (s) | wall / floor | '
        'fast mode CPU (s) | floor CPU (s) | CPU / CPU | statements, rows '
        'read | fast mode peak RSS (MiB) | all its processes at once '
        '(MiB) | load average before | other work\'s CPU during fast mode, '
        'floor (s) |',
        '|---:|---:|---:|---|---|---|---|---|---|---|---|---|---|---:|---:|'
        '---|---|']
    for r in sorted((r for r in results if r.get('floor')),
                    key=lambda r: (_key(r), r['tool'])):
        f = r['floor']

        def cpu(run):
            return run['cpu'] + run.get('db_cpu', 0.0)
        lines.append('| %d | %d | %d | %s / %s | %s | %s | %s | %s | %s | '
                     '%s | %s | %s | %d, %d | %.0f | %.0f | %s | %s |' % (
                         r['providers'], r['cells'], r['allocations'],
                         r['nova_backend'],
                         r.get('placement_backend', 'sqlite'),
                         r.get('shape', 'plain'), r['tool'],
                         _runs(x['wall'] for x in r['runs']),
                         _runs(x['wall'] for x in f['runs']),
                         _runs(f['wall_ratios']),
                         _runs(cpu(x) for x in r['runs']),
                         _runs(cpu(x) for x in f['runs']),
                         _runs(f['cpu_ratios']), f['statements'], f['rows'],
                         r['peak_rss_mib'], r.get('peak_rss_all_mib', 0.0),
                         _runs((x['loadavg_before'] for x in r['runs']),
                               '%.1f'),
                         '; '.join('%s, %s' % (_other(x), _other(y))
                                   for x, y in zip(r['runs'], f['runs'])
                                   if 'other_cpu' in x)))
    return '\n'.join(lines) + '\n'


def clean_table(results):
    """clean, audit --delete and restore, every run."""
    lines = [
        '| orphans | round | tool | wall (s) | x faster than audit --delete '
        '| audit / clean CPU floor | restore / clean wall | '
        'placement CPU (s) | database CPU (s) | tool CPU (s) | '
        'CPU floor (s) | wall / CPU floor | load average before | '
        'other work\'s CPU (s) | result |',
        '|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
        '---:|---|']
    rows = []
    for r in results:
        if not (r['tool'].startswith(('clean', 'restore')) or
                r['tool'] == 'audit --delete'):
            continue
        audit = next((x for x in results if x['tool'] == 'audit --delete'
                      and x['providers'] == r['providers']), None)
        for i, run in enumerate(r['runs']):
            x_audit = x_floor = restore_ratio = ''
            if r['tool'].startswith('clean') and audit and i < len(
                    audit['runs']):
                x_audit = '%.2f' % (audit['runs'][i]['wall'] / run['wall'])
                x_floor = '%.2f' % (audit['runs'][i]['cpu_floor'] /
                                    run['cpu_floor'])
            if r['tool'].startswith('restore'):
                restore_ratio = '%.2f' % (run['wall'] / run['clean_wall'])
                back = run['orphans_back']
                result = '%d entries: %s; orphans back: %s' % (
                    run['entries'], ', '.join(
                        '%d %s' % (n, o)
                        for o, n in sorted(run['outcomes'].items())),
                    'as generated' if back['matches_truth'] else
                    '%d found, %d false, %d missed' % (
                        back['true_positives'], back['false_positives'],
                        back['missed']))
            elif run.get('orphans_left'):
                result = '%d left after' % run['orphans_left']
            else:
                result = 'all removed'
            floor = ('%.2f' % run['cpu_floor'], '%.2f' % run[
                'wall_over_cpu_floor']) if 'cpu_floor' in run else ('', '')
            rows.append((r['orphans'], run.get('round', i + 1),
                         ['audit --delete', 'clean', 'restore'].index(
                             r['tool'].split('-')[0] if not r['tool']
                             .startswith('audit') else 'audit --delete'),
                         '| %d | %d | %s | %.2f | %s | %s | %s | %.2f | '
                         '%s | %.2f | %s | %s | %.1f | %s | %s |' % (
                             r['orphans'], run.get('round', i + 1),
                             r['tool'], run['wall'], x_audit, x_floor,
                             restore_ratio,
                             run['placement_cpu'],
                             '%.2f' % run['db_cpu'] if 'db_cpu' in run
                             else '', run['cpu'], floor[0], floor[1],
                             run['loadavg_before'], _other(run),
                             result)))
    lines.extend(row[-1] for row in sorted(rows, key=lambda x: x[:3]))
    return '\n'.join(lines) + '\n'


def _other(run):
    return '%.1f' % run['other_cpu'] if 'other_cpu' in run else ''


def all_tables(results):
    out = table(results)
    if any(r.get('floor') for r in results):
        out += '\nFast mode against the floor:\n\n' + floor_table(results)
    if any(r['tool'].startswith('clean') for r in results):
        out += ('\nclean, audit --delete and restore, by run:\n\n' +
                clean_table(results))
    if any(r['tool'].startswith('steady-') for r in results):
        out += ('\nAPI mode\'s steady-state scans (kept reads), by run:\n\n'
                + steady_table(results))
    return out


def table_rst(results):
    """The markdown tables as RST csv-tables, for the docs."""
    out = []
    for part in all_tables(results).split('\n\n'):
        if part.startswith('|'):
            out.append(_csv_table(part))
        else:
            out.append(part.strip() + '\n')
    return '\n'.join(out)


def _csv_table(markdown):
    lines = [line.strip('|').split('|') for line in
             markdown.splitlines() if not line.startswith('|---')]
    out = ['.. csv-table::', '   :header-rows: 1', '']
    for cells in lines:
        out.append('   ' + ', '.join(
            '"%s"' % c.strip().replace('"', "'") for c in cells))
    return '\n'.join(out) + '\n'


def plot(results, path, cpu_above_load=None):
    """Median wall time against allocations, log-log.

    ``cpu_above_load``: fast-mode results whose runs started at a higher
    1-minute load average are drawn with their tool CPU seconds instead
    (on a quiet machine fast mode's wall time is its CPU time: it is one
    pass of work on one core), and labelled so.
    """
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 6.5))
    labels = {'audit': 'nova-manage placement audit',
              'api': 'nova-orphans (placement API)',
              'fast': 'nova-orphans (fast mode, placement DB)'}
    styles = {1: '-o', 3: '--s'}
    colors = {'audit': 'C3', 'api': 'C0', 'fast': 'C2'}
    shapes = sorted({r.get('shape', 'plain') for r in results
                     if r['tool'] in TOOLS})
    for tool in TOOLS:
        for cells in sorted({r['cells'] for r in results}):
            for shape, as_cpu in itertools.product(shapes, (False, True)):
                pts = sorted((r['allocations'], r['median_tool_cpu']
                              if as_cpu else r['median_wall'])
                             for r in results if r['tool'] == tool and
                             r['cells'] == cells and
                             r.get('shape', 'plain') == shape and
                             r['nova_backend'] == 'sqlite' and
                             r.get('placement_backend',
                                   'sqlite') == 'sqlite' and
                             _shared(r, cpu_above_load) == as_cpu)
                if not pts:
                    continue
                style = styles.get(cells, '-^')
                if shape != 'plain':
                    # Nested and sharing clouds: open markers, dotted.
                    style = ':' + style[-1]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style,
                        color=colors[tool],
                        markerfacecolor='none' if shape != 'plain'
                        else colors[tool],
                        label='%s, %d cell%s%s%s' % (
                            labels[tool], cells, '' if cells == 1 else 's',
                            '' if shape == 'plain' else ', ' + shape,
                            ': its CPU seconds (machine shared)'
                            if as_cpu else ''))
    ax.set_xscale('log')
    ax.set_yscale('log')
    ax.set_xlabel('allocations (20 per compute node, more on nested '
                  'and sharing clouds)')
    ax.set_ylabel('median wall time (s)')
    ax.set_title('Finding orphaned allocations (2 cores, placement: 2 '
                 'worker processes)')
    ax.grid(True, which='both', alpha=0.3)
    ax.legend(fontsize=7, loc='upper center', bbox_to_anchor=(0.5, -0.12),
              ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches='tight')
    return path


def _checkout(value):
    """``--compare``'s LABEL=PATH: (label, the checkout's absolute path)."""
    label, _eq, path = value.partition('=')
    if not (label and path and os.path.isdir(
            os.path.join(path, 'nova_orphans'))):
        raise argparse.ArgumentTypeError(
            'LABEL=PATH of a checkout of nova-orphans: %r' % value)
    return label, os.path.abspath(path)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split('\n\n', 1)[1])
    parser.add_argument('--providers', type=int, nargs='*', default=[],
                        help='cloud sizes in compute-node providers')
    parser.add_argument('--cells', type=int, nargs='+', default=[1])
    parser.add_argument('--per-provider', type=int, default=20,
                        help='allocations per provider (default 20)')
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--audit-repeat', type=int, default=99,
                        help='run the audit at most this many times per '
                             'size (it is the slow one)')
    parser.add_argument('--audit-max-providers', type=int, default=0,
                        help='skip the audit above this size (0: never)')
    parser.add_argument('--tools', nargs='+', default=list(LIST_TOOLS),
                        choices=LIST_TOOLS)
    parser.add_argument('--workers', type=int, default=2,
                        help='placement worker processes (default 2)')
    parser.add_argument('--clean', type=int, default=0, metavar='ORPHANS',
                        help='also time "allocations clean" against '
                             '"placement audit --delete" on this many '
                             'orphans')
    parser.add_argument('--concurrency', type=int, default=None,
                        help='[nova_orphans] placement_concurrency for '
                             'the tool (default: its own default, 8)')
    parser.add_argument('--clean-repeat', type=int, default=1,
                        help='rounds of the clean comparison, each on '
                             'fresh clouds (default 1)')
    parser.add_argument('--no-restore', dest='restore',
                        action='store_false',
                        help='do not restore each clean\'s journal (by '
                             'default it is restored, timed, and the '
                             'orphans checked to be back)')
    parser.add_argument('--plain', action='store_true',
                        help='compute nodes only: no nested children, no '
                             'sharing providers (the clouds of results '
                             'taken before they were added)')
    parser.add_argument('--no-floor', dest='floor', action='store_false',
                        help='do not time the floor (fast mode\'s '
                             'statements through the driver alone)')
    parser.add_argument('--clean-tools', nargs='+',
                        default=['fast', 'api', 'audit'],
                        choices=TOOLS)
    parser.add_argument('--mariadb', action='store_true',
                        help='nova\'s databases on a bench-owned MariaDB '
                             '(needs mariadb-server and PyMySQL); adds '
                             'EXPLAIN of the tool\'s nova queries')
    parser.add_argument('--placement-mariadb', action='store_true',
                        help='placement\'s database on the bench-owned '
                             'MariaDB too (always so for --clean when '
                             'MariaDB is installed: sqlite refuses '
                             'concurrent writers)')
    parser.add_argument('--no-count-queries', dest='count_queries',
                        action='store_false',
                        help='skip the (untimed) SQL statement count run')
    parser.add_argument('--timeout', type=int, default=3600,
                        help='seconds one tool run may take')
    parser.add_argument('--out', default=os.path.join(os.getcwd(),
                                                      'bench-results'))
    parser.add_argument('--results', help='merge into / plot this JSON')
    parser.add_argument('--plot', action='store_true')
    parser.add_argument('--plot-cpu-above-load', type=float, default=None,
                        metavar='LOAD',
                        help='plot fast-mode results taken at a higher load '
                             'average by their CPU seconds')
    parser.add_argument('--steady', type=int, nargs='*', default=[],
                        metavar='NODES',
                        help='API mode\'s steady state at these cloud sizes '
                             '(compute nodes): a cold scan, the cloud '
                             'unchanged and after --churn of its nodes '
                             'changed, each beside a --full-read scan, '
                             '--repeat rounds')
    parser.add_argument('--churn', type=float, default=1.0,
                        metavar='PERCENT',
                        help='the compute nodes whose provider changes '
                             'between steady-state scans (default 1)')
    parser.add_argument('--situations-every', type=int, default=1,
                        metavar='K',
                        help='steady-state clouds: only one pair of nodes '
                             'in K holds the generated situations and '
                             'orphans (default 1: every pair)')
    parser.add_argument('--tmp', default=None,
                        help='where generated clouds live (default TMPDIR)')
    parser.add_argument('--keep', action='store_true',
                        help='keep the generated clouds')
    parser.add_argument('--compare', action='append', default=[],
                        type=_checkout, metavar='LABEL=PATH',
                        help='also run each mode of --tools but the audit '
                             'from the checkout at PATH, as TOOL@LABEL, '
                             'in turn with this one\'s on the same cloud '
                             '(repeatable); with --steady, its API mode '
                             'beside the cold scan')
    args = parser.parse_args(argv)

    os.makedirs(args.out, exist_ok=True)
    path = args.results or os.path.join(args.out, 'results.json')
    doc = {'machine': machine(), 'results': []}
    if os.path.exists(path):
        with open(path) as f:
            doc = json.load(f)
        doc['machine'] = machine()
    doc.setdefault('commands', []).append(
        'python tools/bench/run.py ' + ' '.join(argv or sys.argv[1:]))

    maria = None
    if args.mariadb or args.placement_mariadb or args.clean:
        from orphanbench import mariadb
        if not mariadb.available() and not args.clean:
            parser.error('--mariadb needs mariadb-server '
                         '(apt-get install -y mariadb-server)')
        if mariadb.available():
            maria = mariadb.MariaDB(tempfile.mkdtemp(
                prefix='orphanbench-db-', dir=args.tmp))
            log('MariaDB on 127.0.0.1:%d' % maria.port)
            if args.mariadb:
                maria.make_templates(maria.dir)
        else:
            log('no MariaDB: --clean runs placement on sqlite, which '
                'refuses concurrent writes (expect failed repairs)')

    def write_tables():
        with open(os.path.join(args.out, 'results.md'), 'w') as f:
            f.write(all_tables(doc['results']))
        with open(os.path.join(args.out, 'results.rst'), 'w') as f:
            f.write(table_rst(doc['results']))

    def save(new):
        # Replace earlier results of the same configuration.
        def key(r):
            return _key(r) + (r['tool'],)
        keys = {key(r) for r in new}
        doc['results'] = [r for r in doc['results']
                          if key(r) not in keys] + new
        with open(path + '.tmp', 'w') as f:
            json.dump(doc, f, indent=1, default=str)
        os.rename(path + '.tmp', path)
        write_tables()

    try:
        for cells in args.cells:
            for providers in args.providers:
                save(bench_list(args, providers, cells, maria=maria))
        if args.clean:
            save(bench_clean(args, maria=maria))
        for cells in args.cells:
            for providers in args.steady:
                save(bench_steady(args, providers, cells))
    finally:
        if maria is not None:
            maria.stop(remove=not args.keep)
    if doc['results']:
        write_tables()
    if args.plot and doc['results']:
        log('plot: %s' % plot(doc['results'], os.path.join(
            args.out, 'time-vs-allocations.png'),
            cpu_above_load=args.plot_cpu_above_load))
    print(all_tables(doc['results']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
