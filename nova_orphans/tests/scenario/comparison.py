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

Observed = collections.namedtuple(
    'Observed', 'ours audit_rc audit_flags audit_unknown_nodes audit_delete')
Observed.__new__.__defaults__ = (None,)

#: What ``nova-manage placement audit --delete`` did, judged against
#: ``allocations clean`` in the same state: ``removed`` the allocations it
#: deleted or changed, ``problems`` how its result differs from ours
#: (empty: the same result).
AuditDelete = collections.namedtuple('AuditDelete', 'removed problems')

Scenario = collections.namedtuple(
    'Scenario', 'title test ours audit_rc audit_flags audit_unknown_nodes '
                'audit_delete')

_REGISTRY = {}


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
    return AuditDelete(tuple(removed), tuple(problems))


def check(test, observed, key=None):
    """Fail ``test`` unless ``observed`` is what its scenario declares."""
    declared = SCENARIOS[scenario_of(test, key)]
    test.assertEqual(
        Observed(declared.ours, declared.audit_rc, declared.audit_flags,
                 declared.audit_unknown_nodes, declared.audit_delete),
        observed)


def S(title, test, ours, audit_rc=0, audit_flags=(), audit_unknown_nodes=(),
      audit_removes=(), audit_problems=()):
    return Scenario(title, test, tuple(sorted(ours)), audit_rc,
                    tuple(sorted(audit_flags)),
                    tuple(sorted(audit_unknown_nodes)),
                    AuditDelete(tuple(sorted(audit_removes)),
                                tuple(audit_problems)))


SCENARIOS = collections.OrderedDict()
SCENARIOS['evacuated'] = S(
    'Evacuated from a forced-down, fenced host that never comes back '
    '(admin guide)',
    'test_evacuate.EvacuateFromDownHostTest.test_cycle',
    ours=[('vm1@host1', 'evacuated_source', 'remove_provider'),
          ('vm1@host2', 'active_instance', 'none')],
    audit_rc=3, audit_flags=['vm1@host1'], audit_removes=['vm1@host1'])
SCENARIOS['evacuated_nested'] = S(
    'The same, the server also using a child provider of the source node '
    '(nested, custom resource class)',
    'test_evacuate.EvacuateWithNestedProviderTest.test_cycle',
    ours=[('vm1@host1', 'evacuated_source', 'remove_provider'),
          ('vm1@host1-child', 'evacuated_source', 'remove_provider'),
          ('vm1@host2', 'active_instance', 'none'),
          ('vm1@host2-child', 'active_instance', 'none')],
    audit_rc=3, audit_flags=['vm1@host1'], audit_removes=['vm1@host1'],
    audit_problems=['leaves the orphan vm1@host1-child'])
SCENARIOS['cold_migration_failed'] = S(
    'A cold migration fails, its clean-up too: the instance is back on the '
    'source, the target stays allocated (runbook, seed 001)',
    'test_migrations.MigrationTest.test_cold_migration_failed',
    ours=[('migration@host1', 'finished_migration', 'return_to_instance'),
          ('vm1@host2', 'stale_provider', 'remove_provider')],
    audit_rc=3, audit_flags=['migration@host1', 'vm1@host2'],
    audit_removes=['migration@host1', 'vm1@host2'],
    audit_problems=['does not give vm1@host1 back'])
SCENARIOS['live_migration_failed'] = S(
    'A live migration fails and its rollback cannot move the allocations '
    'back',
    'test_migrations.MigrationTest.test_live_migration_failed',
    ours=[('migration@host1', 'finished_migration', 'return_to_instance'),
          ('vm1@host2', 'stale_provider', 'remove_provider')],
    audit_rc=3, audit_flags=['migration@host1', 'vm1@host2'],
    audit_removes=['migration@host1', 'vm1@host2'],
    audit_problems=['does not give vm1@host1 back'])
SCENARIOS['resize_confirm_leak'] = S(
    'A resize is confirmed but the source is not freed (migration '
    'confirmed, its consumer keeps the old flavor)',
    'test_migrations.MigrationTest.test_resize_confirm_leak',
    ours=[('migration@host1', 'finished_migration', 'delete_consumer'),
          ('vm1@host2', 'active_instance', 'none')],
    audit_rc=3, audit_flags=['migration@host1'],
    audit_removes=['migration@host1'])
SCENARIOS['resize_failed_on_dest'] = S(
    'A resize errors on the destination and the source is not freed '
    '(migration error, server ERROR on the destination)',
    'test_migrations.MigrationTest.test_resize_failed_on_destination',
    ours=[('migration@host1', 'finished_migration', 'delete_consumer'),
          ('vm1@host2', 'active_instance', 'none')],
    audit_rc=3, audit_flags=['migration@host1'],
    audit_removes=['migration@host1'])
SCENARIOS['sql_force_deleted'] = S(
    'An ERROR server forced to deleted in SQL (``deleted=1``), its '
    'allocation kept (runbook, seed 003)',
    'test_deleted.DeletedServerTest.test_forced_to_deleted_in_sql',
    ours=[('vm1@host1', 'deleted_instance', 'delete_consumer'),
          ('vm0@host2', 'active_instance', 'none')],
    audit_rc=3, audit_flags=['vm1@host1'], audit_removes=['vm1@host1'])
