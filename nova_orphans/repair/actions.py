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
"""Carry out the repair actions of findings, never losing data.

For each consumer, right before its write: read its allocations from
placement, THEN nova's rows for it, classify it again, and act only on
the rows that are still orphans with the same action. The order
matters: the write carries the consumer generation read first, so
whatever nova did after that read to the consumer's allocations (an
unshelve, a move) makes placement refuse the write (409) instead of
being judged by nova rows read before it. The consumer is then
re-evaluated once, and skipped if it changes again. A journal entry
holding the full documents is on disk before each write.

Consumers whose repair only empties or trims their own allocations are
written many to a request (``POST /allocations``, each with the
generation read first: one transaction, one generation bump per
provider), their journal entries on disk, with one fsync, before it. If
placement refuses such a request (a 409: one of them changed), nothing
of it was applied, and each of its consumers goes the one-by-one way:
read again, re-evaluated once. In fast mode the documents of a batch
are read from placement's database in one query, still before nova's
rows, and the write carries the generations read there.
"""

import collections
import concurrent.futures
import dataclasses
import os
import threading
import typing

from oslo_log import log as logging

from nova_orphans.conf import orphans as orphans_conf
from nova_orphans.engine import changes
from nova_orphans.engine import classify
from nova_orphans.engine import index as index_mod
from nova_orphans.engine import model
from nova_orphans.engine import reasons
from nova_orphans.engine import rules as rules_mod
from nova_orphans.engine import shapes
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans import outcomes as outcomes_mod
from nova_orphans.readers import placement_api
from nova_orphans.readers import placement_db
from nova_orphans.repair import capacity
from nova_orphans.repair import documents
from nova_orphans.repair import heal as heal_mod
from nova_orphans.repair import journal as journal_mod
from nova_orphans.repair import streams as streams_mod
from nova_orphans.repair import writes

LOG = logging.getLogger(__name__)

DONE = outcomes_mod.done()
# Consumers re-verified against nova together, in one set of queries.
BATCH = 100
# Actions that change only the consumer's own allocations, never
# another's: these are written many consumers to a request.
BATCHED_ACTIONS = (reasons.DELETE_CONSUMER, reasons.REMOVE_PROVIDER,
                   reasons.TRIM_PROVIDER)
# Fewer are written one by one, concurrently: as fast for so few, and a
# refused batch would cost each of its consumers a second read.
BATCH_MIN = 8


skipped = outcomes_mod.skipped
failed = outcomes_mod.failed
failed_by = outcomes_mod.failed_by
dry_run = outcomes_mod.dry_run
interrupted = outcomes_mod.interrupted


def gone():
    return skipped(_('the allocation is gone'), 'gone', resolved=True)


def other_writer():
    """Placement refused the write (the consumer had changed), and the
    consumer read again no longer needs it: another writer (another run
    of this tool, an operator, nova) did the repair or made it moot.
    """
    return skipped(_('changed by another writer'), 'other_writer',
                   resolved=True)


# What a consumer read again may now be that needs no repair any more:
# not what cannot be judged now, nor what nova is still working on (it
# may be an orphan once nova is done, or a compute died mid-operation).
_SETTLED = frozenset(reasons.HEALTHY_REASONS) - {reasons.UNVERIFIABLE,
                                                 reasons.IN_PROGRESS}


def no_longer(action, now):
    """Read again right before its write, the row no longer needs
    ``action``: it is ``now`` another reason, or another action. Its
    orphan is resolved if ``now`` is a reason that needs no repair.
    """
    return skipped(_('no longer %(action)s: now %(reason)s') % {
        'action': action, 'reason': now}, 'no_longer',
        resolved=now in _SETTLED)


@dataclasses.dataclass(frozen=True)
class RepairOptions:
    """How a run repairs: what the operator asked (``dry_run``,
    ``max_count`` consumers at most, ``heal``, the ``journal`` to write,
    None for the default one) and how the run goes: ``concurrency``
    writes at once, the ``rules`` it classified with, its ``progress``,
    its ``stop`` (nova_orphans.interrupt: set by a signal, asked before
    each batch and each write, so only the writes in flight finish) and
    the ``notice`` a signal prints at once meanwhile (None: nothing).
    """

    dry_run: bool = False
    max_count: typing.Optional[int] = None
    heal: bool = False
    journal: typing.Optional[str] = None
    concurrency: int = orphans_conf.DEFAULT_CONCURRENCY
    rules: tuple = rules_mod.DEFAULT_RULES
    progress: typing.Any = None
    stop: typing.Any = None
    notice: typing.Any = None

    def check(self, directory=None):
        """Refuse a --journal that cannot be written, or without one a
        journals' ``directory`` other users could write, before anything
        is read.
        """
        if self.dry_run:
            return
        if self.journal is not None:
            journal_mod.check_path(self.journal)
        elif directory is not None and os.path.isdir(directory):
            journal_mod.check_directory(os.stat(directory), directory)


