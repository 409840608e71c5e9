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
the same way, and closed by a summary.
"""

import argparse
import collections
import json
import os
import re
import shutil
import sys
import textwrap

from cliff.formatters import commaseparated
from cliff.formatters import table as cliff_table
from cliff.formatters import value as cliff_value
from cliff import utils as cliff_utils

from nova_orphans.engine import model
from nova_orphans.engine import projects
from nova_orphans.engine import reasons
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans import outcomes as outcomes_mod

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
# A failure text longer than this is shown as its error number.
SHORT_FAILURE = 80
_UUID = re.compile(r'[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?'
                   r'[0-9a-f]{12}', re.I)
_ADDRESS = re.compile(r' at 0x[0-9a-f]+', re.I)


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
    memory at once. json indents in pure Python (only its compact
    encoder is in C), a few generator calls per value: each row is
    written here instead, its strings escaped by json's own C function.
    Anything but str, int, bool, None, dicts and lists is left to json.
    """
    rows = iter(rows)
    for first in rows:
        break
    else:
        stream.write('[]\n')
        return
    # Rows are dicts with the same keys, mostly: their keys are
    # written once, in a template per set of keys. And the few distinct
    # values they nest (a flavor's resources) once each.
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


_STRING = json.encoder.encode_basestring_ascii


def _json_row(row, templates, nested):
    """_json(row, '  '), with the keys of a dict row from a template and
    its nested flat dicts from ``nested`` ({their items: JSON}).
    """
    if type(row) is not dict or not row:
        return _json(row, '  ')
    keys = tuple(row)
    template = templates.get(keys)
    if template is None:
        if not all(type(k) is str for k in keys):
            return _json(row, '  ')
        template = templates[keys] = '{\n%s\n  }' % ',\n'.join(
            '    ' + _STRING(k).replace('%', '%%') + ': %s' for k in keys)
    return template % tuple([
        _STRING(v) if type(v) is str else
        'null' if v is None else _json_nested(v, nested)
        for v in row.values()])


def _json_nested(value, nested):
    # Only {str: int}: 1, 1.0 and True are equal keys, not equal JSON.
    if type(value) is not dict or not all(
            type(k) is str and type(v) is int for k, v in value.items()):
        return _json(value, '    ')
    key = tuple(value.items())
    text = nested.get(key)
    if text is None:
        text = nested[key] = _json(value, '    ')
    return text


def _json(value, indent):
    """One value as ``json.dumps(value, indent=2)`` writes it at ``indent``."""
    if type(value) is str:
        return _STRING(value)
    if value is None:
        return 'null'
    if value is True:
        return 'true'
    if value is False:
        return 'false'
    if type(value) is int:
        return int.__repr__(value)
    inner = indent + '  '
    if type(value) is dict and all(type(k) is str for k in value):
        if not value:
            return '{}'
        return '{\n%s\n%s}' % (',\n'.join([
            inner + _STRING(k) + ': ' + (
                _STRING(v) if type(v) is str else
                'null' if v is None else _json(v, inner))
            for k, v in value.items()]), indent)
    if type(value) is list:
        if not value:
            return '[]'
        return '[\n%s\n%s]' % (',\n'.join(
            inner + _json(v, inner) for v in value), indent)
    return json.dumps(value, indent=2).replace('\n', '\n' + indent)


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
    return '\n'.join(
        '\n'.join(textwrap.wrap(line, room, break_long_words=False,
                                break_on_hyphens=False) or [''])
        for line in value.split('\n'))


def sort_rows(rows, names, descending=False):
    """``rows`` (dicts) sorted as cliff's ``--sort-column`` sorts a
    table: by each of ``names`` (a key, or a header, as -c takes them,
    in any case and with underscores for spaces), the first first; an
    empty value after the others; names of no column ignored.
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


def capacity(rows):
    """{resource class: amount} the rows' allocations hold, VCPU first."""
    total = collections.Counter()
    for row in rows:
        total.update(row['resources'])
    return amounts(total)


def amounts(resources):
    """``VCPU=2, MEMORY_MB=1024``: standard classes first."""
    return ', '.join('%s=%d' % item for item in _ordered(resources))


# The projects a list's summary names; "list --group-by project" has
# them all.
SUMMARY_PROJECTS = 3


def project_records(totals):
    """(keys, dicts) of engine.projects.ProjectTotal records, for
    render_records: one row per project.
    """
    return projects.PROJECT_KEYS, [t.to_dict() for t in totals]


def projects_line(totals):
    """The projects with most orphaned consumers, with what their
    orphans hold: whose quota usage the orphans are counted in.
    """
    named = ['%(project)s (%(consumers)d consumer(s): %(resources)s)' % {
        'project': t.project_id or _('unknown project'),
        'consumers': t.consumers, 'resources': amounts(t.resources)}
        for t in totals[:SUMMARY_PROJECTS]]
    more = len(totals) - SUMMARY_PROJECTS
    if more > 0:
        return _('Projects most affected: %(projects)s; %(more)d other '
                 'project(s) (see --group-by project).') % {
            'projects': ', '.join(named), 'more': more}
    return _('Projects most affected: %(projects)s.') % {
        'projects': ', '.join(named)}


def unread_lines(unread, services=()):
    """The warnings that say what a run could not read but its cells
    (each a sentence of results.Listing.unread), and then the other
    services a site rule needed and could not read (Zun's database or
    API, results.Listing.unreadable_services), one line each.
    """
    return [_('WARNING: %(what)s.') % {'what': what} for what in unread] + [
        _('WARNING: %(service)s could not be read (%(error)s); the '
          'consumers nova has no trace of are reported as unverifiable, '
          'never as orphans.') % {'service': s.label, 'error': s.error}
        for s in services]


