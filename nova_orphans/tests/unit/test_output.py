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
import argparse
import csv
import io
import json
import types

import fixtures
from oslotest import base

from nova_orphans.app import report as report_mod
from nova_orphans.app import results
from nova_orphans.app import sentences
from nova_orphans.engine import model
from nova_orphans import exception
from nova_orphans import outcomes
from nova_orphans import output

VM = '11111111-1111-1111-1111-111111111111'
VM2 = '22222222-2222-2222-2222-222222222222'
RP = 'aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa'
RP2 = 'bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb'


def row(consumer=VM, rp=RP, action='delete_consumer',
        resources=None, **kw):
    r = {'consumer': consumer, 'consumer_type': 'instance',
         'instance': consumer, 'resource_provider': rp,
         'resource_provider_name': 'compute-1', 'root_provider': rp,
         'host': 'compute-1', 'cell': 'cell1', 'reason': 'deleted_instance',
         'action': action,
         'resources': resources or {'VCPU': 2, 'MEMORY_MB': 2048,
                                    'DISK_GB': 20},
         'project_id': 'p', 'user_id': 'u', 'details': 'Deleted.'}
    r.update(kw)
    return r


def parsed(*argv):
    """The options of a command whose formatters are output.FORMATTERS'
    (as both front ends add them: --max-width, --fit-width ...), with
    -c and --long, parsed now (cliff's defaults read the environment).
    """
    parser = argparse.ArgumentParser()
    for formatter in output.FORMATTERS.values():
        formatter().add_argument_group(parser)
    parser.add_argument('-c', action='append', dest='columns', default=[])
    parser.add_argument('--long', action='store_true')
    return parser.parse_args(argv)


def emit(rows, fmt='table', *argv, keys=None):
    """What ``fmt``'s formatter prints of ``rows`` (dicts of findings,
    or of ``keys``), as both front ends call it (output.listing).
    """
    args = parsed(*argv)
    report = report_mod.Report(0, rows=rows, keys=keys, findings=False)
    columns, data = output.listing(report, fmt, args.long, args.columns)
    out = io.StringIO()
    output.FORMATTERS[fmt]().emit_list(columns, data, out, args)
    return out.getvalue()


def notes(text):
    """The columns the note under a table names as left out."""
    joined = ' '.join(text.split())
    if 'Not shown' not in joined:
        return []
    return joined.split('width: ')[1].split(' (--verbose')[0].split(', ')


class TableTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        for name in ('CLIFF_MAX_TERM_WIDTH', 'CLIFF_FIT_WIDTH'):
            self.useFixture(fixtures.EnvironmentVariable(name))
        # No terminal, whatever runs the tests.
        self.terminal = self.useFixture(fixtures.MockPatch(
            'cliff.utils.terminal_width', return_value=None)).mock

    def render(self, rows, *argv):
        return emit(rows, 'table', *argv)

    def test_not_fitted_when_not_a_terminal(self):
        self.assertEqual(
            '+--------------------------------------+----------+-------'
            '----+-----------+------------------+-----------------+----'
            '--------------------------------+\n'
            '| Consumer                             | Type     | Provid'
            'er  | Host      | Reason           | Action          | Res'
            'ources                          |\n'
            '+--------------------------------------+----------+-------'
            '----+-----------+------------------+-----------------+----'
            '--------------------------------+\n'
            '| 11111111-1111-1111-1111-111111111111 | instance | comput'
            'e-1 | compute-1 | deleted_instance | delete_consumer | DIS'
            'K_GB=20, MEMORY_MB=2048, VCPU=2 |\n'
            '+--------------------------------------+----------+-------'
            '----+-----------+------------------+-----------------+----'
            '--------------------------------+\n',
            self.render([row()]))

    def test_max_width(self):
        """At 100 columns the columns that do not fit whole are left out,
        last the provider's name; no value is split over lines.
        """
        expected = (
            '+--------------------------------------+-----------+-------'
            '-----------+-----------------+\n'
            '| Consumer                             | Provider  | Reaso'
            'n           | Action          |\n'
            '+--------------------------------------+-----------+-------'
            '-----------+-----------------+\n'
            '| 11111111-1111-1111-1111-111111111111 | compute-1 | delet'
            'ed_instance | delete_consumer |\n'
            '+--------------------------------------+-----------+-------'
            '-----------+-----------------+\n')
        note = ("Not shown, for the terminal's width: Type, Host, "
                "Resources (--verbose shows every column, -f json\nevery "
                "field).\n")
        self.assertEqual(expected + note,
                         self.render([row()], '--max-width', '100'))
        out = self.render([row()], '--max-width', '80')
        self.assertEqual(['Type', 'Host', 'Resources', 'Action'],
                         notes(out))
        self.assertEqual(71, max(map(len, out.splitlines()[:5])))
        self.assertEqual(
            "Not shown, for the terminal's width: Type, Host, Resources "
            "(--verbose shows every column, -f json every field).",
            output.dropped_note(['Type', 'Host', 'Resources']))
        wide = self.render([row()])
        self.useFixture(fixtures.EnvironmentVariable(
            'CLIFF_MAX_TERM_WIDTH', '100'))
        self.assertEqual(expected + note, self.render([row()]))
        # The option wins over the variable; less than 1: not fitted.
        self.assertEqual(wide, self.render([row()], '--max-width', '0'))

    def test_fit_width(self):
        wide = self.render([row()])
        # As cliff: the terminal's width is the limit; there is none.
        self.assertEqual(wide, self.render([row()], '--fit-width'))
        self.terminal.return_value = 100
        self.assertEqual(self.render([row()], '--max-width', '100'),
                         self.render([row()], '--fit-width'))
        self.useFixture(fixtures.EnvironmentVariable('CLIFF_FIT_WIDTH', '1'))
        self.assertEqual(self.render([row()], '--max-width', '100'),
                         self.render([row()]))

    def test_outcome_column(self):
        lines = self.render([dict(row(), outcome='done')],
                            '--max-width', '0').splitlines()
        self.assertTrue(lines[1].endswith('| Outcome |'), lines[1])
        self.assertTrue(lines[3].endswith('| done    |'), lines[3])

    def test_verbose_row_per_table_when_columns_cannot_fit(self):
        """Fourteen columns at cliff's narrowest take 155 characters: at
        100 each row is a table of its own, a line per field.
        """
        border = '+---------------+--------------------------------------+\n'
        first = (
            border +
            '| Field         | Value                                |\n' +
            border +
            '| Consumer      | %s |\n' % VM +
            '| Type          | instance                             |\n'
            '| Instance      | %s |\n' % VM +
            '| Provider UUID | %s |\n' % RP +
            '| Provider      | compute-1                            |\n'
            '| Root          | %s |\n' % RP +
            '| Host          | compute-1                            |\n'
            '| Cell          | cell1                                |\n'
            '| Reason        | deleted_instance                     |\n'
            '| Action        | delete_consumer                      |\n'
            '| Resources     | DISK_GB=20, MEMORY_MB=2048, VCPU=2   |\n'
            '| Project       | p                                    |\n'
            '| User          | u                                    |\n'
            '| Details       | Deleted.                             |\n'
            + border)
        out = self.render([row(), row(VM2)], '--long', '--max-width', '100')
        self.assertEqual(first + first.replace(VM, VM2), out)
        # Wide enough, or not fitted: one table, a row per finding.
        wide = self.render([row(), row(VM2)], '--long')
        self.assertEqual(6, len(wide.splitlines()))

    def test_never_drops_what_tells_rows_apart(self):
        """A consumer's allocations on two providers differ by the
        provider alone: a narrow table keeps it (or draws boxes), and
        drops what it can instead.
        """
        rows = [row(), row(rp=RP2, resource_provider_name='compute-1:eth0')]
        out = self.render(rows, '--max-width', '90')
        self.assertEqual(['Type', 'Host', 'Resources', 'Action'],
                         notes(out))
        self.assertEqual(
            ['Consumer', 'Provider', 'Reason'],
            [c.strip() for c in out.splitlines()[1].strip('|').split('|')])
        # Narrower: a box per row, with every column of the table.
        out = self.render(rows, '--max-width', '60')
        self.assertEqual([], notes(out))
        lines = out.splitlines()
        self.assertEqual(2 * 11, len(lines))
        self.assertEqual(['Consumer', 'Type', 'Provider', 'Host', 'Reason',
                          'Action', 'Resources'],
                         [line.split('|')[1].strip() for line in lines[3:10]])
        self.assertIn('| Provider  | compute-1:eth0 ', out)
        self.assertLessEqual(max(map(len, lines)), 60)

    def test_boxes_split_no_word(self):
        """cliff wraps a value at its hyphens, inside a uuid: a box wraps
        it at its spaces, and a word longer than the room (a path) widens
        its box rather than be cut.
        """
        details = ('Instance %s was deleted; its allocation on %s is an '
                   'orphan.' % (VM, RP))
        text = self.render([row(details=details)], '--long', '--max-width',
                           '70')
        self.assertIn(VM, text)
        self.assertIn(RP, text)
        self.assertLessEqual(max(map(len, text.splitlines())), 70)
        self.assertEqual(details, ' '.join(
            line.split('|')[2].strip() for line in text.splitlines()
            if line.startswith('| Details') or line.startswith('|    ')))
        long_word = '/' + 'x' * 80
        self.assertIn('| %s |' % long_word, self.render(
            [row(details=long_word)], '--long', '--max-width', '70'))

    def test_journals_by_their_file(self):
        """A table names a journal by its file (the summary names the
        directory); other formats keep the path.
        """
        rows = [{'journal': '/var/lib/nova-orphans/journal-1.jsonl',
                 'run': VM, 'started': '2026-11-28T17:36:41+00:00'}]
        keys = ('journal', 'run', 'started')
        self.assertIn('| journal-1.jsonl | %s |' % VM, emit(
            rows, 'table', '--max-width', '0', keys=keys))
        self.assertTrue(emit(rows, 'value', keys=keys).startswith(
            '/var/lib/nova-orphans/journal-1.jsonl '))

    def test_journals_fit_60_columns(self):
        """A journal named as clean names it (the longest process id a
        machine gives) beside "Restored into": whole, within 60 columns,
        the headers wrapped where the name leaves them no room.
        """
        name = 'journal-20261128T173641.661609Z-4194304.jsonl'
        run = {'journal': '/var/lib/nova-orphans/' + name, 'run': VM,
               'command': 'clean', 'cloud': '/etc/nova/nova.conf',
               'placement': 'http://192.168.122.10/placement',
               'host': 'controller-1', 'started': '2026-11-28T17:36:41',
               'ended': 'completed', 'entries': 6, 'not_applied': 0,
               'restored': '2026-11-28T17:40:01',
               'restored_into': 'http://192.168.122.10/placement',
               'restored_by': 'nova-orphans-manage'}
        for width in (60, 80, 100):
            lines = emit([run], 'table', '--max-width', str(width),
                         keys=tuple(run)).splitlines()
            self.assertLessEqual(max(map(len, lines)), width)
            self.assertIn('| %s |' % name, '\n'.join(lines))
        # At 60, "Restored into" on two lines, the second indented.
        lines = emit([run], 'table', '--max-width', '60',
                     keys=tuple(run)).splitlines()
        at = lines.index(next(line for line in lines
                              if 'http://192.168.122.10/placement' in line
                              and line.startswith('| Restored')))
        self.assertTrue(lines[at + 1].startswith('|  into '), lines)

    def test_rows_of_two_kinds_make_a_table_each(self):
        """A restore of a provider clean: the allocations' table, then
        the providers', each of its own columns; in JSON each row has
        its own keys.
        """
        provider = {'uuid': RP, 'name': 'compute-1', 'root_provider': RP,
                    'parent_provider': None, 'host': 'compute-1',
                    'cell': 'cell1', 'compute_node': RP,
                    'reason': 'deleted_compute_node',
                    'action': 'restore_provider', 'allocations': 1,
                    'orphan_allocations': 1, 'details': 'Back.',
                    'outcome': 'done'}
        rows = [provider, dict(row(), outcome='done')]
        headers = [[c.strip() for c in line.strip('|').split('|')]
                   for line in self.render(rows).splitlines()
                   if line.startswith('| ') and 'Outcome' in line]
        self.assertEqual(
            [['Consumer', 'Type', 'Provider', 'Host', 'Reason', 'Action',
              'Resources', 'Outcome'],
             ['UUID', 'Name', 'Host', 'Reason', 'Action', 'Allocs',
              'Orphan allocs', 'Outcome']], headers)
        self.assertEqual(rows, json.loads(emit(rows, 'json')))
        # Plain fields and YAML: every key of both, empty where a row of
        # the other kind has none.
        header, *lines = csv.reader(io.StringIO(emit(rows, 'csv')))
        self.assertEqual(set(model.FINDING_KEYS) | set(model.PROVIDER_KEYS) |
                         {'outcome'}, set(header))
        # Each kind's keys in its own order.
        for kind in (model.FINDING_KEYS, model.PROVIDER_KEYS):
            self.assertEqual(list(kind), [k for k in header if k in kind])
        fields = [dict(zip(header, line)) for line in lines]
        self.assertEqual([('', RP), (VM, '')],
                         [(f['consumer'], f['uuid']) for f in fields])


