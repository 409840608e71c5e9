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
"""Which live instances ``--heal`` leaves alone.

What it writes for the others is engine.shapes.resources_from_flavor,
nova's own arithmetic. Anything that needs nested providers is left to
``nova-manage placement heal_allocations``, which can ask neutron, cyborg
and the PCI tracker.
"""

from nova_orphans.i18n import _

# Extra specs that make nova request resources from child providers.
_NESTED_SPECS = ('accel:device_profile', 'pci_passthrough:alias',
                 'hw:vpmem', 'resources:VGPU')


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
