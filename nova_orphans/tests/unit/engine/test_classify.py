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
"""Every reason, and every look-alike that must not be an orphan."""

import dataclasses
import datetime

from oslotest import base

from nova_orphans.app import foreign as foreign_mod
from nova_orphans.engine import classify
from nova_orphans.engine import heal
from nova_orphans.engine import model
from nova_orphans.engine import nova_states
from nova_orphans.engine import reasons as r
from nova_orphans.engine import rules
from nova_orphans.engine import site_rules
from nova_orphans import exception
from nova_orphans.tests.unit import cloud as cloud_mod

FINE = r.NONE


class ClassifyTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.cloud = cloud_mod.Cloud()
        self.host1 = self.cloud.node('host1')
        self.host2 = self.cloud.node('host2')

    def assertVerdicts(self, expected, **kwargs):
        self.assertEqual(expected, self.cloud.verdicts(**kwargs))
        if 'rules' not in kwargs:
            # The same chain, not DEFAULT_RULES itself: classify runs it
            # on every allocation, with no shortcut (see classify).
            self.assertEqual(
                self.cloud.findings(**kwargs),
                self.cloud.findings(rules=list(rules.DEFAULT_RULES),
                                    **kwargs))


class InstanceRulesTestCase(ClassifyTestCase):

    def test_active_instance_on_its_node(self):
        vm = self.cloud.instance('host1')
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts({(vm, self.host1): (r.ACTIVE_INSTANCE, FINE)})

    def test_deleted_instance(self):
        vm = self.cloud.instance('host1', deleted=True, vm_state='deleted')
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts(
            {(vm, self.host1): (r.DELETED_INSTANCE, r.DELETE_CONSUMER)})

    def test_archived_instance(self):
        vm = self.cloud.instance('host1', deleted=True, archived=True,
                                 mapping=False)
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts(
            {(vm, self.host1): (r.DELETED_INSTANCE, r.DELETE_CONSUMER)})

    def test_unknown_consumer(self):
        stranger = cloud_mod.uuid('stranger')
        self.cloud.alloc(stranger, self.host1)
        self.assertVerdicts(
            {(stranger, self.host1): (r.UNKNOWN_CONSUMER,
                                      r.DELETE_CONSUMER)})

    def test_mapping_without_instance_is_unknown(self):
        vm = cloud_mod.uuid('vm')
        self.cloud.map(vm, 'cell1')
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts(
            {(vm, self.host1): (r.UNKNOWN_CONSUMER, r.DELETE_CONSUMER)})

    def test_stale_provider_after_failed_cold_migration(self):
        # Seed 001: the target keeps the instance's allocation.
        vm = self.cloud.instance('host1', vm_state='stopped')
        self.cloud.migration(vm, 'error', source='host1', dest='host2')
        self.cloud.alloc(vm, self.host1)
        self.cloud.alloc(vm, self.host2, VCPU=30)
        self.assertVerdicts({
            (vm, self.host1): (r.ACTIVE_INSTANCE, FINE),
            (vm, self.host2): (r.STALE_PROVIDER, r.REMOVE_PROVIDER)})

    def test_instance_without_host_holding_allocations_is_stale(self):
        vm = self.cloud.instance(None, vm_state='error')
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts(
            {(vm, self.host1): (r.STALE_PROVIDER, r.REMOVE_PROVIDER)})

    def test_task_in_progress_is_not_judged(self):
        vm = self.cloud.instance('host1', task_state='rebuilding')
        self.cloud.alloc(vm, self.host2)
        self.assertVerdicts({(vm, self.host2): (r.ACTIVE_INSTANCE, FINE)})

    def test_shelved_offloaded(self):
        vm = self.cloud.instance(None, vm_state='shelved_offloaded')
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts(
            {(vm, self.host1): (r.SHELVED_OFFLOADED, r.DELETE_CONSUMER)})

    def test_unshelve_in_progress_is_fine(self):
        vm = self.cloud.instance(None, vm_state='shelved_offloaded',
                                 task_state='unshelving')
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts({(vm, self.host1): (r.ACTIVE_INSTANCE, FINE)})

    def test_soft_deleted(self):
        vm = self.cloud.instance('host1', vm_state='soft-delete')
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts({(vm, self.host1): (r.SOFT_DELETED, FINE)})

    def test_building_from_build_request(self):
        vm = cloud_mod.uuid('vm')
        self.cloud.build_request(vm)
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts({(vm, self.host1): (r.BUILDING, FINE)})

    def test_building_from_mapping_without_cell(self):
        vm = cloud_mod.uuid('vm')
        self.cloud.map(vm, None)
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts({(vm, self.host1): (r.BUILDING, FINE)})

    def test_building_instance_in_cell(self):
        vm = self.cloud.instance(None, vm_state='building',
                                 task_state='spawning')
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts({(vm, self.host1): (r.BUILDING, FINE)})

    def test_scheduling_reads_the_same_from_either_front_end(self):
        """A build request, or the server the compute API shows for it."""
        queued = cloud_mod.uuid('vm')
        self.cloud.build_request(queued)
        self.cloud.alloc(queued, self.host1)
        listed = self.cloud.instance(None, vm_state='building',
                                     task_state='scheduling', mapping=False)
        self.cloud.alloc(listed, self.host1)
        spawning = self.cloud.instance(None, vm_state='building',
                                       task_state='spawning')
        self.cloud.alloc(spawning, self.host1)
        self.assertEqual(
            {queued: 'The instance is being scheduled.',
             listed: 'The instance is being scheduled.',
             spawning: 'The instance is building.'},
            {f.consumer: f.details for f in self.cloud.findings()
             if f.reason == r.BUILDING})

    def test_missing_allocations(self):
        vm = self.cloud.instance('host1')
        finding, = self.cloud.findings()
        self.assertEqual(
            (vm, self.host1, r.MISSING_ALLOCATIONS, r.HEAL, {}),
            (finding.consumer, finding.resource_provider, finding.reason,
             finding.action, finding.resources))

    def test_missing_allocations_created_with_the_rebuild_hint(self):
        vm = self.cloud.instance('host1')
        other = self.cloud.instance('host1')
        plain = 'The instance runs on host1 (host1) but holds no ' \
            'allocations in placement.'
        findings = self.cloud.findings()
        self.assertEqual({vm: plain, other: plain},
                         {f.consumer: f.details for f in findings})
        self.cloud.nova.internal_hints[vm] = heal.internal_hints(
            {'_nova_check_type': ['rebuild'], 'same_host': ['x']})
        self.cloud.nova.internal_hints[other] = ('_nova_other',)
        advised = plain + (
            ' Its request spec carries the scheduler hint _nova_check_type, '
            'given at create: the scheduler skipped the claim '
            '(OSSA-2026-022, CVE-2026-46448, nova bug 2151252; fixed in '
            'nova 31.3.1, 32.2.1 and 33.0.2).')
        expected = {vm: advised, other: plain}
        self.assertEqual(expected, {f.consumer: f.details
                                    for f in self.cloud.findings()})
        self.assertEqual(expected, {
            f.consumer: f.details for f in
            classify.with_internal_hints(findings, self.cloud.nova)})

    def test_internal_hints(self):
        self.assertEqual(('_nova_check_type', '_nova_x'),
                         heal.internal_hints({'_nova_x': 1, 'group': 2,
                                              '_nova_check_type': 3}))
        self.assertEqual((), heal.internal_hints(None))

    def test_missing_allocations_not_for_instances_without_a_host(self):
        self.cloud.instance(None, vm_state='shelved_offloaded')
        self.cloud.instance(None, vm_state='error')
        self.cloud.instance('host1', vm_state='soft-delete')
        self.cloud.instance('host1', task_state='migrating')
        self.cloud.instance('host1', deleted=True)
        self.assertEqual([], self.cloud.findings())

    def test_missing_allocations_sees_allocations_outside_scope(self):
        vm = self.cloud.instance('host1')
        self.cloud.placement.scope = frozenset([self.host1])
        self.cloud.placement.consumers_elsewhere = frozenset([vm])
        self.assertEqual([], self.cloud.findings())


