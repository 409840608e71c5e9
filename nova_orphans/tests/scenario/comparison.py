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
"""nova-manage placement audit vs nova-orphans, scenario by scenario.

``SCENARIOS`` declares, for every scenario test, what each tool does in
that state. The scenario test (decorated with ``@scenario(key)``)
observes both tools on real nova state and fails unless its observations
equal the declaration; ``test_comparison`` fails unless
``doc/source/admin/comparison.rst`` is exactly ``render()`` and every
declaration has exactly one test. ``tools/comparison.py`` rewrites the
document from here.

This module must not import nova: tools/comparison.py loads it alone.

Allocations are named ``<consumer>@<provider name>``: ``vm1@host1`` is
the allocation of server vm1 on the provider named host1.
"""

import collections
import logging
import re
import textwrap

LOG = logging.getLogger(__name__)

Observed = collections.namedtuple(
    'Observed', 'ours audit_rc audit_flags audit_unknown_nodes audit_delete '
                'osc providers audit_leaves_providers',
    defaults=((), ()))

#: What ``nova-manage placement audit --delete`` did, judged against
#: ``allocations clean`` in the same state: ``removed`` the allocations it
#: deleted or changed, ``problems`` how its result differs from ours
#: (empty: the same result).
AuditDelete = collections.namedtuple('AuditDelete', 'removed problems')

#: ``providers``: (name, reason, action) of every row of ``providers list
#: --all``, for the scenarios about provider trees;
#: ``audit_leaves_providers``: those of them ``providers clean`` deletes
#: and that are still there after ``nova-manage placement audit --delete``.
Scenario = collections.namedtuple('Scenario',
                                  ('title', 'test') + Observed._fields)


def scenario(*keys):
    """Mark a test method as the one that backs SCENARIOS[key] (each key).

    A test backing several keys runs one cycle per key, naming it.
    """
    def decorator(func):
        func.scenario_keys = keys
        return func
    return decorator


def scenario_of(test, key=None):
    """The SCENARIOS key a running test checks now (see ``scenario``)."""
    keys = getattr(getattr(test, test._testMethodName), 'scenario_keys', ())
    if key is None and len(keys) == 1:
        key = keys[0]
    if key not in keys or key not in SCENARIOS:
        test.fail('%s: decorate it with @comparison.scenario(KEY, ...), '
                  'KEY in comparison.SCENARIOS; %r is not' % (test.id(), key))
    return key


def judge_delete(before, after_clean, after_audit, label):
    """Compare audit --delete's result with clean's; see AuditDelete."""
    def pairs(state):
        return {(c, rp): res for c, d in state.items()
                for rp, res in d['allocations'].items()}
    before, clean, audit = pairs(before), pairs(after_clean), pairs(
        after_audit)
    removed = sorted(label(c, rp) for (c, rp), res in before.items()
                     if audit.get((c, rp)) != res)
    problems = []
    for (c, rp), res in sorted(before.items()):
        if clean.get((c, rp)) != res and audit.get((c, rp)) == res:
            problems.append('leaves the orphan %s' % label(c, rp))
        if clean.get((c, rp)) == res and audit.get((c, rp)) != res:
            problems.append('removes the live %s' % label(c, rp))
    for (c, rp), res in sorted(clean.items()):
        if (c, rp) not in before and audit.get((c, rp)) != res:
            problems.append('does not give %s back' % label(c, rp))
    return AuditDelete(tuple(removed), tuple(sorted(problems)))


def osc_differences(manage_rows, osc_rows, label, names):
    """How ``openstack``'s JSON rows differ from nova-orphans-manage's.

    Rows are matched by (consumer, provider). Returns sorted sentences:
    ``<allocation>: <key> <manage value> -> <openstack value>`` for each
    differing key, with uuids in ``names`` replaced by their names;
    ``details`` only when the reason is the same (another reason always
    explains itself differently); ``<allocation>: only in ...`` for
    unmatched rows. A null ``cell`` is no difference: the compute API
    does not name cells.
    """
    def rows_by_key(rows):
        return {(r['consumer'], r['resource_provider']): r for r in rows}

    def show(value):
        if value is None:
            return 'null'
        return names.get(value, value) if isinstance(value, str) else value

    manage, osc = rows_by_key(manage_rows), rows_by_key(osc_rows)
    found = []
    for key in set(manage) | set(osc):
        name = label(*key)
        if key not in osc or key not in manage:
            found.append('%s: only in %s' % (
                name, 'openstack' if key in osc else 'nova-orphans-manage'))
            continue
        ours, theirs = manage[key], osc[key]
        for field in set(ours) | set(theirs):
            mine, other = ours.get(field), theirs.get(field)
            if mine == other or (field == 'cell' and other is None):
                continue
            if field == 'details':
                if ours['reason'] == theirs['reason']:
                    # The texts go to the test's captured log: a failing
                    # comparison shows them.
                    LOG.warning('%s: details differ: nova-orphans-manage '
                                '%r, openstack %r', name, mine, other)
                    found.append('%s: details differ' % name)
                continue
            found.append('%s: %s %s -> %s' % (name, field, show(mine),
                                              show(other)))
    return tuple(sorted(found))


