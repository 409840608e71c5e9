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
"""Rendering findings for nova-orphans-manage (the osc plugin uses cliff).

JSON is the contract: a list of objects with exactly
``model.FINDING_KEYS`` (plus ``outcome`` for repairs), nothing else on
stdout. Tables are for people.
"""

import json

import prettytable

from nova_orphans.engine import model

TABLE_COLUMNS = ('consumer', 'consumer_type', 'resource_provider_name',
                 'host', 'reason', 'action', 'resources')


def format_resources(resources):
    return ', '.join('%s=%s' % item for item in sorted(resources.items()))


def rows_as_dicts(findings, outcomes=None):
    rows = [f.to_dict() for f in findings]
    if outcomes is not None:
        for row, outcome in zip(rows, outcomes):
            row['outcome'] = outcome
    return rows


def render_json(rows, stream):
    """``json.dump(rows, stream, indent=2)`` and a newline, byte for byte.

    json indents in pure Python (only its compact encoder is in C), a
    few generator calls per value: each row is written here instead, its
    strings escaped by json's own C function. Anything but str, int,
    bool, None, dicts and lists is left to json.
    """
    if not rows:
        stream.write('[]\n')
        return
    stream.write('[\n')
    last = len(rows) - 1
    for start in range(0, len(rows), 1000):
        stream.write(''.join(
            '  ' + _json(row, '  ') + (',\n' if i < last else '\n]\n')
            for i, row in enumerate(rows[start:start + 1000], start)))


_STRING = json.encoder.encode_basestring_ascii


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


def render_table(rows, stream, verbose=False):
    columns = list(model.FINDING_KEYS if verbose else TABLE_COLUMNS)
    if rows and 'outcome' in rows[0]:
        columns.append('outcome')
    table = prettytable.PrettyTable([c.replace('_', ' ').capitalize()
                                     for c in columns])
    table.align = 'l'
    for row in rows:
        table.add_row([format_resources(row[c]) if c == 'resources'
                       else ('' if row[c] is None else row[c])
                       for c in columns])
    stream.write(table.get_string() + '\n')
