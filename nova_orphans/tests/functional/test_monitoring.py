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
"""Monitoring end to end: the shipped cron script and clean unit write
the metrics files, node_exporter's textfile collector serves them, and a
Prometheus server with the shipped alert rules scrapes them; the alerts
are read from Prometheus's HTTP API.

Each situation gets a textfile directory and a node_exporter of its own,
labelled ``situation`` in Prometheus's scrape configuration, so that one
Prometheus evaluates them all at once.

Two things are not as in production, only faster. The rules are the
shipped file with each ``for:`` shortened from minutes or hours to
seconds (1h to 6s, 30m to 3s); nothing else in them changes. And the
runs that must look old (the last scan two hours ago, the last clean
three days ago) run under ``faketime``, the tool's clock set back: its
metrics carry the time it read, as a run that long ago wrote them.
"""

import os
import re
import subprocess
import time

from nova_orphans.tests import deploy
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import prometheus
from nova_orphans.tests import programs
from nova_orphans.tests import runners

RULES = os.path.join(deploy.PROMETHEUS, 'nova-orphans.rules.yaml')
# Seconds per second of the shipped rules' for: durations.
FOR_SCALE = 600
BW_INVENTORY = {'NET_BW_EGR_KILOBIT_PER_SEC': 10000,
                'NET_BW_IGR_KILOBIT_PER_SEC': 10000}
BW = {'NET_BW_EGR_KILOBIT_PER_SEC': 1000, 'NET_BW_IGR_KILOBIT_PER_SEC': 1000}


