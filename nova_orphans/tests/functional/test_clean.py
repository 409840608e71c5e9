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
"""``allocations clean``: every action, exit code and safety property.

The tool talks to the real placement through a fault-injecting proxy
(fixtures/faults.py), so each test can also see exactly which requests
were written, and can make placement fail, drop connections, stall or
meet a concurrent writer at the worst moment. Placement's whole state
is compared with ``dump_state`` after each run.
"""

import collections
import json
import os
import re
import stat
import uuid as uuidlib

import fixtures

from nova_orphans import db_utils
from nova_orphans import exit_codes
from nova_orphans.repair import journal as journal_mod
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import faults

FLAVOR = base.FLAVOR
BIGGER = {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 1}
BW = {'NET_BW_EGR_KILOBIT_PER_SEC': 1000}
OTHER_PROJECT = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'
OTHER_USER = 'f0e1d2c3b4a5968778695a4b3c2d1e0f'
WRITES = ('PUT', 'POST', 'DELETE', 'PATCH')
NESTED = ('skipped: nested resources: use nova-manage placement '
          'heal_allocations')


def held(allocations, generation=1, consumer_type='unknown',
         project_id=base.PROJECT, user_id=base.USER):
    """One consumer as ``dump_state`` shows it."""
    return {'project_id': project_id, 'user_id': user_id,
            'consumer_type': consumer_type,
            'consumer_generation': generation,
            'allocations': {rp: dict(res) for rp, res in allocations.items()}}


class RepairTestCase(base.FunctionalTestCase):
    """Two compute nodes; the tool reaches placement through the proxy."""

    def setUp(self):
        super().setUp()
        self.proxy = self.useFixture(
            faults.FaultProxy(self.placement.endpoint))
        self.conf_file = self.proxied_conf(timeout=10)
        self.journal = os.path.join(self.tmp, 'journal.jsonl')
        self.host1 = self.add_node('host1')
        self.host2 = self.add_node('host2')

    def proxied_conf(self, timeout, name='proxied.conf', **sections):
        """nova.conf reaching placement through the proxy; ``sections``:
        more groups, {option: value} each.
        """
        return self.nova.write_nova_conf(
            os.path.join(self.tmp, name), self.proxy.endpoint, extra=dict({
                'nova_orphans': {'state_path': self.state_path,
                                 'cell_timeout': '20'},
                'placement': {'timeout': str(timeout)}}, **sections))

    # Running the tool ---------------------------------------------------

    def _run(self, action, argv, conf_file):
        return self.run_json('allocations', action, *argv,
                             conf_file=conf_file,
                             codes=(0, 1, 2, 3, 4, 5, 11))

    def clean(self, *argv, conf_file=None):
        """(rc, JSON rows) of ``clean``, journaling to self.journal."""
        return self._run('clean', ('--journal', self.journal) + argv,
                         conf_file)

    def restore(self, *argv):
        """(rc, JSON rows) of ``restore`` from self.journal."""
        return self._run('restore', ('--journal', self.journal) + argv,
                         None)

    def writes(self):
        """Every write the tool sent to placement, in order."""
        return [(r.method, r.path) for r in self.proxy.requests()
                if r.method in WRITES]

    def done(self, row, outcome='done'):
        """An expected row of clean or restore with its outcome, by default
        done.
        """
        return dict(row, outcome=outcome)

    def entries(self, path=None):
        return journal_mod.load(path or self.journal).entries

    # Building state -----------------------------------------------------

    def gone(self, host, rp, cell='cell1'):
        """An ERROR instance forced to deleted in SQL (seed 003)."""
        vm = self.boot(host, rp, cell=cell, vm_state='error')
        self.nova.force_delete_instance(cell, vm)
        return vm

    def stranger(self, rp, resources=FLAVOR):
        consumer = str(uuidlib.uuid4())
        self.allocate(consumer, rp, resources=resources)
        return consumer

    def evacuated(self):
        """Seed 000: evacuated host1 -> host2, host1 has a bandwidth child.

        Returns (instance, child provider).
        """
        bw = self.add_child(self.host1, 'host1:eth0',
                            {'NET_BW_EGR_KILOBIT_PER_SEC': 10000})
        vm = self.nova.add_instance('cell1', host='host2', node='host2')
        self.allocate(vm, {self.host1: FLAVOR, bw: BW, self.host2: FLAVOR})
        self.nova.add_migration('cell1', vm, migration_type='evacuation',
                                status='done', source_compute='host1',
                                source_node='host1', dest_compute='host2',
                                dest_node='host2')
        return vm, bw

    def evacuated_rows(self, vm, bw, outcome='done'):
        return [
            self.done(self.row(vm, self.host1, 'evacuated_source',
                               'remove_provider', host='host1'), outcome),
            self.done(self.row(vm, bw, 'evacuated_source', 'remove_provider',
                               host='host1', name='host1:eth0',
                               root=self.host1, resources=BW), outcome)]

    def failed_migration(self, consumer_type=None):
        """A cold migration that failed: the instance is back on host1 and
        its allocation is still held by the migration consumer.
        """
        vm = self.nova.add_instance('cell1', host='host1', node='host1')
        mig = self.nova.add_migration(
            'cell1', vm, migration_type='migration', status='error',
            source_compute='host1', source_node='host1',
            dest_compute='host2', dest_node='host2')
        self.allocate(mig, self.host1, consumer_type=consumer_type)
        return vm, mig

    def set_instance(self, vm, cell='cell1', **values):
        instances = self.nova.table(cell, 'instances')
        self.nova.execute(cell, instances.update().where(
            instances.c.uuid == vm).values(**values))


