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
"""Rendering findings, the same for both front ends.

JSON is the contract: a list of objects with exactly
``model.FINDING_KEYS`` (plus ``outcome`` for repairs), nothing else on
stdout. A report is rendered as cliff renders any listing: ``listing``
makes its (columns, rows), the same for both front ends in every format
(-c applied), and a cliff formatter prints them: ``openstack`` finds
them in the commands' own formatter namespaces (setup.cfg), and
``nova-orphans-manage`` calls the same classes (``FORMATTERS``). value
and csv print plain fields (resources as ``VCPU=1,MEMORY_MB=512``, an
empty field for nothing), json and yaml the values themselves. Tables
are for people: ``TableFormatter`` fits cliff's table to a terminal
without splitting a value, and the report's summary closes it
(app/sentences.py words it; closing_lines fits it to the terminal).
"""

import argparse
import json
import os
import shutil
import sys
import textwrap

from cliff.formatters import base as cliff_base
from cliff.formatters import commaseparated
from cliff.formatters import json_format
from cliff.formatters import table as cliff_table
from cliff.formatters import value as cliff_value
from cliff.formatters import yaml_format
from cliff import utils as cliff_utils

from nova_orphans.engine import model
from nova_orphans.engine import projects
from nova_orphans.engine import shapes
from nova_orphans import exception
from nova_orphans.i18n import _

TABLE_COLUMNS = ('consumer', 'consumer_type', 'resource_provider_name',
                 'host', 'reason', 'action', 'resources')
# Short headers: cliff narrows a column to fit, never its header.
HEADERS = {'consumer_type': 'Type', 'resource_provider': 'Provider UUID',
           'resource_provider_name': 'Provider', 'root_provider': 'Root',
           'project_id': 'Project', 'user_id': 'User'}
PROVIDER_TABLE_COLUMNS = ('uuid', 'name', 'host', 'reason', 'action',
                          'allocations', 'orphan_allocations')
PROVIDER_HEADERS = {'uuid': 'UUID', 'root_provider': 'Root',
                    'parent_provider': 'Parent',
                    'compute_node': 'Compute node', 'allocations': 'Allocs',
                    'orphan_allocations': 'Orphan allocs'}
OUTCOME = 'outcome'
# What a table narrower than its rows never leaves out (see
# fit_columns): what a row is (a consumer, a provider's uuid, a journal
# and its run, a project), why (its reason), what became of it (its
# outcome), and what picks a journal (when its run started, and when a
# restore of it last ended).
KEPT = frozenset(('consumer', 'uuid', 'journal', 'run', 'project_id',
                  'reason', 'outcome', 'started', 'restored'))
# What it leaves out first, in this order, until the rest fits whole;
# then any other column but the KEPT ones, the rightmost first.
DROP_ORDER = ('consumer_type', 'host', 'resources', 'action',
              'allocations', 'orphan_allocations', 'resource_provider_name',
              'name',
              # journals list and prune
              'restored_by', 'restored_into', 'placement', 'not_applied',
              'command', 'cloud', 'ended', 'modified', 'entries',
              # list --group-by host, whose rows are their hosts
              'provider', 'free', 'free_after_clean', 'held')

TABLE = 'table'
JSON = 'json'
PROMETHEUS = 'prometheus'
# A key a row of another kind does not have (a provider's row in a
# restore of a providers clean has no consumer): not in its JSON object,
# nor in its table.
ABSENT = type('Absent', (), {'__repr__': lambda self: 'ABSENT'})()
# The key of journals list's and prune's rows that holds a journal.
JOURNAL = 'journal'
VALUE = 'value'
# An empty field in value format.
EMPTY_VALUE = '-'
# Formats of plain fields, for scripts that split lines.
PLAIN_FORMATS = ('value', 'csv')
# Every list format both front ends offer; "prometheus" is list's own.
FORMATS = ('table', 'json', 'value', 'csv', 'yaml')

