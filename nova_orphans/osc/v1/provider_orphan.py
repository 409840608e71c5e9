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
"""``openstack resource provider orphan list|clean|restore``: the
commands of ``nova-orphans-manage providers`` (nova_orphans.app.commands)
through the APIs. A root is called a deleted ``compute_node`` here only
on the proof :mod:`nova_orphans.readers.provider_proof` describes. These
commands sit beside osc-placement's ``resource provider ...`` ones.
"""

from nova_orphans.osc.v1 import common

ListProviderOrphan = common.command_class(
    'ListProviderOrphan', 'providers', 'list', __name__)
CleanProviderOrphan = common.command_class(
    'CleanProviderOrphan', 'providers', 'clean', __name__)
RestoreProviderOrphan = common.command_class(
    'RestoreProviderOrphan', 'providers', 'restore', __name__)
