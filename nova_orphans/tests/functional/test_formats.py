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
"""Both console scripts on the same cloud, in every format: one voice.

A script switching from ``nova-orphans-manage`` to ``openstack`` (or
reading both), or a person reading either, gets the same output: the
same rows in the same order with the same fields (JSON and YAML keys,
the CSV header, the table headers, ``VCPU=1,MEMORY_MB=512,DISK_GB=1``
in value and CSV, ``-`` for an empty value field), the same lines
closing a table (summary, projects, "Outcomes:", "Next:"), the same
stderr and the same exit code. What differs is only what each front end
is: the command lines it prints (``nova-orphans-manage --config-file
... allocations clean`` or ``openstack --os-cloud ... allocation orphan
clean``), and what the compute API cannot know (the cell, null, and the
details' wording).

The cloud is the sandbox's (tools/sandbox.py's seed): every situation
of the operators' documents, a retired host among them.
"""

import csv
import io
import json
import os
import re

import yaml

from nova_orphans.engine import model
from nova_orphans import exit_codes
from nova_orphans import output
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional import front_ends
from nova_orphans.tests.functional import test_debug
from nova_orphans.tests import runners

# What only nova's databases show.
DATABASE_ONLY = ('cell', 'details')
FORMATS = ('table', 'json', 'yaml', 'csv', 'value')
# openstack's words for nova-orphans-manage's category and action.
OSC_WORDS = {'allocation orphan journal': 'journals',
             'allocation orphan': 'allocations',
             'resource provider orphan': 'providers'}


