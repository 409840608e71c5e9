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
"""Undo repairs from a journal, newest first, exactly as they were.

Nothing is written before the whole journal is verified (see
journal_verify) and known to be of the cloud reached now (see
check_cloud).

An entry is put back only when every consumer it touched still holds
exactly what the repair left; a consumer that changed since (nova moved
the instance, someone else wrote) is refused and reported, never
overwritten. An entry whose consumers already hold their "before"
allocations (the repair never reached placement, or was undone) is
skipped, as is one placement is known to have refused.

A dry run judges each entry as the real run would: against placement
as the newer entries' restores would leave it, without writing.

Entries of ``providers clean`` (a deleted resource provider's record)
are replayed in the same order: newest first, so a tree comes back
parents first, and before the allocations that were on it (see
repair/providers.py).
"""

import collections
import concurrent.futures
import itertools
import os
import urllib.parse

from nova_orphans.clients import urls
from nova_orphans.conf import orphans as orphans_conf
from nova_orphans.engine import classify
from nova_orphans.engine import model
from nova_orphans.engine import reasons
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans import outcomes as outcomes_mod
from nova_orphans.readers import placement_api
from nova_orphans.readers import placement_db as placement_db_mod
from nova_orphans.repair import actions
from nova_orphans.repair import capacity
from nova_orphans.repair import documents
from nova_orphans.repair import journal
from nova_orphans.repair import providers as providers_mod
from nova_orphans.repair import streams as streams_mod
from nova_orphans.repair import writes


def load(path, placement, cloud=None, journal_clouds=(), mark=None):
    """The journal at ``path``, every line verified (journal_verify),
    refused, before anything is written, if it is damaged or altered,
    if another user could have written it (journal.check_file, before
    a line is read), or of another cloud than the one reached now (see
    check_cloud: ``placement`` is its endpoint and ``cloud`` what names
    it, as a run's header records them).

    ``mark``: the restore's own journal.Journal on ``path``, which takes
    the journal's lock before it is read and keeps it (Journal.hold);
    without it (a dry run), a journal another run holds is refused all
    the same.
    """
    if mark is not None and os.path.exists(path):
        mark.hold()
    elif journal.in_use(path):
        raise exception.JournalBusy(path=path, reason=journal.IN_USE)
    contents = journal.load(path, check=journal.check_file)
    check_cloud(path, contents.runs, placement, cloud, journal_clouds)
    return contents


# What each kind of address is called in a line naming a cloud.
_KINDS = (('placement', _('placement %(address)s')),
          ('keystone', _('keystone %(address)s')),
          ('region', _('region %(address)s')),
          ('api_database', _('API database %(address)s')))


def identity(placement, cloud):
    """The addresses a run recorded of its cloud: {kind: value}, for
    the kinds it knows of placement's endpoint, keystone's auth URL, the
    region, and (nova-orphans-manage) the API database's host and name.
    """
    cloud = cloud or {}
    kinds = {}
    if placement:
        kinds['placement'] = _endpoint(placement)
    auth_url = cloud.get('auth_url')
    if auth_url:
        # Reached at /v3 or without it, keystone is the same.
        scheme, host, path = _endpoint(auth_url)
        kinds['keystone'] = (scheme, host, urls.unversioned(path))
    if cloud.get('region'):
        kinds['region'] = cloud['region']
    database = cloud.get('api_database')
    if isinstance(database, dict) and database.get('name'):
        kinds['api_database'] = ('%s/%s' % (database['host'],
                                            database['name'])
                                 if database.get('host')
                                 else database['name'])
    return kinds


def describe(placement, cloud):
    """A cloud as a line names it: its addresses, and its clouds.yaml
    name or configuration files.
    """
    kinds = identity(placement, cloud)
    shown = {'placement': placement, 'keystone': (cloud or {}).get(
        'auth_url')}
    words = [text % {'address': shown.get(kind, kinds[kind])}
             for kind, text in _KINDS if kind in kinds]
    cloud = cloud or {}
    if cloud.get('name'):
        words.append(_('cloud %(name)s') % {'name': cloud['name']})
    elif cloud.get('config_files'):
        words.append(_('configuration %(files)s') % {
            'files': ','.join(cloud['config_files'])})
    return ', '.join(words) or _('nothing recorded')