class ActionsTestCase(RepairTestCase):
    """Each action end to end, with the exact requests it writes."""

    def test_delete_consumer_of_instance_forced_to_deleted(self):
        """Seed 003: an empty-allocations PUT with the consumer generation,
        never a blind DELETE; the live neighbour is untouched.
        """
        vm = self.gone('host1', self.host1)
        live = self.boot('host1', self.host1)
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        self.assertRows([self.done(self.row(
            vm, self.host1, 'deleted_instance', 'delete_consumer',
            host='host1'))], rows)
        self.assertEqual({live: held({self.host1: FLAVOR})},
                         self.placement.dump_state())
        self.assertEqual([('PUT', '/allocations/' + vm)], self.writes())
        put, = self.proxy.requests('PUT')
        self.assertEqual({'allocations': {}, 'consumer_generation': 1,
                          'project_id': base.PROJECT, 'user_id': base.USER},
                         put.body)
        # Untyped (nova 34): written below 1.38, so no "unknown" type.
        self.assertEqual('placement 1.37', put.version)
        # Done is done: a second run has nothing to do.
        self.assertEqual((0, []), self.clean())

    def test_delete_consumer_of_archived_instance_keeps_its_type(self):
        """An archived instance's typed consumer is emptied at 1.38 with
        its own type: the type placement knows is never lost or faked.
        """
        vm = self.nova.add_instance('cell1', host='host1', node='host1')
        self.allocate(vm, self.host1, consumer_type='INSTANCE')
        self.nova.force_delete_instance('cell1', vm)
        self.nova.archive('cell1')
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        self.assertIn('archived', rows[0]['details'])
        self.assertRows([self.done(self.row(
            vm, self.host1, 'deleted_instance', 'delete_consumer',
            host='host1'))], rows)
        self.assertEqual({}, self.placement.dump_state())
        put, = self.proxy.requests('PUT')
        self.assertEqual(('placement 1.38', 'INSTANCE', {}, 1),
                         (put.version, put.body['consumer_type'],
                          put.body['allocations'],
                          put.body['consumer_generation']))

    def test_delete_consumer_of_unknown_consumer_and_finished_migration(self):
        stranger = self.stranger(self.host2)
        vm = self.nova.add_instance('cell1', host='host2', node='host2')
        mig = self.nova.add_migration(
            'cell1', vm, migration_type='resize', status='confirmed',
            source_compute='host1', source_node='host1',
            dest_compute='host2', dest_node='host2')
        self.allocate(mig, self.host1, consumer_type='MIGRATION')
        self.allocate(vm, self.host2)
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        self.assertRows([
            self.done(self.row(stranger, self.host2, 'unknown_consumer',
                               'delete_consumer', host='host2',
                               consumer_type='unknown', instance=None)),
            self.done(self.row(mig, self.host1, 'finished_migration',
                               'delete_consumer', host='host1',
                               consumer_type='migration', instance=vm)),
        ], rows)
        self.assertEqual({vm: held({self.host2: FLAVOR})},
                         self.placement.dump_state())
        self.assertEqual(sorted([('PUT', '/allocations/' + stranger),
                                 ('PUT', '/allocations/' + mig)]),
                         sorted(self.writes()))

    def test_remove_provider_of_evacuated_source_with_child(self):
        """Seed 000: the whole source tree (root and bandwidth child) goes,
        the live destination allocation stays, written with the
        generation just read.
        """
        vm, bw = self.evacuated()
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        self.assertRows(self.evacuated_rows(vm, bw), rows)
        self.assertEqual({vm: held({self.host2: FLAVOR}, generation=2)},
                         self.placement.dump_state())
        put, = self.proxy.requests('PUT')
        self.assertEqual(('/allocations/' + vm, 'placement 1.37', {
            'allocations': {self.host2: {'resources': FLAVOR}},
            'consumer_generation': 1, 'project_id': base.PROJECT,
            'user_id': base.USER}), (put.path, put.version, put.body))
        self.assertEqual((0, []), self.clean())

    def test_remove_provider_stale_target_keeps_consumer_type(self):
        """Seed 001: a failed cold migration left the target allocation.
        A typed consumer is written back with its type.
        """
        vm = self.nova.add_instance('cell1', host='host1', node='host1',
                                    vm_state='stopped')
        self.allocate(vm, self.host1, self.host2, consumer_type='INSTANCE')
        self.nova.add_migration('cell1', vm, migration_type='migration',
                                status='error', source_compute='host1',
                                source_node='host1', dest_compute='host2',
                                dest_node='host2')
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        self.assertRows([self.done(self.row(
            vm, self.host2, 'stale_provider', 'remove_provider',
            host='host2'))], rows)
        self.assertEqual(
            {vm: held({self.host1: FLAVOR}, generation=2,
                      consumer_type='INSTANCE')},
            self.placement.dump_state())
        put, = self.proxy.requests('PUT')
        self.assertEqual(('placement 1.38', 'INSTANCE'),
                         (put.version, put.body['consumer_type']))

    def test_return_to_instance_in_one_post(self):
        """The migration's allocations move to the instance atomically:
        one POST /allocations, no PUT, no DELETE.
        """
        vm, mig = self.failed_migration()
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        self.assertRows([self.done(self.row(
            mig, self.host1, 'finished_migration', 'return_to_instance',
            host='host1', consumer_type='migration', instance=vm))], rows)
        self.assertEqual({vm: held({self.host1: FLAVOR})},
                         self.placement.dump_state())
        self.assertEqual([('POST', '/allocations')], self.writes())
        post, = self.proxy.requests('POST')
        self.assertEqual({mig: {'allocations': {}, 'consumer_generation': 1,
                                'project_id': base.PROJECT,
                                'user_id': base.USER},
                          vm: {'allocations': {
                              self.host1: {'resources': FLAVOR}},
                              'consumer_generation': None,
                              'project_id': base.PROJECT,
                              'user_id': base.USER}}, post.body)
        self.assertEqual((0, []), self.clean())

    def test_placement_older_than_consumer_types(self):
        """A placement that speaks only up to 1.36 (Wallaby) gets every
        write at 1.36, the newest it knows.
        """
        def wallaby(doc):
            for version in doc['versions']:
                version['max_version'] = '1.36'
            return doc
        self.proxy.inject('GET', '/', rewrite=wallaby)
        vm, bw = self.evacuated()
        gone, mig = self.failed_migration()
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        self.assertEqual({'done'}, {r['outcome'] for r in rows})
        self.assertEqual({vm: held({self.host2: FLAVOR}, generation=2),
                          gone: held({self.host1: FLAVOR})},
                         self.placement.dump_state())
        self.assertEqual({'placement 1.36'},
                         {r.version for r in self.proxy.requests()
                          if r.method in WRITES})

    def test_reason_filter_limits_what_is_repaired(self):
        vm = self.gone('host1', self.host1)
        stranger = self.stranger(self.host2)
        rc, rows = self.clean('--reason', 'unknown_consumer')
        self.assertEqual(4, rc)
        self.assertEqual([(stranger, 'done')],
                         [(r['consumer'], r['outcome']) for r in rows])
        self.assertEqual([vm], list(self.placement.dump_state()))

    def test_project_and_user_filters_limit_what_is_repaired(self):
        mine = self.gone('host1', self.host1)
        theirs = str(uuidlib.uuid4())
        self.allocate(theirs, self.host1, self.host2,
                      project_id=OTHER_PROJECT, user_id=OTHER_USER)
        self.assertEqual((0, []), self.clean('--user', OTHER_PROJECT))
        self.assertEqual([], self.writes())
        self.assertFalse(os.path.exists(self.journal))
        rc, rows = self.clean('--project', OTHER_PROJECT, '--user',
                              OTHER_USER)
        self.assertEqual(4, rc, self.stderr)
        self.assertRows([self.done(self.row(
            theirs, rp, 'unknown_consumer', 'delete_consumer', host=host,
            consumer_type='unknown', instance=None, project_id=OTHER_PROJECT,
            user_id=OTHER_USER)) for rp, host in ((self.host1, 'host1'),
                                                  (self.host2, 'host2'))],
            rows)
        self.assertEqual([[theirs]], [list(e['consumers'])
                                      for e in self.entries()])
        self.assertEqual([mine], list(self.placement.dump_state()))

    def test_shelved_offloaded(self):
        vm = self.nova.add_instance('cell1', vm_state='shelved_offloaded')
        self.allocate(vm, self.host1)
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        self.assertRows([self.done(self.row(
            vm, self.host1, 'shelved_offloaded', 'delete_consumer',
            host='host1'))], rows)
        self.assertEqual({}, self.placement.dump_state())

    def test_nothing_to_do_is_0_and_writes_no_journal(self):
        self.boot('host1', self.host1)
        # A dry run with nothing to do says so as a clean does.
        self.assertEqual((0, []), self.clean('--dry-run'))
        self.assertEqual((0, []), self.clean())
        self.assertEqual([], self.writes())
        self.assertFalse(os.path.exists(self.journal))

    def test_table_output_has_outcome(self):
        vm = self.gone('host1', self.host1)
        rc, out, err = self.manage('allocations', 'clean', '--journal',
                                   self.journal)
        self.assertEqual(4, rc, err)
        self.assertIn('Outcome', out.splitlines()[1])
        line, = [line for line in out.splitlines() if vm in line]
        self.assertIn('delete_consumer', line)
        self.assertTrue(line.rstrip(' |').endswith('done'), line)


