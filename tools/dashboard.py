#!/usr/bin/env python3
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
"""The Grafana dashboard shipped in etc/grafana, generated.

    tools/dashboard.py [--output FILE]

Built with grafana-foundation-sdk (test-requirements.txt), a maintained
model of Grafana's dashboard schema, on nova-orphans' own metrics only
(nova_orphans/metrics.py): what the textfile collector serves of a
scan, a clean and a restore. Every panel reads a Prometheus data source
chosen on the dashboard (``$datasource``); no query uses another
variable, so each can be run as it is (the functional suite's
test_dashboard runs them all against a real Prometheus). Write the file
again after changing a panel: a unit test holds the committed JSON to
this script's.
"""

import argparse
import sys

from grafana_foundation_sdk.builders import common
from grafana_foundation_sdk.builders import dashboard
from grafana_foundation_sdk.builders import prometheus
from grafana_foundation_sdk.builders import stat
from grafana_foundation_sdk.builders import table
from grafana_foundation_sdk.builders import timeseries
from grafana_foundation_sdk.cog import encoder
from grafana_foundation_sdk.models import common as common_models
from grafana_foundation_sdk.models import dashboard as models
from grafana_foundation_sdk.models import prometheus as prometheus_models

UID = 'nova-orphans'
DATASOURCE = models.DataSourceRef(type_val='prometheus',
                                  uid='${datasource}')
ORPHANS = 'reason!~"unverifiable|in_progress"'

# (row, [line, ...]): each line's panels share its 24 columns, each
# panel (kind, title, unit, description, [(expr, legend)]).
ROWS = [
    ('Orphans', [
        [('stat', 'Orphaned allocations', 'none',
          'Allocations no live nova owner holds (NovaOrphanedAllocations).',
          [('sum(nova_orphans_allocations{%s})' % ORPHANS, 'allocations')]),
         ('stat', 'Orphaned consumers', 'none',
          'Consumers holding such allocations.',
          [('sum(nova_orphans_consumers{%s})' % ORPHANS, 'consumers')]),
         ('stat', 'Not judged', 'none',
          'Allocations nothing could prove orphaned or not (unverifiable), '
          'and those nova is still working on (in progress).',
          [('sum(nova_orphans_allocations{reason="unverifiable"})',
            'unverifiable'),
           ('sum(nova_orphans_allocations{reason="in_progress"})',
            'in progress')])],
        [('timeseries', 'Orphaned allocations by reason', 'none',
          'Each reason of the reasons reference, zero included.',
          [('sum by (reason) (nova_orphans_allocations{%s})' % ORPHANS,
            '{{reason}}')]),
         ('table', 'Last clean by reason and action', 'none',
          'The rows of the last clean by reason, the action taken and its '
          'outcome (repaired, failed, skipped).',
          [('sum by (reason, action, outcome) (nova_orphans_clean_rows)',
            '')])],
        [('table', 'Orphaned allocations by host', 'none',
          'Allocations by compute host, most first.',
          [('sort_desc(sum by (host) (nova_orphans_provider_allocations'
            '{%s}))' % ORPHANS, '')]),
         ('table', 'Orphaned resources by project', 'none',
          'What orphans hold in each project\'s quota usage (the projects '
          'beyond metrics_max_projects as "other").',
          [('sum by (project_id, resource_class) '
            '(nova_orphans_project_resources)', '')])],
    ]),
    ('Capacity', [
        [('table', 'What a clean gives back', 'none',
          'By compute host and resource class (the hosts beyond '
          'metrics_max_hosts as "other").',
          [('sum by (host, resource_class) (nova_orphans_host_resources)',
            '')]),
         ('timeseries', 'Servers that fit, now and after a clean', 'none',
          'Servers of each capacity flavor placement would accept across '
          'the compute nodes.',
          [('max by (flavor, state) (nova_orphans_flavor_servers)',
            '{{flavor}} {{state}}')])],
        [('stat', 'More servers after a clean', 'none',
          'How many more servers of each capacity flavor a clean makes '
          'room for.',
          [('max by (flavor) (nova_orphans_flavor_servers'
            '{state="after_clean"}) - max by (flavor) '
            '(nova_orphans_flavor_servers{state="now"})', '{{flavor}}')]),
         ('stat', 'Hosts a clean makes room on', 'none',
          'Compute nodes where a clean makes room for one more server of '
          'the flavor.',
          [('max by (flavor) (nova_orphans_flavor_hosts)', '{{flavor}}')])],
    ]),
    ('Runs', [
        [('stat', 'Since the last scan', 's',
          'NovaOrphansScanStale fires past an hour.',
          [('time() - max(nova_orphans_last_scan_timestamp_seconds)',
            'scan')]),
         ('stat', 'Since the last clean that succeeded', 's',
          'NovaOrphansCleanStale fires past two days (no success known: '
          'since 1970).',
          [('time() - '
            'max(nova_orphans_clean_last_success_timestamp_seconds)',
            'clean')]),
         ('stat', 'Since the last restore', 's',
          'When a restore last ran.',
          [('time() - max(nova_orphans_restore_last_run_timestamp_seconds)',
            'restore')]),
         ('stat', 'Not read', 'none',
          'Cells and other sources the last scan could not read: it is '
          'incomplete.',
          [('max(nova_orphans_unreadable_cells)', 'cells'),
           ('max(nova_orphans_unread_sources)', 'sources')])],
        [('timeseries', 'Run durations', 's',
          'How long the last scan, clean and restore took.',
          [('max(nova_orphans_scan_duration_seconds)', 'scan'),
           ('max(nova_orphans_clean_duration_seconds)', 'clean'),
           ('max(nova_orphans_restore_duration_seconds)', 'restore')]),
         ('table', 'Last restore by action and outcome', 'none',
          'The rows of the last restore (restore_consumer, '
          'restore_allocation, ...) by outcome.',
          [('sum by (action, outcome) (nova_orphans_restore_rows)', '')])],
        [('timeseries', 'Retries', 'none',
          'Requests of the last run of each command sent again after a '
          'transient fault, by service.',
          [('sum by (command, service) (nova_orphans_retries_total)',
            '{{command}} {{service}}')])],
    ]),
]
# Each line's height: its tallest panel's, by kind.
HEIGHTS = {'stat': 5, 'timeseries': 8, 'table': 8}


