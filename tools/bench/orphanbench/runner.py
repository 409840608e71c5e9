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
"""Serve a generated cloud and time the tools against it.

Every tool runs in its own subprocess; its wall time and peak RSS
(``ru_maxrss`` from ``wait4``: the largest of its processes; and the
largest sum of all of them at once, sampled) are measured, and so is
the CPU time placement's worker processes spent during the run (from
/proc/<pid>/stat).
"""

import collections
import compileall
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from nova_orphans.tests.functional.fixtures.nova_db import write_ini

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..'))
_TICK = os.sysconf('SC_CLK_TCK')

_NOVA_MANAGE = ('import sys; from nova.cmd.manage import main; '
                'sys.argv[0] = "nova-manage"; sys.exit(main())')
# What the nova-orphans-manage console script (setup.cfg) runs: main()
# without arguments, as the operator's command does (its console-only
# start-up, gc.freeze() and logging, included).
_ORPHANS = ('import sys; from nova_orphans.cmd.manage import main; '
            'sys.argv[0] = "nova-orphans-manage"; sys.exit(main())')
# The tool with every SQL statement counted per database (not timed);
# the first parameters of each distinct statement are kept for EXPLAIN.
_COUNTING = '''
import collections, json, os, sys
import sqlalchemy as sa
counts = collections.Counter()
statements = {}
def _record(url, statement, parameters):
    name = os.path.basename((url.database or "").replace("file:", ""))
    counts[name or str(url)] += 1
    key = (name, statement)
    if key not in statements:
        statements[key] = parameters
@sa.event.listens_for(sa.engine.Engine, "before_cursor_execute")
def _count(conn, cursor, statement, parameters, context, executemany):
    _record(conn.engine.url, statement, parameters)
# The bulk reads and look-ups run on the driver's cursor, past
# SQLAlchemy's events: each statement is counted as it is run.
from nova_orphans import db_utils
# A large cloud's placement rows are read in a second process
# (readers/second_process.py), whose statements nothing here would see:
# the counted run reads them in its own process, with the same SQL.
from nova_orphans.readers import placement_db
placement_db.SECOND_PROCESS_FROM = None
_batches = db_utils._batches
def _counted_batches(conn, statements, size):
    def counted():
        for sql, parameters in statements:
            _record(conn.engine.url, sql, parameters or ())
            yield sql, parameters
    return _batches(conn, counted(), size)
db_utils._batches = _counted_batches
# And every statement the driver itself was given, as it ran: sqlite's
# trace callback shows it with its values in place, PyMySQL's
# Connection.query receives it so. Whatever SQLAlchemy or the tool does
# above the driver, this is what the database was asked (see FLOOR).
import sqlite3
driver = []
_sqlite_connect = sqlite3.dbapi2.connect
def _connect(database, *args, **kwargs):
    conn = _sqlite_connect(database, *args, **kwargs)
    path = str(database)
    if path.startswith("file:"):
        path = path[5:].split("?", 1)[0]
    path = os.path.abspath(path)
    conn.set_trace_callback(
        lambda sql: driver.append(["sqlite", path, sql, False]))
    return conn
sqlite3.connect = sqlite3.dbapi2.connect = _connect
try:
    from pymysql import connections
except ImportError:
    connections = None
if connections is not None:
    _query = connections.Connection.query
    def _mysql_query(self, sql, unbuffered=False):
        db = self.db.decode() if isinstance(self.db, bytes) else self.db
        if isinstance(sql, bytes):
            sql = sql.decode("utf-8", "surrogateescape")
        driver.append(["mysql", db, sql, bool(unbuffered)])
        return _query(self, sql, unbuffered)
    connections.Connection.query = _mysql_query
from nova_orphans.cmd.manage import main
out = sys.argv.pop(1)
rc = main(sys.argv[1:])
with open(out, "w") as f:
    json.dump({"counts": counts, "statements": [
        [db, s, list(p) if isinstance(p, (list, tuple)) else p]
        for (db, s), p in statements.items()], "driver": driver}, f,
        default=str)
sys.exit(rc)
'''
# The floor: the statements a fast-mode run gave the driver that return
# rows, run again through the driver, one database after another, every
# row fetched (in batches, as the tool does) and dropped. Timed inside
# the process, from the first connection to the last row; the process's
# start-up is not part of it.
FLOOR = '''
import json, sqlite3, sys, time
with open(sys.argv[1]) as f:
    plan = json.load(f)
done = []
start = time.perf_counter()
for db in plan:
    began = time.perf_counter()
    rows = 0
    if db["kind"] == "sqlite":
        conn = sqlite3.connect("file:%s?mode=ro" % db["path"], uri=True)
        for sql, _unbuffered in db["statements"]:
            cursor = conn.execute(sql)
            while True:
                batch = cursor.fetchmany(10000)
                if not batch:
                    break
                rows += len(batch)
            cursor.close()
    else:
        import pymysql
        from pymysql import cursors
        conn = pymysql.connect(**db["connect"])
        for sql, unbuffered in db["statements"]:
            cursor = conn.cursor(cursors.SSCursor if unbuffered
                                 else cursors.Cursor)
            cursor.execute(sql)
            while True:
                batch = cursor.fetchmany(10000)
                if not batch:
                    break
                rows += len(batch)
            cursor.close()
    conn.close()
    done.append({"database": db["name"], "statements": len(db["statements"]),
                 "rows": rows, "seconds": time.perf_counter() - began})
with open(sys.argv[2], "w") as f:
    json.dump({"seconds": time.perf_counter() - start, "databases": done}, f)
'''
# Runs the command as its child and reports the child's rusage: the
# child is forked from this small process, not from the benchmark (whose
# memory a direct child's ru_maxrss would include from before its exec).
# ru_maxrss is the largest of the command's processes, not their sum:
# the sum (the command and the processes it starts, such as fast mode's
# second process) is sampled from /proc every 20 ms.
_LAUNCH = '''
import json, os, sys, time
out = sys.argv[1]
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
def tree_kib(root):
    total, todo = 0, [root]
    while todo:
        p = todo.pop()
        try:
            with open("/proc/%d/statm" % p) as f:
                total += int(f.read().split()[1]) * page_kib
            with open("/proc/%d/task/%d/children" % (p, p)) as f:
                todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            pass
    return total
peak = 0
while True:
    _pid, status, ru = os.wait4(pid, os.WNOHANG)
    if _pid:
        break
    peak = max(peak, tree_kib(pid))
    time.sleep(0.02)
with open(out, "w") as f:
    json.dump({"maxrss_kib": ru.ru_maxrss, "tree_peak_kib": peak,
               "cpu": ru.ru_utime + ru.ru_stime}, f)
sys.exit(os.waitstatus_to_exitcode(status))
'''
# The host view in API and fast mode: list --group-by host, a shape.
HOST_TOOLS = ('api-hosts', 'fast-hosts')
HOST_VIEW = ('--group-by', 'host', '--resource', 'VCPU=1', '--resource',
             'MEMORY_MB=512', '--resource', 'DISK_GB=1')
