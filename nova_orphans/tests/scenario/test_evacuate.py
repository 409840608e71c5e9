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
"""Evacuation from a fenced host that never comes back (admin guide, seed 000).

nova leaves the evacuated server's allocation on the source provider until
the source compute restarts and cleans up. If it never restarts, that
allocation is orphaned: the fix is to remove the source provider from the
consumer's allocations and keep the destination's.
"""

import json
import sys

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
import sqlalchemy as sa

from nova_orphans.tests.scenario import base


def _standin_main(argv):
    """Stand-in for nova_orphans.cmd.manage.main until it exists.

    Only proves the plumbing (nova.conf -> API DB -> cell DBs, placement
    via admin_token): reads the tables directly and knows just enough to
    label this scenario. Delete once the real command lands.
    """
    conf = cfg.ConfigOpts()
    conf.register_opt(cfg.StrOpt('connection'), group='api_database')
    ks_loading.register_auth_conf_options(conf, 'placement')
    ks_loading.register_session_conf_options(conf, 'placement')
    config, rest = argv[:2], argv[2:]
    conf(config, project='nova', default_config_files=[])
    show_all = '--all' in rest
    with sa.create_engine(conf.api_database.connection).connect() as c:
        cells = c.execute(sa.text(
            'SELECT database_connection FROM cell_mappings')).scalars().all()
    nodes, instances, evacuated = {}, {}, set()
    for url in cells:
        with sa.create_engine(url).connect() as c:
            nodes.update(c.execute(sa.text(
                'SELECT uuid, host FROM compute_nodes WHERE deleted = 0'
            )).all())
            instances.update(c.execute(sa.text(
                'SELECT uuid, host FROM instances WHERE deleted = 0'
            )).all())
            evacuated.update(tuple(r) for r in c.execute(sa.text(
                "SELECT instance_uuid, source_compute FROM migrations "
                "WHERE migration_type = 'evacuation' AND status = 'done'")))
    auth = ks_loading.load_auth_from_conf_options(conf, 'placement')
    sess = ks_loading.load_session_from_conf_options(
        conf, 'placement', auth=auth)
    rows = []
    for rp in sess.get('/resource_providers', endpoint_filter={
            'service_type': 'placement'}).json()['resource_providers']:
        allocs = sess.get('/resource_providers/%s/allocations' % rp['uuid'],
                          endpoint_filter={'service_type': 'placement'})
        for consumer, alloc in allocs.json()['allocations'].items():
            host = nodes.get(rp['uuid'])
            if instances.get(consumer) == host:
                reason, action = 'active_instance', 'none'
            elif (consumer, host) in evacuated:
                reason, action = 'evacuated_source', 'remove_provider'
            else:
                reason, action = 'unknown_consumer', 'delete_consumer'
            if show_all or action != 'none':
                rows.append({'consumer': consumer, 'resource_provider':
                             rp['uuid'], 'host': host, 'reason': reason,
                             'action': action,
                             'resources': alloc['resources']})
    sys.stdout.write(json.dumps(rows))
    return 0


class EvacuateFromDownHostTest(base.ScenarioTestCase):

    manage_main = staticmethod(_standin_main)

    def setUp(self):
        super().setUp()
        self.server = self._boot_and_check_allocations(self.flavor, 'host1')
        self.force_down('host1')
        # Name the target: the scheduler would pick host2 or host3.
        self.server = self._evacuate_server(
            self.server, extra_post_args={'host': 'host2'},
            expected_host='host2')
        self.src, self.dst = self.rp_uuids['host1'], self.rp_uuids['host2']
        self.resources = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}

    def test_source_allocation_is_orphaned(self):
        # The state the guide describes: one consumer, both providers.
        self.assertEqual({self.src: self.resources, self.dst: self.resources},
                         self.get_allocations(self.server['id']))

        # nova's own audit flags the source allocation (the evacuation
        # migration is 'done', the instance is on host2), and only that.
        rc, out = self.run_nova_audit(verbose=True)
        self.assertEqual(3, rc, out)
        self.assertEqual(
            ['Allocations were set against consumer UUID %s but no existing '
             'instances or active migrations are related. '
             % self.server['id'],
             'Allocations for consumer UUID %s on Resource Provider %s can '
             'be deleted: %s' % (self.server['id'], self.src, self.resources),
             'Processed 1 allocation.'],
            out.splitlines())

        rows = {row['resource_provider']: row
                for row in self.list_allocations('--all')}
        self.assertEqual({self.src, self.dst}, set(rows))
        source, dest = rows[self.src], rows[self.dst]
        self.assertEqual(
            (self.server['id'], 'host1', 'evacuated_source',
             'remove_provider', self.resources),
            (source['consumer'], source['host'], source['reason'],
             source['action'], source['resources']))
        self.assertEqual(('host2', 'active_instance', 'none'),
                         (dest['host'], dest['reason'], dest['action']))

        # Without --all only the orphan is listed.
        self.assertEqual([self.src], [row['resource_provider']
                                      for row in self.list_allocations()])

    def test_nova_audit_delete_agrees(self):
        """nova's --delete removes exactly what we call the orphan."""
        rc, out = self.run_nova_audit(delete=True)
        self.assertEqual(4, rc, out)
        self.assertEqual({self.dst: self.resources},
                         self.get_allocations(self.server['id']))
        self.assertEqual([], self.list_allocations())
