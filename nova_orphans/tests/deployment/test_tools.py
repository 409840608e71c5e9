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
"""deploy/ read by the deployment projects' own tools, from the
virtualenv tools/deploy/check makes (NOVA_ORPHANS_DEPLOY_TOOLS, its bin
directory; tools/deploy/requirements.txt): every Kubernetes manifest and
the openstack-helm values against the API schemas of the Kubernetes
releases openstack-helm deploys, the Containerfile through hadolint, the
Ansible role through ansible-lint and run for real by ansible-playbook
into a scratch directory (the wheel NOVA_ORPHANS_WHEEL installed with a
release's upper constraints), twice, and the units it wrote through
systemd-analyze verify.
"""

import grp
import os
import pwd
import re
import shutil
import subprocess

import fixtures
from oslotest import base
import yaml

from nova_orphans.tests import deploy
from nova_orphans.tests import programs

TOOLS = 'NOVA_ORPHANS_DEPLOY_TOOLS'
WHEEL = 'NOVA_ORPHANS_WHEEL'
# openstack-helm's CI deploys 1.35 (roles/deploy-env); its recent
# branches ran 1.30 to 1.33.
KUBERNETES = ('1.30.0', '1.33.0', '1.35.0')
# The release whose constraints the role installs with.
RELEASE = '2025.1'
UNITS = ('nova-orphans-metrics.service', 'nova-orphans-metrics.timer',
         'nova-orphans-clean.service', 'nova-orphans-clean.timer')


def tool(test, name):
    """A program of the tools' virtualenv; skips (fails in CI) without."""
    directory = os.environ.get(TOOLS)
    if not directory:
        if programs.in_ci():
            test.fail('%s is not set: tools/deploy/check sets it' % TOOLS)
        test.skipTest('%s not set: run tools/deploy/check' % TOOLS)
    return os.path.join(directory, name)


def run(test, argv, **kwargs):
    proc = subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          stdin=subprocess.DEVNULL, timeout=600, **kwargs)
    test.assertEqual(0, proc.returncode,
                     '%s:\n%s' % (' '.join(argv), proc.stdout))
    return proc.stdout


class KubernetesTestCase(base.BaseTestCase):

    def test_manifests_and_values_validate(self):
        """Strict: a misspelt or misplaced field fails too."""
        validate = tool(self, 'kubernetes-validate')
        tmp = self.useFixture(fixtures.TempDir()).path
        rendered = os.path.join(tmp, 'openstack-helm-values.yaml')
        objects = deploy.openstack_helm_objects()
        with open(rendered, 'w') as f:
            yaml.safe_dump_all(list(objects.values()), f)
        files = [os.path.join(deploy.KUBERNETES, name)
                 for name in sorted(os.listdir(deploy.KUBERNETES))
                 if name.endswith('.yaml') and 'values' not in name]
        self.assertEqual(2, len(files))
        for version in KUBERNETES:
            out = run(self, [validate, '--strict', '--quiet', '-k', version]
                      + files + [rendered])
            self.assertEqual('', out, version)
        # What it checks: one field misspelt in the rendered values.
        with open(rendered) as f:
            text = f.read()
        with open(rendered, 'w') as f:
            f.write(text.replace('successfulJobsHistoryLimit',
                                 'successfulJobHistoryLimit'))
        proc = subprocess.run([validate, '--strict', '--quiet', '-k',
                               KUBERNETES[0], rendered],
                              capture_output=True, text=True)
        self.assertEqual(1, proc.returncode)
        self.assertIn("'successfulJobHistoryLimit' was unexpected",
                      proc.stdout + proc.stderr)


class ContainerfileTestCase(base.BaseTestCase):

    def test_hadolint(self):
        self.assertEqual('', run(self, [
            tool(self, 'hadolint'),
            os.path.join(deploy.CONTAINER, 'Containerfile')]))