# A host view's fields of amounts by class, and its shapes' counts
# (engine.hosts.HOST_KEYS).
AMOUNT_KEYS = frozenset(('held', 'free', 'free_after_clean'))
FITS = 'fits'


# ``VCPU=1,MEMORY_MB=512``: one field, classes in engine.shapes' order.
plain_resources = shapes.plain


def _fits(fits, fmt):
    """A host view's ``fits``: in a table two lines per shape, its
    name and ``now N, after clean M`` (a narrow column); plain,
    ``NAME:N:M`` joined by ``;``.
    """
    if fmt == TABLE:
        return '\n'.join(_('%(shape)s\n  now %(now)d, after clean '
                           '%(after_clean)d') % f for f in fits)
    return ';'.join('%(shape)s:%(now)d:%(after_clean)d' % f for f in fits)


def header(key):
    """A column's table header, the same in both front ends."""
    return (HEADERS.get(key) or PROVIDER_HEADERS.get(key) or
            key.replace('_', ' ').capitalize())


def _provider(row):
    if isinstance(row, dict):
        return 'uuid' in row
    return isinstance(row, model.ProviderFinding)


def _merged(first, second):
    """The keys of both, each list's in its order (the keys both have
    are in the same order in both).
    """
    keys, start = [], 0
    for key in first:
        if key in second:
            at = second.index(key)
            keys += second[start:at]
            start = at + 1
        keys.append(key)
    return keys + list(second[start:])


def columns(rows, fmt, long=False, outcome=None):
    """The keys shown for these rows (findings, or their dicts): every
    key, except in a table that is not ``long``, which shows the short
    set. ``outcome``: whether they have one (by default, whether the
    first dict has).

    A restore of a provider clean has rows of both kinds: the keys of
    both, each kind's in its own order (its table's and its JSON
    object's).
    """
    providers = any(_provider(r) for r in rows)
    allocations = not rows or not all(_provider(r) for r in rows)
    if outcome is None:
        outcome = bool(rows) and OUTCOME in rows[0]
    keys, short = [], set()
    if allocations:
        keys = list(model.FINDING_KEYS)
        short |= set(TABLE_COLUMNS)
    if providers:
        keys = _merged(keys, model.PROVIDER_KEYS)
        short |= set(PROVIDER_TABLE_COLUMNS)
    if outcome:
        keys.append(OUTCOME)
        short.add(OUTCOME)
    if fmt == TABLE and not long:
        keys = [k for k in keys if k in short]
    return keys


def cell(key, value, fmt):
    """One field as ``fmt`` prints it: in value format, an empty field
    is ``-``, so that splitting a line on blanks finds every field in
    its place.
    """
    if (key == 'resources' or key in AMOUNT_KEYS) and isinstance(value, dict):
        if fmt == TABLE and key == 'resources':
            return ', '.join('%s=%s' % kv for kv in sorted(value.items()))
        if fmt == TABLE:
            # A class a line: a host view's table is narrow.
            return '\n'.join('%s=%d' % item for item in shapes.ordered(value))
        if fmt not in PLAIN_FORMATS:
            return value
        value = plain_resources(value)
    elif key == FITS and isinstance(value, list):
        if fmt not in PLAIN_FORMATS and fmt != TABLE:
            return value
        value = _fits(value, fmt)
    if value is None and fmt in PLAIN_FORMATS:
        value = ''
    if key == JOURNAL and fmt == TABLE and value and value is not ABSENT:
        # Every journal a table lists is in one directory, which its
        # summary names: a path would not fit, whole, at 80 columns.
        value = os.path.basename(value)
    return EMPTY_VALUE if fmt == VALUE and value == '' else value


def cells(dicts, keys, fmt):
    """The rows' fields in ``keys``' order, one row at a time; in a
    table and in JSON, a key a row does not have is ABSENT.
    """
    missing = ABSENT if fmt in (TABLE, JSON) else None
    for d in dicts:
        yield tuple([cell(k, d.get(k, missing), fmt) for k in keys])