def check(test, observed, key=None):
    """Fail ``test`` unless ``observed`` is what its scenario declares."""
    test.assertEqual(Observed(*SCENARIOS[scenario_of(test, key)][2:]),
                     observed)


def S(title, test, ours, audit_flags=(), audit_unknown_nodes=(),
      audit_problems=(), osc=(), providers=(), audit_leaves_providers=(),
      audit_rc=None, audit_removes=None):
    """One scenario; ``osc`` lists ``osc_differences`` (none: the same).

    By default audit returns 3 if it flags anything (else 0), and its
    ``--delete`` removes what it flags.
    """
    if audit_rc is None:
        audit_rc = 3 if audit_flags else 0
    if audit_removes is None:
        audit_removes = audit_flags
    return Scenario(title, test, tuple(sorted(ours)), audit_rc,
                    tuple(sorted(audit_flags)),
                    tuple(sorted(audit_unknown_nodes)),
                    AuditDelete(tuple(sorted(audit_removes)),
                                tuple(sorted(audit_problems))),
                    tuple(sorted(osc)), tuple(sorted(providers)),
                    tuple(sorted(audit_leaves_providers)))


def _deleted(reason):
    """vm1 on host1 emptied (``reason``), vm0 on host2 live."""
    return dict(ours=[('vm1@host1', reason, 'delete_consumer'),
                      ('vm0@host2', 'active_instance', 'none')],
                audit_flags=['vm1@host1'])


# A move's leftover: the migration's consumer keeps the source.
_LEFTOVER = dict(
    ours=[('migration@host1', 'finished_migration', 'delete_consumer'),
          ('vm1@host2', 'active_instance', 'none')],
    audit_flags=['migration@host1'])
# A failed move: the server back on the source, the target allocated.
_NOT_GIVEN_BACK = dict(
    ours=[('migration@host1', 'finished_migration', 'return_to_instance'),
          ('vm1@host2', 'stale_provider', 'remove_provider')],
    audit_flags=['migration@host1', 'vm1@host2'],
    audit_problems=['does not give vm1@host1 back'])

SCENARIOS = collections.OrderedDict()

# Orphans.
SCENARIOS['evacuated'] = S(
    'Evacuated from a forced-down, fenced host that never comes back '
    '(admin guide)',
    'test_evacuate.EvacuateFromDownHostTest.test_cycle',
    ours=[('vm1@host1', 'evacuated_source', 'remove_provider'),
          ('vm1@host2', 'active_instance', 'none')],
    audit_flags=['vm1@host1'])
SCENARIOS['evacuated_nested'] = S(
    'The same, the server also using a child provider of the source node '
    '(nested, custom resource class)',
    'test_evacuate.EvacuateWithNestedProviderTest.test_cycle',
    ours=[('vm1@host1', 'evacuated_source', 'remove_provider'),
          ('vm1@host1-child', 'evacuated_source', 'remove_provider'),
          ('vm1@host2', 'active_instance', 'none'),
          ('vm1@host2-child', 'active_instance', 'none')],
    audit_flags=['vm1@host1'],
    audit_problems=['leaves the orphan vm1@host1-child'])
SCENARIOS['cold_migration_failed'] = S(
    'A cold migration fails, its clean-up too: the instance is back on the '
    'source, the target stays allocated (runbook, seed 001)',
    'test_migrations.MigrationTest.test_cold_migration_failed',
    **_NOT_GIVEN_BACK)
SCENARIOS['live_migration_failed'] = S(
    'A live migration fails and its rollback cannot move the allocations '
    'back',
    'test_migrations.MigrationTest.test_live_migration_failed',
    **_NOT_GIVEN_BACK)
SCENARIOS['live_migration_post_failed'] = S(
    'A live migration fails after the guest switched hosts '
    '(post_live_migration_at_destination raises): server ERROR on the '
    'destination, migration error, its consumer keeps the source',
    'test_field.LiveMigrationPostFailureTest.'
    'test_post_at_destination_fails',
    **_LEFTOVER)
