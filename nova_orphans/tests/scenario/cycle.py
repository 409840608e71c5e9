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
"""The check every scenario ends with: list, audit, clean, restore, --delete.

``CycleTestCase.run_cycle`` takes the state a scenario built with real
nova operations and:

1. reads placement's whole state (every consumer's allocations, owner
   and type);
2. asserts ``allocations list --all --format json`` gives exactly the
   expected rows (every key of the JSON contract; ``details`` only has
   to be text), and that ``list`` without ``--all`` gives the orphans;
3. runs ``nova-manage placement audit --verbose`` in-process and parses
   what it flags;
4. runs ``allocations clean --journal <tmp>`` and asserts placement now
   holds exactly the state before minus the orphans' repairs: every
   allocation that is not an orphan is unchanged, byte for byte;
5. runs ``allocations restore --journal`` and asserts placement is back
   to the state of step 1, exactly;
6. runs ``nova-manage placement audit --delete`` on that same state
   and records what it really removed or changed (the difference of
   placement's state), judged against step 4's result.

The observations are compared with what ``comparison.SCENARIOS``
declares for the scenario, which is also what
``doc/source/admin/comparison.rst`` says; ``test_comparison`` checks
the document against the declarations. So every claim in the document
fails a test when it stops being true.
"""

import contextlib
import json
import os
import pkgutil
import re
import threading

import fixtures
import sqlalchemy as sa

from nova_orphans.tests.scenario import base
from nova_orphans.tests.scenario import comparison
from nova_orphans.tests.scenario import osc

#: Keys of a JSON row (the contract of doc/source/cli).
ROW_KEYS = frozenset((
    'consumer', 'consumer_type', 'instance', 'resource_provider',
    'resource_provider_name', 'root_provider', 'host', 'cell', 'reason',
    'action', 'resources', 'project_id', 'user_id', 'details'))

_FLAGGED = re.compile(
    r'^Allocations for consumer UUID (\S+) on Resource Provider (\S+) can be '
    r'deleted: ')
_NO_NODE = re.compile(r'^The compute node for UUID (\S+) can not be found')


