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
"""The zun site rule and how [zun_database] turns it on."""

import configparser
import os
from unittest import mock

from oslo_config import cfg
from oslotest import base

from nova_orphans.app import sources
from nova_orphans import conf as conf_mod
from nova_orphans.engine import model
from nova_orphans.engine import reasons as r
from nova_orphans.engine import rules
from nova_orphans.engine import site_rules
from nova_orphans import exception
from nova_orphans.tests.unit import cloud as cloud_mod
from nova_orphans.tests.unit.engine import test_classify

FINE = r.NONE
URL = 'mysql+pymysql://zun:***@db/zun'


def make_conf(connection=None, names=()):
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf, placement_opts=False)
    conf([], default_config_files=[], default_config_dirs=[])
    conf.set_override('site_rules', list(names), group='nova_orphans')
    conf.set_override('connection', connection, group='zun_database')
    return conf


class ZunRuleTestCase(test_classify.ClassifyTestCase):

    def setUp(self):
        super().setUp()
        self.chain = site_rules.chain(make_conf('sqlite:///zun.db'),
                                      zun=True)
        c = self.cloud
        self.container = cloud_mod.uuid('container')
        self.capsule = cloud_mod.uuid('capsule')
        self.deleted = cloud_mod.uuid('deleted')
        self.live = c.instance('host1')
        for consumer in (self.container, self.capsule, self.deleted,
                         self.live):
            c.alloc(consumer, self.host1)

    def read(self, error=None, asked=None):
        known = {
            self.container: model.ZunContainer(self.container, 'container',
                                               'Running', 'host1'),
            self.capsule: model.ZunContainer(self.capsule, 'capsule',
                                             'Deleted', 'host1')}
        self.cloud.nova.zun = model.ZunSnapshot(
            asked=frozenset(
                (self.container, self.capsule, self.deleted)
                if asked is None else asked),
            containers={} if error else known, error=error,
            label="Zun's database %s" % URL)

    def findings(self):
        return {f.consumer: (f.reason, f.action, f.details)
                for f in self.cloud.findings(rules=self.chain)}

    def test_zun_keeps_its_containers_and_capsules(self):
        self.read()
        found = self.findings()
        self.assertEqual({
            self.container: (r.UNMANAGED_CONSUMER, FINE,
                             'Zun container %s (status Running, host host1) '
                             'holds this allocation.' % self.container),
            self.capsule: (r.UNMANAGED_CONSUMER, FINE,
                           'Zun capsule %s (status Deleted, host host1) '
                           'holds this allocation.' % self.capsule),
            self.deleted: (r.UNKNOWN_CONSUMER, r.DELETE_CONSUMER,
                           'No instance, migration, build request or '
                           'instance mapping has this uuid.'),
            self.live: (r.ACTIVE_INSTANCE, FINE,
                        'The instance runs on this node.')}, found)

    def test_unreadable_zun_fails_closed(self):
        self.read(error='connection refused')
        found = self.findings()
        why = ("nova has no trace of this consumer, and Zun's database %s, "
               "which may hold it as a container, could not be read: "
               "connection refused." % URL)
        self.assertEqual({
            self.container: (r.UNVERIFIABLE, FINE, why),
            self.capsule: (r.UNVERIFIABLE, FINE, why),
            self.deleted: (r.UNVERIFIABLE, FINE, why),
            self.live: (r.ACTIVE_INSTANCE, FINE,
                        'The instance runs on this node.')}, found)
        self.assertEqual([self.cloud.nova.zun],
                         self.cloud.nova.unreadable_services)

    def test_not_read_for_the_consumer_fails_closed(self):
        why = ("nova has no trace of this consumer, and Zun was not read "
               "for it: it may be a Zun container's.")
        # Not read at all, then read for others only.
        for asked in ('unread', (self.container,)):
            if asked == 'unread':
                self.cloud.nova.zun = None
            else:
                self.read(asked=asked)
            found = self.findings()
            self.assertEqual((r.UNVERIFIABLE, FINE, why),
                             found[self.deleted])
            self.assertEqual([], self.cloud.nova.unreadable_services)

    def test_nova_consumers_are_left_to_nova(self):
        """A uuid nova knows is judged by nova's rules, whatever Zun says
        (Zun's uuids are its own: it never holds one of nova's).
        """
        gone = self.cloud.instance('host1', deleted=True)
        mapped = cloud_mod.uuid('mapped')
        self.cloud.map(mapped, 'cell1')
        for consumer in (gone, mapped):
            self.cloud.alloc(consumer, self.host2)
        self.read(error='connection refused')
        self.assertEqual({
            (gone, self.host2): (r.DELETED_INSTANCE, r.DELETE_CONSUMER),
            (mapped, self.host2): (r.UNKNOWN_CONSUMER, r.DELETE_CONSUMER)},
            {k: v for k, v in self.cloud.verdicts(rules=self.chain).items()
             if k[0] in (gone, mapped)})

    def test_protective_rules_come_first(self):
        self.read()
        other = self.cloud.provider('zun-host')
        self.cloud.alloc(self.container, other)
        self.assertEqual((r.UNMANAGED_PROVIDER, FINE),
                         self.cloud.verdicts(rules=self.chain)[
                             (self.container, other)])
        # A cell that cannot be read may own any consumer nova has no
        # trace of: unverifiable, whatever Zun says.
        self.cloud.add_cell('cell2', readable=False)
        self.assertEqual(
            (r.UNVERIFIABLE, FINE,
             'No readable cell knows this consumer and cell(s) cell2 could '
             'not be read.'),
            [(f.reason, f.action, f.details)
             for f in self.cloud.findings(rules=self.chain)
             if (f.consumer, f.resource_provider) == (self.container,
                                                      self.host1)][0])


