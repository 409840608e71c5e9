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
"""[placement]'s and [neutron]'s options, registered only when a client
is built.
"""

import os

import fixtures
from oslo_config import cfg
from oslotest import base

from nova_orphans.app import sources
from nova_orphans.cmd import manage
from nova_orphans import conf as orphans_conf
from nova_orphans.conf import neutron
from nova_orphans.conf import opts
from nova_orphans.conf import placement
from nova_orphans.engine import claims
from nova_orphans.engine import model
from nova_orphans.tests import programs

NOVA_CONF = '''
[api_database]
connection = sqlite://
[placement]
auth_type = admin_token
endpoint = http://placement.example:8778
token = admin
timeout = 7
valid_interfaces = public
'''


class PlacementOptsTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.path = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'nova.conf')
        with open(self.path, 'w') as f:
            f.write(NOVA_CONF)

    def test_deferred_options_read_the_parsed_file(self):
        conf = cfg.ConfigOpts()
        orphans_conf.register_opts(conf, placement_opts=False)
        conf(['--config-file', self.path], project='nova')
        self.assertRaises(cfg.NoSuchOptError, getattr, conf.placement,
                          'timeout')
        placement.register_opts(conf)
        placement.register_opts(conf)  # again: no duplicate-option error
        self.assertEqual(7, conf.placement.timeout)
        self.assertEqual('admin_token', conf.placement.auth_type)
        self.assertEqual(['public'], conf.placement.valid_interfaces)

    def test_registered_by_default(self):
        conf = cfg.ConfigOpts()
        orphans_conf.register_opts(conf)
        conf(['--config-file', self.path], project='nova')
        self.assertEqual(7, conf.placement.timeout)
        self.assertEqual('placement', conf.placement.service_type)

    def test_manage_registers_them_with_the_client(self):
        conf = cfg.ConfigOpts()
        self.assertIsNone(manage._parse(conf, [
            '--config-file', self.path, 'allocations', 'list']))
        self.assertRaises(cfg.NoSuchOptError, getattr, conf.placement,
                          'endpoint')
        client = sources.DatabaseSources(conf).placement
        self.assertEqual('http://placement.example:8778', client.endpoint)
        self.assertEqual(7, conf.placement.timeout)

    def test_listed_for_the_generator(self):
        listed = {group.name: {opt.dest for opt in options}
                  for group, options in opts.list_opts()}
        self.assertLessEqual(
            {'auth_type', 'auth_section', 'endpoint', 'token', 'password',
             'timeout', 'cafile', 'insecure', 'valid_interfaces',
             'endpoint_override', 'region_name', 'service_type'},
            listed['placement'])
        self.assertEqual({'connection'}, listed['placement_database'])
        self.assertEqual({'connection'}, listed['zun_database'])


NEUTRON = '''
[neutron]
auth_type = admin_token
endpoint = http://neutron.example:9696
token = admin
'''
ROOT = programs.REPO
VM = '11111111-1111-4111-8111-111111111111'
FLAVOR = {'vcpus': 1, 'memory_mb': 512, 'root_gb': 1, 'extra_specs': {}}


class NeutronOptsTestCase(base.BaseTestCase):
    """``[neutron]``: nova's own credentials for neutron, asked only for
    the ports of servers whose info cache lists none.
    """

    def parse(self, *sections):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as f:
            f.write(NOVA_CONF + ''.join(sections))
        conf = cfg.ConfigOpts()
        self.assertIsNone(manage._parse(conf, [
            '--config-file', path, 'allocations', 'list']))
        return conf

    def test_registered_with_the_client(self):
        conf = self.parse(NEUTRON)
        self.assertRaises(cfg.NoSuchOptError, getattr, conf.neutron,
                          'endpoint')
        client = sources.DatabaseSources(conf)._network()
        self.assertEqual('http://neutron.example:9696', client.endpoint)
        self.assertEqual(('network', ['internal', 'public']),
                         (conf.neutron.service_type,
                          conf.neutron.valid_interfaces))

    def test_shipped_production_section(self):
        with open(os.path.join(ROOT, 'etc', 'nova-orphans',
                               'neutron-keystone.conf')) as f:
            conf = self.parse(f.read())
        adapter = sources.DatabaseSources(conf)._network()._adapter
        self.assertEqual(
            ('network', ['internal'], 'RegionOne',
             'http://controller:5000/v3', 'neutron', 'service'),
            (adapter.service_type, adapter.interface, adapter.region_name,
             adapter.auth.auth_url, adapter.auth._username,
             adapter.auth._project_name))

    def test_without_it_neutron_is_not_asked(self):
        """No [neutron] section: the servers whose info cache lists no
        port stay unproven, and the snapshot says why.
        """
        reader = sources.DatabaseSources(self.parse()).nova()
        snap = model.NovaSnapshot(claims={VM: claims.claims('[]', FLAVOR)})
        self.assertIs(snap, reader.ports.prove(snap))
        error = 'Configuration error: [neutron] auth_type is not set'
        self.assertEqual(
            ['neutron could not be asked for the ports bound to 1 '
             'server(s) whose info cache in nova\'s database lists no port '
             '(%s): what they hold on their nodes\' child providers is '
             'unverifiable' % error], snap.unread)
        self.assertEqual(model.Claims(
            ports_error='neutron could not be asked for the ports bound to '
                        'the server (%s)' % error,
            ports_unlisted=True,
            flavor_classes=claims.FLAVOR_BASE_CLASSES), snap.claims[VM])

    def test_not_needed_not_asked(self):
        # Every info cache lists its ports: [neutron] is not even read.
        reader = sources.DatabaseSources(self.parse()).nova()
        snap = model.NovaSnapshot(claims={VM: claims.claims(
            '[{"id": "p1", "profile": {}}]', FLAVOR)})
        reader.ports.prove(snap)
        self.assertEqual([], snap.unread)
        self.assertEqual(frozenset(), snap.claims[VM].port_providers)

    def test_listed_for_the_generator(self):
        listed = {group.name: {opt.dest for opt in options}
                  for group, options in opts.list_opts()}
        self.assertLessEqual(
            {'auth_type', 'auth_section', 'auth_url', 'username',
             'password', 'project_name', 'endpoint', 'token', 'timeout',
             'cafile', 'valid_interfaces', 'endpoint_override',
             'region_name', 'service_type'}, listed[neutron.GROUP])
        self.assertEqual(listed['placement'], listed[neutron.GROUP])
