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
"""Scenario tests: orphans made by real nova operations, then audited.

nova's own functional harness runs API, conductor, scheduler and fake-driver
computes in this process, against a real placement (wsgi-intercepted). The
tool is then run in-process against that state, as an operator runs it
against a cloud: from a nova.conf naming the API database, the cell
databases (through ``cell_mappings``) and the placement endpoint.

See NOTES.md in this directory for the plumbing and for recipes.
"""

import contextlib
import functools
import importlib.metadata
import io
import json
import logging
import os
import sqlite3
import sys
import time

import fixtures
from futurist import _thread as futurist_thread
from oslo_utils.fixture import uuidsentinel as uuids
import sqlalchemy as sa

from nova.cmd import manage as nova_manage
from nova.db.api import api as api_db_api
from nova.tests import fixtures as nova_fixtures
from nova.tests.fixtures import notifications as nova_notifications
from nova.tests.functional import integrated_helpers
from nova import utils as nova_utils

from nova_orphans.tests.functional.fixtures import nova_db
from nova_orphans.tests import runners
from nova_orphans.tests import state


@functools.lru_cache(maxsize=None)
def nova_api_paste_ini():
    """Where nova's installed ``etc/nova/api-paste.ini`` really is.

    nova's ConfFixture defaults ``[wsgi] api_paste_config`` to
    ``$state_path/etc/nova/api-paste.ini``, i.e. ``<site-packages>/etc/...``,
    which only exists in a source checkout. pip installs the file as a data
    file (``<prefix>/etc/nova/api-paste.ini``); the dist RECORD knows where.
    Once per process: the RECORD has thousands of paths.
    """
    for path in importlib.metadata.files('nova') or ():
        if path.name == 'api-paste.ini':
            located = os.path.abspath(str(path.locate()))
            if os.path.exists(located):
                return located
    return os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')


def _url(engine):
    return engine.url.render_as_string(hide_password=False)


class _PublishedCellDatabases(nova_fixtures.CellDatabases):
    """nova's CellDatabases, also reachable under other connection strings.

    The harness keys each cell database by an opaque id (the cell uuid) and
    writes that id to ``cell_mappings.database_connection``. An external
    reader needs a URL there. Registering the same context manager under
    more keys lets the mapping rows say something else (the real URL, or a
    broken one) while nova, which looks cells up by that string, still
    reaches the real database.
    """

    def alias(self, key, new_key):
        self._ctxt_mgrs[new_key] = self._ctxt_mgrs[key]

    def url(self, key):
        return _url(self._ctxt_mgrs[key].writer.get_engine())


# futurist's own idle wait, as imported: nova.test changes it in setUp.
_FUTURIST_IDLE_FOR = futurist_thread.ThreadWorker.MAX_IDLE_FOR


class _Wake:
    """A work item that does nothing: it wakes one idle pool worker."""

    def run(self):
        pass


class WakingIdleWorkers(fixtures.Fixture):
    """Idle pool workers that sleep until work or a stop wakes them.

    nova.test sets futurist's ``ThreadWorker.MAX_IDLE_FOR`` to 0.01 s
    (its "hack until" futurist bug 2160159): an idle worker notices a
    stop only when its queue wait times out, and at futurist's own
    second every executor shutdown would wait that long; but some forty
    workers polling that often cost real CPU. Here a stop puts a no-op
    item on the worker's queue, which wakes it at once, and after
    nova.test's setUp (``wait_long``) the wait is futurist's own again:
    the bound for a worker whose wake-up another worker took.

    Used before nova.test's setUp, so that its cleanup comes after every
    service and pool has stopped.
    """

    def _setUp(self):
        real_stop = futurist_thread.ThreadWorker.stop

        def stop(worker):
            real_stop(worker)
            worker.work_queue.put(_Wake())

        self.useFixture(fixtures.MonkeyPatch(
            'futurist._thread.ThreadWorker.stop', stop))
        self.useFixture(fixtures.MonkeyPatch(
            'futurist._thread.ThreadWorker.MAX_IDLE_FOR',
            futurist_thread.ThreadWorker.MAX_IDLE_FOR))

    @staticmethod
    def wait_long():
        futurist_thread.ThreadWorker.MAX_IDLE_FOR = _FUTURIST_IDLE_FOR


