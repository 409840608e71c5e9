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
"""``oslo.config.opts`` entry point, for oslo-config-generator and docs."""

from nova_orphans.conf import database
from nova_orphans.conf import neutron
from nova_orphans.conf import orphans
from nova_orphans.conf import placement
from nova_orphans.conf import zun


def list_opts():
    result = {}
    for module in (database, placement, neutron, orphans, zun):
        result.update(module.list_opts())
    return [(group, opts) for group, opts in result.items()]
