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
import io
import json
import os
import re
import signal
import types
from unittest import mock

import fixtures
from oslotest import base

from nova_orphans.app import api_sources
from nova_orphans.engine import model
from nova_orphans import exit_codes
from nova_orphans.osc import plugin
from nova_orphans.osc.v1 import orphan
from nova_orphans.osc.v1 import provider_orphan
from nova_orphans import output
from nova_orphans.repair import journal
from nova_orphans.tests.unit import fakes

LIVE = '11111111-1111-4111-8111-111111111111'
GONE = '44444444-4444-4444-8444-444444444444'
STRANGER = '55555555-5555-4555-8555-555555555555'
RP1 = 'c1c1c1c1-c1c1-41c1-81c1-c1c1c1c1c1c1'
RP2 = 'c2c2c2c2-c2c2-42c2-82c2-c2c2c2c2c2c2'
RESOURCES = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
# Said before any row, as nova-orphans-manage says it.
INCOMPLETE = ('WARNING: cell (down) could not be read (the compute API '
              'reports the services of host9 as UNKNOWN: their cell does '
              'not respond); its consumers are reported as unverifiable, '
              'never as orphans.')


class FailingPlacement(fakes.FakePlacement):
    """Refuses writes to the consumers in ``fail``."""

    fail = ()
    # Called before the request is answered, e.g. to send a signal.
    before = None

    def handle(self, method, path, params, body):
        if self.before is not None:
            self.before(method, path)
        if method == 'PUT' and path.rsplit('/', 1)[-1] in self.fail:
            return fakes.Response(500, {'errors': [{'detail': 'boom'}]})
        return super().handle(method, path, params, body)


def metric_samples(text):
    return dict(line.rsplit(' ', 1) for line in text.splitlines()
                if not line.startswith('#'))


class CommandTestCase(base.BaseTestCase):
    """host1 runs LIVE; GONE (deleted) and STRANGER hold host2."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable(
            'XDG_STATE_HOME', self.tmp))
        self.compute = fakes.FakeCompute(max_limit=1000)
        self.compute.services = [fakes.service_doc('host1'),
                                 fakes.service_doc('host2')]
        self.compute.hypervisors = [fakes.hypervisor(RP1, 'host1'),
                                    fakes.hypervisor(RP2, 'host2')]
        self.compute.servers = [fakes.server(LIVE, 'host1')]
        self.compute.deleted = [fakes.server(GONE, 'host2',
                                             vm_state='deleted',
                                             status='DELETED')]
        self.placement = FailingPlacement()
        self.placement.provider(RP1, 'host1')
        self.placement.provider(RP2, 'host2')
        self.placement.allocate(LIVE, RP1)
        self.placement.allocate(GONE, RP2)
        self.placement.allocate(STRANGER, RP2)
        self.app = fakes.osc_app(self.placement, self.compute)

    def run_cmd(self, cls, *argv):
        """Parse and run like cliff does; returns stdout."""
        cmd = cls(self.app, None)
        parsed = cmd.get_parser('openstack allocation orphan').parse_args(
            list(argv))
        self.app.stdout = io.StringIO()
        self.app.stderr = io.StringIO()
        self.code = cmd.run(parsed)
        return self.app.stdout.getvalue()

    def formats(self, cls):
        """The -f choices the command's usage offers."""
        usage = cls(mock.Mock(), None).get_parser('openstack').format_usage()
        return set(re.search(r'-f \{([^}]*)\}', usage).group(1).split(','))

    def json_rows(self, cls, *argv):
        return json.loads(self.run_cmd(cls, *(argv + ('-f', 'json'))))

    def assertOneLineError(self, expected, cls, *argv, code=127):
        """One line, as every fault's: ``ERROR: `` and ``expected``."""
        self.assertEqual('', self.run_cmd(cls, *argv))
        self.assertEqual(code, self.code)
        self.assertEqual('ERROR: ' + expected + '\n',
                         self.app.stderr.getvalue())


