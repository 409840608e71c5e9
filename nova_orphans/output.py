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
stdout. Every format draws on the same columns and cells (``columns``,
``cells``): value and csv print plain fields (resources as
``VCPU=1,MEMORY_MB=512``, an empty field for nothing), json and yaml
the values themselves. Tables are for people: drawn by cliff's table
formatter, as the osc plugin's are, so both front ends fit a terminal
the same way, and closed by the report's summary (app/sentences.py
words it; closing_lines fits it to the terminal).
"""

import argparse
import json
import os
import shutil
import sys
import textwrap

from cliff.formatters import commaseparated
from cliff.formatters import table as cliff_table
from cliff.formatters import value as cliff_value
from cliff import utils as cliff_utils

from nova_orphans.engine import model
from nova_orphans.engine import projects
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
              'command', 'cloud', 'ended', 'modified', 'entries')

TABLE = 'table'
# The key of journals list's and prune's rows that holds a journal.
JOURNAL = 'journal'
VALUE = 'value'
# An empty field in value format.
EMPTY_VALUE = '-'
# Formats of plain fields, for scripts that split lines.
PLAIN_FORMATS = ('value', 'csv')
# Every list format both front ends offer; "prometheus" is list's own.
FORMATS = ('table', 'json', 'value', 'csv', 'yaml')


# Standard classes first, in the order nova's flavors name them.
STANDARD_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')


def format_resources(resources):
    return ', '.join('%s=%s' % item for item in sorted(resources.items()))


def plain_resources(resources):
    """``VCPU=1,MEMORY_MB=512``: one field, standard classes first."""
    return ','.join('%s=%d' % item for item in _ordered(resources))


def _ordered(amounts):
    order = [rc for rc in STANDARD_CLASSES if rc in amounts]
    order += sorted(rc for rc in amounts if rc not in STANDARD_CLASSES)
    return [(rc, amounts[rc]) for rc in order]


def header(key):
    """A column's table header, the same in both front ends."""
    if key in HEADERS:
        return HEADERS[key]
    if key in PROVIDER_HEADERS:
        return PROVIDER_HEADERS[key]
    return key.replace('_', ' ').capitalize()


def columns(dicts, fmt, long=False):
    """The keys shown for these rows: every key, except in a table that
    is not ``long``, which shows the short set.

    A restore of a provider clean has rows of both kinds: the
    providers' keys follow the allocations', empty where a row has none.
    """
    providers = any('uuid' in d for d in dicts)
    allocations = not dicts or any('consumer' in d for d in dicts)
    keys, short = [], set()
    if allocations:
        keys += model.FINDING_KEYS
        short |= set(TABLE_COLUMNS)
    if providers:
        keys += [k for k in model.PROVIDER_KEYS if k not in keys]
        short |= set(PROVIDER_TABLE_COLUMNS)
    if dicts and OUTCOME in dicts[0]:
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
    if key == 'resources' and isinstance(value, dict):
        if fmt == TABLE:
            return format_resources(value)
        if fmt not in PLAIN_FORMATS:
            return value
        value = plain_resources(value)
    if value is None and (fmt == TABLE or fmt in PLAIN_FORMATS):
        value = ''
    if key == JOURNAL and fmt == TABLE and value:
        # Every journal a table lists is in one directory, which its
        # summary names: a path would not fit, whole, at 80 columns.
        value = os.path.basename(value)
    if fmt == VALUE and value == '':
        return EMPTY_VALUE
    return value


def cells(dicts, keys, fmt):
    return [tuple(cell(k, d.get(k), fmt) for k in keys) for d in dicts]


def rows_as_dicts(findings, outcomes=None):
    rows = [f.to_dict() for f in findings]
    if outcomes is not None:
        for row, outcome in zip(rows, outcomes):
            row['outcome'] = str(outcome)
    return rows


def iter_dicts(findings):
    """rows_as_dicts' rows one at a time, for render_json to stream."""
    for f in findings:
        yield f.to_dict()


def render_json(rows, stream):
    """``json.dump(rows, stream, indent=2)`` and a newline, byte for byte.

    ``rows`` can be any iterable: each row is written (in batches of a
    thousand) once it is made, so what is printed is never all in
    memory at once. Every key and value is encoded by json.dumps; only
    a row's layout, as json.dump lays out an object in a list, is made
    here, from a template of its keys (made once per set of keys).
    json's indenting encoder (json.dump, a JSONEncoder with an indent)
    runs in pure Python through nested functions that refer to each
    other, a reference cycle on every call, which nothing collects
    while a listing is shown (memory.paused): one call per row held 37
    MiB more at 14,701 rows (tools/bench at 10,000 compute nodes).
    """
    rows = iter(rows)
    for first in rows:
        break
    else:
        stream.write('[]\n')
        return
    templates, nested = {}, {}
    stream.write('[\n  ' + _json_row(first, templates, nested))
    batch = []
    for row in rows:
        batch.append(',\n  ' + _json_row(row, templates, nested))
        if len(batch) == 1000:
            stream.write(''.join(batch))
            batch = []
    batch.append('\n]\n')
    stream.write(''.join(batch))


