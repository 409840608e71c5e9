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
tool is then run in-process against that state, exactly as an operator runs
it against a cloud: from a nova.conf naming the API database, the cell
databases (through ``cell_mappings``) and the placement endpoint.

See NOTES.md in this directory for what each piece of plumbing is for.
"""

import contextlib
import importlib.metadata
import io
import json
import os
import sys

import fixtures
from oslo_utils.fixture import uuidsentinel as uuids

from nova.cmd import manage as nova_manage
from nova.db.api import api as api_db_api
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional import integrated_helpers
from nova import utils as nova_utils


def nova_api_paste_ini():
    """Where nova's installed ``etc/nova/api-paste.ini`` really is.

    nova's ConfFixture defaults ``[wsgi] api_paste_config`` to
    ``$state_path/etc/nova/api-paste.ini``, i.e. ``<site-packages>/etc/...``,
    which only exists in a source checkout. pip installs the file as a data
    file (``<prefix>/etc/nova/api-paste.ini``); the dist RECORD knows where.
    """
    for path in importlib.metadata.files('nova') or ():
        if path.name == 'api-paste.ini':
            located = os.path.abspath(str(path.locate()))
            if os.path.exists(located):
                return located
    return os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')


class _PublishedCellDatabases(nova_fixtures.CellDatabases):
    """nova's CellDatabases, also reachable by the cells' real URLs.

    The harness keys each cell database by an opaque id (the cell uuid),
    which is also what it writes to ``cell_mappings.database_connection``.
    An external reader needs a real URL there. In threading mode every cell
    is a file-backed SQLite (WAL) database, so its URL exists; we register
    the same context manager under the URL too, so nova keeps working after
    the mapping rows are rewritten to the URL (see ScenarioTestCase).
    """

    def add_cell_database(self, connection_str, default=False):
        super().add_cell_database(connection_str, default=default)
        ctxt_mgr = self._ctxt_mgrs[connection_str]
        url = ctxt_mgr.writer.get_engine().url.render_as_string(
            hide_password=False)
        self._ctxt_mgrs[url] = ctxt_mgr


class ScenarioTestCase(integrated_helpers.ProviderUsageBaseTestCase):
    """Three fake computes, real placement, and the tool pointed at them.

    Attributes after setUp: ``computes`` (host -> service, from nova),
    ``rp_uuids`` (host -> compute node provider uuid), ``conf_file`` (a
    nova.conf for nova-orphans), ``placement_endpoint``, ``flavor``.
    """

    compute_driver = 'fake.MediumFakeDriver'
    HOSTS = ('host1', 'host2', 'host3')
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
        self.useFixture(fixtures.MonkeyPatch(
            'nova.tests.fixtures.CellDatabases', _PublishedCellDatabases))
        super().setUp()
        self._publish_cell_urls()

        self.placement_fixture = self.placement.fixture
        self.placement_endpoint = self.placement_fixture.endpoint
        for host in self.HOSTS:
            self._start_compute(host)
        self.rp_uuids = {host: self._get_provider_uuid_by_host(host)
                         for host in self.HOSTS}
        self.flavor = self.api.get_flavors()[0]     # m1.tiny: 1 VCPU, 512 MB
        self.conf_file = self.write_nova_conf()

    # -- databases ---------------------------------------------------------

    def _publish_cell_urls(self):
        """Rewrite cell_mappings.database_connection to real sqlite URLs."""
        self.cell_urls = {}
        for name, mapping in self.cell_mappings.items():
            url = self._cell_url(mapping.database_connection)
            mapping.database_connection = url
            mapping.save()
            self.cell_urls[name] = url

    @staticmethod
    def _cell_url(key):
        from nova.db.main import api as main_db_api
        # Patched by CellDatabases: returns the cell's context manager.
        mgr = main_db_api.create_context_manager(key)
        return mgr.writer.get_engine().url.render_as_string(
            hide_password=False)

    @property
    def api_db_url(self):
        return api_db_api.get_engine().url.render_as_string(
            hide_password=False)

    def write_nova_conf(self, extra=None, placement_db=False):
        """Write a nova.conf for nova-orphans reading this harness.

        ``extra`` is ``{group: {option: value}}`` merged over the defaults.
        ``placement_db=True`` adds ``[placement_database] connection`` so
        the tool can read placement's tables in bulk.
        """
        groups = {
            'api_database': {'connection': self.api_db_url},
            'database': {'connection': self.cell_urls['cell1']},
            'placement': {'auth_type': 'admin_token',
                          'endpoint': self.placement_endpoint,
                          'token': self.placement_fixture.token},
        }
        if placement_db:
            groups['placement_database'] = {
                'connection': self.placement_fixture.conf_fixture.conf
                .placement_database.connection}
        for group, opts in (extra or {}).items():
            groups.setdefault(group, {}).update(opts)
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as f:
            for group, opts in groups.items():
                f.write('[%s]\n' % group)
                f.writelines('%s = %s\n' % kv for kv in opts.items())
                f.write('\n')
        return path

    # -- running things ----------------------------------------------------

    @staticmethod
    @contextlib.contextmanager
    def _captured_stdout():
        out = io.StringIO()
        with fixtures.MonkeyPatch('sys.stdout', out):
            yield out

    def run_manage(self, *argv, conf_file=None):
        """Run ``nova-orphans-manage`` in-process; returns (rc, stdout).

        ``--config-file`` (this harness's nova.conf) is prepended.
        """
        main = self.manage_main
        if main is None:
            from nova_orphans.cmd import manage
            main = manage.main
        argv = ['--config-file', conf_file or self.conf_file] + list(argv)
        with self._captured_stdout() as out:
            rc = main(argv)
        return rc, out.getvalue()

    def list_allocations(self, *extra):
        """``allocations list --format json`` parsed; asserts rc == 0."""
        rc, out = self.run_manage('allocations', 'list', '--format', 'json',
                                  *extra)
        self.assertEqual(0, rc, out)
        return json.loads(out)

    def run_nova_audit(self, verbose=True, delete=False, provider_uuid=None):
        """``nova-manage placement audit`` in-process; returns (rc, output).

        Called the way nova's TestNovaManagePlacementAudit calls it:
        PlacementCommands().audit(...) against the harness's global config.
        rc: 0 nothing found, 3 orphans found, 4 orphans deleted, 1/127 error.
        """
        with self._captured_stdout() as out:
            rc = nova_manage.PlacementCommands().audit(
                verbose=verbose, delete=delete, provider_uuid=provider_uuid)
        return rc, out.getvalue()

    # -- nova operations used by several scenarios -------------------------

    def force_down(self, host):
        """Stop host's compute and mark its service forced_down (fenced)."""
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
