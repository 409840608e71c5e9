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
import os
import stat

import fixtures
from oslotest import base
from prometheus_client import parser

from nova_orphans.engine import hosts
from nova_orphans.engine import model
from nova_orphans import exception
from nova_orphans import metrics
from nova_orphans.repair import actions

VM = '11111111-1111-1111-1111-111111111111'
VM2 = '22222222-2222-2222-2222-222222222222'
RP = 'aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa'
NOW = 1800000000.0
EARLIER = 1700000000.0


def finding(consumer=VM, reason='deleted_instance', action='delete_consumer',
            host='compute-1', resources=None, project='p'):
    return model.Finding(
        consumer=consumer, consumer_type='instance', instance=consumer,
        resource_provider=RP, resource_provider_name='compute-"1"',
        root_provider=RP, host=host, cell='cell1', reason=reason,
        action=action, resources=resources or {'VCPU': 2},
        project_id=project, user_id='u', details='')


def samples(text):
    """{sample line without its value: value} of exposition text."""
    return {line.rsplit(' ', 1)[0]: line.rsplit(' ', 1)[1]
            for line in text.splitlines() if not line.startswith('#')}


class ExpositionTestCase(base.BaseTestCase):
    """Tests of the exposition text the metrics module writes."""

    def check_exposition(self, text):
        """``text`` parses as exposition text, with samples. promtool's
        lint of the same texts: the functional suite's
        test_metrics_lint, which runs the tests that call this again,
        with promtool.
        """
        samples = [s for family in parser.text_string_to_metric_families(
            text) for s in family.samples]
        self.assertTrue(samples)


