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
from nova_orphans.repair import actions

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
    base = '/resource_providers/%s' % uuid
    try:
        rp = client.get(base)
    except exception.PlacementError as e:
        if getattr(e, 'status_code', None) == 404:
            return None
        raise
    inventories = client.get(base + '/inventories')['inventories']
    traits = client.get(base + '/traits')['traits']
    aggregates = client.get(base + '/aggregates')['aggregates']
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
        try:
            allocs = client.get('/resource_providers/%s/allocations' %
                                uuid)['allocations']
        except exception.PlacementError as e:
            if getattr(e, 'status_code', None) == 404:
                continue
            raise
        for consumer in allocs:
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
                          if o.startswith('failed')}
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
            return {u: actions.failed(str(e)) for u in uuids}
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
                self.client.request(
                    'DELETE', '/resource_providers/%s' % uuid,
                    version=WRITE_VERSION, expected=(204,))
            except exception.PlacementError as e:
                status = getattr(e, 'status_code', 0) or 0
                if 400 <= status < 500:
                    self.journal.not_applied(entry_id, str(e))
                if status == 404:
                    return actions.gone()
                if status != 409:
                    raise
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
            return actions.failed(str(e))
        return actions.DONE


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
    if not_back is not None and outcome.startswith(actions.failed('')):
        not_back.add(entry['provider']['uuid'])
    return outcome


def _restore_provider(client, entry, dry_run, not_back):
    if entry.get('applied') is False:
        return actions.skipped(_('never applied (%(reason)s)') %
                               {'reason': entry.get('reason')})
    record = entry['provider']
    parent = record.get('parent_provider_uuid')
    if parent in not_back:
        return actions.failed(_('refused: parent %(parent)s not put '
                                'back') % {'parent': parent})
    try:
        current = read_record(client, record['uuid'])
        if current is not None:
            if _same(current, record):
                return actions.skipped(_('already as before'))
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
        return actions.failed(str(e))
    return actions.DONE


def _create(client, record):
    version = WRITE_VERSION
    body = {'uuid': record['uuid'], 'name': record['name']}
    if record.get('parent_provider_uuid'):
        body['parent_provider_uuid'] = record['parent_provider_uuid']
    rp = client.request('POST', '/resource_providers', json=body,
                        version=version, expected=(200,)).json()
    base = '/resource_providers/%s' % record['uuid']
    generation = rp['generation']
    if record['inventories']:
        for rc in record['inventories']:
            if rc.startswith('CUSTOM_'):
                client.request('PUT', '/resource_classes/%s' % rc,
                               version=version, expected=(201, 204))
        generation = client.request(
            'PUT', base + '/inventories', version=version, expected=(200,),
            json={'resource_provider_generation': generation,
                  'inventories': record['inventories']}).json()[
            'resource_provider_generation']
    if record['traits']:
        for trait in record['traits']:
            if trait.startswith('CUSTOM_'):
                client.request('PUT', '/traits/%s' % trait, version=version,
                               expected=(201, 204))
        generation = client.request(
            'PUT', base + '/traits', version=version, expected=(200,),
            json={'resource_provider_generation': generation,
                  'traits': record['traits']}).json()[
            'resource_provider_generation']
    if record['aggregates']:
        client.request(
            'PUT', base + '/aggregates', version=version, expected=(200,),
            json={'resource_provider_generation': generation,
                  'aggregates': record['aggregates']})
