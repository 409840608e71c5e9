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
"""

from nova_orphans.engine import model
from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans.readers import placement_api
from nova_orphans.repair import actions
from nova_orphans.repair import documents


def restore(client, entries, dry_run=False, progress=None, stop=None):
    """Returns [(finding, outcome)] for every finding of every entry.

    ``progress`` counts the entries; once ``stop`` (see
    nova_orphans.interrupt) is set no other write is sent, and the
    entries not put back say so.
    """
    reader = placement_api.PlacementAPIReader(client)
    results = []
    if progress:
        progress.stage(_('journal entries restored'), len(entries))
    for entry in reversed(entries):
        if stop is not None and stop.is_set():
            outcome = actions.interrupted()
        else:
            outcome = _restore_entry(client, reader, entry, dry_run, stop)
        results.extend((model.Finding.from_dict(row), outcome)
                       for row in entry.get('findings', ()))
        if progress:
            progress()
    if progress:
        progress.finish()
    return results


def _restore_entry(client, reader, entry, dry_run, stop=None):
    if entry.get('applied') is False:
        return actions.skipped(_('never applied (%(reason)s)') %
                               {'reason': entry.get('reason')})
    consumers = entry['consumers']
    try:
        current = {c: documents.normalize(reader.consumer(c))
                   for c in consumers}
        if all(documents.same_allocations(current[c], spec['before'])
               for c, spec in consumers.items()):
            return actions.skipped(_('already as before'))
        changed = [c for c, spec in consumers.items()
                   if current[c]['allocations'] != spec['after']]
        if changed:
            return actions.failed(
                _('refused: consumer %(consumers)s changed since the '
                  'repair') % {'consumers': ', '.join(sorted(changed))})
        if dry_run:
            return actions.skipped(_('dry run'))
        targets = {}
        for c, spec in consumers.items():
            before = spec['before']
            if before['project_id'] is None:
                # The consumer did not exist before (heal, or a return to
                # an instance without one): empty it under its owner now.
                before = dict(before, project_id=current[c]['project_id'],
                              user_id=current[c]['user_id'])
            targets[c] = (before, current[c]['consumer_generation'])
        if stop is not None and stop.is_set():
            return actions.interrupted()
        actions.write(client, targets)
    except actions._Retry:
        return actions.failed(_('changed concurrently; run restore again'))
    except exception.NovaOrphansException as e:
        return actions.failed(str(e))
    return actions.DONE