class HealTestCase(RepairTestCase):
    """``--heal`` creates allocations from the flavor; nested needs are
    left to nova-manage placement heal_allocations.
    """

    FLAVOR = {'vcpus': 2, 'memory_mb': 1024, 'root_gb': 10,
              'ephemeral_gb': 2, 'swap': 1024}

    def instance(self, **flavor):
        vm = self.nova.add_instance('cell1', host='host2', node='host2',
                                    flavor=dict(self.FLAVOR, **flavor))
        self.set_instance(vm, image_ref=str(uuidlib.uuid4()))
        return vm

    def heal_row(self, vm, outcome, resources=None):
        """A heal's row: what it wrote, once done (else, as listed, the
        nothing the instance holds).
        """
        return self.done(self.row(vm, self.host2, 'missing_allocations',
                                  'heal', host='host2',
                                  resources=resources or {}), outcome)

    def test_heal_from_flavor_including_boot_from_volume(self):
        image = self.instance()
        bfv = self.instance()
        bdms = self.nova.table('cell1', 'block_device_mapping')
        self.nova.execute('cell1', bdms.insert().values(
            instance_uuid=bfv, boot_index=0, source_type='volume',
            destination_type='volume', volume_id=str(uuidlib.uuid4()),
            uuid=str(uuidlib.uuid4()), deleted=0))
        host3 = self.add_node('host3', inventory={
            'PCPU': 8, 'MEMORY_MB': 8192, 'DISK_GB': 100,
            'CUSTOM_GOLD': 1})
        pinned = self.nova.add_instance(
            'cell1', host='host3', node='host3', flavor=dict(
                self.FLAVOR, extra_specs={'hw:cpu_policy': 'dedicated',
                                          'resources:CUSTOM_GOLD': '1'}))
        self.set_instance(pinned, image_ref=str(uuidlib.uuid4()))
        rc, rows = self.clean('--heal')
        self.assertEqual(4, rc)
        # DISK_GB: root 10 + ephemeral 2 + 1 GiB swap; no root when the
        # root disk is a volume.
        healed = {image: {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 13},
                  bfv: {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 3},
                  pinned: {'PCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 13,
                           'CUSTOM_GOLD': 1}}
        # Each row what its write wrote.
        self.assertRows([self.heal_row(image, 'done', healed[image]),
                         self.heal_row(bfv, 'done', healed[bfv]),
                         self.done(self.row(
                             pinned, host3, 'missing_allocations', 'heal',
                             host='host3', resources=healed[pinned]))], rows)
        self.assertEqual({
            image: held({self.host2: healed[image]}),
            bfv: held({self.host2: healed[bfv]}),
            pinned: held({host3: healed[pinned]}),
        }, self.placement.dump_state())
        put = self.proxy.requests('PUT', '/allocations/' + image)[0]
        self.assertIsNone(put.body['consumer_generation'])
        self.assertEqual((0, []), self.clean('--heal'))

    def test_without_heal_it_is_skipped(self):
        vm = self.instance()
        rc, rows = self.clean()
        self.assertEqual(3, rc)
        self.assertRows([self.heal_row(vm, 'skipped: healing needs --heal')],
                        rows)
        self.assertEqual({}, self.placement.dump_state())
        self.assertEqual([], self.writes())

    def test_heal_never_overwrites_allocations_written_meanwhile(self):
        """nova heals the instance itself between the tool's read and its
        write: the tool's create-only PUT (generation null) gets a 409,
        the re-evaluation finds the instance healthy, nova's allocation
        stays.
        """
        vm = self.instance()
        self.proxy.inject('PUT', '/allocations/' + vm,
                          before=lambda: self.allocate(vm, self.host2))
        rc, rows = self.clean('--heal')
        # Now healed by someone else: nothing left, nothing done here.
        self.assertEqual(0, rc)
        self.assertRows([self.heal_row(
            vm, 'skipped: no longer heal: now active_instance')], rows)
        self.assertEqual({vm: held({self.host2: FLAVOR})},
                         self.placement.dump_state())
        self.assertEqual([409], [p.result for p in
                                 self.proxy.requests('PUT')])

    def test_nested_needs_are_skipped(self):
        nested = [self.instance(extra_specs={spec: value}) for spec, value in (
            ('resources:VGPU', '1'), ('resources1:VGPU', '1'),
            ('accel:device_profile', 'fpga'),
            ('pci_passthrough:alias', 'a1:1'))]
        port = self.instance()
        caches = self.nova.table('cell1', 'instance_info_caches')
        self.nova.execute('cell1', caches.insert().values(
            instance_uuid=port, deleted=0, network_info=json.dumps([{
                'id': str(uuidlib.uuid4()),
                'profile': {'allocation': self.host2}}])))
        rc, rows = self.clean('--heal')
        self.assertEqual(3, rc)
        self.assertRows([self.heal_row(vm, NESTED)
                         for vm in nested + [port]], rows)
        self.assertEqual({}, self.placement.dump_state())
        self.assertEqual([], self.writes())