class ListOrphanTestCase(CommandTestCase):

    def test_prometheus_format(self):
        samples = metric_samples(self.run_cmd(orphan.ListOrphan, '-f',
                                              'prometheus'))
        self.assertEqual('1.0', samples[
            'nova_orphans_allocations{reason="deleted_instance"}'])
        self.assertEqual('1.0', samples[
            'nova_orphans_allocations{reason="unknown_consumer"}'])
        self.assertEqual('0.0', samples[
            'nova_orphans_allocations{reason="evacuated_source"}'])
        self.assertEqual('0.0', samples['nova_orphans_unreadable_cells'])

    def test_prometheus_is_offered_to_allocation_orphans_only(self):
        for cls in (orphan.ListOrphan, orphan.CleanOrphan,
                    orphan.RestoreOrphan):
            self.assertIn('prometheus', self.formats(cls))
            # nova-orphans-manage's formats of the same command.
            self.assertEqual(
                set(output.FORMATS + cls.COMMAND.formats), self.formats(cls))
        for cls in (provider_orphan.ListProviderOrphan,
                    provider_orphan.CleanProviderOrphan):
            self.assertNotIn('prometheus', self.formats(cls))

    def test_metrics_file_beside_the_table(self):
        path = os.path.join(self.tmp, 'list.prom')
        out = self.run_cmd(orphan.ListOrphan, '--metrics-file', path,
                           '--reason', 'unknown_consumer', '-f', 'value',
                           '-c', 'consumer')
        self.assertEqual(STRANGER + '\n', out)
        with open(path) as f:
            samples = metric_samples(f.read())
        # Every reason, whatever --reason showed.
        self.assertEqual('1.0', samples[
            'nova_orphans_allocations{reason="deleted_instance"}'])
        self.assertEqual('1.0', samples[
            'nova_orphans_allocations{reason="unknown_consumer"}'])

    def test_metrics_file_refused_before_anything_is_read(self):
        path = os.path.join(self.tmp, 'no', 'list.prom')
        requests = []
        self.placement.before = lambda method, path: requests.append(path)
        for cls, argv in ((orphan.ListOrphan, ()),
                          (orphan.CleanOrphan, ()),
                          (orphan.RestoreOrphan, ('--journal', path))):
            self.assertOneLineError(
                'Metrics file %s: directory %s does not exist' % (
                    path, os.path.dirname(path)),
                cls, '--metrics-file', path, *argv)
        self.assertEqual([], requests)

    def test_json_columns_are_the_finding_keys(self):
        rows = self.json_rows(orphan.ListOrphan)
        self.assertEqual([list(model.FINDING_KEYS)] * 2,
                         [list(row) for row in rows])
        self.assertEqual(
            [(GONE, 'deleted_instance', 'delete_consumer', RESOURCES,
              'host2', None),
             (STRANGER, 'unknown_consumer', 'delete_consumer', RESOURCES,
              'host2', None)],
            [(r['consumer'], r['reason'], r['action'], r['resources'],
              r['host'], r['cell']) for r in rows])

    def test_all_and_reason_filters(self):
        self.assertEqual(
            {LIVE, GONE, STRANGER},
            {r['consumer'] for r in self.json_rows(orphan.ListOrphan,
                                                   '--all')})
        self.assertEqual(
            [STRANGER], [r['consumer'] for r in self.json_rows(
                orphan.ListOrphan, '--reason', 'unknown_consumer')])
        self.assertEqual(
            [LIVE], [r['consumer'] for r in self.json_rows(
                orphan.ListOrphan, '--all', '--host', 'host1')])

    def test_project_and_user_filters(self):
        self.assertEqual(
            [GONE, STRANGER], [r['consumer'] for r in self.json_rows(
                orphan.ListOrphan, '--project', fakes.PROJECT, '--user',
                fakes.USER)])
        self.assertEqual(exit_codes.ORPHANS_FOUND, self.code)
        self.assertEqual([], self.json_rows(orphan.ListOrphan, '--user',
                                            fakes.PROJECT))
        self.assertEqual(exit_codes.SUCCESS, self.code)
        self.assertOneLineError('Invalid input: --project must not be '
                                'empty', orphan.ListOrphan, '--project', '')

    def test_group_by_project(self):
        self.assertEqual([{
            'project_id': fakes.PROJECT, 'consumers': 2, 'allocations': 2,
            'resources': {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 2}}],
            self.json_rows(orphan.ListOrphan, '--group-by', 'project'))
        self.assertEqual(exit_codes.ORPHANS_FOUND, self.code)
        self.assertEqual(
            '%s 2 2 VCPU=2,MEMORY_MB=1024,DISK_GB=2\n' % fakes.PROJECT,
            self.run_cmd(orphan.ListOrphan, '--group-by', 'project', '-f',
                         'value'))

    def test_project_resources_metric_reads_strangers_projects(self):
        # The stranger's project is placement's alone: read for the
        # metric though no row is shown.
        samples = metric_samples(self.run_cmd(
            orphan.ListOrphan, '-f', 'prometheus',
            '--metrics-max-projects', '1'))
        expected = {
            'nova_orphans_project_resources{project_id="%s",'
            'resource_class="%s"}' % (fakes.PROJECT, rc): value
            for rc, value in (('DISK_GB', '2.0'), ('MEMORY_MB', '1024.0'),
                              ('VCPU', '2.0'))}
        self.assertEqual(expected, {
            k: v for k, v in samples.items()
            if k.startswith('nova_orphans_project_resources')})
        self.assertOneLineError(
            'Invalid input: --metrics-max-projects must be at least 1',
            orphan.ListOrphan, '-f', 'prometheus', '--metrics-max-projects',
            '0')

    def test_table_is_short_unless_long(self):
        out = self.run_cmd(orphan.ListOrphan)
        header = [c.strip() for c in out.splitlines()[1].strip('|').split(
            '|')]
        # nova-orphans-manage's headers.
        self.assertEqual(['Consumer', 'Type', 'Provider', 'Host', 'Reason',
                          'Action', 'Resources'], header)
        self.assertIn('DISK_GB=1, MEMORY_MB=512, VCPU=1', out)
        out = self.run_cmd(orphan.ListOrphan, '--long')
        self.assertEqual([output.header(k) for k in model.FINDING_KEYS], [
            c.strip() for c in out.splitlines()[1].strip('|').split('|')])

    def test_sort_by_key_or_header_as_cliff(self):
        """cliff's --sort-column, a header too; an empty value last (first
        descending); names of no column shown ignored.
        """
        def consumers(*argv):
            out = self.run_cmd(orphan.ListOrphan, '--all', '--long',
                               '--max-width', '0', *argv)
            return [line.split('|')[1].strip()
                    for line in out.splitlines()[3:6]]
        self.assertEqual([LIVE, GONE, STRANGER],
                         consumers('--sort-column', 'Instance'))
        self.assertEqual([STRANGER, GONE, LIVE],
                         consumers('--sort-column', 'instance',
                                   '--sort-descending'))
        self.assertEqual(consumers('--sort-column', 'Host'),
                         consumers('--sort-column', 'nothing',
                                   '--sort-column', 'host'))

    def test_columns_and_value_format(self):
        out = self.run_cmd(orphan.ListOrphan, '-f', 'value', '-c',
                           'consumer', '-c', 'reason')
        self.assertEqual('%s deleted_instance\n%s unknown_consumer\n' % (
            GONE, STRANGER), out)

    def test_bad_uuid_before_any_request(self):
        self.assertOneLineError(
            'Invalid input: Resource provider rp1 is not a valid UUID',
            orphan.ListOrphan, '--resource-provider', 'rp1')
        self.assertEqual([], self.compute.requests + self.placement.requests)

    def test_unknown_provider_and_host(self):
        self.assertOneLineError(
            'Invalid input: resource provider %s does not exist' % GONE,
            orphan.ListOrphan, '--resource-provider', GONE)
        self.assertOneLineError(
            'Invalid input: no compute host host9 in any readable cell',
            orphan.ListOrphan, '--host', 'host9')

    def test_old_compute_api(self):
        self.compute.version = '2.53'
        self.assertOneLineError(
            'The compute API at http://compute/v2.1 supports microversions '
            'up to 2.53; nova-orphans needs 2.69.', orphan.ListOrphan,
            code=exit_codes.CONFIG_ERROR)

    def down_cell(self):
        self.compute.services.append({'host': 'host9',
                                      'binary': 'nova-compute',
                                      'status': 'UNKNOWN'})

    def test_down_cell_prints_rows_then_fails(self):
        self.down_cell()
        self.run_cmd(orphan.ListOrphan, '--all', '-f', 'json')
        self.assertEqual(exit_codes.INCOMPLETE_WITH_ORPHANS, self.code)
        self.assertEqual(INCOMPLETE + '\n', self.app.stderr.getvalue())
        rows = json.loads(self.app.stdout.getvalue())
        self.assertEqual({'unverifiable'}, {
            r['reason'] for r in rows if r['consumer'] == STRANGER})

    def test_down_cell_prints_metrics_then_fails(self):
        self.down_cell()
        self.run_cmd(orphan.ListOrphan, '-f', 'prometheus')
        self.assertEqual(exit_codes.INCOMPLETE_WITH_ORPHANS, self.code)
        self.assertEqual(INCOMPLETE + '\n', self.app.stderr.getvalue())
        self.assertIn('\nnova_orphans_unreadable_cells 1.0\n',
                      self.app.stdout.getvalue())


