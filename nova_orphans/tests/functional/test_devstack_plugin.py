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
"""The DevStack plugin, sourced by bash with DevStack's functions stubbed."""

import os
import subprocess

from oslotest import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

# Each DevStack function the plugin may call records its arguments.
STUBS = '''
DEST=/opt/stack DATA_DIR=/opt/stack/data STACK_USER=stack
NOVA_CONF=/etc/nova/nova.conf
calls() { echo "$*" >> "$CALLS"; }
enable_service() { calls enable_service "$@"; }
is_service_enabled() { [[ "$ENABLED" == yes ]]; }
echo_summary() { calls echo_summary "$@"; }
setup_develop() { calls setup_develop "$@"; }
iniset() { calls iniset "$@"; }
sudo() { calls sudo "$@"; }
openstack() { calls openstack "$@"; }
nova-orphans-manage() { calls nova-orphans-manage "$@"; }
source devstack/settings
source devstack/plugin.sh "$@"
'''


class DevstackPluginTestCase(base.BaseTestCase):

    def phase(self, *args, enabled='yes'):
        calls = os.path.join(self.useFixture(
            base.fixtures.TempDir()).path, 'calls')
        open(calls, 'w').close()
        subprocess.run(['bash', '-c', STUBS, 'plugin'] + list(args),
                       cwd=ROOT, check=True,
                       env={'PATH': os.environ['PATH'], 'CALLS': calls,
                            'ENABLED': enabled})
        with open(calls) as f:
            return [line for line in f.read().splitlines()
                    if not line.startswith('enable_service')]

    def test_install(self):
        self.assertEqual(
            ['echo_summary Installing nova-orphans',
             'setup_develop /opt/stack/nova-orphans osc'],
            self.phase('stack', 'install'))

    def test_post_config(self):
        self.assertEqual(
            ['echo_summary Configuring nova-orphans',
             'sudo install -d -o stack -m 0700 /opt/stack/data/nova-orphans',
             'iniset /etc/nova/nova.conf nova_orphans state_path '
             '/opt/stack/data/nova-orphans',
             'iniset /etc/nova/nova.conf nova_orphans cell_timeout 60'],
            self.phase('stack', 'post-config'))

    def test_test_config_runs_both_front_ends(self):
        self.assertEqual(
            ['echo_summary Checking placement allocations with nova-orphans',
             'openstack allocation orphan list',
             'nova-orphans-manage --config-file /etc/nova/nova.conf '
             'allocations list',
             'openstack resource provider orphan list',
             'nova-orphans-manage --config-file /etc/nova/nova.conf '
             'providers list'],
            self.phase('stack', 'test-config'))

    def test_clean(self):
        self.assertEqual(['sudo rm -rf /opt/stack/data/nova-orphans'],
                         self.phase('clean'))

    def test_other_phases_and_disabled_service_do_nothing(self):
        self.assertEqual([], self.phase('stack', 'pre-install'))
        self.assertEqual([], self.phase('stack', 'install', enabled='no'))

    def test_settings_enable_the_service(self):
        calls = os.path.join(self.useFixture(
            base.fixtures.TempDir()).path, 'calls')
        subprocess.run(['bash', '-c', STUBS, 'plugin', 'stack', 'extra'],
                       cwd=ROOT, check=True,
                       env={'PATH': os.environ['PATH'], 'CALLS': calls,
                            'ENABLED': 'yes'})
        with open(calls) as f:
            self.assertEqual(['enable_service nova-orphans'],
                             f.read().splitlines())
