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
"""The console script as an operator runs it: what reaches the terminal.

oslo.db and keystoneauth log their retries; on stderr those timestamped
lines used to come before the command's own one-line error. They now
go to the log file, or to stderr with --debug.
"""

import importlib.util
import logging
import os
import socket
import subprocess
import sys
import types

import fixtures

from nova_orphans.app import results
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional import front_ends
from nova_orphans.tests import runners
from nova_orphans.tests.unit.conf import test_conf

PASSWORD = 'Sup3rS3cret'


def _free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


HINT = ('; check that placement runs there, and [placement] (its endpoint, '
        'or auth_url, region_name and valid_interfaces)')


class ConsoleTestCase(base.FunctionalTestCase):

    CELLS = ('cell1', 'cell2')

    def setUp(self):
        super().setUp()
        host1 = self.add_node('host1')
        self.boot('host1', host1)
        self.mysql = 'mysql+pymysql://nova:%s@127.0.0.1:%d/nova' % (
            PASSWORD, _free_port())

    def run_checked(self, *argv, conf_file=None, ok=None):
        """runners.manage's Result, with no password in it, no traceback
        without --debug and, given ``ok``, that exit code.
        """
        done = runners.manage(*argv, conf_file=conf_file or self.conf_file)
        if ok is not None:
            self.assertEqual(ok, done.returncode, done.stderr)
        self.assertNotIn(PASSWORD, done.stdout + done.stderr)
        if '--debug' not in argv:
            self.assertRanCleanly(done)
        return done

    def conf(self, name, **sections):
        return self.nova.write_nova_conf(
            os.path.join(self.tmp, name), self.placement.endpoint,
            extra=dict({'nova_orphans': {'state_path': self.state_path}},
                       **sections))

    def requires_pymysql(self):
        if importlib.util.find_spec('pymysql') is None:
            self.skipTest('PyMySQL is not installed')

    def test_unreachable_api_database_is_one_line(self):
        self.requires_pymysql()
        conf = self.conf('mysql.conf',
                         api_database={'connection': self.mysql + '_api'})
        # Its own code, 10: a known fault, not a bug (255).
        done = self.run_checked('allocations', 'list', conf_file=conf,
                                ok=10)
        self.assertEqual('', done.stdout)
        lines = done.stderr.splitlines()
        self.assertEqual(1, len(lines), done.stderr)
        self.assertTrue(lines[0].startswith(
            'ERROR: The nova API database mysql+pymysql://nova:***@'
            '127.0.0.1:'), lines[0])

    def test_unreachable_cell_is_its_warning_alone(self):
        self.requires_pymysql()
        self.nova.set_cell_url('cell2', self.mysql)
        # Incomplete (2): the cell's consumers were not checked.
        done = self.run_checked('allocations', 'list', ok=2)
        lines = done.stderr.splitlines()
        self.assertEqual(1, len(lines), done.stderr)
        self.assertTrue(lines[0].startswith(
            'WARNING: cell cell2 could not be read ('), lines[0])

    def test_unreadable_sqlite_cell_is_its_warning_alone(self):
        self.nova.break_cell('cell2')
        # Incomplete (2): the cell's consumers were not checked.
        done = self.run_checked('allocations', 'list', ok=2)
        lines = done.stderr.splitlines()
        self.assertEqual(1, len(lines), done.stderr)
        self.assertTrue(lines[0].startswith(
            'WARNING: cell cell2 could not be read ('), lines[0])

    def test_placement_refusing_connections_is_one_line(self):
        url = 'http://127.0.0.1:%d/' % _free_port()
        conf = self.conf('refused.conf', placement={
            'endpoint': url, 'connect_retries': '1',
            'connect_retry_delay': '0.1'})
        # Its own code, 8, and the options to check.
        done = self.run_checked('allocations', 'list', conf_file=conf,
                                ok=8)
        self.assertEqual(
            ('', 'ERROR: Placement request GET / failed: cannot connect to '
                 '%s ([Errno 111] Connection refused)%s\n' % (url, HINT)),
            (done.stdout, done.stderr))

    def test_debug_and_log_file_keep_the_detail(self):
        url = 'http://127.0.0.1:%d/' % _free_port()
        conf = self.conf('refused.conf', placement={
            'endpoint': url, 'connect_retries': '1',
            'connect_retry_delay': '0.1'})
        log_file = os.path.join(self.tmp, 'orphans.log')
        done = self.run_checked('--log-file', log_file, 'allocations', 'list',
                                conf_file=conf, ok=8)
        self.assertEqual(1, len(done.stderr.splitlines()), done.stderr)
        retried = ('INFO nova_orphans.clients.retry [-] placement GET /: '
                   'connection; retrying in 0.10 s')
        with open(log_file) as f:
            self.assertIn(retried, f.read())
        done = self.run_checked('--debug', 'allocations', 'list',
                                conf_file=conf, ok=8)
        self.assertIn(retried, done.stderr)
        self.assertIn(
            '\nERROR: Placement request GET / failed: cannot connect to '
            '%s ([Errno 111] Connection refused)%s\n' % (url, HINT),
            done.stderr)


