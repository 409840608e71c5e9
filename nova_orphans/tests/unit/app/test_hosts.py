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
"""``list --group-by host``'s options, its refusals before anything is
read, and how its rows and summary are written.
"""

from oslotest import base

from nova_orphans.app import commands
from nova_orphans.app import hosts
from nova_orphans.app import options
from nova_orphans.app import sentences
from nova_orphans.app import sources as app_sources
from nova_orphans.engine import hosts as engine_hosts
from nova_orphans import exception
from nova_orphans import output

LIST = commands.find('allocations', 'list')
SMALL = {'name': 'm1.small', 'vcpus': 1, 'memory_mb': 512, 'root_gb': 1,
         'ephemeral_gb': 0, 'swap': 0, 'extra_specs': {}}


class Unread(Exception):
    """The scan began reading: it must not have."""


class FakeNova:

    def __init__(self, flavors):
        self._flavors = flavors
        self.asked = []

    def flavors(self, names):
        self.asked.append(list(names))
        return {n: f for n, f in self._flavors.items() if n in names}

    def read(self):
        raise Unread()


class FakePlacement:

    # A database reader's: nothing kept between scans.
    keeps_reads = False

    def __init__(self, classes):
        self.classes = classes

    def resource_classes(self):
        return frozenset(self.classes)

    def providers(self):
        raise Unread()


class FakeSources(app_sources.Sources):

    def __init__(self, flavors=(), classes=('VCPU', 'MEMORY_MB', 'DISK_GB')):
        self._nova = FakeNova(dict(flavors))
        self._placement = FakePlacement(classes)

    def nova(self):
        return self._nova

    def placement_reader(self):
        return self._placement


def run(sources, **given):
    given = dict({o.dest: None for o in LIST.options}, **dict(
        {'format': 'json'}, **given))
    values = options.resolve(LIST.options, given)
    context = commands.Context(lambda: sources, stop=None, warn=None)
    return commands.run(LIST, values, context)


class RefusedTestCase(base.BaseTestCase):
    """Bad shapes: one line (InvalidInput: exit 127), nothing read."""

    def assertRefused(self, line, sources=None, **given):
        e = self.assertRaises(exception.InvalidInput, run,
                              sources or FakeSources(), **given)
        self.assertEqual('Invalid input: ' + line, str(e))
        self.assertNotIn('\n', str(e))

    def test_shapes_need_the_host_view(self):
        self.assertRefused(
            '--resource is a shape of the host view: it needs --group-by '
            'host', resources=['VCPU=1'])
        self.assertRefused(
            '--flavor is counted by the host view (--group-by host) or by '
            'the metrics (--metrics-file, --format prometheus): it needs '
            'one of them', flavors=['m1.small'])
        self.assertRefused(
            '--resource is a shape of the host view: it needs --group-by '
            'host', resources=['VCPU=1'], group_by='project')

    def test_unknown_flavor(self):
        sources = FakeSources({'m1.small': SMALL})
        self.assertRefused('nova has no flavor m1.big, m1.huge', sources,
                           group_by='host',
                           flavors=['m1.small', 'm1.big', 'm1.huge'])
        # The flavors asked once, all of them.
        self.assertEqual([['m1.small', 'm1.big', 'm1.huge']],
                         sources.nova().asked)

    def test_unknown_class(self):
        self.assertRefused(
            'shape VCPU=1,CUSTOM_X=1: placement has no resource class '
            'CUSTOM_X', group_by='host', resources=['VCPU=1', 'CUSTOM_X=1'])
        gpu = dict(SMALL, name='g1', extra_specs={'resources:VGPU': '1'})
        self.assertRefused(
            'shape g1: placement has no resource class VGPU',
            FakeSources({'g1': gpu}), group_by='host', flavors=['g1'])

    def test_malformed_resource(self):
        self.assertRefused(
            '--resource VCPU: expected RC=N, a resource class and an amount '
            '(VCPU=2)', group_by='host', resources=['VCPU'])

    def test_metrics_flavors_are_read_first_too(self):
        sources = FakeSources({'m1.small': SMALL})
        sources.capacity_flavors = ['m1.gone']
        self.assertRefused('nova has no flavor m1.gone', sources,
                           format='prometheus')

    def test_a_valid_shape_reaches_the_scan(self):
        sources = FakeSources({'m1.small': SMALL})
        self.assertRaises(Unread, run, sources, group_by='host',
                          resources=['VCPU=1'], flavors=['m1.small'])

    def test_capacity_shapes(self):
        sources = FakeSources({'m1.small': SMALL})
        capacity = hosts.Capacity.read(
            sources, ['MEMORY_MB=2', 'VCPU=1'], ['m1.small'],
            ['m1.small', 'm1.small'])
        self.assertEqual(['VCPU=1,MEMORY_MB=2', 'm1.small'],
                         [s.name for s in capacity.shapes])
        self.assertEqual(['m1.small'], [s.name for s in capacity.flavors])


