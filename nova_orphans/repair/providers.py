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
"""Delete the provider trees of deleted compute nodes, and put them back.

Never loses data, in this order, tree by tree:

1. The tree's orphaned allocations are repaired by the Repairer, as
   ``allocations clean`` repairs them: re-verified, generation-checked,
   journaled. A tree holding another service's provider (see
   engine/provider_rules.py) then stays: it is never deleted.
2. The tree's allocations are read again. Any left (a live instance's,
   an in-progress move's, one the repair skipped) keep the tree, and the
   row says whose they are: placement would refuse the DELETE anyway,
   and deleting a provider under a consumer nova still counts on would
   lose it.
3. nova is read again: a node nova-compute re-created under the same
   uuid is live, and its tree stays.
4. Children first, each provider's full record (name, parent,
   generation, every inventory with all its fields, traits, aggregates)
   is read fresh, journaled, and only then DELETEd. Placement's DELETE
   has no generation check; it refuses (409) a provider that got an
   allocation or a child meanwhile: the tree is then judged once more
   (step 2) and the DELETE tried once more, or the tree skipped.

``restore`` re-creates a journaled provider exactly (see
:func:`restore_provider`), parents before children, before the
allocations that were on it.
"""

import urllib.parse

from oslo_log import log as logging

from nova_orphans.engine import provider_rules
from nova_orphans.engine import reasons
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans import outcomes as outcomes_mod
from nova_orphans.readers import placement_api
from nova_orphans.repair import actions
from nova_orphans.repair import writes

LOG = logging.getLogger(__name__)

# The journal entry kind: an entry with a ``provider`` record.
ACTION = reasons.DELETE_PROVIDER
INVENTORY_FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
                    'allocation_ratio')
# Aggregates with a generation (1.19), a body from POST (1.20).
WRITE_VERSION = (1, 28)


def read_record(client, uuid):
    """The provider's full record as placement has it now, or None if it
    is gone.
    """
    parts = {}
    for part in ('', '/inventories', '/traits', '/aggregates'):
        # Deleted meanwhile, even between these reads: gone.
        parts[part] = placement_api.gone_if_missing(client, uuid, part)
        if parts[part] is None:
            return None
    rp = parts['']
    inventories = parts['/inventories']['inventories']
    traits = parts['/traits']['traits']
    aggregates = parts['/aggregates']['aggregates']
    return {
        'uuid': rp['uuid'], 'name': rp['name'],
        'parent_provider_uuid': rp.get('parent_provider_uuid'),
        'root_provider_uuid': rp.get('root_provider_uuid'),
        'generation': rp['generation'],
        'inventories': {rc: {f: inv[f] for f in INVENTORY_FIELDS}
                        for rc, inv in sorted(inventories.items())},
        'traits': sorted(traits),
        'aggregates': sorted(aggregates),
    }


def holders(client, tree):
    """{consumer: [provider, ...]} of what is allocated on the tree now."""
    held = {}
    for uuid in tree:
        doc = placement_api.gone_if_missing(client, uuid, '/allocations')
        for consumer in (doc or {}).get('allocations', ()):
            held.setdefault(consumer, []).append(uuid)
    return held