SCENARIOS['graceful_shutdown_cut_off'] = S(
    'nova-compute stopped while a live migration was in its driver, a '
    'cold migration copying and a build spawning (manager_shutdown_timeout '
    'passed), then started again: the live migration aborted (error), '
    'the cold one left migrating, both servers back on the source',
    'test_field.GracefulShutdownTest.test_cut_off_then_restarted',
    ours=[('migration@host1', 'finished_migration', 'return_to_instance'),
          ('vm1@host2', 'stale_provider', 'remove_provider'),
          ('migration3@host1', 'finished_migration',
           'return_to_instance'),
          ('vm3@host2', 'stale_provider', 'remove_provider'),
          ('vm2@host1', 'active_instance', 'none')],
    audit_flags=['migration@host1', 'vm1@host2', 'vm3@host2'],
    audit_problems=['does not give vm1@host1 back',
                    'does not give vm3@host1 back',
                    'leaves the orphan migration3@host1'])
SCENARIOS['resize_confirm_leak'] = S(
    'A resize is confirmed but the source is not freed (migration '
    'confirmed, its consumer keeps the old flavor)',
    'test_migrations.MigrationTest.test_resize_confirm_leak',
    **_LEFTOVER)
SCENARIOS['resize_revert_failed'] = S(
    'A resize revert fails on the destination (one driver fault): server '
    'ERROR there, migration error, its consumer keeps the source',
    'test_migrations.MigrationTest.test_resize_revert_failed_on_destination',
    **_LEFTOVER)
SCENARIOS['sql_force_deleted'] = S(
    'An ERROR server forced to deleted in SQL (``deleted=1``), its '
    'allocation kept (runbook, seed 003)',
    'test_deleted.DeletedServerTest.test_forced_to_deleted_in_sql',
    **_deleted('deleted_instance'))
SCENARIOS['ironic_custom_rc'] = S(
    'An ironic-style node (custom resource class only): a baremetal '
    'server forced to deleted in SQL, another one live',
    'test_providers.IronicLikeNodeTest.test_baremetal_forced_to_deleted',
    ours=[('vm1@ironic1-node1', 'active_instance', 'none'),
          ('vm2@ironic1-node2', 'deleted_instance', 'delete_consumer')],
    audit_problems=['leaves the orphan vm2@ironic1-node2'])
SCENARIOS['deleted_host_down'] = S(
    'A server deleted while its host was down, placement\'s DELETE lost',
    'test_deleted.DeletedServerTest.test_deleted_then_archived_then_purged',
    **_deleted('deleted_instance'))
SCENARIOS['deleted_archived'] = S(
    'The same after ``nova-manage db archive_deleted_rows`` (only shadow '
    'tables know the server; nova\'s periodic can no longer clean it)',
    'test_deleted.DeletedServerTest.test_deleted_then_archived_then_purged',
    **_deleted('deleted_instance'),
    osc=['vm1@host1: consumer_type instance -> unknown',
         'vm1@host1: instance vm1 -> null',
         'vm1@host1: reason deleted_instance -> unknown_consumer'])
SCENARIOS['deleted_purged'] = S(
    'The same after ``nova-manage db purge --all`` (no trace of the '
    'server anywhere)',
    'test_deleted.DeletedServerTest.test_deleted_then_archived_then_purged',
    **_deleted('unknown_consumer'))
SCENARIOS['shelve_offloaded'] = S(
    'A shelve-offload that did not free the host',
    'test_deleted.DeletedServerTest.test_shelve_offloaded',
    **_deleted('shelved_offloaded'))
SCENARIOS['service_delete_leftover'] = S(
    'The compute service of a host with such a leftover (a confirmed '
    'resize\'s) was deleted: nova 34 answers 204 and leaves the provider '
    'behind, allocation and all (mailing-list thread, seed 002)',
    'test_service_delete.ServiceDeleteTest.test_delete_leaves_the_provider',
    **_LEFTOVER, audit_unknown_nodes=['host1'])
SCENARIOS['service_delete_after_clean'] = S(
    'The same host before the service delete: after ``allocations clean '
    '--host host1`` the delete also removes the provider (seed 002)',
    'test_service_delete.ServiceDeleteTest.test_clean_first_then_delete',
    **_LEFTOVER)

