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
"""Which live instances hold no allocations at all, and why: the
``missing_allocations`` findings that ``clean --heal`` repairs.

Not a rule of the chain: the chain judges allocations, and these
instances have none. classify adds their findings after the chain's.
"""

import itertools

from nova_orphans.engine import nova_states
from nova_orphans.engine import settling
from nova_orphans.i18n import _

# The scheduler hint nova's own rebuild sets (never saved), which the
# scheduler reads as "check the current host, claim nothing".
CHECK_TYPE_HINT = '_nova_check_type'


def internal_hints(hints):
    """The names of nova's internal scheduler hints (``_nova*``) among
    ``hints`` (a request spec's or a server's), sorted.
    """
    return tuple(sorted(str(k) for k in hints or ()
                        if str(k).startswith('_nova')))


def missing_details(inst, nova):
    """The details of a missing_allocations finding for ``inst``.

    A request spec that carries nova's internal ``_nova_check_type``
    hint was created with it: nova's rebuild sets it on a copy it never
    saves (``del request_spec.id`` in compute.api.API.rebuild), while
    nova before 31.3.1, 32.2.1 and 33.0.2 kept a user's hints at create
    as given, and its scheduler then skipped placement and the claim
    (``request_is_rebuild``): the server runs with no allocation
    (nova bug 2151252, fixed by stripping ``_nova`` hints at create).
    """
    details = _('The instance runs on %(host)s (%(node)s) but holds no '
                'allocations in placement.') % {
        'host': inst.host, 'node': inst.node}
    if CHECK_TYPE_HINT in nova.internal_hints.get(inst.uuid, ()):
        details += ' ' + _(
            'Its request spec carries the scheduler hint %(hint)s, given '
            'at create: the scheduler skipped the claim (OSSA-2026-022, '
            'CVE-2026-46448, nova bug 2151252; fixed in nova 31.3.1, '
            '32.2.1 and 33.0.2).') % {'hint': CHECK_TYPE_HINT}
    return details


def missing_allocations(index):
    """Live, placed instances that hold nothing at all: heal them."""
    placement = index.snapshot.placement
    instances = index.snapshot.nova.instances
    among = (instances if placement.missing_among is None else
             [uuid for uuid in placement.missing_among if uuid in instances])
    # Whether it holds allocations (in scope or elsewhere), asked first,
    # of every instance, in C: most do, and it is then the one question
    # asked of them, with no set of every instance made to take a
    # difference. The order does not matter: classify sorts.
    elsewhere = placement.consumers_elsewhere
    for uuid in itertools.filterfalse(index.by_consumer.__contains__,
                                      among):
        if uuid in elsewhere or uuid in index.held_by_migration:
            continue
        inst = instances[uuid]
        if (inst.deleted or inst.archived or not inst.host or
                not inst.node or
                inst.vm_state in (nova_states.BUILDING,
                                  nova_states.SOFT_DELETED,
                                  nova_states.SHELVED_OFFLOADED) or
                settling.why_unsettled(inst, index.snapshot.nova)):
            continue
        node = (index.nodes_by_uuid.get(inst.compute_node) or
                index.node_for_host_node(inst.host, inst.node))
        if placement.scope is not None and (
                node is None or node.uuid not in placement.scope):
            continue
        yield inst, node
