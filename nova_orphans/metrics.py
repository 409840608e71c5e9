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
"""Prometheus metrics of a scan, a clean and a restore.

For node_exporter's textfile collector: the front ends print them
(``--format prometheus``) and write them to a file (``--metrics-file``)
for every run that got as far as computing them, incomplete runs (a
cell not read, a repair failed, a signal) included. A run that stops
before (an error) leaves the last file in place, so its timestamp goes
stale and the staleness alert fires (etc/prometheus).

Every orphan reason gets a series even at zero, so "no orphans" is a
value, not a missing series. The front ends use only scan (a
``list``), repair (a ``clean`` or ``restore``) and check_path; scan and
repair write ``metrics_file``, when given, atomically (:func:`write`).
The families: ``doc/source/admin/monitoring.rst``.

Built on prometheus_client, imported on first use: a list that writes
no metrics does not pay for its import.
"""

import collections
import contextlib
import os
import tempfile
import time

from nova_orphans.conf import orphans as orphans_conf
from nova_orphans.engine import projects
from nova_orphans.engine import reasons
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans import outcomes

PREFIX = 'nova_orphans_'
RETRIES = PREFIX + 'retries'
# Orphans, what could not be checked, and what nova is still working on
# (in_progress: above zero for hours, a compute died in an operation).
COUNTED_REASONS = reasons.ORPHAN_REASONS + (reasons.UNVERIFIABLE,
                                            reasons.IN_PROGRESS)
# The commands that repair, and what their rows' outcomes count as.
REPAIR_COMMANDS = ('clean', 'restore')
REPAIRED = 'repaired'
FAILED = 'failed'
SKIPPED = 'skipped'
OUTCOMES = (REPAIRED, FAILED, SKIPPED)
_COUNTED_AS = {outcomes.DONE: REPAIRED, outcomes.FAILED: FAILED}
# A dry run's rows: those it would change, and the others as counted.
DRY_RUN = 'dry_run'
DRY_RUN_OUTCOMES = (DRY_RUN, FAILED, SKIPPED)
# project_resources' labels of the projects beyond max_projects, summed,
# and of consumers whose project is not known.
OTHER_PROJECTS = 'other'
UNKNOWN_PROJECT = 'unknown'
# host_resources' labels of the hosts beyond max_hosts, summed; the
# states of flavor_servers.
OTHER_HOSTS = 'other'
NOW = 'now'
AFTER_CLEAN = 'after_clean'


def outcome_kind(outcome):
    """repaired, failed or skipped: an outcomes.Outcome as counted."""
    return _COUNTED_AS.get(outcome.kind, SKIPPED)


class _Families:
    """A prometheus_client collector of fixed families: one run's values."""

    def __init__(self):
        self.families = []

    def collect(self):
        return self.families

    def gauge(self, name, help_text, samples=None, labels=None, value=None):
        """Add PREFIX+name; ``samples`` are (label values, value) pairs."""
        from prometheus_client import core
        family = core.GaugeMetricFamily(PREFIX + name, help_text,
                                        value=value, labels=labels)
        for label_values, sample in samples or ():
            family.add_metric(['' if v is None else str(v)
                               for v in label_values], sample)
        self.families.append(family)

    def retries(self, command, counts, kept=()):
        """retries_total: the run's retries after transient faults, after
        the ``kept`` samples (another command's, as a file held them).

        Labelled with the command too: a scan's and a clean's files are
        read by one textfile collector, which refuses a series that two
        files both hold.
        """
        from prometheus_client import core
        family = core.CounterMetricFamily(
            RETRIES,
            'Requests of the last run of a command sent again, or writes '
            'read back, after a transient fault (connection error, '
            'timeout, 429, 502, 503, 504), by service and reason.',
            labels=['command', 'service', 'reason'])
        family.samples.extend(kept)
        for (service, reason), count in _sorted(counts or {}):
            family.add_metric([command, service, reason], count)
        self.families.append(family)

    def text(self):
        import prometheus_client
        registry = prometheus_client.CollectorRegistry(auto_describe=False)
        registry.register(self)
        return prometheus_client.generate_latest(registry).decode('utf-8')


def _sorted(counter):
    return sorted(counter.items(),
                  key=lambda kv: tuple(str(x) for x in kv[0]))


