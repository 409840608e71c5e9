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
"""The shipped deployment files checked by the tools that read them
(promtool, systemd-analyze, sh), and the cron script, crontab and the
systemd units' commands run against placement and nova's schema, every
cell read and one not. What needs no program to check: the unit tests'
test_deploy.py.
"""

import fcntl
import os
import subprocess
import time
import uuid as uuidlib

from nova_orphans import metrics
from nova_orphans.repair import journal
from nova_orphans.tests import deploy
from nova_orphans.tests.functional import base
from nova_orphans.tests import programs
from nova_orphans.tests import runners


# Allocations (and consumers) by reason, every cell read; with cell2 not
# read, an unknown consumer could be one of its instances.
ALL_READ = {'deleted_instance': 1.0, 'unknown_consumer': 1.0}
CELL2_NOT_READ = {'deleted_instance': 1.0, 'unverifiable': 2.0}
UNITS = deploy.UNITS
SERVICES = deploy.SERVICES
VENV_BIN = deploy.VENV_BIN
LOCKED = deploy.LOCKED


def read_metrics(path):
    """{sample: value} of a metrics file, parsed as Prometheus does."""
    from prometheus_client import parser
    with open(path) as f:
        text = f.read()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in parser.text_string_to_metric_families(text)
            for s in family.samples}


