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
"""``allocations list``, ``clean`` and ``restore``: what they do.

Shared by the provider commands (app/providers.py): a clean run of
either category goes through ``repair``, and both categories' journals
through ``restore``.
"""

import dataclasses
import time

from oslo_log import log as logging

from nova_orphans.app import audit as audit_mod
from nova_orphans.app import journals
from nova_orphans.app import results
from nova_orphans.conf import orphans as orphans_conf
from nova_orphans.engine import classify
from nova_orphans.engine import projects as projects_mod
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans import interrupt
from nova_orphans import metrics as metrics_mod
from nova_orphans.repair import actions
from nova_orphans.repair import journal
from nova_orphans.repair import journal_verify
from nova_orphans.repair import restore as restore_mod

LOG = logging.getLogger(__name__)


class Scope:
    """Which part of the cloud a run looks at, and what it shows.

    ``reasons``: only findings with these reasons; ``show_all``: also
    what is fine (action "none"); ``project``, ``user``: only the
    allocations of consumers of this project and user, as the findings
    name them (placement's consumer record where it was read, else the
    instance's, which nova writes to placement as the consumer's).
    ``full_read``: read every provider's allocations afresh, as ``show_all``
    does (readers/kept_reads.py).
    """

    def __init__(self, resource_provider=None, host=None, reasons=None,
                 show_all=False, project=None, user=None, full_read=False):
        # Bad input is refused before anything is contacted.
        self.resource_provider = audit_mod.validate_uuid(
            resource_provider, _('Resource provider'))
        self.host = host
        self.reasons = reasons
        self.show_all = show_all
        for option, value in (('--project', project), ('--user', user)):
            if value is not None and not value.strip():
                raise exception.InvalidInput(
                    reason=_('%(option)s must not be empty') % {
                        'option': option})
        self.project = project
        self.user = user
        # Every row, healthy ones too: no kept read may stand in for one.
        self.full_read = bool(full_read or show_all)

    def shown(self):
        """Which findings to show, by reason and action (see Audit.run).

        Called once per allocation, so the options are read once, here.
        """
        reasons = self.reasons
        if reasons:
            return lambda finding: finding.reason in reasons
        if self.show_all:
            return lambda finding: True
        return lambda finding: finding.is_orphan

    @property
    def by_owner(self):
        return self.project is not None or self.user is not None

    def owned(self, findings):
        """The findings of the project and user asked for: all of them
        when neither was.

        Applied to the audit's findings, not to the rules' verdicts:
        a consumer's project is known only once its finding is made.
        """
        if not self.by_owner:
            return findings
        project, user = self.project, self.user
        return [f for f in findings
                if (project is None or f.project_id == project) and
                (user is None or f.user_id == user)]


class Metrics:
    """A run's Prometheus metrics (nova_orphans.metrics): ``text`` once
    made, for ``--format prometheus``; written atomically to ``path``
    (--metrics-file) when given, for every run that made them,
    incomplete ones and failed repairs included.
    """

    def __init__(self, path=None,
                 max_projects=orphans_conf.DEFAULT_METRICS_MAX_PROJECTS,
                 max_hosts=orphans_conf.DEFAULT_METRICS_MAX_HOSTS):
        self.path = path
        self.max_projects = max_projects
        self.max_hosts = max_hosts
        # The run's app.hosts.Capacity, for a scan's capacity families.
        self.capacity = None
        self.started = time.monotonic()
        self.text = None

    def check(self):
        """Refuse a path that cannot be written, before anything is
        read (--metrics-max-projects is bounded by the option spec).
        """
        if self.path:
            metrics_mod.check_path(self.path)

    def _duration(self):
        return time.monotonic() - self.started

    def scan(self, listing, retries=None):
        """``retries``: the run's clients.retry.Retries, for the
        retries_total series. With a ``capacity``, what a clean gives
        back per host, and the servers of its flavors that fit across
        the cloud (every compute node's inventories read for them).
        """
        capacity = None
        if self.capacity is not None:
            flavors = self.capacity.flavors
            view = self.capacity.view(listing.snapshot, listing.findings,
                                      flavors, every=bool(flavors))
            capacity = (view.rows, view.summary().shapes, self.max_hosts)
        self.text = metrics_mod.scan(
            listing.findings, self._duration(),
            unreadable_cells=len(listing.unreadable_cells),
            unread_sources=(len(listing.unread) +
                            len(listing.unreadable_services)),
            metrics_file=self.path, max_projects=self.max_projects,
            retries=_counts(retries), capacity=capacity,
            full_read=not listing.snapshot.placement.kept)

    def repair(self, command, result, retries=None, dry_run=False):
        """``dry_run``: the run changed nothing, and its metrics are a
        dry run's, never a clean's or restore's (see metrics.repair). A
        restore from a journal that cannot prove it is whole is no
        success either.
        """
        self.text = metrics_mod.repair(
            command, result.rows, result.outcomes, self._duration(),
            unreadable_cells=len(result.unreadable_cells),
            metrics_file=self.path,
            incomplete=result.incomplete or bool(result.unproven),
            retries=_counts(retries), dry_run=dry_run)