def scan(findings, duration, unreadable_cells=0, metrics_file=None,
         now=None, max_projects=orphans_conf.DEFAULT_METRICS_MAX_PROJECTS,
         unread_sources=0, retries=None, capacity=None,
         full_read=True):
    """The metrics of one scan, as exposition text; also written to
    ``metrics_file`` when given.

    ``findings`` are every finding of the scan (not only those shown);
    ``unreadable_cells`` how many cells could not be read;
    ``unread_sources`` how many other sources the scan needed and could
    not read (results.Listing.unread, unreadable_services); ``now`` the
    Unix time the scan finished (default: now); ``max_projects`` how
    many projects get series of their own (project_resources);
    ``capacity``: (host rows, flavor totals, max hosts), add_capacity's
    arguments, the scan's host view (app.hosts).
    ``full_read``: every provider's allocations were read in this scan,
    none taken from an earlier one's (readers/kept_reads.py).
    """
    counted = [f for f in findings if f.reason in COUNTED_REASONS]
    per_reason = collections.Counter(f.reason for f in counted)
    consumers = {r: len({f.consumer for f in counted if f.reason == r})
                 for r in COUNTED_REASONS}
    per_provider = collections.Counter(
        (f.host, f.reason, f.resource_provider, f.resource_provider_name)
        for f in counted)
    amounts = collections.Counter()
    for f in counted:
        for rc, amount in f.resources.items():
            amounts[(f.host, f.reason, rc, f.resource_provider,
                     f.resource_provider_name)] += amount
    out = _Families()
    out.gauge('allocations',
              'Allocations (one consumer on one provider) by reason.',
              [((r,), per_reason[r]) for r in COUNTED_REASONS],
              labels=['reason'])
    out.gauge('consumers', 'Consumers with such allocations by reason.',
              [((r,), consumers[r]) for r in COUNTED_REASONS],
              labels=['reason'])
    out.gauge('provider_allocations',
              'Allocations by reason and resource provider.',
              _sorted(per_provider),
              labels=['host', 'reason', 'resource_provider',
                      'resource_provider_name'])
    out.gauge('resources',
              'Resources held by such allocations, by reason, resource '
              'class and provider.', _sorted(amounts),
              labels=['host', 'reason', 'resource_class',
                      'resource_provider', 'resource_provider_name'])
    out.gauge('project_resources',
              'Resources held by orphaned allocations, by project (whose '
              'quota usage placement counts them in) and resource class; '
              'the projects beyond metrics_max_projects, by orphaned '
              'consumers, summed as project_id="%s".' % OTHER_PROJECTS,
              project_resources(findings, max_projects),
              labels=['project_id', 'resource_class'])
    if capacity is not None:
        add_capacity(out, *capacity)
    out.gauge('unreadable_cells',
              'Cells whose database could not be read in this scan.',
              value=unreadable_cells)
    out.gauge('unread_sources',
              'Other sources this scan needed and could not read '
              '(neutron, for servers whose info cache lists no port; '
              'Zun\'s database, for the zun site rule).',
              value=unread_sources)
    out.gauge('scan_full_read',
              'Whether the scan read every provider\'s allocations from '
              'placement (1), or took those of providers whose generation '
              'had not moved from earlier scans (0), reading again every '
              'provider a finding rests on.', value=1 if full_read else 0)
    out.gauge('scan_duration_seconds', 'How long the scan took.',
              value=round(duration, 3))
    out.retries('list', retries)
    out.gauge('last_scan_timestamp_seconds',
              'When the scan finished (Unix time).',
              value=round(time.time() if now is None else now, 3))
    return _finish(out, metrics_file)


def project_resources(findings, max_projects):
    """((project, resource class), amount) of the orphans ``findings``
    hold: the ``max_projects`` projects with most orphaned consumers
    (engine.projects.totals) each, the others summed as OTHER_PROJECTS.

    A Prometheus series per project of a large cloud would be a series
    per tenant that ever leaked an allocation: the bound keeps the
    textfile collector's output, and the server's index, small.
    """
    ranked = projects.totals(
        (f.project_id, f.consumer, f.resources) for f in findings
        if projects.charged(f.action))
    amounts = collections.Counter()
    for rank, total in enumerate(ranked):
        if rank >= max_projects:
            label = OTHER_PROJECTS
        elif total.project_id is None:
            label = UNKNOWN_PROJECT
        else:
            label = total.project_id
        for rc, amount in total.resources.items():
            amounts[(label, rc)] += amount
    return _sorted(amounts)


def add_capacity(out, rows, flavors, max_hosts):
    """Add a scan's capacity families to ``out`` (its _Families).

    ``rows``: engine.hosts.HostRow of the compute nodes, most held first
    (HostView.rows); ``flavors``: engine.hosts.ShapeTotal of each flavor
    of ``[nova_orphans] capacity_flavors`` and ``--flavor``, in order;
    ``max_hosts``: how many hosts get series of their own
    (host_resources).
    """
    out.gauge('host_resources',
              'Resources a clean would give back, by compute host, '
              'resource provider and resource class; the hosts beyond '
              'metrics_max_hosts, by the largest share of a class\'s '
              'capacity held, summed as host="%s" and '
              'resource_provider_name="%s".' % (OTHER_HOSTS, OTHER_HOSTS),
              host_resources(rows, max_hosts),
              labels=['host', 'resource_provider_name', 'resource_class'])
    flavors = list(flavors)
    out.gauge('flavor_servers',
              'Servers of the flavor placement would accept on the compute '
              'nodes, summed over them, now and after a clean (state); a '
              'sharing provider\'s room counts on each node it serves.',
              [((f.shape, state), value) for f in flavors
               for state, value in ((AFTER_CLEAN, f.after_clean),
                                    (NOW, f.now))],
              labels=['flavor', 'state'])
    out.gauge('flavor_hosts',
              'Compute nodes on which a clean would make room for at least '
              'one more server of the flavor.',
              [((f.shape,), f.hosts) for f in flavors], labels=['flavor'])