SCENARIOS['provider_service_deleted'] = S(
    'A compute service deleted while its node (with a nested child) holds '
    'a confirmed resize\'s leftover and a consumer nova never had: nova 34 '
    'answers 204 and placement keeps the tree (seed 002)',
    'test_orphan_providers.ServiceDeletedTest.test_service_deleted',
    ours=[('migration@host1', 'finished_migration', 'delete_consumer'),
          ('stranger@host1', 'unknown_consumer', 'delete_consumer'),
          ('stranger@host1-child', 'unknown_consumer', 'delete_consumer'),
          ('vm1@host2', 'active_instance', 'none')],
    audit_flags=['migration@host1', 'stranger@host1'],
    audit_unknown_nodes=['host1'],
    audit_problems=['leaves the orphan stranger@host1-child'],
    providers=[('host1', 'deleted_compute_node', 'delete_provider'),
               ('host1-child', 'deleted_compute_node', 'delete_provider'),
               ('host2', 'live_compute_node', 'none'),
               ('host2-child', 'live_compute_node', 'none')],
    audit_leaves_providers=['host1', 'host1-child'])
SCENARIOS['provider_ironic_node_removed'] = S(
    'An ironic-style node deleted from ironic while a baremetal server '
    'forced to deleted in SQL still holds it: the resource tracker deletes '
    'the compute node, placement keeps the provider',
    'test_orphan_providers.IronicNodeRemovedTest.test_node_removed',
    ours=[('vm1@ironic1-node1', 'active_instance', 'none'),
          ('vm2@ironic1-node2', 'deleted_instance', 'delete_consumer')],
    audit_unknown_nodes=['ironic1-node2'],
    audit_problems=['leaves the orphan vm2@ironic1-node2'],
    osc=['vm2@ironic1-node2: host ironic1 -> null'],
    providers=[('host1', 'live_compute_node', 'none'),
               ('ironic1-node1', 'live_compute_node', 'none'),
               ('ironic1-node2', 'deleted_compute_node', 'delete_provider')],
    audit_leaves_providers=['ironic1-node2'])

# Port bandwidth nova leaks inside a live server.
_BR_EX = 'vm1@host1:Open vSwitch agent:br-ex'
_BR_PHYS3 = 'vm1@host1:Open vSwitch agent:br-phys3'
_LEAKED = [('vm1@host1', 'active_instance', 'none'),
           (_BR_EX, 'leaked_port_allocation', 'trim_provider'),
           (_BR_PHYS3, 'active_instance', 'none'),
           ('vm2@host1', 'active_instance', 'none')]
SCENARIOS['port_detach_leak'] = S(
    'A port with a minimum-bandwidth request is detached; placement keeps '
    'answering the removal of its bandwidth with generation conflicts '
    '(nova: ``AllocationUpdateFailed``, "you can use nova-manage placement '
    'audit")',
    'test_port_leaks.PortLeakTest.test_detach_cleanup_fails',
    ours=_LEAKED, audit_problems=['leaves the orphan %s' % _BR_EX])
SCENARIOS['port_attach_rollback_leak'] = S(
    'The same port\'s attach fails in the driver, and so does the removal '
    'of its bandwidth when nova rolls the attach back',
    'test_port_leaks.PortLeakTest.test_attach_rollback_fails',
    ours=_LEAKED, audit_problems=['leaves the orphan %s' % _BR_EX])
SCENARIOS['port_deleted_leak'] = S(
    'neutron deletes the bound port (``network-vif-deleted``; nova: "the '
    'resource allocation ... are leaked until the server ... is deleted")',
    'test_port_leaks.PortLeakTest.test_bound_port_deleted_in_neutron',
    ours=_LEAKED, audit_problems=['leaves the orphan %s' % _BR_EX])
SCENARIOS['port_deleted_only_port_leak'] = S(
    'neutron deletes the server\'s only port, bound with a '
    'minimum-bandwidth request: nova\'s info cache is left empty, and '
    'neutron binds no port to the server',
    'test_port_leaks.PortLeakTest.test_only_port_deleted_in_neutron',
    ours=[('vm1@host1', 'active_instance', 'none'),
          (_BR_EX, 'leaked_port_allocation', 'trim_provider'),
          ('vm2@host1', 'active_instance', 'none')],
    audit_problems=['leaves the orphan %s' % _BR_EX])

# Look-alikes.
SCENARIOS['resize_unconfirmed'] = S(
    'A resize awaiting confirmation (VERIFY_RESIZE)',
    'test_lookalikes.LookAlikeTest.test_resize_awaiting_confirm',
    ours=[('migration@host1', 'active_migration', 'none'),
          ('vm1@host2', 'active_instance', 'none')])
SCENARIOS['evacuation_in_progress'] = S(
    'An evacuation in progress (paused while the destination spawns)',
    'test_lookalikes.LookAlikeTest.test_evacuation_in_progress',
    ours=[('vm1@host1', 'active_instance', 'none'),
          ('vm1@host2', 'active_migration', 'none')],
    audit_flags=['vm1@host2'],
    audit_problems=['removes the live vm1@host2'])