class DeployTestCase(base.FunctionalTestCase):
    """host1 (cell1) holds a deleted instance's allocation and an
    unknown consumer's; host2 (cell2) a live instance's.
    """

    CELLS = ('cell1', 'cell2')

    def setUp(self):
        super().setUp()
        self.host1 = self.add_node('host1')
        self.host2 = self.add_node('host2', cell='cell2')
        self.gone = self.boot('host1', self.host1)
        self.nova.force_delete_instance('cell1', self.gone)
        self.stranger = str(uuidlib.uuid4())
        self.allocate(self.stranger, self.host1)
        self.boot('host2', self.host2, cell='cell2')
        self.cell2_url = self.nova.cell_urls['cell2']
        self.metrics = os.path.join(self.tmp, 'nova_orphans.prom')
        self.clean_metrics = os.path.join(self.tmp, 'nova_orphans_clean.prom')
        self.env = runners.environment()
        self.lock = os.path.join(self.tmp, 'lock')
        self.env.update(NOVA_ORPHANS_CONFIG=self.conf_file,
                        NOVA_ORPHANS_METRICS=self.metrics,
                        NOVA_ORPHANS_CLEAN_METRICS=self.clean_metrics,
                        NOVA_ORPHANS_LOCK=self.lock)
        # The console script, wherever this test's is.
        self.env['PATH'] = os.pathsep.join([
            os.path.dirname(runners.script(runners.MANAGE)),
            self.env.get('PATH', '')])

    def run_command(self, argv):
        proc = subprocess.run(argv, env=self.env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr

    def unit_command(self, name):
        """The unit's ExecStart, its Environment= replaced by the test's."""
        keys = deploy.unit(name)
        env = deploy.environment(keys)
        self.assertEqual(set(env), set(env) & set(self.env), name)
        return (self.run_command(deploy.exec_start(keys, self.env)),
                deploy.success_codes(keys))

    def run_cron_script(self):
        return self.run_command([os.path.join(deploy.CRON,
                                              'nova-orphans-metrics')])

    def assertScan(self, unreadable, **counts):
        """Allocations and consumers per reason (also 0) as ``counts``."""
        samples = read_metrics(self.metrics)
        expected = dict.fromkeys(metrics.COUNTED_REASONS, 0.0)
        expected.update(counts)
        for name in ('nova_orphans_allocations', 'nova_orphans_consumers'):
            self.assertEqual(expected, {
                dict(labels)['reason']: value
                for (n, labels), value in samples.items() if n == name})
        self.assertEqual(float(unreadable),
                         samples[('nova_orphans_unreadable_cells', ())])
        return samples

    def break_cell2(self):
        self.nova.break_cell('cell2')
        self.addCleanup(self.nova.set_cell_url, 'cell2', self.cell2_url)

    def test_metrics_cron_script(self):
        rc, out, err = self.run_cron_script()
        self.assertEqual((0, '', ''), (rc, out, err))
        self.assertScan(0, **ALL_READ)
        self.break_cell2()
        rc, out, err = self.run_cron_script()
        self.assertEqual((0, ''), (rc, out))
        self.assertIn('WARNING: cell cell2 could not be read', err)
        self.assertScan(1, **CELL2_NOT_READ)
        # The scan stopped: the last metrics stay, and go stale.
        with open(self.metrics) as f:
            before = f.read()
        self.env['NOVA_ORPHANS_CONFIG'] = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'down.conf'), 'http://127.0.0.1:1',
            extra={'nova_orphans': {'state_path': self.state_path}})
        rc, out, err = self.run_cron_script()
        self.assertNotIn(rc, (0, 2, 3, 5))
        self.assertIn('Connection refused', err)
        with open(self.metrics) as f:
            self.assertEqual(before, f.read())
        self.assertEqual(['nova_orphans.prom'],
                         [n for n in os.listdir(self.tmp)
                          if n.startswith(('nova_orphans', '.nova_orphans'))])

    def test_metrics_unit(self):
        (rc, out, err), success = self.unit_command(
            'nova-orphans-metrics.service')
        self.assertEqual(3, rc, err)
        self.assertIn(rc, success)
        with open(self.metrics) as f:
            self.assertEqual(f.read(), out)
        samples = self.assertScan(0, **ALL_READ)
        self.assertEqual(512.0, samples[(
            'nova_orphans_resources',
            (('host', 'host1'), ('reason', 'unknown_consumer'),
             ('resource_class', 'MEMORY_MB'),
             ('resource_provider', self.host1),
             ('resource_provider_name', 'host1')))])
        self.break_cell2()
        (rc, out, err), success = self.unit_command(
            'nova-orphans-metrics.service')
        self.assertEqual(5, rc, err)
        self.assertIn(rc, success)
        self.assertScan(1, **CELL2_NOT_READ)

    def clean_samples(self):
        samples = read_metrics(self.clean_metrics)
        rows = {(dict(labels)['reason'], dict(labels)['outcome']): value
                for (n, labels), value in samples.items()
                if n == 'nova_orphans_clean_rows' and value}
        return rows, samples

    def dry_run_of_the_unit(self):
        """The clean unit's command with --dry-run: (rc, err, samples)."""
        keys = deploy.unit('nova-orphans-clean.service')
        rc, _out, err = self.run_command(
            deploy.exec_start(keys, self.env) + ['--dry-run'])
        return rc, err, read_metrics(self.clean_metrics)

    def test_clean_unit(self):
        # A dry run first, into the clean's file: its own series, and
        # no clean known (NovaOrphansCleanStale fires on a schedule
        # that only dry-runs).
        rc, err, samples = self.dry_run_of_the_unit()
        self.assertEqual(3, rc, err)
        self.assertEqual({('deleted_instance', 'dry_run'): 1.0,
                          ('unknown_consumer', 'dry_run'): 1.0}, {
            (dict(labels)['reason'], dict(labels)['outcome']): value
            for (n, labels), value in samples.items()
            if n == 'nova_orphans_clean_dry_run_rows' and value})
        self.assertEqual((0.0, 0.0), (
            samples[('nova_orphans_clean_last_success_timestamp_seconds',
                     ())],
            samples[('nova_orphans_clean_last_run_timestamp_seconds', ())]))
        self.assertLess(0.0, samples[(
            'nova_orphans_clean_dry_run_last_run_timestamp_seconds', ())])
        self.assertNotIn('nova_orphans_clean_rows',
                         {n for n, _labels in samples})
        (rc, out, err), success = self.unit_command(
            'nova-orphans-clean.service')
        self.assertEqual(4, rc, err)
        self.assertIn(rc, success)
        self.assertIn('Journal: %s/' % self.state_path, err)
        rows, samples = self.clean_samples()
        self.assertEqual({('deleted_instance', 'repaired'): 1.0,
                          ('unknown_consumer', 'repaired'): 1.0}, rows)
        self.assertEqual(0.0, samples[
            ('nova_orphans_clean_unreadable_cells', ())])
        first = samples[
            ('nova_orphans_clean_last_success_timestamp_seconds', ())]
        self.assertEqual(first, samples[
            ('nova_orphans_clean_last_run_timestamp_seconds', ())])
        # Nothing left to do: a dry run says 0, and keeps the clean's
        # times as the clean wrote them.
        rc, err, samples = self.dry_run_of_the_unit()
        self.assertEqual(0, rc, err)
        self.assertEqual((first, first), (
            samples[('nova_orphans_clean_last_success_timestamp_seconds',
                     ())],
            samples[('nova_orphans_clean_last_run_timestamp_seconds', ())]))
        # A new orphan, and cell2 not read: the clean repairs what it
        # can prove (an unknown consumer could be cell2's), fails its
        # unit, and the last success stays the first.
        self.nova.force_delete_instance('cell1', self.boot('host1',
                                                           self.host1))
        self.break_cell2()
        (rc, out, err), success = self.unit_command(
            'nova-orphans-clean.service')
        self.assertEqual(5, rc, err)
        self.assertNotIn(rc, success)
        rows, samples = self.clean_samples()
        self.assertEqual({('deleted_instance', 'repaired'): 1.0}, rows)
        self.assertEqual(1.0, samples[
            ('nova_orphans_clean_unreadable_cells', ())])
        self.assertEqual(first, samples[
            ('nova_orphans_clean_last_success_timestamp_seconds', ())])
        self.assertLess(first, samples[
            ('nova_orphans_clean_last_run_timestamp_seconds', ())])

    def test_crontab_clean(self):
        _env, jobs = deploy.crontab('nova-orphans')
        [command] = [c for _s, _u, c in jobs if 'clean' in c]
        rc, out, err = self.run_command(['sh', '-c', command.replace(
            journal.SYSTEM_STATE_PATH + '/lock', self.lock)])
        self.assertEqual((4, ''), (rc, out), err)
        rows, samples = self.clean_samples()
        self.assertEqual({('deleted_instance', 'repaired'): 1.0,
                          ('unknown_consumer', 'repaired'): 1.0}, rows)
        self.assertLess(0.0, samples[
            ('nova_orphans_clean_last_success_timestamp_seconds', ())])

    def test_services_wait_for_the_lock(self):
        """The scan does not start while the lock is held (a clean), and
        runs once it is released.
        """
        argv = deploy.exec_start(deploy.unit('nova-orphans-metrics.service'),
                                 self.env)
        held = os.open(self.lock, os.O_CREAT | os.O_RDWR, 0o600)
        self.addCleanup(os.close, held)
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        self.addCleanup(proc.kill)
        time.sleep(1)
        # flock(1) starts the command once it holds the lock: no child.
        self.assertEqual((None, []), (proc.poll(),
                                      programs.children(proc.pid)))
        self.assertFalse(os.path.exists(self.metrics))
        fcntl.flock(held, fcntl.LOCK_UN)
        _out, err = proc.communicate(timeout=120)
        self.assertEqual(3, proc.returncode, err)
        self.assertScan(0, **ALL_READ)

    def test_kubernetes_jobs(self):
        """The CronJobs' and the restore Job's commands as their
        containers run them, the volume and nova.conf this test's: the
        scan, the clean (4 is success), and the restore of its journal.
        """
        volume = os.path.join(self.tmp, 'volume')
        os.mkdir(volume)

        def here(text):
            return text.replace(journal.SYSTEM_STATE_PATH, volume).replace(
                '/etc/nova/nova.conf', self.conf_file)

        def run(manifest, *args):
            [container] = manifest['spec']['template']['spec']['containers']
            env = dict(self.env, PATH=os.pathsep.join(
                [deploy.CRON, self.env['PATH']]))
            env.update((e['name'], here(e['value']))
                       for e in container['env'])
            argv = [here(w) for w in container['command'] +
                    list(args or container.get('args', ()))]
            proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=120)
            return proc.returncode, proc.stderr

        jobs = {m['metadata']['name']: m['spec']['jobTemplate']
                for m in deploy.manifests() if m['kind'] == 'CronJob'}
        self.assertEqual((0, ''), run(jobs['nova-orphans-metrics']))
        self.metrics = os.path.join(volume, 'nova_orphans.prom')
        self.assertScan(0, **ALL_READ)
        before = self.placement.dump_state()
        rc, err = run(jobs['nova-orphans-clean'])
        self.assertEqual(0, rc, err)
        self.clean_metrics = os.path.join(volume, 'nova_orphans_clean.prom')
        rows, _samples = self.clean_samples()
        self.assertEqual({('deleted_instance', 'repaired'): 1.0,
                          ('unknown_consumer', 'repaired'): 1.0}, rows)
        # Beside the kept reads of the scans (readers/kept_reads.py).
        [journal_file] = [name for name in os.listdir(self.state_path)
                          if name.startswith('journal-')]
        [restore] = deploy.manifests('nova-orphans-restore.yaml')
        args = restore['spec']['template']['spec']['containers'][0]['args']
        self.assertEqual(journal.SYSTEM_STATE_PATH + '/JOURNAL', args[-1])
        rc, err = run(restore, *args[:-1] + [
            os.path.join(self.state_path, journal_file)])
        self.assertEqual(0, rc, err)
        self.assertEqual(before, self.placement.dump_state())

    def test_format_prometheus_of_restore(self):
        rc, out, err = self.manage('allocations', 'clean', '--journal',
                                   os.path.join(self.tmp, 'j.jsonl'))
        self.assertEqual(4, rc, err)
        path = os.path.join(self.tmp, 'restore.prom')
        rc, out, err = self.manage(
            'allocations', 'restore', '--journal',
            os.path.join(self.tmp, 'j.jsonl'), '--format', 'prometheus',
            '--metrics-file', path)
        self.assertEqual(4, rc, err)
        with open(path) as f:
            self.assertEqual(f.read(), out)
        self.assertEqual(
            {('deleted_instance', 'repaired'): 1.0,
             ('unknown_consumer', 'repaired'): 1.0},
            {(dict(labels)['reason'], dict(labels)['outcome']): value
             for (n, labels), value in read_metrics(path).items()
             if n == 'nova_orphans_restore_rows' and value})
        self.assertIn(
            metrics.PREFIX + 'restore_last_success_timestamp_seconds', out)

    def test_metrics_file_beside_a_table(self):
        """The file has every reason, whatever --reason shows."""
        rc, out, err = self.manage('allocations', 'list', '--reason',
                                   'unknown_consumer', '--metrics-file',
                                   self.metrics)
        self.assertEqual((3, ''), (rc, err))
        self.assertIn(self.stranger, out)
        self.assertNotIn(self.gone, out)
        self.assertScan(0, **ALL_READ)

    def test_metrics_file_refused_before_anything_is_read(self):
        path = os.path.join(self.tmp, 'no', 'x.prom')
        before = self.placement.dump_state()
        for argv in (('list',), ('clean',),
                     ('restore', '--journal', path)):
            rc, out, err = self.manage('allocations', *argv,
                                       '--metrics-file', path)
            self.assertEqual(
                (127, '', 'ERROR: Metrics file %s: directory %s does not '
                 'exist\n'
                 % (path, os.path.dirname(path))), (rc, out, err), argv)
        self.assertEqual(before, self.placement.dump_state())


