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
"""``--debug`` on runs that succeed: the run told, never a secret.

A list, a clean and a restore of each front end and mode, on the
sandbox's cloud (tools/sandbox.py's seed) with nova's and placement's
databases on MariaDB: ``nova-orphans-manage`` reading placement through
its API, then (fast mode) through its database, and ``openstack``
through the APIs. Each log line of nova-orphans-manage is in oslo.log's
format (openstack's in osc's, its message alone), and the lines say
what was read (configuration, cloud, each cell database, placement,
each API, with rows or requests and time), each request (method, path,
status, time) and the rule that decided each consumer; and no line of
any run holds a secret: the databases are reached by a user with a
password, and placement and nova's compute API take an admin token
with a secret part (``admin:SECRET``, which both take as admin).

``DebugTests`` runs on test_formats' MariaDB class, whose cloud it
shares. keystone's passwords and tokens are test_keystone's and
test_keystone_osc's, which run --debug through a real keystone
(``assertNoSecret``).
"""

import json
import re

from nova_orphans.tests.functional.fixtures import mariadb

DB_USER = 'orphans_debug'
DB_PASSWORD = 'Db-s3cr3t-of-d3bug'
ADMIN_TOKEN = 'admin:T0ken-s3cr3t-of-d3bug'
# A line of oslo.log's default format: time, process, level, logger.
OSLO_LINE = re.compile(
    r'^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \d+ '
    r'(DEBUG|INFO|WARNING|ERROR) (\S+) \[-\] ')
# What oslo.log adds to a DEBUG line: the function, file and line.
DEBUG_SUFFIX = re.compile(r' \S+ /\S+\.py:\d+$')
# A token header keystoneauth did not mask ({SHA256}..., as it logs it).
TOKEN_HEADER = re.compile(r'X-(?:Auth|Subject|Service)-Token: (?!\{SHA256\})',
                          re.I)
# What keystone's fernet tokens start with.
FERNET = 'gAAAAA'
UUID = r'[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}'


def assertNoSecret(test, text, *secrets):
    """No line of ``text`` holds one of ``secrets``, a fernet token or
    a token header keystoneauth did not mask.
    """
    for secret in secrets + (FERNET,):
        test.assertEqual([], [line for line in text.splitlines()
                              if secret in line], secret)
    test.assertEqual([], TOKEN_HEADER.findall(text))


def package_lines(text):
    """The log lines of this package's loggers in ``text`` (in oslo.log's
    format), as (logger, message).
    """
    found = []
    for line in text.splitlines():
        match = OSLO_LINE.match(line)
        if match and match.group(2).startswith('nova_orphans.'):
            message = line[match.end():]
            if match.group(1) == 'DEBUG':
                message = DEBUG_SUFFIX.sub('', message)
            found.append((match.group(2), message))
    return found