class CleanOrphanTestCase(CommandTestCase):

    def test_down_cell_repairs_prints_rows_then_fails(self):
        # GONE is a deleted server in a readable cell: still repaired.
        self.compute.services.append({'host': 'host9',
                                      'binary': 'nova-compute',
                                      'status': 'UNKNOWN'})
        path = os.path.join(self.tmp, 'j.jsonl')
        self.run_cmd(orphan.CleanOrphan, '--journal', path, '-f', 'json')
        # GONE repaired, STRANGER unverifiable: no orphan left in the
        # part read, which was not the whole cloud.
        self.assertEqual(exit_codes.INCOMPLETE_WITH_ORPHANS, self.code)
        self.assertEqual(
            '%s\nJournal: %s\nTo undo: openstack allocation orphan restore '
            '--journal %s\n' % (INCOMPLETE, path, path),
            self.app.stderr.getvalue())
        self.assertEqual([(GONE, 'done')], [
            (r['consumer'], r['outcome'])
            for r in json.loads(self.app.stdout.getvalue())])
        self.assertEqual({}, self.placement.consumers[GONE]['allocations'])
        self.assertIn(RP2, self.placement.consumers[STRANGER]['allocations'])

    def test_foreign_project_keeps_the_stranger(self):
        # STRANGER's placement record names fakes.PROJECT: declared
        # foreign, it is another service's; nova's deleted GONE, in the
        # same project, is still repaired.
        rows = self.json_rows(orphan.ListOrphan, '--all',
                              '--foreign-project', fakes.PROJECT)
        self.assertEqual(
            [(LIVE, 'active_instance'), (GONE, 'deleted_instance'),
             (STRANGER, 'unmanaged_consumer')],
            [(r['consumer'], r['reason']) for r in rows])
        path = os.path.join(self.tmp, 'j.jsonl')
        rows = self.json_rows(orphan.CleanOrphan, '--journal', path,
                              '--foreign-project', fakes.PROJECT)
        self.assertEqual([(GONE, 'done')],
                         [(r['consumer'], r['outcome']) for r in rows])
        self.assertEqual({RP2: RESOURCES},
                         self.placement.consumers[STRANGER]['allocations'])

    def test_foreign_project_name_is_refused(self):
        self.assertOneLineError(
            'Invalid input: --foreign-project: service is not a project id '
            '(32 hex '
            'digits); project names are not resolved: give the id '
            '("openstack project show -f value -c id NAME")',
            orphan.ListOrphan, '--foreign-project', 'service')

    def test_clean_then_restore(self):
        path = os.path.join(self.tmp, 'j.jsonl')
        rows = self.json_rows(orphan.CleanOrphan, '--journal', path)
        self.assertEqual(list(model.FINDING_KEYS) + ['outcome'],
                         list(rows[0]))
        self.assertEqual([(GONE, 'done'), (STRANGER, 'done')],
                         [(r['consumer'], r['outcome']) for r in rows])
        self.assertEqual({}, self.placement.consumers[GONE]['allocations'])
        self.assertIn('Journal: %s' % path, self.app.stderr.getvalue())

        rows = self.json_rows(orphan.RestoreOrphan, '--journal', path)
        self.assertEqual(['done', 'done'], [r['outcome'] for r in rows])
        self.assertEqual({RP2: RESOURCES},
                         self.placement.consumers[GONE]['allocations'])

    def test_project_filter_limits_what_is_repaired(self):
        path = os.path.join(self.tmp, 'j.jsonl')
        self.assertEqual([], self.json_rows(
            orphan.CleanOrphan, '--journal', path, '--project', 'other'))
        self.assertEqual(exit_codes.SUCCESS, self.code)
        self.assertFalse(os.path.exists(path))
        rows = self.json_rows(orphan.CleanOrphan, '--journal', path,
                              '--project', fakes.PROJECT)
        self.assertEqual([(GONE, 'done'), (STRANGER, 'done')],
                         [(r['consumer'], r['outcome']) for r in rows])
        self.assertEqual(exit_codes.REPAIRED, self.code)

    def test_dry_run_and_max_count(self):
        rows = self.json_rows(orphan.CleanOrphan, '--dry-run')
        self.assertEqual(['skipped: dry run'] * 2,
                         [r['outcome'] for r in rows])
        self.assertEqual(exit_codes.ORPHANS_FOUND, self.code)
        rows = self.json_rows(orphan.CleanOrphan, '--max-count', '1')
        self.assertEqual(['done', 'skipped: --max-count reached'],
                         [r['outcome'] for r in rows])
        # One orphan is left: never 4, "all repaired".
        self.assertEqual(exit_codes.ORPHANS_FOUND, self.code)
        # The default journal lands in the user's state directory, beside
        # the placement reads the scans keep (readers/kept_reads.py).
        names = os.listdir(os.path.join(self.tmp, 'nova-orphans'))
        self.assertEqual(['journal', 'kept-reads'],
                         sorted(n.split('-2')[0] if n.startswith('journal-')
                                else n[:len('kept-reads')] for n in names))
        self.assertOneLineError(
            'Invalid input: --max-count must be at least 1',
            orphan.CleanOrphan, '--max-count', '0')

    def test_failures_end_in_error_after_the_rest(self):
        self.placement.fail = {GONE}
        path = os.path.join(self.tmp, 'j.jsonl')
        self.run_cmd(orphan.CleanOrphan, '--journal', path, '-f', 'json')
        self.assertEqual(exit_codes.REPAIR_FAILED, self.code)
        outcomes = {r['consumer']: r['outcome']
                    for r in json.loads(self.app.stdout.getvalue())}
        self.assertEqual('failed: error 1', outcomes[GONE])
        self.assertEqual('done', outcomes[STRANGER])
        self.assertEqual({}, self.placement.consumers[STRANGER]['allocations'])

    def test_restore_refuses_a_changed_consumer(self):
        path = os.path.join(self.tmp, 'j.jsonl')
        self.run_cmd(orphan.CleanOrphan, '--journal', path)
        self.placement.allocate(GONE, RP1)
        self.run_cmd(orphan.RestoreOrphan, '--journal', path, '-f', 'json')
        self.assertEqual(exit_codes.REPAIR_FAILED, self.code)
        outcomes = {r['consumer']: r['outcome']
                    for r in json.loads(self.app.stdout.getvalue())}
        self.assertEqual('done', outcomes[STRANGER])
        self.assertIn('refused: consumer %s changed' % GONE, outcomes[GONE])

    def assertRows(self, command, ones, samples, action='delete_consumer'):
        """nova_orphans_<command>_rows: 1 for each (outcome, reason) in
        ``ones``, 0 for the other outcomes of those reasons.
        """
        reasons_ = {reason for _o, reason in ones}
        self.assertEqual({
            'nova_orphans_%s_rows{action="%s",outcome="%s",'
            'reason="%s"}' % (command, action, outcome, reason):
            '1.0' if (outcome, reason) in ones else '0.0'
            for outcome in ('repaired', 'failed', 'skipped')
            for reason in reasons_},
            {k: v for k, v in samples.items()
             if k.startswith('nova_orphans_%s_rows' % command)})

    def test_metrics_of_a_failed_clean_then_of_a_success(self):
        self.placement.fail = {GONE}
        path = os.path.join(self.tmp, 'clean.prom')
        self.run_cmd(orphan.CleanOrphan, '--metrics-file', path, '-f',
                     'prometheus')
        self.assertEqual(exit_codes.REPAIR_FAILED, self.code)
        text = self.app.stdout.getvalue()
        with open(path) as f:
            self.assertEqual(text, f.read())
        samples = metric_samples(text)
        self.assertRows('clean', {('failed', 'deleted_instance'),
                                  ('repaired', 'unknown_consumer')}, samples)
        self.assertEqual('0.0', samples[
            'nova_orphans_clean_last_success_timestamp_seconds'])
        self.placement.fail = set()
        self.run_cmd(orphan.CleanOrphan, '--metrics-file', path)
        with open(path) as f:
            samples = metric_samples(f.read())
        self.assertEqual('1.0', samples[
            'nova_orphans_clean_rows{action="delete_consumer",'
            'outcome="repaired",reason="deleted_instance"}'])
        self.assertEqual(
            samples['nova_orphans_clean_last_run_timestamp_seconds'],
            samples['nova_orphans_clean_last_success_timestamp_seconds'])
        self.assertNotEqual('0.0', samples[
            'nova_orphans_clean_last_success_timestamp_seconds'])

    def test_restore_metrics(self):
        path = os.path.join(self.tmp, 'j.jsonl')
        self.run_cmd(orphan.CleanOrphan, '--journal', path)
        text = self.run_cmd(orphan.RestoreOrphan, '--journal', path,
                            '-f', 'prometheus')
        self.assertRows('restore', {('repaired', 'deleted_instance'),
                                    ('repaired', 'unknown_consumer')},
                        metric_samples(text), action='restore_consumer')

    def test_restore_bad_journal(self):
        path = os.path.join(self.tmp, 'none.jsonl')
        self.assertOneLineError(
            'Journal %s: No such file or directory' % path,
            orphan.RestoreOrphan, '--journal', path)

    def test_a_bug_is_one_line_and_255(self):
        """Not cliff's 1, the code of a failed repair: 255, as
        nova-orphans-manage ends on a bug.
        """
        with mock.patch.object(self.placement, 'handle',
                               side_effect=RuntimeError('a bug')):
            self.assertOneLineError('Unexpected error: a bug',
                                    orphan.ListOrphan, code=255)