class ProviderCleaner:
    """Deletes orphaned provider trees; see the module docstring.

    ``repairer`` is an actions.Repairer over the audit's snapshot,
    sharing the journal; its nova reader judges the trees again.
    """

    def __init__(self, client, repairer, journal=None, dry_run=False,
                 max_count=None, stop=None):
        self.client = client
        self.repairer = repairer
        self.journal = journal
        self.dry_run = dry_run
        self.max_count = max_count
        self.stop = stop
        # The outcomes of the trees' orphaned allocations' repairs.
        self.repair_outcomes = []

    def _stopped(self):
        return self.stop is not None and self.stop.is_set()

    def _judge_again(self, roots):
        """{root uuid: (reason, action, details)} from a fresh read of
        nova, right before a tree is deleted: a node nova-compute has
        re-created under the same uuid meanwhile is live again.
        """
        nova = self.repairer.nova.read()
        providers = self.repairer.audit.placement.providers
        return {root: provider_rules.judge_root(providers[root], nova)[:3]
                for root in roots}

    def clean(self, rows, findings):
        """(rows, outcomes): one outcome per provider row of ``rows``
        (the orphaned trees' ProviderFindings, top-down per tree).
        """
        trees = {}
        for row in rows:
            trees.setdefault(row.root_provider, []).append(row)
        outcomes = {}
        roots = list(trees)
        if self.max_count is not None:
            for root in roots[self.max_count:]:
                for row in trees[root]:
                    outcomes[row.uuid] = actions.skipped(
                        _('--max-count reached'))
            roots = roots[:self.max_count]
        if self.dry_run:
            for root in roots:
                for row in trees[root]:
                    outcomes[row.uuid] = actions.dry_run()
            return rows, [outcomes[r.uuid] for r in rows]
        wanted = {r.uuid for root in roots for r in trees[root]}
        repairs = [f for f in findings
                   if f.is_orphan and f.resource_provider in wanted and
                   f.reason != reasons.MISSING_ALLOCATIONS]
        repaired, repair_outcomes = (self.repairer.clean(repairs)
                                     if repairs else ([], []))
        self.repair_outcomes = repair_outcomes
        failed_repairs = {f.root_provider for f, o in zip(repaired,
                                                          repair_outcomes)
                          if o.kind == outcomes_mod.FAILED}
        verdicts = self._judge_again(roots) if roots else {}
        providers = self.repairer.audit.placement.providers
        whole = provider_rules.tree_roots(providers) if roots else {}
        for root in roots:
            tree = trees[root]
            foreign = provider_rules.foreign_in_tree(
                providers, whole.get(root, ()))
            if self._stopped():
                outcome = actions.interrupted()
            elif foreign:
                outcome = actions.skipped(_(
                    'provider(s) %(providers)s on the tree are another '
                    'service\'s') % {'providers': ', '.join(foreign)})
            elif root in failed_repairs:
                outcome = actions.failed(_(
                    'an orphaned allocation on the tree could not be '
                    'repaired; see "allocations clean"'))
            elif verdicts[root][1] != reasons.DELETE_PROVIDER:
                outcome = actions.skipped(_('now %(reason)s: %(details)s') % {
                    'reason': verdicts[root][0],
                    'details': verdicts[root][2]})
            else:
                results = self._delete_tree(tree)
                for row in tree:
                    outcomes[row.uuid] = results[row.uuid]
                continue
            for row in tree:
                outcomes[row.uuid] = outcome
        return rows, [outcomes[r.uuid] for r in rows]

    def _delete_tree(self, tree):
        """{provider: outcome} of deleting one tree, children first."""
        uuids = [r.uuid for r in tree]
        rows = {r.uuid: r for r in tree}
        results = {}
        try:
            kept = self._kept(uuids)
        except exception.NovaOrphansException as e:
            return {u: actions.failed_by(e) for u in uuids}
        if kept:
            return {u: kept for u in uuids}
        order = [u for u in reversed(uuids)]
        for i, uuid in enumerate(order):
            if self._stopped():
                outcome = actions.interrupted()
            else:
                outcome = self._delete_one(rows[uuid], uuids)
            results[uuid] = outcome
            if outcome != actions.DONE and outcome != actions.gone():
                # A parent cannot go while a child stays.
                for parent in order[i + 1:]:
                    results[parent] = actions.skipped(
                        _('a child provider of it was not deleted'))
                break
        return results

    def _kept(self, uuids):
        """A skip outcome naming what still holds the tree, or None."""
        held = holders(self.client, uuids)
        if not held:
            return None
        return actions.skipped(_('allocations that are not orphans remain '
                                 '(consumers %(consumers)s)') % {
            'consumers': ', '.join(sorted(held))})

    def _delete_one(self, row, tree, again=True):
        uuid = row.uuid
        try:
            record = read_record(self.client, uuid)
            if record is None:
                return actions.gone()
            entry_id = self.journal.record({
                'action': ACTION, 'provider': record,
                'findings': [row.to_dict()],
            })
            try:
                deleted = self._delete(record)
            except exception.PlacementError as e:
                status = e.status_code or 0
                if 400 <= status < 500:
                    self.journal.not_applied(entry_id, str(e))
                if status == 404:
                    return actions.gone()
                if status != 409:
                    raise
                deleted = False
            if not deleted:
                LOG.debug('Provider %s changed or got an allocation while '
                          'it was deleted; judging it again', uuid)
                kept = self._kept(tree)
                if kept is not None:
                    return kept
                if not again:
                    return actions.skipped(_('changed concurrently twice; '
                                             'run again'))
                return self._delete_one(row, tree, again=False)
        except exception.NovaOrphansException as e:
            return actions.failed_by(e)
        return actions.DONE

    def _delete(self, record):
        """DELETE the provider of ``record``: True once it is deleted,
        False if it changed meanwhile after a lost answer (its journal
        entry then stays as it is); PlacementError as placement refused.

        The DELETE carries no generation, so a fault that may have lost
        only its answer (see repair.writes.write) is settled by reading
        the provider back: gone, the DELETE was applied; as recorded
        (its generation), it was not, and is sent again; changed, it is
        judged again.
        """
        uuid = record['uuid']
        url = '/resource_providers/%s' % uuid
        lost = False
        attempt = 0
        while True:
            try:
                self.client.request('DELETE', url, version=WRITE_VERSION,
                                    expected=(204,))
                return True
            except exception.PlacementError as e:
                status = e.status_code or 0
                if lost and status in (404, 409):
                    # An earlier try, on its way past a timeout, landed:
                    # gone; or the provider changed since it was read.
                    return status == 404
                if e.transient is None:
                    raise
                self.client.answer_lost(e, 'DELETE', url)
                lost = True
                try:
                    now = read_record(self.client, uuid)
                except exception.NovaOrphansException:
                    raise e
                if now is None:
                    return True
                if now['generation'] != record['generation']:
                    return False
                if not self.client.may_write_again(attempt, 'DELETE', url):
                    raise
                attempt += 1