class SafetyTestCase(RepairTestCase):
    """Dry runs, bounds, and findings that stop holding before the write."""

    def test_dry_run_changes_nothing(self):
        vm = self.gone('host1', self.host1)
        evac, bw = self.evacuated()
        needy = self.nova.add_instance('cell1', host='host2', node='host2')
        before = self.placement.dump_state()
        rc, rows = self.clean('--dry-run', '--heal')
        self.assertEqual(3, rc)
        self.assertRows([
            self.done(self.row(vm, self.host1, 'deleted_instance',
                               'delete_consumer', host='host1'),
                      'skipped: dry run'),
            self.done(self.row(needy, self.host2, 'missing_allocations',
                               'heal', host='host2', resources={}),
                      'skipped: dry run')] +
            self.evacuated_rows(evac, bw, 'skipped: dry run'), rows)
        self.assertEqual(before, self.placement.dump_state())
        self.assertEqual([], self.writes())
        self.assertFalse(os.path.exists(self.journal))
        # No journal: only what the scan read, kept for the next.
        self.assertEqual(['kept-reads'], [
            name[:len('kept-reads')] for name in os.listdir(self.state_path)])

    def test_max_count_bounds_the_consumers_changed(self):
        """Two rows of one consumer are one change; the rest is left for
        the next run.
        """
        vm = self.gone('host1', self.host1)
        evac, bw = self.evacuated()
        later = self.gone('host2', self.host2)
        rc, rows = self.clean('--max-count', '2')
        # One orphan is left for the next run: never 4, "all repaired".
        self.assertEqual(3, rc)
        self.assertRows([
            self.done(self.row(vm, self.host1, 'deleted_instance',
                               'delete_consumer', host='host1')),
            self.done(self.row(later, self.host2, 'deleted_instance',
                               'delete_consumer', host='host2'),
                      'skipped: --max-count reached')] +
            self.evacuated_rows(evac, bw), rows)
        self.assertEqual(2, len(self.writes()))
        self.assertEqual({later: held({self.host2: FLAVOR}),
                          evac: held({self.host2: FLAVOR}, generation=2)},
                         self.placement.dump_state())
        rc, rows = self.clean('--max-count', '2')
        self.assertEqual((4, [later]), (rc, [r['consumer'] for r in rows]))
        self.assertEqual({evac: held({self.host2: FLAVOR}, generation=2)},
                         self.placement.dump_state())

    def test_finding_that_no_longer_holds_is_skipped(self):
        """nova changes between the audit and the write (the instance is
        unshelved onto host1): the allocation is live again and kept;
        the run goes on with the other consumers.

        The unshelve lands just before the repair reads the consumer from
        placement, so it also pins the order of the re-verification:
        placement first, nova's rows after. Read the other way round, the
        nova rows would predate the new allocation and condemn it.
        """
        shelved = self.nova.add_instance('cell1',
                                         vm_state='shelved_offloaded')
        self.allocate(shelved, self.host1)
        vm = self.gone('host2', self.host2)

        def unshelve():
            self.allocate(shelved, self.host1)
            self.set_instance(shelved, vm_state='active', host='host1',
                              node='host1')
        # The audit takes this owner from nova; the first read of the
        # consumer is the repair's.
        self.proxy.inject('GET', '/allocations/' + shelved, before=unshelve)
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        self.assertRows([
            self.done(self.row(shelved, self.host1, 'shelved_offloaded',
                               'delete_consumer', host='host1'),
                      'skipped: no longer delete_consumer: now '
                      'active_instance'),
            self.done(self.row(vm, self.host2, 'deleted_instance',
                               'delete_consumer', host='host2'))], rows)
        # Generation 2: the unshelve's write, untouched by the tool.
        self.assertEqual({shelved: held({self.host1: FLAVOR}, generation=2)},
                         self.placement.dump_state())
        self.assertEqual([('PUT', '/allocations/' + vm)], self.writes())
        self.assertEqual([[vm]], [list(e['consumers'])
                                  for e in self.entries()])

    def test_allocation_gone_before_the_write_is_skipped(self):
        """Someone else removed the allocation after the audit."""
        vm = self.gone('host1', self.host1)
        self.proxy.inject('GET', '/allocations/' + vm,
                          before=lambda: self.placement.put_allocations(
                              vm, {}, base.PROJECT, base.USER))
        rc, rows = self.clean()
        # Nothing was left to repair, and nothing was.
        self.assertEqual(0, rc)
        self.assertRows([self.done(self.row(
            vm, self.host1, 'deleted_instance', 'delete_consumer',
            host='host1'), 'skipped: the allocation is gone')], rows)
        self.assertEqual([], self.writes())
        self.assertFalse(os.path.exists(self.journal))

    def test_row_is_what_the_write_removed(self):
        """The allocation grew after the audit and is still an orphan:
        the row, and its journal entry, show what the write removed,
        not what the audit read; the restore puts that back.
        """
        vm = self.gone('host1', self.host1)
        self.proxy.inject('GET', '/allocations/' + vm,
                          before=lambda: self.allocate(vm, self.host1,
                                                       resources=BIGGER))
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        expected = self.row(vm, self.host1, 'deleted_instance',
                            'delete_consumer', host='host1',
                            resources=BIGGER)
        self.assertRows([self.done(expected)], rows)
        entry, = self.entries()
        self.assertEqual([BIGGER], [f['resources']
                                    for f in entry['findings']])
        rc, rows = self.restore()
        self.assertEqual(4, rc)
        self.assertRows([self.done(dict(expected,
                                        action='restore_consumer'))], rows)
        self.assertEqual({vm: held({self.host1: BIGGER},
                                   consumer_type='unknown')},
                         self.placement.dump_state())

    def test_concurrent_write_is_reevaluated_and_preserved(self):
        """nova writes the consumer between the tool's read and its write:
        placement answers 409, the tool reads again, still finds the
        evacuated source and removes only that, keeping nova's change.
        """
        vm, bw = self.evacuated()
        self.proxy.inject('PUT', '/allocations/' + vm, before=lambda:
                          self.allocate(vm, {self.host1: FLAVOR, bw: BW,
                                             self.host2: BIGGER}))
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        self.assertRows(self.evacuated_rows(vm, bw), rows)
        self.assertEqual({vm: held({self.host2: BIGGER}, generation=3)},
                         self.placement.dump_state())
        puts = self.proxy.requests('PUT')
        self.assertEqual([(409, 1), (204, 2)],
                         [(p.result, p.body['consumer_generation'])
                          for p in puts])

    def test_concurrent_claim_turns_orphan_into_live_allocation(self):
        """The unknown consumer is claimed by a build while the tool is
        about to empty it: after the 409 it is re-evaluated as building
        and left alone.
        """
        stranger = self.stranger(self.host2)

        def claim():
            self.nova.add_build_request(stranger)
            self.allocate(stranger, self.host2, resources=BIGGER)
        self.proxy.inject('PUT', '/allocations/' + stranger, before=claim)
        rc, rows = self.clean()
        # Now a build's: no orphan is left, and none was repaired.
        self.assertEqual(0, rc)
        self.assertRows([self.done(self.row(
            stranger, self.host2, 'unknown_consumer', 'delete_consumer',
            host='host2', consumer_type='unknown', instance=None),
            'skipped: no longer delete_consumer: now building')], rows)
        self.assertEqual({stranger: held({self.host2: BIGGER},
                                         generation=2)},
                         self.placement.dump_state())

    def test_return_to_instance_meets_nova_writing_the_instance(self):
        """nova gives the instance its own allocation while the tool is
        about to move the migration's to it: the POST, which says the
        instance must have no consumer yet, gets a 409 and nothing is
        doubled; re-evaluated, the migration's allocation is now merely
        left over, for the next run to delete.
        """
        vm, mig = self.failed_migration()
        self.proxy.inject('POST', '/allocations',
                          before=lambda: self.allocate(vm, self.host1))
        rc, rows = self.clean()
        self.assertEqual(3, rc)
        self.assertEqual(['skipped: no longer return_to_instance: now '
                          'delete_consumer'],
                         [r['outcome'] for r in rows])
        self.assertEqual({vm: held({self.host1: FLAVOR}),
                          mig: held({self.host1: FLAVOR})},
                         self.placement.dump_state())
        self.assertEqual([409], [p.result for p in
                                 self.proxy.requests('POST')])
        rc, rows = self.clean()
        self.assertEqual((4, ['delete_consumer']),
                         (rc, [r['action'] for r in rows]), rows)
        self.assertEqual({vm: held({self.host1: FLAVOR})},
                         self.placement.dump_state())

    def test_consumer_changing_twice_is_skipped(self):
        """A consumer that keeps changing is re-evaluated once, then left
        for the next run; nothing is overwritten.
        """
        vm, bw = self.evacuated()
        sizes = iter([BIGGER, FLAVOR])
        self.proxy.inject('PUT', '/allocations/' + vm, count=2,
                          before=lambda: self.allocate(vm, {
                              self.host1: FLAVOR, bw: BW,
                              self.host2: next(sizes)}))
        rc, rows = self.clean()
        self.assertEqual(3, rc)
        self.assertRows(self.evacuated_rows(
            vm, bw, 'skipped: changed concurrently twice; run again'), rows)
        self.assertEqual({vm: held({self.host1: FLAVOR, bw: BW,
                                    self.host2: FLAVOR}, generation=3)},
                         self.placement.dump_state())
        self.assertEqual([409, 409],
                         [p.result for p in self.proxy.requests('PUT')])
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        self.assertEqual({vm: held({self.host2: FLAVOR}, generation=4)},
                         self.placement.dump_state())