class FormatsTestCase(front_ends.FrontEndsTestCase):

    def setUp(self):
        super().setUp()
        self.made = front_ends._sandbox().seed(self.placement, self.nova)
        self.cloud_state = self.placement.dump_state()

    def both(self, *commands):
        """[(manage's (rc, out, err), openstack's)] of each command, a
        tuple of nova-orphans-manage's words (category, action, options).
        """
        argvs = []
        for category, action, *options in commands:
            words = next(w for w, c in OSC_WORDS.items() if c == category)
            argvs += [self.manage_argv(category, action, *options),
                      self.openstack_argv(*(words.split() + [action] +
                                            list(options)))]
        results = []
        # A few at a time: each openstack run costs a core for a while.
        for start in range(0, len(argvs), 6):
            results += self.run_all(*argvs[start:start + 6])
        return list(zip(results[::2], results[1::2]))

    def commands(self, text):
        """``text`` with each command line written the same way."""
        text = re.sub(r'nova-orphans-manage --config-file \S+ ',
                      'TOOL ', text)

        def osc(match):
            return 'TOOL %s ' % OSC_WORDS[match.group(1)]
        return re.sub(r'openstack --os-cloud cloud (%s) ' % '|'.join(
            OSC_WORDS), osc, text)

    def rows(self, fmt, out):
        """The rows ``out`` prints, in order, without DATABASE_ONLY."""
        if fmt in ('json', 'yaml'):
            rows = json.loads(out) if fmt == 'json' else yaml.safe_load(out)
            return [{k: v for k, v in r.items() if k not in DATABASE_ONLY}
                    for r in rows]
        if fmt == 'csv':
            header, *lines = csv.reader(io.StringIO(out))
        else:
            header = self.keys
            # details, last, is words.
            lines = [line.split(' ', len(header) - 1)
                     for line in out.splitlines()]
        return [{k: v for k, v in zip(header, line)
                 if k not in DATABASE_ONLY} for line in lines]

    def assertSame(self, manage, osc, fmt):
        """Both front ends printed the same (see the module docstring)."""
        (m_rc, m_out, m_err), (o_rc, o_out, o_err) = manage, osc
        self.assertEqual(m_rc, o_rc, (m_err, o_err))
        self.assertEqual(self.commands(m_err), self.commands(o_err))
        if fmt == 'table':
            self.assertEqual(self.commands(m_out), self.commands(o_out))
        else:
            self.assertEqual(self.rows(fmt, m_out), self.rows(fmt, o_out))
        return self.commands(m_out), self.commands(m_err)

    def test_every_format_of_both_front_ends(self):
        self.keys = None
        commands = [('allocations', 'list', '-f', fmt) for fmt in FORMATS]
        commands += [('allocations', 'clean', '--dry-run', '-f', fmt)
                     for fmt in FORMATS]
        commands += [
            ('allocations', 'list', '--group-by', 'project'),
            ('allocations', 'list', '--host', 'devstack4'),
            ('allocations', 'list', '--all', '-f', 'json'),
            ('providers', 'list'), ('providers', 'list', '-f', 'json'),
            ('providers', 'clean', '--dry-run'),
            ('allocations', 'list', '-f', 'value', '-c', 'consumer', '-c',
             'instance'),
            # Without nova.conf, openstack's journal directory is another.
            ('journals', 'list', '--journal-dir', self.tmp)]
        results = self.both(*commands)
        json_rows = json.loads(results[1][0][1])
        self.keys = list(json_rows[0])
        for command, (manage, osc) in zip(commands, results):
            fmt = command[command.index('-f') + 1] if '-f' in command \
                else 'table'
            self.assertSame(manage, osc, fmt)
        # What they printed, in either front end's words.
        (rc, table, err), _osc = results[0]
        self.assertEqual((exit_codes.ORPHANS_FOUND, ''), (rc, err))
        self.assertEqual(
            ['6 orphaned allocation(s) of 5 consumer(s) on 4 resource '
             'provider(s) hold VCPU=34, MEMORY_MB=743424, DISK_GB=1642, '
             'NET_BW_EGR_KILOBIT_PER_SEC=1000.',
             'Projects most affected: 6f1e2d3c4b5a49788796a5b4c3d2e1f0 (5 '
             'consumer(s): VCPU=34, MEMORY_MB=743424, DISK_GB=1642, '
             'NET_BW_EGR_KILOBIT_PER_SEC=1000).',
             'Next: TOOL allocations clean --dry-run'],
            self.commands(table).splitlines()[-3:])
        (rc, dry, err), _osc = results[5]
        self.assertEqual((exit_codes.ORPHANS_FOUND, ''), (rc, err))
        self.assertEqual('Outcomes: 6 skipped: dry run.',
                         dry.splitlines()[-1])
        # The retired host's row, and its host, from both.
        (rc, retired, err), _osc = results[11]
        self.assertEqual((exit_codes.ORPHANS_FOUND, ''), (rc, err))
        self.assertEqual(
            ['migration', 'devstack4', 'devstack4', 'finished_migration',
             'delete_consumer'],
            [c.strip() for c in retired.splitlines()[3].split('|')[2:7]])
        # -f value: every field in its place, an empty one "-".
        self.assertEqual(
            ['%s %s' % (r['consumer'], r['instance'] or '-')
             for r in json_rows], results[-2][0][1].splitlines())
        self.assertIn(None, [r['instance'] for r in json_rows])
        self.assertEqual(
            [{k: ('-' if v is None else output.plain_resources(v)
                  if k == 'resources' else str(v))
              for k, v in r.items() if k not in DATABASE_ONLY}
             for r in json_rows], self.rows('value', results[4][0][1]))

    def in_process(self, category, action, *options):
        """(nova-orphans-manage's Result, openstack's) of one command in
        nova-orphans-manage's words, each run in this process
        (runners.manage_main, runners.openstack_shell).
        """
        words = next(w for w, c in OSC_WORDS.items() if c == category)
        variables = {k: None for k in os.environ if k.startswith('OS_')
                     and k not in runners.RUNNER_VARIABLES}
        variables.update(OS_CLIENT_CONFIG_FILE=self.clouds_yaml)
        return (runners.manage_main(['--config-file', self.conf_file,
                                     category, action] + list(options)),
                runners.openstack_shell(
                    ['--os-cloud', 'cloud'] + words.split() + [action] +
                    list(options), variables))

    def test_one_rule_for_columns(self):
        """-c in both front ends and every format: each name a key or a
        header, the same columns kept by both; a name that is neither
        refused, 127, whatever else is named.
        """
        for fmt in FORMATS:
            for names in (['provider'], ['consumer', 'provider'],
                          ['consumer', 'Project', 'nothing']):
                argv = ['-f', fmt] + [a for n in names for a in ('-c', n)]
                unknown = [n for n in names
                           if n not in ('consumer', 'Project')]
                for rc, out, err in self.in_process('allocations', 'list',
                                                    *argv):
                    self.assertEqual(
                        (exit_codes.INVALID_INPUT, '',
                         ['ERROR: Invalid input: no column named %s; the '
                          'columns are %s' % (', '.join(unknown), ', '.join(
                              model.FINDING_KEYS))]),
                        (rc, out, err.splitlines()), argv)
        rows = json.loads(self.manage_run('allocations', 'list', '-f',
                                          'json')[1])
        for argv, keys in (
                (('-c', 'consumer', '-c', 'Provider'),
                 ['consumer', 'resource_provider_name']),
                (('-c', 'Provider',), ['resource_provider_name']),
                (('-c', 'Provider UUID', '-c', 'host'),
                 ['resource_provider', 'host'])):
            for fmt in ('value', 'json', 'csv', 'table'):
                (m_rc, m_out, m_err), (o_rc, o_out, o_err) = \
                    self.in_process('allocations', 'list', '-f', fmt,
                                    '--max-width', '0', *argv)
                self.assertEqual(
                    (exit_codes.ORPHANS_FOUND, self.commands(m_out), m_err),
                    (o_rc, self.commands(o_out), o_err), (fmt, argv))
                self.assertEqual(exit_codes.ORPHANS_FOUND, m_rc, m_err)
                if fmt == 'json':
                    self.assertEqual([{k: r[k] for k in keys}
                                      for r in rows], json.loads(m_out))
                if fmt == 'value':
                    self.assertEqual(['%s' % ' '.join(
                        str(r[k] or '-') for k in keys) for r in rows],
                        m_out.splitlines())
        self.assertEqual(self.cloud_state, self.placement.dump_state())

    def test_clean_and_restore_of_both_front_ends(self):
        """A clean, the same cloud cleaned again after a restore, and a
        restore of each: the same rows, lines and exit codes, the
        journal's path aside.
        """
        journals = [os.path.join(self.tmp, 'j%d.jsonl' % n)
                    for n in (1, 2)]

        def journal(text):
            for path in journals:
                text = text.replace(path, 'JOURNAL')
            return self.commands(text)

        def same(manage, osc):
            for (m_rc, m_out, m_err), (o_rc, o_out, o_err) in zip(
                    manage, osc):
                self.assertEqual(m_rc, o_rc, (m_err, o_err))
                self.assertEqual(journal(m_out), journal(o_out))
                self.assertEqual(journal(m_err), journal(o_err))
            return manage

        clean = ('allocations', 'clean', '--journal')
        restore = ('allocations', 'restore', '--journal')
        # manage cleans, openstack restores its journal (both rows and
        # lines are kept), openstack cleans the same cloud again and
        # manage restores that.
        manage_clean = self.manage_run(*clean, journals[0])
        osc_restore = self.openstack_run('allocation', 'orphan', 'restore',
                                         '--journal', journals[0])
        osc_clean = self.openstack_run('allocation', 'orphan', 'clean',
                                       '--journal', journals[1])
        manage_restore = self.manage_run(*restore, journals[1])
        (rc, out, err), _restore = same([manage_clean, manage_restore],
                                        [osc_clean, osc_restore])
        self.assertEqual(exit_codes.REPAIRED, rc, err)
        self.assertEqual('Outcomes: 6 done.', out.splitlines()[-1])
        self.assertEqual([
            'Journal: JOURNAL',
            'To undo: TOOL allocations restore --journal JOURNAL'],
            journal(err).splitlines())
        rc, out, err = manage_restore
        self.assertEqual((exit_codes.REPAIRED, ''), (rc, err))
        self.assertEqual('Outcomes: 6 done.', out.splitlines()[-1])
        # Rows that say what was put back, never the clean's action.
        self.assertEqual(
            ['restore_allocation'] * 2 + ['restore_consumer'] * 2 +
            ['restore_allocation', 'restore_consumer'],
            [line.split('|')[6].strip() for line in out.splitlines()[3:9]])


class FormatsMariaDBTestCase(test_debug.DebugTests, base.on_mariadb(
        FormatsTestCase, 'test_every_format_of_both_front_ends')):
    """The databases on MariaDB, as production runs them: what the
    listing reads from them, in every format (clean's and restore's rows
    on MariaDB are test_clean's and test_restore's); and, on the same
    cloud, --debug of each front end and mode (test_debug).
    """