def scaled_rules(path):
    """The shipped rules' text with each ``for:`` divided by FOR_SCALE."""
    units = {'s': 1, 'm': 60, 'h': 3600}
    with open(RULES) as f:
        text = f.read()

    def scale(m):
        seconds = int(m.group(2)) * units[m.group(3)]
        return '%s%ds' % (m.group(1), max(1, seconds // FOR_SCALE))

    scaled, count = re.subn(r'(?m)^(\s+for: )(\d+)([smh])$', scale, text)
    with open(path, 'w') as f:
        f.write(scaled)
    return count


class MonitoringTestCase(base.FunctionalTestCase):
    """host1 (cell1) and host2 (cell2) each run a live instance."""

    CELLS = ('cell1', 'cell2')

    def setUp(self):
        super().setUp()
        for program in (prometheus.PROMETHEUS, prometheus.NODE_EXPORTER,
                        'faketime'):
            programs.require(self, program)
        self.host1 = self.add_node('host1')
        self.host2 = self.add_node('host2', cell='cell2')
        self.boot('host1', self.host1)
        self.boot('host2', self.host2, cell='cell2')
        self.env = runners.environment()
        self.env.update(NOVA_ORPHANS_CONFIG=self.conf_file,
                        NOVA_ORPHANS_LOCK=os.path.join(self.tmp, 'lock'))
        self.env['PATH'] = os.pathsep.join([
            os.path.dirname(runners.script(runners.MANAGE)),
            self.env.get('PATH', '')])
        self.textfiles = os.path.join(self.tmp, 'textfiles')
        self.situations = []

    def directory(self, situation):
        """node_exporter's textfile directory for ``situation``."""
        path = os.path.join(self.textfiles, situation)
        if situation not in self.situations:
            os.makedirs(path)
            self.situations.append(situation)
        return path

    def run_command(self, argv, env, back=None):
        if back:
            argv = [programs.require(self, 'faketime'), '-f', back] + argv
        proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr

    def scan(self, situation, conf_file=None, back=None):
        """The shipped cron script, its metrics in ``situation``'s
        directory: (exit code, stderr).
        """
        env = dict(self.env, NOVA_ORPHANS_METRICS=os.path.join(
            self.directory(situation), 'nova_orphans.prom'))
        if conf_file:
            env['NOVA_ORPHANS_CONFIG'] = conf_file
        rc, out, err = self.run_command(
            [os.path.join(deploy.CRON, 'nova-orphans-metrics')], env, back)
        self.assertEqual('', out)
        return rc, err

    def clean(self, situation, back=None):
        """The shipped clean unit's ExecStart, its metrics in
        ``situation``'s directory: (exit code, whether the unit
        succeeds, stderr).
        """
        keys = deploy.unit('nova-orphans-clean.service')
        env = dict(self.env, NOVA_ORPHANS_CLEAN_METRICS=os.path.join(
            self.directory(situation), 'nova_orphans_clean.prom'))
        rc, out, err = self.run_command(deploy.exec_start(keys, env), env,
                                        back)
        return rc, rc in deploy.success_codes(keys), err

    def test_each_alert_fires_in_its_situation(self):
        # A clean cloud, every cell read; a clean with nothing to do.
        self.assertEqual((0, ''), self.scan('clean_cloud'))
        self.assertEqual((0, True, ''), self.clean('clean_ok')[:3])
        # The clean that will fail, succeeding first.
        self.assertEqual((0, True, ''), self.clean('clean_failed')[:3])
        # The last clean, three days ago.
        rc, success, err = self.clean('clean_stale', back='-3d')
        self.assertEqual((0, True, ''), (rc, success, err))
        # The last scan two hours ago, and since then the scan stops on
        # an error (placement unreachable): its file stays as it was.
        self.assertEqual((0, ''), self.scan('scan_stale', back='-2h'))
        stale_file = os.path.join(self.directory('scan_stale'),
                                  'nova_orphans.prom')
        with open(stale_file) as f:
            before = f.read()
        down = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'down.conf'), 'http://127.0.0.1:1',
            extra={'nova_orphans': {'state_path': self.state_path}})
        rc, err = self.scan('scan_stale', conf_file=down)
        self.assertNotIn(rc, (0, 2, 3, 5))
        self.assertIn('Connection refused', err)
        with open(stale_file) as f:
            self.assertEqual(before, f.read())
        # cell2 unreadable: the scan is incomplete, and so is the
        # clean, which fails.
        cell2_url = self.nova.cell_urls['cell2']
        self.nova.break_cell('cell2')
        rc, err = self.scan('cell_unreadable')
        self.assertEqual(0, rc)
        self.assertIn('WARNING: cell cell2 could not be read', err)
        rc, success, err = self.clean('clean_failed')
        self.assertEqual((2, False), (rc, success), err)
        self.nova.set_cell_url('cell2', cell2_url)
        # An instance force-deleted in SQL: its allocation is orphaned.
        gone = self.boot('host1', self.host1)
        self.nova.force_delete_instance('cell1', gone)
        self.assertEqual((0, ''), self.scan('orphans'))
        # The clean unit repairs it; then a scheduled dry run writes the
        # clean's file: the clean's rows stay there for its panels.
        rc, success, err = self.clean('clean_then_dry_run')
        self.assertEqual((4, True), (rc, success), err)
        rc, out, err = self.manage(
            'allocations', 'clean', '--dry-run', '--metrics-file',
            os.path.join(self.directory('clean_then_dry_run'),
                         'nova_orphans_clean.prom'))
        self.assertEqual(0, rc, err)
        # A server holding a port's bandwidth whose info cache lists no
        # port, and no [neutron] to ask: a source not read.
        bw = self.add_child(self.host1, 'host1:Open vSwitch agent:br-ex',
                            BW_INVENTORY)
        vm = self.nova.add_instance('cell1', host='host1', node='host1')
        self.allocate(vm, {self.host1: base.FLAVOR, bw: BW})
        self.nova.set_network_info('cell1', vm, [])
        rc, err = self.scan('source_unreadable')
        self.assertEqual(0, rc)
        self.assertIn('WARNING: neutron could not be asked', err)

        rules = os.path.join(self.tmp, 'nova-orphans.rules.yaml')
        self.assertEqual(3, scaled_rules(rules))
        # A node_exporter and a Prometheus for each situation: the
        # orphans' rule sums over every target it scrapes, as it does
        # over a production Prometheus's.
        servers = {}
        for situation in self.situations:
            exporter = self.useFixture(prometheus.NodeExporter(
                self, self.directory(situation), self.tmp))
            servers[situation] = self.useFixture(prometheus.Prometheus(
                self, os.path.join(self.tmp, 'prometheus-' + situation),
                [rules], {exporter.target: {'situation': situation}}))
        expected = {
            'clean_cloud': [],
            'clean_ok': [],
            'clean_then_dry_run': [],
            'orphans': ['NovaOrphanedAllocations'],
            'cell_unreadable': ['NovaOrphansCellUnreadable'],
            'source_unreadable': ['NovaOrphansSourceUnreadable'],
            'scan_stale': ['NovaOrphansScanStale'],
            'clean_failed': ['NovaOrphansCleanFailed'],
            'clean_stale': ['NovaOrphansCleanStale'],
        }
        self.assertEqual(sorted(expected), sorted(self.situations))
        deadline = time.monotonic() + 60
        while True:
            alerts = {s: sorted((a['labels']['alertname'], a['state'])
                                for a in server.alerts())
                      for s, server in servers.items()}
            if all(('firing' == state for s in alerts
                    for _n, state in alerts[s])) and all(
                    alerts[s] for s in expected if expected[s]):
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        # Each alert fired in its situation and no other alert did; none
        # is even pending on the clean ones, whose metrics Prometheus
        # read as long as the others' (the longest for: has passed).
        self.assertEqual(
            {s: [(n, 'firing') for n in names]
             for s, names in expected.items()}, alerts)
        for situation, server in servers.items():
            self.assertEqual([({'__name__': 'up', 'instance': target,
                                'job': 'node', 'situation': situation},
                               1.0)
                              for target in [server.targets[0]]],
                             server.query('up'))
            scan = server.query('nova_orphans_last_scan_timestamp_seconds')
            clean = server.query(
                'nova_orphans_clean_last_run_timestamp_seconds')
            self.assertEqual(
                (1, 0) if situation.startswith(('clean_cloud', 'orphans',
                                                'cell_', 'source_',
                                                'scan_'))
                else (0, 1), (len(scan), len(clean)), situation)
            health = server.rule_health()
            self.assertEqual(9, len(health))
            self.assertEqual({('ok', '')}, set(health.values()))
        # What the clean repaired, and that a dry run ran since.
        server = servers['clean_then_dry_run']
        self.assertEqual(
            [('deleted_instance', 1.0)],
            [(labels['reason'], value) for labels, value in server.query(
                'nova_orphans_clean_rows{outcome="repaired"}')])
        self.assertEqual(1, len(server.query(
            'nova_orphans_clean_dry_run_last_run_timestamp_seconds')))