def _json_row(row, templates, nested):
    """One row as json.dumps(row, indent=2) writes it in a list."""
    if type(row) is not dict or not row or not all(
            type(k) is str for k in row):
        return json.dumps(row, indent=2).replace('\n', '\n  ')
    keys = tuple(row)
    template = templates.get(keys)
    if template is None:
        template = templates[keys] = '{\n%s\n  }' % ',\n'.join(
            '    ' + json.dumps(k).replace('%', '%%') + ': %s' for k in keys)
    return template % tuple([_json_value(v, nested) for v in row.values()])


def _json_value(value, nested):
    """A row's value, as json.dumps(row, indent=2) writes it. The few
    distinct {str: int} dicts rows hold (a flavor's resources) are
    encoded once each.
    """
    if type(value) is str:
        return json.dumps(value)
    if value is None:
        return 'null'
    # Only {str: int}: 1, 1.0 and True are equal keys, not equal JSON.
    if type(value) is dict and all(
            type(k) is str and type(v) is int for k, v in value.items()):
        key = tuple(value.items())
        text = nested.get(key)
        if text is None:
            text = nested[key] = json.dumps(value, indent=2).replace(
                '\n', '\n    ')
        return text
    return json.dumps(value, indent=2).replace('\n', '\n    ')


def width_options(max_width=None, fit_width=None):
    """``--max-width``/``--fit-width`` with cliff's defaults, read now.

    As openstackclient: the options win over ``CLIFF_MAX_TERM_WIDTH`` and
    ``CLIFF_FIT_WIDTH``; a table on a terminal is fitted to it anyway.
    """
    if max_width is None:
        max_width = int(os.environ.get('CLIFF_MAX_TERM_WIDTH') or 0)
    if not fit_width:
        fit_width = bool(int(os.environ.get('CLIFF_FIT_WIDTH') or 0))
    return argparse.Namespace(max_width=max_width, fit_width=fit_width,
                              print_empty=False)


def render_table(rows, stream, verbose=False, max_width=None,
                 fit_width=None, keys=None, selected=None):
    """Rows as cliff draws a table, fitted as ``openstack`` fits its own,
    but for what it never does: split a value (a uuid, a name, a path)
    over lines. Returns the headers of the columns left out.

    On a terminal narrower than the table, the columns fit_columns may
    drop are left out until the rest fits whole (named below the table
    by the caller, dropped_note). When it still does not fit, or every
    column was asked for (``verbose``, ``selected``), each row is a
    table of its own, a line per field (as ``openstack server show``
    prints one), with every column: nothing is left out, nothing split.

    ``keys``: the columns of other records than findings (journals,
    projects); findings have theirs (``columns``). Rows of both kinds
    of findings (a restore of a provider clean) make a table each, the
    allocations' first. ``selected`` (-c): only these columns.
    """
    options = width_options(max_width, fit_width)
    width = _table_width(options)
    dropped = []
    kinds = [rows] if keys is not None else [
        [r for r in rows if 'consumer' in r],
        [r for r in rows if 'consumer' not in r]]
    for kind in kinds:
        if not kind and keys is None:
            continue
        shown = select(keys or columns(
            kind, TABLE, long=verbose or bool(selected)), selected)
        data = cells(kind, shown, TABLE)
        fitted, fitted_data, left_out = shown, data, []
        if not (verbose or selected):
            fitted, fitted_data, left_out = fit_columns(shown, data, width)
        headers = [header(k) for k in fitted]
        if width is None or table_width(headers, fitted_data) <= width:
            cliff_table.TableFormatter().emit_list(headers, fitted_data,
                                                   stream, options)
            dropped += [h for h in left_out if h not in dropped]
            continue
        for row in data:
            emit_box([header(k) for k in shown], row, stream, width)
    return dropped


# cliff's options for a table drawn as it is: its values are wrapped
# already (see emit_box), and cliff must not wrap them again.
_AS_DRAWN = argparse.Namespace(max_width=sys.maxsize, fit_width=False,
                               print_empty=False)