def _stat():
    # The last value of each series: the metrics change once a run.
    return (stat.Panel()
            .reduce_options(common.ReduceDataOptions().values(False)
                            .calcs(['lastNotNull']))
            .graph_mode(common_models.BigValueGraphMode.AREA))


def _timeseries():
    # A step: each value holds until the next run writes the next.
    return (timeseries.Panel()
            .line_interpolation(common_models.LineInterpolation.STEP_AFTER)
            .fill_opacity(10)
            .show_points(common_models.VisibilityMode.NEVER)
            .legend(
        common.VizLegendOptions().show_legend(True)
        .display_mode(common_models.LegendDisplayMode.TABLE)
        .placement(common_models.LegendPlacement.BOTTOM)
        .calcs(['lastNotNull'])))


def _table():
    return table.Panel().show_header(True)


KINDS = {'stat': _stat, 'timeseries': _timeseries, 'table': _table}


def query(expr, legend, ref_id, instant):
    target = (prometheus.Dataquery().expr(expr).ref_id(ref_id)
              .datasource(DATASOURCE))
    if legend:
        target = target.legend_format(legend)
    if instant:
        target = (target.instant()
                  .format(prometheus_models.PromQueryFormat.TABLE))
    return target


def panel(panel_id, width, height, kind, title, unit, description,
          targets):
    built = (KINDS[kind]().id(panel_id).title(title).description(description)
             .unit(unit).datasource(DATASOURCE).span(width).height(height))
    for n, (expr, legend) in enumerate(targets):
        built = built.with_target(query(expr, legend, chr(ord('A') + n),
                                        kind == 'table'))
    return built


def build():
    """The dashboard, as the SDK's model."""
    board = (dashboard.Dashboard('nova-orphans')
             .uid(UID)
             .description('Orphaned placement allocations: what they are, '
                          'where, what they cost, and the runs that find '
                          'and clean them.')
             .tags(['openstack', 'nova', 'placement', 'nova-orphans'])
             .editable()
             .refresh('5m')
             .time('now-7d', 'now')
             .timezone('browser')
             .with_variable(dashboard.DatasourceVariable('datasource')
                            .label('Data source').type('prometheus')))
    panel_id = 0
    for row_title, lines in ROWS:
        panel_id += 1
        board = board.with_row(dashboard.Row(row_title).id(panel_id))
        for line in lines:
            height = max(HEIGHTS[p[0]] for p in line)
            for spec in line:
                panel_id += 1
                board = board.with_panel(panel(
                    panel_id, 24 // len(line), height, *spec))
    return board.build()


def text():
    """The dashboard's JSON, as committed."""
    return encoder.JSONEncoder(sort_keys=True, indent=2).encode(
        build()) + '\n'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--output', help='write it here (default: stdout)')
    args = parser.parse_args(argv)
    if args.output:
        with open(args.output, 'w', encoding='utf-8') as f:
            f.write(text())
    else:
        sys.stdout.write(text())
    return 0


if __name__ == '__main__':
    sys.exit(main())
