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
"""Every output format of both console scripts, on the same cloud.

A script switching from ``nova-orphans-manage`` to ``openstack`` (or
reading both) gets the same rows and the same fields: the JSON and YAML
keys, the CSV header, the table headers, one ``VCPU=1,MEMORY_MB=512,
DISK_GB=1`` field for the resources in value and CSV (standard classes
first) and an empty field, never ``None``, where there is no value.
Only what the compute API cannot know differs: the cell (null) and the
details' wording.
"""

import csv
import io
import json
import uuid as uuidlib

import yaml

from nova_orphans import exit_codes
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional import front_ends

RESOURCES = 'VCPU=1,MEMORY_MB=512,DISK_GB=1'
# What only nova's databases show.
DATABASE_ONLY = ('cell', 'details')


class FormatsTestCase(front_ends.FrontEndsTestCase):

    def test_both_front_ends_print_the_same_rows(self):
        host1 = self.add_node('host1')
        self.boot('host1', host1)
        gone = self.boot('host1', host1, vm_state='error')
        self.nova.force_delete_instance('cell1', gone)
        stranger = str(uuidlib.uuid4())
        self.allocate(stranger, host1)
        formats = ('json', 'yaml', 'csv', 'value', 'table')
        results = self.run_all(*(
            [self.manage_argv('allocations', 'list', '--format', fmt)
             for fmt in formats] +
            [self.openstack_argv('allocation', 'orphan', 'list', '-f', fmt,
                                 '--long')
             for fmt in formats]))
        for rc, out, err in results:
            self.assertEqual((exit_codes.ORPHANS_FOUND, ''), (rc, err))
        manage = {fmt: out for fmt, (_rc, out, _err)
                  in zip(formats, results[:5])}
        osc = {fmt: out for fmt, (_rc, out, _err)
               in zip(formats, results[5:])}

        # JSON and YAML: the same documents, the same keys.
        rows = {}
        for name, outs in (('manage', manage), ('openstack', osc)):
            rows[name] = sorted(json.loads(outs['json']),
                                key=lambda r: r['consumer'])
            self.assertEqual(rows[name], sorted(
                yaml.safe_load(outs['yaml']), key=lambda r: r['consumer']))
        keys = list(rows['manage'][0])
        for row in rows['manage'] + rows['openstack']:
            self.assertEqual(keys, list(row))
        self.assertEqual(['cell1', 'cell1'],
                         [r['cell'] for r in rows['manage']])
        self.assertEqual([None, None],
                         [r['cell'] for r in rows['openstack']])
        self.assertEqual(
            [{k: v for k, v in r.items() if k not in DATABASE_ONLY}
             for r in rows['manage']],
            [{k: v for k, v in r.items() if k not in DATABASE_ONLY}
             for r in rows['openstack']])
        self.assertEqual(
            sorted([(gone, gone, 'deleted_instance'),
                    (stranger, None, 'unknown_consumer')]),
            [(r['consumer'], r['instance'], r['reason'])
             for r in rows['manage']])

        # CSV: the same header; the fields of the JSON rows, resources
        # as one field, empty for null.
        def fields(row):
            return [RESOURCES if k == 'resources' else
                    '' if row[k] is None else str(row[k]) for k in keys]

        for name, outs in (('manage', manage), ('openstack', osc)):
            header, *lines = csv.reader(io.StringIO(outs['csv']))
            self.assertEqual(keys, header, name)
            self.assertEqual(sorted(fields(r) for r in rows[name]),
                             sorted(lines), name)
            # value: the same fields, space-separated.
            self.assertEqual(
                sorted(' '.join(fields(r)) for r in rows[name]),
                sorted(outs['value'].splitlines()), name)
        self.assertEqual(manage['csv'].splitlines()[0],
                         osc['csv'].splitlines()[0])

        # Tables: the same headers (openstack's --long shows them all,
        # as nova-orphans-manage's --verbose).
        verbose = self.run_one(self.manage_argv(
            'allocations', 'list', '--verbose', '--max-width', '0'))[1]
        self.assertEqual(
            [h.strip() for h in verbose.splitlines()[1].split('|')],
            [h.strip() for h in osc['table'].splitlines()[1].split('|')])
        self.assertEqual(
            manage['table'].splitlines()[1],
            self.run_one(self.openstack_argv(
                'allocation', 'orphan', 'list'))[1].splitlines()[1])


# The databases on MariaDB, as production runs them.
FormatsMariaDBTestCase = base.on_mariadb(FormatsTestCase)