class ColumnsTestCase(base.BaseTestCase):
    """-c: each name a key or a header, in every format; an unknown one
    refused whatever else is named.
    """

    def test_keys_and_headers(self):
        for fmt in ('value', 'csv', 'json', 'yaml'):
            self.assertEqual(
                emit([row()], fmt, '-c', 'consumer', '-c',
                     'resource_provider_name'),
                emit([row()], fmt, '-c', 'Consumer', '-c', 'Provider'), fmt)
        self.assertEqual('%s compute-1\n' % VM, emit(
            [row()], 'value', '-c', 'Provider', '-c', 'consumer'))
        # A table shows them whole, whatever its width.
        lines = emit([row()], 'table', '-c', 'Provider UUID', '-c', 'Host',
                     '--max-width', '60').splitlines()
        self.assertEqual(['Provider UUID', 'Host'], [
            c.strip() for c in lines[1].strip('|').split('|')])

    def test_unknown_name_refused(self):
        for fmt in output.FORMATS:
            for names in (['provider'], ['consumer', 'provider'],
                          ['consumer', 'provider', 'Project', 'nothing']):
                argv = [a for name in names for a in ('-c', name)]
                error = self.assertRaises(
                    output.exception.InvalidInput, emit, [row()], fmt, *argv)
                unknown = [n for n in names
                           if n not in ('consumer', 'Project')]
                self.assertEqual(
                    'Invalid input: no column named %s; the columns are %s'
                    % (', '.join(unknown), ', '.join(model.FINDING_KEYS)),
                    str(error), (fmt, names))


