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
"""promtool's lint (``promtool check metrics``) of the exposition text
the metrics module writes.

The texts are the unit tests' (tests/unit/test_metrics.py), each
checked there exactly: the tests that check exposition text run again
here, with promtool checking it.
"""

from nova_orphans.tests import programs
from nova_orphans.tests.unit import test_metrics


def linted(case, *tests):
    """``case``'s ``tests`` again, their exposition text checked by
    promtool; each must check some. Assign the result to a module-level
    name for the test loader to find.
    """
    unknown = set(tests) - set(dir(case))
    if unknown:
        raise AttributeError('%s has no %s' % (case.__name__,
                                               ', '.join(sorted(unknown))))

    def setUp(self):
        case.setUp(self)
        self.linted = 0
        self.addCleanup(lambda: self.assertNotEqual(
            0, self.linted, 'no exposition text was checked'))

    def check_exposition(self, text):
        case.check_exposition(self, text)
        programs.check_metrics(self, text)
        self.linted += 1

    attrs = {'__module__': __name__, 'setUp': setUp,
             'check_exposition': check_exposition,
             '__doc__': 'The texts of %s, by promtool.' % case.__name__}
    # unittest's loader collects only callable test_* attributes.
    attrs.update({name: None for name in dir(case)
                  if name.startswith('test') and name not in tests})
    return type(case.__name__, (case,), attrs)


ScanTestCase = linted(test_metrics.ScanTestCase, 'test_exact_text',
                      'test_nothing_found_is_zeros')
ProjectResourcesTestCase = linted(
    test_metrics.ProjectResourcesTestCase,
    'test_projects_beyond_the_bound_are_summed_as_other')
RepairTestCase = linted(test_metrics.RepairTestCase, 'test_exact_text',
                        'test_restore', 'test_dry_run_is_no_clean',
                        'test_dry_run_keeps_the_clean_s_families')
CapacityTestCase = linted(test_metrics.CapacityTestCase, 'test_exact_text')