class MigrationRulesTestCase(ClassifyTestCase):

    def test_evacuated_source(self):
        # Seed 000: evacuated from a fenced host that never came back.
        vm = self.cloud.instance('host2')
        self.cloud.migration(vm, 'done', 'evacuation', 'host1', 'host2')
        self.cloud.alloc(vm, self.host1)
        self.cloud.alloc(vm, self.host2)
        self.assertVerdicts({
            (vm, self.host1): (r.EVACUATED_SOURCE, r.REMOVE_PROVIDER),
            (vm, self.host2): (r.ACTIVE_INSTANCE, FINE)})

    def test_evacuated_source_with_child_provider(self):
        child = self.cloud.provider('host1:bw', parent=self.host1)
        vm = self.cloud.instance('host2')
        self.cloud.migration(vm, 'completed', 'evacuation', 'host1', 'host2')
        self.cloud.alloc(vm, self.host1)
        self.cloud.alloc(vm, child, NET_BW_EGR_KILOBIT_PER_SEC=1000)
        self.cloud.alloc(vm, self.host2)
        self.assertVerdicts({
            (vm, self.host1): (r.EVACUATED_SOURCE, r.REMOVE_PROVIDER),
            (vm, child): (r.EVACUATED_SOURCE, r.REMOVE_PROVIDER),
            (vm, self.host2): (r.ACTIVE_INSTANCE, FINE)})

    def test_evacuation_in_progress(self):
        vm = self.cloud.instance('host1', task_state='rebuilding')
        self.cloud.migration(vm, 'pre-migrating', 'evacuation', 'host1',
                             'host2')
        self.cloud.alloc(vm, self.host1)
        self.cloud.alloc(vm, self.host2)
        self.assertVerdicts({
            (vm, self.host1): (r.ACTIVE_INSTANCE, FINE),
            (vm, self.host2): (r.ACTIVE_MIGRATION, FINE)})

    def test_evacuated_back_to_source_is_not_evacuated_source(self):
        vm = self.cloud.instance('host1')
        self.cloud.migration(vm, 'done', 'evacuation', 'host1', 'host2')
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts({(vm, self.host1): (r.ACTIVE_INSTANCE, FINE)})

    def test_resize_awaiting_confirm(self):
        vm = self.cloud.instance('host2', vm_state='resized')
        mig = self.cloud.migration(vm, 'finished', 'resize', 'host1',
                                   'host2')
        self.cloud.alloc(mig, self.host1)
        self.cloud.alloc(vm, self.host2)
        self.assertVerdicts({
            (mig, self.host1): (r.ACTIVE_MIGRATION, FINE),
            (vm, self.host2): (r.ACTIVE_INSTANCE, FINE)})

    def test_live_migration_in_progress(self):
        vm = self.cloud.instance('host1', task_state='migrating')
        mig = self.cloud.migration(vm, 'running', 'live-migration', 'host1',
                                   'host2')
        self.cloud.alloc(mig, self.host1)
        self.cloud.alloc(vm, self.host2)
        self.assertVerdicts({
            (mig, self.host1): (r.ACTIVE_MIGRATION, FINE),
            (vm, self.host2): (r.ACTIVE_MIGRATION, FINE)})

    def test_confirmed_migration_keeps_source_allocation(self):
        vm = self.cloud.instance('host2')
        mig = self.cloud.migration(vm, 'confirmed', 'resize', 'host1',
                                   'host2')
        self.cloud.alloc(mig, self.host1)
        self.cloud.alloc(vm, self.host2)
        self.assertVerdicts({
            (mig, self.host1): (r.FINISHED_MIGRATION, r.DELETE_CONSUMER),
            (vm, self.host2): (r.ACTIVE_INSTANCE, FINE)})

    def test_failed_migration_returns_to_instance(self):
        vm = self.cloud.instance('host1')
        mig = self.cloud.migration(vm, 'error', 'migration', 'host1',
                                   'host2')
        self.cloud.alloc(mig, self.host1)
        self.assertVerdicts({
            (mig, self.host1): (r.FINISHED_MIGRATION,
                                r.RETURN_TO_INSTANCE)})

    def test_cold_migration_cut_off_before_the_move(self):
        # The source compute stopped mid-migration and started again:
        # guest reverted, task state cleared, migration still migrating.
        vm = self.cloud.instance('host1')
        mig = self.cloud.migration(vm, 'migrating', 'migration', 'host1',
                                   'host2')
        self.cloud.alloc(mig, self.host1)
        self.cloud.alloc(vm, self.host2)
        cut_off = {
            (mig, self.host1): (r.FINISHED_MIGRATION, r.RETURN_TO_INSTANCE),
            (vm, self.host2): (r.STALE_PROVIDER, r.REMOVE_PROVIDER)}
        self.assertVerdicts(cut_off)
        moving = (r.ACTIVE_MIGRATION, FINE)
        # Any sign that nova still works on the move keeps it.
        for changes in ({'task_state': 'resize_migrating'},
                        {'task_state': 'resize_prep'},
                        {'vm_state': 'resized'}):
            self.cloud.update_instance(vm, **changes)
            self.assertVerdicts({(mig, self.host1): moving,
                                 (vm, self.host2): moving})
            self.cloud.update_instance(vm, task_state=None,
                                       vm_state='active')
        # The guest on the destination: the move went on.
        self.cloud.update_instance(vm, host='host2', node='host2')
        self.assertVerdicts({(mig, self.host1): moving,
                             (vm, self.host2): (r.ACTIVE_INSTANCE, FINE)})
        self.cloud.update_instance(vm, host='host1', node='host1')
        self.assertVerdicts(cut_off)
        # A live migration, or a status past the move, is not this.
        for status, kind in (('running', 'live-migration'),
                             ('post-migrating', 'migration'),
                             ('finished', 'resize')):
            self.cloud.nova.migrations[mig] = dataclasses.replace(
                self.cloud.nova.migrations[mig], status=status,
                migration_type=kind)
            self.assertEqual(moving, self.cloud.verdicts()[(mig,
                                                            self.host1)])
        self.assertEqual(True, nova_states.cut_off(
            dataclasses.replace(self.cloud.nova.migrations[mig],
                                status='pre-migrating',
                                migration_type='resize'),
            self.cloud.nova.instances[vm]))

    def test_failed_migration_when_instance_has_its_own(self):
        vm = self.cloud.instance('host1')
        mig = self.cloud.migration(vm, 'failed', 'migration', 'host1',
                                   'host2')
        self.cloud.alloc(mig, self.host1)
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts({
            (mig, self.host1): (r.FINISHED_MIGRATION, r.DELETE_CONSUMER),
            (vm, self.host1): (r.ACTIVE_INSTANCE, FINE)})

    def test_failed_migration_instance_elsewhere(self):
        vm = self.cloud.instance('host2')
        mig = self.cloud.migration(vm, 'error', 'migration', 'host1',
                                   'host2')
        self.cloud.alloc(mig, self.host1)
        self.cloud.alloc(vm, self.host2)
        self.assertVerdicts({
            (mig, self.host1): (r.FINISHED_MIGRATION, r.DELETE_CONSUMER),
            (vm, self.host2): (r.ACTIVE_INSTANCE, FINE)})

    def test_archived_migration(self):
        vm = self.cloud.instance('host2')
        mig = self.cloud.migration(vm, 'confirmed', 'resize', 'host1',
                                   'host2', deleted=True, archived=True)
        self.cloud.alloc(mig, self.host1)
        self.cloud.alloc(vm, self.host2)
        self.assertEqual(
            (r.FINISHED_MIGRATION, r.DELETE_CONSUMER),
            self.cloud.verdicts()[(mig, self.host1)])

    def test_in_progress_migration_of_deleted_instance(self):
        vm = self.cloud.instance('host2', deleted=True)
        mig = self.cloud.migration(vm, 'finished', 'resize', 'host1',
                                   'host2')
        self.cloud.alloc(mig, self.host1)
        self.assertVerdicts({
            (mig, self.host1): (r.DELETED_INSTANCE, r.DELETE_CONSUMER)})