class JSONTestCase(base.BaseTestCase):
    """Byte for byte what json.dump(rows, indent=2) writes, and a
    newline (cliff's JSON), a row at a time.
    """

    def _check(self, rows, *argv):
        keys = sorted({k for r in rows for k in r}) or ['n']
        dumped = emit(rows, 'json', *argv, keys=keys)
        expected = [{k: r.get(k) for k in keys} for r in rows]
        self.assertEqual(json.dumps(expected, indent=None if argv else 2) +
                         '\n', dumped)

    def test_streams(self):
        # Rows are written as they are made, a thousand at a time, never
        # all held at once; the bytes are json.dump's.
        made = []
        written = []

        def rows():
            for i in range(2500):
                made.append(i)
                yield (i,)

        class Stream(io.StringIO):
            def write(self, text):
                written.append(len(made))
                return super().write(text)

        stream = Stream()
        output.JSONFormatter().emit_list(['n'], rows(), stream, parsed())
        self.assertEqual([1000, 2000, 2500], written)
        self.assertEqual(json.dumps([{'n': i} for i in range(2500)],
                                    indent=2) + '\n', stream.getvalue())

    def test_values(self):
        self._check([])
        self._check([{'n': 1}])
        self._check([{'s': 'caf\u00e9 "q" \\ \n\t\u2603', 'n': None,
                      't': True, 'f': False, 'i': -3, 'big': 10 ** 30,
                      'x': 1.5, 'e': {}, 'l': [],
                      'd': {'a': {'b': [1, {'c': None}, [2, 3]]}}}] * 3)
        # --noindent, as cliff's.
        self._check([{'a': 1, 'b': {'c': [1]}}] * 2, '--noindent')
        self._check([], '--noindent')

    def test_findings(self):
        rows = [row(), row(VM2, resources={'CUSTOM_X': 1}, cell=None)]
        self.assertEqual(json.dumps(rows, indent=2) + '\n',
                         emit(rows, 'json'))


