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
"""

import collections
import concurrent.futures

from oslo_log import log as logging

from nova_orphans.engine import classify
from nova_orphans.engine import model
from nova_orphans.engine import reasons
from nova_orphans.engine import rules as rules_mod
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans.readers import placement_api
from nova_orphans.repair import documents
from nova_orphans.repair import heal as heal_mod

LOG = logging.getLogger(__name__)

DONE = 'done'
# Consumers re-verified against nova together, in one set of queries.
BATCH = 100
WRITE_ACTIONS = (reasons.DELETE_CONSUMER, reasons.REMOVE_PROVIDER,
                 reasons.RETURN_TO_INSTANCE, reasons.HEAL)


def skipped(why):
    return 'skipped: %s' % why


def failed(why):
    return 'failed: %s' % why


class _Retry(Exception):
    """The consumer changed under us; evaluate it again."""


class Repairer:

    def __init__(self, client, nova_reader, audit_snapshot, journal=None,
                 dry_run=False, max_count=None, heal=False, concurrency=8,
                 progress=None, rules=rules_mod.DEFAULT_RULES):
        self.client = client
        self.reader = placement_api.PlacementAPIReader(client)
        self.nova = nova_reader
        self.audit = audit_snapshot
        self.journal = journal
        self.dry_run = dry_run
        self.max_count = max_count
        self.heal = heal
        self.concurrency = concurrency
        self.progress = progress
        self.rules = rules

    def clean(self, findings):
        """Repair the orphans among ``findings``; returns their outcomes.

        The result has one outcome string per finding, in order; findings
        with action ``none`` are never touched and get no row.
        """
        rows = [f for f in findings if f.is_orphan]
        outcomes = [None] * len(rows)
        plan = collections.OrderedDict()
        for i, finding in enumerate(rows):
            if finding.action == reasons.HEAL and not self.heal:
                outcomes[i] = skipped(_('healing needs --heal'))
            elif self.dry_run:
                outcomes[i] = skipped(_('dry run'))
            else:
                plan.setdefault(finding.consumer, []).append(i)
        consumers = list(plan)
        if self.max_count is not None:
            for consumer in consumers[self.max_count:]:
                for i in plan[consumer]:
                    outcomes[i] = skipped(_('--max-count reached'))
            consumers = consumers[:self.max_count]
        if self.progress:
            self.progress.stage(_('consumers repaired'), len(consumers))
        for start in range(0, len(consumers), BATCH):
            batch = consumers[start:start + BATCH]
            with concurrent.futures.ThreadPoolExecutor(
                    self.concurrency) as pool:
                docs = dict(zip(batch, pool.map(self._read_docs, batch)))
                fresh = self.nova.read_consumers(self.audit.nova, batch)
                results = pool.map(
                    lambda c: self._repair(c, [rows[i] for i in plan[c]],
                                           docs[c], fresh), batch)
                for consumer, result in zip(batch, results):
                    for i, outcome in zip(plan[consumer], result):
                        outcomes[i] = outcome
                    if self.progress:
                        self.progress()
        if self.progress:
            self.progress.finish()
        return rows, outcomes

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
        try:
            try:
                return self._attempt(consumer, planned, docs, fresh)
            except _Retry:
                LOG.info('Consumer %s changed concurrently; re-evaluating',
                         consumer)
                docs = self._read_docs(consumer)
                fresh = self.nova.read_consumers(self.audit.nova,
                                                 [consumer])
                try:
                    return self._attempt(consumer, planned, docs, fresh)
                except _Retry:
                    return [skipped(_('changed concurrently twice; run '
                                      'again'))] * len(planned)
        except exception.NovaOrphansException as e:
            LOG.warning('Repair of consumer %(consumer)s failed: %(error)s',
                        {'consumer': consumer, 'error': e})
            return [failed(str(e))] * len(planned)

    def _attempt(self, consumer, planned, docs, fresh):
        """One verify-journal-write round for one consumer."""
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
        entry = self.journal.record({
            'action': act[0].action,
            'findings': [f.to_dict() for f in act],
            'consumers': {c: {'before': docs.get(c) or _empty(),
                              'after': after}
                          for c, after in change.items()},
        })
        try:
            self._write(docs, change)
        except _Retry:
            # Placement refused the whole request: restore must not try
            # to undo it (its consumer may well have changed since).
            self.journal.not_applied(entry, _('consumer generation '
                                              'conflict'))
            raise
        except exception.PlacementError as e:
            if 400 <= getattr(e, 'status_code', 0) < 500:
                self.journal.not_applied(entry, str(e))
            raise
        return outcomes

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
        return classify.classify(snapshot, self.rules)

    @staticmethod
    def _why_not(finding, current):
        now = [f for (rp, _action), f in current.items()
               if rp == finding.resource_provider]
        if not now:
            return skipped(_('the allocation is gone'))
        # Same reason, other action: the action is what changed.
        return skipped(_('no longer %(action)s: now %(reason)s') % {
            'action': finding.action,
            'reason': now[0].reason if now[0].reason != finding.reason
            else now[0].action})

    def _change(self, consumer, partner, docs, act, fresh):
        """{consumer: allocations after}, or why not (str), or None."""
        action = act[0].action
        doc = docs[consumer]
        if action == reasons.HEAL:
            return self._heal(consumer, act[0], fresh)
        drop = {f.resource_provider for f in act}
        after = {rp: body for rp, body in doc['allocations'].items()
                 if rp not in drop}
        if action != reasons.RETURN_TO_INSTANCE:
            return {consumer: after}
        moved = {rp: body for rp, body in doc['allocations'].items()
                 if rp in drop}
        target = dict(docs[partner]['allocations'])
        for rp, body in moved.items():
            resources = dict(target.get(rp, {}).get('resources', {}))
            for rc, amount in body['resources'].items():
                resources[rc] = resources.get(rc, 0) + amount
            target[rp] = {'resources': resources}
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
            'resources': heal_mod.resources_from_flavor(
                flavor, boot_from_volume)}}}

    def _write(self, docs, change):
        targets = {}
        for c, after in change.items():
            doc = docs.get(c) or _empty()
            if doc['project_id'] is None:
                inst = self.audit.nova.instances.get(c)
                doc = dict(doc, project_id=inst.project_id,
                           user_id=inst.user_id)
            targets[c] = (dict(doc, allocations=after),
                          doc['consumer_generation'])
        write(self.client, targets)


def write(client, targets):
    """Write {consumer: (document, generation)} in one request.

    One consumer is a PUT; several are one POST /allocations, so moves
    between consumers are atomic, as nova does them.
    """
    # Never above what the server speaks: below 1.38 documents carry no
    # type, and the bodies are the same from 1.28 to 1.37.
    version = min(documents.docs_write_version(
        [doc for doc, _gen in targets.values()]), client.version)
    bodies = {c: documents.body(doc, gen, version)
              for c, (doc, gen) in targets.items()}
    try:
        if len(bodies) == 1:
            (consumer, body), = bodies.items()
            client.request('PUT', '/allocations/%s' % consumer, json=body,
                           version=version, expected=(204,))
        else:
            client.request('POST', '/allocations', json=bodies,
                           version=version, expected=(204,))
    except exception.GenerationConflict:
        raise _Retry()


def _empty():
    return {'allocations': {}, 'project_id': None, 'user_id': None,
            'consumer_generation': None, 'consumer_type': None}