class BatchTestCase(RepairTestCase):
    """Many consumers: written in one POST /allocations, journaled first."""

    COUNT = 10

    def setUp(self):
        super().setUp()
        self.fast_conf = self.proxied_conf(timeout=10, name='fast.conf')
        with open(self.fast_conf, 'a') as f:
            f.write('\n[placement_database]\nconnection = %s\n' %
                    self.placement.db_url)
        # On one provider: one stream (see Repairer._streams).
        self.host2 = self.add_node('host3', inventory={
            'VCPU': 64, 'MEMORY_MB': 65536, 'DISK_GB': 100})
        self.vms = [self.gone('host3', self.host2)
                    for n in range(self.COUNT - 1)]
        self.stranger_ = self.stranger(self.host2)
        self.consumers = self.vms + [self.stranger_]
        self.initial = self.placement.dump_state()

    def _posted(self, conf_file=None):
        seen = []
        self.proxy.inject('POST', '/allocations',
                          before=lambda: seen.append(self.entries()))
        rc, rows = self.clean(conf_file=conf_file)
        self.assertEqual(4, rc)
        self.assertEqual(['done'] * self.COUNT, [r['outcome'] for r in rows])
        self.assertEqual({}, self.placement.dump_state())
        self.assertEqual([('POST', '/allocations')], self.writes())
        post, = self.proxy.requests('POST')
        self.assertEqual('placement 1.37', post.version)
        reads = [r.path for r in self.proxy.requests('GET',
                                                     '/allocations/.*')]
        self.assertEqual(
            {c: {'allocations': {}, 'consumer_generation': 1,
                 'project_id': base.PROJECT, 'user_id': base.USER}
             for c in self.consumers}, post.body)
        # Every entry, one per consumer, was on disk before the POST.
        [entries] = seen
        self.assertEqual(sorted(self.consumers),
                         sorted(c for e in entries for c in e['consumers']))
        self.assertTrue(all(e.get('applied', True) for e in entries))
        # restore undoes them one by one, exactly.
        rc, rows = self.restore()
        self.assertEqual(4, rc)
        self.assertEqual(['done'] * self.COUNT, [r['outcome'] for r in rows])
        self.assertEqual(self.initial, self.placement.dump_state())
        return reads

    def test_many_consumers_in_one_post_journaled_before(self):
        reads = self._posted()
        # API mode: each consumer's document was read through the API.
        self.assertEqual(sorted('/allocations/' + c for c in self.consumers),
                         sorted(set(reads)))

    def test_fast_mode_reads_the_documents_from_the_database(self):
        self.assertEqual([], self._posted(conf_file=self.fast_conf))

    def test_fast_mode_reads_every_batch_on_the_same_engines(self):
        """A new engine per batch would be a new connection per batch to
        each database (with PyMySQL, a TLS context each time).
        """
        created = collections.Counter()
        real = db_utils.create_reader_engine

        def counted(url, **kwargs):
            created[url] += 1
            return real(url, **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.db_utils.create_reader_engine', counted))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.repair.actions.BATCH', 3))
        rc, rows = self.clean(conf_file=self.fast_conf)
        self.assertEqual(4, rc)
        self.assertEqual(['done'] * self.COUNT, [r['outcome'] for r in rows])
        self.assertEqual({}, self.placement.dump_state())
        self.assertEqual(
            dict.fromkeys([self.placement.db_url, self.nova.api_url] +
                          list(self.nova.cell_urls.values()), 1),
            dict(created))

    def _conflict(self, conf_file=None):
        """A build claims the stranger between the read and the POST: the
        POST is refused as a whole, marked not applied, and each consumer
        is written alone after a fresh read; the stranger is left alone.
        """
        def claim():
            self.nova.add_build_request(self.stranger_)
            self.allocate(self.stranger_, self.host2, resources=BIGGER)
        self.proxy.inject('POST', '/allocations', before=claim)
        rc, rows = self.clean(conf_file=conf_file)
        self.assertEqual(4, rc)
        self.assertEqual(
            sorted([(vm, 'done') for vm in self.vms] + [
                (self.stranger_, 'skipped: no longer delete_consumer: now '
                                 'building')]),
            sorted((r['consumer'], r['outcome']) for r in rows))
        self.assertEqual({self.stranger_: held({self.host2: BIGGER},
                                               generation=2)},
                         self.placement.dump_state())
        self.assertEqual([409], [p.result for p in
                                 self.proxy.requests('POST')])
        self.assertEqual(sorted(('PUT', '/allocations/' + vm)
                                for vm in self.vms),
                         sorted(w for w in self.writes() if w[0] == 'PUT'))
        entries = self.entries()
        refused = [e for e in entries if e.get('applied') is False]
        self.assertEqual(sorted(self.consumers),
                         sorted(c for e in refused for c in e['consumers']))
        self.assertEqual(entries[:self.COUNT], refused)
        # restore skips the refused entries and undoes the single writes.
        rc, rows = self.restore()
        self.assertEqual(4, rc)
        self.assertEqual(self.COUNT - 1,
                         [r['outcome'] for r in rows].count('done'))
        self.assertEqual(dict(self.initial, **{
            self.stranger_: held({self.host2: BIGGER}, generation=2)}),
            self.placement.dump_state())

    def test_batch_refused_for_one_consumer_is_written_one_by_one(self):
        self._conflict()

    def test_fast_mode_batch_refused_for_one_consumer(self):
        """In fast mode too: the generation read from the database is the
        one the POST carries, so the change made after it is refused.
        """
        self._conflict(conf_file=self.fast_conf)

    def test_server_error_on_a_batch_fails_its_consumers(self):
        """Nobody knows whether a 500'd batch was applied: every consumer
        of it is reported failed, nothing retried; restore compares.
        """
        self.proxy.inject('POST', '/allocations', status=500)
        rc, rows = self.clean()
        self.assertEqual(1, rc)
        self.assertEqual(
            ['failed: Placement request POST /allocations failed: 500 '
             'injected by the test proxy'] * self.COUNT,
            [r['outcome'] for r in rows])
        self.assertEqual(self.initial, self.placement.dump_state())
        self.assertEqual([('POST', '/allocations')], self.writes())
        self.assertEqual(self.COUNT, len(self.entries()))
        self.assertEqual(4, self.clean()[0])
        self.assertEqual({}, self.placement.dump_state())