class CycleTestCase(osc.OpenStackClientMixin, base.ScenarioTestCase):
    """ScenarioTestCase plus the list/clean/restore/audit cycle."""

    def setUp(self):
        super().setUp()
        self.labels = {}
        self._providers = {}
        self.setup_openstack()
        # nova-orphans-manage reaches the same network API as openstack,
        # with nova.conf's [neutron], as in production.
        self.neutron_conf = {'auth_type': 'admin_token',
                             'endpoint': self.network_endpoint,
                             'token': self.placement_fixture.token}
        self.conf_file = self.write_nova_conf()

    # -- placement state ----------------------------------------------------

    def providers(self):
        """{uuid: provider} of every resource provider in placement."""
        return {p['uuid']: p for p in self.placement.get(
            '/resource_providers', version='1.14').body['resource_providers']}

    def placement_state(self):
        """Every consumer's allocations, owner and type, as placement has it.

        {consumer: {'allocations': {rp: {rc: amount}}, 'project_id',
        'user_id', 'consumer_type'}}. Provider and consumer generations
        are left out: a repair and its undo legitimately bump them.
        """
        consumers = set()
        for rp in self.providers():
            consumers.update(self.placement.get(
                '/resource_providers/%s/allocations' % rp,
                version='1.14').body['allocations'])
        state = {}
        for consumer in consumers:
            doc = self.placement.get('/allocations/%s' % consumer,
                                     version='1.38').body
            state[consumer] = {
                'allocations': {rp: dict(a['resources'])
                                for rp, a in doc['allocations'].items()},
                'project_id': doc['project_id'], 'user_id': doc['user_id'],
                'consumer_type': doc['consumer_type']}
        return state

    # -- labels ---------------------------------------------------------------

    def label(self, consumer, name):
        """Name a consumer for the comparison table ('vm1', 'migration')."""
        self.labels[consumer] = name
        return consumer

    # -- expected rows --------------------------------------------------------

    def row(self, consumer, rp, host, reason, action, resources,
            consumer_type='instance', instance=None, cell='cell1',
            project_id=None, user_id=None):
        """One expected JSON row (without ``details``).

        Provider name and root come from placement; the owner, unless
        given, is the harness's (every server and migration here belongs
        to the same project and user).
        """
        if rp not in self._providers:
            self._providers = self.providers()
        provider = self._providers[rp]
        return {
            'consumer': consumer, 'consumer_type': consumer_type,
            'instance': (consumer if instance is None and
                         consumer_type == 'instance' else instance),
            'resource_provider': rp,
            'resource_provider_name': provider['name'],
            'root_provider': provider['root_provider_uuid'],
            'host': host, 'cell': cell, 'reason': reason, 'action': action,
            'resources': dict(resources),
            'project_id': project_id or self.api.project_id,
            'user_id': user_id or self._user_id,
        }

    @property
    def _user_id(self):
        return self.api.auth_user

    def assertRows(self, expected, rows):
        for row in rows:
            self.assertEqual(ROW_KEYS, set(row), row)
            self.assertIsInstance(row['details'], str)
            self.assertTrue(row['details'])
        rows = [{k: v for k, v in row.items() if k != 'details'}
                for row in rows]
        key = (lambda r: (r['resource_provider'] or '', r['consumer']))
        self.assertEqual(sorted(expected, key=key), sorted(rows, key=key))

    # -- nova-manage placement audit -----------------------------------------

    def audit_flags(self, output):
        """(flagged {(consumer, rp)}, roots audit could not find)."""
        flagged, unknown = set(), set()
        for line in output.splitlines():
            m = _FLAGGED.match(line)
            if m:
                flagged.add((m.group(1), m.group(2)))
            m = _NO_NODE.match(line)
            if m:
                unknown.add(m.group(1))
        return flagged, unknown

    def run_nova_audit(self, verbose=True, delete=False, provider_uuid=None):
        """nova-manage placement audit, as a fresh nova-manage process runs.

        nova caches the cell list per process (``nova.context.CELLS``);
        a real ``nova-manage`` starts with an empty cache and so reads
        ``cell_mappings`` as they are now (e.g. a cell made unreachable
        by the test).
        """
        with _fresh_cells():
            return super().run_nova_audit(verbose, delete, provider_uuid)

    def osc_list(self, *args):
        """``openstack allocation orphan list -f json``, parsed.

        nova's API reads the cell list afresh for it, as nova-api does
        when it starts after the state was made (``run_nova_audit``).
        """
        with _fresh_cells():
            rc, out, err = self.openstack('allocation', 'orphan', 'list',
                                          *(args + ('-f', 'json')))
        # With a cell down it prints its rows, then says so: 2 or 5.
        rows = json.loads(out)
        self.assertEqual(osc.expected_code(('orphan', 'list'), rows, err),
                         rc, err)
        return rows

    # -- the cycle ------------------------------------------------------------

    def run_cycle(self, expected, clean_args=(), while_clean=None,
                  reset=False, key=None, providers=()):
        """Check one scenario end to end; see the module docstring.

        ``expected`` is the exact list of rows of ``list --all``
        (``row()``). ``clean_args`` narrow ``clean``
        (e.g. ``--host``); ``while_clean()`` runs while the orphans are
        cleaned. ``reset`` puts the state back (``restore`` again) after
        ``audit --delete``, for tests that go on from the same state.
        ``key`` names the scenario when the test backs several.
        ``providers`` is what ``providers list --all`` said in this state
        ((name, reason, action) rows), for the comparison page, which
        also records which of the trees to delete audit leaves behind.
        Returns {'before': state, 'cleaned': state after clean}.
        """
        comparison.scenario_of(self, key)
        self.age_nova()
        self._providers = self.providers()
        names = {rp: p['name'] for rp, p in self._providers.items()}

        def label(consumer, rp):
            return '%s@%s' % (self.labels[consumer], names.get(rp, rp))

        before = self.placement_state()
        # Every allocation in placement is one row, and vice versa.
        self.assertEqual(
            sorted((c, rp) for c, d in before.items()
                   for rp in d['allocations']),
            sorted((r['consumer'], r['resource_provider'])
                   for r in expected if r['resources']))

        listed = self.list_allocations('--all')
        self.assertRows(expected, listed)
        orphans = [r for r in expected if r['action'] != 'none']
        self.assertRows(orphans, self.list_allocations())
        osc_differences = comparison.osc_differences(
            listed, self.osc_list('--all'), label,
            dict(names, **self.labels))

        audit_rc, out = self.run_nova_audit(verbose=True)
        flagged, unknown = self.audit_flags(out)
        self.assertEqual(3 if flagged else 0, audit_rc, out)

        # clean: exactly the orphans change.
        journal = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'journal.jsonl')
        rc, out = self.run_manage('allocations', 'clean', '--journal',
                                  journal, '--format', 'json', *clean_args)
        self.assertEqual(self.expected_code(4 if orphans else 0), rc,
                         out + self.manage_stderr)
        self.assertEqual(
            sorted((r['consumer'], r['resource_provider'], 'done')
                   for r in orphans),
            sorted((r['consumer'], r['resource_provider'], r['outcome'])
                   for r in json.loads(out)))
        after_clean = self.placement_state()
        self.assertEqual(self.repaired(before, orphans), after_clean)
        self.assertEqual([], self.list_allocations(*clean_args))
        if while_clean is not None:
            while_clean()

        # restore: exactly as before.
        if orphans:
            self.restore(journal)
            self.assertEqual(before, self.placement_state())
        else:
            self.assertFalse(os.path.exists(journal))

        # nova's audit --delete in the same state.
        rc, out = self.run_nova_audit(delete=True)
        self.assertEqual(4 if flagged else 0, rc, out)
        verdict = comparison.judge_delete(
            before, after_clean, self.placement_state(), label)
        existing = {p['name'] for p in self.providers().values()}
        left = tuple(sorted(name for name, _reason, action in providers
                            if action != 'none' and name in existing))
        comparison.check(self, comparison.Observed(
            ours=tuple(sorted((label(r['consumer'], r['resource_provider']),
                               r['reason'], r['action']) for r in expected)),
            audit_rc=audit_rc,
            audit_flags=tuple(sorted(label(c, rp) for c, rp in flagged)),
            audit_unknown_nodes=tuple(sorted(names[u] for u in unknown)),
            audit_delete=verdict, osc=osc_differences,
            providers=tuple(sorted(providers)),
            audit_leaves_providers=left), key)
        if reset:
            self.restore(journal)
            self.assertEqual(before, self.placement_state())
        return {'before': before, 'cleaned': after_clean}

    def restore(self, journal):
        rc, out = self.run_manage('allocations', 'restore', '--journal',
                                  journal, '--format', 'json')
        self.assertEqual(4, rc, out + self.manage_stderr)
        return json.loads(out)

    @staticmethod
    def repaired(before, orphans):
        """The state ``before`` with the orphans' repairs applied."""
        state = json.loads(json.dumps(before))
        for row in orphans:
            consumer, rp = row['consumer'], row['resource_provider']
            body = state[consumer]['allocations'].pop(rp)
            if row['action'] == 'return_to_instance':
                target = state.setdefault(row['instance'], {
                    'allocations': {},
                    'project_id': state[consumer]['project_id'],
                    'user_id': state[consumer]['user_id'],
                    'consumer_type': state[consumer]['consumer_type']})
                merged = target['allocations'].setdefault(rp, {})
                for rc, amount in body.items():
                    merged[rc] = merged.get(rc, 0) + amount
        return {c: d for c, d in state.items() if d['allocations']}

    # -- placement writes (as other services do them) -------------------------

    def _ok(self, response, *statuses):
        self.assertIn(response.status, statuses or (200, 201, 204),
                      response.body)
        return response.body

    def post_provider(self, name, parent=None, uuid=None):
        body = {'name': name}
        if parent:
            body['parent_provider_uuid'] = parent
        if uuid:
            body['uuid'] = uuid
        return self._ok(self.placement.post('/resource_providers', body=body,
                                            version='1.20'))

    def put_inventory(self, rp_uuid, totals, traits=(), aggregates=()):
        """Set {rc: total} (and traits, aggregates) on a provider."""
        rp = self._ok(self.placement.get('/resource_providers/%s' % rp_uuid,
                                         version='1.20'))
        rp = self._ok(self.placement.put(
            '/resource_providers/%s/inventories' % rp_uuid, version='1.20',
            body={'resource_provider_generation': rp['generation'],
                  'inventories': {rc: {'total': total, 'max_unit': total}
                                  for rc, total in totals.items()}}))
        generation = rp['resource_provider_generation']
        if traits:
            for trait in traits:
                if trait.startswith('CUSTOM_'):
                    self._create_trait(trait)
            generation = self._ok(self.placement.put(
                '/resource_providers/%s/traits' % rp_uuid, version='1.6',
                body={'resource_provider_generation': generation,
                      'traits': list(traits)}))['resource_provider_generation']
        if aggregates:
            self._ok(self.placement.put(
                '/resource_providers/%s/aggregates' % rp_uuid, version='1.19',
                body={'resource_provider_generation': generation,
                      'aggregates': list(aggregates)}))

    def put_allocations(self, consumer, allocations, project_id, user_id):
        """Write {rp: {rc: amount}} for a new consumer, as a service does."""
        self._ok(self.placement.put(
            '/allocations/%s' % consumer, version='1.28', body={
                'allocations': {rp: {'resources': res}
                                for rp, res in allocations.items()},
                'project_id': project_id, 'user_id': user_id,
                'consumer_generation': None}), 204)

    # -- nova-side helpers ----------------------------------------------------

    def pause(self, target, timeout=60, when=None):
        """Make ``target`` (a fake driver method) wait until released.

        Returns a gate: ``entered()`` waits until nova called it (the
        operation is now paused there), ``release()`` lets it go on.
        Released at cleanup in any case. ``when(*args, **kwargs)``, if
        given, picks the calls to pause (the others run at once).
        """
        gate = _Gate(target, timeout, when)
        self.useFixture(fixtures.MonkeyPatch(target, gate.wrap(
            pkgutil.resolve_name(target))))
        self.addCleanup(gate.release)
        return gate

    def break_cell_for_nova_too(self, cell_name='cell1'):
        """Make a cell database unreadable to the tool AND to nova.

        The mapping row gets a file that is not a database (break_cell's
        ``garbage``). nova looks cells up by that string, so register a
        real (failing) oslo.db context manager under it: nova's queries
        fail as they would on a dead database server (``file is not a
        database``). Only fresh cell lists see it (see
        ``run_nova_audit``); nova's services keep their cached cells.
        """
        from oslo_db.sqlalchemy import enginefacade
        url = self.break_cell(cell_name, 'garbage')
        ctxt = enginefacade.transaction_context()
        ctxt.configure(connection=url)
        registry = self.cell_databases._ctxt_mgrs
        registry[url] = ctxt
        # Before CellDatabases' cleanup, which opens every registered one.
        self.addCleanup(registry.pop, url)
        return url

    def boot(self, name, host=None, flavor=None, wait='ACTIVE',
             networks='none', node=None):
        """Create a server (on ``host``/``node`` if given), label it ``name``.

        ``wait=None`` returns as soon as the API accepted it.
        """
        body = self._build_server(
            name=name, flavor_id=(flavor or self.flavor)['id'],
            networks=networks, host=host)
        if node:
            body['hypervisor_hostname'] = node
        server = self.api.post_server({'server': body})
        self.label(server['id'], name)
        if wait:
            server = self._wait_for_state_change(server, wait)
        return server

    def cell_db(self, cell='cell1'):
        """A short-lived engine on a cell database (closed at cleanup)."""
        engine = sa.create_engine(self.cell_urls[cell])
        self.addCleanup(engine.dispose)
        return engine

    def force_delete_in_sql(self, server_id):
        """The runbook's (seed 003) UPDATE: deleted=1, not deleted=id."""
        with self.cell_db().begin() as conn:
            conn.execute(sa.text(
                "UPDATE instances SET deleted=1, "
                "deleted_at=CURRENT_TIMESTAMP, vm_state='deleted' "
                "WHERE uuid=:u"), {'u': server_id})

    def instance_row(self, server_id, table='instances'):
        with self.cell_db().connect() as conn:
            return conn.execute(sa.text(
                'SELECT id, deleted, vm_state, task_state, host, node '
                'FROM %s WHERE uuid=:u' % table),
                {'u': server_id}).one_or_none()

    def migration_rows(self, server_id):
        with self.cell_db().connect() as conn:
            return conn.execute(sa.text(
                'SELECT uuid, migration_type, status, source_compute, '
                'dest_compute FROM migrations WHERE instance_uuid=:u '
                'ORDER BY id'), {'u': server_id}).all()


@contextlib.contextmanager
def _fresh_cells():
    with fixtures.MonkeyPatch('nova.context.CELLS', []), \
            fixtures.MonkeyPatch('nova.context.CELL_CACHE', {}), \
            fixtures.MonkeyPatch('nova.compute.api.CELLS', []):
        yield


class _Gate:

    def __init__(self, target, timeout, when=None):
        self.target = target
        self.timeout = timeout
        self.when = when
        self._entered = threading.Event()
        self._release = threading.Event()

    def wrap(self, original):
        def paused(*args, **kwargs):
            if self.when is not None and not self.when(*args, **kwargs):
                return original(*args, **kwargs)
            self._entered.set()
            if not self._release.wait(self.timeout):
                raise RuntimeError('%s was never released' % self.target)
            return original(*args, **kwargs)
        return paused

    def entered(self):
        if not self._entered.wait(self.timeout):
            raise AssertionError('nova never called %s' % self.target)

    def release(self):
        self._release.set()
