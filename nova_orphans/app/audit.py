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
"""The audit: one read of the cloud, classified.

Built from a placement reader and a nova reader: the front ends differ
only in their readers (databases or compute API, placement's API or its
database); the order of reads, the scope of ``--resource-provider`` and
``--host`` and the classification are the same for both.
"""

import dataclasses
import itertools
import threading
import time
import uuid as uuidlib

from oslo_log import log as logging
from oslo_utils import uuidutils

from nova_orphans.engine import classify
from nova_orphans.engine import heal
from nova_orphans.engine import index as index_mod
from nova_orphans.engine import model
from nova_orphans.engine import reasons
from nova_orphans.engine import resting
from nova_orphans.engine import rules
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans import memory
from nova_orphans import progress as progress_mod
from nova_orphans.readers import kept_reads as kept_mod
from nova_orphans.repair import restore

LOG = logging.getLogger(__name__)


def validate_uuid(value, what):
    """``value`` in the form placement and nova store (or None).

    Upper case, no dashes, braces or a ``urn:uuid:`` prefix write the
    same uuid; compared as given, it would match no provider.
    """
    if value is None:
        return None
    if not uuidutils.is_uuid_like(value):
        raise exception.InvalidInput(
            reason=_('%(what)s %(value)s is not a valid UUID') %
            {'what': what, 'value': value})
    return str(uuidlib.UUID(value))


def require_provider(providers, uuid):
    """Refuse a resource provider ``uuid`` that ``providers`` (placement's,
    by uuid) do not hold.
    """
    if uuid not in providers:
        raise exception.InvalidInput(
            reason=_('resource provider %(uuid)s does not exist') %
            {'uuid': uuid})


def subtree(providers, root_uuid):
    """The provider and all its descendants."""
    children = {}
    for p in providers.values():
        if p.parent_uuid:
            children.setdefault(p.parent_uuid, []).append(p.uuid)
    result, todo = set(), [root_uuid]
    while todo:
        uuid = todo.pop()
        result.add(uuid)
        todo.extend(children.get(uuid, ()))
    return result


def select_scope(providers, nova, resource_provider=None, host=None):
    """Provider uuids to read, or None for all; validates the filters."""
    scope = None
    if resource_provider is not None:
        require_provider(providers, resource_provider)
        scope = subtree(providers, resource_provider)
    if host is not None:
        nodes = [n for n in nova.compute_nodes.values() if n.host == host]
        if not nodes and not any(s.host == host for s in nova.services):
            raise exception.InvalidInput(
                reason=_('no compute host %(host)s in any readable cell') %
                {'host': host})
        host_scope = set().union(*(subtree(providers, node.uuid)
                                   for node in nodes
                                   if node.uuid in providers))
        scope = host_scope if scope is None else scope & host_scope
    return scope


def keep_reads(sources, reader, full=False):
    """Let ``reader`` reuse the allocations earlier scans of the sources'
    cloud read of providers whose generation has not moved, and keep
    what it reads (readers/kept_reads.py), when it is a reader that can
    (placement's API); ``full``: this scan reads every provider.

    The file is the cloud's, beside its journals, bound to the identity
    a journal records of it (restore.identity).
    """
    if not reader.keeps_reads:
        return
    cloud = restore.identity(sources.placement.endpoint, sources.cloud())
    reader.use_kept(kept_mod.KeptReads(
        sources.journal_dir(), cloud, sources.full_read_interval,
        full=full))