class RulesTestCase(base.TestCase):
    """The shipped alert rules, by promtool."""

    def test_check_rules(self):
        self.assertIn('SUCCESS: 9 rules found',
                      programs.run(self, 'promtool', 'check', 'rules',
                                   deploy.RULES))

    def test_each_alert_fires_and_does_not(self):
        """nova-orphans.rules.test.yaml: orphans for an hour, a cell not
        read, a stale scan, a failed clean, no clean success for days;
        and what the capacity recording rules record.
        """
        out = programs.run(self, 'promtool', 'test', 'rules', os.path.join(
            deploy.PROMETHEUS, 'nova-orphans.rules.test.yaml'))
        self.assertIn('SUCCESS', out)


class SystemdTestCase(base.TestCase):
    """The shipped units, by systemd-analyze."""

    def test_verify(self):
        """systemd-analyze verify, offline: it wants ExecStart's program
        in systemd's own search path, and a test's console script is in
        a virtualenv, so the copies verified name it by its path.
        """
        tmp = self.tmp
        script = runners.script(runners.MANAGE)
        for name in UNITS:
            with open(os.path.join(deploy.SYSTEMD, name)) as f:
                text = f.read()
            self.assertEqual(name.endswith('.service'),
                             '\n%snova-orphans-manage ' % LOCKED in text)
            with open(os.path.join(tmp, name), 'w') as f:
                f.write(text.replace('\n%snova-orphans-manage ' % LOCKED,
                                     '\n%s%s ' % (LOCKED, script)))
        self.assertEqual('', programs.run(
            self, 'systemd-analyze', 'verify', '--man=no',
            *[os.path.join(tmp, name) for name in UNITS]))
        # Again with the virtualenv drop-ins, which systemd-analyze
        # reads from NAME.d beside each unit.
        for name in SERVICES:
            os.mkdir(os.path.join(tmp, name + '.d'))
            path = os.path.join(name + '.d', 'venv.conf')
            with open(os.path.join(deploy.SYSTEMD, path)) as f:
                text = f.read()
            self.assertIn('\n%s%s/nova-orphans-manage ' % (LOCKED, VENV_BIN),
                          text)
            with open(os.path.join(tmp, path), 'w') as f:
                f.write(text.replace(VENV_BIN + '/nova-orphans-manage',
                                     script))
        self.assertEqual('', programs.run(
            self, 'systemd-analyze', 'verify', '--man=no',
            *[os.path.join(tmp, name) for name in SERVICES]))


class CronTestCase(base.TestCase):
    """The shipped cron script, by sh."""

    def test_script_parses(self):
        script = os.path.join(deploy.CRON, 'nova-orphans-metrics')
        self.assertTrue(os.access(script, os.X_OK))
        proc = subprocess.run(['sh', '-n', script], capture_output=True,
                              text=True)
        self.assertEqual((0, ''), (proc.returncode, proc.stderr))
