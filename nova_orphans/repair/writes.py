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
"""A repair's write to placement, journaled first and settled when its
answer is lost: the one way every repair of allocations writes.

``commit`` writes each entry to the journal before the request is sent,
and marks the entries of a request placement refused as not applied,
so that a restore never undoes what was never done. ``write`` sends one
request for any number of consumers, each carrying the consumer
generation it was verified at; when only its answer may have been lost
(a reset, a timeout, a proxy's 502), reading the consumers back says
whether it was applied, rather than sending it again blindly. A write
placement refused only because a provider it touches kept changing
under placement's own retries (another writer's allocations on that
provider, not on these consumers) is sent again as it was, as nova's
report client does: placement still checks every consumer generation
it carries.
"""

import random
import time

from oslo_log import log as logging

from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans.readers import placement_api
from nova_orphans.repair import documents

LOG = logging.getLogger(__name__)
# How many times a write refused for a provider generation conflict is
# sent again, each after a random delay of up to PROVIDER_RACE_DELAY
# seconds times its number (nova's report client: 3, and 2 s).
PROVIDER_RACE_RETRIES = 3
PROVIDER_RACE_DELAY = 0.5
_sleep = time.sleep


class Retry(Exception):
    """The consumer changed under us; evaluate it again.

    Its text says which generation placement found changed, for the
    journal (see write); its status is placement's for a conflict.
    """

    status_code = 409


class Changed(Retry):
    """As Retry, but after a write whose answer was lost: this run's
    write may have been applied, so its journal entry is never marked
    as not applied.
    """


def commit(client, journal, records, targets):
    """Journal ``records`` (one entry each, one fsync), then write
    ``targets`` ({consumer: (document, generation)}) in one request.

    Raises Retry on a generation conflict, PlacementError on any other
    failure; the entries of a request placement refused are marked not
    applied.
    """
    entries = journal.record_many(records)
    try:
        write(client, targets)
    except Retry as e:
        # Placement refused the whole request: restore must not try
        # to undo it (its consumers may well have changed since).
        # Unless an earlier try's answer was lost (Changed).
        if not isinstance(e, Changed):
            journal.not_applied_many(entries, str(e))
        raise
    except exception.PlacementError as e:
        if 400 <= (e.status_code or 0) < 500:
            journal.not_applied_many(entries, str(e))
        raise


def write(client, targets):
    """Write {consumer: (document, generation)} in one request.

    One consumer is a PUT; several are one POST /allocations, so moves
    between consumers are atomic, as nova does them.

    A fault that may have lost only the answer (a connection reset, a
    timeout, a 502/503/504 from a proxy: ``transient``, see
    clients.retry) is never answered by sending the write again
    blindly: every consumer is read back. All as the write leaves
    them: it was applied, done. All still at the generation it
    carried: it was not, and it is sent again (placement checks that
    generation again). Anything else raises Changed: another writer
    changed a consumer, perhaps after this write.
    """
    # Never above what the server speaks: below 1.38 documents carry no
    # type, and the bodies are the same from 1.28 to 1.37.
    version = min(documents.docs_write_version(
        [doc for doc, _gen in targets.values()]), client.version)
    bodies = {c: documents.body(doc, gen, version)
              for c, (doc, gen) in targets.items()}
    if len(bodies) == 1:
        (consumer, body), = bodies.items()
        method, url, json = 'PUT', '/allocations/%s' % consumer, body
    else:
        method, url, json = 'POST', '/allocations', bodies
    lost = False
    attempt = 0
    races = 0
    while True:
        try:
            client.request(method, url, json=json, version=version,
                           expected=(204,))
            return
        except exception.GenerationConflict as e:
            if not lost and not _of_consumer(e.detail) and \
                    races < PROVIDER_RACE_RETRIES:
                # Not applied, and no consumer of it changed.
                races += 1
                delay = random.uniform(0, PROVIDER_RACE_DELAY * races)
                LOG.debug('%(method)s %(url)s: a provider changed under '
                          'placement\'s own retries; sending it again in '
                          '%(delay).2f s', {'method': method, 'url': url,
                                            'delay': delay})
                _sleep(delay)
                continue
            if not lost:
                raise Retry(_conflict(e.detail))
            # An earlier try whose answer was lost may have landed since
            # it was read back (it was on its way, past a timeout).
            if _settle(client, targets) == APPLIED:
                return
            raise Changed(_conflict(e.detail))
        except exception.PlacementError as e:
            if e.transient is None:
                raise
            client.answer_lost(e, method, url)
            lost = True
            try:
                state = _settle(client, targets)
            except exception.NovaOrphansException as read_error:
                LOG.debug('%(method)s %(url)s: could not be read back '
                          '(%(error)s)', {'method': method, 'url': url,
                                          'error': read_error})
                raise e
            if state == APPLIED:
                LOG.debug('%(method)s %(url)s: its answer was lost, and '
                          'it was applied', {'method': method, 'url': url})
                return
            if state == CHANGED:
                raise Changed(_('changed by another writer while the '
                                'answer to this write was lost'))
            if not client.may_write_again(attempt, method, url):
                raise
            attempt += 1


# What reading back a write whose answer was lost finds (see write).
APPLIED = 'applied'
UNCHANGED = 'unchanged'
CHANGED = 'changed'


def _settle(client, targets):
    """APPLIED, UNCHANGED or CHANGED: the consumers of a write whose
    answer was lost, read again.
    """
    reader = placement_api.PlacementAPIReader(client)
    applied = unchanged = True
    for consumer, (doc, generation) in targets.items():
        now = documents.normalize(reader.consumer(consumer))
        if now['allocations'] != doc['allocations'] or (
                doc['allocations'] and
                (now['project_id'], now['user_id']) !=
                (doc['project_id'], doc['user_id'])):
            applied = False
        if now['consumer_generation'] != generation:
            unchanged = False
    if applied:
        return APPLIED
    return UNCHANGED if unchanged else CHANGED


def _conflict(detail):
    """Which generation a 409 placement.concurrent_update was about.

    Placement refuses a write with that code for a consumer generation
    the write carried that is no longer the consumer's ("consumer
    generation conflict - expected ..."), and when a provider's
    inventory or allocations kept changing under its own retries
    ("Inventory and/or allocations changed while attempting to
    allocate"): only the first is the consumer's.
    """
    if _of_consumer(detail):
        return _('consumer generation conflict')
    return _('resource provider generation conflict')


def _of_consumer(detail):
    return 'consumer generation' in (detail or '')
