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
"""openstack resource provider orphan list|clean, on fakes of the APIs.

What these check is the compute API's proof of a deleted node (see
readers/provider_proof.py); the deletions themselves are tested on the
real placement (tests/functional/test_providers.py).
"""

import configparser
import os

from cliff import commandmanager

from nova_orphans.engine import model
from nova_orphans import exit_codes
from nova_orphans.osc.v1 import orphan
from nova_orphans.osc.v1 import provider_orphan
from nova_orphans.tests.unit import fakes
from nova_orphans.tests.unit.osc import test_commands as base

DEAD = 'd0d0d0d0-d0d0-40d0-80d0-d0d0d0d0d0d0'
AGENT = 'a0a0a0a0-a0a0-40a0-80a0-a0a0a0a0a0a0'
FPGA = 'f0f0f0f0-f0f0-40f0-80f0-f0f0f0f0f0f0'


class TraitPlacement(base.FailingPlacement):
    """Placement whose COMPUTE_NODE providers are ``trait_roots``."""

    trait_roots = ()

    def handle(self, method, path, params, body):
        if path == '/resource_providers' and (
                params.get('required') == 'COMPUTE_NODE'):
            return fakes.Response(200, {'resource_providers': [
                self.providers[u] for u in self.trait_roots]})
        parts = path.strip('/').split('/')
        if parts[0] == 'resource_providers' and parts[2:] == ['traits']:
            if parts[1] not in self.providers:
                return fakes.Response(404, {'errors': [{
                    'detail': 'No resource provider with uuid %s found' %
                    parts[1]}]})
            return fakes.Response(200, {
                'traits': (['COMPUTE_NODE'] if parts[1] in self.trait_roots
                           else []) + sorted(self.traits.get(parts[1], ())),
                'resource_provider_generation': 1})
        return super().handle(method, path, params, body)


class _TraitTestCase(base.CommandTestCase):
    """host1 and host2 are live; DEAD (with nova's trait) is not listed;
    the stranger holds it too.
    """

    def setUp(self):
        super().setUp()
        placement = TraitPlacement()
        placement.providers = self.placement.providers
        placement.consumers = self.placement.consumers
        self.placement = placement
        self.app.client_manager.nova_orphans.placement._adapter = placement
        placement.provider(DEAD, 'host3')
        placement.provider(AGENT, 'neutron-agent')
        placement.trait_roots = (base.RP1, base.RP2, DEAD)
        placement.allocate(base.STRANGER, DEAD)