SCENARIOS['live_migration_in_progress'] = S(
    'A live migration in progress (paused in the driver)',
    'test_lookalikes.LookAlikeTest.test_live_migration_in_progress',
    ours=[('migration@host1', 'active_migration', 'none'),
          ('vm1@host2', 'active_migration', 'none')],
    audit_flags=['vm1@host2'],
    audit_problems=['removes the live vm1@host2'])
SCENARIOS['scheduling'] = S(
    'A server just scheduled, not yet in its cell (paused before the '
    'instance row is created: build request, allocation)',
    'test_lookalikes.LookAlikeTest.test_scheduled_not_yet_in_cell',
    ours=[('vm1@host1', 'building', 'none')],
    audit_flags=['vm1@host1'],
    audit_problems=['removes the live vm1@host1'])
SCENARIOS['building'] = S(
    'A server being built (paused while the compute spawns it)',
    'test_lookalikes.LookAlikeTest.test_building',
    ours=[('vm1@host1', 'building', 'none')])
SCENARIOS['unshelving'] = S(
    'A shelved-offloaded server being unshelved (paused while it spawns)',
    'test_lookalikes.LookAlikeTest.test_unshelving',
    ours=[('vm1@host1', 'active_instance', 'none')])
SCENARIOS['soft_deleted'] = S(
    'A soft-deleted server (``reclaim_instance_interval`` > 0)',
    'test_lookalikes.LookAlikeTest.test_soft_deleted',
    ours=[('vm1@host1', 'soft_deleted', 'none')])
SCENARIOS['bandwidth_port'] = S(
    'A server with a minimum-bandwidth port: bandwidth allocated on the '
    'OVS bridge, a grandchild of the compute node',
    'test_lookalikes.LookAlikeTest.test_port_bandwidth_on_child_provider',
    ours=[('vm1@host1', 'active_instance', 'none'),
          ('vm1@host1:Open vSwitch agent:br-ex', 'active_instance', 'none')])
SCENARIOS['sharing_provider'] = S(
    'A server whose disk is on a sharing provider (DISK_GB shared through '
    'an aggregate)',
    'test_providers.SharingDiskProviderTest.test_server_on_shared_disk',
    ours=[('vm1@host1', 'active_instance', 'none'),
          ('vm1@shared-disk', 'active_instance', 'none')],
    audit_flags=['vm1@shared-disk'],
    audit_unknown_nodes=['shared-disk'],
    audit_problems=['removes the live vm1@shared-disk'])
SCENARIOS['foreign_provider'] = S(
    'A provider of another service (a Zun container host, VCPU and '
    'MEMORY_MB) with its own consumer',
    'test_lookalikes.LookAlikeTest.test_provider_of_another_service',
    ours=[('vm1@host1', 'active_instance', 'none'),
          ('container1@zun-host1', 'unmanaged_provider', 'none')],
    audit_flags=['container1@zun-host1'],
    audit_unknown_nodes=['zun-host1'],
    audit_problems=['removes the live container1@zun-host1'])
SCENARIOS['cell_down'] = S(
    'A cell whose database is down (for both tools)',
    'test_lookalikes.LookAlikeTest.test_cell_database_down',
    ours=[('vm1@host1', 'unverifiable', 'none'),
          ('vm2@host2', 'unverifiable', 'none')],
    audit_flags=['vm1@host1', 'vm2@host2'],
    audit_unknown_nodes=['host1', 'host2'],
    audit_problems=['removes the live vm1@host1',
                    'removes the live vm2@host2'],
    osc=['vm1@host1: cell cell1 -> (down)', 'vm1@host1: details differ',
         'vm2@host2: cell cell1 -> (down)', 'vm2@host2: details differ'])