def list_summary(rows, unreadable_cells=(), next_command=None):
    """The lines that close a human ``list``: what the orphans hold,
    and in which projects, what could not be read, and what to run
    next.
    """
    orphans = [r for r in rows if projects.charged(r['action'])]
    heal = [r for r in rows if r['action'] == reasons.HEAL]
    lines = []
    if orphans:
        lines.append(_(
            '%(orphans)d orphaned allocation(s) of %(consumers)d '
            'consumer(s) on %(providers)d resource provider(s) hold '
            '%(capacity)s.') % {
                'orphans': len(orphans),
                'consumers': len({r['consumer'] for r in orphans}),
                'providers': len({r['resource_provider'] for r in orphans}),
                'capacity': capacity(orphans)})
        lines.append(projects_line(projects.totals(
            (r['project_id'], r['consumer'], r['resources'])
            for r in orphans)))
    if heal:
        lines.append(_('%(count)d live instance(s) hold no allocations '
                       '(missing_allocations); "clean --heal" creates '
                       'them.') % {'count': len({r['consumer']
                                                 for r in heal})})
    if not orphans and not heal:
        lines.append(_('No orphaned allocations found.'))
    if unreadable_cells:
        lines.append(_('Cells not read: %(cells)s; their consumers are '
                       'unverifiable, never orphans.') % {
            'cells': ', '.join(unreadable_cells)})
    if (orphans or heal) and next_command:
        lines.append(_('Next: %(command)s') % {'command': next_command})
    return lines


def retries_line(retries):
    """What a run got over, or None: "12 requests retried after
    transient faults (placement 503: 9, placement connection: 4)."
    ``retries``: the run's clients.retry.Retries (or None).
    """
    if retries is None or not retries.requests:
        return None
    if retries.requests == 1:
        text = _('%(count)d request retried after transient faults '
                 '(%(faults)s).')
    else:
        text = _('%(count)d requests retried after transient faults '
                 '(%(faults)s).')
    return text % {
        'count': retries.requests,
        'faults': ', '.join('%s %s: %d' % (service, reason, n)
                            for (service, reason), n in sorted(
                                retries.counts.items()))}


def outcome_summary(outcomes):
    """One line counting the outcomes of a clean or restore, by kind."""
    counts = collections.Counter(counted(o) for o in outcomes)
    return _('Outcomes: %(counts)s.') % {'counts': ', '.join(
        '%d %s' % (n, o) for o, n in sorted(
            counts.items(), key=lambda item: (-item[1], item[0])))}


def counted(outcome):
    """How a summary counts an outcome: failures as one kind, each
    other outcome by its text.
    """
    if outcome.kind == outcomes_mod.FAILED:
        return outcome.kind
    return str(outcome)


def group_failures(outcomes):
    """(outcomes, causes): one cause per way the rows failed.

    Placement down fails every row alike with a long message, each
    naming its own consumer's URL: those rows are one cause, ``failed:
    error N``, and ``causes`` holds (N, how many rows, the first such
    row's full text), to be printed once. A short reason (``failed:
    changed concurrently; run restore again``) is its own id and stays
    on its row.
    """
    causes = collections.OrderedDict()
    keys = []
    for outcome in outcomes:
        if outcome.kind != outcomes_mod.FAILED:
            keys.append(None)
            continue
        text = outcome.detail
        key = _ADDRESS.sub('', _UUID.sub('{uuid}', text))
        keys.append(key)
        if key not in causes:
            causes[key] = [None, 0, text]
        causes[key][1] += 1
    numbered = [c for c in causes.values() if len(c[2]) > SHORT_FAILURE]
    for number, cause in enumerate(numbered, 1):
        cause[0] = number
    short = [o if k is None or not causes[k][0] else
             o.with_detail(_('error %(number)d') % {
                 'number': causes[k][0]})
             for o, k in zip(outcomes, keys)]
    return short, [tuple(c) for c in numbered]


def failure_lines(causes):
    """One line per numbered cause of failure, with its count."""
    return [_('Error %(number)d (%(count)d row(s)): %(text)s') % {
        'number': number, 'count': count, 'text': text}
        for number, count, text in causes]


def provider_list_summary(rows, unreadable_cells=(), next_command=None):
    """The lines that close a human ``providers list``."""
    orphans = [r for r in rows if r['action'] != 'none']
    lines = []
    if orphans:
        lines.append(_(
            '%(providers)d resource provider(s) in %(trees)d tree(s) of '
            'deleted compute nodes; %(allocations)d allocation(s) on them, '
            '%(orphans)d of them orphans.') % {
                'providers': len(orphans),
                'trees': len({r['root_provider'] for r in orphans}),
                'allocations': sum(r['allocations'] for r in orphans),
                'orphans': sum(r['orphan_allocations'] for r in orphans)})
    else:
        lines.append(_('No orphaned resource providers found.'))
    if unreadable_cells:
        lines.append(_('Cells not read: %(cells)s; their nodes\' trees '
                       'are unverifiable, and what they may own keeps a '
                       'deleted node\'s tree.') % {
            'cells': ', '.join(unreadable_cells)})
    if orphans and next_command:
        lines.append(_('Next: %(command)s') % {'command': next_command})
    return lines


def repairs_line(outcomes):
    """What was done to a provider clean's trees' orphaned allocations
    first.
    """
    counts = collections.Counter(counted(o) for o in outcomes)
    return _('Orphaned allocations on these trees, repaired first: '
             '%(outcomes)s.') % {'outcomes': ', '.join(
                 '%d %s' % (n, o) for o, n in sorted(
                     counts.items(), key=lambda item: (-item[1], item[0])))}


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
