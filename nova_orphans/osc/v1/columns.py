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
"""Findings as cliff rows: the manage command's JSON keys, nothing else.

Column names are ``model.FINDING_KEYS`` (plus ``outcome``) verbatim, so
``-f json`` is interchangeable with ``nova-orphans-manage allocations
... --format json``. Tables show the short set nova-orphans-manage
shows unless ``--long`` or ``-c`` asks for more: fourteen columns with
free-text details do not fit a terminal.
"""

from cliff import columns as cliff_columns
from osc_lib import exceptions

from nova_orphans.engine import model
from nova_orphans.i18n import _
from nova_orphans import output

OUTCOME = 'outcome'


class ResourcesColumn(cliff_columns.FormattableColumn):
    """``DISK_GB=1, VCPU=1`` in tables, the dict itself in JSON/YAML."""

    def human_readable(self):
        return output.format_resources(self._value or {})

    def machine_readable(self):
        return dict(self._value or {})


def add_long_argument(parser):
    parser.add_argument(
        '--long', action='store_true',
        help=_('Show every column in tables (other formats always have '
               'them all).'))


def listing(parsed_args, findings, outcomes=None):
    """(columns, rows) for a Lister's take_action."""
    names = list(model.FINDING_KEYS)
    short = set(output.TABLE_COLUMNS)
    if any(isinstance(f, model.ProviderFinding) for f in findings):
        # A restore of "resource provider orphan clean": the providers'
        # rows have their own keys, the others' are empty there.
        names += [k for k in model.PROVIDER_KEYS if k not in names]
        short |= {'uuid', 'name'}
    if outcomes is not None:
        names.append(OUTCOME)
    rows = output.rows_as_dicts(findings, outcomes)
    if (getattr(parsed_args, 'formatter', None) == 'table' and
            not parsed_args.columns and not parsed_args.long):
        names = [n for n in names if n in short or n == OUTCOME]
    return names, [tuple(ResourcesColumn(row.get(n)) if n == 'resources'
                         else row.get(n) for n in names) for row in rows]


def raise_if_failed(outcomes):
    """After every row is printed: exit 1 if any repair failed."""
    failed = [o for o in outcomes if o.startswith('failed')]
    if failed:
        raise exceptions.CommandError(
            _('%(failed)d of %(total)d repairs failed; see the outcome '
              'column.') % {'failed': len(failed), 'total': len(outcomes)})


def raise_if_incomplete(snapshot):
    """After every row is printed: exit 1 if a cell could not be read.

    The rows cover only what was read; exiting 0 would tell a script
    that the unreadable cells' consumers are fine.
    """
    cells = snapshot.nova.unreadable_cells if snapshot is not None else []
    if cells:
        raise exceptions.CommandError(
            _('Incomplete: %(count)d cell(s) could not be read (%(cells)s); '
              'their consumers were not checked, and are neither listed '
              'nor repaired as orphans.') % {
                'count': len(cells),
                'cells': ', '.join(sorted(c.label for c in cells))})
