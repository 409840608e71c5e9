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
"""providers list / clean and their restore, on the real placement and
nova's real schema; placement is reached through the fault proxy.
"""

import os

from nova_orphans.repair import journal as journal_mod
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import faults

STRANGER = '11111111-2222-3333-4444-555555555555'
# Every field of an inventory, none of them the default.
PF_INVENTORY = {'CUSTOM_BW_EGRESS': {
    'total': 1000, 'reserved': 100, 'min_unit': 10, 'max_unit': 500,
    'step_size': 10, 'allocation_ratio': 1.5}}
AGGREGATE = 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee'


class _ProvidersBase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.proxy = self.useFixture(
            faults.FaultProxy(self.placement.endpoint))
        self.conf_file = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'proxied.conf'), self.proxy.endpoint,
            extra={'nova_orphans': {'state_path': self.state_path,
                                    'cell_timeout': '20'},
                   'placement': {'timeout': '10'}})
        self.journal = os.path.join(self.tmp, 'journal.jsonl')
        self.live = self.add_node('live1')

    # Building state -----------------------------------------------------

    def dead_tree(self, host='dead1'):
        """A compute node nova deleted, whose nested tree placement kept
        because an unknown consumer holds its root.
        """
        root = self.add_node(host, aggregates=[AGGREGATE])
        self.placement._ok('PUT', '/traits/CUSTOM_PHYSNET_A')
        gen = self.placement._ok('GET', '/resource_providers/%s' % root
                                 ).json()['generation']
        self.placement._ok('PUT', '/resource_providers/%s/traits' % root, {
            'resource_provider_generation': gen,
            'traits': ['COMPUTE_NODE', 'CUSTOM_PHYSNET_A']})
        agent = self.placement.create_provider(host + ':agent', parent=root)
        pf = self.placement.create_provider(
            host + ':agent:eth0', parent=agent, traits=['CUSTOM_PHYSNET_A'],
            aggregates=[AGGREGATE])
        gen = self.placement._ok('GET', '/resource_providers/%s' % pf
                                 ).json()['generation']
        self.placement._ok('PUT', '/resource_classes/CUSTOM_BW_EGRESS')
        self.placement._ok('PUT', '/resource_providers/%s/inventories' % pf,
                           {'resource_provider_generation': gen,
                            'inventories': PF_INVENTORY})
        self.allocate(STRANGER, {root: {'VCPU': 1},
                                 pf: {'CUSTOM_BW_EGRESS': 20}})
        self.nova.execute('cell1', 'UPDATE compute_nodes SET deleted = id '
                          "WHERE uuid = '%s'" % root)
        return root, agent, pf

    # Running the tool ---------------------------------------------------

    def provider_row(self, uuid, name, root, parent, host, reason, action,
                     allocations=0, orphans=0, compute_node='root',
                     cell='cell1'):
        return {'uuid': uuid, 'name': name, 'root_provider': root,
                'parent_provider': parent, 'host': host, 'cell': cell,
                'compute_node': root if compute_node == 'root'
                else compute_node,
                'reason': reason, 'action': action,
                'allocations': allocations, 'orphan_allocations': orphans}

    def assertProviderRows(self, expected, rows):
        for row in rows:
            self.assertIsInstance(row.pop('details'), str)
        self.assertEqual(expected, rows)