def _counts(retries):
    return dict(retries.counts) if retries is not None else {}


def audit(sources, scope, shown, progress=None, resource_provider=None,
          owners=False, reported=None, trees=None):
    """One read of the cloud: the findings ``shown`` picks (every one
    for None) and the snapshot they came from.

    ``owners``: every orphan names its project and user where placement
    has them, even with ``shown`` None (which reads no consumer record).
    ``reported`` and ``trees``: what of it the run reports or acts on
    (see audit.Audit.run).
    """
    reader = sources.placement_reader()
    audit_mod.keep_reads(sources, reader, full=scope.full_read)
    run = audit_mod.Audit(reader, sources.nova(),
                          progress=progress, rules=sources.rules,
                          zun_reader=sources.zun())
    findings = run.run(
        resource_provider=resource_provider or scope.resource_provider,
        host=scope.host, shown=shown, reported=reported, trees=trees)
    if owners:
        findings = _with_owners(run, findings)
    return results.Listing(findings, run.snapshot)


def _with_owners(run, findings):
    """The findings, the orphans among them with their consumer's
    project and user read from placement where nova could not name
    them (the few consumers nova has no trace of).
    """
    known = run.snapshot.placement.consumers
    wanted = {f.consumer for f in findings
              if f.is_orphan and f.project_id is None and
              f.consumer not in known}
    if not wanted:
        return findings
    records, _allocations = run.placement.consumers(wanted)
    known.update(records)
    return classify.with_records(findings, records)


def list_allocations(sources, scope, progress=None, metrics=None,
                     rows=True):
    """The findings the scope shows.

    With ``metrics`` (a Metrics), every finding is audited whatever the
    scope shows, for the metrics count them all; the rows are then the
    scope's, unless ``rows`` is False (only the metrics are wanted: no
    consumer record is read for rows nobody sees, but those of orphans
    nova cannot name, for their projects' metrics). The exit code is
    the scope's project's and user's, when it names them.
    """
    if metrics is None:
        listing = audit(sources, scope, scope.shown(), progress)
        listing.findings = listing.rows = scope.owned(listing.findings)
        return listing
    metrics.check()
    shown = scope.shown()
    listing = audit(sources, scope,
                    (lambda finding: True) if rows else None, progress,
                    owners=not rows, reported=lambda finding: (
                        shown(finding) or
                        finding.reason in metrics_mod.COUNTED_REASONS))
    metrics.scan(listing, sources.retries)
    listing.findings = scope.owned(listing.findings)
    listing.rows = [f for f in listing.findings if shown(f)] if rows else []
    return listing


def projects(listing):
    """[engine.projects.ProjectTotal] of the orphans a listing shows,
    the projects with most orphaned consumers first.
    """
    return projects_mod.totals(
        (f.project_id, f.consumer, f.resources) for f in listing.rows
        if projects_mod.charged(f.action))


def read_for_clean(sources, scope, options, progress=None, metrics=None):
    """The audit a clean repairs from, once the options that cannot work
    (a journal, a metrics file) are refused: its rows the orphans in
    scope.
    """
    options.check(sources.journal_dir())
    if metrics is not None:
        metrics.check()
    return list_allocations(sources, scope, progress)


def clean(sources, listing, options, stop, progress=None, metrics=None):
    """Repair the orphans of ``listing`` (read_for_clean's), each
    re-verified right before its write, generation-checked and journaled
    first. ``metrics`` (a Metrics) are made of the run's rows and
    outcomes.
    """
    with Writes(sources, listing, options, stop, progress,
                max_count=options.max_count, heal=options.heal) as writes:
        rows, outcomes = writes.repairer.clean(listing.orphans)
    result = writes.result(rows, outcomes)
    if metrics is not None:
        metrics.repair('clean', result, sources.retries,
                       dry_run=options.dry_run)
    return result