SCENARIOS['provider_lookalikes'] = S(
    'Providers next to an orphaned one: a live node, a disabled and a '
    'forced-down service\'s nodes, a node in another cell, a sharing '
    'provider, a neutron agent\'s tree; host4 deleted (a stranger\'s '
    'allocation kept its provider) and reinstalled under its name with a '
    'new node uuid',
    'test_orphan_providers.LookAlikeProvidersTest.test_lookalikes',
    ours=[('vm-host1@host1', 'active_instance', 'none'),
          ('vm-host2@host2', 'active_instance', 'none'),
          ('vm-host3@host3', 'active_instance', 'none'),
          ('vm-host5@host5', 'active_instance', 'none'),
          ('port1@netnode1:ovs-agent:br-ex', 'unmanaged_provider',
           'none'),
          ('stranger@host4', 'unknown_consumer', 'delete_consumer')],
    audit_flags=['port1@netnode1:ovs-agent:br-ex', 'stranger@host4'],
    audit_unknown_nodes=['host4', 'netnode1:ovs-agent', 'shared-disk'],
    audit_problems=['removes the live port1@netnode1:ovs-agent:br-ex'],
    osc=['stranger@host4: host host4 -> null'],
    providers=[('host1', 'live_compute_node', 'none'),
               ('host2', 'live_compute_node', 'none'),
               ('host3', 'live_compute_node', 'none'),
               ('host5', 'live_compute_node', 'none'),
               ('shared-disk', 'unmanaged', 'none'),
               ('netnode1:ovs-agent', 'unmanaged', 'none'),
               ('netnode1:ovs-agent:br-ex', 'unmanaged', 'none'),
               ('host4', 'deleted_compute_node', 'delete_provider')],
    audit_leaves_providers=['host4'])

# Port bandwidth that looks leaked and is not.
_VM1_HOST2 = ['vm1@host2', 'vm1@host2:Open vSwitch agent:br-ex',
              'vm1@host2:Open vSwitch agent:br-phys3']
_PORTS_LIVE = [('vm1@host1', 'active_instance', 'none'),
               (_BR_PHYS3, 'active_instance', 'none')]
SCENARIOS['port_attach_in_progress'] = S(
    'A port with a minimum-bandwidth request being attached (paused after '
    'nova allocated its bandwidth, before it bound the port)',
    'test_port_leaks.PortLookAlikeTest.test_attach_in_progress',
    ours=_PORTS_LIVE + [(_BR_EX, 'in_progress', 'none')])
SCENARIOS['port_detach_in_progress'] = S(
    'Such a port being detached (paused after nova unbound it, before it '
    'removed its bandwidth)',
    'test_port_leaks.PortLookAlikeTest.test_detach_in_progress',
    ours=_PORTS_LIVE + [(_BR_EX, 'in_progress', 'none')])
SCENARIOS['port_live_migration_in_progress'] = S(
    'A server with two such ports being live-migrated (paused in the '
    'driver; the ports still bound on the source)',
    'test_port_leaks.PortLookAlikeTest.test_live_migration_in_progress',
    ours=[('%s@host%d%s' % (who, n, br), 'active_migration', 'none')
          for who, n in (('migration', 1), ('vm1', 2))
          for br in ('', ':Open vSwitch agent:br-ex',
                     ':Open vSwitch agent:br-phys3')],
    audit_flags=_VM1_HOST2,
    audit_problems=['removes the live %s' % a for a in _VM1_HOST2])
SCENARIOS['port_info_cache_empty'] = S(
    'A server with two such ports whose info cache is empty (both tools '
    'ask neutron, which still binds both ports to it)',
    'test_port_leaks.PortLookAlikeTest.test_info_cache_empty',
    ours=[('vm1@host1', 'active_instance', 'none'),
          (_BR_EX, 'active_instance', 'none'),
          (_BR_PHYS3, 'active_instance', 'none')])
SCENARIOS['port_extended_request'] = S(
    'A server whose port asks for bandwidth and packet rate in two request '
    'groups (neutron\'s extended resource request: the binding\'s '
    '``allocation`` maps each group to its provider)',
    'test_port_leaks.ExtendedResourceRequestTest.test_settled',
    ours=_PORTS_LIVE + [(_BR_EX, 'active_instance', 'none'),
                        ('vm1@host1:Open vSwitch agent', 'active_instance',
                         'none')])
SCENARIOS['flavor_claimed_children'] = S(
    'A server whose flavor asks for a vGPU (``resources:VGPU``, on the '
    'physical GPU\'s child provider, as libvirt reports it) and for '
    'bandwidth in a granular group (on a bridge; no port)',
    'test_port_leaks.FlavorClaimedChildrenTest.test_settled',
    ours=[('vm1@host1', 'active_instance', 'none'),
          ('vm1@host1_pci_0000_06_00_0', 'active_instance', 'none'),
          (_BR_PHYS3, 'active_instance', 'none')])
SCENARIOS['port_extended_deleted_leak'] = S(
    'neutron deletes a bound port whose bandwidth and packet rate are two '
    'request groups (extended resource request): both providers leak',
    'test_port_leaks.ExtendedResourceRequestTest.'
    'test_bound_port_deleted_in_neutron',
    ours=[('vm1@host1', 'active_instance', 'none'),
          (_BR_EX, 'leaked_port_allocation', 'trim_provider'),
          ('vm1@host1:Open vSwitch agent', 'leaked_port_allocation',
           'trim_provider'),
          (_BR_PHYS3, 'active_instance', 'none')],
    audit_problems=['leaves the orphan %s' % a for a in (
        _BR_EX, 'vm1@host1:Open vSwitch agent')])

