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
"""Allocations a live instance should hold, from its flavor (``--heal``).

The same arithmetic as nova's ``scheduler.utils.resources_from_flavor``:
VCPU (PCPU with a dedicated CPU policy), MEMORY_MB, DISK_GB with no root
disk when booted from volume, then ``resources:*`` extra specs. Anything
that needs nested providers is left to ``nova-manage placement
heal_allocations``, which can ask neutron, cyborg and the PCI tracker.
"""

import math

from nova_orphans.i18n import _

# Extra specs that make nova request resources from child providers.
_NESTED_SPECS = ('accel:device_profile', 'pci_passthrough:alias',
                 'hw:vpmem', 'resources:VGPU')


def resources_from_flavor(flavor, boot_from_volume):
    swap_gb = int(math.ceil((flavor.get('swap') or 0) / 1024.0))
    disk = ((0 if boot_from_volume else flavor.get('root_gb') or 0) +
            (flavor.get('ephemeral_gb') or 0) + swap_gb)
    extra_specs = flavor.get('extra_specs') or {}
    cpu_class = ('PCPU' if extra_specs.get('hw:cpu_policy') == 'dedicated'
                 else 'VCPU')
    resources = {cpu_class: flavor['vcpus'],
                 'MEMORY_MB': flavor['memory_mb'],
                 'DISK_GB': disk}
    for key, value in extra_specs.items():
        if key.startswith('resources:'):
            resources[key.split(':', 1)[1]] = int(value)
    return {rc: amount for rc, amount in resources.items() if amount}


def nested_reason(flavor, network_info=None):
    """Why this instance needs nested resources, or None."""
    extra_specs = (flavor or {}).get('extra_specs') or {}
    for key in extra_specs:
        group = key.split(':', 1)[0]
        if key in _NESTED_SPECS or (group.startswith('resources') and
                                    group != 'resources'):
            return _('flavor extra spec %(key)s') % {'key': key}
    for vif in network_info or ():
        if (vif.get('profile') or {}).get('allocation'):
            return _('port %(port)s has a resource request') % {
                'port': vif.get('id')}
    return None