# Restore ---------------------------------------------------------------


def _same(current, record):
    return all(current[k] == record[k] for k in (
        'uuid', 'name', 'parent_provider_uuid', 'inventories', 'traits',
        'aggregates'))


def restore_provider(client, entry, dry_run=False, not_back=None):
    """Re-create one journaled provider exactly; its outcome.

    A provider with that uuid or that name existing again is refused and
    reported: nova or an operator made it since, and whatever it is, the
    restore must not overwrite or duplicate it. One identical in every
    recorded field but its generation is a restore already made.

    ``not_back``: the set of the providers the run could not put back;
    a provider whose parent is one is refused (it would hang under
    someone else's provider), and one that is not put back is added.
    """
    outcome = _restore_provider(client, entry, dry_run, not_back or set())
    if not_back is not None and outcome.kind == outcomes_mod.FAILED:
        not_back.add(entry['provider']['uuid'])
    return outcome


def _restore_provider(client, entry, dry_run, not_back):
    if entry.get('applied') is False:
        return actions.skipped(_('never applied (%(reason)s)') %
                               {'reason': entry.get('reason')},
                               resolved=True)
    record = entry['provider']
    parent = record.get('parent_provider_uuid')
    if parent in not_back:
        return actions.failed(_('refused: parent %(parent)s not put '
                                'back') % {'parent': parent})
    try:
        current = read_record(client, record['uuid'])
        if current is not None:
            if _same(current, record):
                return actions.skipped(_('already as before'), resolved=True)
            return actions.failed(_(
                'refused: provider %(uuid)s exists again') %
                {'uuid': record['uuid']})
        named = client.get('/resource_providers?name=%s' % urllib.parse.quote(
            record['name'], safe=''))['resource_providers']
        if named:
            return actions.failed(_(
                'refused: provider %(other)s is named %(name)s now') %
                {'other': named[0]['uuid'], 'name': record['name']})
        if dry_run:
            return actions.dry_run()
        _create(client, record)
    except exception.NovaOrphansException as e:
        return actions.failed_by(e)
    return actions.DONE