# -- rendering ---------------------------------------------------------------

TITLE = 'Comparison with ``nova-manage placement audit``'

INTRO = """\
``nova-manage placement audit`` is nova's own tool for orphaned
allocations. Both tools were run on the same states, each made by real
nova operations in nova's functional test harness (API, conductor,
scheduler and fake-driver computes against a real placement), with a
fault injected only where nova needs a failure to leak. Every cell of
the tables below is asserted by the scenario test named in it
(``nova_orphans/tests/scenario``), which fails when the claim stops
being true.

How to read them:

* ``vm1@host1`` is the allocation of consumer ``vm1`` (a server;
  ``migration`` is a migration record's consumer, ``container1`` another
  service's) on the resource provider named ``host1``.
* *nova-manage placement audit*: its return code and the allocations
  ``--verbose`` says "can be deleted"; then what ``--delete`` really
  removed or changed in placement, and whether placement ends up the
  same as after nova-orphans' ``allocations clean``.
* *nova-orphans*: the reason and action of every allocation in
  ``nova-orphans-manage allocations list --all``. Orphans are the rows
  whose action is not ``none``. In every scenario the test also checked
  that ``allocations clean`` changed exactly the orphans (every other
  allocation byte for byte the same) and that ``allocations restore``
  put placement back exactly as it was.
* *openstack allocation orphan list*: the OpenStackClient plugin, which
  reads nova through the compute API instead of its databases, run with
  ``--all -f json`` in the same state (through nova's own API in the
  harness). "The same rows" means its JSON equals
  ``nova-orphans-manage``'s row for row and key for key, except
  ``cell``, which it leaves null (the compute API does not name
  cells). Otherwise every key that differs is listed, as
  nova-orphans-manage's value → the plugin's.
* *providers list --all*, in the states about resource provider trees:
  the reason and action of every provider in ``nova-orphans-manage
  providers list --all``. The test also checked that ``providers clean``
  deleted exactly the trees marked ``delete_provider`` (every other
  provider, inventory, trait, aggregate, allocation and generation the
  same) and that ``allocations restore`` re-created them as they were
  (generations aside).
  ``nova-manage placement audit`` has no provider clean-up; the trees
  still in placement after its ``--delete`` are named.
"""

_PROBLEM_KINDS = (
    ('leaves the orphan', 'leaves orphans behind'),
    ('does not give', 'deletes a failed migration\'s allocation instead '
                      'of giving it back to its server'),
    ('removes the live', 'removes live allocations'),
)


def _rst_code(text):
    """A problem's allocation label as code (provider names have spaces).
    """
    m = re.match(r'^((?:[^@ ]+ )*)(\S*@.*?)( back)?$', text)
    if m is None:
        return text
    return '%s``%s``%s' % (m.group(1), m.group(2), m.group(3) or '')


def _audit_cell(s):
    lines = []
    if s.audit_rc == 0:
        lines.append('rc 0: finds nothing.')
    else:
        lines.append('rc %d: flags %s.' % (
            s.audit_rc, ', '.join('``%s``' % a for a in s.audit_flags)))
    if s.audit_unknown_nodes:
        lines.append('Says the compute node of %s "can not be found".' %
                     ', '.join('``%s``' % n for n in s.audit_unknown_nodes))
    if s.audit_delete.removed:
        lines.append('``--delete`` removes %s.' % ', '.join(
            '``%s``' % a for a in s.audit_delete.removed))
    else:
        lines.append('``--delete`` changes nothing.')
    if s.audit_delete.problems:
        lines.append('**Wrong**: %s.' % '; '.join(
            _rst_code(p) for p in s.audit_delete.problems))
    else:
        lines.append('Same result as ``allocations clean``.')
    if s.audit_leaves_providers:
        lines.append('No provider clean-up: %s stay%s in placement.' % (
            ', '.join('``%s``' % n for n in s.audit_leaves_providers),
            '' if len(s.audit_leaves_providers) > 1 else 's'))
    return lines


def _ours_cell(s):
    lines = []
    for label, reason, action in s.ours:
        if action != 'none':
            lines.append('``%s``: ``%s`` → ``%s``' % (label, reason, action))
    for label, reason, action in s.ours:
        if action == 'none':
            lines.append('``%s``: ``%s``, untouched' % (label, reason))
    if s.providers:
        lines.append('*providers list --all*: %s.' % '; '.join(
            '``%s``: ``%s`` → ``%s``' % p if p[2] != 'none' else
            '``%s``: ``%s``, untouched' % p[:2] for p in sorted(
                s.providers, key=lambda p: (p[2] == 'none', p))))
    if s.osc:
        lines.append('*openstack allocation orphan list* differs: %s.' %
                     '; '.join(_osc_code(d) for d in s.osc))
    else:
        lines.append('*openstack allocation orphan list*: the same rows.')
    return lines