class FormatsTestCase(base.BaseTestCase):
    """value, csv and yaml: the same fields as the osc commands print."""

    def render(self, fmt, rows):
        return emit(rows, fmt)

    def test_value_and_csv_are_plain_fields(self):
        rows = [row(cell=None), row(VM2, resources={'CUSTOM_X': 1,
                                                    'VCPU': 1})]
        self.assertEqual(
            '%s instance %s %s compute-1 %s compute-1 - deleted_instance '
            'delete_consumer VCPU=2,MEMORY_MB=2048,DISK_GB=20 p u Deleted.\n'
            '%s instance %s %s compute-1 %s compute-1 cell1 deleted_instance '
            'delete_consumer VCPU=1,CUSTOM_X=1 p u Deleted.\n' % (
                VM, VM, RP, RP, VM2, VM2, RP, RP),
            self.render('value', rows))
        lines = self.render('csv', rows).splitlines()
        self.assertEqual(
            '"consumer","consumer_type","instance","resource_provider",'
            '"resource_provider_name","root_provider","host","cell",'
            '"reason","action","resources","project_id","user_id",'
            '"details"', lines[0])
        self.assertEqual(
            '"%s","instance","%s","%s","compute-1","%s","compute-1","",'
            '"deleted_instance","delete_consumer",'
            '"VCPU=2,MEMORY_MB=2048,DISK_GB=20","p","u","Deleted."'
            % (VM, VM, RP, RP), lines[1])

    def test_yaml_keeps_the_values(self):
        text = self.render('yaml', [row(cell=None)])
        self.assertIn('  cell: null\n', text)
        self.assertIn('  resources:\n    DISK_GB: 20\n', text)


