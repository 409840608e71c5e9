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
"""doc/source/admin/comparison.rst says what the scenario tests assert.

Each scenario test checks its observations against
``comparison.SCENARIOS``; these tests check that the document is that
table, and that every row of it is backed by exactly one test.
"""

import collections
import importlib
import inspect
import os
import pkgutil
import unittest

from nova_orphans.tests import scenario as scenario_pkg
from nova_orphans.tests.scenario import comparison

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
DOCUMENT = os.path.join(ROOT, 'doc', 'source', 'admin', 'comparison.rst')


def scenario_tests():
    """{key: ['module.Class.method', ...]} of every @scenario test."""
    found = collections.defaultdict(list)
    for info in pkgutil.iter_modules(scenario_pkg.__path__):
        if not info.name.startswith('test_'):
            continue
        module = importlib.import_module(
            '%s.%s' % (scenario_pkg.__name__, info.name))
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue
            for name, method in inspect.getmembers(cls, callable):
                for key in getattr(method, 'scenario_keys', ()):
                    found[key].append('%s.%s.%s' % (info.name, cls_name,
                                                    name))
    return found


class ComparisonDocumentTest(unittest.TestCase):

    def test_document_is_generated_from_the_declarations(self):
        with open(DOCUMENT) as f:
            current = f.read()
        self.assertEqual(
            comparison.render(), current,
            'doc/source/admin/comparison.rst is stale: run '
            'tools/comparison.py')

    def test_every_row_is_backed_by_exactly_one_test(self):
        found = scenario_tests()
        self.assertEqual(sorted(comparison.SCENARIOS), sorted(found))
        for key, declared in comparison.SCENARIOS.items():
            self.assertEqual([declared.test], found[key], key)

    def test_the_judge(self):
        """How a --delete result is told apart from clean's."""
        def state(**allocs):
            return {c: {'allocations': a, 'project_id': 'p', 'user_id': 'u',
                        'consumer_type': 'unknown'}
                    for c, a in allocs.items()}

        def label(c, rp):
            return '%s@%s' % (c, rp)

        one, two = {'VCPU': 1}, {'VCPU': 2}
        before = state(vm1={'h1': one, 'h2': one}, mig={'h3': two})
        clean = state(vm1={'h2': one, 'h3': two})
        self.assertEqual(
            comparison.AuditDelete((), ()),
            comparison.judge_delete(before, before, before, label))
        self.assertEqual(
            comparison.AuditDelete(
                ('mig@h3', 'vm1@h1', 'vm1@h2'),
                ('does not give vm1@h3 back', 'removes the live vm1@h2')),
            comparison.judge_delete(before, clean, {}, label))
        self.assertEqual(
            comparison.AuditDelete(('vm1@h1',),
                                   ('does not give vm1@h3 back',
                                    'leaves the orphan mig@h3')),
            comparison.judge_delete(before, clean,
                                    state(vm1={'h2': one}, mig={'h3': two}),
                                    label))
