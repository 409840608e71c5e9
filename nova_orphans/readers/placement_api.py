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
"""Read placement's side of the snapshot through its REST API.

Placement has no "all allocations" call, so this costs one GET per
provider in scope; they run with bounded concurrency, over the
connections the client's keystoneauth session keeps open. With kept
reads (use_kept), only the providers whose generation moved since an
earlier scan read them are read (readers/kept_reads.py).
"""

import concurrent.futures

from oslo_log import log as logging

from nova_orphans.conf import orphans as orphans_conf
from nova_orphans.engine import hosts
from nova_orphans.engine import model
from nova_orphans import exception
from nova_orphans.readers import base

LOG = logging.getLogger(__name__)


class PlacementAPIReader(base.PlacementReader):

    # Audit.run may read allocations while it reads nova: this reader
    # waits on placement, not on the tool's CPU.
    reads_in_background = True
    keeps_reads = True

    def __init__(self, client, concurrency=orphans_conf.DEFAULT_CONCURRENCY):
        self.client = client
        self.concurrency = concurrency
        self._kept = None
        # {uuid: generation} of the listing; the providers whose
        # allocations this run took from kept reads, and those it read.
        self._listed = {}
        self.kept_providers = set()
        self._fresh = set()

    def use_kept(self, kept):
        """Take the allocations of the providers whose generation has
        not moved from ``kept`` (a kept_reads.KeptReads), and keep what
        is read there.
        """
        self._kept = kept

    @property
    def label(self):
        return 'placement\'s API at %s' % self.client.endpoint

    def providers(self):
        """All providers, with sharing flags and the aggregates that matter.

        Aggregates are only read for sharing providers and the providers
        that share an aggregate with them: enough to tell whether a
        sharing provider serves a nova compute node.
        """
        raw = self.client.get('/resource_providers')['resource_providers']
        sharing = {p['uuid'] for p in self.client.get(
            '/resource_providers?required=%s' % model.SHARING_TRAIT
        )['resource_providers']}
        aggregates = {uuid: set() for uuid in sharing}
        for uuid in sharing:
            aggs = (gone_if_missing(self.client, uuid, '/aggregates') or
                    {}).get('aggregates', ())
            for agg in aggs:
                for member in self.client.get(
                        '/resource_providers?member_of=%s' % agg
                )['resource_providers']:
                    aggregates.setdefault(member['uuid'], set()).add(agg)
        foreign = self._foreign_owners(raw)
        self._listed = {p['uuid']: p.get('generation') for p in raw}
        return {
            p['uuid']: model.Provider(
                uuid=p['uuid'], name=p['name'],
                root_uuid=p.get('root_provider_uuid') or p['uuid'],
                parent_uuid=p.get('parent_provider_uuid'),
                generation=p.get('generation', 0),
                sharing=p['uuid'] in sharing,
                aggregates=frozenset(aggregates.get(p['uuid'], ())),
                foreign_owner=foreign.get(p['uuid']))
            for p in raw}

    def _foreign_owners(self, raw):
        """{provider uuid: model.foreign_owner} of the providers another
        service owns: one request for the owner traits providers carry,
        one per such trait other than OWNER_NOVA, and one per
        ``blazar_`` provider whose name alone does not say it is
        Blazar's (for its reservation classes).
        """
        # Only the owner traits some provider carries (1.6).
        traits = self.client.get(
            '/traits?name=startswith:%s&associated=true' %
            model.OWNER_TRAIT_PREFIX)['traits']
        owners = {}
        for trait in sorted(traits):
            if trait == model.OWNER_NOVA:
                continue
            for p in self.client.get('/resource_providers?required=%s' %
                                     trait)['resource_providers']:
                owners.setdefault(p['uuid'], set()).add(trait)
        names = {p['uuid']: p['name'] for p in raw}
        found = {}
        for p in raw:
            name = p['name'] or ''
            parent_name = names.get(p.get('parent_provider_uuid'))
            owned = owners.get(p['uuid'], ())
            classes = ()
            if (not owned and name.startswith(model.BLAZAR_PREFIX) and
                    name != model.BLAZAR_PREFIX + (parent_name or '')):
                # Gone meanwhile: none.
                resp = self.client.request(
                    'GET', '/resource_providers/%s/inventories' % p['uuid'],
                    expected=(200, 404))
                classes = (resp.json()['inventories']
                           if resp.status_code == 200 else ())
            owner = model.foreign_owner(name, parent_name, owned, classes)
            if owner is not None:
                found[p['uuid']] = owner
        return found

    def allocations(self, provider_uuids, progress=None, cancelled=None):
        """Allocations on the given providers, read concurrently.

        ``cancelled()``, if given, is asked before each GET; once it says
        yes the rest are not sent and None is returned. With kept reads,
        a provider the listing shows at the generation its allocations
        were kept under is not read: they are taken from there
        (``kept_providers``).
        """
        wanted = sorted(provider_uuids)
        reused = {}
        if self._kept is not None:
            reused = self._kept.reusable(
                {u: self._listed[u] for u in wanted if u in self._listed})
        read = self._read_each([u for u in wanted if u not in reused],
                               progress, cancelled)
        if read is None:
            return None
        self.kept_providers.update(reused)
        result = []
        for uuid in wanted:
            held = reused.get(uuid)
            if held is None:
                result.extend(read[uuid])
                continue
            # The kept dicts themselves: nothing changes a record's.
            result.extend(
                model.Allocation(consumer=consumer, provider=uuid,
                                 resources=resources)
                for consumer, resources in held.items())
            if progress:
                progress()
        return result

    def read_again(self, provider_uuids):
        """The allocations on these providers, read now whatever kept
        reads say (the audit's proof of a finding).
        """
        wanted = sorted(provider_uuids)
        read = self._read_each(wanted)
        self.kept_providers.difference_update(wanted)
        return [alloc for uuid in wanted for alloc in read[uuid]]

    def keep(self):
        """Save the kept reads for the next scan: what this one read,
        and what it reused; a full read when it read every provider.
        """
        if self._kept is not None:
            self._kept.save(self._listed,
                            full=not self._listed.keys() - self._fresh)

    def _read_each(self, uuids, progress=None, cancelled=None):
        """{uuid: its allocations} of these providers, read concurrently
        (None: ``cancelled``), each kept under the generation placement
        returned with them.
        """
        def read(uuid):
            if cancelled is not None and cancelled():
                return None
            doc = gone_if_missing(self.client, uuid, '/allocations')
            if doc is None:
                # Deleted since the listing (nova deletes a compute
                # node's provider with it): its allocations went too.
                return None, {}
            return doc.get('resource_provider_generation'), {
                consumer: body['resources']
                for consumer, body in doc['allocations'].items()}

        result = {}
        with concurrent.futures.ThreadPoolExecutor(self.concurrency) as pool:
            for uuid, answer in zip(uuids, pool.map(read, uuids)):
                if answer is None:
                    return None
                generation, held = answer
                self._fresh.add(uuid)
                if self._kept is not None:
                    self._kept.put(uuid, generation, held)
                result[uuid] = [
                    model.Allocation(consumer=consumer, provider=uuid,
                                     resources=resources)
                    for consumer, resources in held.items()]
                if progress:
                    progress()
        return result

    def fully_reserved(self, provider_uuids):
        """{uuid: its classes} of these providers whose every inventory
        has ``reserved`` at least ``total``: one GET each, concurrently
        (asked only of providers that hold nothing).
        """
        def read(uuid):
            doc = self.client.get('/resource_providers/%s/inventories' % uuid)
            return uuid, whole(doc.get('inventories') or {})

        with concurrent.futures.ThreadPoolExecutor(self.concurrency) as pool:
            return {uuid: classes for uuid, classes in
                    pool.map(read, sorted(provider_uuids)) if classes}

    def inventories(self, provider_uuids):
        """{uuid: {class: engine.hosts.Inventory}} of these providers
        (the host view's, engine.hosts.providers_to_read): one GET each,
        concurrently; a provider deleted since it was listed has none.
        """
        def read(uuid):
            doc = gone_if_missing(self.client, uuid, '/inventories')
            return uuid, hosts.inventories_from_api(
                doc or {'inventories': {}})

        with concurrent.futures.ThreadPoolExecutor(self.concurrency) as pool:
            return dict(pool.map(read, sorted(provider_uuids)))

    def traits(self, names):
        """{provider uuid: the traits of ``names`` it carries}: one
        request for those placement has (a trait it does not have is
        carried by none, and ``required=`` would refuse it), then one
        per trait.
        """
        if not names:
            return {}
        known = self.client.get('/traits?name=in:%s' % ','.join(
            sorted(names)))['traits']
        carried = {}
        for name in sorted(known):
            for p in self.client.get('/resource_providers?required=%s' %
                                     name)['resource_providers']:
                carried.setdefault(p['uuid'], set()).add(name)
        return {uuid: frozenset(found) for uuid, found in carried.items()}

    def resource_classes(self):
        """The names of placement's resource classes, standard and
        custom (``GET /resource_classes``).
        """
        return frozenset(rc['name'] for rc in self.client.get(
            '/resource_classes')['resource_classes'])

    def consumer(self, consumer_uuid):
        """One consumer's full allocation document, as placement returns it.

        ``{}``-allocations means placement has no allocations for it.
        """
        return self.client.get('/allocations/%s' % consumer_uuid)

    def consumers(self, consumer_uuids):
        """Consumer records (project, user, generation, type), concurrently.

        Returns ``(records, allocations_by_consumer)``.
        """
        def read(uuid):
            return uuid, self.client.get('/allocations/%s' % uuid)

        records, allocations = {}, {}
        with concurrent.futures.ThreadPoolExecutor(self.concurrency) as pool:
            for uuid, doc in pool.map(read, sorted(consumer_uuids)):
                records[uuid] = model.Consumer(
                    uuid, doc.get('project_id'), doc.get('user_id'),
                    doc.get('consumer_generation'), doc.get('consumer_type'))
                allocations[uuid] = doc.get('allocations') or {}
        return records, allocations


def gone_if_missing(client, uuid, part=''):
    """``client.get`` of the provider ``uuid``'s ``part`` ('' for the
    provider, ``/inventories``...), or None when placement says 404: it
    was deleted since it was listed, as nova deletes providers with
    their compute nodes at any time. Logged at debug.
    """
    url = '/resource_providers/%s%s' % (uuid, part)
    try:
        return client.get(url)
    except exception.PlacementError as e:
        if e.status_code == 404:
            LOG.debug('The provider %(uuid)s vanished during the run '
                      '(%(url)s: 404): gone', {'uuid': uuid, 'url': url})
            return None
        raise


def whole(inventories):
    """The classes of ``inventories`` ({class: inventory}) when every
    one of them is reserved whole, else ().
    """
    if not inventories or any(
            (inv.get('reserved') or 0) < (inv.get('total') or 0) or
            not inv.get('total') for inv in inventories.values()):
        return ()
    return tuple(sorted(inventories))