class ScenarioTestCase(runners.Checks,
                       integrated_helpers.ProviderUsageBaseTestCase):
    """Three fake computes, real placement, and the tool pointed at them.

    After setUp: ``computes`` (host -> compute service, nova's),
    ``rp_uuids`` (host -> compute node provider uuid), ``cell_urls``
    (cell name -> sqlite URL), ``api_db_url``, ``placement_endpoint``,
    ``conf_file`` (nova.conf for nova-orphans), ``flavor`` (m1.tiny:
    VCPU 1, MEMORY_MB 512, DISK_GB 1). ``self.api`` is the admin API at
    the latest microversion.
    """

    compute_driver = 'fake.MediumFakeDriver'
    HOSTS = ('host1', 'host2', 'host3')
    #: Another openstack-placement release (its version, "9.0.0") for
    #: nova and the tool; None: the test venv's (see
    #: _serve_placement_release).
    PLACEMENT_RELEASE = None
    #: nova-orphans' ``main(argv)``; None means nova_orphans.cmd.manage.main,
    #: imported at call time. A module may point it at a stand-in.
    manage_main = None

    def setUp(self):
        if not nova_utils.concurrency_mode_threading():
            # Eventlet mode keeps every database in memory: nothing for an
            # external reader to open.
            self.skipTest('scenario tests need OS_NOVA_DISABLE_EVENTLET_'
                          'PATCHING=True (file-backed databases)')
        # Before super().setUp(): OSAPIFixture loads the paste app there.
        # nova's ConfFixture clears this override on cleanup.
        self.flags(api_paste_config=nova_api_paste_ini(), group='wsgi')
        # nova.test.TestCase._setup_cells builds its CellDatabases locally;
        # swap in ours to keep a handle on it.
        self.useFixture(fixtures.MonkeyPatch(
            'nova.tests.fixtures.CellDatabases', self._make_cell_databases))
        # nova's thread pools log their shutdown in cleanups that run after
        # its StandardLogging capture is gone, onto the stdout handler
        # nova.test installs at import: capture that too (shown only when
        # the test fails). Used before super().setUp(), so removed last.
        self.useFixture(fixtures.FakeLogger(
            format='%(asctime)s %(levelname)s [%(name)s] %(message)s',
            level=logging.INFO))
        self._patient_notifier()
        idle_workers = self.useFixture(WakingIdleWorkers())
        # Journals of clean without --journal, either front end.
        self.useFixture(state.StateHome())
        super().setUp()
        # nova.test's setUp has set its poll.
        idle_workers.wait_long()
        self._publish_cell_urls()

        self.placement_fixture = self.placement.fixture
        if self.PLACEMENT_RELEASE is not None:
            self._serve_placement_release(self.PLACEMENT_RELEASE)
        self.placement_endpoint = self.placement_fixture.endpoint
        for host in self.HOSTS:
            self._start_compute(host)
        # The fake driver names each node after its host. One placement
        # listing, cheaper than a compute API call per host.
        self.rp_uuids = {rp['name']: rp['uuid']
                         for rp in self._get_all_providers()
                         if rp['name'] in self.HOSTS}
        self.assertEqual(set(self.HOSTS), set(self.rp_uuids))
        self.flavor = self.api.get_flavors()[0]
        self.conf_file = self.write_nova_conf()

    def _serve_placement_release(self, version):
        """nova and the tool on another placement release than the venv's.

        The functional suite's OldPlacementServer serves it from a
        subprocess on 127.0.0.1, on a database its own migrations made.
        nova's PlacementFixture sends every request of nova (the report
        client) and of the harness's helpers to its ``endpoint`` with its
        token, read at each request: pointed there before any compute
        starts, the whole harness uses that placement. The in-process
        one stays up, unused (``placement_db=True`` would still name its
        database).
        """
        from nova_orphans.tests.functional.fixtures import releases
        server = self.useFixture(releases.OldPlacementServer(version))
        self.placement_fixture.endpoint = server.endpoint

    def _make_cell_databases(self):
        self.cell_databases = _PublishedCellDatabases()
        return self.cell_databases

    # -- databases ---------------------------------------------------------

    def _publish_cell_urls(self):
        """Make cell_mappings.database_connection the real sqlite URLs."""
        self.cell_urls = {}
        for name, mapping in self.cell_mappings.items():
            url = self.cell_databases.url(mapping.database_connection)
            self._set_cell_connection(name, url)
            self.cell_urls[name] = url

    def _set_cell_connection(self, cell_name, connection):
        mapping = self.cell_mappings[cell_name]
        self.cell_databases.alias(mapping.database_connection, connection)
        mapping.database_connection = connection
        mapping.save()

    @property
    def api_db_url(self):
        return _url(api_db_api.get_engine())

    def break_cell(self, cell_name, how='missing'):
        """Make one cell database unreadable to the tool; nova still works.

        The cell's mapping row gets a connection the tool cannot use;
        nova keeps reaching the real database through an alias.

        - ``missing``: a file in a directory that does not exist; opening
          it fails at once (``unable to open database file``).
        - ``garbage``: a file that is not SQLite (``file is not a
          database`` on the first query).
        - ``locked``: a copy of the cell database held under an exclusive
          lock until cleanup; readers wait for sqlite's busy timeout
          (pysqlite default 5 s) and then fail with ``database is
          locked``. For testing the tool's per-cell time limit.

        Returns the URL now in the mapping.
        """
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, '%s-%s.sqlite' % (cell_name, how))
        if how == 'missing':
            path = os.path.join(tmp, 'no-such-dir', cell_name + '.sqlite')
        elif how == 'garbage':
            with open(path, 'w') as f:
                f.write('not a database\n' * 100)
        elif how == 'locked':
            real = self.cell_urls[cell_name][len('sqlite:///'):]
            with contextlib.closing(sqlite3.connect(real)) as src, \
                    contextlib.closing(sqlite3.connect(path)) as dst:
                src.backup(dst)
            holder = sqlite3.connect(path, isolation_level=None,
                                     check_same_thread=False)
            holder.execute('PRAGMA locking_mode=EXCLUSIVE')
            holder.execute('BEGIN EXCLUSIVE')
            self.addCleanup(holder.close)
        else:
            raise ValueError(how)
        url = 'sqlite:///' + path
        self._set_cell_connection(cell_name, url)
        return url

    def template_cell(self, cell_name='cell1', template='{scheme}:////{path}'):
        """Store the cell's mapping as a template, as nova allows.

        nova fills ``{scheme}``, ``{path}``... from the reader's own
        ``[database] connection``; so does the tool. Both get this cell's
        URL there (``{path}`` drops the leading ``/``, hence four slashes
        for an absolute sqlite path). Rewrites ``conf_file``.
        """
        url = self.cell_urls[cell_name]
        self.flags(connection=url, group='database')
        self._set_cell_connection(cell_name, template)
        self.conf_file = self.write_nova_conf(
            extra={'database': {'connection': url}})

    #: nova.conf's ``[neutron]`` ({option: value}) for the tool, once a
    #: network API is served to it; None: the section is left out.
    neutron_conf = None

    def write_nova_conf(self, extra=None, placement_db=False, neutron=True):
        """Write a nova.conf for nova-orphans reading this harness.

        ``extra`` is ``{group: {option: value}}`` merged over the defaults.
        ``placement_db=True`` adds ``[placement_database] connection`` so
        the tool can read placement's tables in bulk. ``neutron=False``
        leaves ``[neutron]`` (``neutron_conf``) out.
        """
        groups = {
            'api_database': {'connection': self.api_db_url},
            'database': {'connection': self.cell_urls['cell1']},
            'placement': {'auth_type': 'admin_token',
                          'endpoint': self.placement_endpoint,
                          'token': self.placement_fixture.token},
        }
        if neutron and self.neutron_conf:
            groups['neutron'] = dict(self.neutron_conf)
        if placement_db:
            groups['placement_database'] = {
                'connection': self.placement_fixture.conf_fixture.conf
                .placement_database.connection}
        for group, opts in (extra or {}).items():
            groups.setdefault(group, {}).update(opts)
        return nova_db.write_ini(os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'nova.conf'), groups)

    # -- waiting for nova ---------------------------------------------------

    # nova's helpers give up after ten polls half a second apart, or ten
    # seconds for a notification. On a two-core machine running the
    # three suites at once, a live migration or a resize can take longer
    # than that, and the test then fails on nova's patience rather than
    # on what it checks.
    WAIT_SECONDS = 60

    def _patient_notifier(self):
        """nova's notification waits (a resize's end...) given as long."""
        notifier = nova_notifications.FakeVersionedNotifier
        wait = notifier.wait_for_versioned_notifications
        seconds = self.WAIT_SECONDS

        def patient(self, event_type, n_events=1, timeout=10.0):
            return wait(self, event_type, n_events, max(timeout, seconds))
        self.useFixture(fixtures.MonkeyPatch(
            'nova.tests.fixtures.notifications.FakeVersionedNotifier.'
            'wait_for_versioned_notifications', patient))

    def _patiently(self, wait, *args):
        """nova's ``wait(*args)`` again until WAIT_SECONDS have passed."""
        deadline = time.monotonic() + self.WAIT_SECONDS
        while True:
            try:
                return wait(*args)
            except self.failureException:
                if time.monotonic() > deadline:
                    raise

    def _wait_for_instance_action_event(self, server, action_name,
                                        event_name, event_result):
        return self._patiently(super()._wait_for_instance_action_event,
                               server, action_name, event_name, event_result)

    def _wait_for_server_parameter(self, server, expected_params,
                                   max_retries=WAIT_SECONDS * 2, **kwargs):
        return super()._wait_for_server_parameter(
            server, expected_params, max_retries=max_retries, **kwargs)

    def _wait_for_migration_status(self, server, expected_statuses):
        return self._patiently(super()._wait_for_migration_status, server,
                               expected_statuses)

    # -- running things ----------------------------------------------------

    def run_manage(self, *argv, conf_file=None):
        """Run ``nova-orphans-manage`` in-process (runners.manage_main);
        returns (rc, stdout).

        ``--config-file`` (this harness's nova.conf) is prepended. stderr
        (warnings, errors) is kept in ``self.manage_stderr``.
        """
        rc, out, self.manage_stderr = runners.manage_main(
            ['--config-file', conf_file or self.conf_file] + list(argv),
            main=self.manage_main)
        return rc, out

    def list_allocations(self, *extra):
        """``allocations list --format json``, parsed.

        Also checks the return code agrees with the rows: 3 when some row
        needs an action, else 0; 5 and 2 when a cell could not be read.
        """
        rc, out = self.run_manage('allocations', 'list', '--format', 'json',
                                  *extra)
        rows = json.loads(out)
        orphans = [row for row in rows if row['action'] != 'none']
        self.assertEqual(self.expected_code(3 if orphans else 0), rc, out)
        return rows

    def expected_code(self, complete):
        """``complete``, or 5/2 if the last run warned of a cell, or
        neutron, not read.
        """
        if not any(warning in self.manage_stderr for warning in (
                'WARNING: cell ', 'WARNING: neutron could not be asked')):
            return complete
        return 5 if complete in (3, 4) else 2

    def run_nova_audit(self, verbose=True, delete=False, provider_uuid=None):
        """``nova-manage placement audit`` in-process; returns (rc, output).

        Called as nova's TestNovaManagePlacementAudit does:
        ``PlacementCommands().audit(...)`` on the harness's global config.
        rc: 0 nothing found, 3 found, 4 found and deleted, 1 error,
        127 unknown provider.
        """
        with contextlib.redirect_stdout(io.StringIO()) as out:
            rc = nova_manage.PlacementCommands().audit(
                verbose=verbose, delete=delete, provider_uuid=provider_uuid)
        return rc, out.getvalue()

    # -- time ----------------------------------------------------------------

    #: Timestamp columns nova's activity is read from (rules.unsettled).
    ACTIVITY_COLUMNS = {
        'instances': ('created_at', 'updated_at'),
        'migrations': ('created_at', 'updated_at'),
        'instance_actions': ('created_at', 'updated_at', 'start_time',
                             'finish_time'),
        'instance_actions_events': ('created_at', 'updated_at',
                                    'start_time', 'finish_time'),
        'instance_info_caches': ('created_at', 'updated_at'),
    }

    def age_nova(self, hours=1):
        """Move nova's record of its work on every instance back in time.

        A scenario's leftovers are judged as an operator finds them, long
        after nova made them, past any grace period; what the scenario
        left unfinished (task states, running events, moves in progress)
        stays unfinished. nova never acts on these times in the harness
        (its timeouts based on them are off by default).
        """
        for url in self.cell_urls.values():
            engine = sa.create_engine(url)
            self.addCleanup(engine.dispose)
            with engine.begin() as conn:
                for table, columns in self.ACTIVITY_COLUMNS.items():
                    conn.execute(sa.text('UPDATE %s SET %s' % (
                        table, self.moved_back(columns, hours))))

    @staticmethod
    def moved_back(columns, hours):
        """SQL ``SET`` list putting ``columns`` back by ``hours``.

        In the text form nova (SQLAlchemy's SQLite DATETIME) writes,
        ``YYYY-MM-DD HH:MM:SS.ffffff``: sqlite's ``datetime()`` drops the
        fraction, and such a value then sorts before the same time as
        nova binds it. nova's server list pages by ``created_at`` with
        the last row as marker: a row that sorts before itself comes back
        in every batch, up to the page limit.
        """
        return ', '.join(
            "%(c)s = strftime('%%Y-%%m-%%d %%H:%%M:%%S', %(c)s, "
            "'-%(h)d hours') || substr(%(c)s || '.000000', 20, 7)"
            % {'c': c, 'h': hours} for c in columns)

    # -- nova operations used by several scenarios -------------------------

    def force_down(self, host):
        """Fence ``host``: stop its compute and force its service down."""
        service = self.admin_api.get_services(
            host=host, binary='nova-compute')[0]
        self.computes[host].stop()
        self.admin_api.put_service(service['id'], {'forced_down': True})
        return service

    def get_allocations(self, consumer):
        """Placement's allocations for a consumer: {rp_uuid: resources}."""
        return {rp: alloc['resources'] for rp, alloc in
                self._get_allocations_by_server_uuid(consumer).items()}


__all__ = ['ScenarioTestCase', 'nova_api_paste_ini', 'uuids']