class InterruptTestCase(CommandTestCase):

    def kill_at(self, method, signum):
        def before(m, path):
            if m == method:
                self.placement.before = None
                os.kill(os.getpid(), signum)
        self.placement.before = before

    def test_restore_stops_after_the_write_in_flight(self):
        path = os.path.join(self.tmp, 'j.jsonl')
        self.run_cmd(orphan.CleanOrphan, '--journal', path)
        self.kill_at('PUT', signal.SIGTERM)
        self.app.stderr = io.StringIO()
        cmd = orphan.RestoreOrphan(self.app, None)
        parsed = cmd.get_parser('openstack').parse_args(
            ['--journal', path, '-f', 'json'])
        self.app.stdout = io.StringIO()
        self.assertEqual(143, cmd.run(parsed))
        # Newest first: the last consumer cleaned is put back, the other
        # not attempted (rows are shown in a list's order).
        older, newer = [list(e['consumers']) for e in
                        journal.load(path).entries]
        self.assertEqual(
            {newer[0]: 'done', older[0]: 'skipped: interrupted'},
            {r['consumer']: r['outcome']
             for r in json.loads(self.app.stdout.getvalue())})
        self.assertEqual(
            'Interrupted by SIGTERM: 1 restore(s) done; 1 not attempted '
            '(skipped: interrupted).\nTo restore the rest: openstack '
            'allocation orphan restore --journal %s\n' % path,
            self.app.stderr.getvalue())
        # Handlers are put back.
        self.assertIs(signal.default_int_handler,
                      signal.getsignal(signal.SIGINT))

    def test_list_stopped_while_reading_is_one_line(self):
        self.kill_at('GET', signal.SIGINT)
        self.run_cmd(orphan.ListOrphan)
        self.assertEqual(130, self.code)
        self.assertEqual('Interrupted by SIGINT; nothing was changed.\n',
                         self.app.stderr.getvalue())

    def test_only_the_openstack_process_ends_at_once(self):
        cmd = orphan.ListOrphan(self.app, None)
        for argv0, interactive, own in (
                ('/usr/bin/openstack', False, True),
                # osc's interactive shell.
                ('/usr/bin/openstack', True, False),
                # A program running osc's shell in-process.
                ('/usr/bin/python3', False, False)):
            self.app.interactive_mode = interactive
            with fixtures.MonkeyPatch('sys.argv', [argv0]):
                self.assertEqual(own, cmd.own_process(),
                                 (argv0, interactive))

    def test_openstack_process_stopped_while_reading_ends_at_once(self):
        ended, said = [], []
        self.useFixture(fixtures.MonkeyPatch('os._exit', ended.append))
        self.useFixture(fixtures.MonkeyPatch('nova_orphans.interrupt.say',
                                             said.append))
        self.useFixture(fixtures.MonkeyPatch('sys.argv', ['openstack']))
        # The test runner's objects are not the run's to freeze.
        self.useFixture(fixtures.MonkeyPatch('nova_orphans.memory.freeze',
                                             lambda: None))
        self.kill_at('GET', signal.SIGINT)
        self.run_cmd(orphan.ListOrphan)
        self.assertEqual([130], ended)
        self.assertEqual(['Interrupted by SIGINT; nothing was changed.'],
                         said)