class DownCellTestCase(RepairTestCase):

    CELLS = ('cell1', 'cell2')

    def setUp(self):
        super().setUp()
        self.host3 = self.add_node('host3', cell='cell2')

    def test_unverifiable_consumers_are_never_written(self):
        vm = self.gone('host1', self.host1)
        stranger = self.stranger(self.host1)
        elsewhere = self.boot('host3', self.host3, cell='cell2')
        gone_there = self.gone('host3', self.host3, cell='cell2')
        self.nova.break_cell('cell2')
        rc, rows = self.clean()
        self.assertEqual(exit_codes.INCOMPLETE_WITH_ORPHANS, rc)
        self.assertRows([self.done(self.row(
            vm, self.host1, 'deleted_instance', 'delete_consumer',
            host='host1'))], rows)
        self.assertEqual({stranger: held({self.host1: FLAVOR}),
                          elsewhere: held({self.host3: FLAVOR}),
                          gone_there: held({self.host3: FLAVOR})},
                         self.placement.dump_state())
        self.assertEqual([('PUT', '/allocations/' + vm)], self.writes())

    def test_exit_codes_with_an_unreadable_cell(self):
        """Never 0 (nothing found) nor 3/4 when a cell was not read."""
        here = self.boot('host1', self.host1)
        gone_there = self.gone('host3', self.host3, cell='cell2')
        self.nova.break_cell('cell2')
        before = self.placement.dump_state()
        # Nothing orphaned in the cell read: 2, dry run or not.
        for argv in (('--dry-run',), ()):
            rc, out, err = self.manage('allocations', 'clean', '--journal',
                                       self.journal, *argv)
            self.assertEqual(exit_codes.INCOMPLETE, rc, err)
            self.assertIn('WARNING: cell cell2 could not be read', err)
        self.assertEqual(before, self.placement.dump_state())
        self.assertEqual([], self.writes())
        # An orphan in the cell read: 5 whether listed or repaired.
        vm = self.gone('host1', self.host1)
        rc, rows = self.clean('--dry-run')
        self.assertEqual(exit_codes.INCOMPLETE_WITH_ORPHANS, rc)
        row = self.row(vm, self.host1, 'deleted_instance', 'delete_consumer',
                       host='host1')
        self.assertRows([self.done(row, 'skipped: dry run')], rows)
        self.assertEqual([], self.writes())
        rc, rows = self.clean()
        self.assertEqual(exit_codes.INCOMPLETE_WITH_ORPHANS, rc)
        self.assertRows([self.done(row)], rows)
        self.assertEqual({here: held({self.host1: FLAVOR}),
                          gone_there: held({self.host3: FLAVOR})},
                         self.placement.dump_state())

    def test_failed_repair_wins_over_an_unreadable_cell(self):
        vm = self.gone('host1', self.host1)
        self.nova.break_cell('cell2')
        self.proxy.inject('PUT', '/allocations/' + vm, status=500,
                          count=None)
        rc, rows = self.clean()
        self.assertEqual(exit_codes.REPAIR_FAILED, rc)
        self.assertEqual(['failed'], [r['outcome'][:6] for r in rows])

    def test_cell_lost_after_the_audit_is_never_written(self):
        """The cell holding the consumer becomes unreadable between the
        audit and the re-verification: the consumer is unverifiable now
        and is not written.
        """
        vm = self.gone('host1', self.host1)
        path = self.nova.cell_urls['cell1'][len('sqlite:///'):]

        def lose_cell1():
            os.rename(path, path + '.away')
            self.addCleanup(os.rename, path + '.away', path)
        self.proxy.inject('GET', '/allocations/' + vm, before=lose_cell1)
        rc, rows = self.clean()
        self.assertEqual(3, rc)
        self.assertRows([self.done(self.row(
            vm, self.host1, 'deleted_instance', 'delete_consumer',
            host='host1'), 'skipped: no longer delete_consumer: now '
            'unverifiable')], rows)
        self.assertEqual({vm: held({self.host1: FLAVOR})},
                         self.placement.dump_state())
        self.assertEqual([], self.writes())


