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
"""The shipped Grafana dashboard: tools/dashboard.py's, in the SDK's model
of Grafana's schema, on the shipped metrics only.

Its queries are run against a real Prometheus by the functional suite's
test_dashboard.
"""

import json
import os
import re
import sys

from oslotest import base
from prometheus_client import parser

from nova_orphans.engine import hosts
from nova_orphans.engine import model
from nova_orphans import metrics
from nova_orphans import outcomes
from nova_orphans.tests import programs

DASHBOARD = os.path.join(programs.REPO, 'etc', 'grafana',
                         'nova-orphans.json')
METRIC = re.compile(r'\bnova_orphans_\w+')


def sdk(test):
    """grafana-foundation-sdk's modules, which need Python 3.11
    (test-requirements.txt installs them there, and only there).
    """
    try:
        from grafana_foundation_sdk.cog import encoder
        from grafana_foundation_sdk.cog import plugins
        from grafana_foundation_sdk.models import dashboard
        from grafana_foundation_sdk.models import prometheus
    except ImportError:
        if sys.version_info >= (3, 11):
            raise
        test.skipTest('grafana-foundation-sdk needs Python 3.11')
    return encoder, plugins, dashboard, prometheus


def shipped_metrics():
    """The names of every sample the metrics module writes: a scan's
    (its capacity families too), a clean's and a restore's.
    """
    finding = model.Finding(
        'c', 'instance', 'c', 'rp', 'host1', 'rp', 'host1', 'cell1',
        'deleted_instance', 'delete_consumer', {'VCPU': 1}, 'p', 'u', '')
    out = metrics._Families()
    metrics.add_capacity(
        out, [hosts.HostRow('host1', 'rp', 'host1', {'VCPU': 1}, {}, {}, [],
                            {'host1': {'VCPU': 1}})],
        [hosts.ShapeTotal('m1.small', 0, 1, 1)], 20)
    texts = [metrics.scan([finding], 1, retries={('placement', '503'): 1}),
             out.text()]
    texts += [metrics.repair(command, [finding], [outcomes.done()], 1,
                             retries={('placement', '503'): 1})
              for command in metrics.REPAIR_COMMANDS]
    return {sample.name for text in texts
            for family in parser.text_string_to_metric_families(text)
            for sample in family.samples}


class DashboardTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.encoder, self.plugins, self.model, self.prometheus = sdk(self)
        with open(DASHBOARD, encoding='utf-8') as f:
            self.text = f.read()
        self.data = json.loads(self.text)

    def targets(self):
        return [(panel['title'], target)
                for panel in self.data['panels'] if panel['type'] != 'row'
                for target in panel['targets']]

    def test_committed_file_is_the_scripts(self):
        tool = programs.tool('tools', 'dashboard.py')
        self.assertEqual(tool.text(), self.text)

    def test_loads_into_the_sdks_model(self):
        """Every panel decodes as its plugin's panel, every query as
        Prometheus's, and nothing of the file is lost or added.
        """
        self.plugins.register_default_plugins()
        board = self.model.Dashboard.from_json(self.data)
        self.assertEqual(self.data, json.loads(
            self.encoder.JSONEncoder(sort_keys=True).encode(board)))
        kinds = {}
        for panel in board.panels:
            if isinstance(panel, self.model.RowPanel):
                continue
            self.assertIsInstance(panel, self.model.Panel)
            kinds.setdefault(panel.type_val, set()).add(
                type(panel.options).__module__)
            for target in panel.targets:
                self.assertIsInstance(target, self.prometheus.Dataquery)
        self.assertEqual(
            {'stat': {'grafana_foundation_sdk.models.stat'},
             'table': {'grafana_foundation_sdk.models.table'},
             'timeseries': {'grafana_foundation_sdk.models.timeseries'}},
            kinds)

    def test_queries_use_the_shipped_metrics_only(self):
        used = {name for _title, target in self.targets()
                for name in METRIC.findall(target['expr'])}
        self.assertTrue(used)
        self.assertEqual(set(), used - shipped_metrics())

    def test_every_query_reads_the_chosen_data_source(self):
        source = {'type': 'prometheus', 'uid': '${datasource}'}
        self.assertEqual([('datasource', 'datasource')],
                         [(v['name'], v['type'])
                          for v in self.data['templating']['list']])
        for title, target in self.targets():
            self.assertEqual(source, target['datasource'], title)
            # No other variable: the functional test runs them as they
            # are.
            self.assertNotIn('$', target['expr'], title)
        ids = [panel['id'] for panel in self.data['panels']]
        self.assertEqual(list(range(1, len(ids) + 1)), ids)