def check_cloud(path, runs, placement, cloud=None, journal_clouds=()):
    """Refuse a journal written against another cloud.

    Each run's header records the addresses of its cloud (see
    identity); a run is of another cloud when any address that both it
    and this run know differs: the placement endpoint (which both front
    ends know), keystone's auth URL and the region (when both went
    through keystone), the API database (two runs of
    nova-orphans-manage). Resource providers of the same uuids prove
    nothing: two clouds made from one template, or a staging cloud
    loaded from production's dump, have them. A cloud reached at
    another address (an internal and a public endpoint, a new name) is
    restored into only when the operator names the journal's cloud by
    the placement endpoint its runs recorded (``journal_clouds``,
    --journal-cloud).
    """
    here = identity(placement, cloud)
    named = {_endpoint(c) for c in journal_clouds}
    unused = named - {_endpoint(r.placement) for r in runs}
    if unused:
        raise exception.JournalError(path=path, reason=_(
            '--journal-cloud %(named)s names no run of it (its runs wrote '
            'to placement at %(theirs)s): nothing was restored') % {
            'named': ', '.join(c for c in journal_clouds
                               if _endpoint(c) in unused),
            'theirs': ', '.join(sorted({r.placement or '-'
                                        for r in runs}))})
    others = []
    for run in runs:
        theirs = identity(run.placement, run.cloud)
        if (any(k in here and v != here[k] for k, v in theirs.items()) and
                _endpoint(run.placement) not in named):
            others.append(run)
    if not others:
        return
    run = others[0]
    option = ' '.join('--journal-cloud %s' % p for p in sorted(
        {r.placement for r in others}))
    raise exception.JournalError(path=path, reason=_(
        'written against another cloud (%(theirs)s) than the one this run '
        'reaches (%(here)s): nothing was restored. If it is the same cloud, '
        'now reached at another address, restore with %(option)s') % {
        'theirs': describe(run.placement, run.cloud),
        'here': describe(placement, cloud), 'option': option})


def _endpoint(url):
    """A URL as compared: scheme and host in lower case, no default
    port, no trailing slash.
    """
    parts = urllib.parse.urlsplit(url or '')
    port = parts.port
    if (parts.scheme, port) in (('http', 80), ('https', 443)):
        port = None
    host = (parts.hostname or '') + (':%d' % port if port else '')
    return (parts.scheme.lower(), host, parts.path.rstrip('/'))


def _providers(entries):
    return {rp for entry in entries
            for spec in entry.get('consumers', {}).values()
            for doc in (spec.get('before') or {}, {
                'allocations': spec.get('after') or {}})
            for rp in doc.get('allocations') or {}}


