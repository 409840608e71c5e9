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
"""Faults of a cloud behind keystone, as an operator meets them.

A wrong password, a user without the admin role, a region or a catalog
without placement, keystone out of reach: each ends the run with the
documented exit code and one line naming it, and changes nothing
(test_keystone.py sets the cloud up).
"""

import configparser

from nova_orphans.tests.functional.fixtures import keystone
from nova_orphans.tests.functional import test_keystone
from nova_orphans.tests.functional import test_keystone_osc

NOWHERE = test_keystone.NOWHERE
CONFIG_ERROR = 7
UNREACHABLE = 8
REFUSED = 9
# openstack's code for an error before its command runs (cliff's).
OPENSTACKS_OWN = 1


def assertOneLine(test, result, rc, words):
    """``result`` (code, stdout, stderr): ``rc``, nothing on stdout and
    one line on stderr holding each of ``words``.
    """
    code, out, err = result
    test.assertEqual(rc, code, err)
    test.assertEqual('', out)
    line, = err.splitlines() or [None]
    for word in words:
        test.assertIn(word, line)


class FaultsTestCase(test_keystone.KeystoneTestCase):
    """Each fault: its documented exit code, one line naming it, nothing
    on stdout and nothing changed in placement (there is an orphan, so
    any write would show).
    """

    def setUp(self):
        super().setUp()
        host1 = self.add_node('host1')
        self.boot('host1', host1)
        self.allocate(self.nova.add_instance('cell1', host='host1',
                                             node='host1'), host1)
        gone = self.nova.add_instance('cell1', host='host1', node='host1',
                                      vm_state='error')
        self.allocate(gone, host1)
        self.nova.force_delete_instance('cell1', gone)
        self.before = self.placement.dump_state()

    def wrong_auth_url(self, conf):
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(conf)
        parser['placement']['auth_url'] = 'http://127.0.0.1:9/v3'
        with open(conf, 'w') as f:
            parser.write(f)
        return conf

    def assertFault(self, conf, rc, *words):
        # clean: it would write if it got that far.
        assertOneLine(self, self.assertRanCleanly(self.run_one(
            self.argv(conf, 'clean'))), rc, words)
        self.assertEqual(self.before, self.placement.dump_state())
        self.assertEqual([], self.proxies[keystone.REGION_ONE].requests(
            method='PUT') + self.proxies[keystone.REGION_ONE].requests(
            method='POST') + self.proxies[keystone.REGION_ONE].requests(
            method='DELETE'))

    def test_wrong_password(self):
        self.assertFault(self.password_conf(password='not-the-password'),
                         REFUSED, 'Keystone', '401')

    def test_member_only_user(self):
        """placement's policy refuses a user without the admin role."""
        self.assertFault(self.password_conf(user='demo'), REFUSED,
                         '403', 'placement:resource_providers:list')

    def test_unknown_region(self):
        self.assertFault(self.password_conf(region='RegionThree'),
                         CONFIG_ERROR, 'RegionThree')

    def test_no_placement_endpoint(self):
        self.keystone.set_endpoints({})
        self.assertFault(self.password_conf(), CONFIG_ERROR, 'placement')

    def test_public_interface_unreachable(self):
        """The public endpoints lead nowhere here."""
        self.assertFault(self.password_conf(interface='public'),
                         UNREACHABLE, NOWHERE)

    def test_keystone_down(self):
        self.assertFault(self.wrong_auth_url(self.password_conf()),
                         UNREACHABLE, 'Keystone', '127.0.0.1:9')


class OpenStackFaultsTestCase(test_keystone_osc.OpenStackBase):
    """The same faults met by ``openstack``, before it reads anything."""

    COMPUTE = False

    def assertFault(self, variables, rc, *words):
        assertOneLine(self, self.run_openstack(
            variables, 'allocation', 'orphan', 'clean'), rc, words)
        self.assertEqual(self.before, self.cloud.state())

    def assertOpenStacksOwn(self, variables, *words):
        """``openstack`` authenticates before the command runs, outside
        it: its own code (1) and message, as doc/source/cli/exit-codes.rst
        says; nothing read or changed.
        """
        code, out, err = self.run_openstack(variables, 'allocation',
                                            'orphan', 'clean')
        self.assertEqual((OPENSTACKS_OWN, ''), (code, out), err)
        for word in words:
            self.assertIn(word, err)
        self.assertRanCleanly((code, out, err))
        self.assertEqual(self.before, self.cloud.state())

    def test_wrong_password(self):
        self.assertOpenStacksOwn(dict(self.os_variables(),
                                      OS_PASSWORD='not-the-password'),
                                 '401')

    def test_unknown_region(self):
        self.assertFault(self.os_variables('RegionThree'), CONFIG_ERROR,
                         'RegionThree')

    def test_keystone_down(self):
        self.assertOpenStacksOwn(dict(self.os_variables(),
                                      OS_AUTH_URL='http://127.0.0.1:9/v3'),
                                 '127.0.0.1:9')

    def test_clouds_yaml_wrong_password(self):
        variables = self.clouds_yaml()
        path = variables['OS_CLIENT_CONFIG_FILE']
        with open(path) as f:
            text = f.read()
        password, _project, _roles = keystone.USERS['nova']
        with open(path, 'w') as f:
            f.write(text.replace(password, 'not-the-password'))
        self.assertOpenStacksOwn(variables, '401')