def listing(report, fmt, long=False, selected=None):
    """(columns, rows) of a report (app.report.Report) for ``fmt``'s
    formatter: the columns -c (``selected``) names, else those of the
    format (a table's short set unless ``long``); one row at a time,
    for JSON to stream. The metrics' one row is their text.
    """
    if report.keys is not None:
        keys, dicts = list(report.keys), report.rows
    else:
        keys = columns(report.rows, fmt, long=long or bool(selected),
                       outcome=(report.outcomes is not None
                                if report.findings else None))
        dicts = report.iter_dicts()
    keys = select(keys, selected)
    if fmt == PROMETHEUS:
        return ['metrics'], [[report.metrics]]
    return keys, cells(dicts, keys, fmt)


def named(keys, names):
    """The keys of ``names`` (a key, or a header), as --sort-column
    takes them; names of no column ignored, as cliff ignores them.
    """
    return [k for name in names or () for k in keys
            if name in (k, header(k))]


def rows_as_dicts(findings, outcomes=None):
    rows = [f.to_dict() for f in findings]
    if outcomes is not None:
        for row, outcome in zip(rows, outcomes):
            row['outcome'] = str(outcome)
    return rows


def iter_dicts(findings):
    """rows_as_dicts' rows one at a time, for a JSON list to stream."""
    return (f.to_dict() for f in findings)


# cliff's options for a table drawn as it is: its values are wrapped
# already (see emit_box), and cliff must not wrap them again.
_AS_DRAWN = argparse.Namespace(max_width=sys.maxsize, fit_width=False,
                               print_empty=False)


def emit_box(headers, row, stream, width):
    """One row as a table of its own, a line per field, within
    ``width``: each value wrapped at its spaces, never inside a word
    (cliff would wrap at the hyphens of a uuid). Where a value's word (a
    journal's name) leaves too little room beside the headers, the
    headers are wrapped too, their next lines indented by a space; a
    word longer than any room (a path) is kept whole and makes its box
    wider.
    """
    longest = max(len(word) for value in row for word in
                  str('' if value is None else value).split() + [''])
    headers = [_wrapped(h, max(4, width - 7 - longest), indent=' ')
               for h in headers]
    room = max(1, width - 7 - max(_text_width(h) for h in headers + [
        'Field']))
    values = [_wrapped(value, room) for value in row]
    cliff_table.TableFormatter().emit_one(headers, values, stream, _AS_DRAWN)


def _wrapped(value, room, indent=''):
    if not isinstance(value, str) or len(value) <= room:
        return value
    if indent:
        # A header: its words broken only when nothing else fits.
        return '\n'.join(textwrap.wrap(
            value, room, subsequent_indent=indent, break_on_hyphens=False))
    return '\n'.join(wrap(line, room) for line in value.split('\n'))


def select(keys, selected):
    """The ``keys`` that -c (``selected``) names, in their order; every
    key without -c. Each name is a key (``resource_provider``) or a
    table's header (``Provider UUID``), in every format; a name that is
    neither is refused, whatever else is named.
    """
    if not selected:
        return list(keys)
    names = set(keys) | {header(k) for k in keys}
    unknown = [name for name in selected if name not in names]
    if unknown:
        raise exception.InvalidInput(reason=_(
            'no column named %(selected)s; the columns are %(keys)s') % {
            'selected': ', '.join(unknown), 'keys': ', '.join(keys)})
    wanted = set(selected)
    return [k for k in keys if k in wanted or header(k) in wanted]


def _text_width(value):
    text = '' if value is None else str(value)
    return max([len(line) for line in text.splitlines()] or [0])


def table_width(headers, data):
    """The width of cliff's table of these rows, no cell split."""
    widths = [max([_text_width(h)] + [_text_width(row[i]) for row in data])
              for i, h in enumerate(headers)]
    return sum(widths) + 3 * len(widths) + 1