NOW = datetime.datetime(2026, 11, 23, 12, 0, 0)
GRACE = datetime.timedelta(seconds=300)


class UnsettledTestCase(ClassifyTestCase):
    """nova between its database write and its placement write.

    The run's clock is NOW, its grace period GRACE: changes at or after
    NOW - GRACE are recent.
    """

    def setUp(self):
        super().setUp()
        self.cloud.nova.recent_since = NOW - GRACE

    def active(self, inst, changed=None, event=None):
        self.cloud.nova.activity[inst] = cloud_mod.model.Activity(
            changed_at=changed, pending_event=event,
            pending_since=NOW - datetime.timedelta(seconds=2)
            if event else None)

    def confirmed(self, **instance):
        vm = self.cloud.instance('host2', **instance)
        mig = self.cloud.migration(vm, 'confirmed', 'resize', 'host1',
                                   'host2')
        self.cloud.alloc(mig, self.host1)
        self.cloud.alloc(vm, self.host2)
        return vm, mig

    def test_confirm_window_event_running(self):
        # drop_move_claim_at_source set 'confirmed' and the instance
        # ACTIVE; compute_confirm_resize has not deleted the source yet.
        vm, mig = self.confirmed()
        self.active(vm, changed=NOW - GRACE - GRACE,
                    event='compute_confirm_resize')
        self.assertVerdicts({
            (mig, self.host1): (r.IN_PROGRESS, FINE),
            (vm, self.host2): (r.ACTIVE_INSTANCE, FINE)})
        details = {f.consumer: f.details for f in self.cloud.findings()}
        self.assertIn('compute_confirm_resize', details[mig])

    def test_confirm_window_still_resized(self):
        vm, mig = self.confirmed(vm_state='resized')
        self.assertVerdicts({
            (mig, self.host1): (r.IN_PROGRESS, FINE),
            (vm, self.host2): (r.ACTIVE_INSTANCE, FINE)})

    def test_changed_within_grace_period(self):
        vm, mig = self.confirmed()
        self.active(vm, changed=NOW - GRACE)
        self.assertEqual((r.IN_PROGRESS, FINE),
                         self.cloud.verdicts()[(mig, self.host1)])

    def test_changed_before_grace_period_is_repaired(self):
        vm, mig = self.confirmed()
        self.active(vm, changed=NOW - GRACE - datetime.timedelta(
            microseconds=1))
        self.assertEqual((r.FINISHED_MIGRATION, r.DELETE_CONSUMER),
                         self.cloud.verdicts()[(mig, self.host1)])

    def test_no_time_limit_without_grace_period(self):
        vm, mig = self.confirmed()
        self.active(vm, changed=NOW)
        self.cloud.nova.recent_since = None
        self.assertEqual((r.FINISHED_MIGRATION, r.DELETE_CONSUMER),
                         self.cloud.verdicts()[(mig, self.host1)])

    def test_revert_window(self):
        # drop_move_claim_at_dest set 'reverted' and the instance back on
        # host1; the source has not moved the migration's allocation back.
        vm = self.cloud.instance('host1', task_state='resize_reverting')
        mig = self.cloud.migration(vm, 'reverted', 'resize', 'host1',
                                   'host2')
        self.cloud.alloc(mig, self.host1)
        self.cloud.alloc(vm, self.host2)
        self.assertVerdicts({
            (mig, self.host1): (r.IN_PROGRESS, FINE),
            (vm, self.host2): (r.ACTIVE_INSTANCE, FINE)})

    def test_failed_migration_not_returned_while_unsettled(self):
        vm = self.cloud.instance('host1')
        mig = self.cloud.migration(vm, 'error', 'migration', 'host1',
                                   'host2')
        self.cloud.alloc(mig, self.host1)
        self.active(vm, changed=NOW)
        self.assertVerdicts({(mig, self.host1): (r.IN_PROGRESS, FINE)})

    def test_stale_provider_while_unsettled(self):
        vm = self.cloud.instance('host1')
        self.cloud.alloc(vm, self.host1)
        self.cloud.alloc(vm, self.host2)
        self.active(vm, changed=NOW)
        self.assertVerdicts({
            (vm, self.host1): (r.ACTIVE_INSTANCE, FINE),
            (vm, self.host2): (r.IN_PROGRESS, FINE)})

    def test_evacuated_source_while_unsettled(self):
        vm = self.cloud.instance('host2')
        self.cloud.migration(vm, 'done', 'evacuation', 'host1', 'host2')
        self.cloud.alloc(vm, self.host1)
        self.cloud.alloc(vm, self.host2)
        self.active(vm, event='compute_rebuild_instance')
        self.assertVerdicts({
            (vm, self.host1): (r.IN_PROGRESS, FINE),
            (vm, self.host2): (r.ACTIVE_INSTANCE, FINE)})

    def test_shelved_offloaded_while_unsettled(self):
        vm = self.cloud.instance(vm_state='shelved_offloaded')
        self.cloud.alloc(vm, self.host1)
        self.active(vm, changed=NOW)
        self.assertVerdicts({(vm, self.host1): (r.IN_PROGRESS, FINE)})

    def test_not_missing_allocations_while_unsettled(self):
        vm = self.cloud.instance('host1')
        self.active(vm, changed=NOW)
        self.assertVerdicts({})

    def test_deleted_instance_needs_no_grace(self):
        vm = self.cloud.instance('host2', deleted=True)
        mig = self.cloud.migration(vm, 'confirmed', 'resize', 'host1',
                                   'host2')
        self.cloud.alloc(mig, self.host1)
        self.cloud.alloc(vm, self.host2)
        self.active(vm, changed=NOW, event='compute_terminate_instance')
        self.assertVerdicts({
            (mig, self.host1): (r.FINISHED_MIGRATION, r.DELETE_CONSUMER),
            (vm, self.host2): (r.DELETED_INSTANCE, r.DELETE_CONSUMER)})

    def test_candidates_are_live_instances_of_orphans(self):
        vm, mig = self.confirmed()
        gone = self.cloud.instance('host1', deleted=True)
        self.cloud.alloc(gone, self.host1)
        settled = self.cloud.instance('host1')
        self.cloud.alloc(settled, self.host1)
        findings = self.cloud.findings()
        self.assertEqual({vm}, classify.unsettled_candidates(
            self.cloud.snapshot(), findings))
        self.active(vm, event='compute_confirm_resize')
        self.assertEqual(set(), classify.unsettled_candidates(
            self.cloud.snapshot(), findings))

    def test_with_activity_changes_only_that_instances_consumers(self):
        vm, mig = self.confirmed()
        other, other_mig = self.confirmed()
        findings = self.cloud.findings()
        self.active(vm, event='compute_confirm_resize')
        again = classify.with_activity(self.cloud.snapshot(), findings, {vm},
                                       rules.DEFAULT_RULES)
        self.assertEqual(self.cloud.findings(), again)
        self.assertEqual(
            {mig: r.IN_PROGRESS, other_mig: r.FINISHED_MIGRATION},
            {f.consumer: f.reason for f in again if f.is_orphan or
             f.reason == r.IN_PROGRESS})

    def test_with_activity_missing_allocations(self):
        # Only the instances whose activity was read may stop (or
        # start) missing allocations; the others' findings are kept,
        # once each.
        busy, idle = self.cloud.instance('host1'), self.cloud.instance(
            'host2')
        vm, mig = self.confirmed()
        findings = self.cloud.findings()
        self.assertEqual(
            {busy: r.MISSING_ALLOCATIONS, idle: r.MISSING_ALLOCATIONS,
             mig: r.FINISHED_MIGRATION},
            {f.consumer: f.reason for f in findings if f.is_orphan})
        self.active(busy, changed=NOW)
        self.active(vm, changed=NOW)
        again = classify.with_activity(self.cloud.snapshot(), findings,
                                       {busy, vm}, rules.DEFAULT_RULES)
        self.assertEqual(self.cloud.findings(), again)
        self.assertEqual(
            {idle: r.MISSING_ALLOCATIONS},
            {f.consumer: f.reason for f in again if f.is_orphan})
        kept = classify.with_activity(self.cloud.snapshot(), findings,
                                      {vm}, rules.DEFAULT_RULES)
        self.assertEqual(sorted([busy, idle]),
                         sorted(f.consumer for f in kept if f.is_orphan))


