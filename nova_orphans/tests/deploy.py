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
"""The shipped deployment files (etc/), read as systemd and cron do, and
the deployment projects' (deploy/), read as Kubernetes and Helm do.
"""

import os
import re
import shlex

import yaml

from nova_orphans.tests import programs

ETC = os.path.join(programs.REPO, 'etc')
SYSTEMD = os.path.join(ETC, 'systemd')
CRON = os.path.join(ETC, 'cron')
PROMETHEUS = os.path.join(ETC, 'prometheus')
DEPLOY = os.path.join(programs.REPO, 'deploy')
KUBERNETES = os.path.join(DEPLOY, 'kubernetes')
CONTAINER = os.path.join(DEPLOY, 'container')
ANSIBLE = os.path.join(DEPLOY, 'ansible')
HELM_VALUES = os.path.join(KUBERNETES, 'openstack-helm-values.yaml')
# Where etc/cron/nova-orphans expects etc/cron/nova-orphans-metrics.
METRICS_SCRIPT = '/usr/local/bin/nova-orphans-metrics'
RULES = os.path.join(PROMETHEUS, 'nova-orphans.rules.yaml')
UNITS = ('nova-orphans-metrics.service', 'nova-orphans-metrics.timer',
         'nova-orphans-clean.service', 'nova-orphans-clean.timer')
SERVICES = ('nova-orphans-metrics.service', 'nova-orphans-clean.service')
# The virtualenv the shipped drop-ins name.
VENV_BIN = '/opt/nova-orphans/bin'
# Each service's command, under the lock the two share (flock(1)).
LOCKED = 'ExecStart=flock ${NOVA_ORPHANS_LOCK} '


def unit(name, *dropins, directory=SYSTEMD):
    """{key: [values]} of a unit file in etc/systemd, sections merged,
    with the drop-ins named (``NAME.d/FILE``) applied as systemd applies
    them: an empty assignment resets a list (``ExecStart=``).
    """
    keys = {}
    paths = [os.path.join(directory, name)] + [
        os.path.join(directory, name + '.d', d) for d in dropins]
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith(('#', ';', '[')):
                    continue
                key, value = line.split('=', 1)
                if value:
                    keys.setdefault(key, []).append(value)
                else:
                    keys[key] = []
    return keys


def environment(keys):
    """The unit's Environment= assignments."""
    env = {}
    for value in keys.get('Environment', ()):
        for word in shlex.split(value):
            name, val = word.split('=', 1)
            env[name] = val
    return env


def exec_start(keys, env):
    """The unit's ExecStart= as argv, ``${NAME}`` expanded from ``env``
    as systemd does it (one word each).
    """
    [line] = keys['ExecStart']
    return [re.sub(r'\$\{(\w+)\}', lambda m: env[m.group(1)], word)
            for word in shlex.split(line)]


def success_codes(keys):
    return {0} | {int(c) for v in keys.get('SuccessExitStatus', ())
                  for c in v.split()}


def crontab(name):
    """(environment, [(schedule, user, command)]) of a cron.d file."""
    env, jobs = {}, []
    with open(os.path.join(CRON, name)) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            if re.match(r'^\w+=', line):
                name_, value = line.split('=', 1)
                env[name_] = value
                continue
            fields = line.split(None, 6)
            jobs.append((' '.join(fields[:5]), fields[5], fields[6]))
    return env, jobs


def manifests(name='nova-orphans.yaml'):
    """The objects of a file of deploy/kubernetes, in order."""
    with open(os.path.join(KUBERNETES, name)) as f:
        return [m for m in yaml.safe_load_all(f) if m]


def openstack_helm_objects():
    """{key: object} of the values file's extraObjects, as the nova
    chart renders them: ``tpl`` of each, which changes nothing in text
    without a template (the tests check there is none).
    """
    with open(HELM_VALUES) as f:
        return yaml.safe_load(f)['extraObjects']


def pod_command(container):
    """A container's command and arguments as words; a ``sh -c``
    script's own words (its continuation lines joined), then the
    arguments.
    """
    command = list(container['command'])
    if command[:2] == ['/bin/sh', '-c']:
        command = command[2].replace('\\\n', ' ').split()
    return command + list(container.get('args', ()))
