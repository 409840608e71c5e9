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
"""Zun's database reader, and what an unreadable one does to a run."""

import os
from unittest import mock

import fixtures
from oslotest import base
import sqlalchemy as sa

from nova_orphans.app import audit as audit_mod
from nova_orphans.app import results
from nova_orphans.engine import model
from nova_orphans.engine import reasons as r
from nova_orphans import exit_codes
from nova_orphans.readers import zun_db
from nova_orphans.repair import actions
from nova_orphans.tests.unit.app import test_audit
from nova_orphans.tests.unit import cloud as cloud_mod
from nova_orphans.tests.unit.engine import test_zun_rule

# A part of Zun's container table: what the reader selects, and more.
TABLE = ('CREATE TABLE container (id INTEGER PRIMARY KEY, uuid VARCHAR(36), '
         'name VARCHAR(255), container_type INTEGER, status VARCHAR(20), '
         'host VARCHAR(255))')


class ZunDBReaderTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.url = 'sqlite:///' + os.path.join(self.tmp, 'zun.sqlite')
        engine = sa.create_engine(self.url)
        with engine.begin() as conn:
            conn.exec_driver_sql(TABLE)
            for n, (kind, status) in enumerate(
                    ((0, 'Running'), (1, 'Deleted'), (7, None))):
                conn.exec_driver_sql(
                    "INSERT INTO container (uuid, name, container_type, "
                    "status, host) VALUES ('c%d', 'n', %d, %s, 'host1')" % (
                        n, kind, "'%s'" % status if status else 'NULL'))
        engine.dispose()

    def reader(self, url=None):
        reader = zun_db.ZunDBReader(url or self.url, retry_interval=0)
        self.addCleanup(reader.close)
        return reader

    def test_reads_only_the_consumers_asked(self):
        read = self.reader().read({'c0', 'c1', 'c2', 'other'})
        self.assertEqual(model.ZunSnapshot(
            asked=frozenset({'c0', 'c1', 'c2', 'other'}),
            containers={
                'c0': model.ZunContainer('c0', 'container', 'Running',
                                         'host1'),
                'c1': model.ZunContainer('c1', 'capsule', 'Deleted',
                                         'host1'),
                'c2': model.ZunContainer('c2', 'container of type 7', None,
                                         'host1')},
            label="Zun's database %s" % self.url), read)
        self.assertEqual({'c1'}, set(self.reader().read({'c1'}).containers))

    def test_nothing_asked_nothing_read(self):
        reader = self.reader('mysql+pymysql://zun:pw@127.0.0.1:1/zun')
        with mock.patch.object(reader._engines, 'connect') as connect:
            read = reader.read(set())
        connect.assert_not_called()
        self.assertEqual((frozenset(), {}, None),
                         (read.asked, read.containers, read.error))

    def test_unreachable_database_says_why_without_password(self):
        url = 'mysql+pymysql://zun:s3cret@127.0.0.1:1/zun'
        read = self.reader(url).read({'c0'})
        self.assertEqual((frozenset({'c0'}), {}), (read.asked,
                                                   read.containers))
        self.assertIn('Connection refused', read.error)
        self.assertEqual(
            "Zun's database mysql+pymysql://zun:***@127.0.0.1:1/zun",
            read.label)
        self.assertNotIn('s3cret', read.error + read.label)
        self.assertEqual([read], model.NovaSnapshot(
            zun=read).unreadable_services)

    def test_not_a_zun_database(self):
        empty = 'sqlite:///' + os.path.join(self.tmp, 'nova.sqlite')
        sa.create_engine(empty).connect().close()
        read = self.reader(empty).read({'c0'})
        self.assertEqual('no table container: not a Zun database',
                         read.error)
        engine = sa.create_engine(self.url)
        with engine.begin() as conn:
            conn.exec_driver_sql('ALTER TABLE container DROP COLUMN host')
        engine.dispose()
        self.assertEqual(
            'table container has no column host: not a Zun schema '
            'nova-orphans knows', self.reader().read({'c0'}).error)


