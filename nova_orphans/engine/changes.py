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
"""What a clean writes for a consumer, and so what it gives back.

One rule for both: repair.actions writes :func:`after` for each consumer
it cleans, and :func:`given_back` sums what those writes take away from
each provider (placement's usage before minus after), which the host
view reports as ``held``.
"""

import collections

from nova_orphans.engine import index as index_mod
from nova_orphans.engine import reasons

# The actions a clean carries out without --heal. ``heal`` adds
# allocations (and only with --heal); it gives nothing back.
CLEANED = frozenset((reasons.DELETE_CONSUMER, reasons.REMOVE_PROVIDER,
                     reasons.TRIM_PROVIDER, reasons.RETURN_TO_INSTANCE))


def after(action, allocations, drop, partner=None):
    """(the consumer's allocations after, its partner's after or None).

    ``allocations``: the consumer's, {provider: {'resources': {class:
    amount}}} as placement's allocation document has them; ``drop``: the
    providers its findings name. Every action but ``return_to_instance``
    leaves the consumer what it holds elsewhere (``delete_consumer``
    names every provider it holds on, so nothing is left);
    ``return_to_instance`` adds what it drops to ``partner``'s (the
    instance's allocations, the same shape) on the same providers.
    """
    kept = {rp: body for rp, body in allocations.items() if rp not in drop}
    if action != reasons.RETURN_TO_INSTANCE:
        return kept, None
    target = dict(partner or {})
    for rp, body in allocations.items():
        if rp not in drop:
            continue
        resources = dict(target.get(rp, {}).get('resources', {}))
        for rc, amount in body['resources'].items():
            resources[rc] = resources.get(rc, 0) + amount
        target[rp] = {'resources': resources}
    return kept, target


def plans(findings):
    """{consumer: (action, providers)} of the findings a clean acts on,
    as repair groups them: a consumer's first finding's action, and the
    providers of all of them.
    """
    planned = {}
    for f in findings:
        if f.action in CLEANED:
            planned.setdefault(f.consumer, (f.action, set()))[1].add(
                f.resource_provider)
    return planned


def given_back(findings, allocations, migrations):
    """{provider: {class: amount}}: what cleaning ``findings`` now takes
    away from each provider's usage (before minus after: a migration's
    allocation returned to its instance on the same provider gives
    nothing back).

    ``allocations``: the snapshot's (model.Allocation); ``migrations``:
    {uuid: model.Migration}, the instance a ``return_to_instance``
    consumer's allocation goes back to.
    """
    planned = plans(findings)
    partners = {}
    for consumer, (action, _drop) in planned.items():
        mig = migrations.get(consumer)
        if action == reasons.RETURN_TO_INSTANCE and mig is not None:
            partners[consumer] = mig.instance_uuid
    docs = collections.defaultdict(dict)
    for alloc in index_mod.held_by(allocations,
                                   set(planned) | set(partners.values())):
        docs[alloc.consumer][alloc.provider] = {
            'resources': alloc.resources}
    delta = collections.defaultdict(collections.Counter)

    def count(sign, held):
        for rp, body in held.items():
            for rc, amount in body['resources'].items():
                delta[rp][rc] += sign * amount

    for consumer, (action, drop) in planned.items():
        partner = partners.get(consumer)
        before = docs.get(consumer, {})
        partner_before = docs.get(partner, {}) if partner else {}
        kept, target = after(action, before, drop, partner_before)
        count(1, before)
        count(-1, kept)
        if target is not None:
            count(1, partner_before)
            count(-1, target)
    return {rp: {rc: n for rc, n in amounts.items() if n}
            for rp, amounts in delta.items()
            if any(amounts.values())}