def _findings(sources, scope, progress=None, metrics=None, rows=True):
    """allocations.list_allocations as a run that logs a warning of this
    package and one of oslo.db's, then finds nothing.
    """
    logging.getLogger('nova_orphans').warning('a warning')
    logging.getLogger('oslo_db.sqlalchemy.engines').warning('a retry')
    nova = types.SimpleNamespace(unreadable_cells=[], unread=[],
                                 unreadable_services=[])
    return results.Listing([], types.SimpleNamespace(nova=nova))


class ConsoleLoggingTestCase(base.TestCase):
    """As the console script: stdout stays the output, stderr one line."""

    def setUp(self):
        super().setUp()
        self.conf_file = os.path.join(self.tmp, 'nova.conf')
        with open(self.conf_file, 'w') as f:
            f.write(test_conf.NOVA_CONF)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.app.allocations.list_allocations', _findings))

    def run_list(self, *argv):
        rc, out, err = runners.manage(*argv, 'allocations', 'list',
                                      '--format', 'json',
                                      conf_file=self.conf_file)
        self.assertEqual((0, '[]\n'), (rc, out), err)
        return err

    def test_no_log_records_on_stderr_by_default(self):
        self.assertEqual('', self.run_list())

    def test_debug_in_nova_conf_is_not_asked_on_the_command_line(self):
        with open(self.conf_file, 'a') as f:
            f.write('[DEFAULT]\ndebug = True\n')
        self.assertEqual('', self.run_list())

    def test_debug_shows_them_on_stderr(self):
        err = self.run_list('--debug')
        self.assertIn('WARNING nova_orphans [-] a warning', err)
        self.assertIn('WARNING oslo_db.sqlalchemy.engines [-] a retry', err)

    def test_log_file_gets_them(self):
        log_file = os.path.join(self.tmp, 'orphans.log')
        self.assertEqual('', self.run_list('--log-file', log_file))
        with open(log_file) as f:
            logged = f.read()
        self.assertIn('WARNING nova_orphans [-] a warning', logged)
        self.assertIn('WARNING oslo_db.sqlalchemy.engines [-] a retry',
                      logged)


class ImportsTestCase(base.TestCase):
    """What the console script's command imports before it reads."""

    def test_command_imports_no_keystoneauth(self):
        # A fast-mode list never reaches the API: its start-up must not
        # pay for keystoneauth (nor strutils' patterns, used on errors,
        # nor the ORM: engines are created only when a database is read).
        code = ('import sys, nova_orphans.cmd.manage; print(" ".join('
                'm for m in ("keystoneauth1", "requests", '
                '"oslo_utils.strutils", "sqlalchemy.orm") '
                'if m in sys.modules))')
        out = subprocess.run([sys.executable, '-c', code], check=True,
                             capture_output=True, text=True).stdout
        self.assertEqual('', out.strip())


class ClosedPipeTestCase(front_ends.FrontEndsTestCase):
    """Both console scripts with stdout into a pipe whose reader is gone
    (``| head -1``): the run's own exit code, its lines on stderr (the
    journal, the command that undoes it) all said, and nothing else: no
    error, no traceback. Processes: the pipe is the console script's own
    stdout.
    """

    def setUp(self):
        super().setUp()
        front_ends._sandbox().seed(self.placement, self.nova)

    def closed(self, argv):
        """(exit code, stderr) of ``argv``, its stdout a pipe whose read
        end is closed before it starts: every write to it fails.
        """
        read, write = os.pipe()
        os.close(read)
        try:
            proc = subprocess.Popen(
                argv, env=self.environment(), stdin=subprocess.DEVNULL,
                stdout=write, stderr=subprocess.PIPE, text=True)
        finally:
            os.close(write)
        err = proc.communicate(timeout=runners.TIMEOUT)[1]
        return proc.returncode, err

    def held(self):
        """{consumer: its allocations}: what a restore puts back."""
        return {c: d['allocations']
                for c, d in self.placement.dump_state().items()}

    def test_the_runs_own_exit_code_and_lines(self):
        before = self.held()
        for front_end, argv_of, words in (
                ('manage', self.manage_argv, ['allocations']),
                ('openstack', self.openstack_argv, ['allocation', 'orphan'])):
            journal = os.path.join(self.tmp, front_end + '.jsonl')
            for action, fmt in (('list', 'table'), ('list', 'json')):
                self.assertEqual((3, ''), self.closed(argv_of(
                    *words, action, '-f', fmt)), front_end)
            rc, err = self.closed(argv_of(*words, 'clean', '--journal',
                                          journal))
            self.assertEqual(4, rc, err)
            self.assertNotEqual(before, self.held())
            journal_line, undo = err.splitlines()
            self.assertEqual('Journal: %s' % journal, journal_line)
            self.assertTrue(undo.startswith('To undo: '), undo)
            self.assertTrue(undo.endswith(' restore --journal %s' % journal),
                            undo)
            self.assertEqual((4, ''), self.closed(argv_of(
                *words, 'restore', '--journal', journal, '-f', 'json')))
            self.assertEqual(before, self.held())
