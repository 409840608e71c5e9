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
"""Both front ends installed in each supported release's environment.

tools/release-envs/build.py installs the wheel with each release's upper
constraints, on Python 3.9 (Debian bullseye's, as the RHEL 9 family
runs nova) and 3.11; NOVA_ORPHANS_RELEASE_ENVS is the directory it made
them in (tools/release-envs/check, which .ci/run calls, sets it). A
suite of its own, not tools/run-tests': it needs the wheel and the
environments built first. From each, against the same cloud, both
console scripts must give what the test venv's own give, which run on
today's libraries:

* through an ``admin_token`` clouds.yaml and nova.conf (the sandbox's):
  ``list`` of both (JSON, and the table a terminal of 100 columns gets,
  with its summary lines), then ``clean`` and ``restore`` of each, with
  the exit codes and placement's state each leaves;
* through a real keystone with a user's password (clouds.yaml for
  ``openstack``, ``[placement]`` for ``nova-orphans-manage``): ``list``.

The libraries differ (SQLAlchemy 1.4, oslo.db 12, cliff 4.2, osc-lib 2.7,
openstacksdk 1.0 to 4.x, keystoneauth1 5.1 to 5.15), the findings and
exit codes must not.
"""

import json
import os
import re
import subprocess

import fixtures
from oslotest import base

from nova_orphans import exit_codes
from nova_orphans.tests.functional import front_ends
from nova_orphans.tests.functional import processes
from nova_orphans.tests.functional import test_keystone_osc
from nova_orphans.tests import programs
from nova_orphans.tests import runners

ROOT = programs.REPO
VARIABLE = 'NOVA_ORPHANS_RELEASE_ENVS'
# How long one run may take.
TIMEOUT = 300


# tools/release-envs/build.py, whose ENVIRONMENTS these are.
BUILD = programs.tool('tools', 'release-envs', 'build.py')
NAMES = [BUILD.name(release, python)
         for release, python in BUILD.ENVIRONMENTS]


def environments(test):
    """The directory of the environments; skips (fails in CI) without."""
    where = os.environ.get(VARIABLE)
    if not where:
        if programs.in_ci():
            test.fail('CI=%s but %s is not set: .ci/run builds the '
                      'release environments' % (os.environ['CI'], VARIABLE))
        test.skipTest('no release environments (%s, see '
                      'tools/release-envs/build.py)' % VARIABLE)
    return where


def installed(test, env_name):
    """The bin directory of one environment."""
    path = os.path.join(environments(test), env_name, 'bin')
    if not os.path.isdir(path):
        test.fail('%s was not built in %s' % (env_name,
                                              os.environ[VARIABLE]))
    return path


class AdminTokenTestCase(front_ends.FrontEndsTestCase):
    """The sandbox's way in: nova.conf, and ``admin_token`` in
    clouds.yaml (the one openstacksdk 3.0.0 to 4.4.x lose, see
    nova_orphans.osc.plugin.admin_token).
    """

    def check(self, env_name):
        bin_dir = installed(self, env_name)
        cloud = processes.Cloud(self, deleted=1, strangers=2, evacuated=1,
                                returned=1, live=1)
        before = cloud.state()
        env = runners.outside(self.environment())

        def manage(*argv):
            return (runners.manage_argv(*argv, conf_file=self.conf_file,
                                        bin_dir=bin_dir), env)

        def openstack(*argv):
            return (runners.openstack_argv(*argv, cloud='cloud',
                                           bin_dir=bin_dir), env)

        listing = ('allocations', 'list', '--all', '--format', 'json')
        osc_listing = ('allocation', 'orphan', 'list', '--all', '-f', 'json')
        # Tables as a terminal of 100 columns gets them (cliff and
        # PrettyTable of the release), summary lines included.
        table = ('allocations', 'list', '--max-width', '100')
        osc_table = ('allocation', 'orphan', 'list', '--max-width', '100')
        today = self.run_all(self.manage_argv(*listing),
                             self.openstack_argv(*osc_listing),
                             self.manage_argv(*table),
                             self.openstack_argv(*osc_table))
        there = runners.run_all([manage(*listing), openstack(*osc_listing),
                                 manage(*table), openstack(*osc_table)],
                                cwd=self.tmp, timeout=TIMEOUT)
        for (rc, out, err), (want_rc, want, want_err) in zip(
                there[:2], today):
            self.assertEqual((exit_codes.ORPHANS_FOUND, ''),
                             (want_rc, want_err))
            self.assertEqual((want_rc, ''), (rc, err))
            self.assertEqual(json.loads(want), json.loads(out))
        self.assertEqual(today[2:], there[2:])
        listed = {name: [r for r in json.loads(out) if r['action'] != 'none']
                  for name, (_rc, out, _err) in zip(('manage', 'osc'),
                                                    today[:2])}
        self.assertEqual(cloud.orphans, len({
            r['consumer'] for r in listed['manage']}))

        for name, front_end, clean, restore in (
                ('manage', manage, ('allocations', 'clean'),
                 ('allocations', 'restore')),
                ('osc', openstack, ('allocation', 'orphan', 'clean'),
                 ('allocation', 'orphan', 'restore'))):
            fmt = ('--format', 'json') if name == 'manage' else ('-f',
                                                                 'json')
            journal = os.path.join(self.tmp, name + '.jsonl')
            [(rc, out, err)] = runners.run_all(
                [front_end(*(clean + ('--journal', journal) + fmt))],
                cwd=self.tmp, timeout=TIMEOUT)
            self.assertEqual(exit_codes.REPAIRED, rc, err)
            # Where the journal is and how to undo: nothing else.
            self.assertEqual(['Journal: ' + journal, 'To undo:'],
                             [line[:len('To undo:')] if n else line
                              for n, line in enumerate(err.splitlines())])
            rows = json.loads(out)
            self.assertEqual({'done'}, {r.pop('outcome') for r in rows})
            self.assertEqual(listed[name], rows, name)
            self.assertEqual(cloud.repaired(before), cloud.state(), name)
            [(rc, out, err)] = runners.run_all(
                [front_end(*(restore + ('--journal', journal) + fmt))],
                cwd=self.tmp, timeout=TIMEOUT)
            self.assertEqual((exit_codes.REPAIRED, ''), (rc, err), name)
            self.assertEqual({'done'},
                             {r['outcome'] for r in json.loads(out)})
            self.assertEqual(before, cloud.state(), name)


