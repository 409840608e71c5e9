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
``--repeat`` times each. Reports median wall time, peak RSS, placement
CPU seconds, ratios against the audit, and whether each tool's findings
match the generated truth.

    python tools/bench/run.py --providers 500 2000 --cells 1 3 --repeat 3
    python tools/bench/run.py --providers 10000 --repeat 1 --audit-repeat 1
    python tools/bench/run.py --clean 10000         # clean vs audit --delete
    python tools/bench/run.py --providers 2000 --mariadb   # nova on MariaDB
    python tools/bench/run.py --plot --results bench-results/results.json

Results go to ``--out`` (default ./bench-results): results.json, a
markdown table results.md and, with --plot, time-vs-allocations.png.
"""

import argparse
import json
import os
import platform
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


def build(args, workdir, providers, cells, orphans_only=False, maria=None):
    nova_t, placement_t = templates()
    nova_urls = placement_url = None
    if maria is not None and args.mariadb:
        nova_urls = maria.nova_urls(['cell%d' % (i + 1)
                                     for i in range(cells)])
    if maria is not None and (args.placement_mariadb or orphans_only):
        placement_url = maria.placement_url()
    cloud = generate.Cloud(workdir, providers, cells=cells,
                           per_provider=args.per_provider,
                           orphans_only=orphans_only, nova_urls=nova_urls)
    start = time.monotonic()
    urls = cloud.build(nova_t, placement_t, placement_url=placement_url)
    log('generated %d providers, %d allocations, %d orphans in %d cell(s) '
        'in %.1fs' % (providers, len(cloud.allocations), len(cloud.orphans),
                      cells, time.monotonic() - start))
    bench = runner.Bench(cloud, urls, workdir, workers=args.workers,
                         concurrency=args.concurrency)
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
        'median_placement_cpu': statistics.median(
            r['placement_cpu'] for r in runs),
        'median_tool_cpu': statistics.median(r['cpu'] for r in runs),
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
        runs = {t: [] for t in tools}
        for i in range(args.repeat):
            for tool in tools:
                if tool == 'audit' and i >= args.audit_repeat:
                    continue
                log('%d providers, %d cell(s): %s run %d' % (
                    providers, cells, tool, i + 1))
                r = bench.run(tool, timeout=args.timeout)
                log('  %.2fs wall, %.0f MiB, placement CPU %.2fs' % (
                    r['wall'], r['rss_mib'], r['placement_cpu']))
                runs[tool].append(r)
        for tool in tools:
            entry = {'providers': providers, 'cells': cells,
                     'allocations': truth['allocations'],
                     'orphans': len(truth['orphans']), 'tool': tool,
                     'verified': checked}
            entry.update(backends(bench))
            results.append(summarize(entry, runs[tool], truth))
        if args.count_queries:
            counted = bench.count_queries('fast')
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
    a deleted instance or an unknown consumer, 20 per provider.
    """
    providers = max(1, args.clean // args.per_provider)
    results = []
    for tool in ('fast', 'api', 'audit'):
        if tool not in args.clean_tools:
            continue
        workdir = tempfile.mkdtemp(prefix='orphanbench-clean-',
                                   dir=args.tmp)
        cloud, bench, checked = build(args, workdir, providers, 1,
                                      orphans_only=True, maria=maria)
        truth = cloud.truth()
        try:
            log('clean: %s on %d orphans' % (tool, len(truth['orphans'])))
            db0 = maria.cpu_seconds() if maria else None
            r = bench.run(tool, timeout=args.timeout, delete=True)
            if maria:
                # MariaDB serves placement's queries on the same cores.
                r['db_cpu'] = maria.cpu_seconds() - db0
            log('  %.2fs wall, %.0f MiB, placement CPU %.2fs, tool CPU '
                '%.2fs%s' % (r['wall'], r['rss_mib'], r['placement_cpu'],
                             r['cpu'], ', MariaDB CPU %.2fs' % r['db_cpu']
                             if maria else ''))
            left = bench.run('fast')
            remaining = len(left['found'])
            log('  orphans left afterwards: %d' % remaining)
            entry = {'providers': providers, 'cells': 1,
                     'allocations': truth['allocations'],
                     'orphans': len(truth['orphans']),
                     'tool': ('clean-%s%s' % (
                         tool, '-c%d' % args.concurrency
                         if args.concurrency else '')
                         if tool != 'audit' else 'audit --delete'),
                     'orphans_left': remaining}
            entry.update(backends(bench))
            results.append(summarize(entry, [r], truth))
            if tool != 'audit':
                entry['outcomes'] = dict(r.get('outcomes', {}))
        finally:
            bench.stop()
            if not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)
    return results