def _osc_code(difference):
    """``vm1@host1: reason a -> b`` as reStructuredText."""
    name, _sep, what = difference.partition(': ')
    words = what.split(' ')
    if len(words) == 4 and words[2] == '->':
        what = '%s ``%s`` → ``%s``' % (words[0], words[1], words[3])
    return '``%s``: %s' % (name, what)


def _item(first, paragraphs):
    """One list-table cell: paragraphs wrapped at 79 columns."""
    out = []
    for i, text in enumerate(paragraphs):
        if i:
            out.append('')
        out.append(textwrap.fill(
            text, 79, initial_indent=first if i == 0 else ' ' * 7,
            subsequent_indent=' ' * 7, break_long_words=False,
            break_on_hyphens=False))
    return '\n'.join(out)


def _summary(scenarios):
    wrong = [s for s in scenarios.values() if s.audit_delete.problems]
    counts = []
    for prefix, words in _PROBLEM_KINDS:
        n = sum(1 for s in wrong
                if any(p.startswith(prefix) for p in s.audit_delete.problems))
        if n:
            counts.append('%s (%d)' % (words, n))
    return textwrap.fill(
        'In %d of these %d states, ``nova-manage placement audit --delete`` '
        'leaves placement exactly as ``nova-orphans-manage allocations '
        'clean`` does. In the other %d it does not: it %s.' % (
            len(scenarios) - len(wrong), len(scenarios), len(wrong),
            ', '.join(counts)), 79) + '\n\n' + textwrap.fill(
        '``openstack allocation orphan list`` gave the same rows as '
        '``nova-orphans-manage allocations list`` in %d of the %d states, '
        'and the same action for every allocation in %d; where the compute '
        'API shows less than nova\'s databases, the differences are listed '
        'with the state.' % (
            sum(1 for s in scenarios.values() if not s.osc),
            len(scenarios),
            sum(1 for s in scenarios.values()
                if not any(_changes_action(d) for d in s.osc))),
        79, break_on_hyphens=False) + '\n' + _provider_summary(scenarios)


def _provider_summary(scenarios):
    trees = [s for s in scenarios.values()
             if any(p[2] != 'none' for p in s.providers)]
    if not trees:
        return ''
    return '\n' + textwrap.fill(
        'In %d of the %d states with a provider tree nova left behind, '
        '``nova-manage placement audit --delete`` left the tree in '
        'placement; ``nova-orphans-manage providers clean`` deleted it in '
        'all %d.' % (
            sum(1 for s in trees if s.audit_leaves_providers), len(trees),
            len(trees)),
        79, break_on_hyphens=False) + '\n'


def _changes_action(difference):
    what = difference.partition(': ')[2]
    return what.startswith(('action ', 'only in '))


def _sections(scenarios):
    orphans = [k for k, s in scenarios.items()
               if any(o[2] != 'none' for o in s.ours)]
    fine = [k for k in scenarios if k not in orphans]
    return [(t, ks) for t, ks in (
        ('Orphans made by nova operations', orphans),
        ('Look-alikes that must stay untouched', fine)) if ks]


def render(scenarios=None):
    """The text of doc/source/admin/comparison.rst."""
    scenarios = SCENARIOS if scenarios is None else scenarios
    out = [
        '.. This file is generated by tools/comparison.py from\n'
        '   nova_orphans/tests/scenario/comparison.py; test_comparison\n'
        '   fails when they differ. Do not edit it by hand.\n',
        '=' * len(TITLE) + '\n' + TITLE + '\n' + '=' * len(TITLE) + '\n',
        INTRO, _summary(scenarios)]
    for section, keys in _sections(scenarios):
        rows = ['.. list-table::\n   :header-rows: 1\n   :widths: 30 38 32\n',
                '   * - Scenario\n     - nova-manage placement audit\n'
                '     - nova-orphans']
        for key in keys:
            s = scenarios[key]
            rows.append(_item('   * - ', [s.title, '(``%s``)' % s.test]))
            rows.append(_item('     - ', _audit_cell(s)))
            rows.append(_item('     - ', _ours_cell(s)))
        out.append(section + '\n' + '-' * len(section) + '\n\n' +
                   '\n'.join(rows) + '\n')
    return '\n'.join(out)