class KeystoneTestCase(test_keystone_osc.OpenStackBase):
    """A user's password, through a real keystone's catalog: every
    environment's ``list`` of both front ends, at once, on one cloud.
    """

    def test_every_environment_lists_what_today_lists(self):
        where = environments(self)
        manage_conf = self.password_conf()
        cloud = self.clouds_yaml()
        env = runners.environment(**cloud)
        want = {}
        for name, argv in (
                ('manage', runners.manage_argv(
                    'allocations', 'list', '--format', 'json',
                    conf_file=manage_conf)),
                ('osc', runners.openstack_argv(
                    'allocation', 'orphan', 'list', '-f', 'json'))):
            [want[name]] = runners.run_all([(argv, env)], cwd=self.tmp,
                                           timeout=TIMEOUT)
            self.assertEqual((exit_codes.ORPHANS_FOUND, ''),
                             (want[name][0], want[name][2]), name)
        self.assertEqual(self.orphans, sorted(
            {r['consumer'] for r in json.loads(want['manage'][1])}))
        commands, labels = [], []
        for env_name in NAMES:
            bin_dir = os.path.join(where, env_name, 'bin')
            commands += [
                (runners.manage_argv(
                    'allocations', 'list', '--format', 'json',
                    conf_file=manage_conf, bin_dir=bin_dir),
                 runners.outside(env)),
                (runners.openstack_argv(
                    'allocation', 'orphan', 'list', '-f', 'json',
                    bin_dir=bin_dir), runners.outside(env))]
            labels += [(env_name, 'manage'), (env_name, 'osc')]
        # Two at a time: every environment's, on two cores.
        results = []
        for first in range(0, len(commands), 2):
            results += runners.run_all(commands[first:first + 2],
                                       cwd=self.tmp, timeout=TIMEOUT)
        differ = []
        for (env_name, front_end), (rc, out, err) in zip(labels, results):
            want_rc, want_out, _err = want[front_end]
            if (rc, err) != (want_rc, '') or \
                    json.loads(out or 'null') != json.loads(want_out):
                differ.append('%s %s: exit %d, %s\n%s' % (
                    env_name, front_end, rc, err.strip(), out[:2000]))
        self.assertEqual([], differ)


# DevStack's setup_develop DIR EXTRAS, as its pip_install runs it on
# every branch from stable/2023.1 on (inc/python: "Always apply
# constraints"): pip install -c $REQUIREMENTS_DIR/upper-constraints.txt
# -e DIR[EXTRAS], here into the release's environment as a dry run (the
# environment keeps the wheel the other tests run).
DEVSTACK = '''
DEST=/opt/stack DATA_DIR=/opt/stack/data
is_service_enabled() { return 0; }
enable_service() { :; }
echo_summary() { :; }
setup_develop() {
    "$PYTHON" -m pip install --dry-run --disable-pip-version-check \\
        -c "$REQUIREMENTS_DIR/upper-constraints.txt" -e "$1[$2]"
}
NOVA_ORPHANS_DIR=$TREE
source devstack/settings
source devstack/plugin.sh stack install
'''


class DevstackTestCase(base.BaseTestCase):
    """``enable_plugin nova-orphans`` on the oldest and the newest
    branch (the wheel installs under every release's pins: build.py).
    """

    def test_install_phase_under_the_branch_constraints(self):
        where = environments(self)
        tmp = self.useFixture(fixtures.TempDir()).path
        failed = []
        for release, python in (BUILD.ENVIRONMENTS[2],
                                BUILD.ENVIRONMENTS[-1]):
            requirements = os.path.join(tmp, release)
            os.makedirs(requirements)
            os.symlink(os.path.join(BUILD.CONSTRAINTS, release + '.txt'),
                       os.path.join(requirements, 'upper-constraints.txt'))
            env = dict(runners.outside(),
                       PYTHON=os.path.join(where, BUILD.name(release,
                                                             python),
                                           'bin', 'python'),
                       REQUIREMENTS_DIR=requirements, TREE=ROOT)
            done = subprocess.run(['bash', '-c', DEVSTACK], cwd=ROOT,
                                  env=env, capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL, timeout=300)
            # Everything else the release pins is there already: only
            # the tree itself would be installed.
            would = [line for line in done.stdout.splitlines()
                     if line.startswith('Would install')]
            if done.returncode or len(would) != 1 or \
                    not re.match(r'^Would install nova-orphans-\S+$',
                                 would[0]):
                failed.append('%s: exit %d\n%s%s' % (
                    release, done.returncode, done.stdout[-2000:],
                    done.stderr[-2000:]))
        self.assertEqual([], failed)


def _add_tests():
    for env_name in NAMES:
        def test(self, env_name=env_name):
            self.check(env_name)
        test.__name__ = 'test_' + env_name.replace('.', '_').replace(
            '-', '_')
        test.__doc__ = 'list, clean and restore from %s.' % env_name
        setattr(AdminTokenTestCase, test.__name__, test)


_add_tests()