class _ZunReader:

    def __init__(self, containers=(), error=None):
        self.containers = containers
        self.error = error
        self.asked = []

    def read(self, consumers):
        self.asked.append(set(consumers))
        return model.ZunSnapshot(
            asked=frozenset(consumers),
            containers={c: model.ZunContainer(c, 'container')
                        for c in self.containers if c in consumers},
            error=self.error)


class RunTestCase(base.BaseTestCase):
    """The audit and the repairs read Zun for the consumers nova has no
    trace of, after their allocations; an unreadable Zun makes the run
    incomplete.
    """

    def setUp(self):
        super().setUp()
        c = self.cloud = cloud_mod.Cloud()
        node = c.node('host1')
        self.live = c.instance('host1')
        self.gone = c.instance('host1', deleted=True)
        self.mapped = cloud_mod.uuid('mapped')
        c.map(self.mapped, 'cell1')
        self.container = cloud_mod.uuid('container')
        self.stranger = cloud_mod.uuid('stranger')
        for consumer in (self.live, self.gone, self.mapped, self.container,
                         self.stranger):
            c.alloc(consumer, node)
        self.chain = test_zun_rule.site_rules.chain(
            test_zun_rule.make_conf('sqlite:///zun.db'), zun=True)

    def audit(self, zun):
        reader = test_audit._APIReader(self.cloud.placement, {})
        audit = audit_mod.Audit(reader, test_audit._NovaReader(
            self.cloud.nova), rules=self.chain, zun_reader=zun)
        findings = audit.run(shown=lambda f: True)
        return results.Listing(findings, audit.snapshot)

    def test_audit_asks_zun_of_strangers_only(self):
        zun = _ZunReader([self.container])
        listing = self.audit(zun)
        self.assertEqual([{self.container, self.stranger}], zun.asked)
        self.assertEqual({
            self.live: r.ACTIVE_INSTANCE, self.gone: r.DELETED_INSTANCE,
            self.mapped: r.UNKNOWN_CONSUMER,
            self.container: r.UNMANAGED_CONSUMER,
            self.stranger: r.UNKNOWN_CONSUMER},
            {f.consumer: f.reason for f in listing.findings})
        self.assertEqual((False, exit_codes.ORPHANS_FOUND),
                         (listing.incomplete, listing.exit_code))

    def test_unreadable_zun_makes_the_run_incomplete(self):
        listing = self.audit(_ZunReader(error='refused'))
        self.assertEqual(
            {self.container: r.UNVERIFIABLE, self.stranger: r.UNVERIFIABLE},
            {f.consumer: f.reason for f in listing.findings
             if f.consumer in (self.container, self.stranger)})
        self.assertEqual((True, exit_codes.INCOMPLETE_WITH_ORPHANS),
                         (listing.incomplete, listing.exit_code))
        self.assertEqual([], listing.unreadable_cells)
        self.assertEqual(['refused'],
                         [s.error for s in listing.unreadable_services])
        repair = results.Repair(listing.orphans, [actions.DONE] * len(
            listing.orphans), listing)
        self.assertEqual(exit_codes.INCOMPLETE_WITH_ORPHANS,
                         repair.exit_code)
        self.assertEqual(exit_codes.INCOMPLETE, results.Repair(
            [], [], listing).exit_code)

    def test_repairs_read_zun_again(self):
        zun = _ZunReader([self.container])
        nova = mock.Mock(spec=['read_consumers'])
        nova.read_consumers.return_value = self.cloud.nova
        audit = mock.Mock()
        repairer = actions.Repairer(mock.Mock(), nova, audit,
                                    zun_reader=zun)
        fresh = repairer._read_fresh([self.gone, self.container,
                                      self.stranger])
        nova.read_consumers.assert_called_once_with(
            audit.nova, [self.gone, self.container, self.stranger])
        self.assertEqual([{self.container, self.stranger}], zun.asked)
        self.assertEqual({self.container}, set(fresh.zun.containers))