class SummaryTestCase(base.BaseTestCase):

    NEXT = 'nova-orphans-manage allocations clean --dry-run'

    def test_orphans_capacity_and_next_command(self):
        self.assertEqual([
            '3 orphaned allocation(s) of 2 consumer(s) on 2 resource '
            'provider(s) hold VCPU=5, MEMORY_MB=4096, DISK_GB=40, '
            'CUSTOM_GPU=1, NET_BW_EGR_KILOBIT_PER_SEC=1000.',
            'Projects most affected: p (2 consumer(s): VCPU=5, '
            'MEMORY_MB=4096, DISK_GB=40, CUSTOM_GPU=1, '
            'NET_BW_EGR_KILOBIT_PER_SEC=1000).',
            'Next: ' + self.NEXT],
            sentences.list_summary([
                row(),
                row(rp=RP2, resources={'VCPU': 1, 'CUSTOM_GPU': 1}),
                row(VM2, resources={'VCPU': 2, 'MEMORY_MB': 2048,
                                    'DISK_GB': 20,
                                    'NET_BW_EGR_KILOBIT_PER_SEC': 1000}),
                row(VM2, rp=RP2, action='none'),
            ], (), self.NEXT))

    def test_three_projects_most_affected_are_named(self):
        rows = [row('c%d' % n, project_id=p, resources=r) for n, (p, r) in
                enumerate([('a', {'VCPU': 1}), ('b', {'VCPU': 2}),
                           ('b', {'MEMORY_MB': 512}), ('c', {'VCPU': 4}),
                           (None, {'VCPU': 8}), (None, {'VCPU': 8}),
                           ('d', {'DISK_GB': 1})])]
        # A live instance to heal holds nothing: no project's orphan.
        rows.append(row('c9', action='heal', resources={}, project_id='e'))
        self.assertEqual(
            'Projects most affected: b (2 consumer(s): VCPU=2, '
            'MEMORY_MB=512), unknown project (2 consumer(s): VCPU=16), '
            'a (1 consumer(s): VCPU=1); 2 other project(s) (see '
            '--group-by project).',
            sentences.list_summary(rows, (), self.NEXT)[1])

    def test_project_records_in_every_format(self):
        keys, dicts = output.project_records(output.projects.totals([
            ('p', VM, {'MEMORY_MB': 2048, 'VCPU': 4}),
            ('p', VM, {'VCPU': 1}), (None, VM2, {'DISK_GB': 1})]))
        self.assertEqual(('project_id', 'consumers', 'allocations',
                          'resources'), keys)
        self.assertEqual([
            {'project_id': 'p', 'consumers': 1, 'allocations': 2,
             'resources': {'MEMORY_MB': 2048, 'VCPU': 5}},
            {'project_id': None, 'consumers': 1, 'allocations': 1,
             'resources': {'DISK_GB': 1}}], dicts)
        texts = {fmt: emit(dicts, fmt, '--max-width', '0', keys=keys)
                 for fmt in ('value', 'csv', 'table', 'json')}
        # An empty field is "-": every field stays in its place.
        self.assertEqual('p 1 2 VCPU=5,MEMORY_MB=2048\n- 1 1 DISK_GB=1\n',
                         texts['value'])
        self.assertEqual(
            '"project_id","consumers","allocations","resources"\n'
            '"p",1,2,"VCPU=5,MEMORY_MB=2048"\n'
            '"",1,1,"DISK_GB=1"\n', texts['csv'].replace('\r\n', '\n'))
        self.assertEqual(
            '+---------+-----------+--------+------------------------+\n'
            '| Project | Consumers | Allocs | Resources              |\n'
            '+---------+-----------+--------+------------------------+\n'
            '| p       |         1 |      2 | MEMORY_MB=2048, VCPU=5 |\n'
            '|         |         1 |      1 | DISK_GB=1              |\n'
            '+---------+-----------+--------+------------------------+\n',
            texts['table'])
        self.assertEqual(dicts, output.json.loads(texts['json']))

    def test_nothing_found_and_unreadable_cells(self):
        self.assertEqual(['No orphaned allocations found.'],
                         sentences.list_summary([], (), self.NEXT))
        self.assertEqual([
            'No orphaned allocations found.',
            'Cells not read: cell2, cell3; their consumers are '
            'unverifiable, never orphans.'],
            sentences.list_summary([row(action='none')], ('cell2', 'cell3'),
                                   self.NEXT))

    def test_unread_is_incomplete(self):
        """Something not read but a cell: warned of, and the run ends 2,
        or 5 with orphans (a clean as a list), never 0, 3 or 4.
        """
        why = 'neutron could not be asked (down)'
        self.assertEqual(['WARNING: neutron could not be asked (down).'],
                         sentences.unread_lines([why]))
        nova = model.NovaSnapshot(unread=[why])
        snap = model.Snapshot(placement=model.PlacementSnapshot(),
                              nova=nova)
        orphan = types.SimpleNamespace(is_orphan=True)
        self.assertEqual(
            [2, 5],
            [results.Listing(found, snap).exit_code
             for found in ([], [orphan])])
        listing = results.Listing([orphan], snap)
        refused = outcomes.failed('403', outcomes.CREDENTIALS_REFUSED)
        busy = outcomes.failed_by(exception.JournalBusy(path='j',
                                                        reason='in use'))
        self.assertEqual(
            [2, 5, 5, 1, 9, 12, 1],
            [results.Repair([orphan], rows, listing).exit_code
             for rows in ([], [outcomes.done()], [outcomes.dry_run()],
                          [outcomes.failed('500')], [refused],
                          [outcomes.done(), busy],
                          [busy, outcomes.failed('500')])])
        # Nor does a journal that cannot prove it is whole.
        self.assertEqual(9, results.Repair([orphan], [refused],
                                           unproven=['line']).exit_code)
        nova.unread = []
        self.assertEqual(4, results.Repair([orphan], [outcomes.done()],
                                           listing).exit_code)

    def test_instances_to_heal(self):
        self.assertEqual([
            '1 live instance(s) hold no allocations (missing_allocations); '
            '"clean --heal" creates them.',
            'Next: ' + self.NEXT],
            sentences.list_summary([row(action='heal')], (), self.NEXT))

    def test_outcomes(self):
        self.assertEqual(
            'Outcomes: 2 done, 2 failed, 1 skipped: interrupted.',
            sentences.outcome_summary([
                outcomes.done(), outcomes.failed('error 1'),
                outcomes.interrupted(),
                outcomes.failed('changed concurrently; run restore again'),
                outcomes.done()]))