class ScanTestCase(ExpositionTestCase):

    def test_exact_text(self):
        text = metrics.scan(
            [finding(),
             finding(VM2, 'unverifiable', 'none', host=None,
                     resources={'VCPU': 1, 'MEMORY_MB': 512}),
             finding(VM2, 'active_instance', 'none')],
            1.23456, unreadable_cells=1, unread_sources=2, now=NOW,
            retries={('placement', '503'): 3, ('compute', 'connection'): 1},
            full_read=False)
        per_reason = ''.join(
            'nova_orphans_%s{reason="%s"} %s\n' % (
                name, r, '1.0' if r in ('deleted_instance', 'unverifiable')
                else '0.0')
            for name in ('allocations', 'consumers')
            for r in metrics.COUNTED_REASONS)
        lines = per_reason.splitlines(True)
        half = len(metrics.COUNTED_REASONS)
        provider = 'resource_provider="%s",resource_provider_name=' \
                   '"compute-\\"1\\""' % RP
        self.assertEqual(
            '# HELP nova_orphans_allocations Allocations (one consumer on '
            'one provider) by reason.\n'
            '# TYPE nova_orphans_allocations gauge\n' +
            ''.join(lines[:half]) +
            '# HELP nova_orphans_consumers Consumers with such allocations '
            'by reason.\n'
            '# TYPE nova_orphans_consumers gauge\n' +
            ''.join(lines[half:]) +
            '# HELP nova_orphans_provider_allocations Allocations by reason '
            'and resource provider.\n'
            '# TYPE nova_orphans_provider_allocations gauge\n'
            'nova_orphans_provider_allocations{host="",reason="unverifiable"'
            ',%(rp)s} 1.0\n'
            'nova_orphans_provider_allocations{host="compute-1",'
            'reason="deleted_instance",%(rp)s} 1.0\n'
            '# HELP nova_orphans_resources Resources held by such '
            'allocations, by reason, resource class and provider.\n'
            '# TYPE nova_orphans_resources gauge\n'
            'nova_orphans_resources{host="",reason="unverifiable",'
            'resource_class="MEMORY_MB",%(rp)s} 512.0\n'
            'nova_orphans_resources{host="",reason="unverifiable",'
            'resource_class="VCPU",%(rp)s} 1.0\n'
            'nova_orphans_resources{host="compute-1",'
            'reason="deleted_instance",resource_class="VCPU",%(rp)s} 2.0\n'
            '# HELP nova_orphans_project_resources Resources held by '
            'orphaned allocations, by project (whose quota usage placement '
            'counts them in) and resource class; the projects beyond '
            'metrics_max_projects, by orphaned consumers, summed as '
            'project_id="other".\n'
            '# TYPE nova_orphans_project_resources gauge\n'
            'nova_orphans_project_resources{project_id="p",'
            'resource_class="VCPU"} 2.0\n'
            '# HELP nova_orphans_unreadable_cells Cells whose database could '
            'not be read in this scan.\n'
            '# TYPE nova_orphans_unreadable_cells gauge\n'
            'nova_orphans_unreadable_cells 1.0\n'
            '# HELP nova_orphans_unread_sources Other sources this scan '
            'needed and could not read (neutron, for servers whose info '
            'cache lists no port; Zun\'s database, for the zun site '
            'rule).\n'
            '# TYPE nova_orphans_unread_sources gauge\n'
            'nova_orphans_unread_sources 2.0\n'
            '# HELP nova_orphans_scan_full_read Whether the scan read every '
            'provider\'s allocations from placement (1), or took those of '
            'providers whose generation had not moved from earlier scans '
            '(0), reading again every provider a finding rests on.\n'
            '# TYPE nova_orphans_scan_full_read gauge\n'
            'nova_orphans_scan_full_read 0.0\n'
            '# HELP nova_orphans_scan_duration_seconds How long the scan '
            'took.\n'
            '# TYPE nova_orphans_scan_duration_seconds gauge\n'
            'nova_orphans_scan_duration_seconds 1.235\n'
            '# HELP nova_orphans_retries_total Requests of the last run of '
            'a command sent again, or writes read back, after a transient '
            'fault (connection error, timeout, 429, 502, 503, 504), by '
            'service and reason.\n'
            '# TYPE nova_orphans_retries_total counter\n'
            'nova_orphans_retries_total{command="list",reason="connection",'
            'service="compute"} 1.0\n'
            'nova_orphans_retries_total{command="list",reason="503",'
            'service="placement"} 3.0\n'
            '# HELP nova_orphans_last_scan_timestamp_seconds When the scan '
            'finished (Unix time).\n'
            '# TYPE nova_orphans_last_scan_timestamp_seconds gauge\n'
            'nova_orphans_last_scan_timestamp_seconds 1.8e+09\n'
            % {'rp': provider}, text)
        self.check_exposition(text)

    def test_nothing_found_is_zeros(self):
        text = metrics.scan([], 0.5, now=NOW)
        self.assertEqual(
            {'0.0'}, {v for k, v in samples(text).items()
                      if k.startswith(('nova_orphans_allocations',
                                       'nova_orphans_consumers'))})
        self.assertEqual(2 * len(metrics.COUNTED_REASONS) + 5,
                         len(samples(text)))
        self.assertEqual('1.0', samples(text)['nova_orphans_scan_full_read'])
        self.check_exposition(text)

    def test_written_to_metrics_file(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova_orphans.prom')
        text = metrics.scan([finding()], 1, metrics_file=path, now=NOW)
        with open(path) as f:
            self.assertEqual(text, f.read())


class ProjectResourcesTestCase(ExpositionTestCase):
    """nova_orphans_project_resources: orphans only, bounded projects."""

    def uuid(self, n):
        return '%08d-0000-0000-0000-000000000000' % n

    def test_projects_beyond_the_bound_are_summed_as_other(self):
        # Consumers per project: big 3, mid 2, small 1, tiny 1, and one
        # of no known project; what is fine or healed counts nothing.
        held = [('big', 1, {'VCPU': 1, 'MEMORY_MB': 512}),
                ('big', 2, {'VCPU': 1}), ('big', 3, {'VCPU': 2}),
                ('mid', 4, {'VCPU': 4}), ('mid', 5, {'MEMORY_MB': 1024}),
                ('small', 6, {'VCPU': 8}), ('tiny', 7, {'DISK_GB': 10}),
                (None, 8, {'VCPU': 1})]
        findings = [finding(self.uuid(n), resources=r, project=p)
                    for p, n, r in held]
        findings += [
            finding(self.uuid(9), 'active_instance', 'none', project='big'),
            finding(self.uuid(10), 'unverifiable', 'none', project='mid'),
            finding(self.uuid(11), 'missing_allocations', 'heal',
                    resources={'VCPU': 16}, project='small')]
        text = metrics.scan(findings, 1, now=NOW, max_projects=2)
        self.assertEqual({
            'nova_orphans_project_resources{project_id="%s",'
            'resource_class="%s"}' % key: value for key, value in (
                (('big', 'MEMORY_MB'), '512.0'), (('big', 'VCPU'), '4.0'),
                (('mid', 'MEMORY_MB'), '1024.0'), (('mid', 'VCPU'), '4.0'),
                (('other', 'DISK_GB'), '10.0'), (('other', 'VCPU'), '9.0'))},
            {k: v for k, v in samples(text).items()
             if k.startswith('nova_orphans_project_resources')})
        self.check_exposition(text)
        # Within the bound, every project is its own, the unknown one
        # as "unknown".
        self.assertEqual([
            (('big', 'MEMORY_MB'), 512), (('big', 'VCPU'), 4),
            (('mid', 'MEMORY_MB'), 1024), (('mid', 'VCPU'), 4),
            (('small', 'VCPU'), 8), (('tiny', 'DISK_GB'), 10),
            (('unknown', 'VCPU'), 1)],
            metrics.project_resources(findings, 20))


class CapacityTestCase(ExpositionTestCase):
    """What a clean gives back per host, bounded; servers per flavor."""

    def row(self, host, given_back):
        held = {}
        for amounts in given_back.values():
            for rc, n in amounts.items():
                held[rc] = held.get(rc, 0) + n
        return hosts.HostRow(host, 'rp-' + host, host, held, {}, {}, [],
                             given_back)

    def text(self, rows, flavors, max_hosts):
        out = metrics._Families()
        metrics.add_capacity(out, rows, flavors, max_hosts)
        return out.text()

    def test_exact_text(self):
        rows = [
            self.row('compute-1', {
                'compute-1': {'VCPU': 30, 'MEMORY_MB': 741376},
                'compute-1:br-ex': {'NET_BW_EGR_KILOBIT_PER_SEC': 1000}}),
            # Two ironic nodes of one host, then one beyond the bound.
            self.row('ironic-1', {'node-a': {'CUSTOM_GOLD': 1}}),
            self.row('compute-2', {}),
            self.row('ironic-1', {'node-b': {'CUSTOM_GOLD': 1}}),
            self.row('compute-3', {'compute-3': {'VCPU': 2}}),
            self.row('compute-4', {'compute-4': {'VCPU': 1,
                                                 'MEMORY_MB': 512}})]
        flavors = [hosts.ShapeTotal('m1.xlarge', 0, 1, 1),
                   hosts.ShapeTotal('m1.tiny', 102, 134, 2)]
        text = self.text(rows, flavors, 2)
        self.assertEqual(
            '# HELP nova_orphans_host_resources Resources a clean would '
            'give back, by compute host, resource provider and resource '
            'class; the hosts beyond metrics_max_hosts, by the largest '
            'share of a class\'s capacity held, summed as host="other" and '
            'resource_provider_name="other".\n'
            '# TYPE nova_orphans_host_resources gauge\n'
            'nova_orphans_host_resources{host="compute-1",resource_class='
            '"MEMORY_MB",resource_provider_name="compute-1"} 741376.0\n'
            'nova_orphans_host_resources{host="compute-1",resource_class='
            '"VCPU",resource_provider_name="compute-1"} 30.0\n'
            'nova_orphans_host_resources{host="compute-1",resource_class='
            '"NET_BW_EGR_KILOBIT_PER_SEC",resource_provider_name='
            '"compute-1:br-ex"} 1000.0\n'
            'nova_orphans_host_resources{host="ironic-1",resource_class='
            '"CUSTOM_GOLD",resource_provider_name="node-a"} 1.0\n'
            'nova_orphans_host_resources{host="ironic-1",resource_class='
            '"CUSTOM_GOLD",resource_provider_name="node-b"} 1.0\n'
            'nova_orphans_host_resources{host="other",resource_class='
            '"MEMORY_MB",resource_provider_name="other"} 512.0\n'
            'nova_orphans_host_resources{host="other",resource_class='
            '"VCPU",resource_provider_name="other"} 3.0\n'
            '# HELP nova_orphans_flavor_servers Servers of the flavor '
            'placement would accept on the compute nodes, summed over '
            'them, now and after a clean (state); a sharing provider\'s '
            'room counts on each node it serves.\n'
            '# TYPE nova_orphans_flavor_servers gauge\n'
            'nova_orphans_flavor_servers{flavor="m1.xlarge",'
            'state="after_clean"} 1.0\n'
            'nova_orphans_flavor_servers{flavor="m1.xlarge",state="now"} '
            '0.0\n'
            'nova_orphans_flavor_servers{flavor="m1.tiny",'
            'state="after_clean"} 134.0\n'
            'nova_orphans_flavor_servers{flavor="m1.tiny",state="now"} '
            '102.0\n'
            '# HELP nova_orphans_flavor_hosts Compute nodes on which a '
            'clean would make room for at least one more server of the '
            'flavor.\n'
            '# TYPE nova_orphans_flavor_hosts gauge\n'
            'nova_orphans_flavor_hosts{flavor="m1.xlarge"} 1.0\n'
            'nova_orphans_flavor_hosts{flavor="m1.tiny"} 2.0\n', text)
        self.check_exposition(text)

    def test_nothing_held_and_no_flavor(self):
        text = self.text([self.row('compute-1', {})], [], 20)
        self.assertEqual(
            ['# TYPE nova_orphans_host_resources gauge',
             '# TYPE nova_orphans_flavor_servers gauge',
             '# TYPE nova_orphans_flavor_hosts gauge'],
            [line for line in text.splitlines()
             if not line.startswith('# HELP')])

    def test_within_the_bound_every_host_is_its_own(self):
        rows = [self.row('h%d' % n, {'h%d' % n: {'VCPU': n}})
                for n in (3, 1, 2)]
        self.assertEqual(
            [(('h1', 'h1', 'VCPU'), 1), (('h2', 'h2', 'VCPU'), 2),
             (('h3', 'h3', 'VCPU'), 3)], metrics.host_resources(rows, 3))
        self.assertEqual(
            [(('h3', 'h3', 'VCPU'), 3), (('other', 'other', 'VCPU'), 3)],
            metrics.host_resources(rows, 1))


class RepairTestCase(ExpositionTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, 'clean.prom')
        self.rows = [finding(), finding(VM2),
                     finding(VM2, 'unknown_consumer', 'delete_consumer')]

    def clean(self, outcomes, **kw):
        return metrics.repair('clean', self.rows, outcomes, 2.5,
                              metrics_file=self.path, **kw)

    def test_exact_text(self):
        text = self.clean([actions.DONE, actions.failed('boom'),
                           actions.skipped('dry run')], now=NOW)
        self.assertEqual(
            '# HELP nova_orphans_clean_rows Rows of the last clean (one '
            'consumer\'s allocation on one provider, or one provider) by '
            'reason, action and outcome (repaired, failed, skipped).\n'
            '# TYPE nova_orphans_clean_rows gauge\n'
            'nova_orphans_clean_rows{action="delete_consumer",'
            'outcome="repaired",reason="deleted_instance"} 1.0\n'
            'nova_orphans_clean_rows{action="delete_consumer",'
            'outcome="failed",reason="deleted_instance"} 1.0\n'
            'nova_orphans_clean_rows{action="delete_consumer",'
            'outcome="skipped",reason="deleted_instance"} 0.0\n'
            'nova_orphans_clean_rows{action="delete_consumer",'
            'outcome="repaired",reason="unknown_consumer"} 0.0\n'
            'nova_orphans_clean_rows{action="delete_consumer",'
            'outcome="failed",reason="unknown_consumer"} 0.0\n'
            'nova_orphans_clean_rows{action="delete_consumer",'
            'outcome="skipped",reason="unknown_consumer"} 1.0\n'
            '# HELP nova_orphans_clean_unreadable_cells Cells whose database '
            'the last clean could not read.\n'
            '# TYPE nova_orphans_clean_unreadable_cells gauge\n'
            'nova_orphans_clean_unreadable_cells 0.0\n'
            '# HELP nova_orphans_clean_duration_seconds How long the last '
            'clean took.\n'
            '# TYPE nova_orphans_clean_duration_seconds gauge\n'
            'nova_orphans_clean_duration_seconds 2.5\n'
            '# HELP nova_orphans_retries_total Requests of the last run of '
            'a command sent again, or writes read back, after a transient '
            'fault (connection error, timeout, 429, 502, 503, 504), by '
            'service and reason.\n'
            '# TYPE nova_orphans_retries_total counter\n'
            '# HELP nova_orphans_clean_last_run_timestamp_seconds When the '
            'last clean finished (Unix time).\n'
            '# TYPE nova_orphans_clean_last_run_timestamp_seconds gauge\n'
            'nova_orphans_clean_last_run_timestamp_seconds 1.8e+09\n'
            '# HELP nova_orphans_clean_last_success_timestamp_seconds When '
            'the last clean that read everything and in which nothing '
            'failed finished (Unix time; 0: none known).\n'
            '# TYPE nova_orphans_clean_last_success_timestamp_seconds '
            'gauge\n'
            'nova_orphans_clean_last_success_timestamp_seconds 0.0\n', text)
        with open(self.path) as f:
            self.assertEqual(text, f.read())
        self.check_exposition(text)

    def last_success(self, text):
        return samples(text)[
            'nova_orphans_clean_last_success_timestamp_seconds']

    def test_success_is_the_run_time(self):
        text = self.clean([actions.DONE] * 3, now=EARLIER)
        self.assertEqual('1.7e+09', self.last_success(text))
        self.assertEqual(EARLIER, metrics.last_success(self.path, 'clean'))

    def test_failed_run_keeps_the_last_success(self):
        self.clean([actions.DONE] * 3, now=EARLIER)
        for outcomes, cells, incomplete in (
                ([actions.DONE, actions.failed('x'), actions.DONE], 0,
                 False),
                ([actions.DONE, actions.interrupted(),
                  actions.interrupted()], 0, False),
                ([actions.DONE] * 3, 1, False),
                # Something else not read (neutron, for empty info caches;
                # Zun's database, which the zun site rule needed).
                ([actions.DONE] * 3, 0, True)):
            text = self.clean(outcomes, unreadable_cells=cells, now=NOW,
                              incomplete=incomplete)
            self.assertEqual('1.7e+09', self.last_success(text))
            self.assertEqual('1.8e+09', samples(text)[
                'nova_orphans_clean_last_run_timestamp_seconds'])
        # A success again moves it on.
        self.assertEqual('1.8e+09', self.last_success(
            self.clean([actions.gone()] * 3, now=NOW)))

    def test_failed_run_without_a_file_knows_no_success(self):
        for path in (None, self.path):
            text = metrics.repair('clean', self.rows,
                                  [actions.failed('x')] * 3, 1,
                                  metrics_file=path, now=NOW)
            self.assertEqual('0.0', self.last_success(text))

    def test_damaged_file_knows_no_success(self):
        for content in ('not metrics {\n', '\xff', ''):
            with open(self.path, 'w') as f:
                f.write(content)
            self.assertIsNone(metrics.last_success(self.path, 'clean'))
        self.assertIsNone(metrics.last_success(self.dir, 'clean'))

    def test_restore(self):
        path = os.path.join(self.dir, 'restore.prom')
        metrics.repair('restore', self.rows[:1], [actions.DONE], 1,
                       metrics_file=path, now=EARLIER)
        text = metrics.repair('restore', self.rows[:1],
                              [actions.failed('refused')], 1,
                              metrics_file=path, now=NOW)
        self.assertEqual({
            'nova_orphans_restore_rows{action="delete_consumer",'
            'outcome="repaired",reason="deleted_instance"}': '0.0',
            'nova_orphans_restore_rows{action="delete_consumer",'
            'outcome="failed",reason="deleted_instance"}': '1.0',
            'nova_orphans_restore_rows{action="delete_consumer",'
            'outcome="skipped",reason="deleted_instance"}': '0.0',
            'nova_orphans_restore_duration_seconds': '1.0',
            'nova_orphans_restore_last_run_timestamp_seconds': '1.8e+09',
            'nova_orphans_restore_last_success_timestamp_seconds':
                '1.7e+09'}, samples(text))
        self.check_exposition(text)

    def test_nothing_to_do(self):
        self.rows = []
        self.assertEqual({
            'nova_orphans_clean_unreadable_cells': '0.0',
            'nova_orphans_clean_duration_seconds': '2.5',
            'nova_orphans_clean_last_run_timestamp_seconds': '1.8e+09',
            'nova_orphans_clean_last_success_timestamp_seconds': '1.8e+09'},
            samples(self.clean([], now=NOW)))

    def test_unknown_command(self):
        self.assertRaises(ValueError, metrics.repair, 'list', [], [], 1)

    def test_dry_run_is_no_clean(self):
        """A dry run has its own series, and never sets the clean's: its
        last run and last success stay as they were (0: none known).
        """
        would = [actions.dry_run(), actions.dry_run(),
                 actions.skipped('--max-count reached')]
        text = self.clean(would, now=EARLIER, dry_run=True)
        self.assertEqual({
            'nova_orphans_clean_dry_run_rows{action="delete_consumer",'
            'outcome="dry_run",reason="deleted_instance"}': '2.0',
            'nova_orphans_clean_dry_run_rows{action="delete_consumer",'
            'outcome="failed",reason="deleted_instance"}': '0.0',
            'nova_orphans_clean_dry_run_rows{action="delete_consumer",'
            'outcome="skipped",reason="deleted_instance"}': '0.0',
            'nova_orphans_clean_dry_run_rows{action="delete_consumer",'
            'outcome="dry_run",reason="unknown_consumer"}': '0.0',
            'nova_orphans_clean_dry_run_rows{action="delete_consumer",'
            'outcome="failed",reason="unknown_consumer"}': '0.0',
            'nova_orphans_clean_dry_run_rows{action="delete_consumer",'
            'outcome="skipped",reason="unknown_consumer"}': '1.0',
            'nova_orphans_clean_dry_run_unreadable_cells': '0.0',
            'nova_orphans_clean_dry_run_duration_seconds': '2.5',
            'nova_orphans_clean_dry_run_last_run_timestamp_seconds':
                '1.7e+09',
            'nova_orphans_clean_last_run_timestamp_seconds': '0.0',
            'nova_orphans_clean_last_success_timestamp_seconds': '0.0'},
            samples(text))
        self.assertNotIn('nova_orphans_clean_rows', text)
        self.check_exposition(text)
        # A clean, then a dry run in the same file: the clean's times
        # are kept as the clean wrote them.
        self.clean([actions.DONE] * 3, now=EARLIER)
        text = self.clean(would, now=NOW, dry_run=True)
        self.assertEqual(('1.7e+09', '1.7e+09', '1.8e+09'), tuple(
            samples(text)['nova_orphans_clean_%s_timestamp_seconds' % name]
            for name in ('last_run', 'last_success', 'dry_run_last_run')))
        self.assertEqual(EARLIER, metrics.last_success(self.path, 'clean'))
        # A restore's dry run alike.
        text = metrics.repair('restore', self.rows[:1], [actions.dry_run()],
                              1, now=NOW, dry_run=True)
        self.assertEqual({
            'nova_orphans_restore_dry_run_rows{action="delete_consumer",'
            'outcome="dry_run",reason="deleted_instance"}': '1.0',
            'nova_orphans_restore_dry_run_rows{action="delete_consumer",'
            'outcome="failed",reason="deleted_instance"}': '0.0',
            'nova_orphans_restore_dry_run_rows{action="delete_consumer",'
            'outcome="skipped",reason="deleted_instance"}': '0.0',
            'nova_orphans_restore_dry_run_duration_seconds': '1.0',
            'nova_orphans_restore_dry_run_last_run_timestamp_seconds':
                '1.8e+09',
            'nova_orphans_restore_last_run_timestamp_seconds': '0.0',
            'nova_orphans_restore_last_success_timestamp_seconds': '0.0'},
            samples(text))

    def test_dry_run_keeps_the_clean_s_families(self):
        """A clean, then a dry run into its file: the clean's rows,
        unreadable cells, duration, retries and times as the clean wrote
        them, after the dry run's own; a second dry run keeps them too.
        """
        self.clean([actions.DONE, actions.failed('x'), actions.DONE],
                   now=EARLIER, unreadable_cells=1,
                   retries={('placement', 'timeout'): 2})
        for duration in (1.5, 0.5):
            text = metrics.repair(
                'clean', self.rows[:1], [actions.dry_run()], duration,
                metrics_file=self.path, now=NOW, dry_run=True,
                retries={('placement', 'reset'): 1})
            self.assertEqual(
                '# HELP nova_orphans_clean_dry_run_rows Rows of the last '
                'clean --dry-run by reason, action and outcome (dry_run: it '
                'would have been changed; failed, skipped).\n'
                '# TYPE nova_orphans_clean_dry_run_rows gauge\n'
                'nova_orphans_clean_dry_run_rows{action="delete_consumer",'
                'outcome="dry_run",reason="deleted_instance"} 1.0\n'
                'nova_orphans_clean_dry_run_rows{action="delete_consumer",'
                'outcome="failed",reason="deleted_instance"} 0.0\n'
                'nova_orphans_clean_dry_run_rows{action="delete_consumer",'
                'outcome="skipped",reason="deleted_instance"} 0.0\n'
                '# HELP nova_orphans_clean_dry_run_unreadable_cells Cells '
                'whose database the last clean --dry-run could not read.\n'
                '# TYPE nova_orphans_clean_dry_run_unreadable_cells gauge\n'
                'nova_orphans_clean_dry_run_unreadable_cells 0.0\n'
                '# HELP nova_orphans_clean_dry_run_duration_seconds How long '
                'the last clean --dry-run took.\n'
                '# TYPE nova_orphans_clean_dry_run_duration_seconds gauge\n'
                'nova_orphans_clean_dry_run_duration_seconds %s\n'
                '# HELP nova_orphans_retries_total Requests of the last run '
                'of a command sent again, or writes read back, after a '
                'transient fault (connection error, timeout, 429, 502, 503, '
                '504), by service and reason.\n'
                '# TYPE nova_orphans_retries_total counter\n'
                'nova_orphans_retries_total{command="clean",'
                'reason="timeout",service="placement"} 2.0\n'
                'nova_orphans_retries_total{command="clean_dry_run",'
                'reason="reset",service="placement"} 1.0\n'
                '# HELP nova_orphans_clean_dry_run_last_run_timestamp_seconds '
                'When the last clean --dry-run finished (Unix time).\n'
                '# TYPE nova_orphans_clean_dry_run_last_run_timestamp_seconds '
                'gauge\n'
                'nova_orphans_clean_dry_run_last_run_timestamp_seconds '
                '1.8e+09\n'
                '# HELP nova_orphans_clean_rows Rows of the last clean (one '
                'consumer\'s allocation on one provider, or one provider) by '
                'reason, action and outcome (repaired, failed, skipped).\n'
                '# TYPE nova_orphans_clean_rows gauge\n'
                'nova_orphans_clean_rows{action="delete_consumer",'
                'outcome="repaired",reason="deleted_instance"} 1.0\n'
                'nova_orphans_clean_rows{action="delete_consumer",'
                'outcome="failed",reason="deleted_instance"} 1.0\n'
                'nova_orphans_clean_rows{action="delete_consumer",'
                'outcome="skipped",reason="deleted_instance"} 0.0\n'
                'nova_orphans_clean_rows{action="delete_consumer",'
                'outcome="repaired",reason="unknown_consumer"} 1.0\n'
                'nova_orphans_clean_rows{action="delete_consumer",'
                'outcome="failed",reason="unknown_consumer"} 0.0\n'
                'nova_orphans_clean_rows{action="delete_consumer",'
                'outcome="skipped",reason="unknown_consumer"} 0.0\n'
                '# HELP nova_orphans_clean_unreadable_cells Cells whose '
                'database the last clean could not read.\n'
                '# TYPE nova_orphans_clean_unreadable_cells gauge\n'
                'nova_orphans_clean_unreadable_cells 1.0\n'
                '# HELP nova_orphans_clean_duration_seconds How long the last '
                'clean took.\n'
                '# TYPE nova_orphans_clean_duration_seconds gauge\n'
                'nova_orphans_clean_duration_seconds 2.5\n'
                '# HELP nova_orphans_clean_last_run_timestamp_seconds When '
                'the last clean finished (Unix time).\n'
                '# TYPE nova_orphans_clean_last_run_timestamp_seconds '
                'gauge\n'
                'nova_orphans_clean_last_run_timestamp_seconds 1.7e+09\n'
                '# HELP nova_orphans_clean_last_success_timestamp_seconds '
                'When the last clean that read everything and in which '
                'nothing failed finished (Unix time; 0: none known).\n'
                '# TYPE nova_orphans_clean_last_success_timestamp_seconds '
                'gauge\n'
                'nova_orphans_clean_last_success_timestamp_seconds 0.0\n'
                % duration, text)
            with open(self.path) as f:
                self.assertEqual(text, f.read())
            self.check_exposition(text)


class WriteTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, 'nova_orphans.prom')

    def test_replaces_readable_by_all_and_leaves_nothing_else(self):
        old = os.umask(0o077)
        self.addCleanup(os.umask, old)
        with open(self.path, 'w') as f:
            f.write('old\n')
        fsynced = []
        real_fsync = os.fsync
        self.useFixture(fixtures.MonkeyPatch(
            'os.fsync', lambda fd: fsynced.append(fd) or real_fsync(fd)))
        metrics.write(self.path, 'new\n')
        with open(self.path) as f:
            self.assertEqual('new\n', f.read())
        self.assertEqual(0o644, stat.S_IMODE(os.stat(self.path).st_mode))
        self.assertEqual(['nova_orphans.prom'], os.listdir(self.dir))
        # The file's data, then the directory's entry.
        self.assertEqual(2, len(fsynced))

    def test_failed_write_keeps_the_old_file(self):
        with open(self.path, 'w') as f:
            f.write('old\n')
        self.useFixture(fixtures.MonkeyPatch(
            'os.replace', lambda *a: (_ for _ in ()).throw(
                OSError(28, 'No space left on device'))))
        e = self.assertRaises(exception.MetricsFileError, metrics.write,
                              self.path, 'new\n')
        self.assertEqual('Metrics file %s: No space left on device' %
                         self.path, str(e))
        with open(self.path) as f:
            self.assertEqual('old\n', f.read())
        self.assertEqual(['nova_orphans.prom'], os.listdir(self.dir))

    def test_missing_directory(self):
        path = os.path.join(self.dir, 'no', 'x.prom')
        e = self.assertRaises(exception.MetricsFileError, metrics.write,
                              path, 'x')
        self.assertEqual('Metrics file %s: No such file or directory' % path,
                         str(e))

    def test_check_path(self):
        metrics.check_path(self.path)
        with open(self.path, 'w'):
            pass
        metrics.check_path(self.path)
        for path, reason in (
                (self.dir, 'is a directory'),
                (os.path.join(self.dir, 'no', 'x.prom'),
                 'directory %s/no does not exist' % self.dir)):
            e = self.assertRaises(exception.MetricsFileError,
                                  metrics.check_path, path)
            self.assertEqual('Metrics file %s: %s' % (path, reason), str(e))
            self.assertIsInstance(e, exception.InvalidInput)

    def test_check_path_not_writable(self):
        self.useFixture(fixtures.MockPatch('os.access', return_value=False))
        e = self.assertRaises(exception.MetricsFileError,
                              metrics.check_path, self.path)
        self.assertEqual('Metrics file %s: directory %s is not writable' % (
            self.path, self.dir), str(e))
