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
"""Zun's container API reader (the zun rule for openstack), and how the
plugin tells a cloud with Zun.
"""

import json
from unittest import mock
from urllib import parse

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1.identity import generic
from keystoneauth1 import token_endpoint
from oslotest import base

from nova_orphans.app import api_sources
from nova_orphans.clients import container
from nova_orphans.engine import model
from nova_orphans.engine import rules
from nova_orphans.engine import site_rules
from nova_orphans.osc import plugin
from nova_orphans.readers import zun_api
from nova_orphans.tests.unit import fakes
from nova_orphans.tests import zun_front

ENDPOINT = 'http://zun:9517/v1'
LABEL = "Zun's container API %s" % ENDPOINT
C1, C2, C3 = ('c%d000000-0000-4000-8000-000000000000' % n
              for n in range(1, 4))
CAPSULE = 'caca0000-0000-4000-8000-000000000000'
STRANGER = '57a0000a-0000-4000-8000-000000000000'


class WSGIAdapter(fakes.FakeAdapter):
    """A keystoneauth adapter whose requests a WSGI app answers, with
    the token osc's session would add.
    """

    endpoint = ENDPOINT

    def __init__(self, app):
        super().__init__()
        self.app = app
        self.headers = []

    def request(self, url, method, raise_exc=True, headers=None):
        self.requests.append((method, url, None))
        self.headers.append(headers)
        split = parse.urlsplit(url)
        environ = {'REQUEST_METHOD': method, 'PATH_INFO': split.path,
                   'QUERY_STRING': split.query,
                   'HTTP_X_AUTH_TOKEN': 'admin'}
        for name, value in (headers or {}).items():
            environ['HTTP_' + name.upper().replace('-', '_')] = value
        status = []
        body = b''.join(self.app(environ, lambda s, h: status.append(s)))
        return fakes.Response(int(status[0].split()[0]), json.loads(body))


class ZunAPIReaderTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.zun = zun_front.ZunFront()
        for uuid, status in ((C1, 'Running'), (C2, 'Deleting'),
                             (C3, 'Stopped')):
            self.zun.add(uuid, 'host1', status=status)
        self.zun.add(CAPSULE, 'host2', kind='capsules', status='Created')
        self.adapter = WSGIAdapter(self.zun)
        self.reader = zun_api.ZunAPIReader(
            container.ContainerClient(self.adapter, lambda: True))

    def test_reads_the_consumers_asked_from_every_page(self):
        with mock.patch.object(container, 'PAGE_SIZE', 2):
            read = self.reader.read([C2, C3, CAPSULE, STRANGER])
        self.assertEqual(model.ZunSnapshot(
            asked=frozenset([C2, C3, CAPSULE, STRANGER]), containers={
                C2: model.ZunContainer(C2, 'container', 'Deleting', 'host1'),
                C3: model.ZunContainer(C3, 'container', 'Stopped', 'host1'),
                CAPSULE: model.ZunContainer(CAPSULE, 'capsule', 'Created',
                                            'host2')},
            label=LABEL), read)
        self.assertEqual([
            '/v1/containers?all_projects=1&limit=2',
            '/v1/containers?all_projects=1&limit=2&marker=%s' % C2,
            '/v1/capsules?all_projects=1&limit=2'], self.zun.asked)
        self.assertEqual(
            [{'OpenStack-API-Version': 'container 1.1'}] * 3,
            self.adapter.headers)

    def test_no_consumer_no_request(self):
        self.assertEqual(model.ZunSnapshot(asked=frozenset(), label=LABEL),
                         self.reader.read([]))
        self.assertEqual([], self.zun.asked)

    def test_api_down_fails_closed(self):
        self.zun.down = True
        self.assertEqual(model.ZunSnapshot(
            asked=frozenset([C1]), label=LABEL,
            error='Container request GET /containers?all_projects=1&'
                  'limit=1000 failed: 503 Service Unavailable'),
            self.reader.read([C1]))

    def test_unreachable_fails_closed(self):
        def refused(*args, **kwargs):
            raise ks_exc.ConnectFailure('Connection refused')
        self.adapter.request = refused
        self.assertEqual(
            'Container request GET /containers?all_projects=1&limit=1000 '
            'failed: Connection refused', self.reader.read([C1]).error)

    def test_an_answer_that_is_not_a_listing_fails_closed(self):
        self.adapter.request = lambda *a, **kw: fakes.Response(
            200, {'version': {'id': 'v1'}})
        self.assertEqual(
            'Container request GET /containers?all_projects=1&limit=1000 '
            'failed: the answer lists no containers',
            self.reader.read([C1]).error)


class CatalogedTestCase(base.BaseTestCase):
    """Zun is read when the cloud has it: an endpoint override, or an
    identity plugin's catalog that lists it.
    """

    def cataloged(self, auth, override=None, found=None):
        adapter = mock.Mock(endpoint_override=override)
        if isinstance(found, Exception):
            adapter.get_endpoint.side_effect = found
        else:
            adapter.get_endpoint.return_value = found
        instance = mock.Mock()
        instance.session.auth = auth
        return plugin.cataloged(instance, adapter)(), adapter

    def test_endpoint_override(self):
        admin_token = token_endpoint.Token('http://placement', 'admin')
        self.assertTrue(self.cataloged(admin_token, override=ENDPOINT)[0])

    def test_no_catalog_is_no_zun(self):
        """admin_token's one endpoint answers for every service."""
        admin_token = token_endpoint.Token('http://placement', 'admin')
        found, adapter = self.cataloged(admin_token,
                                        found='http://placement')
        self.assertFalse(found)
        adapter.get_endpoint.assert_not_called()

    def test_catalog(self):
        password = generic.Password(auth_url='http://keystone/v3')
        self.assertTrue(self.cataloged(password, found=ENDPOINT)[0])
        self.assertFalse(self.cataloged(password, found=None)[0])
        self.assertFalse(self.cataloged(
            password, found=ks_exc.EndpointNotFound())[0])


class SourcesTestCase(base.BaseTestCase):
    """openstack's sources turn the zun rule on when the cloud has Zun,
    and look in the catalog once.
    """

    def sources(self, container_client):
        return api_sources.APISources(
            plugin.Clients(mock.Mock(), mock.Mock(), None, container_client),
            {'grace_period': 0})

    def test_zun_cataloged(self):
        cataloged = mock.Mock(return_value=True)
        sources = self.sources(container.ContainerClient(
            WSGIAdapter(zun_front.ZunFront()), cataloged))
        self.assertIsInstance(sources.zun(), zun_api.ZunAPIReader)
        self.assertEqual(LABEL, sources.zun().label)
        self.assertEqual(
            [f.__name__ for f in site_rules.chain(None, zun=True)],
            [f.__name__ for f in sources.rules])
        self.assertIn('zun_containers',
                      [f.__name__ for f in sources.rules])
        cataloged.assert_called_once_with()

    def test_no_zun(self):
        cataloged = mock.Mock(return_value=False)
        for client in (None, container.ContainerClient(
                WSGIAdapter(zun_front.ZunFront()), cataloged)):
            sources = self.sources(client)
            self.assertIsNone(sources.zun())
            self.assertIs(rules.DEFAULT_RULES, sources.rules)
        cataloged.assert_called_once_with()
