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
"""Two clouds' journals in one journal directory, as on a workstation:
this test's own cloud (placement and nova's databases, for
``nova-orphans-manage``) and a kept sandbox in a process of its own
(``tools/sandbox --keep``: another placement, nova's databases and
compute API, for ``openstack --os-cloud sandbox``).
"""

import json
import os
import re
import subprocess
import sys

import requests

from nova_orphans.repair import journal as journal_mod
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import nova_db
from nova_orphans.tests.functional import processes
from nova_orphans.tests import warm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
READY = 'Stop it with Ctrl-C, or: kill -TERM '


def placement_state(endpoint):
    """{provider uuid: {consumer: resources}} read from a placement."""
    def get(path):
        resp = requests.get(endpoint + path, timeout=30, headers={
            'X-Auth-Token': 'admin',
            'OpenStack-API-Version': 'placement 1.39'})
        resp.raise_for_status()
        return resp.json()
    state = {}
    for rp in get('/resource_providers')['resource_providers']:
        allocations = get('/resource_providers/%s/allocations' %
                          rp['uuid'])['allocations']
        state[rp['uuid']] = {consumer: alloc['resources']
                             for consumer, alloc in allocations.items()}
    return state


class TwoCloudsTestCase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        # Both front ends' journal directory, by its default rule:
        # $XDG_STATE_HOME/nova-orphans, and state_path in nova.conf.
        self.xdg = os.path.join(self.tmp, 'xdg')
        self.journals = os.path.join(self.xdg, 'nova-orphans')
        self.conf_file = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'nova.conf'), self.placement.endpoint,
            extra={'nova_orphans': {'state_path': self.journals,
                                    'cell_timeout': '20'}})
        host1 = self.add_node('host1')
        self.gone = self.boot('host1', host1)
        self.nova.force_delete_instance('cell1', self.gone)
        self.start_sandbox()

    def start_sandbox(self):
        tmp = os.path.join(self.tmp, 'sandbox')
        os.mkdir(tmp)
        cache = nova_db.schema_templates()
        os.symlink(cache, os.path.join(tmp, os.path.basename(cache)))
        env = dict(processes.environment(), TMPDIR=tmp)
        proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, 'tools', 'sandbox.py'),
             '--keep'], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, env=env)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.wait, 60)
        self.addCleanup(lambda: proc.poll() is None and proc.terminate())
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith(READY):
                break
        out = ''.join(lines)
        self.assertIn(READY, out)
        self.sandbox_conf = re.search(
            r'--config-file (\S+) allocations clean --dry-run', out).group(1)
        self.sandbox_placement = re.search(r'^ +endpoint: (\S+)$', out,
                                           re.M).group(1)
        clouds = re.search(r'^  export OS_CLIENT_CONFIG_FILE=(\S+)$', out,
                           re.M).group(1)
        self.env = dict(processes.environment(), XDG_STATE_HOME=self.xdg,
                        OS_CLIENT_CONFIG_FILE=clouds)

    def run_console(self, name, *argv):
        done = warm.run(
            [os.path.join(os.path.dirname(processes.console_script()),
                          name)] + list(argv),
            capture_output=True, text=True, env=self.env,
            stdin=subprocess.DEVNULL, timeout=180)
        self.assertNotIn('Traceback', done.stderr)
        return done.returncode, done.stdout, done.stderr

    def manage_run(self, *argv, conf_file=None):
        return self.run_console('nova-orphans-manage', '--config-file',
                                conf_file or self.conf_file, *argv)

    def openstack(self, *argv):
        return self.run_console('openstack', '--os-cloud', 'sandbox', *argv)

    def test_journals_tell_their_clouds_apart(self):
        # A clean in each cloud, each journal in the default directory.
        rc, _out, err = self.manage_run('allocations', 'clean')
        self.assertEqual(4, rc, err)
        mine = re.search(r'^Journal: (\S+)$', err, re.M).group(1)
        self.assertEqual(self.journals, os.path.dirname(mine))
        rc, _out, err = self.openstack('allocation', 'orphan', 'clean',
                                       '-f', 'json')
        self.assertEqual(4, rc, err)
        theirs = re.search(r'^Journal: (\S+)$', err, re.M).group(1)
        self.assertEqual(self.journals, os.path.dirname(theirs))
        self.assertIn('\nTo undo: openstack --os-cloud sandbox allocation '
                      'orphan restore --journal %s\n' % theirs, err)
        # Each run's header names its cloud.
        [run] = journal_mod.load(mine).runs
        self.assertEqual(({'config_files': [self.conf_file]},
                          self.placement.endpoint),
                         (run.cloud, run.placement))
        [run] = journal_mod.load(theirs).runs
        self.assertEqual(
            ({'name': 'sandbox', 'auth_url': self.sandbox_placement,
              'region': None, 'project': None}, self.sandbox_placement),
            (run.cloud, run.placement))

        # Both listings tell them apart, and filter by cloud.
        expected = {mine: (self.conf_file, self.placement.endpoint),
                    theirs: ('sandbox', self.sandbox_placement)}
        for lister in (
                lambda *a: self.manage_run('journals', 'list', '--format',
                                           'json', *a),
                lambda *a: self.openstack('allocation', 'orphan', 'journal',
                                          'list', '-f', 'json', *a)):
            for cloud, journals in (
                    (None, [mine, theirs]), ('sandbox', [theirs]),
                    (self.conf_file, [mine]),
                    (self.sandbox_placement, [theirs]),
                    (self.placement.endpoint + '/', [mine]),
                    ('elsewhere', [])):
                rc, out, err = lister(*(['--cloud', cloud] if cloud else []))
                self.assertEqual((0, ''), (rc, err))
                rows = json.loads(out)
                self.assertEqual(
                    sorted((j, expected[j]) for j in journals),
                    sorted((r['journal'], (r['cloud'], r['placement']))
                           for r in rows), cloud)

        # A journal restored into the other cloud: refused before any
        # write, by both front ends.
        here = self.placement.dump_state()
        there = placement_state(self.sandbox_placement)
        for rc, out, err in (
                self.manage_run('allocations', 'restore', '--journal',
                                theirs),
                self.openstack('allocation', 'orphan', 'restore',
                               '--journal', mine),
                self.manage_run('allocations', 'restore', '--journal', mine,
                                conf_file=self.sandbox_conf)):
            self.assertEqual((127, ''), (rc, out))
            self.assertEqual(1, len(err.splitlines()), err)
            self.assertIn('refusing to restore it into another cloud', err)
        self.assertEqual(here, self.placement.dump_state())
        self.assertEqual(there, placement_state(self.sandbox_placement))
        # Each into its own cloud: restored.
        rc, out, err = self.manage_run('allocations', 'restore', '--journal',
                                       mine)
        self.assertEqual(4, rc, err)
        rc, out, err = self.openstack('allocation', 'orphan', 'restore',
                                      '--journal', theirs)
        self.assertEqual(4, rc, err)