class ProvidersTestCase(_ProvidersBase):

    def test_list_rows(self):
        root, agent, pf = self.dead_tree()
        rc, rows = self.run_json('providers', 'list')
        self.assertEqual(3, rc, self.stderr)
        dead = 'deleted_compute_node', 'delete_provider'
        self.assertProviderRows([
            self.provider_row(root, 'dead1', root, None, 'dead1', *dead,
                              allocations=1, orphans=1),
            self.provider_row(agent, 'dead1:agent', root, root, 'dead1',
                              *dead),
            self.provider_row(pf, 'dead1:agent:eth0', root, agent, 'dead1',
                              *dead, allocations=1, orphans=1),
        ], rows)
        # The consumer nova has no trace of, on nova's deleted node, is an
        # orphan (not unmanaged_provider).
        rc, allocs = self.run_json('allocations', 'list')
        self.assertEqual({(root, 'unknown_consumer'),
                          (pf, 'unknown_consumer')},
                         {(r['resource_provider'], r['reason'])
                          for r in allocs})

    def test_list_all_look_alikes(self):
        root, agent, pf = self.dead_tree()
        # Re-created under a new uuid with the same hypervisor hostname
        # (placement wants another provider name while the old is there).
        again = self.nova.add_compute_node('cell1', 'dead1')
        self.placement.create_provider('dead1-new', uuid=again,
                                       inventory=base.INVENTORY)
        disabled = self.add_node('off1')
        self.nova.execute('cell1', "UPDATE services SET disabled = 1, "
                          "forced_down = 1 WHERE host = 'off1'")
        sharing = self.placement.create_provider(
            'nfs', traits=['MISC_SHARES_VIA_AGGREGATE'],
            aggregates=[AGGREGATE], inventory={'DISK_GB': 1000})
        agent_tree = self.placement.create_provider('neutron-agent')
        rc, rows = self.run_json('providers', 'list', '--all')
        self.assertEqual(3, rc, self.stderr)
        got = {r['uuid']: (r['reason'], r['action'], r['compute_node'])
               for r in rows}
        live = ('live_compute_node', 'none')
        self.assertEqual({
            root: ('deleted_compute_node', 'delete_provider', root),
            agent: ('deleted_compute_node', 'delete_provider', root),
            pf: ('deleted_compute_node', 'delete_provider', root),
            again: live + (again,),
            disabled: live + (disabled,),
            self.live: live + (self.live,),
            sharing: ('unmanaged', 'none', None),
            agent_tree: ('unmanaged', 'none', None),
        }, got)
        rc, rows = self.run_json('providers', 'list', '--host', 'dead1')
        self.assertEqual([root, agent, pf], [r['uuid'] for r in rows])
        rc, rows = self.run_json('providers', 'list',
                                 '--resource-provider', pf)
        self.assertEqual([root, agent, pf], [r['uuid'] for r in rows])
        rc, rows = self.run_json('providers', 'list',
                                 '--resource-provider', again)
        self.assertEqual((0, []), (rc, rows))

    def test_archived_node(self):
        root, agent, pf = self.dead_tree()
        self.nova.archive('cell1')
        self.assertEqual([], self.nova.rows('cell1', 'compute_nodes',
                                            uuid=root))
        rc, rows = self.run_json('providers', 'list')
        self.assertEqual(3, rc, self.stderr)
        self.assertEqual([(root, 'deleted_compute_node')] * 1 +
                         [(agent, 'deleted_compute_node'),
                          (pf, 'deleted_compute_node')],
                         [(r['uuid'], r['reason']) for r in rows])
        self.assertIn('shadow_compute_nodes', rows[0]['details'])
        # Still nova's node: the stranger there is an orphan.
        rc, allocs = self.run_json('allocations', 'list', '--all')
        self.assertEqual({(root, 'unknown_consumer'),
                          (pf, 'unknown_consumer')},
                         {(r['resource_provider'], r['reason'])
                          for r in allocs if r['consumer'] == STRANGER})

    def test_unreadable_cell_is_unverifiable(self):
        # The deleted node's own cell: no readable row says what it was.
        root, agent, pf = self.dead_tree()
        self.nova.break_cell('cell1')
        rc, rows = self.run_json('providers', 'list', '--all')
        self.assertEqual(2, rc, self.stderr)
        self.assertEqual({'unverifiable'}, {r['reason'] for r in rows})
        self.assertEqual({'none'}, {r['action'] for r in rows})
        rc, rows = self.run_json('providers', 'clean',
                                 '--journal', self.journal)
        self.assertEqual((2, []), (rc, rows))
        self.assertEqual(4, len(self.placement.providers_state()[0]))

    def test_clean_and_restore(self):
        root, agent, pf = self.dead_tree()
        other = self.boot('live1', self.live)
        before = self.placement.providers_state()
        rc, rows = self.run_json('providers', 'clean', '--dry-run')
        self.assertEqual(3, rc, self.stderr)
        self.assertEqual(['skipped: dry run'] * 3,
                         [r['outcome'] for r in rows])
        self.assertEqual(before, self.placement.providers_state())

        rc, rows = self.run_json('providers', 'clean',
                                 '--journal', self.journal)
        self.assertEqual(4, rc, self.stderr)
        self.assertEqual([(root, 'done'), (agent, 'done'), (pf, 'done')],
                         [(r['uuid'], r['outcome']) for r in rows])
        providers, allocations = self.placement.providers_state()
        self.assertEqual({self.live: before[0][self.live]}, providers)
        self.assertEqual({other: before[1][other]}, allocations)
        # Bottom-up: each DELETE after its children's.
        self.assertEqual(
            ['/resource_providers/%s' % u for u in (pf, agent, root)],
            [r.path for r in self.proxy.requests('DELETE')])
        entries = journal_mod.load(self.journal).entries
        self.assertEqual(['delete_consumer', 'delete_provider',
                          'delete_provider', 'delete_provider'],
                         [e['action'] for e in entries])
        self.assertEqual({
            'uuid': pf, 'name': 'dead1:agent:eth0',
            'parent_provider_uuid': agent, 'root_provider_uuid': root,
            'inventories': PF_INVENTORY, 'traits': ['CUSTOM_PHYSNET_A'],
            'aggregates': [AGGREGATE]},
            {k: v for k, v in entries[1]['provider'].items()
             if k != 'generation'})

        # --dry-run: 0 when there is nothing to do, 3 when it would act.
        rc, rows = self.run_json('providers', 'clean', '--dry-run')
        self.assertEqual((0, []), (rc, rows), self.stderr)
        rc, rows = self.run_json('providers', 'restore', '--journal',
                                 self.journal, '--dry-run')
        self.assertEqual((3, {'skipped: dry run'}),
                         (rc, {r['outcome'] for r in rows}), self.stderr)

        rc, rows = self.run_json('allocations', 'restore',
                                 '--journal', self.journal)
        self.assertEqual(4, rc, self.stderr)
        self.assertEqual([(root, 'done'), (agent, 'done'), (pf, 'done'),
                          (STRANGER, 'done'), (STRANGER, 'done')],
                         [(r.get('uuid') or r.get('consumer'), r['outcome'])
                          for r in rows])
        self.assertEqual(before, self.placement.providers_state())
        # Again: everything is as before already, dry run or not.
        for argv in (('--dry-run',), ()):
            rc, rows = self.run_json('providers', 'restore',
                                     '--journal', self.journal, *argv)
            self.assertEqual(0, rc, self.stderr)

    def test_restore_refuses_provider_back(self):
        root, agent, pf = self.dead_tree()
        rc, rows = self.run_json('providers', 'clean',
                                 '--journal', self.journal)
        self.assertEqual(4, rc, self.stderr)
        # nova-compute came back: same name, new uuid.
        self.placement.create_provider('dead1')
        rc, rows = self.run_json('allocations', 'restore',
                                 '--journal', self.journal)
        self.assertEqual(1, rc, self.stderr)
        self.assertIn('refused: provider', rows[0]['outcome'])
        self.assertIn('is named dead1 now', rows[0]['outcome'])

    def test_live_consumer_keeps_tree(self):
        root, agent, pf = self.dead_tree()
        # A live instance of live1 still holds the dead node (mid-move).
        inst = self.boot('live1', self.live)
        self.nova.add_migration('cell1', inst, source_compute='dead1',
                                source_node='dead1', dest_compute='live1',
                                dest_node='live1', status='migrating')
        self.allocate(inst, {self.live: base.FLAVOR, root: base.FLAVOR})
        before = self.placement.providers_state()
        rc, rows = self.run_json('providers', 'clean',
                                 '--journal', self.journal)
        self.assertEqual(3, rc, self.stderr)
        for row in rows:
            self.assertEqual('skipped: allocations that are not orphans '
                             'remain (consumers %s)' % inst, row['outcome'])
        providers, allocations = self.placement.providers_state()
        self.assertEqual(before[0], providers)
        # Only the orphan went.
        self.assertNotIn(STRANGER, allocations)

    def test_conflict_mid_delete(self):
        root, agent, pf = self.dead_tree()
        intruder = '99999999-2222-3333-4444-555555555555'

        def allocate():
            self.allocate(intruder, {root: {'VCPU': 1}})
        # Something allocates on the root between its record's read and
        # its DELETE: placement answers 409, the tree is judged again
        # and kept.
        self.proxy.inject('DELETE', '/resource_providers/%s$' % root,
                          before=allocate)
        rc, rows = self.run_json('providers', 'clean',
                                 '--journal', self.journal)
        # The root's tree is still there: an orphan left, never 4.
        self.assertEqual(3, rc, self.stderr)
        self.assertEqual(
            [(root, 'skipped: allocations that are not orphans remain '
                    '(consumers %s)' % intruder),
             (agent, 'done'), (pf, 'done')],
            [(r['uuid'], r['outcome']) for r in rows])
        self.assertIn(root, self.placement.providers_state()[0])
        contents = journal_mod.load(self.journal)
        refused = [e for e in contents.entries
                   if e.get('applied') is False]
        self.assertEqual([root], [e['provider']['uuid'] for e in refused])
        # Restore puts back the children and the orphan; the root is
        # there already, unchanged but for the intruder's allocation.
        rc, rows = self.run_json('allocations', 'restore',
                                 '--journal', self.journal)
        self.assertEqual(4, rc, self.stderr)

    def test_node_back_during_clean_keeps_tree(self):
        root, agent, pf = self.dead_tree()

        def come_back():
            # nova-compute restarts and undeletes its node, same uuid.
            self.nova.execute('cell1', 'UPDATE compute_nodes SET deleted = '
                              "0 WHERE uuid = '%s'" % root)
        self.proxy.inject('PUT', '/allocations/%s$' % STRANGER,
                          before=come_back)
        rc, rows = self.run_json('providers', 'clean',
                                 '--journal', self.journal)
        self.assertEqual(3, rc, self.stderr)
        self.assertEqual(
            ['skipped: now live_compute_node: The tree\'s root is compute '
             'node %s (dead1 on host dead1).' % root] * 3,
            [r['outcome'] for r in rows])
        self.assertEqual([], self.proxy.requests('DELETE'))
        self.assertEqual(4, len(self.placement.providers_state()[0]))

    def test_max_count_counts_trees(self):
        first = self.dead_tree('dead1')[0]
        second = self.add_node('dead2')
        self.nova.execute('cell1', 'UPDATE compute_nodes SET deleted = id '
                          "WHERE uuid = '%s'" % second)
        rc, rows = self.run_json('providers', 'clean', '--max-count', '1',
                                 '--journal', self.journal)
        # A tree is left for the next run: never 4, "all repaired".
        self.assertEqual(3, rc, self.stderr)
        self.assertEqual(
            {first: 'done', second: 'skipped: --max-count reached'},
            {r['uuid']: r['outcome'] for r in rows
             if r['uuid'] == r['root_provider']})
        self.assertIn(second, self.placement.providers_state()[0])
        rc, _out, err = self.manage('providers', 'clean', '--max-count', '0')
        self.assertEqual(
            (127, 'ERROR: Invalid input: --max-count must be at least 1\n'),
            (rc, err))

    def test_restore_refuses_same_uuid_back(self):
        root, agent, pf = self.dead_tree()
        rc, rows = self.run_json('providers', 'clean',
                                 '--journal', self.journal)
        self.assertEqual(4, rc, self.stderr)
        self.placement.create_provider('dead1-again', uuid=root)
        rc, rows = self.run_json('allocations', 'restore',
                                 '--journal', self.journal)
        self.assertEqual(1, rc, self.stderr)
        # Nothing is hung under, or allocated on, someone else's
        # provider.
        self.assertEqual([
            (root, 'failed: refused: provider %s exists again' % root),
            (agent, 'failed: refused: parent %s not put back' % root),
            (pf, 'failed: refused: parent %s not put back' % agent),
            # Too long for a row: said once on stderr.
            (STRANGER, 'failed: error 1'), (STRANGER, 'failed: error 1')],
            [(r.get('uuid') or r.get('consumer'), r['outcome'])
             for r in rows])
        self.assertIn('Error 1 (2 row(s)): refused: provider(s) %s, %s not '
                      'put back\n' % tuple(sorted([root, pf])), self.stderr)
        providers, allocations = self.placement.providers_state()
        self.assertEqual('dead1-again', providers[root]['name'])
        self.assertEqual({self.live, root}, set(providers))
        self.assertEqual({}, allocations)

    def test_bad_input(self):
        rc, out, err = self.manage('providers', 'list',
                                   '--resource-provider', 'nope')
        self.assertEqual((127, ''), (rc, out))
        self.assertEqual('ERROR: Invalid input: Resource provider nope is '
                         'not a valid UUID\n', err)
        rc, out, err = self.manage(
            'providers', 'list', '--resource-provider', STRANGER)
        self.assertEqual(127, rc)
        self.assertEqual('ERROR: Invalid input: resource provider %s does '
                         'not exist\n' % STRANGER, err)