class FaultsTestCase(RepairTestCase):
    """Placement failing mid-run: the consumer hit is reported failed,
    the others are done, a second run finishes, restore undoes it all.
    """

    def setUp(self):
        super().setUp()
        self.vm = self.gone('host1', self.host1)
        self.other = self.gone('host2', self.host2)
        self.stranger_ = self.stranger(self.host2)
        self.initial = self.placement.dump_state()

    def rows(self, vm_outcome, other_outcome='done'):
        return [
            self.done(self.row(self.vm, self.host1, 'deleted_instance',
                               'delete_consumer', host='host1'),
                      vm_outcome),
            self.done(self.row(self.other, self.host2, 'deleted_instance',
                               'delete_consumer', host='host2'),
                      other_outcome),
            self.done(self.row(self.stranger_, self.host2,
                               'unknown_consumer', 'delete_consumer',
                               host='host2', consumer_type='unknown',
                               instance=None), other_outcome)]

    def assert_restored(self, rows_outcomes):
        rc, rows = self.restore()
        self.assertEqual(4, rc)
        self.assertEqual(sorted(rows_outcomes),
                         sorted((r['consumer'], r['outcome'])
                                for r in rows))
        # Emptied consumers are re-created: generation 1 again.
        self.assertEqual(self.initial, self.placement.dump_state())

    def test_server_error_on_a_write(self):
        self.proxy.inject('PUT', '/allocations/' + self.vm, status=500)
        rc, rows = self.clean()
        self.assertEqual(1, rc)
        # A long reason is printed once, the row names it.
        self.assertRows(self.rows('failed: error 1'), rows)
        self.assertIn(
            'Error 1 (1 row(s)): Placement request PUT /allocations/%s '
            'failed: 500 injected by the test proxy\n' % self.vm, self.stderr)
        self.assertEqual({self.vm: self.initial[self.vm]},
                         self.placement.dump_state())
        # The journal entry was written before the write that failed.
        self.assertEqual(3, len(self.entries()))
        rc, rows = self.clean()
        self.assertEqual(4, rc)
        self.assertEqual([(self.vm, 'done')],
                         [(r['consumer'], r['outcome']) for r in rows])
        self.assertEqual({}, self.placement.dump_state())
        self.assertEqual((0, []), self.clean())
        self.assert_restored([
            (self.vm, 'done'), (self.other, 'done'),
            (self.stranger_, 'done'),
            (self.vm, 'skipped: already as before')])

    def applied(self, consumer):
        """How many writes to ``consumer`` placement applied."""
        return len([r for r in self.proxy.requests(
            'PUT', '/allocations/' + consumer)
            if r.forwarded is not None and 200 <= r.forwarded < 300])

    def test_connection_dropped_before_the_write(self):
        """The write never reached placement: read back, found as it
        was (its generation), sent again with that generation: done.
        """
        self.proxy.inject('PUT', '/allocations/' + self.vm, drop=True)
        rc, rows = self.clean()
        self.assertEqual(4, rc, self.stderr)
        self.assertRows(self.rows('done'), rows)
        self.assertEqual('1 request retried after transient faults '
                         '(placement connection: 1).\n',
                         self.stderr.split('To undo: ')[1].split('\n', 1)[1])
        self.assertEqual({}, self.placement.dump_state())
        self.assertEqual(
            ['dropped', 204],
            [r.result for r in self.proxy.requests(
                'PUT', '/allocations/' + self.vm)])
        self.assertEqual(1, self.applied(self.vm))
        self.assertEqual((0, []), self.clean())
        self.assert_restored([(self.vm, 'done'), (self.other, 'done'),
                              (self.stranger_, 'done')])

    def test_answer_lost_after_the_write(self):
        """The write reached placement but its answer never came back:
        read back, found applied, done; never sent again.
        """
        self.proxy.inject('PUT', '/allocations/' + self.vm, drop='after')
        rc, rows = self.clean()
        self.assertEqual(4, rc, self.stderr)
        self.assertRows(self.rows('done'), rows)
        self.assertEqual({}, self.placement.dump_state())
        self.assertEqual(['dropped'], [r.result for r in self.proxy.requests(
            'PUT', '/allocations/' + self.vm)])
        self.assertEqual(1, self.applied(self.vm))
        # Read back once: the re-verification, then after the lost answer.
        self.assertEqual(2, len(self.proxy.requests(
            'GET', '/allocations/' + self.vm)))
        self.assertEqual((0, []), self.clean())
        self.assert_restored([(self.vm, 'done'), (self.other, 'done'),
                              (self.stranger_, 'done')])

    def test_lost_answer_read_back_fails(self):
        """The answer lost, and placement gone before the write could be
        read back: failed, nothing more sent; the next run sees it was
        applied.
        """
        self.proxy.inject('PUT', '/allocations/' + self.vm, drop='after')
        self.proxy.inject('GET', '/allocations/' + self.vm, skip=1,
                          status=500)
        rc, rows = self.clean()
        self.assertEqual(1, rc)
        self.assertRows(self.rows('failed: error 1'), rows)
        self.assertIn(
            'Error 1 (1 row(s)): Placement request PUT /allocations/%s '
            'failed: ' % self.vm, self.stderr)
        self.assertEqual({}, self.placement.dump_state())
        self.assertEqual(1, len(self.proxy.requests(
            'PUT', '/allocations/' + self.vm)))
        self.assertEqual((0, []), self.clean())
        self.assert_restored([(self.vm, 'done'), (self.other, 'done'),
                              (self.stranger_, 'done')])

    def test_timeout_while_the_write_is_on_its_way(self):
        """The tool gives up after [placement] timeout while the write
        is still on its way; read back, not applied yet, it is sent
        again with the same generation. Placement applies one of the
        two, and refuses the other (409): never both.
        """
        conf = self.proxied_conf(timeout=2, name='impatient.conf')
        self.proxy.inject('PUT', '/allocations/' + self.vm, delay=3)
        rc, rows = self.clean(conf_file=conf)
        self.assertEqual(4, rc, self.stderr)
        self.assertRows(self.rows('done'), rows)
        self.assertIn('1 request retried after transient faults '
                      '(placement timeout: 1).', self.stderr)
        self.proxy.wait_idle()
        self.assertEqual({}, self.placement.dump_state())
        self.assertEqual(
            [204, 409],
            sorted((r.forwarded for r in self.proxy.requests(
                'PUT', '/allocations/' + self.vm)), key=str))
        self.assertEqual((0, []), self.clean())
        self.assert_restored([(self.vm, 'done'), (self.other, 'done'),
                              (self.stranger_, 'done')])

    def test_server_error_on_the_fresh_read(self):
        """The re-verification read fails (placement's own 500, which is
        not retried): nothing journaled, nothing written for that
        consumer.
        """
        # The audit takes this owner from nova: the first read of the
        # consumer is the re-verification.
        self.proxy.inject('GET', '/allocations/' + self.vm, status=500)
        rc, rows = self.clean()
        self.assertEqual(1, rc)
        self.assertRows(self.rows('failed: error 1'), rows)
        self.assertIn(
            'Error 1 (1 row(s)): Placement request GET /allocations/%s '
            'failed: 500 injected by the test proxy\n' % self.vm, self.stderr)
        self.assertEqual({self.vm: self.initial[self.vm]},
                         self.placement.dump_state())
        self.assertEqual(sorted([self.other, self.stranger_]),
                         sorted(c for e in self.entries()
                                for c in e['consumers']))

    def test_unavailable_on_the_fresh_read_is_retried(self):
        """A 503 (a proxy in front of a restarting placement) on the
        re-verification read: read again, then done.
        """
        self.proxy.inject('GET', '/allocations/' + self.vm, status=503,
                          count=2)
        rc, rows = self.clean()
        self.assertEqual(4, rc, self.stderr)
        self.assertRows(self.rows('done'), rows)
        self.assertIn('1 request retried after transient faults '
                      '(placement 503: 2).', self.stderr)
        self.assertEqual([503, 503, 200],
                         [r.result for r in self.proxy.requests(
                             'GET', '/allocations/' + self.vm)])
        self.assertEqual({}, self.placement.dump_state())