class AnsibleTestCase(base.BaseTestCase):
    """One scratch directory for the class: the role's first run
    installs the wheel (pip, the network), the others reuse it.
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.scratch = fixtures.TempDir()
        cls.scratch.setUp()
        cls.runs = {}

    @classmethod
    def tearDownClass(cls):
        cls.scratch.cleanUp()
        super().tearDownClass()

    def playbook(self, name, **variables):
        """ansible-playbook of the sample playbook, the role's variables
        ``variables`` in a file of ``name``: its PLAY RECAP counts.
        """
        path = os.path.join(self.scratch.path, name + '.yml')
        with open(path, 'w') as f:
            yaml.safe_dump(dict(variables, nova_orphans_hosts='localhost'),
                           f)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(('OS_', 'ANSIBLE_'))}
        # Nothing written outside the scratch directory (~/.ansible).
        env.update(ANSIBLE_ROLES_PATH=os.path.join(deploy.ANSIBLE, 'roles'),
                   ANSIBLE_HOME=os.path.join(self.scratch.path, 'home'),
                   ANSIBLE_LOCAL_TEMP=os.path.join(self.scratch.path, 'tmp'),
                   ANSIBLE_REMOTE_TEMP=os.path.join(self.scratch.path, 'tmp'),
                   ANSIBLE_NOCOLOR='1')
        out = run(self, [
            tool(self, 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
            '-e', 'ansible_python_interpreter=' + tool(self, 'python'),
            '-e', '@' + path,
            os.path.join(deploy.ANSIBLE, 'playbooks', 'nova-orphans.yml')],
            env=env)
        [recap] = re.findall(r'localhost\s*:\s*(.*)', out)
        return {k: int(v) for k, v in re.findall(r'(\w+)=(\d+)', recap)}

    def venv_role(self):
        """The role run twice into the scratch directory: the two runs'
        counts, the units' directory and the virtualenv.
        """
        if 'venv' not in self.runs:
            wheel = os.environ.get(WHEEL)
            if not wheel:
                tool(self, 'python')
                self.fail('%s is not set: tools/deploy/check sets it' % WHEEL)
            units = os.path.join(self.scratch.path, 'systemd')
            venv = os.path.join(self.scratch.path, 'venv')
            variables = dict(
                nova_orphans_venv=venv, nova_orphans_wheel=wheel,
                nova_orphans_upper_constraints_url=os.path.join(
                    programs.REPO, 'tools', 'release-envs', 'constraints',
                    RELEASE + '.txt'),
                nova_orphans_systemd_dir=units,
                nova_orphans_metrics_dir=os.path.join(self.scratch.path,
                                                      'metrics'),
                nova_orphans_system_user_name=_user(),
                nova_orphans_system_group_name=_group(),
                nova_orphans_clean=True)
            self.runs['venv'] = ([self.playbook('venv', **variables),
                                  self.playbook('venv', **variables)],
                                 units, venv)
        return self.runs['venv']

    def test_venv_role_installs_and_is_idempotent(self):
        (first, second), units, venv = self.venv_role()
        self.assertEqual(0, first['failed'])
        self.assertLess(0, first['changed'])
        self.assertEqual((0, 0), (second['failed'], second['changed']))
        out = run(self, [os.path.join(venv, 'bin', 'nova-orphans-manage'),
                         '--version'])
        self.assertRegex(out, r'^\d+\.\d+\.\d+')
        # The release's pins, as the release environments check them.
        build = programs.tool('tools', 'release-envs', 'build.py')
        self.assertEqual([], build.unpinned(
            build.installed(os.path.join(venv, 'bin', 'python')),
            build.pinned(RELEASE)))
        self.assertEqual(sorted(UNITS + tuple(u + '.d' for u in UNITS)),
                         sorted(os.listdir(units)))
        for name in UNITS:
            with open(os.path.join(units, name)) as f, open(os.path.join(
                    deploy.SYSTEMD, name)) as shipped:
                self.assertEqual(shipped.read(), f.read(), name)
        keys = deploy.unit('nova-orphans-clean.service', 'venv.conf',
                           'nova-orphans-role.conf', directory=units)
        self.assertEqual(
            ['flock ${NOVA_ORPHANS_LOCK} %s/bin/nova-orphans-manage '
             '--config-file ${NOVA_ORPHANS_CONFIG} allocations clean '
             '--metrics-file ${NOVA_ORPHANS_CLEAN_METRICS}' % venv],
            keys['ExecStart'])
        self.assertEqual([_user()], keys['User'][-1:])
        timer = deploy.unit('nova-orphans-clean.timer',
                            'nova-orphans-role.conf', directory=units)
        self.assertEqual((['*-*-* 03:30:00'], ['1800']), (
            timer['OnCalendar'], timer['RandomizedDelaySec'][-1:]))

    def test_venv_units_verify(self):
        _counts, units, _venv = self.venv_role()
        self.assertEqual('', programs.run(
            self, 'systemd-analyze', 'verify', '--man=no',
            *[os.path.join(units, name) for name in UNITS]))

    def test_kolla_role(self):
        """The docker exec variant, with the shipped files the venv run
        installed standing in for those copied out of nova_api.
        """
        _counts, _units, venv = self.venv_role()
        units = os.path.join(self.scratch.path, 'kolla-systemd')
        state = os.path.join(self.scratch.path, 'kolla')
        engine = shutil.which('podman') or shutil.which('docker') or 'docker'
        variables = dict(
            nova_orphans_install_method='kolla',
            nova_orphans_share_dir=os.path.join(venv, 'share',
                                                'nova-orphans'),
            nova_orphans_kolla_state_dir=state,
            nova_orphans_kolla_uid=os.getuid(),
            nova_orphans_kolla_container_engine=engine,
            nova_orphans_systemd_dir=units)
        first = self.playbook('kolla', **variables)
        second = self.playbook('kolla', **variables)
        self.assertEqual((0, 0, 0), (first['failed'], second['failed'],
                                     second['changed']))
        keys = deploy.unit('nova-orphans-metrics.service',
                           'nova-orphans-role.conf', directory=units)
        self.assertEqual(
            ['%s exec --user nova nova_api flock ${NOVA_ORPHANS_LOCK} '
             'nova-orphans-manage --config-file ${NOVA_ORPHANS_CONFIG} '
             'allocations list --format prometheus --metrics-file '
             '${NOVA_ORPHANS_METRICS}' % engine], keys['ExecStart'])
        self.assertEqual(
            {'NOVA_ORPHANS_LOCK': state + '/lock',
             'NOVA_ORPHANS_CONFIG': '/etc/nova/nova.conf',
             'NOVA_ORPHANS_METRICS': state + '/metrics/nova_orphans.prom',
             'NOVA_ORPHANS_CLEAN_METRICS':
                 state + '/metrics/nova_orphans_clean.prom'},
            deploy.environment(keys))
        self.assertEqual((['root'], []), (keys['User'][-1:],
                                          keys['StateDirectory']))
        self.assertEqual((0o711, 0o755), (
            os.stat(state).st_mode & 0o7777,
            os.stat(os.path.join(state, 'metrics')).st_mode & 0o7777))
        if os.path.isabs(engine):
            self.assertEqual('', programs.run(
                self, 'systemd-analyze', 'verify', '--man=no',
                *[os.path.join(units, name) for name in UNITS]))

    def test_ansible_lint(self):
        lint = tool(self, 'ansible-lint')
        # Its caches (ansible-compat's, ~/.ansible) in a directory of
        # the test's.
        home = self.useFixture(fixtures.TempDir()).path
        out = run(self, [lint, '--nocolor'], cwd=deploy.ANSIBLE, env=dict(
            os.environ, HOME=home, XDG_CACHE_HOME=home,
            ANSIBLE_HOME=os.path.join(home, '.ansible'),
            ANSIBLE_ROLES_PATH=os.path.join(deploy.ANSIBLE, 'roles'),
            PATH=os.pathsep.join([os.path.dirname(lint),
                                  os.environ['PATH']])))
        # The production profile, deploy/ansible/.ansible-lint's.
        self.assertIn('Passed: 0 failure(s), 0 warning(s)', out)
        self.assertIn("'production'", out)


def _user():
    return pwd.getpwuid(os.getuid()).pw_name


def _group():
    return grp.getgrgid(os.getgid()).gr_name