def table(results):
    def key(r):
        return (r['providers'], r['cells'], r['nova_backend'],
                r.get('placement_backend', 'sqlite'))
    audit = {key(r): r for r in results if r['tool'] == 'audit'}
    lines = [
        '| providers | cells | allocations | nova / placement DB | tool | '
        'runs | median wall (s) | x faster than audit | placement CPU (s) | '
        'tool CPU (s) | peak RSS (MiB) | findings vs truth |',
        '|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---|']
    for r in sorted(results, key=lambda r: (
            r['tool'].startswith('clean') or r['tool'].endswith('--delete'),
            r['nova_backend'] != 'sqlite', r['cells'], r['providers'],
            TOOLS.index(r['tool']) if r['tool'] in TOOLS else 9)):
        ref = audit.get(key(r))
        if r['tool'].startswith('clean'):
            ref = next((x for x in results if x['tool'] == 'audit --delete'
                        and x['providers'] == r['providers']), None)
        ratio = ('%.1f' % (ref['median_wall'] / r['median_wall'])
                 if ref and ref is not r else '')
        s = r['score']
        verdict = ('match (%d)' % s['true_positives'] if s['matches_truth']
                   else '%d found, %d false, %d missed' % (
                       s['true_positives'], s['false_positives'],
                       s['missed']))
        if 'orphans_left' in r:
            verdict += '; %d left after' % r['orphans_left']
        lines.append('| %d | %d | %d | %s | %s | %d | %.2f | %s | %.2f | '
                     '%.2f | %.0f | %s |' % (
                         r['providers'], r['cells'], r['allocations'],
                         '%s / %s' % (r['nova_backend'],
                                      r.get('placement_backend', 'sqlite')),
                         r['tool'], len(r['runs']),
                         r['median_wall'], ratio,
                         r['median_placement_cpu'], r['median_tool_cpu'],
                         r['peak_rss_mib'],
                         verdict))
    return '\n'.join(lines) + '\n'


def table_rst(results):
    """The markdown table as an RST csv-table, for the docs."""
    lines = [line.strip('|').split('|') for line in
             table(results).splitlines() if not line.startswith('|---')]
    out = ['.. csv-table::', '   :header-rows: 1', '']
    for cells in lines:
        out.append('   ' + ', '.join(
            '"%s"' % c.strip().replace('"', "'") for c in cells))
    return '\n'.join(out) + '\n'


def plot(results, path):
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    labels = {'audit': 'nova-manage placement audit',
              'api': 'nova-orphans (placement API)',
              'fast': 'nova-orphans (fast mode, placement DB)'}
    styles = {1: '-o', 3: '--s'}
    colors = {'audit': 'C3', 'api': 'C0', 'fast': 'C2'}
    for tool in TOOLS:
        for cells in sorted({r['cells'] for r in results}):
            pts = sorted((r['allocations'], r['median_wall'])
                         for r in results if r['tool'] == tool and
                         r['cells'] == cells and r['nova_backend'] ==
                         'sqlite' and r.get('placement_backend',
                                            'sqlite') == 'sqlite')
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts],
                    styles.get(cells, '-^'), color=colors[tool],
                    label='%s, %d cell%s' % (labels[tool], cells,
                                             '' if cells == 1 else 's'))
    ax.set_xscale('log')
    ax.set_yscale('log')
    ax.set_xlabel('allocations (20 per provider)')
    ax.set_ylabel('median wall time (s)')
    ax.set_title('Finding orphaned allocations (2 cores, placement: 2 '
                 'worker processes)')
    ax.grid(True, which='both', alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


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
    parser.add_argument('--tools', nargs='+', default=list(TOOLS),
                        choices=TOOLS)
    parser.add_argument('--workers', type=int, default=2,
                        help='placement worker processes (default 2)')
    parser.add_argument('--clean', type=int, default=0, metavar='ORPHANS',
                        help='also time "allocations clean" against '
                             '"placement audit --delete" on this many '
                             'orphans')
    parser.add_argument('--concurrency', type=int, default=None,
                        help='[nova_orphans] placement_concurrency for '
                             'the tool (default: its own default, 8)')
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
    parser.add_argument('--tmp', default=None,
                        help='where generated clouds live (default TMPDIR)')
    parser.add_argument('--keep', action='store_true',
                        help='keep the generated clouds')
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
            f.write(table(doc['results']))
        with open(os.path.join(args.out, 'results.rst'), 'w') as f:
            f.write(table_rst(doc['results']))

    def save(new):
        # Replace earlier results of the same configuration.
        def key(r):
            return (r['providers'], r['cells'], r['tool'],
                    r['nova_backend'], r.get('placement_backend', 'sqlite'))
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
    finally:
        if maria is not None:
            maria.stop(remove=not args.keep)
    if doc['results']:
        write_tables()
    if args.plot and doc['results']:
        log('plot: %s' % plot(doc['results'], os.path.join(
            args.out, 'time-vs-allocations.png')))
    print(table(doc['results']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