class ProviderRulesTestCase(ClassifyTestCase):

    def test_nested_child_of_own_node(self):
        child = self.cloud.provider('host1:vgpu', parent=self.host1)
        vm = self.cloud.instance('host1')
        self.cloud.alloc(vm, self.host1)
        self.cloud.alloc(vm, child, VGPU=1)
        self.assertVerdicts({(vm, self.host1): (r.ACTIVE_INSTANCE, FINE),
                             (vm, child): (r.ACTIVE_INSTANCE, FINE)})

    def _sharing(self):
        self.cloud = cloud_mod.Cloud()
        self.host1 = self.cloud.node('host1', aggregates=['agg'])
        self.host2 = self.cloud.node('host2')
        return self.cloud.provider('nfs', sharing=True, aggregates=['agg'])

    def test_sharing_provider_belongs_to_the_instance(self):
        nfs = self._sharing()
        vm = self.cloud.instance('host1')
        self.cloud.alloc(vm, self.host1, VCPU=1)
        self.cloud.alloc(vm, nfs, DISK_GB=10)
        self.assertVerdicts({(vm, self.host1): (r.ACTIVE_INSTANCE, FINE),
                             (vm, nfs): (r.ACTIVE_INSTANCE, FINE)})

    def test_sharing_provider_of_deleted_instance(self):
        nfs = self._sharing()
        vm = self.cloud.instance('host1', deleted=True)
        self.cloud.alloc(vm, nfs, DISK_GB=10)
        self.assertVerdicts(
            {(vm, nfs): (r.DELETED_INSTANCE, r.DELETE_CONSUMER)})

    def test_sharing_provider_not_sharing_with_nova(self):
        lonely = self.cloud.provider('other-nfs', sharing=True,
                                     aggregates=['elsewhere'])
        stranger = cloud_mod.uuid('stranger')
        self.cloud.alloc(stranger, lonely, DISK_GB=10)
        self.assertVerdicts(
            {(stranger, lonely): (r.UNMANAGED_PROVIDER, FINE)})

    def test_other_services_provider(self):
        foreign = self.cloud.provider('cyborg-fpga')
        stranger = cloud_mod.uuid('stranger')
        self.cloud.alloc(stranger, foreign, CUSTOM_FPGA=1)
        self.assertVerdicts(
            {(stranger, foreign): (r.UNMANAGED_PROVIDER, FINE)})

    def test_ended_consumers_on_a_provider_nova_no_longer_shows(self):
        """A compute node deleted with its service left its provider."""
        gone = self.cloud.provider('host9')
        vm = self.cloud.instance('host2')
        self.cloud.alloc(vm, self.host2)
        mig = self.cloud.migration(vm, 'confirmed', source='host9',
                                   dest='host2')
        self.cloud.alloc(mig, gone)
        deleted = self.cloud.instance('host9', deleted=True,
                                      vm_state='deleted')
        self.cloud.alloc(deleted, gone)
        live = self.cloud.instance('host9')
        self.cloud.alloc(live, gone)
        self.assertVerdicts({
            (vm, self.host2): (r.ACTIVE_INSTANCE, FINE),
            (mig, gone): (r.FINISHED_MIGRATION, r.DELETE_CONSUMER),
            (deleted, gone): (r.DELETED_INSTANCE, r.DELETE_CONSUMER),
            # Live: whatever the provider is, it is not nova's to judge.
            (live, gone): (r.UNMANAGED_PROVIDER, FINE)})

    def test_ended_consumer_also_on_a_nova_node_spares_the_foreign(self):
        foreign = self.cloud.provider('cyborg-fpga')
        vm = self.cloud.instance('host1', deleted=True, vm_state='deleted')
        self.cloud.alloc(vm, self.host1)
        self.cloud.alloc(vm, foreign, CUSTOM_FPGA=1)
        self.assertVerdicts({
            (vm, self.host1): (r.DELETED_INSTANCE, r.DELETE_CONSUMER),
            (vm, foreign): (r.UNMANAGED_PROVIDER, FINE)})

    def test_ironic_node_custom_resource_class(self):
        node_name = cloud_mod.uuid('ironic-node')
        node = self.cloud.node('ironic-compute', node=node_name)
        vm = self.cloud.instance('ironic-compute', node=node_name)
        gone = self.cloud.instance('ironic-compute', node=node_name,
                                   deleted=True)
        self.cloud.alloc(vm, node, CUSTOM_BAREMETAL_GOLD=1)
        self.cloud.alloc(gone, node, CUSTOM_BAREMETAL_GOLD=1)
        self.assertVerdicts({
            (vm, node): (r.ACTIVE_INSTANCE, FINE),
            (gone, node): (r.DELETED_INSTANCE, r.DELETE_CONSUMER)})

    def test_ironic_node_taken_over_by_another_compute_service(self):
        # The node row moved to ironic-b; the instance still names
        # ironic-a, but its compute_id still points at the node.
        node_name = cloud_mod.uuid('ironic-node')
        node = self.cloud.node('ironic-b', node=node_name)
        vm = self.cloud.instance('ironic-a', node=node_name,
                                 compute_node=node)
        self.cloud.alloc(vm, node, CUSTOM_BAREMETAL_GOLD=1)
        self.assertVerdicts({(vm, node): (r.ACTIVE_INSTANCE, FINE)})

    def test_deleted_compute_node_tree_is_still_nova(self):
        # A service deleted while allocations remained orphaned its
        # provider (mailing-list thread); its leftovers are still nova's.
        old = self.cloud.node('host3', deleted=True)
        vm = self.cloud.instance('host2')
        self.cloud.migration(vm, 'done', 'evacuation', 'host3', 'host2')
        self.cloud.alloc(vm, old)
        self.cloud.alloc(vm, self.host2)
        self.assertEqual((r.EVACUATED_SOURCE, r.REMOVE_PROVIDER),
                         self.cloud.verdicts()[(vm, old)])


