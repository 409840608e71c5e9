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
"""Every query of the shipped Grafana dashboard, answered by a real
Prometheus scraping node_exporter's textfile collector, as a monitoring
host runs them (fixtures/prometheus.py), fed by real runs: the shipped
cron script's scan (one of its placement reads answered 503 once, so
that it retries), a clean and a restore of it, each writing its metrics
file into the one textfile directory.

The scan writes the capacity families too: nova.conf names a flavor
in ``[nova_orphans] capacity_flavors``.
"""

import json
import os
import subprocess
import time

from nova_orphans.engine import reasons
from nova_orphans import exit_codes
from nova_orphans import metrics
from nova_orphans.tests import deploy
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import faults
from nova_orphans.tests.functional.fixtures import prometheus
from nova_orphans.tests import programs
from nova_orphans.tests import runners

DASHBOARD = os.path.join(programs.REPO, 'etc', 'grafana',
                         'nova-orphans.json')
RULES = os.path.join(deploy.PROMETHEUS, 'nova-orphans.rules.yaml')
FLAVOR = {'name': 'm1.small', 'vcpus': 1, 'memory_mb': 512, 'root_gb': 1,
          'ephemeral_gb': 0, 'swap': 0, 'extra_specs': {}}
ANY = object()


def series(*label_sets, value=ANY):
    return [(dict(labels), value) for labels in label_sets]


def ordered(pairs):
    """(labels, value) pairs by their labels."""
    return sorted(pairs, key=lambda pair: sorted(pair[0].items()))