def fit_columns(keys, data, width):
    """(keys, data, headers dropped): the columns of a table that fit
    ``width`` whole, dropping those not KEPT (DROP_ORDER first) while
    the table is wider, as ``openstack server list`` shows fewer
    columns than ``--long``; but never one that tells two rows apart
    (a consumer's allocations on two providers differ by their
    provider alone). With no width (not a terminal: a pipe keeps
    cliff's table) nothing is dropped.
    """
    if width is None:
        return keys, data, []
    keys = list(keys)
    # A host view's row is its host (a finding's, its consumer).
    kept = KEPT | {'host'} if FITS in keys else KEPT
    order = [k for k in DROP_ORDER if k in keys and k not in kept] + [
        k for k in reversed(keys) if k not in kept and k not in DROP_ORDER]
    distinct = len(set(data))
    dropped = []
    for key in order:
        if table_width([header(k) for k in keys], data) <= width:
            break
        index = keys.index(key)
        rest = [row[:index] + row[index + 1:] for row in data]
        if len(set(rest)) < distinct:
            continue
        keys.pop(index)
        data = rest
        dropped.append(header(key))
    return keys, data, dropped


def dropped_note(dropped):
    """The line that says which columns a narrow table left out."""
    return _('Not shown, for the terminal\'s width: %(columns)s '
             '(--verbose shows every column, -f json every field).') % {
        'columns': ', '.join(dropped)}


def _table_width(options):
    """The width cliff fits a table to, or None if it does not fit it."""
    if options.max_width > 0:
        return options.max_width
    if options.fit_width or sys.stdout.isatty():
        return cliff_utils.terminal_width() or None
    return None


class TableFormatter(cliff_table.TableFormatter):
    """cliff's table, fitted as ``openstack`` fits its own, but for what
    it never does: split a value (a uuid, a name, a path) over lines.

    On a terminal narrower than the table, the columns fit_columns may
    drop are left out until the rest fits whole, and named on a line
    under the table (dropped_note). When it still does not fit, or
    every column was asked for (``--long``, -c), each row is a table of
    its own, a line per field (as ``openstack server show`` prints one),
    with every column: nothing is left out, nothing split. Rows of two
    kinds (a restore of a provider clean: the allocations', then the
    providers') make a table each, of the columns each has. No table of
    no rows (unless --print-empty): the summary says there are none.
    """

    def emit_list(self, column_names, data, stdout, parsed_args):
        width = _table_width(parsed_args)
        every = getattr(parsed_args, 'long', False) or bool(
            parsed_args.columns)
        kinds = {}
        for row in data:
            present = tuple(i for i, v in enumerate(row) if v is not ABSENT)
            kinds.setdefault(present, []).append(
                tuple(['' if row[i] is None else row[i] for i in present]))
        if not kinds and parsed_args.print_empty:
            super().emit_list([header(k) for k in column_names], [], stdout,
                              parsed_args)
        dropped = []
        # The allocations' table first (sorted() keeps the rest's order).
        for present, rows in sorted(kinds.items(), key=lambda kind: (
                'consumer' not in [column_names[i] for i in kind[0]])):
            shown = [column_names[i] for i in present]
            fitted, fitted_rows, left_out = shown, rows, []
            if not every:
                fitted, fitted_rows, left_out = fit_columns(shown, rows,
                                                            width)
            headers = [header(k) for k in fitted]
            if width is None or table_width(headers, fitted_rows) <= width:
                super().emit_list(headers, fitted_rows, stdout, parsed_args)
                dropped += [h for h in left_out if h not in dropped]
                continue
            for row in rows:
                emit_box([header(k) for k in shown], row, stdout, width)
        if dropped:
            stdout.write(wrap(dropped_note(dropped), width) + '\n')