ZUN = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'


class ForeignConsumerTestCase(ClassifyTestCase):
    """rules.unmanaged_consumer: what placement's record or the
    operator says is another service's.
    """

    def setUp(self):
        super().setUp()
        self.cloud.nova.foreign = foreign_mod.declared(projects=[ZUN])

    def details(self):
        return {(f.consumer, f.resource_provider): f.details
                for f in self.cloud.findings()}

    def test_foreign_project_on_a_nova_node(self):
        # Zun sharing nova's hosts: the container's uuid, the user's
        # project, no consumer type; the real orphan next to it goes.
        container = cloud_mod.uuid('container')
        self.cloud.alloc(container, self.host1)
        self.cloud.record(container, project=ZUN, type_='unknown')
        stranger = cloud_mod.uuid('stranger')
        self.cloud.alloc(stranger, self.host1)
        self.cloud.record(stranger, type_='unknown')
        self.assertVerdicts({
            (container, self.host1): (r.UNMANAGED_CONSUMER, FINE),
            (stranger, self.host1): (r.UNKNOWN_CONSUMER,
                                     r.DELETE_CONSUMER)})
        self.assertEqual(
            'No nova record has this uuid, and its project %s is declared '
            'foreign (foreign projects): another service\'s consumer.' %
            ZUN, self.details()[(container, self.host1)])

    def test_foreign_project_on_a_deleted_compute_node(self):
        old = self.cloud.node('host3', deleted=True)
        container = cloud_mod.uuid('container')
        self.cloud.alloc(container, old)
        self.cloud.record(container, project=ZUN)
        self.assertVerdicts(
            {(container, old): (r.UNMANAGED_CONSUMER, FINE)})

    def test_novas_own_in_a_foreign_project_are_judged(self):
        # An amphora is a server: its leftovers are nova's orphans.
        gone = self.cloud.instance('host1', deleted=True, vm_state='deleted')
        self.cloud.alloc(gone, self.host1)
        self.cloud.record(gone, project=ZUN)
        mapped = cloud_mod.uuid('mapped')
        self.cloud.map(mapped, 'cell1')
        self.cloud.alloc(mapped, self.host1)
        self.cloud.record(mapped, project=ZUN)
        self.assertVerdicts({
            (gone, self.host1): (r.DELETED_INSTANCE, r.DELETE_CONSUMER),
            (mapped, self.host1): (r.UNKNOWN_CONSUMER, r.DELETE_CONSUMER)})

    def test_consumer_types_not_novas(self):
        # Any type nova never writes; one the operator lists says so.
        for listed, why in (
                ((), 'placement records its consumer type as CONTAINER, '
                     'which nova never writes'),
                (('CONTAINER',), 'its consumer type CONTAINER is declared '
                                 'foreign (foreign consumer types)')):
            self.cloud = cloud_mod.Cloud()
            self.host1 = self.cloud.node('host1')
            self.cloud.nova.foreign = foreign_mod.declared(
                consumer_types=listed)
            container = cloud_mod.uuid('container')
            self.cloud.alloc(container, self.host1)
            self.cloud.record(container, type_='CONTAINER')
            self.assertVerdicts(
                {(container, self.host1): (r.UNMANAGED_CONSUMER, FINE)})
            self.assertEqual(
                'No nova record has this uuid, and %s: another service\'s '
                'consumer.' % why, self.details()[(container, self.host1)])

    def test_novas_types_untyped_and_unread_are_judged(self):
        expected = {}
        for type_ in ('INSTANCE', 'MIGRATION', 'unknown', None):
            stranger = cloud_mod.uuid('stranger')
            self.cloud.alloc(stranger, self.host1)
            self.cloud.record(stranger, type_=type_)
            expected[(stranger, self.host1)] = (r.UNKNOWN_CONSUMER,
                                                r.DELETE_CONSUMER)
        unread = cloud_mod.uuid('unread')
        self.cloud.alloc(unread, self.host1)
        expected[(unread, self.host1)] = (r.UNKNOWN_CONSUMER,
                                          r.DELETE_CONSUMER)
        self.assertVerdicts(expected)

    def test_a_down_cell_comes_first(self):
        self.cloud.add_cell('cell2', readable=False)
        container = cloud_mod.uuid('container')
        self.cloud.alloc(container, self.host1)
        self.cloud.record(container, project=ZUN)
        self.assertVerdicts(
            {(container, self.host1): (r.UNVERIFIABLE, FINE)})

    def test_no_site_rule_comes_before(self):
        container = cloud_mod.uuid('container')
        self.cloud.alloc(container, self.host1)
        self.cloud.record(container, project=ZUN)

        def greedy(ctx):
            return rules.Verdict(r.UNKNOWN_CONSUMER, r.DELETE_CONSUMER, 'x')

        chain = site_rules.PROTECTIVE + (greedy,) + rules.DEFAULT_RULES
        self.assertVerdicts(
            {(container, self.host1): (r.UNMANAGED_CONSUMER, FINE)},
            rules=chain)


