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
"""Programs from distribution packages that some tests run, and what
the tests know of the processes they start (this_tree_first, children).

Outside CI a test skips, saying what to install, when its program is
missing; in CI (``CI`` set to 1, true or yes, as .ci/run does) it fails:
the checks must run there.
"""

import importlib.machinery
import importlib.util
import os
import re
import shutil
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# Debian packages (see bindep.txt).
PACKAGES = {'promtool': 'prometheus', 'prometheus': 'prometheus',
            'prometheus-node-exporter': 'prometheus-node-exporter',
            'faketime': 'faketime', 'systemd-analyze': 'systemd'}


def tool(*path):
    """The script at ``path`` under the repository (tools/...) as a
    module, loaded by its file name (a name with dashes imports no other
    way): its functions and data are what the tests check.
    """
    location = os.path.join(REPO, *path)
    name = 'nova_orphans_tool_' + re.sub(r'\W', '_', '_'.join(path))
    # A Python source whatever its name ends with (tools/deploy's have
    # no .py).
    spec = importlib.util.spec_from_file_location(
        name, location,
        loader=importlib.machinery.SourceFileLoader(name, location))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def this_tree_first(env):
    """``env`` (a process's environment, changed in place) importing
    this very tree first, as the tests' own processes do.
    """
    env['PYTHONPATH'] = os.pathsep.join(
        [REPO] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep)
                  if p])
    return env


def children(pid):
    """The pids of ``pid``'s children that are still running (Linux)."""
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != 'Z':
            found.append(int(entry))
    return found


def in_ci():
    return os.environ.get('CI', '').lower() in ('1', 'true', 'yes')


def require(test, program):
    """The path of ``program``; else skip ``test``, or fail it in CI."""
    path = shutil.which(program)
    if path:
        return path
    package = PACKAGES[program]
    if in_ci():
        test.fail('CI=%s but %s is missing: install %s' % (
            os.environ['CI'], program, package))
    test.skipTest('%s missing: apt-get install -y %s to run this test' % (
        program, package))


def run(test, program, *argv, stdin=None):
    """``program ARGV`` run to its end; the test fails unless it exits 0.

    Returns its stdout and stderr together.
    """
    proc = subprocess.run([require(test, program)] + list(argv), input=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, cwd=REPO, timeout=120)
    test.assertEqual(0, proc.returncode, '%s %s:\n%s' % (
        program, ' '.join(argv), proc.stdout))
    return proc.stdout


def check_metrics(test, text):
    """``promtool check metrics`` passes ``text``, without a warning."""
    test.assertEqual('', run(test, 'promtool', 'check', 'metrics',
                             stdin=text))
