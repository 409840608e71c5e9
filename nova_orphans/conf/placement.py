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
"""``[placement]``: keystoneauth session, auth and adapter options.

The same options nova registers (see conf/service.py), registered when
a placement client is built.
"""

from oslo_config import cfg

from nova_orphans.conf import service

GROUP = 'placement'
SERVICE_TYPE = 'placement'

placement_group = cfg.OptGroup(
    GROUP, title='Placement service',
    help='How to reach the placement API; the same options as nova\'s.')

_SERVICE = service.ServiceGroup(placement_group, SERVICE_TYPE)

register_group = _SERVICE.register_group
register_opts = _SERVICE.register_opts
list_opts = _SERVICE.list_opts