AUDIT_FLAG = re.compile(
    r'(?:Allocations for|Deleted allocations for) consumer UUID (\S+) on '
    r'Resource Provider (\S+)(?: can be deleted)?:')


class Placement:
    """orphanbench.server in a subprocess: N placement worker processes."""

    def __init__(self, db_url, workdir, workers=2):
        self.ready = os.path.join(workdir,
                                  'placement-%d.json' % time.time_ns())
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [os.path.dirname(os.path.dirname(__file__)), REPO]))
        self.proc = subprocess.Popen(
            [sys.executable, '-m', 'orphanbench.server', '--db', db_url,
             '--workers', str(workers), '--ready-file', self.ready],
            env=env, stdin=subprocess.DEVNULL)
        deadline = time.time() + 60
        while not os.path.exists(self.ready):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError('placement server did not start')
            time.sleep(0.05)
        with open(self.ready) as f:
            info = json.load(f)
        self.port = info['port']
        self.workers = info['workers']
        self.endpoint = 'http://127.0.0.1:%d' % self.port
        self._wait_up()

    def _wait_up(self):
        import requests
        deadline = time.time() + 60
        for _i in range(2 * len(self.workers)):
            while True:
                try:
                    requests.get(self.endpoint + '/', timeout=30,
                                 proxies={'http': None})
                    break
                except requests.ConnectionError:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.1)

    def counts(self):
        """{'requests': N, 'allocation_reads': M} served so far."""
        import requests
        return requests.get(self.endpoint + '/_orphanbench/requests',
                            timeout=30, proxies={'http': None}).json()

    def cpu_seconds(self):
        total = 0
        for pid in self.workers:
            with open('/proc/%d/stat' % pid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
            # utime, stime: fields 14 and 15 of stat (1-based).
            total += int(fields[11]) + int(fields[12])
        return total / _TICK

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def machine_cpu_seconds():
    """CPU seconds every core has been busy so far (from /proc/stat)."""
    with open('/proc/stat') as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / _TICK


def run_with_rusage(argv, env=None, timeout=None, stdout_path=None,
                    cwd=REPO):
    """Run argv in ``cwd``; its wall time, peak RSS and CPU seconds, and
    its output.
    """
    scratch = None
    if stdout_path:
        base = stdout_path
    else:
        scratch = tempfile.mkdtemp(prefix='orphanbench-run-')
        base = os.path.join(scratch, 'run')
    usage = base + '.rusage'
    out = open(stdout_path, 'w+') if stdout_path else None
    err = open(base + '.stderr', 'w+')
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, '-c', _LAUNCH, usage] + argv,
                            env=env, stdin=subprocess.DEVNULL,
                            stdout=out or subprocess.DEVNULL, stderr=err,
                            cwd=cwd)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    wall = time.monotonic() - start
    stdout = ''
    if out:
        out.seek(0)
        stdout = out.read()
        out.close()
    err.seek(0)
    stderr = err.read()
    err.close()
    with open(usage) as f:
        ru = json.load(f)
    os.unlink(usage)
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    return {'rc': proc.returncode, 'wall': wall,
            'rss_mib': ru['maxrss_kib'] / 1024.0,
            'rss_all_mib': ru['tree_peak_kib'] / 1024.0, 'cpu': ru['cpu'],
            'stdout': stdout, 'stderr': stderr}