class FailuresTestCase(base.BaseTestCase):

    def test_placement_down_is_one_cause(self):
        """Each row's message names its consumer and a connection object:
        one cause all the same, printed once with its count.
        """
        down = ('Placement request GET /allocations/%s failed: Unable to '
                'establish connection to http://placement/allocations/%s: '
                "NewConnectionError('<HTTPConnection object at 0x%s>: "
                "Failed to establish a new connection: [Errno 111] "
                "Connection refused')")
        rows = [outcomes.failed(down % (VM, VM, '7f0a1b2c')),
                outcomes.done(),
                outcomes.failed(down % (VM2, VM2, '7f0a1d3e')),
                outcomes.failed('changed concurrently; run restore again'),
                outcomes.failed('500 ' + 'x' * 100)]
        shown, causes = sentences.group_failures(rows)
        self.assertEqual([
            'failed: error 1', 'done', 'failed: error 1',
            'failed: changed concurrently; run restore again',
            'failed: error 2'], [str(o) for o in shown])
        self.assertEqual([outcomes.FAILED, outcomes.DONE] + [
            outcomes.FAILED] * 3, [o.kind for o in shown])
        self.assertEqual([
            'Error 1 (2 row(s)): ' + down % (VM, VM, '7f0a1b2c'),
            'Error 2 (1 row(s)): 500 ' + 'x' * 100],
            sentences.failure_lines(causes))

    def test_nothing_failed(self):
        self.assertEqual(([outcomes.done()], []),
                         sentences.group_failures([outcomes.done()]))


class LineWidthTestCase(base.BaseTestCase):
    """A table's closing lines fit the terminal, commands paste as one."""

    def test_prose_and_commands(self):
        line = ('6 orphaned allocation(s) of 5 consumer(s) on 4 resource '
                'provider(s) hold VCPU=34, MEMORY_MB=743424, DISK_GB=1642, '
                'NET_BW_EGR_KILOBIT_PER_SEC=1000.')
        wrapped = output.wrap(line, 100).splitlines()
        self.assertEqual(2, len(wrapped))
        self.assertLessEqual(max(map(len, wrapped)), 100)
        self.assertEqual(line, ' '.join(wrapped))
        command = ('Next: nova-orphans-manage --config-file /etc/nova/'
                   'nova.conf --config-dir /etc/nova/nova.conf.d allocations '
                   'clean --dry-run --host compute-1.example.org')
        wrapped = output.wrap(command, 60, command=True).splitlines()
        self.assertLessEqual(max(map(len, wrapped)), 60)
        self.assertTrue(all(w.endswith(' \\') for w in wrapped[:-1]))
        self.assertEqual(command.split(), [
            w for w in ' '.join(wrapped).split() if w != '\\'])
        self.assertEqual(command, output.wrap(command, None, command=True))

    def test_notes_fit_a_terminal_of_their_own(self):
        """The notes on stderr (the journal, the command that undoes
        the run) fit stderr's terminal; a path is never cut, the
        command still pastes as one.
        """
        path = ('/srv/the-cloud/state/nova-orphans/'
                'journal-20261128T173641.661609Z-1.jsonl')
        report = types.SimpleNamespace(summary=[], notes=[
            report_mod.Line('Journal: %s' % path),
            report_mod.Line('To undo: %(command)s', report_mod.CommandLine(
                'allocations', 'restore', '--journal', path))])

        def command_line(cmd):
            return ' '.join(['nova-orphans-manage', '--config-file',
                             '/etc/nova/nova.conf', cmd.category,
                             cmd.action] + cmd.argv)
        _out, err = output.closing_lines(report, True, command_line,
                                         err_width=80)
        lines = '\n'.join(err).splitlines()
        self.assertEqual(['Journal:', path], lines[:2])
        self.assertLessEqual(max(map(len, lines)), 80)
        self.assertEqual(command_line(report.notes[1].command).split(), [
            w for w in ' '.join(lines[2:]).split() if w != '\\'][2:])
        # Not a terminal: as they are.
        _out, err = output.closing_lines(report, True, command_line)
        self.assertEqual(['Journal: %s' % path,
                          'To undo: ' + command_line(
                              report.notes[1].command)], err)
