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

import dataclasses
import pickle
import sys

from oslotest import base

from nova_orphans.engine import index
from nova_orphans.engine import model
from nova_orphans.engine import projects


class RecordTestCase(base.BaseTestCase):
    """model.record is dataclass(slots=True), on Python 3.9 too."""

    RECORDS = (model.Provider, model.Allocation, model.Consumer,
               model.ComputeNode, model.Service, model.Instance,
               model.Migration, model.Activity, model.Claims,
               model.ZunContainer, model.InstanceMapping, model.Finding,
               model.ProviderFinding, index.Owner, projects.ProjectTotal)

    def test_every_record_has_slots_and_no_dict(self):
        for cls in self.RECORDS:
            fields = tuple(f.name for f in dataclasses.fields(cls))
            self.assertEqual(fields, cls.__slots__, cls)
            self.assertNotIn('__dict__', cls.__dict__, cls)
            # No class attribute shadows a slot: the defaults live in
            # __init__.
            for name in fields:
                self.assertIsInstance(cls.__dict__[name],
                                      type(model.Provider.uuid), name)

    def test_a_record_behaves_as_the_dataclass(self):
        provider = model.Provider('u1', 'host1', 'u1')
        self.assertEqual((None, 0, False, frozenset(), None), (
            provider.parent_uuid, provider.generation, provider.sharing,
            provider.aggregates, provider.foreign_owner))
        self.assertFalse(hasattr(provider, '__dict__'))
        self.assertRaises(AttributeError, setattr, provider, 'other', 1)
        renamed = dataclasses.replace(provider, name='host2')
        self.assertEqual(('host2', 'host1'), (renamed.name, provider.name))
        self.assertEqual(provider, model.Provider('u1', 'host1', 'u1'))
        self.assertNotEqual(provider, renamed)
        self.assertEqual(provider, pickle.loads(pickle.dumps(provider)))
        self.assertEqual("Provider(uuid='u1', name='host1', root_uuid='u1', "
                         "parent_uuid=None, generation=0, sharing=False, "
                         "aggregates=frozenset(), foreign_owner=None)",
                         repr(provider))
        self.assertEqual('Provider', type(provider).__qualname__)

    def test_a_record_is_as_small_as_its_slots(self):
        """What the million-allocation benchmark's memory relies on."""
        class Slotted:
            __slots__ = ('consumer', 'provider', 'resources')

        self.assertEqual(sys.getsizeof(Slotted()),
                         sys.getsizeof(model.Allocation('c', 'p', {})))
