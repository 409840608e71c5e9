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
"""Prometheus text exposition for node_exporter's textfile collector.

A cron job writes ``list --format prometheus`` into the collector's
directory; alerts fire on orphan counts. Every reason gets a series even
at zero, so "no orphans" is a value, not a missing series.
"""

import collections
import time

from nova_orphans.engine import reasons

PREFIX = 'nova_orphans_'
# Orphans, what could not be checked, and what nova is still working on
# (in_progress: above zero for hours, a compute died in an operation).
COUNTED_REASONS = reasons.ORPHAN_REASONS + (reasons.UNVERIFIABLE,
                                            reasons.IN_PROGRESS)


def _labels(**labels):
    return '{%s}' % ','.join(
        '%s="%s"' % (k, str(v).replace('\\', '\\\\').replace('"', '\\"'))
        for k, v in sorted(labels.items()) if v is not None)


def _metric(lines, name, help_text, samples):
    lines.append('# HELP %s%s %s' % (PREFIX, name, help_text))
    lines.append('# TYPE %s%s gauge' % (PREFIX, name))
    for labels, value in samples:
        lines.append('%s%s%s %s' % (PREFIX, name, labels, value))


def render(findings, duration, unreadable_cells=0, now=None):
    """The metrics for one scan, as text ending in a newline."""
    counted = [f for f in findings if f.reason in COUNTED_REASONS]
    per_reason = collections.Counter(f.reason for f in counted)
    consumers = {r: len({f.consumer for f in counted if f.reason == r})
                 for r in COUNTED_REASONS}
    per_provider = collections.Counter(
        (f.reason, f.resource_provider, f.resource_provider_name, f.host)
        for f in counted)
    amounts = collections.Counter()
    for f in counted:
        for rc, amount in f.resources.items():
            amounts[(f.reason, rc, f.resource_provider,
                     f.resource_provider_name, f.host)] += amount
    lines = []
    _metric(lines, 'allocations',
            'Allocations (one consumer on one provider) by reason.',
            [(_labels(reason=r), per_reason[r]) for r in COUNTED_REASONS])
    _metric(lines, 'consumers', 'Consumers with such allocations by reason.',
            [(_labels(reason=r), consumers[r]) for r in COUNTED_REASONS])
    _metric(lines, 'provider_allocations',
            'Allocations by reason and resource provider.',
            [(_labels(reason=r, resource_provider=rp,
                      resource_provider_name=name, host=host), n)
             for (r, rp, name, host), n in sorted(
                 per_provider.items(), key=lambda kv: tuple(
                     str(x) for x in kv[0]))])
    _metric(lines, 'resources',
            'Resources held by such allocations, by reason, resource class '
            'and provider.',
            [(_labels(reason=r, resource_class=rc, resource_provider=rp,
                      resource_provider_name=name, host=host), n)
             for (r, rc, rp, name, host), n in sorted(
                 amounts.items(), key=lambda kv: tuple(
                     str(x) for x in kv[0]))])
    _metric(lines, 'unreadable_cells',
            'Cells whose database could not be read in this scan.',
            [('', unreadable_cells)])
    _metric(lines, 'scan_duration_seconds', 'How long the scan took.',
            [('', '%.3f' % duration)])
    _metric(lines, 'last_scan_timestamp_seconds',
            'When the scan finished (Unix time).',
            [('', '%.3f' % (time.time() if now is None else now))])
    return '\n'.join(lines) + '\n'