def emit_box(headers, row, stream, width):
    """One row as a table of its own, a line per field, within
    ``width``: each value wrapped at its spaces, never inside a word
    (cliff would wrap at the hyphens of a uuid). A word longer than
    the room (a path) is kept whole and makes its box wider.
    """
    room = max(1, width - 7 - max(len(h) for h in list(headers) + [
        'Field']))
    values = [_wrapped(value, room) for value in row]
    cliff_table.TableFormatter().emit_one(headers, values, stream, _AS_DRAWN)


def _wrapped(value, room):
    if not isinstance(value, str) or len(value) <= room:
        return value
    return '\n'.join(wrap(line, room) for line in value.split('\n'))


def sort_rows(rows, names, descending=False):
    """``rows`` (dicts) sorted as cliff's ``--sort-column`` sorts a
    table: by each of ``names`` (a key, or a header, as -c takes them,
    in any case and with underscores for spaces), the first first; an
    empty value after the others (before them, ``descending``); names of
    no column ignored.
    """
    wanted = []
    for name in names or ():
        folded = name.lower().replace('_', ' ')
        key = next((k for k in (rows[0] if rows else ()) if name == k or
                    folded in (header(k).lower(), k.replace('_', ' '))),
                   None)
        if key is not None:
            wanted.append(key)
    for key in reversed(wanted):
        rows = sorted(rows, key=lambda r: (
            r.get(key) is None, cell(key, r.get(key), TABLE)),
            reverse=descending)
    return rows


def select(keys, selected):
    """The ``keys`` that -c (``selected``) names, in their order; every
    key without -c. -c takes keys (``resource_provider``), and a
    table's headers too (``Provider UUID``), as openstack's -c does.
    """
    if not selected:
        return list(keys)
    wanted = set(selected)
    shown = [k for k in keys if k in wanted or header(k) in wanted]
    if not shown:
        raise exception.InvalidInput(reason=_(
            'no column named %(selected)s; the columns are %(keys)s') % {
            'selected': ', '.join(selected), 'keys': ', '.join(keys)})
    return shown


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
    order = [k for k in DROP_ORDER if k in keys] + [
        k for k in reversed(keys) if k not in KEPT and k not in DROP_ORDER]
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


def render(rows, fmt, stream, verbose=False, max_width=None,
           fit_width=None, keys=None, selected=None):
    """Rows (dicts) in any of FORMATS; json streams an iterable.

    ``keys``: the columns of other records than findings (see
    render_table); ``selected``: -c. Returns the headers of the columns
    a table left out for its width.
    """
    if fmt == TABLE:
        return render_table(list(rows), stream, verbose, max_width,
                            fit_width, keys, selected)
    if fmt == 'json' and not selected:
        render_json(rows, stream)
        return []
    rows = list(rows)
    shown = select(keys or columns(rows, fmt), selected)
    if fmt == 'json':
        render_json([{k: r.get(k) for k in shown} for r in rows], stream)
    else:
        _formatter(fmt).emit_list(shown, cells(rows, shown, fmt), stream,
                                  argparse.Namespace(quote_mode='nonnumeric'))
    return []


def amounts(resources):
    """``VCPU=2, MEMORY_MB=1024``: standard classes first."""
    return ', '.join('%s=%d' % item for item in _ordered(resources))


def project_records(totals):
    """(keys, dicts) of engine.projects.ProjectTotal records, for
    render_records: one row per project.
    """
    return projects.PROJECT_KEYS, [t.to_dict() for t in totals]


def _formatter(fmt):
    """cliff's formatter of a plain or yaml format."""
    formatter = {'value': cliff_value.ValueFormatter,
                 'csv': commaseparated.CSVLister}.get(fmt)
    if formatter is None:
        # PyYAML only for yaml: every run would pay for its import.
        from cliff.formatters import yaml_format
        formatter = yaml_format.YAMLFormatter
    return formatter()


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


def closing_lines(report, table, command_line, dropped=(), width=None,
                  err_width=None):
    """(stdout, stderr): the lines that follow a report's rows, as both
    front ends print them. On stdout, under a table only: the columns
    it left out, its summary (the "Outcomes:" and "Next:" lines); on
    stderr, in every format, the report's notes. ``command_line(cmd)``
    writes a report.CommandLine as the front end's users type it.
    ``width`` and ``err_width``: each stream's (line_width), to which
    its lines are wrapped, a command with backslashes.
    """
    out = []
    if table:
        if dropped:
            out.append(wrap(dropped_note(dropped), width))
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
