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
"""A refusal in one line, and the table of roles the docs show.

The services' own answers are those the functional tests meet
(test_roles.py): placement's and nova's, for a role refused and for a
system-scoped token.
"""

import os
import re

from keystoneauth1 import access
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import fixture
from oslotest import base

from nova_orphans.clients import policies

ROLES_PAGE = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..',
    'doc', 'source', 'admin', 'roles.rst')
PLACEMENT_REFUSED = ('Access was denied to this resource.\n\n Policy does '
                     'not allow placement:allocations:update to be '
                     'performed.  ')
PLACEMENT_SCOPE = ('Access was denied to this resource.\n\n '
                   'placement:resource_providers:list  ')
NOVA_REFUSED = ("Policy doesn't allow os_compute_api:os-services:list to "
                "be performed.")


class Plugin:
    """An auth plugin whose token is ``token`` (keystoneauth's fixture)."""

    def __init__(self, token=None, error=None):
        self.token, self.error = token, error

    def get_access(self, session):
        if self.error is not None:
            raise self.error
        return access.create(body=self.token)


class Adapter:
    def __init__(self, plugin):
        self.auth, self.session = plugin, object()


def token(system):
    doc = fixture.V3Token()
    if system:
        doc.set_system_scope()
    else:
        doc.set_project_scope()
    return doc


class RefusalTestCase(base.BaseTestCase):

    def test_placement_names_policy_and_roles(self):
        self.assertEqual(
            "403: placement's policy refused placement:allocations:update "
            "(granted by default to the admin or service role, on a "
            "project)",
            policies.refusal(policies.PLACEMENT, 403, PLACEMENT_REFUSED,
                             Adapter(Plugin(token(system=False)))))

    def test_placement_scope(self):
        """placement's answer to a token of the wrong scope names the
        policy bare, whatever the token's plugin says.
        """
        self.assertEqual(
            '403: placement refused placement:resource_providers:list to a '
            'token not scoped to a project: use a project-scoped token (the '
            'admin or service role on a project)',
            policies.refusal(policies.PLACEMENT, 403, PLACEMENT_SCOPE))

    def test_nova_names_policy_and_roles(self):
        self.assertEqual(
            "403: nova's policy refused os_compute_api:os-services:list "
            "(granted by default to the admin role, on a project)",
            policies.refusal(policies.NOVA, 403, NOVA_REFUSED))

    def test_nova_system_scoped_token(self):
        """nova words a scope refusal as any other: the token says."""
        self.assertEqual(
            '403: nova refused os_compute_api:os-services:list to a token '
            'not scoped to a project: use a project-scoped token (the '
            'admin role on a project)',
            policies.refusal(policies.NOVA, 403, NOVA_REFUSED,
                             Adapter(Plugin(token(system=True)))))

    def test_neutron_rule(self):
        self.assertEqual(
            "403: neutron's policy refused get_port:binding:profile "
            "(granted by default to the admin or service role, on a "
            "project)",
            policies.refusal(policies.NEUTRON, 403,
                             '(rule:get_port:binding:profile) is '
                             'disallowed by policy'))

    def test_unknown_policy_takes_the_service_roles(self):
        self.assertEqual(
            "403: nova's policy refused os_compute_api:servers:show "
            "(granted by default to the admin role, on a project)",
            policies.refusal(policies.NOVA, 403, "Policy doesn't allow "
                             "os_compute_api:servers:show to be performed."))

    def test_no_policy_named(self):
        self.assertEqual(
            '403 an HTML page ("Forbidden") (placement: nova-orphans needs '
            'the admin or service role, on a project)',
            policies.refusal(policies.PLACEMENT, 403,
                             'an HTML page ("Forbidden")'))

    def test_system_scoped(self):
        self.assertTrue(policies.system_scoped(
            Adapter(Plugin(token(system=True)))))
        self.assertFalse(policies.system_scoped(
            Adapter(Plugin(token(system=False)))))
        # admin_token auth (no token to read), no adapter, keystone gone.
        self.assertFalse(policies.system_scoped(Adapter(object())))
        self.assertFalse(policies.system_scoped(None))
        self.assertFalse(policies.system_scoped(Adapter(Plugin(
            error=ks_exc.ConnectFailure('gone')))))


class RolesPageTestCase(base.BaseTestCase):
    """The roles page's "Policies" table is ROLES, row for row."""

    def test_same_table(self):
        with open(ROLES_PAGE) as f:
            page = f.read()
        section = page.split('\nPolicies\n--------\n', 1)[1]
        section = re.split(r'\n[^\n]+\n[-~]{3,}\n', section)[0]
        rows = re.findall(r'\* - ``([^`]+)``\n +- (\w+)\n +- (.+)\n',
                          section)
        self.assertEqual(
            policies.ROLES,
            {policy: tuple(re.findall(r'``(\w+)``', granted))
             for policy, _service, granted in rows})
        services = {'placement': policies.PLACEMENT,
                    'os_compute_api': policies.NOVA,
                    'context_is_admin': policies.NOVA}
        self.assertEqual(
            {policy: services.get(policy.split(':')[0], policies.NEUTRON)
             for policy in policies.ROLES},
            {policy: service for policy, service, _granted in rows})