class JSONFormatter(json_format.JSONFormatter):
    """cliff's JSON, byte for byte (``json.dump`` of the rows' objects,
    and a newline), written as the rows come, a thousand at a time: what
    is printed is never all in memory at once. A key a row does not have
    (ABSENT) is not in its object.
    """

    def emit_list(self, column_names, data, stdout, parsed_args):
        indent = None if getattr(parsed_args, 'noindent', False) else 2
        first, between, last = (('[\n  ', ',\n  ', '\n]\n') if indent
                                else ('[', ', ', ']\n'))
        batch, sep = [], first
        for row in data:
            text = json.dumps({k: v for k, v in zip(column_names, row)
                               if v is not ABSENT}, indent=indent)
            batch.append(sep + (text.replace('\n', '\n  ') if indent
                                else text))
            sep = between
            if len(batch) == 1000:
                stdout.write(''.join(batch))
                batch = []
        batch.append(last if sep is between else '[]\n')
        stdout.write(''.join(batch))


class PrometheusFormatter(cliff_base.ListFormatter):
    """node_exporter textfile-collector metrics of the run (see
    nova_orphans.metrics) instead of its rows: the one row is the
    exposition text (see listing).
    """

    def add_argument_group(self, parser):
        pass

    def emit_list(self, column_names, data, stdout, parsed_args):
        for row in data:
            stdout.write(row[0])


# What each format's rows are printed by: the classes setup.cfg's
# formatter namespaces name, which nova-orphans-manage calls too.
FORMATTERS = {TABLE: TableFormatter, JSON: JSONFormatter,
              'value': cliff_value.ValueFormatter,
              'csv': commaseparated.CSVLister,
              'yaml': yaml_format.YAMLFormatter,
              PROMETHEUS: PrometheusFormatter}


def amounts(resources):
    """``VCPU=2, MEMORY_MB=1024``: in engine.shapes' order."""
    return ', '.join('%s=%d' % item for item in shapes.ordered(resources))


def project_records(totals):
    """(keys, dicts) of engine.projects.ProjectTotal records, for
    render_records: one row per project.
    """
    return projects.PROJECT_KEYS, [t.to_dict() for t in totals]


def line_width(stream, max_width=None):
    """The columns a line of prose may take on ``stream``, or None: the
    table's --max-width when given (below 1: none), else a terminal's.
    """
    if max_width is not None:
        return max_width if max_width > 0 else None
    if getattr(stream, 'isatty', lambda: False)():
        return shutil.get_terminal_size().columns
    return None


def wrap(line, width, command=False):
    """``line`` in lines of at most ``width``; one that names a
    ``command`` is continued with backslashes, so that it still pastes
    as one.
    """
    if width is None or len(line) <= width:
        return line
    if not command:
        return '\n'.join(textwrap.wrap(line, width, break_long_words=False,
                                       break_on_hyphens=False))
    return ' \\\n'.join(textwrap.wrap(
        line, max(width - 2, 20), break_long_words=False,
        break_on_hyphens=False, subsequent_indent='    '))


def closing_lines(report, table, command_line, width=None, err_width=None):
    """(stdout, stderr): the lines that follow a report's rows, as both
    front ends print them. On stdout, under a table only, its summary
    (the "Outcomes:" and "Next:" lines); on stderr, in every format, the
    report's notes. ``command_line(cmd)`` writes a report.CommandLine
    as the front end's users type it. ``width`` and ``err_width``: each
    stream's (line_width), to which its lines are wrapped, a command
    with backslashes.
    """
    out = []
    if table:
        out += [wrap(line.render(command_line), width,
                     line.command is not None) for line in report.summary]
    return out, [wrap(line.render(command_line), err_width,
                      line.command is not None) for line in report.notes]


def error_line(error, stream):
    """The one line of a run a known fault (or a bug) stopped, fitted to
    ``stream`` when it is a terminal: ``ERROR: `` and what happened.
    """
    return wrap(_('ERROR: %(error)s') % {'error': error},
                line_width(stream))
