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
"""The policies the tool's requests meet, and a refusal in one line.

``ROLES`` is the one table of the roles that grant each policy by
default (the roles page's "Policies" table, which a unit test compares
with it). A 403 becomes one line naming the service, the policy it
names in its answer and those roles; a token scoped to anything but a
project is told to use one scoped to a project.
"""

import re

from keystoneauth1 import exceptions as ks_exc

from nova_orphans.i18n import _

PLACEMENT = 'placement'
NOVA = 'nova'
NEUTRON = 'neutron'

ADMIN = ('admin',)
ADMIN_OR_SERVICE = ('admin', 'service')

# policy: the roles that grant it by default, in placement 9.0.0 to
# 16.0.0, nova 27 to 34 and neutron 24 to 29.
ROLES = {
    'placement:resource_providers:list': ADMIN_OR_SERVICE,
    'placement:resource_providers:show': ADMIN_OR_SERVICE,
    'placement:resource_providers:create': ADMIN_OR_SERVICE,
    'placement:resource_providers:delete': ADMIN_OR_SERVICE,
    'placement:resource_providers:allocations:list': ADMIN_OR_SERVICE,
    'placement:resource_providers:aggregates:list': ADMIN_OR_SERVICE,
    'placement:resource_providers:aggregates:update': ADMIN_OR_SERVICE,
    'placement:resource_providers:inventories:list': ADMIN_OR_SERVICE,
    'placement:resource_providers:inventories:update': ADMIN_OR_SERVICE,
    'placement:resource_providers:traits:list': ADMIN_OR_SERVICE,
    'placement:resource_providers:traits:update': ADMIN_OR_SERVICE,
    'placement:traits:list': ADMIN_OR_SERVICE,
    'placement:traits:update': ADMIN_OR_SERVICE,
    'placement:allocations:list': ADMIN_OR_SERVICE,
    'placement:allocations:update': ADMIN_OR_SERVICE,
    'placement:allocations:manage': ADMIN_OR_SERVICE,
    'placement:allocations:delete': ADMIN_OR_SERVICE,
    'os_compute_api:os-services:list': ADMIN,
    'os_compute_api:os-hypervisors:list-detail': ADMIN,
    'os_compute_api:servers:detail:get_all_tenants': ADMIN,
    'os_compute_api:servers:allow_all_filters': ADMIN,
    'os_compute_api:os-extended-server-attributes': ADMIN,
    'os_compute_api:os-migrations:index': ADMIN,
    'os_compute_api:os-migrations:index:all_projects': ADMIN,
    'os_compute_api:os-migrations:index:host': ADMIN,
    'context_is_admin': ADMIN,
    'get_port': ADMIN_OR_SERVICE,
    'get_port:binding:profile': ADMIN_OR_SERVICE,
}
# A policy the table does not hold: the service's roles for the tool.
DEFAULT_ROLES = {PLACEMENT: ADMIN_OR_SERVICE, NOVA: ADMIN,
                 NEUTRON: ADMIN_OR_SERVICE}

# placement's and nova's PolicyNotAuthorized; neutron's (oslo.policy's)
# names the rule it checked.
_REFUSED = re.compile(r"Policy (?:does not|doesn't) allow (\S+) to be "
                      r"performed|\(?(?:rule:)?([a-z_][\w:-]*)\)? is "
                      r"disallowed by policy")
# placement's answer when oslo.policy found the token's scope wrong
# (InvalidScope): its PolicyNotAuthorized with the bare policy name.
_SCOPE = re.compile(r'^Access was denied to this resource\. '
                    r'([a-z_]+(?::[\w-]+)+)$')


def roles(policy, service):
    """The roles that grant ``policy`` by default, words for a line."""
    granted = ROLES.get(policy) or DEFAULT_ROLES[service]
    return _(' or ').join(granted)


def system_scoped(adapter):
    """Whether the adapter's token is scoped to the system (not a
    project): what the service answers then does not always say so.
    """
    session = getattr(adapter, 'session', None)
    plugin = getattr(adapter, 'auth', None) or getattr(session, 'auth', None)
    get_access = getattr(plugin, 'get_access', None)
    if get_access is None:
        return False
    try:
        return getattr(get_access(session), 'system_scoped', False) is True
    except ks_exc.ClientException:
        return False


def refusal(service, status, text, adapter=None):
    """The reason of a 403 of ``service`` whose answer says ``text``
    (one line): the policy it names and the roles that grant it; a
    token not scoped to a project told to use one; without a policy,
    the roles the tool needs there.
    """
    text = ' '.join(str(text).split())
    refused = _REFUSED.search(text)
    scope = _SCOPE.match(text) if service == PLACEMENT else None
    policy = (scope.group(1) if scope else
              refused and (refused.group(1) or refused.group(2)))
    if scope or system_scoped(adapter):
        return _('%(status)s: %(service)s refused %(policy)s to a token '
                 'not scoped to a project: use a project-scoped token (the '
                 '%(roles)s role on a project)') % {
            'status': status, 'service': service,
            'policy': policy or _('the request'),
            'roles': roles(policy, service)}
    if policy:
        return _('%(status)s: %(service)s\'s policy refused %(policy)s '
                 '(granted by default to the %(roles)s role, on a '
                 'project)') % {
            'status': status, 'service': service, 'policy': policy,
            'roles': roles(policy, service)}
    return _('%(status)s %(text)s (%(service)s: nova-orphans needs the '
             '%(roles)s role, on a project)') % {
        'status': status, 'text': text, 'service': service,
        'roles': roles(None, service)}


def not_admin(text):
    """The reason of nova's refusal of its admin's reads to a clean."""
    return _('403 %(text)s: nova narrows the reads of a user that is not '
             'its admin (context_is_admin, granted by default to the '
             '%(roles)s role, on a project) to its own project, and a '
             'clean would take live servers for gone') % {
        'text': ' '.join(str(text).split()),
        'roles': roles('context_is_admin', NOVA)}