class PluginTestCase(base.BaseTestCase):

    def _instance(self, config, auth=None, region=None):
        from keystoneauth1 import session
        from openstack.config import cloud_region
        if region is None:
            # Named, as osc's loader names every region it makes ('' for
            # none): openstacksdk makes a name up from a session for one
            # that has none.
            region = cloud_region.CloudRegion(name='', config=config)
        return types.SimpleNamespace(
            session=session.Session(auth=auth),
            sdk_connection=types.SimpleNamespace(config=region))

    def _cloud(self, auth):
        """The cloud region openstacksdk makes of a clouds.yaml whose
        ``sandbox`` cloud has ``auth``.
        """
        import openstack.config
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'clouds.yaml')
        with open(path, 'w') as f:
            json.dump({'clouds': {'sandbox': {'auth_type': 'admin_token',
                                              'auth': auth}}}, f)
        # Where openstack (and the plugin, reading it again) finds it.
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', path))
        return openstack.config.OpenStackConfig(
            config_files=[path], vendor_files=[]).get_one(
                cloud='sandbox', validate=False)

    def test_token_lost_by_openstacksdk_is_read_again(self):
        """openstacksdk 3.0.0 to 4.4.x give the admin_token plugin the
        text "None" for a clouds.yaml's token; placement refuses it.
        """
        from keystoneauth1 import token_endpoint
        region = self._cloud({'endpoint': 'http://placement:8778',
                              'token': 'admin'})
        lost = token_endpoint.Token('http://placement:8778', 'None')
        clients = plugin.make_client(self._instance(None, auth=lost,
                                                    region=region))
        for client in (clients.placement, clients.compute, clients.network):
            auth = client._adapter.auth
            self.assertIsInstance(auth, token_endpoint.Token)
            self.assertEqual(('http://placement:8778', 'admin'),
                             (auth.endpoint, auth.token))

    def test_token_kept_where_nothing_was_lost(self):
        from keystoneauth1 import token_endpoint
        region = self._cloud({'endpoint': 'http://placement:8778',
                              'token': 'admin'})
        for auth in (token_endpoint.Token('http://placement:8778', 'admin'),
                     None):
            instance = self._instance(None, auth=auth, region=region)
            self.assertIsNone(plugin.admin_token(instance))
            clients = plugin.make_client(instance)
            self.assertIsNone(clients.placement._adapter.auth)
        # "None" given nowhere but by openstacksdk: nothing to read.
        region = self._cloud({'endpoint': 'http://placement:8778'})
        self.assertIsNone(plugin.admin_token(self._instance(
            None, auth=token_endpoint.Token('http://p', 'None'),
            region=region)))

    def test_endpoint_overrides_are_honoured(self):
        clients = plugin.make_client(self._instance({
            'compute_endpoint_override': 'http://nova/v2.1',
            'interface': 'internal', 'region_name': 'R1'}))
        adapter = clients.compute._adapter
        self.assertEqual(('compute', 'http://nova/v2.1', 'internal', 'R1'),
                         (adapter.service_type, adapter.endpoint_override,
                          adapter.interface, adapter.region_name))
        adapter = clients.placement._adapter
        self.assertEqual(('placement', None), (adapter.service_type,
                                               adapter.endpoint_override))

    def test_cloud_identity(self):
        """What a journal records of the cloud: clouds.yaml's name (none
        for OS_* variables alone), auth URL, region and project.
        """
        from openstack.config import cloud_region
        auth = {'auth_url': 'https://keystone:5000/v3',
                'project_name': 'admin', 'username': 'u', 'password': 'p'}
        for name, expected in (('prod', 'prod'), ('envvars', None),
                               ('', None)):
            region = cloud_region.CloudRegion(name=name, config={
                'auth': auth, 'region_name': 'R1'})
            instance = self._instance(None, region=region)
            self.assertEqual(
                {'name': expected, 'auth_url': 'https://keystone:5000/v3',
                 'region': 'R1', 'project': 'admin',
                 'front_end': 'openstack'},
                api_sources.APISources(plugin.make_client(instance)).cloud())

    def test_network_endpoint_override_is_honoured(self):
        clients = plugin.make_client(self._instance({
            'network_endpoint_override': 'http://neutron:9696/',
            'interface': 'internal', 'region_name': 'R1'}))
        adapter = clients.network._adapter
        self.assertEqual(('network', 'http://neutron:9696/', 'internal',
                          'R1'),
                         (adapter.service_type, adapter.endpoint_override,
                          adapter.interface, adapter.region_name))

    def test_no_global_option_and_own_api_name(self):
        import argparse
        parser = argparse.ArgumentParser()
        self.assertIs(parser, plugin.build_option_parser(parser))
        self.assertEqual([], [a.dest for a in parser._actions
                              if a.dest != 'help'])
        self.assertEqual('nova_orphans', plugin.API_NAME)
        self.assertTrue(plugin.check_api_version('1'))
        self.assertFalse(plugin.check_api_version('2'))
