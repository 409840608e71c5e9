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
"""Which providers' allocations a finding rests on.

A scan may take a provider's allocations from an earlier scan's read
while the provider's generation has not moved (readers/kept_reads.py):
such a read misses no allocation written since, but may still show one
removed since, by ``DELETE /allocations/{consumer}`` or by a ``PUT``
that moved the consumer to other providers, neither of which bumps the
provider's generation. A finding is only as true as the allocations it
was judged from, so before it is reported those providers are read
again (app/audit.py); this says which.

An allocation's finding is judged from its consumer's allocations
wherever it holds (rules.unmanaged_provider asks whether it holds on
nova's trees), those of its instance and of that instance's migrations
(rules.finished_migration asks whether the instance still holds on the
node; heal.missing_allocations whether a migration holds for it), nova's
rows and the provider list, which every scan reads whole. It rests on
the providers where the snapshot shows any of those consumers holding,
and on its own provider. Since a kept read shows at least what the
provider holds, the providers where those consumers truly hold are
among them: once they are read afresh, the consumers' allocations are
placement's, whatever was kept. A live instance missing its
allocations rests on its node's provider and on its migrations'.

A provider-level judgement (a deleted compute node's tree, which
consumers keep it, how many orphans each provider holds) rests on every
provider of the tree, and on what the allocation findings there rest on
(pass those with the tree's root).

Pure: nothing here reads or writes.
"""

import collections

from nova_orphans.engine import index as index_mod


def consumers_of(nova, findings):
    """The consumers whose allocations ``findings`` are judged from:
    each finding's consumer, its instance and that instance's
    migrations.
    """
    migrations_of = collections.defaultdict(set)
    for mig in nova.migrations.values():
        migrations_of[mig.instance_uuid].add(mig.uuid)
    consumers = set()
    for f in findings:
        consumers.add(f.consumer)
        mig = nova.migrations.get(f.consumer)
        instance = mig.instance_uuid if mig is not None else f.instance
        if instance is not None:
            consumers.add(instance)
            consumers.update(migrations_of.get(instance, ()))
    return consumers


def rests_on(snapshot, findings, trees=()):
    """The uuids of the providers whose allocations ``findings``
    (model.Finding, those reported or acted on) and the provider trees
    of ``trees`` (their roots' uuids) rest on.
    """
    placement = snapshot.placement
    providers = {f.resource_provider for f in findings
                 if f.resource_provider is not None}
    consumers = consumers_of(snapshot.nova, findings)
    providers.update(a.provider for a in
                     index_mod.held_by(placement.allocations, consumers))
    if trees:
        roots = set(trees)
        providers.update(p.uuid for p in placement.providers.values()
                         if p.root_uuid in roots)
    return providers
