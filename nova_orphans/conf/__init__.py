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
"""Configuration options, registered on a ConfigOpts the caller owns.

nova-orphans reads the operator's existing ``nova.conf``: the database
groups, ``[placement]`` and ``[neutron]`` mean what they mean to nova.
Its own options live in ``[nova_orphans]``. Nothing here touches a
global ConfigOpts, so the tool can run many times in one process with
different files.
"""

from nova_orphans.conf import database
from nova_orphans.conf import neutron
from nova_orphans.conf import orphans
from nova_orphans.conf import placement
from nova_orphans.conf import zun


def register_opts(conf, placement_opts=True):
    """Register every group; ``placement_opts=False`` defers the options
    of [placement] and [neutron].

    Deferred, keystoneauth's options are registered (and keystoneauth
    imported) by ``placement.register_opts`` and
    ``neutron.register_opts`` only when such a client is built: a
    fast-mode ``list`` builds none.
    """
    database.register_opts(conf)
    for group in (placement, neutron):
        if placement_opts:
            group.register_opts(conf)
        else:
            group.register_group(conf)
    orphans.register_opts(conf)
    zun.register_opts(conf)