class OtherCellDownTestCase(_ProvidersBase):
    """dead1 is deleted in cell1; cell2, with a node of its own, cannot
    be read.
    """

    CELLS = ('cell1', 'cell2')

    def test_deleted_in_a_readable_cell(self):
        root, agent, pf = self.dead_tree()
        host2 = self.add_node('host2', cell='cell2')
        self.nova.break_cell('cell2')
        before = self.placement.providers_state()
        rc, rows = self.run_json('providers', 'list', '--all')
        self.assertEqual(5, rc, self.stderr)
        self.assertIn('WARNING: cell cell2 could not be read', self.stderr)
        details = {r['uuid']: r['details'] for r in rows}
        # Still nova's deleted node; the stranger on it may be cell2's, so
        # it is not an orphan, and it keeps the tree.
        dead = 'deleted_compute_node', 'delete_provider'
        self.assertProviderRows([
            self.provider_row(host2, 'host2', host2, None, None,
                              'unverifiable', 'none', compute_node=None,
                              cell=None),
            self.provider_row(root, 'dead1', root, None, 'dead1', *dead,
                              allocations=1),
            self.provider_row(agent, 'dead1:agent', root, root, 'dead1',
                              *dead),
            self.provider_row(pf, 'dead1:agent:eth0', root, agent, 'dead1',
                              *dead, allocations=1),
            self.provider_row(self.live, 'live1', self.live, None, 'live1',
                              'live_compute_node', 'none'),
        ], rows)
        self.assertIn('no readable cell has it live. Cell(s) cell2 could '
                      'not be read', details[root])
        self.assertIn('Allocations of %s on the tree are not orphans' %
                      STRANGER, details[root])
        rc, allocs = self.run_json('allocations', 'list', '--all')
        self.assertEqual({(root, 'unverifiable'), (pf, 'unverifiable')},
                         {(r['resource_provider'], r['reason'])
                          for r in allocs if r['consumer'] == STRANGER})

        rc, rows = self.run_json('providers', 'clean',
                                 '--journal', self.journal)
        self.assertEqual(5, rc, self.stderr)
        self.assertEqual(
            [(u, 'skipped: allocations that are not orphans remain '
                 '(consumers %s)' % STRANGER) for u in (root, agent, pf)],
            [(r['uuid'], r['outcome']) for r in rows])
        self.assertEqual(before, self.placement.providers_state())
        self.assertEqual([], self.proxy.requests('DELETE'))


MariaDBProvidersTestCase = base.on_mariadb(ProvidersTestCase,
                                           'test_clean_and_restore')