class JournalTestCase(RepairTestCase):

    def test_entry_is_on_disk_before_the_write(self):
        """Read the journal from inside placement's request handling:
        the full before and after documents are already there.
        """
        vm, bw = self.evacuated()
        seen = []
        self.proxy.inject('PUT', '/allocations/' + vm,
                          before=lambda: seen.append(self.entries()))
        self.assertEqual(4, self.clean()[0])
        [[entry]] = seen
        self.assertEqual('remove_provider', entry['action'])
        self.assertEqual([self.host1, bw], [f['resource_provider']
                                            for f in entry['findings']])
        self.assertEqual({vm: {
            'before': {'allocations': {self.host1: {'resources': FLAVOR},
                                       bw: {'resources': BW},
                                       self.host2: {'resources': FLAVOR}},
                       'project_id': base.PROJECT, 'user_id': base.USER,
                       'consumer_generation': 1,
                       'consumer_type': 'unknown'},
            'after': {self.host2: {'resources': FLAVOR}}}},
            entry['consumers'])

    def test_default_journal_is_new_private_file_under_state_path(self):
        self.gone('host1', self.host1)
        rc, out, err = self.manage('allocations', 'clean')
        self.assertEqual(4, rc, err)
        path = re.search(r'Journal: (\S+)', err).group(1)
        self.assertEqual(self.state_path, os.path.dirname(path))
        self.assertRegex(os.path.basename(path),
                         r'^journal-\d{8}T\d{6}\.\d{6}Z-\d+\.jsonl$')
        self.assertEqual(0o600, stat.S_IMODE(os.stat(path).st_mode))
        self.assertEqual(0o700,
                         stat.S_IMODE(os.stat(self.state_path).st_mode))
        self.assertEqual(1, len(self.entries(path)))
        self.gone('host2', self.host2)
        rc, out, err = self.manage('allocations', 'clean')
        second = re.search(r'Journal: (\S+)', err).group(1)
        self.assertNotEqual(path, second)
        # Beside them, what the scans read, kept for the next.
        self.assertEqual(
            sorted([os.path.basename(path), os.path.basename(second)]),
            sorted(name for name in os.listdir(self.state_path)
                   if name.startswith('journal-')))
        self.assertEqual(3, len(os.listdir(self.state_path)))


class MailingListTestCase(RepairTestCase):
    """Seed 002: a compute node provider cannot be deleted while evacuated
    instances' allocations remain on it; clean --host clears the way.
    """

    def test_provider_deletable_after_clean_host(self):
        vm, bw = self.evacuated()
        vm2 = self.nova.add_instance('cell1', host='host2', node='host2')
        self.allocate(vm2, self.host1, self.host2)
        self.nova.add_migration('cell1', vm2, migration_type='evacuation',
                                status='done', source_compute='host1',
                                source_node='host1', dest_compute='host2',
                                dest_node='host2')
        self.assertEqual(409, self.placement.delete_provider(bw).status_code)
        self.assertEqual(
            409, self.placement.delete_provider(self.host1).status_code)
        rc, rows = self.clean('--host', 'host1')
        self.assertEqual(4, rc)
        self.assertEqual({'done'}, {r['outcome'] for r in rows})
        self.assertEqual(204, self.placement.delete_provider(bw).status_code)
        self.assertEqual(
            204, self.placement.delete_provider(self.host1).status_code)
        self.assertEqual({vm: held({self.host2: FLAVOR}, generation=2),
                          vm2: held({self.host2: FLAVOR}, generation=2)},
                         self.placement.dump_state())


class BadInputTestCase(RepairTestCase):

    def assert_invalid(self, argv, text, usage=False):
        """127, nothing changed: one line naming ``text``, or with
        ``usage`` argparse's usage and its error line.
        """
        before = self.placement.dump_state()
        rc, out, err = self.manage('allocations', *argv)
        self.assertEqual((127, ''), (rc, out), err)
        lines = err.strip().splitlines()
        if usage:
            prog = 'nova-orphans-manage allocations ' + argv[0]
            self.assertTrue(lines[0].startswith('usage: ' + prog), err)
            self.assertEqual('%s: error: %s' % (prog, text), lines[-1])
        else:
            self.assertEqual(1, len(lines), err)
            self.assertIn(text, err)
        self.assertRanCleanly((rc, out, err))
        self.assertEqual(before, self.placement.dump_state())
        self.assertEqual([], self.writes())

    def test_max_count_must_be_positive(self):
        self.gone('host1', self.host1)
        for value in ('0', '-1'):
            self.assert_invalid(['clean', '--max-count', value],
                                '--max-count must be at least 1')
        self.assert_invalid(['clean', '--max-count', 'x'],
                            "argument --max-count: invalid int value: 'x'",
                            usage=True)

    def test_clean_needs_a_writable_journal(self):
        self.gone('host1', self.host1)
        for path, text in (
                (os.path.join(self.tmp, 'no-dir', 'j.jsonl'),
                 'does not exist'),
                (self.tmp, 'is a directory')):
            self.assert_invalid(['clean', '--journal', path], text)
        self.assertEqual([], self.proxy.requests())

    def test_restore_needs_a_readable_journal(self):
        self.gone('host1', self.host1)
        not_json = os.path.join(self.tmp, 'not-json.jsonl')
        with open(not_json, 'w') as f:
            f.write('this is not JSON\n')
        foreign = os.path.join(self.tmp, 'foreign.jsonl')
        with open(foreign, 'w') as f:
            f.write(json.dumps({'hello': 'world'}) + '\n')
        for path, text in (
                (os.path.join(self.tmp, 'missing.jsonl'),
                 'No such file or directory'),
                (self.tmp, 'Is a directory'),
                (not_json, 'line 1'),
                (foreign, 'not a nova-orphans journal entry')):
            self.assert_invalid(['restore', '--journal', path], text)
        self.assert_invalid(['restore'], 'the following arguments are '
                                         'required: --journal', usage=True)


# Repairs, their re-verification and their races with nova's databases
# and placement's on MariaDB, as production runs them.
ActionsMariaDBTestCase = base.on_mariadb(
    ActionsTestCase, 'test_delete_consumer_of_instance_forced_to_deleted',
    'test_project_and_user_filters_limit_what_is_repaired',
    'test_remove_provider_of_evacuated_source_with_child',
    'test_return_to_instance_in_one_post',
    'test_nothing_to_do_is_0_and_writes_no_journal')
SafetyMariaDBTestCase = base.on_mariadb(
    SafetyTestCase, 'test_concurrent_write_is_reevaluated_and_preserved',
    'test_concurrent_claim_turns_orphan_into_live_allocation',
    'test_return_to_instance_meets_nova_writing_the_instance')
BatchMariaDBTestCase = base.on_mariadb(
    BatchTestCase, 'test_many_consumers_in_one_post_journaled_before',
    'test_fast_mode_reads_the_documents_from_the_database',
    'test_fast_mode_reads_every_batch_on_the_same_engines')
DownCellMariaDBTestCase = base.on_mariadb(
    DownCellTestCase, 'test_unverifiable_consumers_are_never_written',
    'test_exit_codes_with_an_unreadable_cell')