class ForeignDeclarationTestCase(base.BaseTestCase):

    def test_ids_and_types(self):
        self.assertEqual(
            model.Foreign(projects=frozenset([ZUN]),
                          consumer_types=frozenset(['CONTAINER', 'X_1'])),
            foreign_mod.declared([' ' + ZUN.upper()], ['CONTAINER', 'X_1']))
        self.assertEqual(model.Foreign(), foreign_mod.declared())

    def _refused(self, projects=(), types=(), error=exception.ConfigError):
        e = self.assertRaises(error, foreign_mod.declared, projects, types,
                              '[nova_orphans] foreign_projects',
                              '--foreign-consumer-type', error=error)
        return str(e)

    def test_names_are_refused(self):
        self.assertEqual(
            'Configuration error: [nova_orphans] foreign_projects: service '
            'is not a project id '
            '(32 hex digits); project names are not resolved: give the id '
            '("openstack project show -f value -c id NAME")',
            self._refused(projects=[ZUN, 'service']))
        self.assertIn('a1b2c3d4-e5f6',
                      self._refused(projects=['a1b2c3d4-e5f6-0718-293a-'
                                              '4b5c6d7e8f90']))

    def test_bad_types_are_refused(self):
        self.assertEqual(
            'Invalid input: --foreign-consumer-type: unknown is not a '
            'placement consumer '
            'type (upper case letters, digits and _)',
            self._refused(types=['unknown'], error=exception.InvalidInput))
        self.assertEqual(
            'Configuration error: --foreign-consumer-type: INSTANCE is one '
            'of nova\'s own '
            'consumer types', self._refused(types=['INSTANCE']))
        self.assertIn('MIGRATION', self._refused(types=['MIGRATION']))