class ProviderCommandTestCase(_TraitTestCase):

    def rows(self, *argv):
        return {r['uuid']: (r['reason'], r['action'], r['compute_node'])
                for r in self.json_rows(provider_orphan.ListProviderOrphan,
                                        '--all', *argv)}

    def test_json_columns_are_the_provider_keys(self):
        rows = self.json_rows(provider_orphan.ListProviderOrphan)
        self.assertEqual([list(model.PROVIDER_KEYS)],
                         [list(row) for row in rows])
        self.assertEqual(
            (DEAD, 'host3', None, None, 'deleted_compute_node',
             'delete_provider', 1, 1),
            tuple(rows[0][k] for k in (
                'uuid', 'name', 'host', 'cell', 'reason', 'action',
                'allocations', 'orphan_allocations')))
        self.assertIn('COMPUTE_NODE', rows[0]['details'])

    def test_proof_needs_the_trait(self):
        self.placement.trait_roots = (base.RP1, base.RP2)
        self.assertEqual({
            base.RP1: ('live_compute_node', 'none', base.RP1),
            base.RP2: ('live_compute_node', 'none', base.RP2),
            DEAD: ('unmanaged', 'none', None),
            AGENT: ('unmanaged', 'none', None),
        }, self.rows())

    def test_with_the_trait(self):
        self.assertEqual({
            base.RP1: ('live_compute_node', 'none', base.RP1),
            base.RP2: ('live_compute_node', 'none', base.RP2),
            DEAD: ('deleted_compute_node', 'delete_provider', DEAD),
            AGENT: ('unmanaged', 'none', None),
        }, self.rows())

    def test_owner_nova_alone_proves_and_is_named(self):
        # nova 34's mark; nova 27 to 33 put only COMPUTE_NODE there.
        self.placement.trait_roots = (base.RP1, base.RP2)
        self.placement.traits[DEAD] = {'OWNER_NOVA'}
        row, = self.json_rows(provider_orphan.ListProviderOrphan)
        self.assertEqual(
            (DEAD, 'deleted_compute_node', 'delete_provider',
             'The tree\'s root %s carries OWNER_NOVA, nova\'s mark on its '
             'compute nodes, and the compute API, every cell answering, '
             'lists no hypervisor with its uuid: nova deleted that compute '
             'node.' % DEAD),
            (row['uuid'], row['reason'], row['action'], row['details']))
        self.placement.trait_roots = (base.RP1, base.RP2, DEAD)
        row, = self.json_rows(provider_orphan.ListProviderOrphan)
        self.assertIn('carries OWNER_NOVA and COMPUTE_NODE, nova\'s mark',
                      row['details'])

    def test_other_services_provider_keeps_the_tree(self):
        self.placement.providers[FPGA] = {
            'uuid': FPGA, 'name': 'host3_fpga', 'root_provider_uuid': DEAD,
            'parent_provider_uuid': DEAD, 'generation': 1}
        self.placement.traits[FPGA] = {'OWNER_CYBORG'}
        self.assertEqual({
            base.RP1: ('live_compute_node', 'none', base.RP1),
            base.RP2: ('live_compute_node', 'none', base.RP2),
            DEAD: ('deleted_compute_node', 'delete_provider', DEAD),
            FPGA: ('unmanaged', 'none', DEAD),
            AGENT: ('unmanaged', 'none', None),
        }, self.rows())
        journal = os.path.join(self.tmp, 'j')
        rows = self.json_rows(provider_orphan.CleanProviderOrphan,
                              '--journal', journal)
        self.assertEqual(
            [(DEAD, 'skipped: provider(s) %s on the tree are another '
              'service\'s' % FPGA)],
            [(r['uuid'], r['outcome']) for r in rows])
        self.assertEqual([], self.placement.urls('DELETE'))

    def test_unlisted_compute_service_withholds_the_proof(self):
        # A host not mapped to a cell yet: os-hypervisors leaves its node
        # out, os-services shows its service.
        self.compute.services.append(fakes.service_doc('host3'))
        self.assertEqual(('unverifiable', 'none', None),
                         self.rows()[DEAD])

    def test_down_cell_proves_nothing(self):
        self.compute.services.append(fakes.service_doc(
            'host9', status='UNKNOWN'))
        self.run_cmd(provider_orphan.ListProviderOrphan, '--all', '-f',
                     'json')
        self.assertEqual(2, self.code)
        self.assertIn('WARNING: cell (down) could not be read',
                      self.app.stderr.getvalue())
        rows = self.app.stdout.getvalue()
        self.assertNotIn('deleted_compute_node', rows)

    def test_clean_dry_run(self):
        rows = self.json_rows(provider_orphan.CleanProviderOrphan,
                              '--dry-run')
        self.assertEqual([(DEAD, 'skipped: dry run')],
                         [(r['uuid'], r['outcome']) for r in rows])
        self.assertEqual([], self.placement.urls('DELETE'))
        self.assertEqual(exit_codes.ORPHANS_FOUND, self.code)


