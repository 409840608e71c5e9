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
"""Both console scripts against one cloud.

``nova-orphans-manage`` reads nova's databases; ``openstack`` reads the
same databases through nova's real compute API, served by
tools/sandbox_compute.py in a process of its own (the sandbox's
``compute_api``). Importing nova there takes seconds, so one compute
API and its nova databases serve every test class of a test process
(started by the first test that needs them, stopped when the process
ends), and placement serves a whole test class (started by its first
test, stopped after its last); each test starts from an empty cloud:
placement and the databases are emptied in place, which the running
compute API sees as it would see nova's own changes.
"""

import atexit
import os
import shutil
import tempfile
import types

import fixtures
import yaml

from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import mariadb
from nova_orphans.tests.functional.fixtures import nova_db
from nova_orphans.tests.functional.fixtures import placement
from nova_orphans.tests import programs
from nova_orphans.tests import runners

CELLS = ('cell1', 'cell2')
# Nothing listens on port 1 of the loopback interface.
NOWHERE = 'http://127.0.0.1:1'


def _sandbox():
    """tools/sandbox.py as a module: its compute_api() is the one way
    nova's compute API is started over given databases.
    """
    return programs.tool('tools', 'sandbox.py')


class Compute(fixtures.Fixture):
    """nova's databases (two cells), in sqlite files or on the MariaDB
    server ``maria``, and nova's compute API over them.
    """

    def __init__(self, maria=None):
        super().__init__()
        self.maria = maria

    def _setUp(self):
        # Outside any test's temporary directory (oslotest's
        # NestedTempfile), which goes with that test.
        self.dir = tempfile.mkdtemp(prefix='nova-orphans-front-ends-',
                                    dir=nova_db.system_tempdir())
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        with fixtures.MonkeyPatch('tempfile.tempdir', self.dir):
            # Beside the databases a test of its own makes.
            self.nova = self.useFixture(nova_db.NovaDatabases(
                cells=CELLS, mariadb=self.maria, prefix='front_ends_'))
        # nova's compute API reaches no placement, and of the clouds.yaml
        # written for it only the compute endpoint is read: each test
        # class has a placement of its own.
        started = _sandbox().compute_api(
            self.nova, types.SimpleNamespace(endpoint=NOWHERE))
        clouds = started.__enter__()
        self.addCleanup(started.__exit__, None, None, None)
        if clouds is None:
            with open(os.path.join(self.nova.dir, 'compute-api.log')) as f:
                raise RuntimeError('nova\'s compute API did not start:\n'
                                   + f.read()[-3000:])
        with open(clouds) as f:
            self.endpoint = yaml.safe_load(f)['clouds']['sandbox'][
                'compute_endpoint_override']


# This process's Compute fixtures, by MariaDB server (None: sqlite).
_computes = {}


def _compute(maria):
    """This process's Compute on ``maria``, started on first use and
    stopped at exit.
    """
    compute = _computes.get(maria)
    if compute is None:
        compute = Compute(maria)
        compute.setUp()
        # Before the MariaDB server's stop, registered earlier (atexit
        # runs the last registered first).
        atexit.register(compute.cleanUp)
        _computes[maria] = compute
    return compute


class Cloud(fixtures.Fixture):
    """placement, and this process's nova databases and compute API
    (Compute) on the same database server.
    """

    def __init__(self, maria=None):
        super().__init__()
        self.maria = maria

    def _setUp(self):
        compute = _compute(self.maria)
        self.nova = compute.nova
        self.compute = compute.endpoint
        placement_url = None
        if self.maria is not None:
            placement_url = self.maria.fresh(mariadb.TEMPLATE_PLACEMENT,
                                             'placement')
        # Outside the first test's temporary directory, as the Compute.
        with fixtures.MonkeyPatch('tempfile.tempdir', compute.dir):
            self.placement = self.useFixture(placement.PlacementServer(
                db_url=placement_url))

    def reset(self):
        self.placement.reset()
        self.nova.reset()


class FrontEndsTestCase(base.TestCase):
    """Both console scripts against the class's cloud, which nova's
    compute API also serves, emptied before each test.
    """

    CELLS = CELLS
    # On MariaDB rather than in sqlite files (base.on_mariadb).
    MARIADB = False

    def setUp(self):
        super().setUp()
        cls = type(self)
        cloud = cls.__dict__.get('_cloud')
        if cloud is None:
            maria = None
            if self.MARIADB:
                mariadb.require(self)
                maria = mariadb.server()
            cloud = Cloud(maria)
            cloud.setUp()
            cls._cloud = cloud
        cloud.reset()
        self.cloud = cloud
        self.placement = cloud.placement
        self.nova = cloud.nova
        self.conf_file = self.nova_conf(self.placement.endpoint)
        self.clouds_yaml = os.path.join(self.tmp, 'clouds.yaml')
        self.write_clouds()

    @classmethod
    def tearDownClass(cls):
        cloud = cls.__dict__.get('_cloud')
        if cloud is not None:
            del cls._cloud
            cloud.cleanUp()
        super().tearDownClass()

    def write_clouds(self, token='admin', **others):
        """clouds.yaml: ``cloud`` is this one; ``others`` are clouds by
        name, each {'placement': endpoint, 'compute': endpoint} with
        this cloud's endpoints where not given, and 'container' (Zun's
        API: the cloud has Zun) where given. ``token``: the admin
        token of each (``admin``, or ``admin:SOMETHING``).
        """
        clouds = {}
        for name, endpoints in dict(others, cloud={}).items():
            clouds[name] = {
                'auth_type': 'admin_token',
                'auth': {'endpoint': endpoints.get(
                    'placement', self.placement.endpoint),
                    'token': token},
                'compute_endpoint_override': endpoints.get(
                    'compute', self.cloud.compute)}
            if 'container' in endpoints:
                clouds[name]['container_endpoint_override'] = endpoints[
                    'container']
        with open(self.clouds_yaml, 'w') as f:
            yaml.safe_dump({'clouds': clouds}, f)

    # The console scripts (runners) --------------------------------------

    def manage_argv(self, *argv, conf_file=None):
        return runners.manage_argv(*argv, conf_file=conf_file or
                                   self.conf_file)

    def openstack_argv(self, *argv, cloud='cloud'):
        return runners.openstack_argv(*argv, cloud=cloud)

    def environment(self):
        """Runs find the clouds in this test's clouds.yaml."""
        return runners.environment(OS_CLIENT_CONFIG_FILE=self.clouds_yaml)

    def start(self, argv, env=None):
        """The console script ``argv`` running as a process, which a
        test can signal at any instant.
        """
        return runners.start(argv, env=env or self.environment())

    def run_all(self, *commands):
        """[(return code, stdout, stderr)] of the commands (argv lists,
        or (argv, environment) pairs), in their order (runners.run_all).
        """
        env = self.environment()
        return runners.run_all([c if isinstance(c, tuple) else (c, env)
                                for c in commands])

    def manage_run(self, *argv, conf_file=None):
        return self.run_one(self.manage_argv(*argv, conf_file=conf_file))

    def openstack_run(self, *argv, cloud='cloud'):
        return self.run_one(self.openstack_argv(*argv, cloud=cloud))