class Audit:
    """One read of the cloud and its findings."""

    def __init__(self, placement_reader, nova_reader, progress=None,
                 rules=rules.DEFAULT_RULES, zun_reader=None):
        self.placement = placement_reader
        self.nova = nova_reader
        self.progress = progress
        self.rules = rules
        # A zun_db.ZunDBReader when the zun site rule is on.
        self.zun = zun_reader

    def run(self, resource_provider=None, host=None, shown=None,
            reported=None, trees=None):
        """Findings for the selected providers.

        ``shown(finding)`` says which findings will be displayed, from
        their ``reason``, ``action`` and ``is_orphan`` alone (it is given
        the rules' verdicts, see classify.classify); the consumer records
        (project, user, type) of those whose owner nova cannot name are
        read from placement. ``shown=None`` returns every finding and
        reads no record (metrics need none). ``resource_provider``: a
        uuid as validate_uuid gives it.

        ``reported(finding)`` says which of the findings returned the run
        reports or acts on (None: all of them), and ``trees(snapshot,
        findings)`` the roots of the provider trees it reports (None:
        none): each is judged only from allocations read in this run
        (see _verified).
        """
        with memory.paused():
            return self._run(resource_provider, host, shown, reported,
                             trees)

    def _run(self, resource_provider, host, shown, reported, trees):
        started = time.monotonic()
        providers = self.placement.providers()
        progress_mod.log_time(LOG, started, 'Read %(count)d resource '
                              'provider(s) from %(source)s in %(seconds).3f s',
                              {'count': len(providers),
                               'source': self.placement.label})
        if (resource_provider is None and host is None and
                self.placement.reads_in_background):
            # Every provider: nothing to learn from nova first, so the
            # allocations are read while nova is (placement works, the
            # tool waits). The providers were read first: a placement
            # that cannot be read fails the run before nova is read.
            scope = None
            nova, allocations = self._read_both(providers)
        else:
            nova = self._read_nova()
            if host is not None:
                self.nova.prove_host(nova, providers, host)
            scope = select_scope(providers, nova, resource_provider, host)
            targets = providers if scope is None else scope
            if self.progress:
                self.progress.stage(_('providers read'), len(targets))
            allocations = self._read_allocations(targets)
        snapshot, findings = self._verified(
            providers, nova, allocations, scope, shown, reported, trees)
        self.placement.keep()
        self.snapshot = snapshot
        if LOG.isEnabledFor(logging.DEBUG):
            self._log_decisions(snapshot)
        return findings

    def _verified(self, providers, nova, allocations, scope, shown,
                  reported, trees):
        """(snapshot, findings), every finding reported resting only on
        allocations read in this run.

        The reader may have taken some providers' allocations from
        earlier scans (kept_providers), which can show allocations
        removed since: the providers the reported findings and trees rest
        on (engine.resting) are read again and, if they differ from what
        was kept, everything is judged again from nova's side as read,
        until none of them is a kept one. Each round reads more providers
        afresh, so it ends.
        """
        kept = self.placement.kept_providers
        # nova's side as read, for another round: each judges it afresh.
        read = _copy(nova) if kept else None
        rounds = 0
        while True:
            rounds += 1
            snapshot, findings = self._judge(
                providers, nova, allocations, scope, shown,
                first=rounds == 1)
            if not kept:
                break
            chosen = findings if reported is None else [
                f for f in findings if reported(f)]
            roots = trees(snapshot, findings) if trees is not None else ()
            if roots:
                chosen = chosen + [f for f in findings
                                   if f.root_provider in roots]
            stale = resting.rests_on(snapshot, chosen, roots) & kept
            if not stale:
                break
            again = self.placement.read_again(stale)
            kept = self.placement.kept_providers
            same = _same([a for a in allocations if a.provider in stale],
                         again)
            LOG.debug('Read again %(count)d provider(s) that reported '
                      'findings rest on: %(same)s', {
                          'count': len(stale),
                          'same': 'as kept' if same else
                          'changed since they were kept, judged again'})
            if same:
                # The snapshot is what it was: so are its findings.
                break
            allocations = sorted(
                [a for a in allocations if a.provider not in stale] + again,
                key=_by_provider)
            nova = _copy(read)
        snapshot.placement.kept = frozenset(kept)
        LOG.debug('Placement\'s allocations: %(kept)d provider(s) as '
                  'earlier scans read them, the others read in this run '
                  '(%(rounds)d round(s) of classification)', {
                      'kept': len(kept), 'rounds': rounds})
        return snapshot, findings

    def _judge(self, providers, nova, allocations, scope, shown,
               first=True):
        """(snapshot, findings) of these allocations and nova's side:
        what nova says of their consumers, read, then the classification,
        as for the run's only read. ``first``: the run's first judgement,
        which reports its progress.
        """
        progress = self.progress if first else None
        consumers = index_mod.consumers_of(allocations)
        placement = model.PlacementSnapshot(
            providers=providers, allocations=allocations,
            scope=None if scope is None else frozenset(scope))
        if progress:
            progress.stage(_('consumers checked'), len(consumers))
        # What resolving and unknown_to_nova look at: the consumers no
        # live instance owns, a few of them. Sifted once here, not in
        # each from every consumer (each pass costs a look-up apiece).
        # ``consumers`` may be the keys of the reader's grouping, which
        # have no difference(): filtered in C all the same.
        unowned = set(itertools.filterfalse(nova.instances.__contains__,
                                            consumers))
        started = time.monotonic()
        self.nova.resolve(nova, unowned)
        progress_mod.log_time(LOG, started, 'Looked up %(count)d consumer(s) '
                              'no live instance owns in %(source)s in '
                              '%(seconds).3f s', {'count': len(unowned),
                                                  'source': self.nova.label})
        # A reader that shows no deleted compute node proves those their
        # allocations are on (readers/provider_proof.py).
        self.nova.prove_deleted_nodes(nova, providers, allocations, unowned)
        # Those nova has no trace of: the ones Zun, placement's records
        # and the rules that read them are asked about.
        unknown = index_mod.unknown_to_nova(nova, unowned)
        if self.zun is not None:
            # After placement's allocations: Zun writes a container's row
            # before it claims anything, so a container's allocation
            # read above has its row by now (see zun_db).
            started = time.monotonic()
            nova.zun = self.zun.read(unknown)
            progress_mod.log_time(LOG, started, 'Asked Zun about %(count)d '
                                  'consumer(s) nova has no trace of in '
                                  '%(seconds).3f s', {'count': len(unknown)})
        if progress:
            progress(len(consumers))
            progress.finish()
        # A bulk reader (fast mode) reads consumer records from placement's
        # database: no per-consumer reads, no second classification.
        bulk_records = (self.placement.consumer_records
                        if self.placement.reads_records_in_bulk else None)
        shown_records = None
        if bulk_records is not None and (
                shown is not None and self.rules is rules.DEFAULT_RULES):
            # The built-in rules look at the records of the consumers
            # nova has no trace of, and findings take project and user
            # from them: read those now, and the shown ones' later.
            shown_records = bulk_records
            placement.consumers.update(bulk_records(unknown))
        elif bulk_records is not None:
            placement.consumers.update(bulk_records())
        else:
            # rules.unmanaged_consumer judges a consumer nova has no
            # trace of on nova's trees by its record (project, type):
            # read those few now, one request each, so that every
            # classification, shown or not, has them.
            judged = index_mod.on_nova_trees(placement, nova, unknown)
            if judged:
                found, _allocs = self.placement.consumers(judged)
                placement.consumers.update(found)
        snapshot = model.Snapshot(placement=placement, nova=nova)
        if scope is not None:
            # "No allocations at all" must look beyond the scope.
            placement.consumers_elsewhere = self._held_elsewhere(
                snapshot, consumers)
        self._read_claims(snapshot)
        findings = self._classify(snapshot, shown)
        findings = self._with_internal_hints(snapshot, findings)
        if shown_records is not None:
            found = shown_records(
                {f.consumer for f in findings if f.consumer in consumers} -
                placement.consumers.keys())
            placement.consumers.update(found)
            findings = classify.with_records(findings, found)
        # Rows to be shown whose owner nova cannot name (strangers, cells
        # that could not be read) take project, user and type from
        # placement's consumer record: read those few and classify again.
        # Repairs read every consumer afresh anyway.
        wanted = set()
        if shown is not None and not consumers <= placement.consumers.keys():
            wanted = {f.consumer for f in findings
                      if f.consumer in consumers and f.project_id is None
                      } - set(placement.consumers)
        if wanted:
            found, _allocs = self.placement.consumers(wanted)
            placement.consumers.update(found)
            findings = self._reclassify(snapshot, findings, found, shown)
        return snapshot, findings

    def _read_nova(self):
        started = time.monotonic()
        nova = self.nova.read()
        progress_mod.log_time(
            LOG, started, 'Read %(source)s: %(cells)d cell(s), %(unread)d not '
            'read; %(nodes)d compute node(s), %(services)d service(s), '
            '%(instances)d instance(s), %(migrations)d migration(s), '
            '%(builds)d build request(s) in %(seconds).3f s', {
                'source': self.nova.label, 'cells': len(nova.cells),
                'unread': len(nova.unreadable_cells),
                'nodes': len(nova.compute_nodes),
                'services': len(nova.services),
                'instances': len(nova.instances),
                'migrations': len(nova.migrations),
                'builds': len(nova.build_requests)})
        return nova

    def _read_allocations(self, targets, cancelled=None):
        started = time.monotonic()
        kwargs = {} if cancelled is None else {'cancelled': cancelled}
        allocations = self.placement.allocations(
            targets, progress=self.progress, **kwargs)
        if allocations is not None:
            progress_mod.log_time(
                LOG, started, 'Read %(count)d allocation(s) on '
                '%(providers)d provider(s) from %(source)s in %(seconds).3f s',
                {'count': len(allocations), 'providers': len(targets),
                 'source': self.placement.label})
        return allocations

    def _log_decisions(self, snapshot):
        """At debug level, the rule that decided each consumer in scope,
        one line each: what an operator who doubts a row (or its
        absence) follows. Not made otherwise: it runs every rule again.
        """
        for consumer, decided in classify.decisions(snapshot, self.rules):
            LOG.debug('Consumer %(consumer)s: %(decisions)s', {
                'consumer': consumer, 'decisions': '; '.join(
                    'on %s: %s (rule %s) -> %s: %s' % (
                        provider or '-', verdict.reason, rule,
                        verdict.action, verdict.details)
                    for provider, rule, verdict in decided)})

    def _with_internal_hints(self, snapshot, findings):
        """The findings, those of instances holding no allocation at all
        saying why, where their request spec shows it (see
        heal.missing_details): read for those few instances only.
        """
        missing = {f.consumer for f in findings
                   if f.reason == reasons.MISSING_ALLOCATIONS}
        if not missing:
            return findings
        self.nova.read_internal_hints(snapshot.nova, missing)
        if not snapshot.nova.internal_hints:
            return findings
        return classify.with_internal_hints(findings, snapshot.nova)

    def _read_claims(self, snapshot):
        """What the live instances holding a port's classes below their
        node's root claim (rules.leaked_port_allocation), read before
        classifying: only those instances, most often none.

        A reader that cannot read claims leaves them unread, which the
        rule takes as nothing proven (base.NovaReader).
        """
        if rules.leaked_port_allocation not in self.rules:
            return
        candidates = classify.claim_candidates(snapshot)
        if candidates:
            self.nova.read_claims(snapshot.nova, candidates)

    def _classify(self, snapshot, shown):
        """Classify; then, for the orphans held by live instances, read
        when nova last worked on those instances and classify their
        consumers again (see rules.unsettled).

        The first pass keeps every orphan, shown or not: one may turn out
        to be ``in_progress``, which ``shown`` may want.
        """
        first = None if shown is None else (
            lambda verdict: verdict.is_orphan or shown(verdict))
        # Built once for every classification of the run.
        cloud = index_mod.CloudIndex(snapshot.placement.providers,
                                     snapshot.nova.compute_nodes)
        findings = classify.classify(snapshot, self.rules, shown=first,
                                     cloud=cloud)
        candidates = classify.unsettled_candidates(snapshot, findings)
        if candidates:
            before = len(snapshot.nova.unreadable_cells)
            self.nova.read_activity(snapshot.nova, candidates)
            if len(snapshot.nova.unreadable_cells) != before:
                # A cell failed meanwhile: it protects all it may own.
                findings = classify.classify(snapshot, self.rules,
                                             shown=first, cloud=cloud)
            else:
                findings = classify.with_activity(
                    snapshot, findings, candidates, self.rules, shown=first,
                    cloud=cloud)
        if shown is not None:
            findings = [f for f in findings if shown(f)]
        return findings

    def _reclassify(self, snapshot, findings, records, shown):
        """The findings that classifying again, now with these consumer
        records, gives; classifying only what the records can change.

        Site rules may read any record: everything is classified again.
        With the built-in rules a record changes only its own consumer's
        findings: project and user (classify.with_records), and for a
        consumer nova has no trace of its type, so those consumers'
        allocations are classified again on their own (nothing but their
        own allocations, nova and the providers decide them). Should that
        show a row the first pass did not, everything is classified
        again, to keep classify's order.
        """
        if self.rules is not rules.DEFAULT_RULES:
            return classify.classify(snapshot, self.rules, shown=shown)
        nova, placement = snapshot.nova, snapshot.placement
        strangers = index_mod.unknown_to_nova(nova, records)
        findings = classify.with_records(findings, {
            c: r for c, r in records.items() if c not in strangers})
        if not strangers:
            return findings
        part = model.PlacementSnapshot(
            providers=placement.providers,
            allocations=index_mod.held_by(placement.allocations, strangers),
            consumers=placement.consumers, scope=placement.scope,
            # Only the strangers' findings are kept: spare building a
            # missing_allocations finding for every instance.
            missing_among=frozenset())
        again = {(f.consumer, f.resource_provider): f
                 for f in classify.classify(
                     model.Snapshot(placement=part, nova=nova), self.rules,
                     shown=shown)
                 if f.consumer in strangers}
        before = {(f.consumer, f.resource_provider) for f in findings
                  if f.consumer in strangers}
        if not again.keys() <= before:
            return classify.classify(snapshot, self.rules, shown=shown)
        result = []
        for f in findings:
            if f.consumer in strangers:
                f = again.get((f.consumer, f.resource_provider))
                if f is None:
                    continue
            result.append(f)
        return result

    def _read_both(self, providers):
        """nova's side, and the allocations on every provider meanwhile.

        If reading nova fails, the allocation reads still to be sent are
        not, and nova's error is raised, as if they had come after.
        """
        if self.progress:
            self.progress.stage(_('providers read'), len(providers))
        stop = threading.Event()
        outcome = {}

        def read_allocations():
            try:
                outcome['allocations'] = self._read_allocations(
                    providers, cancelled=stop.is_set)
            except BaseException as e:
                outcome['error'] = e

        reader = threading.Thread(target=read_allocations,
                                  name='placement-allocations', daemon=True)
        reader.start()
        try:
            nova = self._read_nova()
        except BaseException:
            stop.set()
            reader.join()
            raise
        reader.join()
        if 'error' in outcome:
            raise outcome['error']
        return nova, outcome['allocations']

    def _held_elsewhere(self, snapshot, consumers):
        candidates = {inst.uuid for inst, _node in
                      heal.missing_allocations(
                          index_mod.SnapshotIndex(snapshot))}
        if not candidates:
            return frozenset()
        _records, allocations = self.placement.consumers(candidates)
        return frozenset(c for c, allocs in allocations.items() if allocs)


def _copy(nova):
    """nova's snapshot as read, apart from another judgement's additions
    (what resolving, proving and the per-instance reads add).
    """
    return dataclasses.replace(
        nova, cells=dict(nova.cells), compute_nodes=dict(nova.compute_nodes),
        services=list(nova.services), instances=dict(nova.instances),
        migrations=dict(nova.migrations), mappings=dict(nova.mappings),
        activity=dict(nova.activity), claims=dict(nova.claims),
        internal_hints=dict(nova.internal_hints),
        unverifiable_roots=dict(nova.unverifiable_roots),
        unread=list(nova.unread))


def _by_provider(alloc):
    return alloc.provider


def _same(before, after):
    """Whether two reads of the same providers hold the same allocations."""
    def held(allocations):
        return sorted((a.consumer, a.provider, sorted(a.resources.items()))
                      for a in allocations)
    return held(before) == held(after)