class AllocationsOnDeletedTreeTestCase(_TraitTestCase):
    """openstack allocation orphan list: the same proof, for the roots
    that consumers no live server owns hold, and no others.
    """

    def verdicts(self, *argv):
        return {(r['consumer'], r['resource_provider']):
                (r['reason'], r['action'], r['host'])
                for r in self.json_rows(orphan.ListOrphan, '--all', *argv)}

    def trait_reads(self):
        return [u for u in self.placement.urls()
                if u.endswith('/traits') or 'required=COMPUTE_NODE' in u]

    def test_stranger_on_a_deleted_node_is_unknown_consumer(self):
        self.placement.allocate(base.STRANGER, AGENT)
        self.assertEqual({
            (base.LIVE, base.RP1): ('active_instance', 'none', 'host1'),
            (base.GONE, base.RP2): ('deleted_instance', 'delete_consumer',
                                    'host2'),
            (base.STRANGER, base.RP2): ('unknown_consumer',
                                        'delete_consumer', 'host2'),
            # nova's deleted node: no host known.
            (base.STRANGER, DEAD): ('unknown_consumer', 'delete_consumer',
                                    None),
            # Never nova's: maybe the other service's own consumer.
            (base.STRANGER, AGENT): ('unmanaged_provider', 'none', None),
        }, self.verdicts())
        # One read per root off the live hypervisors' trees, no listing.
        self.assertEqual(sorted('/resource_providers/%s/traits' % u
                                for u in (AGENT, DEAD)),
                         sorted(self.trait_reads()))

    def test_clean_repairs_it(self):
        rows = self.json_rows(orphan.CleanOrphan)
        self.assertEqual(
            {(base.GONE, base.RP2, 'done'), (base.STRANGER, base.RP2, 'done'),
             (base.STRANGER, DEAD, 'done')},
            {(r['consumer'], r['resource_provider'], r['outcome'])
             for r in rows})
        self.assertEqual({}, self.placement.consumers[base.STRANGER][
            'allocations'])

    def test_owner_nova_alone_proves_it(self):
        # nova 34's mark, read with the root's traits: the same proof.
        self.placement.trait_roots = (base.RP1, base.RP2)
        self.placement.traits[DEAD] = {'OWNER_NOVA'}
        self.assertEqual(('unknown_consumer', 'delete_consumer', None),
                         self.verdicts()[(base.STRANGER, DEAD)])

    def test_without_the_trait(self):
        self.placement.trait_roots = (base.RP1, base.RP2)
        self.assertEqual(('unmanaged_provider', 'none', None),
                         self.verdicts()[(base.STRANGER, DEAD)])

    def test_provider_gone_meanwhile(self):
        handle = self.placement.handle

        def gone(method, path, params, body):
            if path == '/resource_providers/%s/traits' % DEAD:
                return fakes.Response(404, {'errors': [{'detail': 'gone'}]})
            return handle(method, path, params, body)

        self.placement.handle = gone
        self.assertEqual(('unmanaged_provider', 'none', None),
                         self.verdicts()[(base.STRANGER, DEAD)])

    def test_unlisted_compute_service_withholds_the_proof(self):
        self.compute.services.append(fakes.service_doc('host3'))
        self.assertEqual(('unmanaged_provider', 'none', None),
                         self.verdicts()[(base.STRANGER, DEAD)])

    def test_nothing_read_without_such_a_consumer(self):
        # A live server's allocation off the hypervisors' trees asks
        # nothing; nor does a cloud whose strangers are on live nodes.
        self.placement.consumers[base.STRANGER]['allocations'].pop(DEAD)
        self.placement.allocate(base.LIVE, AGENT)
        self.verdicts()
        self.assertEqual([], self.trait_reads())

    def test_down_cell_reads_nothing(self):
        self.compute.services.append(fakes.service_doc(
            'host9', status='UNKNOWN'))
        self.verdicts()
        self.assertEqual(5, self.code)
        self.assertEqual([], self.trait_reads())


class CoexistenceTestCase(base.base.BaseTestCase):
    """Beside osc-placement's "resource provider ..." commands."""

    def test_setup_cfg_entry_points(self):
        cfg = configparser.ConfigParser()
        cfg.read(os.path.join(os.path.dirname(__file__), '..', '..', '..',
                              '..', 'setup.cfg'))
        points = dict(
            line.split(' = ') for line in
            cfg['entry_points']['openstack.nova_orphans.v1'].split('\n')
            if line)
        self.assertEqual(
            'nova_orphans.osc.v1.provider_orphan:ListProviderOrphan',
            points['resource_provider_orphan_list'])
        self.assertEqual(
            'nova_orphans.osc.v1.provider_orphan:CleanProviderOrphan',
            points['resource_provider_orphan_clean'])

    def test_commands_resolve_beside_osc_placement(self):
        manager = commandmanager.CommandManager('openstack.cli')
        manager.add_command_group('openstack.placement.v1')
        self.assertIn('resource provider list', manager.commands)
        manager.add_command('resource provider orphan list',
                            provider_orphan.ListProviderOrphan)
        manager.add_command('resource provider orphan clean',
                            provider_orphan.CleanProviderOrphan)
        found = {}
        for argv in (['resource', 'provider', 'orphan', 'list', '--all'],
                     ['resource', 'provider', 'orphan', 'clean'],
                     ['resource', 'provider', 'list'],
                     ['resource', 'provider', 'show', 'x']):
            cls, name, rest = manager.find_command(argv)
            found[name] = (cls.__module__.split('.')[0], rest)
        self.assertEqual({
            'resource provider orphan list': ('nova_orphans', ['--all']),
            'resource provider orphan clean': ('nova_orphans', []),
            'resource provider list': ('osc_placement', []),
            'resource provider show': ('osc_placement', ['x']),
        }, found)