ROW = {'host': 'h1', 'provider': 'p' * 36,
       'held': {'DISK_GB': 2, 'VCPU': 1, 'CUSTOM_X': 1},
       'free': {'VCPU': 0}, 'free_after_clean': {},
       'fits': [{'shape': 'VCPU=1', 'now': 0, 'after_clean': 1},
                {'shape': 'm1', 'now': 2, 'after_clean': 3}]}


class RenderingTestCase(base.BaseTestCase):

    def cells(self, fmt):
        return list(output.cells([ROW], engine_hosts.HOST_KEYS, fmt))[0]

    def test_every_format(self):
        self.assertEqual(
            ('h1', 'p' * 36, 'VCPU=1\nDISK_GB=2\nCUSTOM_X=1', 'VCPU=0', '',
             'VCPU=1\n  now 0, after clean 1\nm1\n  now 2, after clean 3'),
            self.cells('table'))
        self.assertEqual(
            ('h1', 'p' * 36, 'VCPU=1,DISK_GB=2,CUSTOM_X=1', 'VCPU=0', '-',
             'VCPU=1:0:1;m1:2:3'), self.cells('value'))
        self.assertEqual(
            ('h1', 'p' * 36, 'VCPU=1,DISK_GB=2,CUSTOM_X=1', 'VCPU=0', '',
             'VCPU=1:0:1;m1:2:3'), self.cells('csv'))
        self.assertEqual(tuple(ROW[k] for k in engine_hosts.HOST_KEYS),
                         self.cells('json'))

    def test_one_order_of_classes(self):
        self.assertEqual('VCPU=1,MEMORY_MB=2,DISK_GB=3,A=4,B=5',
                         output.plain_resources(
                             {'B': 5, 'DISK_GB': 3, 'A': 4, 'MEMORY_MB': 2,
                              'VCPU': 1}))

    def test_narrow_table_keeps_the_host(self):
        keys, rows, dropped = output.fit_columns(
            list(engine_hosts.HOST_KEYS), [self.cells('table')], 40)
        self.assertEqual(['host', 'fits'], keys)
        self.assertEqual(['Provider', 'Free', 'Free after clean', 'Held'],
                         dropped)

    def test_summary(self):
        summary = engine_hosts.Summary(
            {'VCPU': 30, 'MEMORY_MB': 741376},
            [engine_hosts.ShapeTotal('m1', 0, 1, 1),
             engine_hosts.ShapeTotal('VCPU=1', 3, 5, 2)])
        self.assertEqual(
            ['A clean would give back VCPU=30, MEMORY_MB=741376, on 1 '
             'compute host(s).',
             'm1: 1 more server(s) after a clean, on 1 host(s).',
             'VCPU=1: 2 more server(s) after a clean, on 2 host(s).',
             'Next: NEXT'],
            sentences.host_summary(summary, 1, (), 'NEXT'))
        self.assertEqual(
            ['Orphans hold nothing on any compute host.',
             'Cells not read: cell2; their consumers are unverifiable, '
             'never orphans.'],
            sentences.host_summary(engine_hosts.Summary({}, []), 0,
                                   ['cell2']))
