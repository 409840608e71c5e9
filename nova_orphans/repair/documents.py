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
"""Allocation documents: as read, as journaled, as written back.

``GET /allocations/{consumer}`` returns each provider's generation inside
the document; a write must not carry it. Placement at 1.38+ reads an
untyped consumer as ``unknown`` and refuses ``unknown`` on writes, so a
write sends the type only when it is a real one, and otherwise uses 1.37,
which leaves the stored type as it is. Only the consumers a write leaves
holding allocations decide that: an emptied consumer is deleted by
placement, type and all, so at 1.38 any valid type will do for it.
"""

UNTYPED_WRITE_VERSION = (1, 37)
TYPED_WRITE_VERSION = (1, 38)
UNKNOWN_TYPE = 'unknown'
# Sent at 1.38+ for an untyped consumer the write empties (and so deletes).
EMPTIED_TYPE = 'INSTANCE'


def normalize(consumer_doc):
    """The parts of a GET /allocations/{consumer} answer that matter."""
    allocations = {
        rp: {'resources': dict(body['resources'])}
        for rp, body in (consumer_doc.get('allocations') or {}).items()}
    return {
        'allocations': allocations,
        'project_id': consumer_doc.get('project_id'),
        'user_id': consumer_doc.get('user_id'),
        'consumer_generation': consumer_doc.get('consumer_generation'),
        'consumer_type': consumer_doc.get('consumer_type'),
    }


def empty():
    """The document of a consumer that holds nothing (and has no record)."""
    return {'allocations': {}, 'project_id': None, 'user_id': None,
            'consumer_generation': None, 'consumer_type': None}


def row_resources(written, other, provider):
    """What a row of a write shows on ``provider``: the resources the
    allocations ``written`` leave there, else those it takes away from
    ``other`` (the allocations it replaces), else none.
    """
    body = ((written or {}).get(provider) or (other or {}).get(provider) or
            {})
    return dict(body.get('resources') or {})


def same_allocations(a, b):
    return (a or {}).get('allocations', {}) == (b or {}).get(
        'allocations', {})


def _typed(consumer_type):
    return bool(consumer_type) and consumer_type != UNKNOWN_TYPE


def write_version(*consumer_types):
    """The microversion to write consumers of these (stored) types at."""
    if all(_typed(t) for t in consumer_types):
        return TYPED_WRITE_VERSION
    return UNTYPED_WRITE_VERSION


def docs_write_version(docs):
    """The microversion to write these documents (as they will be) at.

    Decided by the consumers left holding allocations, so that moving a
    typed consumer's allocations back keeps its type even when the
    other consumer of the move, which the write empties, has none.
    """
    kept = [d['consumer_type'] for d in docs if d['allocations']]
    return write_version(*(kept or [d['consumer_type'] for d in docs]))


def body(doc, generation, version):
    """One consumer's part of a PUT or POST body."""
    result = {
        'allocations': doc['allocations'],
        'project_id': doc['project_id'],
        'user_id': doc['user_id'],
        'consumer_generation': generation,
    }
    if version >= TYPED_WRITE_VERSION:
        consumer_type = doc['consumer_type']
        if not _typed(consumer_type):
            if doc['allocations']:
                raise ValueError('an untyped consumer that keeps '
                                 'allocations must be written below 1.38')
            consumer_type = EMPTIED_TYPE
        result['consumer_type'] = consumer_type
    return result