class DashboardTestCase(base.FunctionalTestCase):
    """host1 runs a server and holds a consumer nova has no trace of;
    host2 holds a server deleted in SQL.
    """

    def setUp(self):
        super().setUp()
        for program in (prometheus.PROMETHEUS, prometheus.NODE_EXPORTER):
            programs.require(self, program)
        self.host1 = self.add_node('host1')
        self.host2 = self.add_node('host2')
        self.boot('host1', self.host1)
        self.allocate('4b2e0c1a-2f8d-4c57-9a5d-0d1c2e3f4a5b', self.host1)
        gone = self.boot('host2', self.host2)
        self.nova.force_delete_instance('cell1', gone)
        self.nova.add_flavor(**FLAVOR)
        self.textfiles = os.path.join(self.tmp, 'textfiles')
        os.makedirs(self.textfiles)

    def prom(self, name):
        return os.path.join(self.textfiles, name + '.prom')

    def scan(self):
        """The shipped cron script, through a proxy that answers the
        first read of the providers 503.
        """
        proxy = self.useFixture(faults.FaultProxy(self.placement.endpoint))
        rule = proxy.inject('GET', '/resource_providers', status=503)
        env = runners.environment()
        env.update(NOVA_ORPHANS_CONFIG=self.nova_conf(
            proxy.endpoint, name='proxy.conf',
            nova_orphans={'capacity_flavors': FLAVOR['name']}),
            NOVA_ORPHANS_METRICS=self.prom('nova_orphans'))
        env['PATH'] = os.pathsep.join([
            os.path.dirname(runners.script(runners.MANAGE)),
            env.get('PATH', '')])
        proc = subprocess.run(
            [os.path.join(deploy.CRON, 'nova-orphans-metrics')], env=env,
            stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=120)
        self.assertEqual(
            (0, '', '1 request retried after transient faults (placement '
             '503: 1).\n'), (proc.returncode, proc.stdout, proc.stderr))
        self.assertEqual(1, rule.fired)

    def test_every_panel_query(self):
        self.scan()
        journal = os.path.join(self.tmp, 'clean.jsonl')
        rc, out, err = self.manage(
            'allocations', 'clean', '--journal', journal, '--metrics-file',
            self.prom('nova_orphans_clean'))
        self.assertEqual(exit_codes.REPAIRED, rc, err)
        rc, out, err = self.manage(
            'allocations', 'restore', '--journal', journal,
            '--metrics-file', self.prom('nova_orphans_restore'))
        self.assertEqual(exit_codes.REPAIRED, rc, err)

        exporter = self.useFixture(prometheus.NodeExporter(
            self, self.textfiles, self.tmp))
        server = self.useFixture(prometheus.Prometheus(
            self, os.path.join(self.tmp, 'prometheus'), [RULES],
            {exporter.target: {}}))
        deadline = time.monotonic() + 60
        while not all(server.query(name) for name in (
                'nova_orphans_last_scan_timestamp_seconds',
                'nova_orphans_flavor_hosts',
                'nova_orphans_clean_rows',
                'nova_orphans_restore_rows')):
            self.assertLess(time.monotonic(), deadline,
                            'Prometheus scraped no metrics')
            time.sleep(0.2)

        with open(DASHBOARD, encoding='utf-8') as f:
            board = json.load(f)
        answers = {}
        for panel in board['panels']:
            for target in panel.get('targets', ()):
                result = server.query(target['expr'])
                answers[(panel['title'], target['refId'])] = ordered(
                    (labels, ANY if expected_any(panel) else value)
                    for labels, value in result)
        orphans = [r for r in metrics.COUNTED_REASONS
                   if r not in (reasons.UNVERIFIABLE, reasons.IN_PROGRESS)]
        one_each = {reasons.DELETED_INSTANCE, reasons.UNKNOWN_CONSUMER}
        project = base.PROJECT
        self.assertEqual({
            ('Orphaned allocations', 'A'): series({}, value=2.0),
            ('Orphaned consumers', 'A'): series({}, value=2.0),
            ('Not judged', 'A'): series({}, value=0.0),
            ('Not judged', 'B'): series({}, value=0.0),
            ('Orphaned allocations by reason', 'A'): ordered(
                ({'reason': r}, 1.0 if r in one_each else 0.0)
                for r in orphans),
            ('Last clean by reason and action', 'A'): ordered(
                ({'action': 'delete_consumer', 'outcome': outcome,
                  'reason': r}, 1.0 if outcome == 'repaired' else 0.0)
                for r in one_each
                for outcome in ('failed', 'repaired', 'skipped')),
            ('Orphaned allocations by host', 'A'): [
                ({'host': 'host1'}, 1.0), ({'host': 'host2'}, 1.0)],
            ('Orphaned resources by project', 'A'): ordered(
                ({'project_id': project, 'resource_class': rc}, value)
                for rc, value in (('VCPU', 2.0), ('MEMORY_MB', 1024.0),
                                  ('DISK_GB', 2.0))),
            ('What a clean gives back', 'A'): ordered(
                ({'host': host, 'resource_class': rc}, value)
                for host in ('host1', 'host2')
                for rc, value in (('VCPU', 1.0), ('MEMORY_MB', 512.0),
                                  ('DISK_GB', 1.0))),
            # host1: 8 VCPUs, 2 held (the server's, the stranger's);
            # host2: 1 held by the deleted server.
            ('Servers that fit, now and after a clean', 'A'): [
                ({'flavor': 'm1.small', 'state': 'after_clean'}, 15.0),
                ({'flavor': 'm1.small', 'state': 'now'}, 13.0)],
            ('More servers after a clean', 'A'): series(
                {'flavor': 'm1.small'}, value=2.0),
            ('Hosts a clean makes room on', 'A'): series(
                {'flavor': 'm1.small'}, value=2.0),
            ('Since the last scan', 'A'): series({}),
            ('Since the last clean that succeeded', 'A'): series({}),
            ('Since the last restore', 'A'): series({}),
            ('Not read', 'A'): series({}, value=0.0),
            ('Not read', 'B'): series({}, value=0.0),
            ('Run durations', 'A'): series({}),
            ('Run durations', 'B'): series({}),
            ('Run durations', 'C'): series({}),
            ('Last restore by action and outcome', 'A'): [
                ({'action': 'restore_consumer', 'outcome': 'failed'}, 0.0),
                ({'action': 'restore_consumer', 'outcome': 'repaired'},
                 2.0),
                ({'action': 'restore_consumer', 'outcome': 'skipped'},
                 0.0)],
            ('Retries', 'A'): series(
                {'command': 'list', 'service': 'placement'}, value=1.0),
        }, answers)


def expected_any(panel):
    """Panels of times and durations: their values are the clock's."""
    return panel['title'].startswith(('Since ', 'Run durations'))