SCENARIOS['deleted_host_down'] = S(
    'A server deleted while its host was down, placement\'s DELETE lost',
    'test_deleted.DeletedServerTest.test_deleted_then_archived_then_purged',
    ours=[('vm1@host1', 'deleted_instance', 'delete_consumer'),
          ('vm0@host2', 'active_instance', 'none')],
    audit_rc=3, audit_flags=['vm1@host1'], audit_removes=['vm1@host1'])
SCENARIOS['deleted_archived'] = S(
    'The same after ``nova-manage db archive_deleted_rows`` (only shadow '
    'tables know the server; nova\'s periodic can no longer clean it)',
    'test_deleted.DeletedServerTest.test_deleted_then_archived_then_purged',
    ours=[('vm1@host1', 'deleted_instance', 'delete_consumer'),
          ('vm0@host2', 'active_instance', 'none')],
    audit_rc=3, audit_flags=['vm1@host1'], audit_removes=['vm1@host1'])
SCENARIOS['deleted_purged'] = S(
    'The same after ``nova-manage db purge --all`` (no trace of the '
    'server anywhere)',
    'test_deleted.DeletedServerTest.test_deleted_then_archived_then_purged',
    ours=[('vm1@host1', 'unknown_consumer', 'delete_consumer'),
          ('vm0@host2', 'active_instance', 'none')],
    audit_rc=3, audit_flags=['vm1@host1'], audit_removes=['vm1@host1'])
SCENARIOS['shelve_offloaded'] = S(
    'A shelve-offload that did not free the host',
    'test_deleted.DeletedServerTest.test_shelve_offloaded',
    ours=[('vm1@host1', 'shelved_offloaded', 'delete_consumer'),
          ('vm0@host2', 'active_instance', 'none')],
    audit_rc=3, audit_flags=['vm1@host1'], audit_removes=['vm1@host1'])


# -- rendering ---------------------------------------------------------------

HEADER = """\
.. This file is generated by tools/comparison.py from
   nova_orphans/tests/scenario/comparison.py; test_comparison fails when
   they differ. Do not edit by hand.

==============================================
Comparison with ``nova-manage placement audit``
==============================================

``nova-manage placement audit`` is nova's own tool for orphaned
allocations. Both tools were run on the same states, each made by real
nova operations in nova's functional test harness (API, conductor,
scheduler and fake-driver computes against a real placement), with a
fault injected only where nova needs a failure to leak. Every cell of
this table is asserted by a scenario test in
``nova_orphans/tests/scenario``; the test fails when the claim stops
being true.

How to read it:

* ``vm1@host1`` is the allocation of consumer ``vm1`` (a server; a
  ``migration`` is a migration record's consumer) on the resource
  provider named ``host1``.
* *audit* is ``nova-manage placement audit --verbose``: its return code
  and the allocations it says "can be deleted". *--delete* is what
  ``nova-manage placement audit --delete`` then really removed or
  changed in placement, and whether the result is the same as
  nova-orphans' ``allocations clean``.
* *nova-orphans* is ``nova-orphans-manage allocations list --all``: the
  reason and action of every allocation. Orphans are the rows whose
  action is not ``none``. In every scenario the test also checked that
  ``allocations clean`` changed exactly the orphans (every other
  allocation byte for byte the same) and that ``allocations restore``
  put placement back exactly as it was.

"""


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
        lines.append('--delete removes %s.' % ', '.join(
            '``%s``' % a for a in s.audit_delete.removed))
    else:
        lines.append('--delete changes nothing.')
    if s.audit_delete.problems:
        lines.append('**Wrong**: %s.' % '; '.join(
            _code(p) for p in s.audit_delete.problems))
    else:
        lines.append('Right.')
    return lines


def _code(problem):
    words = problem.split()
    return ' '.join('``%s``' % w if '@' in w else w for w in words)


def _ours_cell(s):
    orphans = [o for o in s.ours if o[2] != 'none']
    fine = [o for o in s.ours if o[2] == 'none']
    lines = []
    for label, reason, action in orphans:
        lines.append('``%s``: ``%s`` → ``%s``' % (label, reason, action))
    for label, reason, _action in fine:
        lines.append('``%s``: ``%s``, untouched' % (label, reason))
    if not orphans:
        lines.append('No orphans; ``clean`` changes nothing.')
    return lines


def render(scenarios=None):
    scenarios = SCENARIOS if scenarios is None else scenarios
    out = [HEADER]
    for section, keys in _sections(scenarios):
        out.append(section + '\n' + '-' * len(section) + '\n\n')
        out.append('.. list-table::\n   :header-rows: 1\n   :widths: 25 40 35'
                   '\n\n')
        out.append('   * - Scenario\n     - nova-manage placement audit\n'
                   '     - nova-orphans\n')
        for key in keys:
            s = scenarios[key]
            out.append('   * - %s\n\n       (``%s``)\n' % (s.title, s.test))
            for cell in (_audit_cell(s), _ours_cell(s)):
                out.append('     - ' + '\n\n       '.join(cell) + '\n')
        out.append('\n')
    return ''.join(out).rstrip('\n') + '\n'


def _sections(scenarios):
    orphans = [k for k, s in scenarios.items()
               if any(o[2] != 'none' for o in s.ours)]
    fine = [k for k in scenarios if k not in orphans]
    return [(t, ks) for t, ks in (
        ('Orphans made by nova operations', orphans),
        ('Look-alikes that must stay untouched', fine)) if ks]
