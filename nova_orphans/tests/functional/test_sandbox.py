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
"""tools/sandbox --keep without a terminal, stopped by a signal.

While it runs, both front ends read it: nova-orphans-manage through the
databases, openstack through nova's own compute API.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import fixtures
from oslotest import base
import requests

from nova_orphans.tests.functional.fixtures import nova_db

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
READY = 'Stop it with Ctrl-C, or: kill -TERM '


class KeepTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        # Its own temp dir, to see that nothing is left in it; nova's
        # migrated schema is the machine's cache, shared as the tests do.
        self.tmp = self.useFixture(fixtures.TempDir()).path
        cache = nova_db.schema_templates()
        os.symlink(cache, os.path.join(self.tmp, os.path.basename(cache)))
        self.cache = os.path.basename(cache)

    def start(self):
        proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, 'tools', 'sandbox.py'),
             '--keep'],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True,
            env=dict(os.environ, TMPDIR=self.tmp))
        self.addCleanup(proc.stdout.close)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith(READY):
                break
        out = ''.join(lines)
        self.assertIn(READY + '%d\n' % proc.pid, out)
        return proc, out

    def stop(self, signum):
        proc, out = self.start()
        conf = re.search(r'--config-file (\S+) allocations clean --dry-run',
                         out).group(1)
        self.assertTrue(os.path.isabs(conf), conf)
        activate = re.search(r'^  \. (\S+)$', out, re.M).group(1)
        self.assertTrue(os.path.isabs(activate), activate)
        self.assertTrue(os.path.exists(activate), activate)
        # Still serving with stdin at end of file.
        time.sleep(1)
        self.assertIsNone(proc.poll())
        bin_dir = os.path.dirname(activate)
        done = subprocess.run(
            [os.path.join(bin_dir, 'nova-orphans-manage'), '--config-file',
             conf, 'allocations', 'list', '--format', 'json'],
            capture_output=True, text=True, stdin=subprocess.DEVNULL)
        self.assertEqual(3, done.returncode, done.stderr)
        manage_rows = json.loads(done.stdout)
        compute = re.search(r'compute_endpoint_override: (\S+)', out).group(1)
        if signum == signal.SIGTERM:
            # The plugin, through nova's own compute API: same findings.
            clouds = re.search(r'^  export OS_CLIENT_CONFIG_FILE=(\S+)$', out,
                               re.M).group(1)
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith('OS_')}
            done = subprocess.run(
                [os.path.join(bin_dir, 'openstack'), '--os-cloud', 'sandbox',
                 'allocation', 'orphan', 'list', '-f', 'json'],
                capture_output=True, text=True, stdin=subprocess.DEVNULL,
                env=dict(env, OS_CLIENT_CONFIG_FILE=clouds))
            self.assertEqual((0, ''), (done.returncode, done.stderr))
            key = (lambda r: (r['consumer'], r['resource_provider'],
                              r['reason'], r['action']))
            self.assertEqual(sorted(map(key, manage_rows)),
                             sorted(map(key, json.loads(done.stdout))))
            self.assertEqual(5, len(manage_rows))
        proc.send_signal(signum)
        rest = proc.stdout.read()
        self.assertEqual(0, proc.wait(timeout=60), rest)
        self.assertEqual(
            'Sandbox stopped (%s); its directories are removed.\n' %
            signal.Signals(signum).name, rest)
        self.assertFalse(os.path.exists(conf))
        self.assertEqual([self.cache], os.listdir(self.tmp))
        # nova's compute API went with it.
        self.assertRaises(requests.ConnectionError, requests.get, compute,
                          timeout=10)

    def test_sigterm(self):
        self.stop(signal.SIGTERM)

    def test_sigint(self):
        self.stop(signal.SIGINT)