class Writes:
    """The writes of one clean run of either category, as a block: the
    journal (opened only when there is something to write, its end
    record written however the block ends) and the Repairer that writes
    through it; ``result(...)`` once the block is done.
    """

    def __init__(self, sources, listing, options, stop, progress=None,
                 max_count=None, heal=False):
        self.listing = listing
        self.stop = stop
        self.notice = options.notice
        self.journal = None
        self.unended = None
        if listing.orphans and not options.dry_run:
            sources.check_writes()
            self.journal = journal.Journal(
                options.journal or journal.default_path(
                    sources.journal_dir()),
                placement=sources.placement.endpoint, cloud=sources.cloud())
        LOG.debug('%(count)d orphan(s) to repair%(dry)s; journal %(path)s', {
            'count': len(listing.orphans),
            'dry': ' (dry run)' if options.dry_run else '',
            'path': self.journal.path if self.journal else 'none'})
        self.repairer = actions.Repairer(
            sources.placement, sources.nova(), listing.snapshot,
            journal=self.journal, options=dataclasses.replace(
                options, max_count=max_count, heal=heal,
                concurrency=sources.concurrency, rules=sources.rules,
                progress=progress, stop=stop),
            placement_db=sources.placement_db, zun_reader=sources.zun())

    def __enter__(self):
        self.stop.start_writing(self.notice)
        return self

    def __exit__(self, error_type, error, traceback):
        if self.journal is not None:
            # Its end record says how it ended (see journal_verify).
            ended = (journal.ERROR if error_type else journal.COMPLETED)
            if self.stop.signum is not None:
                ended = interrupt.signal_name(self.stop.signum)
            self.unended = self.journal.close(ended)

    def result(self, rows, outcomes, allocation_outcomes=()):
        """The run's results.Repair: ``rows`` and their ``outcomes``, and
        for a providers clean the outcomes of the allocation repairs it
        made first.
        """
        journal_ = self.journal
        return results.Repair(
            rows, outcomes, self.listing,
            journal_path=(journal_.path if journal_ is not None and
                          journal_.entries else None),
            signum=self.stop.signum, conflicts=self.repairer.conflicts,
            allocation_outcomes=allocation_outcomes,
            cloud=journal_.header.get('cloud') if journal_ else None,
            unended=self.unended)


def restore(sources, path, stop, dry_run=False, progress=None, warn=None,
            notice=None, metrics=None, journal_clouds=()):
    """Put back what a clean of either category changed, newest first.

    The whole journal is verified first, and refused if it is damaged,
    altered or of another cloud (``journal_clouds``: the placement
    endpoints --journal-cloud names as the journal's, reached now at
    another address). ``warn(line)`` is told of an earlier restore of
    the journal that did not end, and when the restore's mark cannot be
    written to the journal; the result says whether the journal could
    prove it is whole (``unproven``). ``metrics`` (a
    Metrics) are made of the run's rows and outcomes.
    """
    if metrics is not None:
        metrics.check()
    client = sources.placement
    cloud = sources.cloud()
    # The restore's mark, in a run of its own, holding the journal's lock
    # from its read to the mark (see restore.load).
    mark = None if dry_run else journal.Journal(
        path, command='restore', placement=client.endpoint, cloud=cloud)
    try:
        started = time.monotonic()
        contents = restore_mod.load(path, client.endpoint, cloud,
                                    journal_clouds, mark=mark)
        LOG.debug('Read the journal %(path)s: %(count)d entries to restore, '
                  'in %(seconds).3f s', {
                      'path': path, 'count': len(contents.entries),
                      'seconds': time.monotonic() - started})
        if warn is not None:
            # An earlier restore killed before its end record: said, and
            # no reason to doubt the journal (see proof_lines).
            for line in journal_verify.restore_lines(path, contents):
                warn(line)
        stop.start_writing(notice)
        done = restore_mod.restore(
            client, contents.entries, dry_run=dry_run,
            concurrency=sources.concurrency, progress=progress, stop=stop,
            placement_db=sources.placement_db)
        result = results.Repair(
            [f for f, _o in done], [o for _f, o in done],
            signum=stop.signum, restoring=True,
            unproven=journal_verify.proof_lines(path, contents))
        if mark is not None:
            journals.mark_restored(mark, result, journal_clouds, warn=warn)
    finally:
        if mark is not None:
            # Lets go of the lock; a mark written ends its run.
            error = mark.close()
            if error and warn is not None:
                warn(_('WARNING: journal %(path)s: the restore\'s end '
                       'record could not be written (%(error)s).') % {
                    'path': path, 'error': error})
    if metrics is not None:
        metrics.repair('restore', result, sources.retries,
                       dry_run=dry_run)
    return result