class ChainTestCase(base.BaseTestCase):

    def test_connection_alone_turns_the_rule_on(self):
        protective = [f.__name__ for f in site_rules.PROTECTIVE]
        self.assertEqual(
            ['unverifiable', 'unmanaged_provider'], protective[:2])
        expected = (protective + ['zun_containers'] +
                    [f.__name__ for f in rules.DEFAULT_RULES
                     if f not in site_rules.PROTECTIVE])
        database = sources.DatabaseSources(make_conf('sqlite:///zun.db'))
        self.addCleanup(database.close)
        # The sources say whether Zun is read; openstack's have no
        # configuration.
        for chain in (database.rules, site_rules.chain(None, zun=True)):
            self.assertEqual(expected, [f.__name__ for f in chain])

    def test_no_connection_no_rule(self):
        self.assertIs(rules.DEFAULT_RULES,
                      sources.DatabaseSources(make_conf()).rules)
        self.assertIs(rules.DEFAULT_RULES, site_rules.chain(None))

    def test_named_without_connection_is_a_config_error(self):
        err = self.assertRaises(exception.ConfigError, site_rules.zun,
                                make_conf())
        self.assertEqual(
            'Configuration error: [nova_orphans] site_rules: the zun rule '
            'needs [zun_database] connection', str(err))

    def test_entry_point(self):
        setup_cfg = os.path.join(os.path.dirname(site_rules.__file__),
                                 '..', '..', 'setup.cfg')
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(setup_cfg)
        points = dict(
            line.split(' = ') for line in
            parser['entry_points']['nova_orphans.rules'].split('\n') if line)
        self.assertEqual('nova_orphans.engine.site_rules:zun',
                         points[site_rules.ZUN])

    def test_rule_that_fails_to_load_is_a_config_error(self):
        """stevedore would log it and run without the rule."""
        with mock.patch.object(site_rules, 'ignore_consumers',
                               side_effect=RuntimeError('broken')):
            err = self.assertRaises(
                exception.ConfigError, site_rules.chain,
                make_conf(names=['ignore_consumers']))
        self.assertEqual(
            'Configuration error: [nova_orphans] site_rules: rule '
            'ignore_consumers could not be loaded: broken', str(err))