def byte_compile(tree=REPO):
    """Compile the tool's modules, as an installed package's are.

    Under PYTHONDONTWRITEBYTECODE a source checkout is never compiled,
    and every timed run would compile it again.
    """
    compileall.compile_dir(os.path.join(tree, 'nova_orphans'), quiet=1)


class Bench:
    """One generated cloud, served, and the tools run against it."""

    def __init__(self, cloud, urls, workdir, workers=2, concurrency=None,
                 db_cpu=None, trees=None):
        """``db_cpu``: a callable giving the CPU seconds a database server
        has used so far (MariaDB's), recorded for every run as
        ``db_cpu``; it shares the cores with the tools. ``trees``:
        {label: path} of other checkouts of the tool, whose runs are
        asked for as ``TOOL@LABEL`` (see run).
        """
        self.trees = dict(trees or {}, **{'': REPO})
        for tree in self.trees.values():
            byte_compile(tree)
        self.db_cpu = db_cpu
        self.cloud = cloud
        self.urls = urls
        self.workdir = workdir
        self.placement = Placement(urls['placement'], workdir, workers)
        local = cloud.cells[0]
        base = {
            'api_database': {'connection': urls['api']},
            'database': {'connection': urls[local]},
            'placement': {'auth_type': 'admin_token',
                          'endpoint': self.placement.endpoint,
                          'token': 'admin'},
            'nova_orphans': {'state_path': os.path.join(workdir, 'state'),
                             'cell_timeout': '600'},
        }
        if concurrency:
            base['nova_orphans']['placement_concurrency'] = concurrency
        os.makedirs(os.path.join(workdir, 'api'), exist_ok=True)
        os.makedirs(os.path.join(workdir, 'fast'), exist_ok=True)
        os.makedirs(os.path.join(workdir, 'nova'), exist_ok=True)
        self.api_conf = write_ini(os.path.join(workdir, 'api', 'nova.conf'),
                                  base)
        fast = dict(base, placement_database={
            'connection': urls['placement']})
        self.fast_conf = write_ini(
            os.path.join(workdir, 'fast', 'nova.conf'), fast)
        nova = {k: v for k, v in base.items() if k != 'nova_orphans'}
        self.nova_conf = write_ini(
            os.path.join(workdir, 'nova', 'nova.conf'), nova)
        self.env = dict(os.environ, OS_NOVA_DISABLE_EVENTLET_PATCHING='True',
                        PYTHONPATH=REPO)
        for key in [k for k in self.env if k.startswith('OS_') and
                    k != 'OS_NOVA_DISABLE_EVENTLET_PATCHING']:
            del self.env[key]
        self.env.pop('http_proxy', None)
        self.env.pop('HTTP_PROXY', None)
        self.env['no_proxy'] = '127.0.0.1,localhost'

    def stop(self):
        self.placement.stop()

    # The tools ----------------------------------------------------------

    def _argv(self, tool, delete=False, journal=None):
        py = sys.executable
        if tool == 'audit':
            argv = [py, '-c', _NOVA_MANAGE, '--config-file', self.nova_conf,
                    '--config-dir', os.path.dirname(self.nova_conf),
                    'placement', 'audit', '--verbose']
            return argv + (['--delete'] if delete else [])
        host_view = tool in HOST_TOOLS
        tool = tool.partition('-')[0]
        conf = self.fast_conf if tool == 'fast' else self.api_conf
        if delete:
            # No --config-dir (the directory holds only the file given):
            # with it, the "To undo" line clean prints at the end fails
            # (the command line is built from oslo.config's config_dir,
            # a list) and the run ends with an unexpected error.
            return [py, '-c', _ORPHANS, '--config-file', conf,
                    'allocations', 'clean', '--format', 'json',
                    '--journal', journal]
        return [py, '-c', _ORPHANS, '--config-file', conf, '--config-dir',
                os.path.dirname(conf), 'allocations', 'list', '--format',
                'json'] + (list(HOST_VIEW) if host_view else [])

    def run(self, tool, timeout=3600, delete=False, extra=()):
        """Run one tool once; returns measurements and its findings.

        ``TOOL@LABEL`` runs the tool from the checkout ``trees`` names
        LABEL: imported from there, and started there (``python -c``
        imports from its working directory first). ``extra``: more
        arguments to a list.
        """
        journal = os.path.join(self.workdir, 'journal-%d' % time.time_ns())
        name, _at, label = tool.partition('@')
        tree = self.trees[label]
        result = self._measured(
            self._argv(name, delete=delete, journal=journal) + list(extra),
            timeout, os.path.join(self.workdir, 'out-%s.txt' % tool),
            env=dict(self.env, PYTHONPATH=tree), cwd=tree)
        result['tool'] = tool
        if delete:
            result['journal'] = journal
        ok_codes = (0, 3, 4) if not delete else (0, 4)
        if result['rc'] not in ok_codes:
            raise RuntimeError('%s failed (%d): %s' % (
                tool, result['rc'], result['stderr'][-3000:]))
        if name == 'audit':
            result['found'] = sorted(
                list(m) for m in set(AUDIT_FLAG.findall(result['stdout'])))
        elif name in HOST_TOOLS:
            result['found'] = sorted(r['provider'] for r in json.loads(
                result['stdout']) if r['held'])
        else:
            rows = json.loads(result['stdout'])
            result['found'] = sorted(
                [r['consumer'], r['resource_provider'], r['reason']]
                for r in rows)
            if delete:
                result['outcomes'] = collections.Counter(
                    r.get('outcome', '?') for r in rows)
        del result['stdout']
        result['stderr'] = result['stderr'][-2000:]
        return result

    def _measured(self, argv, timeout, stdout_path=None, env=None,
                  cwd=REPO):
        """run_with_rusage, with placement's (and the database server's)
        CPU seconds and the requests it served meanwhile, and the load
        average before.
        """
        cpu0 = self.placement.cpu_seconds()
        counts0 = self.placement.counts()
        db0 = self.db_cpu() if self.db_cpu else None
        load = os.getloadavg()[0]
        machine0 = machine_cpu_seconds()
        result = run_with_rusage(argv, env=env or self.env, timeout=timeout,
                                 stdout_path=stdout_path, cwd=cwd)
        machine = machine_cpu_seconds() - machine0
        result['placement_cpu'] = self.placement.cpu_seconds() - cpu0
        counts = self.placement.counts()
        result['placement_requests'] = counts['requests'] - counts0[
            'requests']
        result['allocation_reads'] = (counts['allocation_reads'] -
                                      counts0['allocation_reads'])
        if self.db_cpu:
            result['db_cpu'] = self.db_cpu() - db0
        # What the rest of the machine ran meanwhile, on the same cores:
        # a steadier measure of the noise than the load average.
        result['other_cpu'] = max(0.0, machine - result['cpu'] -
                                  result['placement_cpu'] -
                                  result.get('db_cpu', 0.0))
        # The 1-minute load average before the run: other work on the
        # machine shows up here.
        result['loadavg_before'] = load
        return result

    def forget_kept_reads(self):
        """Remove the placement reads the API-mode scans keep (in the
        state directory): the next is a first, cold scan.
        """
        for path in glob.glob(os.path.join(self.workdir, 'state',
                                           'kept-reads-*.json')):
            os.unlink(path)

    def churn(self, fraction, rand):
        """Move the generation of ``fraction`` of the compute nodes'
        providers as nova does, by writing allocations there: one live
        server's on each, written again as they are (its findings do not
        change). Returns how many providers' generations moved.
        """
        import requests
        session = requests.Session()
        session.trust_env = False
        session.headers.update({'X-Auth-Token': 'admin',
                                'OpenStack-API-Version': 'placement 1.37',
                                'Accept': 'application/json'})
        url = self.placement.endpoint

        def generations():
            return {p['uuid']: p['generation'] for p in session.get(
                url + '/resource_providers').json()['resource_providers']}
        before = generations()
        live = collections.defaultdict(list)
        for inst in self.cloud.instances:
            if not inst['deleted'] and inst['host'] and (
                    inst['vm_state'] == 'active' and not inst['task_state']):
                live[inst['host']].append(inst['uuid'])
        nodes = [n for n in self.cloud.nodes if live[n['host']]]
        for node in rand.sample(nodes, max(1, int(len(self.cloud.nodes) *
                                                  fraction))):
            consumer = rand.choice(live[node['host']])
            doc = session.get(url + '/allocations/%s' % consumer).json()
            resp = session.put(url + '/allocations/%s' % consumer, json={
                'allocations': {rp: {'resources': a['resources']}
                                for rp, a in doc['allocations'].items()},
                'project_id': doc['project_id'], 'user_id': doc['user_id'],
                'consumer_generation': doc['consumer_generation']})
            if resp.status_code != 204:
                raise RuntimeError('churn: PUT /allocations/%s: %d %s' % (
                    consumer, resp.status_code, resp.text))
        after = generations()
        return sum(1 for uuid, gen in after.items()
                   if before.get(uuid) != gen)

    def restore(self, journal, tool='fast', timeout=3600):
        """``allocations restore`` of a clean's journal, measured.

        Returns the measurements and the outcome of every entry.
        """
        conf = self.fast_conf if tool == 'fast' else self.api_conf
        # No --config-dir: see _argv.
        argv = [sys.executable, '-c', _ORPHANS, '--config-file', conf,
                'allocations', 'restore', '--journal', journal, '--format',
                'json']
        result = self._measured(argv, timeout, os.path.join(
            self.workdir, 'out-restore.txt'))
        result['tool'] = 'restore-%s' % tool
        if result['rc'] not in (0, 1, 4):
            raise RuntimeError('restore failed (%d): %s' % (
                result['rc'], result['stderr'][-3000:]))
        rows = json.loads(result.pop('stdout'))
        result['entries'] = len(rows)
        result['outcomes'] = collections.Counter(
            r.get('outcome', '?') for r in rows)
        result['stderr'] = result['stderr'][-2000:]
        return result

    def floor_plan(self, counted):
        """What FLOOR runs: the row-returning statements a recorded run
        (count_queries) gave the driver, per database, in their order.
        """
        from sqlalchemy.engine import url as sa_url
        names = {}
        for db, url in self.urls.items():
            parsed = sa_url.make_url(url)
            if parsed.get_backend_name() == 'sqlite':
                names[('sqlite', os.path.abspath(parsed.database))] = (
                    db, {'kind': 'sqlite',
                         'path': os.path.abspath(parsed.database)})
            else:
                names[('mysql', parsed.database)] = (db, {
                    'kind': 'mysql', 'connect': {
                        'host': parsed.host or '127.0.0.1',
                        'port': parsed.port or 3306,
                        'user': parsed.username,
                        'password': parsed.password or '',
                        'database': parsed.database,
                        'charset': parsed.query.get('charset', 'utf8mb4')}})
        plan = {}
        for kind, where, sql, unbuffered in counted['driver']:
            if not sql.lstrip().upper().startswith(('SELECT', 'WITH')):
                continue
            db, spec = names[(kind, where)]
            if db not in plan:
                plan[db] = dict(spec, name=db, statements=[])
            plan[db]['statements'].append([sql, unbuffered])
        return list(plan.values())

    def floor(self, plan, timeout=3600):
        """FLOOR over ``plan``, measured: ``wall`` is its own timing of
        the reads, ``process_wall`` the whole process's.
        """
        path = os.path.join(self.workdir, 'floor-plan.json')
        with open(path, 'w') as f:
            json.dump(plan, f)
        out = os.path.join(self.workdir, 'floor-result.json')
        result = self._measured(
            [sys.executable, '-c', FLOOR, path, out], timeout)
        if result['rc'] != 0:
            raise RuntimeError('floor failed: %s' % result['stderr'][-3000:])
        with open(out) as f:
            timed = json.load(f)
        result['process_wall'] = result['wall']
        result['wall'] = timed['seconds']
        result['databases'] = timed['databases']
        result['tool'] = 'floor'
        del result['stdout'], result['stderr']
        return result

    def count_queries(self, tool='fast'):
        """SQL statements per database in one (untimed) run of the tool,
        and every statement its driver was given (``driver``: kind,
        sqlite path or MySQL database, SQL, unbuffered?).
        """
        out = os.path.join(self.workdir, 'queries-%s.json' % tool)
        conf = self.fast_conf if tool == 'fast' else self.api_conf
        argv = [sys.executable, '-c', _COUNTING, out, '--config-file', conf,
                '--config-dir', os.path.dirname(conf), 'allocations', 'list',
                '--format', 'json']
        result = run_with_rusage(argv, env=self.env, timeout=3600)
        if result['rc'] not in (0, 3):
            raise RuntimeError(result['stderr'][-2000:])
        with open(out) as f:
            return json.load(f)

    def per_database_queries(self, counted):
        """{'api'|'cell0'|'cell1'...|'placement': statements} of a run."""
        from sqlalchemy.engine import url as sa_url
        result = {}
        for db, url in self.urls.items():
            name = os.path.basename(sa_url.make_url(url).database or '')
            result[db] = counted['counts'].get(name, 0)
        return result


def score(truth, found, tool):
    """True/false positives against the generated truth; of a host
    view, the hosts it shows, and whether they are the truth's.
    """
    if tool in HOST_TOOLS:
        return {'hosts': len(found),
                'matches_truth': found == truth['held_hosts']}
    if tool == 'audit':
        # The audit has no reasons and never sees missing allocations:
        # compare (consumer, provider) pairs of allocations.
        want = {(c, rp) for c, rp, r in truth['orphans']
                if r != 'missing_allocations'}
        got = {tuple(x) for x in found}
        expected = {tuple(x) for x in truth['audit_expected']}
        return {
            'true_positives': len(want & got),
            'false_positives': len(got - want),
            'missed': len(want - got),
            'missed_missing_allocations': sum(
                1 for o in truth['orphans']
                if o[2] == 'missing_allocations'),
            'matches_truth': got == want,
            'matches_own_algorithm': got == expected,
        }
    want = {tuple(x) for x in truth['orphans']}
    got = {tuple(x) for x in found}
    return {'true_positives': len(want & got),
            'false_positives': len(got - want), 'missed': len(want - got),
            'matches_truth': got == want}
