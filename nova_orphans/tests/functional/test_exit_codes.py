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
"""The exit-code table (nova_orphans/exit_codes.py), row by row, as a
script reads it from both console scripts.

Each test makes the situation a row describes on a real placement and
nova's real schema, runs ``nova-orphans-manage`` and ``openstack``
(through nova's real compute API) as processes, and checks the exact
code, what is printed (nothing on stdout when the run fails, one line
on stderr) and what placement holds afterwards.

Not here: 9 (credentials refused) needs keystone; 6 is
test_releases.UnsupportedSchemaTestCase (one case below); 130 and 143
are test_interrupts.
"""

import json
import os
import threading
import uuid as uuidlib

from nova_orphans import exit_codes
from nova_orphans.repair import journal as journal_mod
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import faults
from nova_orphans.tests.functional.fixtures import serving
from nova_orphans.tests.functional import front_ends
from nova_orphans.tests import runners
from nova_orphans.tests import zun_front

PASSWORD = 's3cr3t-Pa55w0rd'
MYSQL = 'mysql+pymysql://nova:%s@127.0.0.1:1/%%s' % PASSWORD


class ExitCodesTestCase(front_ends.FrontEndsTestCase):

    def setUp(self):
        super().setUp()
        self.host1 = self.add_node('host1')
        self.live = self.boot('host1', self.host1)
        self.journal = os.path.join(self.tmp, 'journal.jsonl')

    def gone(self):
        """An instance forced to deleted in SQL: an orphan either front
        end finds (deleted_instance / unknown_consumer through the API).
        """
        vm = self.boot('host1', self.host1, vm_state='error')
        self.nova.force_delete_instance('cell1', vm)
        return vm

    def assertFailed(self, result, code, line, before):
        """The run failed: ``code``, nothing on stdout, ``line`` alone
        on stderr, and placement as it was ``before``.
        """
        rc, out, err = result
        self.assertEqual((code, '', [line]), (rc, out, err.splitlines()),
                         err)
        self.assertEqual(before, self.placement.dump_state())

    def test_0_nothing_found(self):
        before = self.placement.dump_state()
        manage_list, manage_clean, osc_list, osc_clean = self.run_all(
            self.manage_argv('allocations', 'list'),
            self.manage_argv('allocations', 'clean'),
            self.openstack_argv('allocation', 'orphan', 'list'),
            self.openstack_argv('allocation', 'orphan', 'clean'))
        nothing = (exit_codes.SUCCESS, 'No orphaned allocations found.\n', '')
        # The same from both: no table of no rows, then what it means.
        self.assertEqual(nothing, manage_list)
        self.assertEqual(nothing, manage_clean)
        self.assertEqual(nothing, osc_list)
        self.assertEqual(nothing, osc_clean)
        self.assertEqual(before, self.placement.dump_state())

    def test_3_orphans_listed(self):
        gones = sorted(self.gone() for _n in range(2))
        before = self.placement.dump_state()
        results = self.run_all(
            self.manage_argv('allocations', 'list', '--format', 'json'),
            self.manage_argv('allocations', 'clean', '--dry-run', '--format',
                             'json'),
            self.openstack_argv('allocation', 'orphan', 'list', '-f', 'json'),
            self.openstack_argv('allocation', 'orphan', 'clean', '--dry-run',
                                '-f', 'json'))
        for rc, out, err in results:
            self.assertEqual((exit_codes.ORPHANS_FOUND, ''), (rc, err))
            self.assertEqual(gones, sorted(r['consumer']
                                           for r in json.loads(out)))
        for _rc, out, _err in results[1::2]:
            self.assertEqual(['skipped: dry run'] * 2,
                             [r['outcome'] for r in json.loads(out)])
        self.assertEqual(before, self.placement.dump_state())

    def assertMaxCount(self, argv, orphans, undo):
        """``clean --max-count 1`` on several orphans: one repaired, 3
        (orphans remain), never 4.
        """
        before = self.placement.dump_state()
        rc, out, err = self.run_one(argv + ['--max-count', '1', '--journal',
                                            self.journal])
        self.assertEqual(exit_codes.ORPHANS_FOUND, rc, err)
        rows = json.loads(out)
        done = [r['consumer'] for r in rows if r['outcome'] == 'done']
        self.assertEqual(1, len(done), rows)
        self.assertEqual(
            sorted(orphans),
            sorted(r['consumer'] for r in rows))
        self.assertEqual(['skipped: --max-count reached'] * (
            len(orphans) - 1), [r['outcome'] for r in rows
                                if r['consumer'] not in done])
        self.assertEqual(['Journal: %s' % self.journal,
                          'To undo: %s' % undo], err.splitlines())
        self.assertEqual({c: v for c, v in before.items() if c not in done},
                         self.placement.dump_state())
        return done[0]

    def test_3_max_count(self):
        orphans = [self.gone() for _n in range(3)]
        done = self.assertMaxCount(
            self.manage_argv('allocations', 'clean', '--format', 'json'),
            orphans, 'nova-orphans-manage --config-file %s allocations '
            'restore --journal %s' % (self.conf_file, self.journal))
        orphans.remove(done)
        self.assertMaxCount(
            self.openstack_argv('allocation', 'orphan', 'clean', '-f',
                                'json'),
            orphans, 'openstack --os-cloud cloud allocation orphan restore '
            '--journal %s' % self.journal)

    def assertRepaired(self, argv, undo):
        orphans = sorted(self.gone() for _n in range(2))
        rc, out, err = self.run_one(argv + ['--journal', self.journal])
        self.assertEqual(exit_codes.REPAIRED, rc, err)
        self.assertEqual([(c, 'done') for c in orphans],
                         sorted((r['consumer'], r['outcome'])
                                for r in json.loads(out)))
        self.assertEqual(['Journal: %s' % self.journal,
                          'To undo: %s' % undo], err.splitlines())
        self.assertEqual([self.live], list(self.placement.dump_state()))

    def test_4_repaired(self):
        self.assertRepaired(
            self.manage_argv('allocations', 'clean', '--format', 'json'),
            'nova-orphans-manage --config-file %s allocations restore '
            '--journal %s' % (self.conf_file, self.journal))
        self.assertRepaired(
            self.openstack_argv('allocation', 'orphan', 'clean', '-f',
                                'json'),
            'openstack --os-cloud cloud allocation orphan restore '
            '--journal %s' % self.journal)

    def test_1_repair_failed(self):
        """placement fails one write: 1, after the others are done."""
        failing = self.gone()
        proxy = self.useFixture(faults.FaultProxy(self.placement.endpoint))
        proxy.inject('PUT', '/allocations/' + failing, count=None,
                     status=500)
        self.write_clouds(proxied={'placement': proxy.endpoint})
        conf = self.nova_conf(proxy.endpoint, name='proxied.conf')
        for argv, undo in (
                (self.manage_argv('allocations', 'clean', '--format', 'json',
                                  conf_file=conf),
                 'nova-orphans-manage --config-file %s allocations restore '
                 '--journal %s' % (conf, self.journal)),
                (self.openstack_argv('allocation', 'orphan', 'clean', '-f',
                                     'json', cloud='proxied'),
                 'openstack --os-cloud proxied allocation orphan restore '
                 '--journal %s' % self.journal)):
            gone = self.gone()
            before = self.placement.dump_state()
            rc, out, err = self.run_one(argv + ['--journal', self.journal])
            self.assertEqual(exit_codes.REPAIR_FAILED, rc, err)
            self.assertEqual(
                sorted([(failing, 'failed: error 1'), (gone, 'done')]),
                sorted((r['consumer'], r['outcome'])
                       for r in json.loads(out)))
            self.assertEqual([
                'Error 1 (1 row(s)): Placement request PUT /allocations/%s '
                'failed: 500 injected by the test proxy' % failing,
                'Journal: %s' % self.journal,
                'To undo: %s' % undo], err.splitlines())
            del before[gone]
            self.assertEqual(before, self.placement.dump_state())

    def test_2_and_5_cell_unreadable(self):
        """nova-orphans-manage: a cell whose database cannot be opened is
        2 without orphans in the rest, 5 with.
        """
        host2 = self.add_node('host2', cell='cell2')
        self.boot('host2', host2, cell='cell2')
        self.nova.break_cell('cell2')
        warning = ('WARNING: cell cell2 could not be read (%s); its '
                   'consumers are reported as unverifiable, never as '
                   'orphans.')
        before = self.placement.dump_state()
        rc, out, err = self.manage_run('allocations', 'list')
        self.assertEqual((exit_codes.INCOMPLETE,
                          'No orphaned allocations found.\n'
                          'Cells not read: cell2; their consumers are '
                          'unverifiable, never orphans.\n'), (rc, out), err)
        line, = err.splitlines()
        self.assertTrue(line.startswith(warning.split('%s')[0]), line)
        self.assertTrue(line.endswith(warning.split('%s')[1]), line)
        self.assertEqual(before, self.placement.dump_state())
        gone = self.gone()
        before = self.placement.dump_state()
        for argv in (('list',), ('clean', '--dry-run')):
            rc, out, err2 = self.manage_run('allocations', *argv,
                                            '--format', 'json')
            self.assertEqual((exit_codes.INCOMPLETE_WITH_ORPHANS, err),
                             (rc, err2))
            self.assertEqual([gone], [r['consumer']
                                      for r in json.loads(out)])
        self.assertEqual(before, self.placement.dump_state())

    def break_services(self, cell):
        """The cell's services table gone: nova's compute API (which
        keeps the cells' connections from its first request) reads that
        cell's services as from a database that does not answer.
        """
        self.nova.execute(cell, 'ALTER TABLE services RENAME TO broken')
        self.addCleanup(self.nova.execute, cell,
                        'ALTER TABLE broken RENAME TO services')

    def test_2_and_5_cell_down_through_the_compute_api(self):
        """openstack: a cell nova's compute API cannot read shows its
        hosts' services as UNKNOWN (2.69): 2 without orphans in the
        rest, 5 with. nova-orphans-manage reads the same damage in the
        schema: 6 (see test_releases.UnsupportedSchemaTestCase).
        """
        # A host mapped to cell2, its compute node deleted: the compute
        # API lists hypervisors cell by cell and fails on a cell whose
        # compute nodes it cannot look up, which the tool reads as "no
        # allocation can be judged" (2 whatever the rest holds).
        self.nova.add_compute_node('cell2', 'host2', deleted=True)
        self.break_services('cell2')
        down = [
            'WARNING: cell (down) could not be read (the compute API '
            'reports the services of host2 as UNKNOWN: their cell does '
            'not respond); its consumers are reported as unverifiable, '
            'never as orphans.']
        before = self.placement.dump_state()
        (rc, out, err), manage = self.run_all(
            self.openstack_argv('allocation', 'orphan', 'list', '-f',
                                'json'),
            self.manage_argv('allocations', 'list'))
        self.assertEqual((exit_codes.INCOMPLETE, [], down),
                         (rc, json.loads(out), err.splitlines()))
        self.assertEqual(
            (exit_codes.UNSUPPORTED_SCHEMA, '',
             ['ERROR: The database of nova cell cell2 (%s) has no '
              'services: nova-orphans reads the databases of nova 27 '
              '(2023.1) to 34 (2026.2), each upgraded by its own '
              'nova-manage (api_db sync, db sync).'
              % self.nova.cell_urls['cell2']]),
            (manage[0], manage[1], manage[2].splitlines()))
        gone = self.gone()
        before = self.placement.dump_state()
        rc, out, err = self.openstack_run('allocation', 'orphan', 'clean',
                                          '--dry-run', '-f', 'json')
        self.assertEqual((exit_codes.INCOMPLETE_WITH_ORPHANS, down),
                         (rc, err.splitlines()))
        self.assertEqual([(gone, 'skipped: dry run')],
                         [(r['consumer'], r['outcome'])
                          for r in json.loads(out)])
        self.assertEqual(before, self.placement.dump_state())

    def serve_zun(self):
        """Zun's container API on 127.0.0.1 (tests/zun_front.py), in the
        catalog of cloud ``zun`` (an endpoint override): a container of
        host1 holds its allocation on host1's node, as Zun with
        ``host_shared_with_nova`` claims it.
        """
        self.zun = zun_front.ZunFront()
        server = serving.make_server(self.zun)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.zun_endpoint = 'http://127.0.0.1:%d/v1' % server.server_port
        self.write_clouds(zun={'container': self.zun_endpoint})
        self.container = str(uuidlib.uuid4())
        self.zun.add(self.container, 'host1')
        self.allocate(self.container, self.host1, consumer_type=None)

    def test_zun_containers_kept_through_the_container_api(self):
        self.serve_zun()
        orphan = self.gone()
        # Neither nova's nor Zun's.
        stranger = str(uuidlib.uuid4())
        self.allocate(stranger, self.host1)
        listing = ['/v1/containers?all_projects=1&limit=1000',
                   '/v1/capsules?all_projects=1&limit=1000']
        rc, out, err = self.openstack_run(
            'allocation', 'orphan', 'list', '--all', '-f', 'json',
            cloud='zun')
        self.assertEqual((exit_codes.ORPHANS_FOUND, ''), (rc, err))
        self.assertEqual({
            self.live: ('active_instance', 'none'),
            self.container: (
                'unmanaged_consumer', 'none',
                'Zun container %s (status Running, host host1) holds this '
                'allocation.' % self.container),
            orphan: ('deleted_instance', 'delete_consumer'),
            stranger: ('unknown_consumer', 'delete_consumer')},
            {r['consumer']: (r['reason'], r['action']) + (
                (r['details'],) if r['consumer'] == self.container else ())
             for r in json.loads(out)})
        self.assertEqual(listing, self.zun.asked)
        before = self.placement.dump_state()
        del self.zun.asked[:]
        rc, out, err = self.openstack_run(
            'allocation', 'orphan', 'clean', '-f', 'json', '--journal',
            self.journal, cloud='zun')
        self.assertEqual(exit_codes.REPAIRED, rc, err)
        self.assertEqual(sorted([(orphan, 'done'), (stranger, 'done')]),
                         sorted((r['consumer'], r['outcome'])
                                for r in json.loads(out)))
        self.assertEqual({c: v for c, v in before.items()
                          if c not in (orphan, stranger)},
                         self.placement.dump_state())
        # The audit's, then the stranger's fresh read before its write.
        self.assertEqual(listing * 2, self.zun.asked)
        # A cloud whose catalog has no Zun: the container's allocation
        # looks like any unknown consumer's (see --foreign-project).
        rc, out, err = self.openstack_run(
            'allocation', 'orphan', 'list', '-f', 'json')
        self.assertEqual((exit_codes.ORPHANS_FOUND, ''), (rc, err))
        self.assertEqual([(self.container, 'unknown_consumer')],
                         [(r['consumer'], r['reason'])
                          for r in json.loads(out)])

    def test_2_and_5_zun_api_down(self):
        """Zun in the catalog, its API failing: what nova has no trace
        of may be Zun's, so it is unverifiable, and the run incomplete.
        """
        self.serve_zun()
        self.zun.down = True
        warning = [
            "WARNING: Zun's container API %s could not be read (Container "
            "request GET /containers?all_projects=1&limit=1000 failed: 503 "
            "Service Unavailable); the consumers nova has no trace of are "
            "reported as unverifiable, never as orphans." % self.zun_endpoint,
            # Retried first, as a proxy's 503 for a restarting service.
            '1 request retried after transient faults (container 503: 8).']
        before = self.placement.dump_state()
        rc, out, err = self.openstack_run(
            'allocation', 'orphan', 'list', '--all', '-f', 'json',
            '--retry-budget', '60', cloud='zun')
        self.assertEqual((exit_codes.INCOMPLETE, warning),
                         (rc, err.splitlines()))
        self.assertEqual(
            sorted([(self.live, 'active_instance'),
                    (self.container, 'unverifiable')]),
            sorted((r['consumer'], r['reason']) for r in json.loads(out)))
        # A budget of 0 retries nothing.
        rc, out, err = self.openstack_run(
            'allocation', 'orphan', 'clean', '-f', 'json', '--journal',
            self.journal, '--retry-budget', '0', cloud='zun')
        self.assertEqual((exit_codes.INCOMPLETE, warning[:1]),
                         (rc, err.splitlines()))
        self.assertEqual(before, self.placement.dump_state())
        # With an orphan nova can name besides: 5.
        gone = self.gone()
        rc, out, err = self.openstack_run(
            'allocation', 'orphan', 'clean', '--dry-run', '-f', 'json',
            '--retry-budget', '0', cloud='zun')
        self.assertEqual((exit_codes.INCOMPLETE_WITH_ORPHANS, warning[:1]),
                         (rc, err.splitlines()))
        self.assertEqual([gone], [r['consumer'] for r in json.loads(out)])

    def test_6_unsupported_schema(self):
        """Also test_releases.UnsupportedSchemaTestCase, and
        test_2_and_5_cell_down_through_the_compute_api.
        """
        self.gone()
        before = self.placement.dump_state()
        self.nova.execute('api', 'ALTER TABLE build_requests RENAME TO '
                          'broken')
        self.addCleanup(self.nova.execute, 'api',
                        'ALTER TABLE broken RENAME TO build_requests')
        self.assertFailed(
            self.manage_run('allocations', 'clean'),
            exit_codes.UNSUPPORTED_SCHEMA,
            'ERROR: The nova API database %s has no build_requests: '
            'nova-orphans reads the databases of nova 27 (2023.1) to 34 '
            '(2026.2), each upgraded by its own nova-manage (api_db sync, '
            'db sync).' % self.nova.api_url, before)

    def test_7_configuration(self):
        self.gone()
        before = self.placement.dump_state()
        missing = os.path.join(self.tmp, 'missing.conf')
        rules = self.nova_conf(self.placement.endpoint, name='rules.conf',
                               nova_orphans={'site_rules': 'no_such_rule'})
        # Answers, but is not placement: nova's compute API.
        self.write_clouds(wrong={'placement': self.cloud.compute})
        # No nova.conf anywhere oslo.config looks.
        home = os.path.join(self.tmp, 'home')
        os.mkdir(home)
        missing_rc, rules_rc, wrong_rc, unconfigured = self.run_all(
            self.manage_argv('allocations', 'clean', conf_file=missing),
            self.manage_argv('allocations', 'clean', conf_file=rules),
            self.openstack_argv('allocation', 'orphan', 'clean',
                                cloud='wrong'),
            (runners.manage_argv('allocations', 'clean'),
             dict(self.environment(), HOME=home)))
        self.assertFailed(
            missing_rc, exit_codes.CONFIG_ERROR,
            'ERROR: Configuration error: Failed to find some config files: %s'
            % missing, before)
        self.assertFailed(
            rules_rc, exit_codes.CONFIG_ERROR,
            'ERROR: Configuration error: [nova_orphans] site_rules: no rule '
            'named no_such_rule in the nova_orphans.rules entry point '
            'namespace', before)
        self.assertFailed(
            wrong_rc, exit_codes.CONFIG_ERROR,
            'ERROR: Placement at %s/ answered 200 OK with other JSON, not '
            'placement\'s version document: is this the service\'s '
            'endpoint?' % self.cloud.compute, before)
        if any(os.path.exists(os.path.join(d, 'nova.conf'))
               for d in ('/etc/nova', '/etc')):
            return  # this machine has a nova.conf of its own
        self.assertFailed(
            unconfigured, exit_codes.CONFIG_ERROR,
            'ERROR: Configuration error: no configuration file was found: '
            'looked for nova.conf and nova-orphans-manage.conf in ~/.nova, ~, '
            '/etc/nova, /etc; give one with --config-file PATH (before the '
            'category).', before)

    def test_8_placement_unreachable(self):
        self.gone()
        before = self.placement.dump_state()
        self.write_clouds(nowhere={'placement': front_ends.NOWHERE})
        manage, osc = self.run_all(
            self.manage_argv('allocations', 'clean', conf_file=self.nova_conf(
                front_ends.NOWHERE, name='nowhere.conf')),
            self.openstack_argv('allocation', 'orphan', 'clean',
                                cloud='nowhere'))
        refused = ('Placement request GET / failed: cannot connect to %s '
                   '([Errno 111] Connection refused); check that placement '
                   'runs there, and ' % front_ends.NOWHERE)
        self.assertFailed(
            manage, exit_codes.UNREACHABLE,
            'ERROR: ' + refused + '[placement] (its endpoint, or auth_url, '
            'region_name and valid_interfaces)', before)
        self.assertFailed(
            osc, exit_codes.UNREACHABLE,
            'ERROR: ' + refused + 'the cloud\'s settings (clouds.yaml or the '
            'OS_* variables: auth_url, region_name, interface, '
            'placement_endpoint_override)', before)

    def test_10_nova_unreadable(self):
        """manage: the API database does not answer; openstack: the
        compute API does not.
        """
        self.gone()
        before = self.placement.dump_state()
        self.write_clouds(nowhere={'compute': front_ends.NOWHERE})
        conf = self.nova_conf(self.placement.endpoint, name='mysql.conf',
                              api_database={'connection': MYSQL % 'nova_api'})
        manage, osc = self.run_all(
            self.manage_argv('allocations', 'clean', conf_file=conf),
            self.openstack_argv('allocation', 'orphan', 'clean',
                                cloud='nowhere'))
        self.assertFailed(
            manage, exit_codes.NOVA_UNREADABLE,
            'ERROR: The nova API database mysql+pymysql://nova:***@'
            '127.0.0.1:1/nova_api could not be read: '
            '(pymysql.err.OperationalError) (2003, "Can\'t connect to MySQL '
            'server on \'127.0.0.1\' ([Errno 111] Connection refused)"); '
            'check [api_database] connection', before)
        self.assertFailed(
            osc, exit_codes.NOVA_UNREADABLE,
            'ERROR: Compute request GET / failed: cannot connect to %s '
            '([Errno 111] Connection refused)' % front_ends.NOWHERE, before)

    def test_12_journal_in_use(self):
        """Another run holds the journal: 12 from every command that
        would write it, before anything is read; a damaged journal is
        still 127; once the other run ends, the same commands work.
        """
        gone = self.gone()
        held = self.placement.dump_state()[gone]
        self.assertEqual(exit_codes.REPAIRED, self.manage(
            'allocations', 'clean', '--journal', self.journal)[0])
        second = self.gone()
        before = self.placement.dump_state()
        damaged = os.path.join(self.tmp, 'damaged.jsonl')
        with open(self.journal) as f:
            lines = f.read().split('\n')
        lines[1] = lines[1].replace('"VCPU": 1', '"VCPU": 2')
        with open(damaged, 'w') as f:
            f.write('\n'.join(lines))
        # A restore of it at work, as far as a lock tells.
        other = journal_mod.Journal(self.journal, command='restore')
        other.hold()
        self.addCleanup(other.close)
        busy = ('ERROR: Journal %s: another run is writing to it now (a '
                '"clean" or "restore" with the same journal); try again '
                'once it has ended' % self.journal)
        # A clean's dry run writes no journal, and is not refused.
        results = self.run_all(*[
            argv + ['--journal', self.journal] for argv in (
                self.manage_argv('allocations', 'clean'),
                self.manage_argv('allocations', 'restore'),
                self.manage_argv('allocations', 'restore', '--dry-run'),
                self.openstack_argv('allocation', 'orphan', 'clean'),
                self.openstack_argv('allocation', 'orphan', 'restore'),
                self.openstack_argv('allocation', 'orphan', 'restore',
                                    '--dry-run'))])
        for result in results:
            self.assertFailed(result, exit_codes.JOURNAL_BUSY, busy, before)
        bad = ('ERROR: Journal %s: line 2 does not verify: the line was '
               'altered, or a line of its run before it was removed, added '
               'or moved' % damaged)
        for result in self.run_all(
                self.manage_argv('allocations', 'restore', '--journal',
                                 damaged),
                self.openstack_argv('allocation', 'orphan', 'restore',
                                    '--journal', damaged)):
            self.assertFailed(result, exit_codes.INVALID_INPUT, bad, before)
        # Run again once it has ended.
        other.close()
        rc, out, err = self.manage_run('allocations', 'clean', '--format',
                                       'json', '--journal', self.journal)
        self.assertEqual((exit_codes.REPAIRED, [second]), (
            rc, [r['consumer'] for r in json.loads(out)]), err)
        rc, out, err = self.openstack_run(
            'allocation', 'orphan', 'restore', '-f', 'json', '--journal',
            self.journal)
        self.assertEqual((exit_codes.REPAIRED, sorted([gone, second])), (
            rc, sorted(r['consumer'] for r in json.loads(out))), err)
        self.assertEqual(dict(before, **{gone: held}),
                         self.placement.dump_state())

    def test_127_invalid_input(self):
        self.gone()
        before = self.placement.dump_state()
        results = self.run_all(
            self.manage_argv('allocations', 'clean', '--resource-provider',
                             'host1'),
            self.openstack_argv('allocation', 'orphan', 'clean',
                                '--resource-provider', 'host1'),
            self.manage_argv('allocations', 'clean', '--host', 'nosuch'),
            self.openstack_argv('allocation', 'orphan', 'clean', '--host',
                                'nosuch'),
            self.manage_argv('allocations', 'clean', '--max-count', 'many'),
            self.openstack_argv('allocation', 'orphan', 'clean',
                                '--max-count', 'many'),
            self.manage_argv('allocations', 'clean', '--config-file',
                             self.conf_file))
        lines = [
            'ERROR: Invalid input: Resource provider host1 is not a valid '
            'UUID',
            'ERROR: Invalid input: no compute host nosuch in any readable '
            'cell']
        # Each line from both front ends, in one format.
        expected = [line for line in lines for _fe in (1, 2)]
        for result, line in zip(results, expected):
            self.assertFailed(result, exit_codes.INVALID_INPUT, line, before)
        # What argparse refuses, it says as it does, from both; the
        # code is the tool's.
        for (rc, out, err), prog, error in (
                (results[4], 'nova-orphans-manage allocations clean',
                 "argument --max-count: invalid int value: 'many'"),
                (results[5], 'openstack allocation orphan clean',
                 "argument --max-count: invalid int value: 'many'"),
                (results[6], 'nova-orphans-manage',
                 'unrecognized arguments: --config-file %s' %
                 self.conf_file)):
            lines = err.splitlines()
            self.assertEqual((exit_codes.INVALID_INPUT, ''), (rc, out), err)
            self.assertTrue(lines[0].startswith('usage: %s ' % prog), err)
            self.assertEqual('%s: error: %s' % (prog, error), lines[-1])
            self.assertNotIn('Traceback', err)
        self.assertEqual(before, self.placement.dump_state())


# The databases on MariaDB, as production runs them: the rows where the
# databases decide the code. Not the compute API's down cell: the test
# makes it by renaming a table under nova's running API, which on sqlite
# nova reads as a cell that does not answer; on MariaDB the openstack
# command then printed no listing at all (seen in CI, not yet explained):
# not the state the row is about. The unreadable cell's row runs here.
ExitCodesMariaDBTestCase = base.on_mariadb(
    ExitCodesTestCase, 'test_0_nothing_found', 'test_3_orphans_listed',
    'test_3_max_count', 'test_4_repaired', 'test_1_repair_failed',
    'test_2_and_5_cell_unreadable', 'test_6_unsupported_schema')
