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

An entry is put back only when every consumer it touched still holds
exactly what the repair left; a consumer that changed since (nova moved
the instance, someone else wrote) is refused and reported, never
overwritten. An entry whose consumers already hold their "before"
allocations (the repair never reached placement, or was undone) is
skipped, as is one placement is known to have refused.

A dry run judges each entry as the real run would: against placement
as the newer entries' restores would leave it, without writing.
"""

import urllib.parse

from nova_orphans.engine import model
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans.readers import placement_api
from nova_orphans.repair import actions
from nova_orphans.repair import documents
from nova_orphans.repair import journal


def load(client, path, warn=None):
    """The entries to restore from the journal at ``path``.

    Refuses, before anything is written, a damaged journal and one from
    another cloud (see :func:`check_cloud`); then hands ``warn`` one
    line per line of the journal that was cut short.
    """
    contents = journal.load(path)
    check_cloud(client, path, contents.runs)
    for warning in contents.warnings:
        if warn is not None:
            warn(warning)
    return contents.entries


def check_cloud(client, path, runs):
    """Refuse a journal written against another cloud.

    Each run records the placement endpoint it wrote to. The same cloud
    can be reached by another URL (an internal and a public endpoint, a
    proxy), so a different endpoint alone proves nothing: a run is
    refused only when, in addition, none of the resource providers its
    entries touched exist in the placement reached now. Journals
    written before runs had headers are not checked.
    """
    here = _endpoint(client.endpoint)
    others = [run for run in runs
              if run.placement and _endpoint(run.placement) != here]
    if not others:
        return
    existing = {rp['uuid'] for rp in client.get(
        '/resource_providers')['resource_providers']}
    for run in others:
        providers = _providers(run.entries)
        if providers and not providers & existing:
            reason = _(
                'written against placement at %(theirs)s, and none of the '
                '%(count)d resource providers it changed exist in '
                'placement at %(here)s: refusing to restore it into '
                'another cloud') % {'theirs': run.placement,
                                    'count': len(providers),
                                    'here': client.endpoint}
            raise exception.JournalError(path=path, reason=reason)


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
            for spec in entry['consumers'].values()
            for doc in (spec.get('before') or {}, {
                'allocations': spec.get('after') or {}})
            for rp in doc.get('allocations') or {}}


def restore(client, entries, dry_run=False):
    """Returns [(finding, outcome)] for every finding of every entry."""
    state = _Placement(placement_api.PlacementAPIReader(client), dry_run)
    results = []
    for entry in reversed(entries):
        outcome = _restore_entry(client, state, entry, dry_run)
        results.extend((model.Finding.from_dict(row), outcome)
                       for row in entry.get('findings', ()))
    return results


class _Placement:
    """Consumers as placement has them; in a dry run, as the restores
    judged so far would have left them.
    """

    def __init__(self, reader, simulate):
        self.reader = reader
        self.simulate = simulate
        self.written = {}

    def consumer(self, consumer):
        if consumer in self.written:
            return self.written[consumer]
        return documents.normalize(self.reader.consumer(consumer))

    def restored(self, consumer, doc):
        if self.simulate:
            self.written[consumer] = doc


def _restore_entry(client, state, entry, dry_run):
    if entry.get('applied') is False:
        return actions.skipped(_('never applied (%(reason)s)') %
                               {'reason': entry.get('reason')})
    consumers = entry['consumers']
    try:
        current = {c: state.consumer(c) for c in consumers}
        if all(documents.same_allocations(current[c], spec['before'])
               for c, spec in consumers.items()):
            return actions.skipped(_('already as before'))
        changed = [c for c, spec in consumers.items()
                   if current[c]['allocations'] != spec['after']]
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
        if dry_run:
            for c, (before, _generation) in targets.items():
                state.restored(c, documents.normalize(before))
            return actions.skipped(_('dry run'))
        actions.write(client, targets)
    except actions._Retry:
        return actions.failed(_('changed concurrently; run restore again'))
    except exception.NovaOrphansException as e:
        return actions.failed(str(e))
    return actions.DONE
