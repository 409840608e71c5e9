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
"""``[neutron]``: the credentials nova itself uses for neutron.

The same keystoneauth options nova registers (see conf/service.py),
registered only when a server's ports must be asked of neutron: when
nova's info cache of a server that holds a port's resources on a child
provider lists no port (rules.leaked_port_allocation). nova's other
``[neutron]`` options are left alone.
"""

from oslo_config import cfg

from nova_orphans.conf import service

GROUP = 'neutron'
SERVICE_TYPE = 'network'

neutron_group = cfg.OptGroup(
    GROUP, title='Networking service',
    help='How to reach the network API (neutron): the same options as '
         'nova\'s. Asked only for the ports bound to a server whose info '
         'cache in nova\'s database lists no port, to tell whether a '
         'port\'s resources it still holds are leaked.')

_SERVICE = service.ServiceGroup(neutron_group, SERVICE_TYPE)

register_group = _SERVICE.register_group
register_opts = _SERVICE.register_opts
list_opts = _SERVICE.list_opts
