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
"""``nova-orphans-manage`` authenticating as production clouds do.

A real keystone (fixtures/keystone.py) issues the tokens; placement
validates each one through keystonemiddleware; nova.conf's
``[placement]`` holds a service user's password credentials and the
placement endpoint comes from keystone's catalog, on the internal
interface of the configured region. Each region's internal placement
endpoint is a fault proxy of its own in front of the one placement, so
the proxies' logs show which endpoint the tool chose; the public
endpoints lead nowhere.
"""

import collections
import configparser
import os
import re

from nova_orphans.repair import journal as journal_mod
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import faults
from nova_orphans.tests.functional.fixtures import keystone
from nova_orphans.tests.functional import processes
from nova_orphans.tests.functional import test_debug
from nova_orphans.tests import runners

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
# Nothing listens on port 9 (discard) here: a connection is refused.
NOWHERE = 'http://127.0.0.1:9/placement'


def shipped_placement_section():
    """etc/nova-orphans/placement-keystone.conf's ``[placement]``."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(os.path.join(ROOT, 'etc', 'nova-orphans',
                             'placement-keystone.conf'))
    return dict(parser['placement'])


class KeystoneTestCase(base.FunctionalTestCase):

    EXPIRATION = 3600

    def keystone_server(self):
        return keystone.server(self.EXPIRATION)

    def setUp(self):
        super().setUp()
        self.keystone = self.placement.keystone
        self.proxies = {
            region: self.useFixture(faults.FaultProxy(
                self.placement.endpoint))
            for region in (keystone.REGION_ONE, keystone.REGION_TWO)}
        self.useFixture(keystone.Catalog(self.keystone, self.catalog()))
        self.journal = os.path.join(self.tmp, 'journal.jsonl')

    def catalog(self):
        endpoints = {}
        for region, proxy in self.proxies.items():
            endpoints[('placement', 'internal', region)] = proxy.endpoint
            endpoints[('placement', 'public', region)] = NOWHERE
        return endpoints

    def password_conf(self, name='nova.conf', **credentials):
        """nova.conf with production ``[placement]`` credentials: the
        shipped sample's, this keystone's address and the users'
        passwords put in.
        """
        return self.nova_conf(
            dict(shipped_placement_section(),
                 **self.keystone.password_section(**credentials)),
            name=name)

    def argv(self, conf, action, *argv, debug=False):
        """``nova-orphans-manage allocations ACTION --format json ARGV``
        with ``conf``, and --debug if asked; run with run_json's
        ``command``: the console script's logging is what --debug shows.
        """
        return runners.manage_argv(
            *(['--debug'] if debug else []), 'allocations', action,
            '--format', 'json', *argv, conf_file=conf)

    def requests_seen(self):
        return {region: len(proxy.requests())
                for region, proxy in self.proxies.items()}

    def assertDebug(self, err, *requests, messages=None):
        """--debug's lines: these requests (of this package's loggers,
        or among ``messages``: osc prints each record's message alone),
        and not one secret (the users' passwords, a token) in any line.
        """
        test_debug.assertNoSecret(self, err, keystone.ADMIN_PASSWORD,
                                  *(password for password, _p, _r in
                                    keystone.USERS.values()))
        if messages is None:
            messages = [m for _logger, m in test_debug.package_lines(err)]
        for request in requests:
            self.assertTrue(any(re.match(request, m) for m in messages),
                            '%s in:\n%s' % (request, err))


class PasswordCredentialsTestCase(KeystoneTestCase):
    """list, clean and restore through the catalog, as a subprocess."""

    def setUp(self):
        super().setUp()
        self.cloud = processes.Cloud(self, deleted=1, strangers=2,
                                     evacuated=1, returned=1, live=1)
        self.before = self.cloud.state()

    def orphans(self):
        return sorted(
            self.cloud.deleted + self.cloud.strangers + self.cloud.evacuated +
            [mig for _vm, mig in self.cloud.returned])

    def test_list_clean_restore_region_one(self):
        conf = self.password_conf()
        # --debug throughout: each run told, without a secret.
        _rc, rows = self.run_json(command=self.argv(conf, 'list', debug=True),
                                  codes=3)
        err = self.stderr
        self.assertEqual(self.orphans(),
                         sorted({r['consumer'] for r in rows}))
        self.assertEqual(0, self.requests_seen()[keystone.REGION_TWO])
        self.assertNotEqual(0, self.requests_seen()[keystone.REGION_ONE])
        self.assertDebug(
            err, r'placement GET /resource_providers: 200 in [\d.]+ s$',
            r'Placement at %s serves microversions' % re.escape(
                self.proxies[keystone.REGION_ONE].endpoint),
            # keystone's, which keystoneauth sends inside the session.
            r'keystone POST /v3/auth/tokens: 201 in [\d.]+ s$')

        _rc, rows = self.run_json(command=self.argv(
            conf, 'clean', '--journal', self.journal, debug=True), codes=4)
        self.assertDebug(
            self.stderr,
            r'placement (POST|PUT|DELETE) /allocations\S*: 20[04] in ')
        self.assertEqual(self.orphans(), sorted({r['consumer']
                                                 for r in rows}))
        self.assertEqual({'done'}, {r['outcome'] for r in rows})
        self.assertEqual(self.cloud.repaired(self.before), self.cloud.state())
        # A failed migration's allocation moves back to its instance:
        # both consumers are journaled.
        self.assertEqual(
            sorted(self.orphans() + [vm for vm, _mig in self.cloud.returned]),
            sorted({c for e in journal_mod.load(self.journal).entries
                    for c in e['consumers']}))

        _rc, rows = self.run_json(command=self.argv(
            conf, 'restore', '--journal', self.journal, debug=True), codes=4)
        self.assertDebug(self.stderr, r'Read the journal ')
        self.assertEqual({'done'}, {r['outcome'] for r in rows})
        self.assertEqual(self.before, self.cloud.state())
        self.assertEqual(0, self.requests_seen()[keystone.REGION_TWO])

    def test_shipped_sample(self):
        """The documented section is the one these tests run with, but
        for keystone's address and the password.
        """
        sample = shipped_placement_section()
        ours = self.keystone.password_section()
        self.assertEqual('http://controller:5000/v3', sample['auth_url'])
        self.assertEqual('NOVA_PASS', sample['password'])
        self.assertEqual(dict(ours, auth_url=sample['auth_url'],
                              password=sample['password']), sample)

    def test_region_two(self):
        """RegionTwo's placement endpoint, not RegionOne's."""
        conf = self.password_conf(region=keystone.REGION_TWO)
        _rc, rows = self.run_json(command=self.argv(conf, 'list'), codes=3)
        self.assertEqual(self.orphans(),
                         sorted({r['consumer'] for r in rows}))
        self.assertEqual(0, self.requests_seen()[keystone.REGION_ONE])
        self.assertNotEqual(0, self.requests_seen()[keystone.REGION_TWO])


class TokenExpiryTestCase(KeystoneTestCase):
    """Tokens that expire while ``clean`` runs.

    keystone issues tokens valid for EXPIRATION seconds; the proxy holds
    the first provider read and the first batch of writes longer than
    that, so each reaches placement with a token that has expired on
    the way, which keystonemiddleware refuses (401). The tool
    authenticates again and sends it once more: the run ends as an
    uninterrupted one does, journaled, each repair applied once.
    """

    # Short, but long enough that a request that is not held reaches
    # placement with its token still valid on a busy machine: with less
    # than two minutes left keystoneauth takes a new token for each
    # request, the tool's and keystonemiddleware's, which loads keystone
    # (8 s was seen to be too short with 8 streams of requests).
    EXPIRATION = 20

    def test_clean_outlives_its_tokens(self):
        cloud = processes.Cloud(self, deleted=1, strangers=2, evacuated=1,
                                returned=1, live=1)
        before = cloud.state()
        proxy = self.proxies[keystone.REGION_ONE]
        late = self.EXPIRATION + 1
        proxy.inject('GET', '/resource_providers/[^/]+/allocations',
                     delay=late)
        proxy.inject('POST', '/allocations', delay=late)

        conf = self.password_conf()
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(conf)
        parser['nova_orphans']['placement_concurrency'] = '2'
        with open(conf, 'w') as f:
            parser.write(f)
        # Each request costs keystone two authentications and a
        # validation: slow on a loaded machine.
        _rc, rows = self.run_json(command=self.argv(
            conf, 'clean', '--journal', self.journal), codes=4)
        orphans = sorted(cloud.deleted + cloud.strangers + cloud.evacuated +
                         [mig for _vm, mig in cloud.returned])
        self.assertEqual(orphans, sorted({r['consumer'] for r in rows}))
        self.assertEqual({'done'}, {r['outcome'] for r in rows})
        self.assertEqual(cloud.repaired(before), cloud.state())
        moved = [vm for vm, _mig in cloud.returned]
        self.assertEqual(sorted(orphans + moved), sorted(
            {c for e in journal_mod.load(self.journal).entries
             for c in e['consumers']}))

        # The held requests met expired tokens and were refused ...
        refused = proxy.requests()
        refused = [(r.method, r.path) for r in refused if r.result == 401]
        self.assertIn(('POST', '/allocations'), refused)
        self.assertTrue(any(method == 'GET' for method, _path in refused),
                        refused)
        # ... and every consumer was written once with success.
        written = collections.Counter()
        for request in proxy.requests():
            if request.method != 'GET' and request.result in (200, 204):
                consumers = (request.body or {}).keys() if \
                    request.path == '/allocations' else \
                    [request.path.rsplit('/', 1)[-1]]
                written.update(consumers)
        self.assertEqual({c: 1 for c in orphans + moved}, dict(written))