def host_resources(rows, max_hosts):
    """((host, provider name, resource class), amount) of what a clean
    gives back on the compute nodes' providers: the ``max_hosts`` hosts
    first among ``rows`` each, the others summed as OTHER_HOSTS.

    As project_resources, bounded: a series per host of a large cloud
    would be one per host that ever leaked an allocation.
    """
    # The hosts in the rows' order, each once.
    ranked = list(dict.fromkeys(row.host for row in rows if row.given_back))
    kept = frozenset(ranked[:max_hosts])
    amounts = collections.Counter()
    for row in rows:
        for name, held in row.given_back.items():
            for rc, amount in held.items():
                key = ((row.host, name) if row.host in kept
                       else (OTHER_HOSTS, OTHER_HOSTS))
                amounts[key + (rc,)] += amount
    return _sorted(amounts)


def repair(command, rows, rows_outcomes, duration, unreadable_cells=0,
           metrics_file=None, now=None, incomplete=False, retries=None,
           dry_run=False):
    """The metrics of one ``clean`` or ``restore`` run (``command``), as
    exposition text; also written to ``metrics_file`` when given.

    ``rows`` (anything with ``reason`` and ``action``: findings,
    provider findings, journal entries) and ``rows_outcomes`` (their
    outcomes.Outcome) are the run's, in the same order.
    ``unreadable_cells`` counts the cells a clean could not read;
    ``incomplete``: it could not read something else (see
    results.Listing.unread and unreadable_services).

    The run succeeded when it read everything, no row failed and no
    signal stopped it; otherwise the time of the last success is read
    back from ``metrics_file`` as it was (0: none known), so that a
    failed run never hides how long ago one last succeeded.

    A ``dry_run`` changed nothing, so it is no clean nor restore: it
    has metrics of its own (dry_run_metrics), and never sets those.
    """
    if command not in REPAIR_COMMANDS:
        raise ValueError(command)
    now = round(time.time() if now is None else now, 3)
    if dry_run:
        return _finish(dry_run_metrics(
            command, rows, rows_outcomes, duration, unreadable_cells,
            metrics_file, now, retries), metrics_file)
    kinds = [outcome_kind(o) for o in rows_outcomes]
    succeeded = (FAILED not in kinds and not unreadable_cells and
                 not incomplete and
                 not outcomes.count(rows_outcomes,
                                    cause=outcomes.INTERRUPTED))
    out = _Families()
    out.gauge(
        command + '_rows',
        'Rows of the last %s (one consumer\'s allocation on one provider, '
        'or one provider) by reason, action and outcome (repaired, failed, '
        'skipped).' % command, _row_samples(rows, kinds, OUTCOMES),
        labels=['action', 'outcome', 'reason'])
    if command == 'clean':
        out.gauge('clean_unreadable_cells',
                  'Cells whose database the last clean could not read.',
                  value=unreadable_cells)
    out.gauge(command + '_duration_seconds',
              'How long the last %s took.' % command, value=round(duration, 3))
    out.retries(command, retries)
    last = now if succeeded else (
        last_success(metrics_file, command) if metrics_file else None)
    _run_times(out, command, now, last)
    return _finish(out, metrics_file)


def _row_samples(rows, kinds, kind_names):
    """((action, kind, reason), count) of the rows by their outcomes'
    ``kinds``: every kind of ``kind_names`` for each reason and action
    the run met, zeros too ("nothing failed" is a value).
    """
    counts = collections.Counter(
        (row.action, kind, row.reason) for row, kind in zip(rows, kinds))
    pairs = sorted({(action, reason) for action, _k, reason in counts})
    return [((action, kind, reason), counts[(action, kind, reason)])
            for action, reason in pairs for kind in kind_names]


def _run_times(out, command, last_run, last_success):
    """The two series the alert rules read of ``command``'s runs."""
    out.gauge(command + '_last_run_timestamp_seconds',
              'When the last %s finished (Unix time).' % command,
              value=last_run or 0)
    out.gauge(command + '_last_success_timestamp_seconds',
              'When the last %s that read everything and in which nothing '
              'failed finished (Unix time; 0: none known).' % command,
              value=last_success or 0)


