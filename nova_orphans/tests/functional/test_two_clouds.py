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
compute API, for ``openstack --os-cloud sandbox``). Both are seeded by
the sandbox's seed, with the same uuids, as two clouds made from one
template are: shared uuids prove nothing, and each journal is refused
in the other cloud by every pair of front ends.
"""

import json
import os
import re
import subprocess
import sys

import requests
import yaml

from nova_orphans.repair import journal as journal_mod
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import nova_db
from nova_orphans.tests import programs
from nova_orphans.tests import runners

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
        # Both front ends' journal directory, by its default rule
        # (no state_path): $XDG_STATE_HOME/nova-orphans.
        self.xdg = os.path.join(self.tmp, 'xdg')
        self.journals = os.path.join(self.xdg, 'nova-orphans')
        self.conf_file = self.nova.write_nova_conf(
            os.path.join(self.tmp, 'nova.conf'), self.placement.endpoint,
            extra={'nova_orphans': {'cell_timeout': '20'}})
        # The sandbox's seed, its uuids: the same as the other cloud's.
        programs.tool('tools', 'sandbox.py').seed(self.placement, self.nova)
        self.start_sandbox()

    def start_sandbox(self):
        tmp = os.path.join(self.tmp, 'sandbox')
        os.mkdir(tmp)
        cache = nova_db.schema_templates()
        os.symlink(cache, os.path.join(tmp, os.path.basename(cache)))
        env = runners.environment(TMPDIR=tmp)
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
        # The sandbox's cloud, and this one as "here" (restore reads no
        # compute API).
        with open(clouds) as f:
            config = yaml.safe_load(f)
        config['clouds']['here'] = {
            'auth_type': 'admin_token',
            'auth': {'endpoint': self.placement.endpoint, 'token': 'admin'},
            'compute_endpoint_override': 'http://127.0.0.1:1'}
        clouds = os.path.join(self.tmp, 'clouds.yaml')
        with open(clouds, 'w') as f:
            yaml.safe_dump(config, f)
        self.env = runners.environment(XDG_STATE_HOME=self.xdg,
                                       OS_CLIENT_CONFIG_FILE=clouds)

    def checked(self, result):
        """A run's Result (runners), once checked for a traceback."""
        return self.assertRanCleanly(result)

    def manage_run(self, *argv, conf_file=None):
        return self.checked(runners.manage(
            *argv, conf_file=conf_file or self.conf_file, env=self.env,
            timeout=180))

    def openstack(self, *argv, cloud='sandbox'):
        return self.checked(runners.openstack(*argv, cloud=cloud,
                                              env=self.env, timeout=180))

    def state(self):
        """This cloud's allocations, consumer generations aside."""
        return self.placement.dump_state(generations=False)

    def test_journals_tell_their_clouds_apart(self):
        here, there = self.state(), placement_state(self.sandbox_placement)
        # The same providers, by uuid.
        self.assertEqual(set(there),
                         set(placement_state(self.placement.endpoint)))
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
        repaired = self.state()
        there_repaired = placement_state(self.sandbox_placement)
        # Each run's header names its cloud: never a password or a
        # database URL, the API database by its host and name.
        [run] = journal_mod.load(mine).runs
        self.assertEqual(
            ({'front_end': 'nova-orphans-manage',
              'config_files': [self.conf_file],
              'api_database': {'host': None, 'name': os.path.join(
                  self.nova.dir, 'nova_api.sqlite')}},
             self.placement.endpoint),
            (run.cloud, run.placement))
        [run] = journal_mod.load(theirs).runs
        self.assertEqual(
            ({'front_end': 'openstack', 'name': 'sandbox', 'auth_url': None,
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

        # Each journal restored into the other cloud, by either front
        # end: refused before any write, one line naming both clouds.
        for (rc, out, err), journal, theirs_at, ours_at in (
                (self.manage_run('allocations', 'restore', '--journal', mine,
                                 conf_file=self.sandbox_conf),
                 mine, self.placement, self.sandbox_placement),
                (self.openstack('allocation', 'orphan', 'restore',
                                '--journal', mine),
                 mine, self.placement, self.sandbox_placement),
                (self.manage_run('allocations', 'restore', '--journal',
                                 theirs),
                 theirs, self.sandbox_placement, self.placement),
                (self.openstack('allocation', 'orphan', 'restore',
                                '--journal', theirs, cloud='here'),
                 theirs, self.sandbox_placement, self.placement)):
            theirs_at = getattr(theirs_at, 'endpoint', theirs_at)
            ours_at = getattr(ours_at, 'endpoint', ours_at)
            self.assertEqual((127, ''), (rc, out))
            line, = err.splitlines()
            self.assertTrue(line.startswith(
                'ERROR: Journal %s: written against another '
                'cloud (placement %s, ' % (journal, theirs_at)), line)
            self.assertIn(') than the one this run reaches (placement %s, '
                          % ours_at, line)
            self.assertTrue(line.endswith(
                'If it is the same cloud, now reached at another address, '
                'restore with --journal-cloud %s' % theirs_at), line)
        self.assertEqual(repaired, self.state())
        self.assertEqual(there_repaired,
                         placement_state(self.sandbox_placement))

        # A copy of this cloud's journal cut at a line boundary, and
        # one cut inside a line: what verifies is restored exactly, and
        # 11 says the rest may be missing; the whole journal then
        # finishes the job.
        with open(mine, 'rb') as f:
            data = f.read()
        lines = data.split(b'\n')
        entries = journal_mod.load(mine).entries
        self.assertEqual(5, len(entries))
        for count, cut in ((2, len(b'\n'.join(lines[:3])) + 1),
                           (3, len(b'\n'.join(lines[:4])) + 200)):
            copy = os.path.join(self.tmp, 'cut-%d.jsonl' % count)
            with open(copy, 'wb') as f:
                f.write(data[:cut])
            rc, out, err = self.manage_run('allocations', 'restore',
                                           '--journal', copy, '-f', 'json')
            self.assertEqual(11, rc, err)
            self.assertIn('has no end record', err)
            restored = {c for e in entries[:count] for c in e['consumers']}
            self.assertEqual(
                {c: doc for c, doc in dict(repaired, **{
                    c: here.get(c) for c in restored}).items()
                 if doc is not None}, self.state(), count)
        rc, out, err = self.manage_run('allocations', 'restore', '--journal',
                                       mine)
        self.assertEqual((4, ''), (rc, err))
        self.assertEqual(here, self.state())

        # Named as the same cloud at another address, each restores:
        # this cloud's journal into the sandbox exactly, the sandbox's
        # here (this cloud is restored already: nothing to do).
        rc, out, err = self.openstack(
            'allocation', 'orphan', 'restore', '--journal', mine,
            '--journal-cloud', self.placement.endpoint)
        self.assertEqual((4, ''), (rc, err))
        self.assertEqual(there, placement_state(self.sandbox_placement))
        rc, out, err = self.manage_run(
            'allocations', 'restore', '--journal', theirs, '--journal-cloud',
            self.sandbox_placement, '-f', 'json')
        self.assertEqual((0, ''), (rc, err))
        self.assertEqual({'skipped: already as before'},
                         {r['outcome'] for r in json.loads(out)})
        self.assertEqual(here, self.state())
        # The last restore of this cloud's journal: into the sandbox,
        # by openstack.
        rc, out, err = self.manage_run('journals', 'list', '--format',
                                       'json', '--cloud', self.conf_file)
        row, = json.loads(out)
        self.assertEqual(
            (self.sandbox_placement, 'openstack', 'completed'),
            (row['restored_into'], row['restored_by'], row['ended']))
