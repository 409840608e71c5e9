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
"""``openstack allocation orphan list|clean|restore``: the commands of
``nova-orphans-manage allocations`` (nova_orphans.app.commands), with
nova's side read from the compute API instead of nova's databases (see
:mod:`nova_orphans.readers.compute_api` for what that cannot see).
"""

from nova_orphans.osc.v1 import common

ListOrphan = common.command_class('ListOrphan', 'allocations', 'list',
                                  __name__)
CleanOrphan = common.command_class('CleanOrphan', 'allocations', 'clean',
                                   __name__)
RestoreOrphan = common.command_class('RestoreOrphan', 'allocations',
                                     'restore', __name__)