class ForeignProviderTestCase(ClassifyTestCase):
    """Cyborg's and Blazar's providers, children of nova's nodes."""

    def test_cyborg_device_under_a_nova_node(self):
        fpga = self.cloud.provider('host1_fpga', parent=self.host1,
                                   foreign_owner='OWNER_CYBORG')
        vm = self.cloud.instance('host1')
        self.cloud.alloc(vm, self.host1)
        self.cloud.alloc(vm, fpga, FPGA=1)
        gone = self.cloud.instance('host1', deleted=True,
                                   vm_state='deleted')
        self.cloud.alloc(gone, self.host1)
        self.cloud.alloc(gone, fpga, FPGA=1)
        only = self.cloud.instance('host1', deleted=True, vm_state='deleted')
        self.cloud.alloc(only, fpga, FPGA=1)
        stranger = cloud_mod.uuid('stranger')
        self.cloud.alloc(stranger, fpga, FPGA=1)
        self.assertVerdicts({
            (vm, self.host1): (r.ACTIVE_INSTANCE, FINE),
            (vm, fpga): (r.UNMANAGED_PROVIDER, FINE),
            (gone, self.host1): (r.DELETED_INSTANCE, r.DELETE_CONSUMER),
            (gone, fpga): (r.UNMANAGED_PROVIDER, FINE),
            # Nothing on nova's providers: still not nova's to judge.
            (only, fpga): (r.UNMANAGED_PROVIDER, FINE),
            (stranger, fpga): (r.UNMANAGED_PROVIDER, FINE)})
        self.assertEqual(
            {'The provider carries OWNER_CYBORG: another service\'s, never '
             'judged nova\'s.'},
            {f.details for f in self.cloud.findings()
             if f.resource_provider == fpga})

    def test_blazar_reservation_provider(self):
        blazar = self.cloud.provider('blazar_host1', parent=self.host1,
                                     foreign_owner='blazar')
        vm = self.cloud.instance('host1', deleted=True, vm_state='deleted')
        self.cloud.alloc(vm, blazar, CUSTOM_RESERVATION_0A1B=1)
        finding, = self.cloud.findings()
        self.assertEqual(
            (r.UNMANAGED_PROVIDER, FINE, 'The provider is Blazar\'s '
             'reservation provider (blazar_<host>): another service\'s, '
             'never judged nova\'s.'),
            (finding.reason, finding.action, finding.details))


class DownCellTestCase(ClassifyTestCase):

    def setUp(self):
        super().setUp()
        self.cloud.add_cell('cell2', readable=False)

    def test_consumer_mapped_to_down_cell(self):
        vm = cloud_mod.uuid('vm')
        self.cloud.map(vm, 'cell2')
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts({(vm, self.host1): (r.UNVERIFIABLE, FINE)})

    def test_unknown_consumer_while_a_cell_is_down(self):
        stranger = cloud_mod.uuid('stranger')
        self.cloud.alloc(stranger, self.host1)
        self.assertVerdicts(
            {(stranger, self.host1): (r.UNVERIFIABLE, FINE)})

    def test_provider_possibly_in_down_cell(self):
        unknown_node = self.cloud.provider('host9')
        vm = self.cloud.instance('host1', deleted=True)
        self.cloud.alloc(vm, unknown_node)
        self.assertVerdicts({(vm, unknown_node): (r.UNVERIFIABLE, FINE)})

    def test_readable_cells_are_still_judged(self):
        vm = self.cloud.instance('host1', deleted=True)
        self.cloud.alloc(vm, self.host1)
        self.assertVerdicts(
            {(vm, self.host1): (r.DELETED_INSTANCE, r.DELETE_CONSUMER)})


