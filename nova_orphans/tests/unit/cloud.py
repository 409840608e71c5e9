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
"""A hand-built snapshot for unit tests: a few lines per situation."""

import itertools

from nova_orphans.engine import classify
from nova_orphans.engine import model

PROJECT = 'f0e1d2c3b4a5968778695a4b3c2d1e0f'
USER = '0f1e2d3c4b5a69788796a5b4c3d2e1f0'

_counter = itertools.count(1)


def uuid(prefix):
    """Readable, valid uuids: uuid('vm') -> '00000000-0000-...-vm...'."""
    n = next(_counter)
    return '%08x-0000-4000-8000-%012x' % (abs(hash(prefix)) % 2 ** 32, n)


class Cloud:

    def __init__(self, cells=('cell1',)):
        self.placement = model.PlacementSnapshot()
        self.nova = model.NovaSnapshot()
        self.cells = {}
        for name in cells:
            self.add_cell(name)

    def add_cell(self, name, readable=True):
        cell_uuid = uuid('cell')
        self.cells[name] = cell_uuid
        self.nova.cells[cell_uuid] = model.Cell(
            uuid=cell_uuid, name=name, readable=readable,
            error=None if readable else 'connection refused')
        return cell_uuid

    def provider(self, name, parent=None, sharing=False, aggregates=(),
                 uuid_=None, foreign_owner=None):
        rp = uuid_ or uuid(name)
        root = self.placement.providers[parent].root_uuid if parent else rp
        self.placement.providers[rp] = model.Provider(
            uuid=rp, name=name, root_uuid=root, parent_uuid=parent,
            sharing=sharing, aggregates=frozenset(aggregates),
            foreign_owner=foreign_owner)
        return rp

    def record(self, consumer, project=PROJECT, user=USER, type_=None):
        """Placement's consumer record of ``consumer``."""
        self.placement.consumers[consumer] = model.Consumer(
            consumer, project_id=project, user_id=user, generation=1,
            consumer_type=type_)

    def node(self, host, node=None, cell='cell1', aggregates=(),
             deleted=False):
        node = node or host
        rp = self.provider(node, aggregates=aggregates)
        self.nova.compute_nodes[rp] = model.ComputeNode(
            uuid=rp, host=host, hypervisor_hostname=node,
            cell=self.cells[cell], deleted=deleted)
        self.nova.services.append(model.Service(
            host=host, binary='nova-compute', cell=self.cells[cell]))
        return rp

    def instance(self, host=None, node=None, cell='cell1', mapping=True,
                 **kwargs):
        inst = uuid('vm')
        kwargs.setdefault('vm_state', 'active')
        self.nova.instances[inst] = model.Instance(
            uuid=inst, cell=self.cells[cell], host=host,
            node=node or host, project_id=PROJECT, user_id=USER, **kwargs)
        if mapping:
            self.map(inst, cell)
        return inst

    def map(self, inst, cell=None):
        self.nova.mappings[inst] = model.InstanceMapping(
            instance_uuid=inst, cell=self.cells[cell] if cell else None)

    def build_request(self, inst):
        self.nova.build_requests = self.nova.build_requests | {inst}
        self.map(inst, None)

    def migration(self, inst, status, migration_type='migration',
                  source=None, dest=None, cell='cell1', **kwargs):
        mig = uuid('mig')
        self.nova.migrations[mig] = model.Migration(
            uuid=mig, instance_uuid=inst, cell=self.cells[cell],
            status=status, migration_type=migration_type,
            source_compute=source, source_node=source, dest_compute=dest,
            dest_node=dest, **kwargs)
        return mig

    def update_instance(self, inst, **changes):
        import dataclasses
        self.nova.instances[inst] = dataclasses.replace(
            self.nova.instances[inst], **changes)

    def alloc(self, consumer, rp, **resources):
        resources = resources or {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
        self.placement.allocations.append(model.Allocation(
            consumer=consumer, provider=rp, resources=resources))

    def snapshot(self):
        return model.Snapshot(placement=self.placement, nova=self.nova)

    def findings(self, **kwargs):
        return classify.classify(self.snapshot(), **kwargs)

    def verdicts(self, **kwargs):
        """{(consumer, provider): (reason, action)} for every finding."""
        return {(f.consumer, f.resource_provider): (f.reason, f.action)
                for f in self.findings(**kwargs)}
