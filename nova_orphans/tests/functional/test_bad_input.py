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
"""Bad input and errors, as an operator meets them at the console.

Each case runs the console script as a process and checks what the
operator sees: the documented exit code, one line on stderr and no
traceback, no database password anywhere, and placement left exactly
as it was (the cloud has an orphan, so any write would show).
"""

import configparser
import json
import os
import uuid as uuidlib

import fixtures

from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import faults
from nova_orphans.tests.functional import processes
from nova_orphans.tests import runners

INVALID_INPUT = 127
CONFIG_ERROR = 7
UNREACHABLE = 8
NOVA_UNREADABLE = 10
# Nothing could be checked (fast mode without placement's database).
INCOMPLETE = 2
REPAIR_FAILED = 1
PASSWORD = 's3cr3t-Pa55w0rd'
# Nothing listens on port 1 of the loopback interface.
MYSQL = 'mysql+pymysql://nova:%s@127.0.0.1:1/%%s' % PASSWORD


class BadInputTestCase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.host1 = self.add_node('host1')
        self.gone = self.nova.add_instance('cell1', host='host1',
                                           node='host1', vm_state='error')
        self.allocate(self.gone, self.host1)
        self.nova.force_delete_instance('cell1', self.gone)
        self.live = self.boot('host1', self.host1)
        self.before = self.placement.dump_state()
        self.journal = os.path.join(self.tmp, 'journal.jsonl')

    def conf(self, name='nova.conf', **sections):
        """A copy of the test's nova.conf with ``sections`` changed."""
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(self.conf_file)
        for section, values in sections.items():
            if not parser.has_section(section):
                parser.add_section(section)
            for key, value in values.items():
                parser[section][key] = value
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            parser.write(f)
        return path

    def assertRefused(self, argv, message, rc=INVALID_INPUT,
                      conf_file=None):
        """The documented code, one line naming the problem, nothing on
        stdout, no password and no change in placement.
        """
        code, out, err = runners.manage(
            *argv, conf_file=conf_file or self.conf_file)
        self.assertEqual(rc, code, err)
        self.assertEqual('', out)
        line, = err.splitlines() or [None]
        self.assertIn(message, line)
        self.assertNotIn(PASSWORD, err)
        self.assertEqual(self.before, self.placement.dump_state())
        return line

    # Configuration ------------------------------------------------------

    def test_missing_config(self):
        missing = os.path.join(self.tmp, 'missing.conf')
        self.assertRefused(
            ('allocations', 'list'),
            'ERROR: Configuration error: Failed to find some config files: %s'
            % missing, rc=CONFIG_ERROR, conf_file=missing)

    def test_unparsable_config(self):
        path = os.path.join(self.tmp, 'broken.conf')
        with open(path, 'w') as f:
            f.write('[placement\nendpoint = http://127.0.0.1:1\n')
        self.assertRefused(
            ('allocations', 'clean'),
            'ERROR: Configuration error: Failed to parse %s: at %s:1, Invalid '
            'section (must end with ]): \'[placement\'' % (path, path),
            rc=CONFIG_ERROR, conf_file=path)

    def test_unreadable_config(self):
        """A directory given as the config file: no traceback."""
        self.assertRefused(
            ('allocations', 'clean'),
            'ERROR: Configuration error: cannot read %s: Is a directory'
            % self.tmp, rc=CONFIG_ERROR, conf_file=self.tmp)

    def test_config_without_permission(self):
        if os.geteuid() == 0:
            self.skipTest('root reads files whatever their mode')
        path = self.conf('private.conf')
        os.chmod(path, 0)
        self.assertRefused(('allocations', 'clean'),
                           'ERROR: Configuration error: Failed to open some '
                           'config files: %s' % path, conf_file=path)

    def test_foreign_project_name(self):
        """Names are not resolved: a name would silently match nothing."""
        conf = self.conf(nova_orphans={'foreign_projects': 'service'})
        self.assertRefused(
            ('allocations', 'clean'),
            '[nova_orphans] foreign_projects: service is not a project id '
            '(32 hex digits); project names are not resolved: give the id '
            '("openstack project show -f value -c id NAME")',
            rc=CONFIG_ERROR, conf_file=conf)

    def assertUsageError(self, argv, message, prog='nova-orphans-manage'):
        """argparse's usage error: its usage and its error line on
        stderr, 127, nothing on stdout, no traceback, no change.
        """
        code, out, err = runners.manage(*argv, conf_file=self.conf_file)
        self.assertEqual((INVALID_INPUT, ''), (code, out), err)
        lines = err.splitlines()
        self.assertTrue(lines[0].startswith('usage: %s ' % prog), err)
        self.assertEqual('%s: error: %s' % (prog, message), lines[-1])
        self.assertNotIn('Traceback', err)
        self.assertEqual(self.before, self.placement.dump_state())

    def test_bad_option(self):
        self.assertUsageError(('allocations', 'clean', '--max-count', 'many'),
                              "argument --max-count: invalid int value: "
                              "'many'",
                              prog='nova-orphans-manage allocations clean')

    def test_option_after_the_category(self):
        code, out, err = runners.manage('allocations', 'list',
                                        '--config-file', self.conf_file)
        self.assertEqual((INVALID_INPUT, ''), (code, out))
        lines = err.splitlines()
        self.assertTrue(lines[0].startswith('usage: nova-orphans-manage '),
                        err)
        self.assertEqual(
            'nova-orphans-manage: error: unrecognized arguments: '
            '--config-file %s' % self.conf_file, lines[-1])
        self.assertNotIn('Traceback', err)
        self.assertEqual(self.before, self.placement.dump_state())

    def test_no_config_file_found(self):
        """Without --config-file, where oslo.config looked is named."""
        if any(os.path.exists(os.path.join(d, 'nova.conf'))
               for d in ('/etc/nova', '/etc')):
            self.skipTest('this machine has a nova.conf of its own')
        home = self.useFixture(fixtures.TempDir()).path
        done = runners.manage('allocations', 'list',
                              env=runners.environment(HOME=home))
        self.assertEqual((CONFIG_ERROR, ''), (done.returncode, done.stdout))
        self.assertEqual(
            'ERROR: Configuration error: no configuration file was found: '
            'looked '
            'for nova.conf and nova-orphans-manage.conf in ~/.nova, ~, '
            '/etc/nova, /etc; give one with --config-file PATH (before the '
            'category).\n', done.stderr)

    def test_bad_uuid(self):
        self.assertRefused(('allocations', 'clean', '--resource-provider',
                            'host1'), 'Invalid input: Resource provider '
                           'host1 is not a valid UUID')

    # Databases and placement ------------------------------------------

    def test_database_password_never_shown(self):
        """The API database is a MySQL server that does not listen (or
        whose driver is not installed): one line, without the password.
        """
        conf = self.conf(api_database={'connection': MYSQL % 'nova_api'},
                         database={'connection': MYSQL % 'nova'})
        line = self.assertRefused(('allocations', 'clean'),
                                  'ERROR: The nova API database '
                                  'mysql+pymysql://nova:***@127.0.0.1:1/'
                                  'nova_api could not be read: ',
                                  rc=NOVA_UNREADABLE, conf_file=conf)
        self.assertTrue(line.endswith('; check [api_database] connection'),
                        line)
        self.assertTrue(line.startswith('ERROR: '), line)

    def test_placement_database_password_never_shown(self):
        conf = self.conf(placement_database={
            'connection': MYSQL % 'placement'})
        self.assertRefused(('allocations', 'clean'),
                           'ERROR: The placement database '
                           'mysql+pymysql://nova:***@127.0.0.1:1/placement '
                           'could not be read: ',
                           rc=INCOMPLETE, conf_file=conf)

    def test_placement_unreachable(self):
        conf = self.conf(placement={'endpoint': 'http://127.0.0.1:1'})
        self.assertRefused(('allocations', 'clean'),
                           'ERROR: Placement request GET / failed: cannot '
                           'connect to http://127.0.0.1:1 ([Errno 111] '
                           'Connection refused); check that placement runs '
                           'there, and [placement] (its endpoint, or '
                           'auth_url, region_name and valid_interfaces)',
                           rc=UNREACHABLE, conf_file=conf)

    # Journals ---------------------------------------------------------

    def test_journal_not_json(self):
        with open(self.journal, 'w') as f:
            f.write('[DEFAULT]\ndebug = true\n')
        self.assertRefused(('allocations', 'restore', '--journal',
                            self.journal),
                           'Journal %s: line 1 is not a nova-orphans '
                           'journal entry (Expecting value'
                           % self.journal)

    def test_journal_missing(self):
        self.assertRefused(('allocations', 'restore', '--journal',
                            self.journal),
                           'Journal %s: No such file or directory'
                           % self.journal)

    def test_journal_in_missing_directory(self):
        path = os.path.join(self.tmp, 'nowhere', 'journal.jsonl')
        self.assertRefused(('allocations', 'clean', '--journal', path),
                           'Journal %s: directory %s does not exist'
                           % (path, os.path.dirname(path)))

    def test_state_path_cannot_be_created(self):
        """No --journal, and [nova_orphans] state_path cannot be made."""
        blocker = os.path.join(self.tmp, 'file')
        open(blocker, 'w').close()
        state = os.path.join(blocker, 'state')
        conf = self.conf(nova_orphans={'state_path': state})
        self.assertRefused(('allocations', 'clean'),
                           'Journal %s: cannot create the state directory'
                           % state, conf_file=conf)

    def test_journal_in_read_only_directory(self):
        if os.geteuid() == 0:
            self.skipTest('root writes to read-only directories')
        ro = os.path.join(self.tmp, 'ro')
        os.mkdir(ro, 0o500)
        path = os.path.join(ro, 'journal.jsonl')
        self.assertRefused(('allocations', 'clean', '--journal', path),
                           'Journal %s: not writable' % path)

    def test_journal_is_a_directory(self):
        self.assertRefused(('allocations', 'clean', '--journal', self.tmp),
                           'Journal %s: is a directory' % self.tmp)

    def test_truncated_journal(self):
        """The file cut short inside its last line (its run's end
        record): the entry that verifies is restored, and the journal
        is never called whole: 11, and what to check.
        """
        code, out, err = runners.manage('allocations', 'clean',
                                        '--journal', self.journal,
                                        conf_file=self.conf_file)
        self.assertEqual(4, code, err)
        with open(self.journal, 'rb') as f:
            data = f.read()
        with open(self.journal, 'wb') as f:
            f.write(data[:data.rindex(b'{"end"') + 20])
        code, out, err = runners.manage('allocations', 'restore',
                                        '--format', 'json', '--journal',
                                        self.journal,
                                        conf_file=self.conf_file)
        self.assertEqual(11, code, err)
        self.assertEqual(['done'], [r['outcome'] for r in json.loads(out)])
        self.assertEqual(self.before, self.placement.dump_state())
        run, end = err.splitlines()
        self.assertRegex(run, (
            r'^WARNING: journal %s: run \S+ \(clean on \S+, pid \d+, '
            r'started \S+; lines 1 to 3\) has no end record: the run was '
            r'killed \(SIGKILL, the OOM killer, a power cut\), or this file '
            r'was cut short at line 3 \(a partial copy, a full disk\)\. Its '
            r'1 entry\(ies\) that verify are those read above; any it wrote '
            r'after them are not in this file\.$') % self.journal)
        self.assertTrue(end.startswith('The journal cannot prove it is '
                                       'whole.'), end)

    def test_empty_journal(self):
        open(self.journal, 'w').close()
        self.assertRefused(('allocations', 'restore', '--journal',
                            self.journal),
                           'ERROR: Journal %s: is empty: it '
                           'is not a journal' % self.journal)

    def test_altered_journal_is_refused_before_any_write(self):
        """One number of the entry changed (valid JSON, as bit rot or a
        hand edit leaves it): refused, the dry run too, nothing written.
        """
        code, out, err = runners.manage('allocations', 'clean',
                                        '--journal', self.journal,
                                        conf_file=self.conf_file)
        self.assertEqual(4, code, err)
        self.assertNotEqual(self.before, self.placement.dump_state())
        self.before = self.placement.dump_state()
        with open(self.journal) as f:
            data = f.read()
        with open(self.journal, 'w') as f:
            f.write(data.replace('"VCPU": 1}', '"VCPU": 2}', 1))
        for dry_run in ((), ('--dry-run',)):
            self.assertRefused(('allocations', 'restore', '--journal',
                                self.journal) + dry_run,
                               'ERROR: Journal %s: line 2 '
                               'does not verify: the line was altered, or a '
                               'line of its run before it was removed, added '
                               'or moved' % self.journal)

    def test_journal_from_another_cloud(self):
        """A journal written against another placement is refused whole,
        before anything is written to this one.
        """
        other = self.useFixture(processes.OtherPlacement())
        node = self.nova.add_compute_node('cell1', 'elsewhere')
        stranger = str(uuidlib.uuid4())
        for method, path, body in (
                ('POST', '/resource_providers',
                 {'name': 'elsewhere', 'uuid': node}),
                ('PUT', '/resource_providers/%s/inventories' % node,
                 {'resource_provider_generation': 0,
                  'inventories': {'VCPU': {'total': 8}}}),
                ('PUT', '/allocations/' + stranger,
                 {'allocations': {node: {'resources': {'VCPU': 1}}},
                  'project_id': base.PROJECT, 'user_id': base.USER,
                  'consumer_generation': None})):
            resp = self.placement._http.request(
                method, other.endpoint + path, json=body,
                headers={'X-Auth-Token': 'admin',
                         'OpenStack-API-Version': 'placement 1.37'})
            self.assertLess(resp.status_code, 300, resp.text)
        there = self.conf('other.conf', placement={
            'endpoint': other.endpoint})
        code, out, err = runners.manage(
            'allocations', 'clean', '--reason', 'unknown_consumer',
            '--journal', self.journal, conf_file=there)
        self.assertEqual(4, code, err)
        self.assertRefused(('allocations', 'restore', '--journal',
                            self.journal), 'written against another cloud '
                           '(placement %s' % other.endpoint)

    # Errors -------------------------------------------------------------

    def test_failed_repair(self):
        """Placement fails the write: exit code 1, the row says why, and
        stderr has the failure and where the journal is, no traceback.
        """
        proxy = self.useFixture(faults.FaultProxy(self.placement.endpoint))
        proxy.inject('PUT', '/allocations/' + self.gone, status=500)
        conf = self.conf(placement={'endpoint': proxy.endpoint})
        code, out, err = runners.manage(
            'allocations', 'clean', '--format', 'json', '--journal',
            self.journal, conf_file=conf)
        self.assertEqual(REPAIR_FAILED, code, err)
        # A long cause is said once on stderr, the row names it.
        self.assertEqual(['failed: error 1'],
                         [r['outcome'] for r in json.loads(out)])
        cause, journal, undo = err.splitlines()
        self.assertEqual('Error 1 (1 row(s)): Placement request PUT '
                         '/allocations/%s failed: 500 injected by the test '
                         'proxy' % self.gone, cause)
        self.assertEqual('Journal: %s' % self.journal, journal)
        self.assertEqual('To undo: nova-orphans-manage --config-file %s '
                         'allocations restore --journal %s' % (
                             conf, self.journal), undo)
        self.assertEqual(self.before, self.placement.dump_state())