def restore(client, entries, dry_run=False,
            concurrency=orphans_conf.DEFAULT_CONCURRENCY, progress=None,
            stop=None, placement_db=None):
    """Returns [(finding, outcome)] for every finding of every entry, in
    the order they are shown (see shown_order).

    Entries are undone newest first, in batches of entries that share no
    consumer (so undoing them together is undoing them in turn): their
    consumers are read together, and their writes go in one
    generation-checked ``POST /allocations``. Placement applies all of
    it or nothing; after it refuses one (a 4xx, one consumer changed),
    each entry of it is read, judged and written again on its own.

    As clean does, the entries between two provider entries run in
    parallel streams that share no consumer (each consumer's entries
    stay in order, in one stream) and no provider (writes of different
    streams never meet on a provider's generation). A provider entry
    waits for the newer entries and is waited for by the older ones:
    a provider comes back before the allocations that were on it.
    ``placement_db`` (fast mode: a PlacementDBReader) reads a batch's
    consumers in one query instead of one GET each; the write carries
    the generations read there.

    ``progress`` counts the entries; once ``stop`` (see
    nova_orphans.interrupt) is set no other write is sent, and the
    entries not put back say so.
    """
    state = _Placement(client, placement_db, dry_run)
    state.origins = _origins(entries)
    entries = list(reversed(entries))
    outcomes = [None] * len(entries)
    # Providers this run could not put back: nothing goes on them, or
    # under them (a provider now under that uuid is someone else's).
    not_back = set()
    # Half of placement's requests are streams, each with an equal share
    # for its reads and one-by-one writes (see Repairer.clean).
    count = max(1, max(1, concurrency) // 2)
    threads = max(1, max(1, concurrency) // count)
    if progress:
        progress.stage(_('journal entries restored'), len(entries))

    def run(stream):
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            start = 0
            for batch in _batches([entries[i] for i in stream]):
                places = stream[start:start + len(batch)]
                start += len(batch)
                if stop is not None and stop.is_set():
                    done = [actions.interrupted()] * len(batch)
                else:
                    done = _restore_allocations(client, state, batch,
                                                dry_run, pool, stop,
                                                not_back)
                for i, outcome in zip(places, done):
                    outcomes[i] = outcome
                if progress:
                    progress(len(batch))

    for segment in _segments(entries):
        if 'provider' in entries[segment[0]]:
            i, = segment
            if stop is not None and stop.is_set():
                outcomes[i] = actions.interrupted()
            else:
                # A provider comes back before what was allocated on it
                # (older entries), and its parent (newer) before it.
                outcomes[i] = providers_mod.restore_provider(
                    client, entries[i], dry_run=dry_run, not_back=not_back)
            if progress:
                progress(1)
            continue
        # No stream of less than a batch: that would trade one POST for
        # several smaller ones (and a handful of entries is quick anyway).
        streams = _streams([entries[i] for i in segment],
                           min(count, -(-len(segment) // actions.BATCH)))
        streams = [[segment[n] for n in stream] for stream in streams]
        if len(streams) == 1:
            # In this thread: a signal's handler runs (and sets stop)
            # before the next write, not whenever this thread is next
            # scheduled.
            run(streams[0])
            continue
        with concurrent.futures.ThreadPoolExecutor(len(streams)) as pipeline:
            # list(): a stream's exception is raised here.
            list(pipeline.map(run, streams))
    results = []
    for entry, outcome in zip(entries, outcomes):
        results.extend((_restored(entry, row), outcome)
                       for row in entry.get('findings', ()))
    if progress:
        progress.finish()
    results.sort(key=shown_order)
    return results


def _restored(entry, row):
    """The journaled row as this restore writes it: its action the
    clean's undone, and what it names of what is written taken from the
    document written (a provider's record; a consumer's "before"), not
    from what the row recorded, which a journal altered and chained again
    could make say anything.
    """
    if 'provider' in entry:
        record = entry['provider']
        finding = model.ProviderFinding.from_dict(dict(
            row, uuid=record['uuid'], name=record.get('name'),
            parent_provider=record.get('parent_provider_uuid')))
    else:
        spec = entry['consumers'].get(row['consumer']) or {}
        before = spec.get('before') or {}
        written = dict(row, resources=documents.row_resources(
            before.get('allocations'), spec.get('after'),
            row['resource_provider']))
        if before.get('project_id') is not None:
            written.update(project_id=before['project_id'],
                           user_id=before.get('user_id'))
        finding = model.Finding.from_dict(written)
    finding.action = reasons.RESTORE_ACTIONS.get(finding.action,
                                                 finding.action)
    return finding


def shown_order(result):
    """The order restore's rows are shown in: the providers first, as
    they were put back (parents first, as ``providers clean`` deleted
    them, one at a time); then the allocations in a list's order
    (classify.order), whatever order the clean's parallel streams wrote
    the journal in.
    """
    finding = result[0]
    if isinstance(finding, model.ProviderFinding):
        return (0,)
    return (1,) + classify.order(finding)


def _segments(entries):
    """Positions of the entries, in order: each provider entry alone, and
    the runs of allocation entries between them.
    """
    for provider, group in itertools.groupby(
            range(len(entries)), lambda i: 'provider' in entries[i]):
        yield from ([i] for i in group) if provider else [list(group)]


def _streams(entries, count):
    """Split allocation entries into up to ``count`` lists of their
    positions, each in order, that share no consumer and no provider.

    Entries linked by a consumer (one consumer's entries must be undone
    in turn) or by a provider they write are kept in one list.
    """
    links = [
        (['consumer:' + c for c in sorted(entry['consumers'])] +
         ['provider:' + rp for rp in sorted(_providers([entry]))]) or
        ['entry:%d' % n] for n, entry in enumerate(entries)]
    return streams_mod.split(links, count)


def _restore_allocations(client, state, batch, dry_run, pool, stop,
                         not_back):
    """_restore_batch, but for the entries that would put allocations
    back on a provider this run could not re-create: refused.
    """
    blocked = {}
    for i, entry in enumerate(batch):
        missing = _providers([entry]) & not_back
        if missing:
            blocked[i] = actions.failed(
                _('refused: provider(s) %(providers)s not put back') %
                {'providers': ', '.join(sorted(missing))})
    rest = [e for i, e in enumerate(batch) if i not in blocked]
    done = iter(_restore_batch(client, state, rest, dry_run, pool, stop)
                if rest else ())
    return [blocked[i] if i in blocked else next(done)
            for i in range(len(batch))]


def _batches(entries):
    """Allocation entries (a segment's: see _segments) in batches that
    share no consumer.
    """
    batch, seen = [], set()
    for entry in entries:
        consumers = set(entry['consumers'])
        if len(batch) == actions.BATCH or consumers & seen:
            yield batch
            batch, seen = [], set()
        batch.append(entry)
        seen |= consumers
    if batch:
        yield batch


class _Placement:
    """Consumers as placement has them; in a dry run, as the restores
    judged so far would have left them.
    """

    def __init__(self, client, placement_db, simulate):
        self.client = client
        self.reader = placement_api.PlacementAPIReader(client)
        self.placement_db = placement_db
        self.simulate = simulate
        # Streams share no consumer: each key is one stream's.
        self.written = {}

    def consumer(self, consumer):
        if consumer in self.written:
            return self.written[consumer]
        return documents.normalize(self.reader.consumer(consumer))

    def read(self, consumer):
        """The consumer's document, or the error reading it."""
        try:
            return self.consumer(consumer)
        except exception.NovaOrphansException as e:
            return e

    def read_many(self, consumers, pool):
        """{consumer: document or the error reading it}: in fast mode in
        one read of placement's database, else one GET each.
        """
        if self.placement_db is None:
            return dict(zip(consumers, pool.map(self.read, consumers)))
        docs = {c: self.written[c] for c in consumers if c in self.written}
        rest = [c for c in consumers if c not in docs]
        if rest:
            try:
                docs.update(placement_db_mod.consumer_documents(
                    self.placement_db, rest,
                    typed=self.client.has_consumer_types))
            except exception.NovaOrphansException as e:
                docs.update(dict.fromkeys(rest, e))
        return docs

    def restored(self, consumer, doc):
        if self.simulate:
            self.written[consumer] = doc


def _restore_batch(client, state, batch, dry_run, pool, stop):
    """The outcome of each entry of one batch, in order."""
    wanted = sorted({c for entry in batch if entry.get('applied') is not False
                     for c in entry['consumers']})
    docs = state.read_many(wanted, pool)
    outcomes, ready = [None] * len(batch), collections.defaultdict(list)
    for i, entry in enumerate(batch):
        try:
            verdict = _judge(entry, docs, state.origins)
        except exception.NovaOrphansException as e:
            outcomes[i] = actions.failed_by(e)
            continue
        if isinstance(verdict, outcomes_mod.Outcome):
            outcomes[i] = verdict
        elif dry_run:
            outcomes[i] = _simulate(state, verdict)
        else:
            # One request per write microversion, as clean does.
            version = documents.docs_write_version(
                [doc for doc, _gen in verdict.values()])
            ready[version].append((i, verdict))
    for group in ready.values():
        if stop is not None and stop.is_set():
            for i, _targets in group:
                outcomes[i] = actions.interrupted()
            continue
        if len(group) < actions.BATCH_MIN:
            for i, targets in group:
                outcomes[i] = _write(client, targets, stop, batch[i])
            continue
        targets = {}
        for _i, part in group:
            targets.update(part)
        try:
            writes.write(client, targets)
            outcome = actions.DONE
        except (writes.Retry, exception.PlacementError) as e:
            status = e.status_code or 0
            if not 400 <= status < 500:
                outcome = actions.failed_by(e)
            else:
                # Nothing of it was applied: each entry on its own.
                for i, _targets in group:
                    outcomes[i] = _restore_entry(client, state, batch[i],
                                                 dry_run, stop)
                continue
        except exception.NovaOrphansException as e:
            outcome = actions.failed_by(e)
        for i, _targets in group:
            outcomes[i] = outcome
    return outcomes


def _restore_entry(client, state, entry, dry_run, stop):
    """Read, judge and write one entry on its own."""
    try:
        verdict = _judge(entry, {c: state.consumer(c)
                                 for c in entry['consumers']
                                 if entry.get('applied') is not False},
                         state.origins)
    except exception.NovaOrphansException as e:
        return actions.failed_by(e)
    if isinstance(verdict, outcomes_mod.Outcome):
        return verdict
    if dry_run:
        return _simulate(state, verdict)
    return _write(client, verdict, stop, entry)


def _origins(entries):
    """{consumer: its allocations before the first applied entry (in
    journal order) that repaired it}: what restoring the whole journal
    gives it back.
    """
    origins = {}
    for entry in entries:
        if 'provider' in entry or entry.get('applied') is False:
            continue
        for c, spec in entry['consumers'].items():
            origins.setdefault(c, spec['before'])
    return origins


def _judge(entry, current, origins=None):
    """What restoring the entry means, given its consumers' documents
    (an error instead of one is raised): its outcome if there is nothing
    to write, else the write ({consumer: (document, generation)}).

    ``origins`` (see _origins): an entry whose consumers all hold what
    they held before the journal's first repair of them was undone
    already, with the older entries that repaired them again: by an
    earlier run of restore on this journal that some refusal or a
    signal stopped (a failed migration's return to its instance and the
    instance's own repair are two entries of one consumer). Run again,
    it is as before, not changed since the repair.
    """
    if entry.get('applied') is False:
        return actions.skipped(_('never applied (%(reason)s)') %
                               {'reason': entry.get('reason')},
                               resolved=True)
    consumers = entry['consumers']
    for c in consumers:
        if isinstance(current[c], Exception):
            raise current[c]
    if all(documents.same_allocations(current[c], spec['before'])
           for c, spec in consumers.items()):
        return actions.skipped(_('already as before'), resolved=True)
    changed = [c for c, spec in consumers.items()
               if current[c]['allocations'] != spec['after']]
    if changed and origins and all(
            c in origins and documents.same_allocations(current[c],
                                                        origins[c])
            for c in consumers):
        return actions.skipped(_('already as before'), resolved=True)
    if changed:
        return actions.failed(
            _('refused: consumer %(consumers)s changed since the '
              'repair') % {'consumers': ', '.join(sorted(changed))})
    targets = {}
    for c, spec in consumers.items():
        before = spec['before']
        if before['project_id'] is None:
            # The consumer did not exist before (heal, or a return to
            # an instance without one): empty it under its owner now.
            before = dict(before, project_id=current[c]['project_id'],
                          user_id=current[c]['user_id'])
        targets[c] = (before, current[c]['consumer_generation'])
    return targets


def _simulate(state, targets):
    for c, (before, _generation) in targets.items():
        state.restored(c, documents.normalize(before))
    return actions.dry_run()


def _write(client, targets, stop, entry):
    if stop is not None and stop.is_set():
        return actions.interrupted()
    try:
        writes.write(client, targets)
    except writes.Retry:
        return actions.failed(_('changed concurrently; run restore again'))
    except exception.NovaOrphansException as e:
        # The providers the entry's findings name, as they were named.
        names = {f.get('resource_provider'): f.get('resource_provider_name')
                 for f in entry.get('findings', ())}
        return actions.failed_by(e, capacity.restore_refused(e, names.get))
    return actions.DONE
