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
"""The cloud each journal run names, as ``journals list`` shows and
filters it, and the undo hint of ``openstack``.
"""

import os
import types

import fixtures
from oslotest import base

from nova_orphans.app import journals
from nova_orphans.app import report
from nova_orphans.osc.v1 import orphan
from nova_orphans.repair import journal

OSC = {'name': 'prod', 'auth_url': 'https://keystone.example:5000/v3',
       'region': 'RegionOne', 'project': 'admin'}


class ListTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def clean(self, name, placement, cloud):
        path = os.path.join(self.dir, name)
        j = journal.Journal(path, placement=placement, cloud=cloud)
        j.record({'action': 'delete_consumer', 'consumers': {name: {
            'before': {'allocations': {}}, 'after': {}}}})
        j.close()
        return path

    def test_cloud_shown_and_filtered(self):
        conf = os.path.join(self.dir, 'nova.conf')
        osc = self.clean('journal-1.jsonl', 'https://placement.example',
                         OSC)
        manage = self.clean('journal-2.jsonl', 'http://ctl:8778/',
                            {'config_files': [conf]})
        env = self.clean('journal-3.jsonl', 'https://placement.other',
                         dict(OSC, name=None,
                              auth_url='https://keystone.other/v3'))
        old = self.clean('journal-4.jsonl', 'http://old:8778', None)
        self.assertEqual(
            [(osc, 'prod', 'https://placement.example'),
             (manage, conf, 'http://ctl:8778/'),
             (env, 'https://keystone.other/v3', 'https://placement.other'),
             (old, None, 'http://old:8778')],
            [(r['journal'], r['cloud'], r['placement'])
             for r in (row.to_dict()
                       for row in journals.list_runs(self.dir))])
        for cloud, expected in (
                ('prod', [osc]),
                ('https://keystone.example:5000/v3/', [osc]),
                ('https://placement.example', [osc]),
                (conf, [manage]),
                (os.path.relpath(conf), [manage]),
                ('http://ctl:8778', [manage]),
                ('https://keystone.other/v3', [env]),
                ('http://old:8778', [old]),
                ('RegionOne', []),
                ('admin', [])):
            self.assertEqual(
                expected,
                [r.journal for r in journals.list_runs(self.dir)
                 if journals.of_cloud(r, cloud)],
                cloud)


class UndoHintTestCase(base.BaseTestCase):

    def test_names_the_cloud(self):
        def command(cloud, argv):
            cmd = orphan.CleanOrphan(None, None)
            cmd.frontend_run = types.SimpleNamespace(
                context=types.SimpleNamespace(sources=lambda: (
                    types.SimpleNamespace(cloud=lambda: cloud))))
            return cmd.command_line(report.CommandLine(
                'allocations', 'restore', '--journal', argv))
        self.assertEqual('openstack --os-cloud prod allocation orphan '
                         'restore --journal /j/journal-1.jsonl',
                         command(OSC, '/j/journal-1.jsonl'))
        self.assertEqual("openstack allocation orphan restore --journal "
                         "'/my j/journal.jsonl'",
                         command(dict(OSC, name=None), '/my j/journal.jsonl'))