def _create(client, record):
    """Re-create the provider of ``record``: the provider, then its
    inventories, traits and aggregates, each write with the generation
    the previous one left.

    A fault that may have lost only a write's answer (see
    repair.writes.write) is settled by reading the provider back: as
    the write leaves it, the write was applied; at the generation it
    carried (or, for the provider itself, absent), it was not and is
    sent again; otherwise the restore fails, the provider changed.
    """
    uuid = record['uuid']
    body = {'uuid': uuid, 'name': record['name']}
    if record.get('parent_provider_uuid'):
        body['parent_provider_uuid'] = record['parent_provider_uuid']

    def created(now):
        if now is None:
            return writes.UNCHANGED
        same = (now['name'], now['parent_provider_uuid']) == (
            record['name'], record.get('parent_provider_uuid'))
        return writes.APPLIED if same else writes.CHANGED

    generation = _checked(client, uuid, 'POST', '/resource_providers', body,
                          created, lambda doc: doc['generation'])
    base = '/resource_providers/%s' % uuid
    for key in ('inventories', 'traits', 'aggregates'):
        if not record[key]:
            continue
        if key != 'aggregates':
            kind = 'resource_classes' if key == 'inventories' else 'traits'
            for name in record[key]:
                if name.startswith('CUSTOM_'):
                    _ensure(client, '/%s/%s' % (kind, name))

        def settled(now, key=key, carried=generation):
            if now is None:
                return writes.CHANGED
            if now[key] == record[key]:
                return writes.APPLIED
            return (writes.UNCHANGED if now['generation'] == carried
                    else writes.CHANGED)

        generation = _checked(
            client, uuid, 'PUT', base + '/' + key,
            {'resource_provider_generation': generation,
             key: record[key]}, settled,
            lambda doc: doc['resource_provider_generation'])


def _ensure(client, url):
    """PUT ``url``, a custom resource class or trait that may exist
    already; a lost answer is settled by asking whether it exists now.
    """
    attempt = 0
    while True:
        try:
            client.request('PUT', url, version=WRITE_VERSION,
                           expected=(201, 204))
            return
        except exception.PlacementError as e:
            if e.transient is None:
                raise
            client.answer_lost(e, 'PUT', url)
            try:
                found = client.request('GET', url, version=WRITE_VERSION,
                                       expected=(200, 204, 404))
            except exception.NovaOrphansException:
                raise e
            if found.status_code != 404:
                return
            if not client.may_write_again(attempt, 'PUT', url):
                raise
            attempt += 1


def _checked(client, uuid, method, url, body, settled, generation):
    """Send one write of a provider's restore; the provider's generation
    after it (``generation(answer)``, or as read back). ``settled(record
    now)``: what a lost answer means (see _create).
    """
    expected = (200,)
    lost = False
    attempt = 0
    while True:
        try:
            return generation(client.request(
                method, url, json=body, version=WRITE_VERSION,
                expected=expected).json())
        except exception.PlacementError as e:
            status = e.status_code or 0
            # Refused after a lost answer: perhaps by the earlier try.
            if e.transient is None and not (lost and status == 409):
                raise
            if e.transient is not None:
                client.answer_lost(e, method, url)
                lost = True
            try:
                now = read_record(client, uuid)
            except exception.NovaOrphansException:
                raise e
            verdict = settled(now)
            if verdict == writes.APPLIED:
                return now['generation']
            if verdict == writes.CHANGED or status == 409:
                raise exception.PlacementError(
                    method=method, url=url, reason=_(
                        'provider %(uuid)s changed while the answer to '
                        'this write was lost') % {'uuid': uuid})
            if not client.may_write_again(attempt, method, url):
                raise
            attempt += 1
