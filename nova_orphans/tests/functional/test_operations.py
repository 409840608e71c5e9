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
"""Operating features: metrics for cron, progress, site rules, sample."""

import configparser
import json
import os
import subprocess
import sys
import uuid as uuidlib

from nova_orphans.tests.functional import base


class OperationsTestCase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.host1 = self.add_node('host1')
        self.gone = self.boot('host1', self.host1)
        self.nova.force_delete_instance('cell1', self.gone)
        self.live = self.boot('host1', self.host1)
        self.stranger = str(uuidlib.uuid4())
        self.allocate(self.stranger, self.host1,
                      resources={'VCPU': 2, 'MEMORY_MB': 256})

    def test_prometheus_textfile_metrics(self):
        rc, out, err = self.manage('allocations', 'list', '--format',
                                   'prometheus')
        self.assertEqual(3, rc, err)
        samples = {line.rsplit(' ', 1)[0]: line.rsplit(' ', 1)[1]
                   for line in out.splitlines() if not line.startswith('#')}
        provider = ('resource_provider="%s",resource_provider_name="host1"'
                    % self.host1)
        self.assertEqual('1.0', samples[
            'nova_orphans_allocations{reason="deleted_instance"}'])
        self.assertEqual('1.0', samples[
            'nova_orphans_allocations{reason="unknown_consumer"}'])
        self.assertEqual('0.0', samples[
            'nova_orphans_allocations{reason="evacuated_source"}'])
        self.assertEqual('2.0', samples[
            'nova_orphans_resources{host="host1",reason="unknown_consumer",'
            'resource_class="VCPU",%s}' % provider])
        self.assertEqual('512.0', samples[
            'nova_orphans_resources{host="host1",reason="deleted_instance",'
            'resource_class="MEMORY_MB",%s}' % provider])
        self.assertEqual('1.0', samples[
            'nova_orphans_provider_allocations{host="host1",'
            'reason="deleted_instance",%s}' % provider])
        self.assertEqual('0.0', samples['nova_orphans_unreadable_cells'])
        self.assertIn('nova_orphans_scan_duration_seconds', samples)
        self.assertIn('nova_orphans_last_scan_timestamp_seconds', samples)
        # The live instance is not an orphan: nothing counts it.
        self.assertNotIn('active_instance', out)

    def test_progress_goes_to_stderr_only(self):
        rc, out, err = self.manage('allocations', 'list', '--format', 'json',
                                   '--progress')
        self.assertEqual(3, rc)
        self.assertEqual(2, len(json.loads(out)))
        self.assertIn('providers read: 1/1', err)
        self.assertIn('consumers checked: 3/3', err)
        rc, out, err = self.manage('allocations', 'clean', '--progress',
                                   '--format', 'json')
        self.assertEqual(4, rc, err)
        self.assertIn('consumers repaired: 2/2', err)

    def _with_site_rule(self):
        conf = os.path.join(self.tmp, 'site.conf')
        parser = configparser.ConfigParser()
        parser.read(self.conf_file)
        parser['nova_orphans']['site_rules'] = 'ignore_consumers'
        parser['nova_orphans']['ignored_consumers'] = self.stranger
        with open(conf, 'w') as f:
            parser.write(f)
        return conf

    def test_site_rule_keeps_a_consumer_out_of_the_orphans(self):
        conf = self._with_site_rule()
        rc, out, err = self.manage('allocations', 'list', '--format', 'json',
                                   '--all', conf_file=conf)
        self.assertEqual(3, rc, err)
        self.assertEqual(
            sorted([(self.gone, 'deleted_instance', 'delete_consumer'),
                    (self.live, 'active_instance', 'none'),
                    (self.stranger, 'ignored', 'none')]),
            sorted((r['consumer'], r['reason'], r['action'])
                   for r in json.loads(out)))
        rc, out, err = self.manage('allocations', 'clean', conf_file=conf)
        self.assertEqual(4, rc, err)
        self.assertEqual({self.live, self.stranger},
                         set(self.placement.dump_state()))

    def test_unknown_site_rule_is_a_config_error(self):
        conf = self._with_site_rule()
        with open(conf, 'a') as f:
            f.write('\n')
        parser = configparser.ConfigParser()
        parser.read(conf)
        parser['nova_orphans']['site_rules'] = 'no_such_rule'
        with open(conf, 'w') as f:
            parser.write(f)
        rc, out, err = self.manage('allocations', 'list', conf_file=conf)
        self.assertEqual((7, ''), (rc, out))
        self.assertIn('no rule named no_such_rule', err)


class ConfigSampleTestCase(base.TestCase):

    def test_oslo_config_generator_writes_the_sample(self):
        root = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))))
        out = os.path.join(self.tmp, 'sample.conf')
        subprocess.run(
            [sys.executable, '-m', 'oslo_config.generator', '--config-file',
             os.path.join(root, 'etc', 'nova-orphans',
                          'nova-orphans-config-generator.conf'),
             '--output-file', out], check=True, cwd=root)
        with open(out) as f:
            sections = {}
            for block in f.read().split('\n['):
                name, _sep, body = block.partition(']\n')
                sections[name] = body
        self.assertIn('#cell_timeout = 60\n', sections['nova_orphans'])
        self.assertIn('#site_rules =\n', sections['nova_orphans'])
        self.assertIn('#connection = <None>\n', sections['api_database'])
        self.assertIn('#connection = <None>\n', sections['zun_database'])
        self.assertIn('#auth_type = <None>\n', sections['placement'])
