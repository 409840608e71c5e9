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
"""The compute API's flavors, as the host view reads them by name (the
functional tests compare them with the API database's on nova's real
API).
"""

from oslotest import base

from nova_orphans.clients import compute
from nova_orphans.engine import shapes
from nova_orphans.readers import compute_api
from nova_orphans.tests.unit import fakes


def flavor_doc(name, vcpus=1, ram=512, disk=1, ephemeral=0, swap='',
               specs=None, public=True):
    doc = {'id': 'id-' + name, 'name': name, 'vcpus': vcpus, 'ram': ram,
           'disk': disk, 'OS-FLV-EXT-DATA:ephemeral': ephemeral,
           'swap': swap, 'os-flavor-access:is_public': public}
    if specs is not None:
        doc['extra_specs'] = specs
    return doc


class FlavorsCompute(fakes.FakeCompute):
    """``flavors``: the listing an admin gets with is_public=None;
    ``specs``: what os-extra_specs answers, by flavor id.
    """

    def __init__(self):
        super().__init__(max_limit=2)
        self.flavors = []
        self.specs = {}

    def handle(self, method, path, params, body):
        if path == '/flavors/detail':
            pool = self.flavors
            if params.get('is_public') != 'None':
                pool = [f for f in pool if f['os-flavor-access:is_public']]
            return self._page('flavors', pool, params)
        parts = path.strip('/').split('/')
        if parts[0] == 'flavors' and parts[2:] == ['os-extra_specs']:
            return fakes.Response(200, {'extra_specs': self.specs[parts[1]]})
        return super().handle(method, path, params, body)


class FlavorsTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.api = FlavorsCompute()
        self.reader = compute_api.ComputeAPIReader(
            compute.ComputeClient(self.api))

    def test_by_name_public_and_private_every_page(self):
        self.api.flavors = [
            flavor_doc('a', specs={}), flavor_doc('b', specs={}),
            flavor_doc('pinned', vcpus=4, ram=4096, disk=20, ephemeral=5,
                       swap=1536, public=False,
                       specs={'hw:cpu_policy': 'dedicated'})]
        found = self.reader.flavors(['pinned', 'nothing'])
        self.assertEqual({'pinned': {
            'name': 'pinned', 'vcpus': 4, 'memory_mb': 4096, 'root_gb': 20,
            'ephemeral_gb': 5, 'swap': 1536,
            'extra_specs': {'hw:cpu_policy': 'dedicated'}}}, found)
        # The shape nova's API database's record gives (nova_db).
        self.assertEqual(
            {'PCPU': 4, 'MEMORY_MB': 4096, 'DISK_GB': 27},
            shapes.from_flavor(found['pinned']).resources)

    def test_extra_specs_the_listing_leaves_out(self):
        # Below 2.61, or a policy that hides them from the listing.
        self.api.flavors = [flavor_doc('g', swap='')]
        self.api.specs = {'id-g': {'resources:VGPU': '1'}}
        self.assertEqual(
            {'name': 'g', 'vcpus': 1, 'memory_mb': 512, 'root_gb': 1,
             'ephemeral_gb': 0, 'swap': 0,
             'extra_specs': {'resources:VGPU': '1'}},
            self.reader.flavors(['g'])['g'])
        self.assertIn('GET /flavors/id-g/os-extra_specs',
                      ['%s %s' % r[:2] for r in self.api.requests])