class FindingTestCase(ClassifyTestCase):

    def test_finding_has_exactly_the_contract_keys(self):
        vm = self.cloud.instance('host2')
        mig = self.cloud.migration(vm, 'done', 'evacuation', 'host1',
                                   'host2')
        self.cloud.alloc(vm, self.host1, VCPU=2, MEMORY_MB=1024)
        self.cloud.alloc(vm, self.host2, VCPU=2, MEMORY_MB=1024)
        finding = [f for f in self.cloud.findings() if f.is_orphan][0]
        self.assertEqual({
            'consumer': vm, 'consumer_type': 'instance', 'instance': vm,
            'resource_provider': self.host1,
            'resource_provider_name': 'host1', 'root_provider': self.host1,
            'host': 'host1', 'cell': 'cell1', 'reason': 'evacuated_source',
            'action': 'remove_provider',
            'resources': {'VCPU': 2, 'MEMORY_MB': 1024},
            'project_id': cloud_mod.PROJECT, 'user_id': cloud_mod.USER,
            'details': 'Evacuated from host1 to host2 by migration %s '
                       '(done); the instance now runs on host2.' % mig,
        }, finding.to_dict())

    def test_migration_consumer_names_its_instance(self):
        vm = self.cloud.instance('host2')
        mig = self.cloud.migration(vm, 'confirmed', 'resize', 'host1',
                                   'host2')
        self.cloud.alloc(mig, self.host1)
        self.cloud.alloc(vm, self.host2)
        finding = [f for f in self.cloud.findings() if f.is_orphan][0]
        self.assertEqual(('migration', vm),
                         (finding.consumer_type, finding.instance))

    def test_unknown_consumer_uses_placement_type(self):
        from nova_orphans.engine import model
        stranger = cloud_mod.uuid('stranger')
        self.cloud.alloc(stranger, self.host1)
        self.cloud.placement.consumers[stranger] = model.Consumer(
            stranger, project_id='p', user_id='u', generation=3,
            consumer_type='MIGRATION')
        finding, = self.cloud.findings()
        self.assertEqual(('migration', None, 'p', 'u'),
                         (finding.consumer_type, finding.instance,
                          finding.project_id, finding.user_id))


class RuleChainTestCase(ClassifyTestCase):

    def test_site_rule_runs_first(self):
        stranger = cloud_mod.uuid('stranger')
        self.cloud.alloc(stranger, self.host1)

        def ignore(ctx):
            if ctx.allocation.consumer == stranger:
                return rules.Verdict(r.UNMANAGED_PROVIDER, r.NONE, 'ignored')

        chain = (ignore,) + rules.DEFAULT_RULES
        self.assertVerdicts(
            {(stranger, self.host1): (r.UNMANAGED_PROVIDER, FINE)},
            rules=chain)

    def test_site_rule_orphans_wait_for_nova(self):
        vm = self.cloud.instance('host1', task_state='resize_reverting')
        self.cloud.alloc(vm, self.host2)

        def greedy(ctx):
            return rules.Verdict(r.STALE_PROVIDER, r.REMOVE_PROVIDER, 'mine')

        chain = site_rules.PROTECTIVE + (site_rules.waiting_for_nova(
            greedy),) + rules.DEFAULT_RULES
        self.assertVerdicts({(vm, self.host2): (r.IN_PROGRESS, FINE)},
                            rules=chain)
        self.cloud.update_instance(vm, task_state=None)
        self.assertVerdicts(
            {(vm, self.host2): (r.STALE_PROVIDER, r.REMOVE_PROVIDER)},
            rules=chain)

    def test_chain_without_catch_all_never_deletes(self):
        stranger = cloud_mod.uuid('stranger')
        self.cloud.alloc(stranger, self.host1)
        self.assertVerdicts({(stranger, self.host1): (r.UNVERIFIABLE, FINE)},
                            rules=(rules.active_instance,))

    def test_decisions_name_the_rule_of_each_consumer(self):
        """What --debug tells: each consumer's allocations, the rule that
        decided each and its verdict, as classify found them (the
        plainly active ones through the chain, not the shortcut).
        """
        vm = self.cloud.instance('host1')
        self.cloud.alloc(vm, self.host1)
        self.cloud.alloc(vm, self.host2)
        gone = self.cloud.instance('host1', deleted=True, vm_state='deleted')
        self.cloud.alloc(gone, self.host1)
        idle = self.cloud.instance('host2')
        stranger = cloud_mod.uuid('stranger')
        self.cloud.alloc(stranger, self.host1)
        snapshot = self.cloud.snapshot()
        decided = {consumer: [(provider, rule, verdict.reason,
                               verdict.action)
                              for provider, rule, verdict in verdicts]
                   for consumer, verdicts in classify.decisions(snapshot)}
        self.assertEqual({
            vm: [(self.host1, 'active_instance', r.ACTIVE_INSTANCE, FINE),
                 (self.host2, 'stale_provider', r.STALE_PROVIDER,
                  r.REMOVE_PROVIDER)],
            gone: [(self.host1, 'deleted_instance', r.DELETED_INSTANCE,
                    r.DELETE_CONSUMER)],
            idle: [(self.host2, r.MISSING_ALLOCATIONS,
                    r.MISSING_ALLOCATIONS, r.HEAL)],
            stranger: [(self.host1, 'unknown_consumer', r.UNKNOWN_CONSUMER,
                        r.DELETE_CONSUMER)]}, decided)
        # Sorted by consumer; the verdicts are classify's.
        self.assertEqual(sorted(decided), [c for c, _v in classify.decisions(
            snapshot)])
        self.assertEqual(
            {(f.consumer, f.resource_provider, f.reason, f.action)
             for f in classify.classify(snapshot)},
            {(c, p, reason, action) for c, verdicts in decided.items()
             for p, _rule, reason, action in verdicts})
        # No rule of a chain without a catch-all: none named.
        [(_c, [(_p, rule, verdict)])] = [
            d for d in classify.decisions(snapshot, (rules.active_instance,))
            if d[0] == stranger]
        self.assertEqual((None, r.UNVERIFIABLE), (rule, verdict.reason))