def dry_run_metrics(command, rows, rows_outcomes, duration,
                    unreadable_cells, metrics_file, now, retries):
    """The families of a ``command --dry-run``: what it would do,
    under ``<command>_dry_run_*`` names (rows by outcome: ``dry_run``
    for those it would change, ``failed`` and ``skipped`` as in a real
    run), and ``command``'s own families as ``metrics_file`` holds them
    (its rows, duration, unreadable cells, retries, last run and last
    success), kept as they were; its last run and last success 0 where
    none is known.

    A scheduled dry run that shares the clean's metrics file thus
    neither hides a clean's results nor passes for one: with no clean
    ever run, the last success stays 0, and NovaOrphansCleanStale
    fires (etc/prometheus).
    """
    kinds = [DRY_RUN if o.cause == outcomes.DRY_RUN else outcome_kind(o)
             for o in rows_outcomes]
    name = command + '_dry_run'
    before = _read(metrics_file)
    own = [f for f in before if _of_command(f.name, command)]
    out = _Families()
    out.gauge(
        name + '_rows',
        'Rows of the last %s --dry-run by reason, action and outcome '
        '(dry_run: it would have been changed; failed, skipped).' % command,
        _row_samples(rows, kinds, DRY_RUN_OUTCOMES),
        labels=['action', 'outcome', 'reason'])
    if command == 'clean':
        out.gauge(name + '_unreadable_cells',
                  'Cells whose database the last clean --dry-run could not '
                  'read.', value=unreadable_cells)
    out.gauge(name + '_duration_seconds',
              'How long the last %s --dry-run took.' % command,
              value=round(duration, 3))
    out.retries(name, retries, kept=[
        s for f in before if f.name == RETRIES for s in f.samples
        if s.labels.get('command') == command])
    out.gauge(name + '_last_run_timestamp_seconds',
              'When the last %s --dry-run finished (Unix time).' % command,
              value=now)
    out.families.extend(own)
    times = _Families()
    _run_times(times, command, 0, 0)
    kept = {f.name for f in own}
    out.families.extend(f for f in times.families if f.name not in kept)
    return out


def _of_command(name, command):
    """Whether family ``name`` is one of ``command``'s own (a real run's,
    not its dry run's).
    """
    own = PREFIX + command + '_'
    return name.startswith(own) and not name.startswith(own + 'dry_run_')


def _finish(families, metrics_file):
    text = families.text()
    if metrics_file:
        write(metrics_file, text)
    return text


def last_success(path, command):
    """``nova_orphans_<command>_last_success_timestamp_seconds`` as the
    metrics file at ``path`` holds it; None if the file is missing, not
    readable, damaged or has no such sample (or 0).
    """
    name = '%s%s_last_success_timestamp_seconds' % (PREFIX, command)
    return next((s.value for f in _read(path) for s in f.samples
                 if s.name == name and s.value), None)


def _read(path):
    """The families of the metrics file at ``path``, as prometheus_client
    parses them: none of a file that is missing, not readable or
    damaged (or of no ``path``).
    """
    if not path:
        return []
    from prometheus_client import parser
    try:
        with open(path, encoding='utf-8') as f:
            return list(parser.text_string_to_metric_families(f.read()))
    except (OSError, ValueError, UnicodeDecodeError):
        return []


def check_path(path):
    """Refuse, before anything is read, a metrics file that could not be
    written: a directory, or in a directory that is missing or that this
    user cannot create a file in (the write renames one into place).
    """
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        reason = _('is a directory')
    elif not os.path.isdir(parent):
        reason = _('directory %(dir)s does not exist') % {'dir': parent}
    elif not os.access(parent, os.W_OK | os.X_OK):
        reason = _('directory %(dir)s is not writable') % {'dir': parent}
    else:
        return
    raise exception.MetricsFileError(path=path, reason=reason)


def write(path, text):
    """Put ``text`` at ``path`` atomically (replace_file, mode 0644: a
    reader, node_exporter, sees the old file or the new one, never a
    part). prometheus_client's write_to_textfile renames without the
    fsyncs.
    """
    try:
        replace_file(path, text.encode('utf-8'), 0o644)
    except OSError as e:
        raise exception.MetricsFileError(path=path, reason=e.strerror)


def replace_file(path, data, mode):
    """Put ``data`` at ``path``, or leave the file as it was (OSError):
    a temporary file in the same directory (named so that a ``*.prom``
    or ``*.json`` glob skips it) is written, flushed to disk, given
    ``mode`` and renamed over ``path``; then the directory is flushed,
    so that a crash, even of the machine, leaves one of them whole.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(
        dir=directory, prefix='.%s.' % os.path.basename(path), suffix='.tmp')
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
