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
from oslotest import base

from nova_orphans.engine import shapes
from nova_orphans import exception


def flavor(**kw):
    result = {'name': 'm1.test', 'vcpus': 2, 'memory_mb': 2048,
              'root_gb': 20, 'ephemeral_gb': 5, 'swap': 1536,
              'extra_specs': {}}
    result.update(kw)
    return result


class ResourcesFromFlavorTestCase(base.BaseTestCase):
    """nova's scheduler.utils.ResourceRequest.from_request_spec, merged."""

    def test_image_backed(self):
        # swap 1536 MB rounds up to 2 GB, as nova does.
        self.assertEqual({'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 27},
                         shapes.resources_from_flavor(flavor(), False))

    def test_boot_from_volume_has_no_root_disk(self):
        self.assertEqual({'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 7},
                         shapes.resources_from_flavor(flavor(), True))

    def test_dedicated_cpus_are_pcpu(self):
        f = flavor(extra_specs={'hw:cpu_policy': 'dedicated'})
        self.assertEqual({'PCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 27},
                         shapes.resources_from_flavor(f, False))

    def test_ironic_flavor_overrides(self):
        f = flavor(extra_specs={'resources:CUSTOM_BAREMETAL_GOLD': '1',
                                'resources:VCPU': '0',
                                'resources:MEMORY_MB': '0',
                                'resources:DISK_GB': '0'})
        self.assertEqual({'CUSTOM_BAREMETAL_GOLD': 1},
                         shapes.resources_from_flavor(f, False))

    def test_a_pcpu_spec_replaces_the_vcpus(self):
        # nova adds the flavor's VCPU only when no spec names VCPU or PCPU.
        f = flavor(extra_specs={'resources:PCPU': '4'})
        self.assertEqual({'PCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 27},
                         shapes.resources_from_flavor(f))

    def test_dedicated_policy_sets_pcpu_over_a_spec(self):
        # _translate_pinning_policies runs after the extra specs.
        f = flavor(extra_specs={'hw:cpu_policy': 'dedicated',
                                'resources:PCPU': '8'})
        self.assertEqual(2, shapes.resources_from_flavor(f)['PCPU'])

    def test_isolated_emulator_threads_take_one_more_pcpu(self):
        f = flavor(extra_specs={'hw:cpu_policy': 'dedicated',
                                'hw:emulator_threads_policy': 'isolate'})
        self.assertEqual(3, shapes.resources_from_flavor(f)['PCPU'])
        f['extra_specs']['hw:cpu_policy'] = 'shared'
        self.assertEqual({'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 27},
                         shapes.resources_from_flavor(f))

    def test_specs_override_and_add(self):
        f = flavor(extra_specs={'resources:MEMORY_MB': '4096',
                                'resources:VGPU': '1',
                                'resources:DISK_GB': '0'})
        self.assertEqual({'VCPU': 2, 'MEMORY_MB': 4096, 'VGPU': 1},
                         shapes.resources_from_flavor(f))

    def test_amounts_nova_ignores_are_ignored(self):
        # nova logs a warning and skips an amount that is not a
        # non-negative integer: the flavor's own amount stands.
        f = flavor(extra_specs={'resources:VCPU': 'two',
                                'resources:MEMORY_MB': '-1'})
        self.assertEqual({'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 27},
                         shapes.resources_from_flavor(f))

    def test_no_swap_and_no_disk(self):
        f = flavor(root_gb=0, ephemeral_gb=0, swap=0)
        self.assertEqual({'VCPU': 2, 'MEMORY_MB': 2048},
                         shapes.resources_from_flavor(f))
        f = flavor(root_gb=0, ephemeral_gb=0, swap=1)
        self.assertEqual(1, shapes.resources_from_flavor(f)['DISK_GB'])


class FromFlavorTestCase(base.BaseTestCase):

    def test_shape_is_named_for_the_flavor(self):
        shape = shapes.from_flavor(flavor(extra_specs={
            'trait:HW_CPU_X86_AVX2': 'required',
            'trait:CUSTOM_SLOW': 'forbidden',
            'trait:CUSTOM_OTHER': 'preferred',
            'hw:numa_nodes': '1'}))
        self.assertEqual(shapes.Shape(
            'm1.test', {'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 27},
            frozenset({'HW_CPU_X86_AVX2'}), frozenset({'CUSTOM_SLOW'})),
            shape)

    def test_thread_policies_are_the_hyperthreading_trait(self):
        require = shapes.from_flavor(flavor(extra_specs={
            'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'require'}))
        isolate = shapes.from_flavor(flavor(extra_specs={
            'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate'}))
        prefer = shapes.from_flavor(flavor(extra_specs={
            'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'prefer'}))
        self.assertEqual(
            [(frozenset({'HW_CPU_HYPERTHREADING'}), frozenset()),
             (frozenset(), frozenset({'HW_CPU_HYPERTHREADING'})),
             (frozenset(), frozenset())],
            [(s.required, s.forbidden) for s in (require, isolate, prefer)])

    def test_what_is_not_modelled_is_refused(self):
        for specs, words in (
                ({'resources1:VGPU': '1'}, 'resources1:VGPU asks for a '
                 'numbered request group'),
                ({'trait2:CUSTOM_X': 'required'}, 'trait2:CUSTOM_X asks'),
                ({'hw:cpu_policy': 'mixed'}, 'hw:cpu_policy=mixed'),
                ({'hw:cpu_policy': 'pinned'},
                 'hw:cpu_policy=pinned is none of dedicated, shared, mixed'),
                ({'hw:cpu_thread_policy': 'x'}, 'hw:cpu_thread_policy=x'),
                ({'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
                  'resources:DISK_GB': '0'}, 'asks placement for nothing')):
            e = self.assertRaises(exception.InvalidInput, shapes.from_flavor,
                                  flavor(extra_specs=specs))
            self.assertEqual(127, e.exit_code)
            self.assertIn('flavor m1.test', str(e))
            self.assertIn(words, str(e))
            self.assertEqual(1, len(str(e).splitlines()))


class FromResourcesTestCase(base.BaseTestCase):

    def test_seed_001_shape(self):
        shape = shapes.from_resources(['DISK_GB=1638', 'VCPU=30',
                                       'MEMORY_MB=741376'])
        self.assertEqual('VCPU=30,MEMORY_MB=741376,DISK_GB=1638', shape.name)
        self.assertEqual({'VCPU': 30, 'MEMORY_MB': 741376, 'DISK_GB': 1638},
                         shape.resources)
        self.assertEqual((frozenset(), frozenset()),
                         (shape.required, shape.forbidden))

    def test_custom_classes_follow_the_standard_ones_by_name(self):
        self.assertEqual(
            'VCPU=1,DISK_GB=1,CUSTOM_A=1,VGPU=2',
            shapes.from_resources(['VGPU=2', 'CUSTOM_A=1', 'DISK_GB=1',
                                   'VCPU=1']).name)

    def test_malformed(self):
        for args, words in (
                ([], 'at least one --resource'),
                (['VCPU'], '--resource VCPU: expected RC=N'),
                (['VCPU=1=2'], '--resource VCPU=1=2: the amount'),
                (['vcpu=1'], '--resource vcpu=1: expected RC=N'),
                (['=1'], '--resource =1: expected RC=N'),
                (['VCPU=0'], '--resource VCPU=0: the amount must be'),
                (['VCPU=-1'], '--resource VCPU=-1: the amount'),
                (['VCPU=1.5'], '--resource VCPU=1.5: the amount'),
                (['VCPU=1', 'VCPU=2'], '--resource VCPU is given twice')):
            e = self.assertRaises(exception.InvalidInput,
                                  shapes.from_resources, args)
            self.assertEqual(127, e.exit_code)
            self.assertEqual('Invalid input: ', str(e)[:15])
            self.assertIn(words, str(e))


class CheckClassesTestCase(base.BaseTestCase):

    def test_known_classes_pass(self):
        shapes.check_classes(
            [shapes.from_resources(['VCPU=1', 'CUSTOM_GOLD=1'])],
            ['VCPU', 'MEMORY_MB', 'CUSTOM_GOLD'])

    def test_unknown_class_is_one_line(self):
        e = self.assertRaises(
            exception.InvalidInput, shapes.check_classes,
            [shapes.from_resources(['VCPU=1']),
             shapes.from_resources(['VCPU=1', 'CUSTOM_B=1', 'CUSTOM_A=2'])],
            ['VCPU', 'MEMORY_MB'])
        self.assertEqual(
            'Invalid input: shape VCPU=1,CUSTOM_A=2,CUSTOM_B=1: placement '
            'has no resource class CUSTOM_A, CUSTOM_B', str(e))


class OrderTestCase(base.BaseTestCase):

    def test_plain(self):
        self.assertEqual('VCPU=1,MEMORY_MB=512,DISK_GB=1,PCPU=2',
                         shapes.plain({'PCPU': 2, 'DISK_GB': 1,
                                       'MEMORY_MB': 512, 'VCPU': 1}))