class DebugTests:
    """The --debug runs, for a front_ends.FrontEndsTestCase on MariaDB
    whose cloud holds the sandbox's seed (``self.made``).
    """

    def setUp(self):
        super().setUp()
        server = mariadb.server()
        server.execute("CREATE USER IF NOT EXISTS '%s'@'127.0.0.1' "
                       "IDENTIFIED BY '%s'" % (DB_USER, DB_PASSWORD))
        server.execute("GRANT ALL PRIVILEGES ON *.* TO '%s'@'127.0.0.1'" %
                       DB_USER)
        for cell in self.nova.cell_names:
            self.nova.set_cell_url(cell, self.secret(self.nova.cell_urls[
                cell]))
        placement = {'auth_type': 'admin_token',
                     'endpoint': self.placement.endpoint,
                     'token': ADMIN_TOKEN}
        databases = {
            'api_database': {'connection': self.secret(self.nova.api_url)},
            'database': {'connection': self.secret(
                self.nova.cell_urls[self.nova.local_cell])}}
        self.api_conf = self.nova_conf(placement, name='debug.conf',
                                       **databases)
        self.fast_conf = self.nova_conf(
            placement, name='fast.conf', placement_database={
                'connection': self.secret(self.placement.db_url)},
            **databases)
        self.write_clouds(token=ADMIN_TOKEN)

    @staticmethod
    def secret(url):
        """The test's MariaDB URL ``url``, for the user with a password."""
        return url.replace('//root@', '//%s:%s@' % (DB_USER, DB_PASSWORD))

    @staticmethod
    def masked(url):
        """``url`` as a log shows it."""
        return url.replace('//root@', '//%s:***@' % DB_USER)

    def runs(self, argv_of, messages_of=None):
        """list, clean and restore, each with --debug and -f json:
        ([(command, rows, messages of this package, stderr)], the
        journal), each checked for secrets and its exit code; and the
        orphans the list found, {consumer: a provider of it}.
        ``messages_of(stderr)``: the messages in it (by default, this
        package's lines in oslo.log's format).
        """
        journal = '%s/debug-%s.jsonl' % (self.tmp, self.id().rsplit('.')[-1])
        found = []
        for action, extra, code in (('list', (), 3),
                                    ('clean', ('--journal', journal), 4),
                                    ('restore', ('--journal', journal), 4)):
            rc, out, err = self.run_one(argv_of(action, *extra))
            self.assertEqual(code, rc, err)
            assertNoSecret(self, out + err, DB_PASSWORD, ADMIN_TOKEN)
            messages = (messages_of(err) if messages_of is not None else
                        [message for _logger, message in package_lines(err)])
            self.assertNotEqual([], messages, err)
            found.append((action, json.loads(out), messages, err))
        orphans = {r['consumer']: r['resource_provider'] for r in found[0][1]}
        self.assertEqual(5, len(orphans))
        return found, journal, orphans

    def assertTold(self, messages, *patterns):
        """Each of ``patterns`` matches a message."""
        for pattern in patterns:
            self.assertTrue(any(re.search(pattern, m) for m in messages),
                            '%s in:\n%s' % (pattern, '\n'.join(messages)))

    def assertDecided(self, messages, orphans):
        """The rule of each orphan's allocations, one line a consumer."""
        for consumer, provider in orphans.items():
            lines = [m for m in messages
                     if m.startswith('Consumer %s: ' % consumer)]
            self.assertEqual(1, len(lines), consumer)
            self.assertRegex(lines[0], r'on %s: \w+ \(rule \w+\) -> \w+: ' %
                             provider)

    def assertManage(self, conf, mode):
        """nova-orphans-manage's three runs on ``conf``; ``mode``: the
        lines of its placement reads.
        """
        runs, journal, orphans = self.runs(
            lambda action, *extra: self.manage_argv(
                '--debug', 'allocations', action, '-f', 'json', *extra,
                conf_file=conf))
        api = self.masked(self.nova.api_url)
        for action, rows, messages, err in runs:
            self.assertTold(
                messages,
                r'^allocations %s reads nova\'s databases \(API database %s\) '
                r'and placement\'s API.*, as configured by %s$' % (
                    action, re.escape(api), re.escape(conf)),
                r'^allocations %s: \d+ row\(s\), exit code \d, in [\d.]+ s$'
                % action)
            if action != 'list':
                # Fast mode too: every write goes through the API.
                self.assertTold(
                    messages, r'^placement: \d+ request\(s\), [\d.]+ s in '
                    r'all$')
            if action == 'restore':
                self.assertTold(
                    messages, r'^Read the journal %s: \d+ entries to '
                    r'restore, in [\d.]+ s$' % re.escape(journal),
                    r'^placement (POST|PUT) /allocations\S*: 20[04] in ')
                continue
            # The audit: each source, each cell, each rule's verdict.
            self.assertTold(
                messages, *[r'^Cell %s \(%s\), live rows: .* in [\d.]+ s$' % (
                    cell, re.escape(self.masked(self.nova.cell_urls[cell])))
                    for cell in self.nova.cell_names])
            self.assertTold(
                messages,
                r'^nova API database %s, cells and build requests: %d '
                r'cell\(s\), \d+ build request\(s\) in [\d.]+ s$' % (
                    re.escape(api), len(self.nova.cell_names)),
                r'^Read nova\'s databases \(API database %s\): %d cell\(s\), '
                r'0 not read; 4 compute node\(s\), .* instance\(s\)' % (
                    re.escape(api), len(self.nova.cell_names)),
                *mode)
            self.assertDecided(messages, orphans)
        clean = runs[1][3]
        self.assertRegex(clean, r'placement (POST|PUT|DELETE) /allocations'
                                r'\S*: 20[04] in ')

    def test_debug_manage_api_mode(self):
        self.assertManage(self.api_conf, [
            r'^placement: \d+ request\(s\), [\d.]+ s in all$',
            r'^Placement at %s serves microversions up to 1\.\d+; reading '
            r'at 1\.\d+$' % re.escape(self.placement.endpoint),
            r'^placement GET /resource_providers: 200 in [\d.]+ s$',
            r'^placement GET /resource_providers/%s/allocations: 200 in '
            r'[\d.]+ s$' % UUID,
            r'^Read \d+ allocation\(s\) on \d+ provider\(s\) from '
            r'placement\'s API at %s in [\d.]+ s$' % re.escape(
                self.placement.endpoint)])

    def test_debug_manage_fast_mode(self):
        placement_db = re.escape(self.masked(self.placement.db_url))
        self.assertManage(self.fast_conf, [
            r'^placement\'s database %s, resource providers: \d+ in '
            r'[\d.]+ s$' % placement_db,
            r'^Read \d+ resource provider\(s\) from placement\'s database '
            r'%s in [\d.]+ s$' % placement_db,
            r'^Read \d+ allocation\(s\) on \d+ provider\(s\) from '
            r'placement\'s database %s in [\d.]+ s$' % placement_db])

    def test_debug_openstack(self):
        # osc's console shows each record's message alone.
        runs, journal, orphans = self.runs(
            lambda action, *extra: self.openstack_argv(
                '--debug', 'allocation', 'orphan', action, '-f', 'json',
                *extra), messages_of=str.splitlines)
        for action, rows, messages, err in runs:
            self.assertTold(
                messages,
                r'^Configuration: %s$' % re.escape(self.clouds_yaml),
                # An admin_token cloud goes through no keystone: its
                # name alone (placement's endpoint is the next line's).
                r'^allocations %s reads the placement, compute and network '
                r'APIs, .* of the cloud name cloud$' % action,
                r'^allocations %s: \d+ row\(s\), exit code \d, in [\d.]+ s$'
                % action)
            # keystoneauth's own request log, its token masked.
            self.assertRegex(err, r'(?m)^REQ: curl .*-H "X-Auth-Token: '
                                  r'\{SHA256\}[0-9a-f]{64}"')
            if action == 'restore':
                continue
            self.assertTold(
                messages,
                r'^compute GET /servers/detail\?all_tenants=1&limit=\d+: 200 '
                r'in [\d.]+ s$',
                r'^Read nova\'s compute API at %s: 1 cell\(s\), 0 not read; '
                r'\d+ compute node\(s\)' % re.escape(self.cloud.compute),
                r'^compute: \d+ request\(s\), [\d.]+ s in all$',
                r'^placement GET /resource_providers/%s/allocations: 200 in '
                r'[\d.]+ s$' % UUID)
            self.assertDecided(messages, orphans)