class Repairer:
    """Repairs one audit's orphans through placement ``client``.

    ``nova_reader`` reads nova's rows again before each write;
    ``placement_db``, in fast mode, a PlacementDBReader for the
    batches' documents; ``zun_reader`` a zun_db.ZunDBReader when the zun
    site rule is on (read again with nova's rows, see _read_fresh).
    """

    def __init__(self, client, nova_reader, audit_snapshot, journal=None,
                 options=RepairOptions(), placement_db=None,
                 zun_reader=None):
        self.client = client
        self.reader = placement_api.PlacementAPIReader(client)
        self.placement_db = placement_db
        self.nova = nova_reader
        self.audit = audit_snapshot
        self.journal = journal
        self.options = options
        self.zun = zun_reader
        # See _reclassify.
        self._cloud = None
        self._cloud_lock = threading.Lock()
        # Consumers whose write met another writer's (see _reevaluate),
        # counted under _cloud_lock.
        self.conflicts = 0
        # {(consumer, provider, action): the row as written} (see _commit).
        self._written = {}

    def clean(self, findings):
        """Repair the orphans among ``findings``: returns ``(rows,
        outcomes)``, the orphans in order and the Outcome of each.

        Findings with action ``none`` are never touched and get no row.
        """
        options, progress = self.options, self.options.progress
        rows = [f for f in findings if f.is_orphan]
        outcomes = [None] * len(rows)
        plan = collections.OrderedDict()
        for i, finding in enumerate(rows):
            if finding.action == reasons.HEAL and not options.heal:
                outcomes[i] = skipped(_('healing needs --heal'))
            elif options.dry_run:
                outcomes[i] = dry_run()
            else:
                plan.setdefault(finding.consumer, []).append(i)
        consumers = list(plan)
        if options.max_count is not None:
            for consumer in consumers[options.max_count:]:
                for i in plan[consumer]:
                    outcomes[i] = skipped(_('--max-count reached'))
            consumers = consumers[:options.max_count]
        if progress:
            progress.stage(_('consumers repaired'), len(consumers))

        # Half of the requests placement may have in flight are streams
        # of batches, each with one write in flight at a time: while a
        # stream reads and journals its next batch, the others' writes
        # keep placement's workers busy. Each stream has an equal share
        # of the requests for its one-by-one reads and writes, so no
        # more than placement_concurrency are ever sent.
        streams = self._streams(consumers, max(1, options.concurrency // 2))
        threads = max(1, options.concurrency // max(1, len(streams)))

        def repair(stream):
            results = {}
            while stream and not self._stopped():
                # A migration and its instance, both to repair, are
                # written in turn (streams.apart).
                batch, later = streams_mod.apart(
                    stream[:BATCH], lambda c: {c, self._partner(c)} - {None})
                stream = later + stream[BATCH:]
                planned = {c: [rows[i] for i in plan[c]] for c in batch}
                with concurrent.futures.ThreadPoolExecutor(threads) as pool:
                    results.update(self._repair_batch(pool, batch, planned))
                if progress:
                    progress(len(batch))
            return results

        with concurrent.futures.ThreadPoolExecutor(
                max(1, len(streams))) as pipeline:
            for results in list(pipeline.map(repair, streams)):
                for consumer, result in results.items():
                    for i, outcome in zip(plan[consumer], result):
                        outcomes[i] = outcome
        # The batches a signal stopped before they were read.
        outcomes = [interrupted() if o is None else o for o in outcomes]
        rows = [self._written.get((f.consumer, f.resource_provider,
                                   f.action), f) for f in rows]
        if progress:
            progress.finish()
        if self.conflicts:
            # Once per run: a second clean running beside this one makes
            # every write of it meet a conflict.
            LOG.info('%(count)d consumer(s) were changed by another '
                     'writer between this run\'s read and its write; each '
                     'was read again, and left as it was where it no '
                     'longer needed this repair',
                     {'count': self.conflicts})
        return rows, outcomes

    def _stopped(self):
        stop = self.options.stop
        return stop is not None and stop.is_set()

    def _streams(self, consumers, count):
        """Split the consumers into up to ``count`` lists, in order, that
        share no provider, so that each can be written batch after batch
        while the others are: writes of different streams never meet on
        a provider's generation (placement would retry, or refuse, them).
        """
        touched = collections.defaultdict(set)
        partners = {c: self._partner(c) for c in consumers}
        followed = set(consumers) | {p for p in partners.values() if p}
        for alloc in index_mod.held_by(self.audit.placement.allocations,
                                       followed):
            touched[alloc.consumer].add(alloc.provider)
        links = [sorted(touched[c] | touched.get(partners[c], set())) or
                 ['consumer:' + c] for c in consumers]
        return [[consumers[n] for n in stream]
                for stream in streams_mod.split(links, count)]

    def _repair_batch(self, pool, batch, planned):
        """{consumer: outcomes} of one batch: read, verify, write."""
        docs = self._read_batch_docs(pool, batch)
        fresh = self._read_fresh(batch)
        single = [c for c in batch
                  if not all(f.action in BATCHED_ACTIONS
                             for f in planned[c])]
        alone = set(single)
        singles = pool.map(
            lambda c: self._repair(c, planned[c], docs[c], fresh), single)
        results, plans = {}, []
        for consumer in batch:
            if consumer in alone:
                continue
            try:
                prepared = self._prepare(consumer, planned[consumer],
                                         docs[consumer], fresh)
            except exception.NovaOrphansException as e:
                results[consumer] = self._failed(consumer, planned[consumer],
                                                 e)
                continue
            if isinstance(prepared, list):
                results[consumer] = prepared
            else:
                plans.append(prepared)
        # One request per write microversion (typed consumers keep their
        # type at 1.38; untyped ones must be written at 1.37).
        by_version = collections.defaultdict(list)
        for prepared in plans:
            by_version[self._version(prepared)].append(prepared)
        for group in by_version.values():
            if len(group) < BATCH_MIN:
                for outcome in pool.map(
                        lambda p: self._write_batch(pool, [p]), group):
                    results.update(outcome)
            else:
                results.update(self._write_batch(pool, group))
        results.update(zip(single, singles))
        return results

    def _read_batch_docs(self, pool, batch):
        """Every consumer's documents (see _read_docs), read in bulk from
        placement's database in fast mode, else one GET each.
        """
        if self.placement_db is None:
            return dict(zip(batch, pool.map(self._read_docs, batch)))
        partners = {c: self._partner(c) for c in batch}
        try:
            read = placement_db.consumer_documents(
                self.placement_db, set(batch) | {
                    p for p in partners.values() if p},
                typed=self.client.has_consumer_types)
        except exception.NovaOrphansException as e:
            return {c: e for c in batch}
        return {c: {k: read[k] for k in (c, partners[c]) if k}
                for c in batch}

    def _version(self, prepared):
        docs = [dict(prepared.docs.get(c) or documents.empty(),
                     allocations=after)
                for c, after in prepared.change.items()]
        return documents.docs_write_version(docs)

    def _write_batch(self, pool, group):
        """Journal and write prepared single-consumer changes in one go.

        Placement applies all of a request or nothing; after it refuses
        one (a 4xx, a generation conflict among them), every consumer of
        it goes the one-by-one way, read again and re-evaluated once.
        """
        if self._stopped():
            return {p.consumer: _interrupted(p.outcomes) for p in group}
        try:
            self._commit(group)
        except (writes.Retry, exception.PlacementError) as e:
            status = e.status_code or 0
            if len(group) == 1 or not 400 <= status < 500:
                return self._after_single(group, e)
            LOG.debug('Placement refused a batch of %(count)d consumers '
                      '(%(status)s); writing them one by one',
                      {'count': len(group), 'status': status})
            results = pool.map(self._again, group)
            return dict(zip([p.consumer for p in group], results))
        except exception.NovaOrphansException as e:
            return self._after_single(group, e)
        return {p.consumer: p.outcomes for p in group}

    def _after_single(self, group, error):
        """Outcomes after a write that was not refused as a batch: a
        lone consumer's conflict is re-evaluated as always; anything else
        fails every consumer of the request.
        """
        if isinstance(error, writes.Retry):
            p, = group
            return {p.consumer: self._again(p)}
        return {p.consumer: self._failed(p.consumer, p.planned, error)
                for p in group}

    def _again(self, prepared):
        """A refused prepared change, read again and re-evaluated once."""
        return self._guarded(
            prepared.consumer, prepared.planned,
            lambda: self._reevaluate(prepared.consumer, prepared.planned))

    def _read_docs(self, consumer):
        """The consumer's document, and its instance's for a migration.

        Read before nova's rows (see the module docstring). Returns the
        error instead of raising it, so one failed read fails one
        consumer.
        """
        try:
            docs = {consumer: documents.normalize(
                self.reader.consumer(consumer))}
            partner = self._partner(consumer)
            if partner:
                docs[partner] = documents.normalize(
                    self.reader.consumer(partner))
            return docs
        except exception.NovaOrphansException as e:
            return e

    def _repair(self, consumer, planned, docs, fresh):
        def attempt():
            try:
                return self._attempt(consumer, planned, docs, fresh)
            except writes.Retry:
                return self._reevaluate(consumer, planned)
        return self._guarded(consumer, planned, attempt)

    def _reevaluate(self, consumer, planned):
        """The consumer changed under us: read it again, try once more.

        An allocation gone by then was removed by the writer we met, so
        it is that writer's repair, not a failure of ours.
        """
        LOG.debug('Consumer %s changed concurrently; re-evaluating',
                  consumer)
        with self._cloud_lock:
            self.conflicts += 1
        docs = self._read_docs(consumer)
        fresh = self._read_fresh([consumer])
        try:
            outcomes = self._attempt(consumer, planned, docs, fresh)
        except writes.Retry:
            return [skipped(_('changed concurrently twice; run '
                              'again'))] * len(planned)
        return [other_writer() if o == gone() else o for o in outcomes]

    def _read_fresh(self, consumers):
        """nova's rows for these consumers, read again after their
        allocations, and what Zun's database says now of those nova has
        no trace of (when the zun rule is on).
        """
        fresh = self.nova.read_consumers(self.audit.nova, consumers)
        if self.zun is not None:
            fresh.zun = self.zun.read(index_mod.unknown_to_nova(fresh,
                                                                consumers))
        return fresh

    def _guarded(self, consumer, planned, work):
        try:
            return work()
        except exception.NovaOrphansException as e:
            return self._failed(consumer, planned, e)

    def _failed(self, consumer, planned, error):
        # Debug: placement down fails every consumer alike, and the front
        # ends print each cause once (app.sentences.group_failures).
        LOG.debug('Repair of consumer %(consumer)s failed: %(error)s',
                  {'consumer': consumer, 'error': error})
        why = capacity.repair_refused(error, self._provider_name)
        return [failed_by(error, why)] * len(planned)

    def _attempt(self, consumer, planned, docs, fresh):
        """One verify-journal-write round for one consumer."""
        prepared = self._prepare(consumer, planned, docs, fresh)
        if isinstance(prepared, list):
            return prepared
        if self._stopped():
            return _interrupted(prepared.outcomes)
        self._commit([prepared])
        return prepared.outcomes

    def _prepare(self, consumer, planned, docs, fresh):
        """Verify one consumer: its outcomes if there is nothing to
        write, else a _Prepared change.
        """
        if isinstance(docs, Exception):
            raise docs
        partner = self._partner(consumer)
        current = {(f.resource_provider, f.action): f
                   for f in self._reclassify(docs, fresh)
                   if f.consumer == consumer}
        act = [f for f in planned
               if (f.resource_provider, f.action) in current]
        outcomes = [DONE if f in act else self._why_not(f, current)
                    for f in planned]
        if not act:
            return outcomes
        change = self._change(consumer, partner, docs, act, fresh)
        if change is None:
            return [skipped(_('nested resources: use nova-manage placement '
                              'heal_allocations'))
                    if o == DONE else o for o in outcomes]
        if isinstance(change, str):
            return [skipped(change) if o == DONE else o for o in outcomes]
        return _Prepared(consumer, planned, docs, act, change, outcomes)

    def _commit(self, group):
        """Journal the prepared changes, then write them in one request
        (see writes.commit). Each row, journaled and shown, is what the
        write changes (_as_written), not what the audit read.
        """
        targets = {}
        for p in group:
            targets.update(self._targets(p.docs, p.change))
        rows = [[_as_written(f, p) for f in p.act] for p in group]
        writes.commit(self.client, self.journal, [{
            'action': p.act[0].action,
            'findings': [f.to_dict() for f in written],
            'consumers': {c: {'before': p.docs.get(c) or documents.empty(),
                              'after': after}
                          for c, after in p.change.items()},
        } for p, written in zip(group, rows)], targets)
        for written in rows:
            self._written.update(
                ((f.consumer, f.resource_provider, f.action), f)
                for f in written)

    def _partner(self, consumer):
        """A migration consumer's instance, if the consumer is one.

        Its allocations decide the migration's verdict (whether the
        instance holds its own on the source node), and they are where
        ``return_to_instance`` moves the migration's. (A migration's
        instance never changes, so the audit's snapshot can tell.)
        """
        mig = self.audit.nova.migrations.get(consumer)
        return mig.instance_uuid if mig else None

    def _reclassify(self, docs, fresh):
        allocations = [
            model.Allocation(consumer=c, provider=rp,
                             resources=body['resources'])
            for c, doc in docs.items()
            for rp, body in doc['allocations'].items()]
        records = {c: model.Consumer(
            c, project_id=doc['project_id'], user_id=doc['user_id'],
            generation=doc['consumer_generation'],
            consumer_type=doc['consumer_type']) for c, doc in docs.items()}
        snapshot = model.Snapshot(
            placement=model.PlacementSnapshot(
                providers=self.audit.placement.providers,
                allocations=allocations, consumers=records),
            nova=fresh)
        # Every consumer is classified against the audit's providers and
        # compute nodes: their look-ups are built once, not per consumer
        # (that made a run's CPU grow with orphans times providers).
        with self._cloud_lock:
            if self._cloud is None:
                self._cloud = index_mod.CloudIndex(
                    self.audit.placement.providers,
                    self.audit.nova.compute_nodes)
        return classify.classify(snapshot, self.options.rules,
                                 cloud=self._cloud)

    def _provider_name(self, uuid):
        provider = self.audit.placement.providers.get(uuid)
        return provider.name if provider is not None else None

    @staticmethod
    def _why_not(finding, current):
        now = [f for (rp, _action), f in current.items()
               if rp == finding.resource_provider]
        if not now:
            return gone()
        # Same reason, other action: the action is what changed.
        return no_longer(finding.action,
                         now[0].reason if now[0].reason != finding.reason
                         else now[0].action)

    def _change(self, consumer, partner, docs, act, fresh):
        """{consumer: allocations after}, or why not (str), or None."""
        action = act[0].action
        doc = docs[consumer]
        if action == reasons.HEAL:
            return self._heal(consumer, act[0], fresh)
        after, target = changes.after(
            action, doc['allocations'], {f.resource_provider for f in act},
            docs[partner]['allocations']
            if action == reasons.RETURN_TO_INSTANCE else None)
        if target is None:
            return {consumer: after}
        if docs[partner]['project_id'] is None:
            # The instance has no consumer yet: it inherits the owner.
            docs[partner] = dict(docs[partner],
                                 project_id=doc['project_id'],
                                 user_id=doc['user_id'],
                                 consumer_type=documents.UNKNOWN_TYPE)
        return {consumer: after, partner: target}

    def _heal(self, consumer, finding, fresh):
        inst = fresh.instances.get(consumer)
        data = self.nova.heal_data([inst]).get(consumer)
        if data is None:
            return _('no flavor recorded for the instance')
        flavor, boot_from_volume, network_info = data
        if heal_mod.nested_reason(flavor, network_info):
            return None
        if finding.resource_provider not in self.audit.placement.providers:
            return _('the compute node has no resource provider')
        return {consumer: {finding.resource_provider: {
            'resources': shapes.resources_from_flavor(
                flavor, boot_from_volume)}}}

    def _targets(self, docs, change):
        targets = {}
        for c, after in change.items():
            doc = docs.get(c) or documents.empty()
            if doc['project_id'] is None:
                inst = self.audit.nova.instances.get(c)
                doc = dict(doc, project_id=inst.project_id,
                           user_id=inst.user_id)
            targets[c] = (dict(doc, allocations=after),
                          doc['consumer_generation'])
        return targets


# One consumer's verified change, not yet journaled or written.
_Prepared = collections.namedtuple(
    '_Prepared', 'consumer planned docs act change outcomes')


def _as_written(finding, prepared):
    """``finding`` as its consumer's write changes it: the resources it
    takes away from the document read right before the write (or, a
    heal, those it writes) and the owner placement had there.
    """
    doc = prepared.docs.get(finding.consumer) or documents.empty()
    owner = {} if doc['project_id'] is None else {
        'project_id': doc['project_id'], 'user_id': doc['user_id']}
    return dataclasses.replace(
        finding, resources=documents.row_resources(
            prepared.change.get(finding.consumer), doc['allocations'],
            finding.resource_provider), **owner)


def _interrupted(outcomes):
    """A verified change a signal stopped before it was journaled: its
    rows that were to be done were not; the others keep their reason.
    """
    return [interrupted() if o == DONE else o for o in outcomes]
