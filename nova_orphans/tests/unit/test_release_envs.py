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
"""tools/release-envs: the matrix, the pins and the page that shows them."""

import configparser
import os
import re

from oslotest import base

from nova_orphans.tests import programs

ROOT = programs.REPO
PAGE = os.path.join(ROOT, 'doc', 'source', 'install', 'index.rst')
# The columns of the page's table, after release, nova and Python.
LIBRARIES = ('python-openstackclient', 'openstacksdk', 'keystoneauth1',
             'sqlalchemy', 'oslo-db', 'cliff', 'osc-lib')


BUILD = programs.tool('tools', 'release-envs', 'build.py')


def page_rows():
    """The "Tested environments" list-table: one list of cells a row."""
    with open(PAGE) as f:
        text = f.read()
    table = text[text.index('Tested environments'):]
    table = table[table.index('.. list-table::'):]
    table = table[:table.index('\n\n', table.index('   * - '))]
    rows = []
    for line in table.splitlines():
        cell = re.match(r'^   ([* ]) - (.*)$', line)
        if cell is None:
            continue
        if cell.group(1) == '*':
            rows.append([])
        rows[-1].append(cell.group(2))
    return rows[1:]


def pin(pins, project):
    """The pin a Python other than 3.9 gets (2025.2 has both)."""
    options = pins[project]
    for version, marker in options:
        if marker is None or '3.9' not in marker:
            return version
    raise AssertionError(options)


class ReleaseEnvironmentsTestCase(base.BaseTestCase):

    def test_page_shows_the_matrix_ci_builds(self):
        rows = page_rows()
        releases = sorted({r for r, _p in BUILD.ENVIRONMENTS})
        self.assertEqual(releases, [row[0] for row in rows])
        for release, nova, pythons, clients, libraries in rows:
            self.assertEqual(
                [p for r, p in BUILD.ENVIRONMENTS if r == release],
                sorted(pythons.split(', '), key=lambda v: tuple(
                    int(n) for n in v.split('.'))))
            pins = BUILD.pinned(release)
            self.assertEqual(
                [pin(pins, project) for project in LIBRARIES],
                clients.split(', ') + libraries.split(', '), release)

    def test_requirement_floors_are_the_oldest_pins(self):
        """Every requirement's floor is 2023.1's pin: the oldest
        environment tested, and every later release pins at least it.
        """
        oldest = BUILD.pinned(min(r for r, _p in BUILD.ENVIRONMENTS))
        floors = {}
        with open(os.path.join(ROOT, 'requirements.txt')) as f:
            lines = [line.split('#')[0].strip() for line in f]
        cfg = configparser.ConfigParser()
        cfg.read(os.path.join(ROOT, 'setup.cfg'))
        lines += [line.split('#')[0].strip()
                  for line in cfg['extras']['osc'].splitlines()]
        for line in filter(None, lines):
            name, floor = re.match(r'^([A-Za-z0-9_.-]+)>=(\S+)$',
                                   line).groups()
            floors[BUILD.normalized(name)] = floor
        self.assertEqual(
            {project: pin(oldest, project) for project in floors
             if project in oldest},
            floors)

    def test_unpinned(self):
        pins = {'cliff': [('4.9.1', "python_version=='3.9'"),
                          ('4.11.0', "python_version>='3.10'")],
                'osc-lib': [('2.7.0', None)]}
        self.assertEqual([], BUILD.unpinned(
            {'cliff': '4.9.1', 'osc-lib': '2.7.0', 'pip': '24.3.1',
             'nova-orphans': '1.0.0'}, pins))
        self.assertEqual(['osc-lib 2.8.0 (pinned: 2.7.0)'], BUILD.unpinned(
            {'cliff': '4.11.0', 'osc-lib': '2.8.0'}, pins))


class TestConstraintsTestCase(base.BaseTestCase):
    """tox and tools/venv.sh install within the newest release's upper
    constraints, which do not fight the services the tests pin.
    """

    def test_tox_and_the_venv_use_the_newest_release(self):
        newest = max(BUILD.ENVIRONMENTS)[0]
        default = 'tools/release-envs/constraints/%s.txt' % newest
        with open(os.path.join(ROOT, 'tox.ini')) as f:
            tox = f.read()
        defaults = set(re.findall(
            r'-c\{env:TOX_CONSTRAINTS_FILE:\{toxinidir\}/([^}]+)\}', tox))
        self.assertEqual({default}, defaults)
        with open(os.path.join(ROOT, 'tools', 'venv.sh')) as f:
            self.assertIn(
                'CONSTRAINTS=${TOX_CONSTRAINTS_FILE:-%s}' % default, f.read())

    def test_pinned_test_requirements_within_the_constraints(self):
        pins = BUILD.pinned(max(BUILD.ENVIRONMENTS)[0])
        pinned = {}
        for name in ('test-requirements.txt', 'functional-requirements.txt'):
            with open(os.path.join(ROOT, name)) as f:
                for line in f:
                    m = re.match(r'^([A-Za-z0-9_.-]+)==(\S+)', line)
                    if m:
                        pinned[BUILD.normalized(m.group(1))] = m.group(2)
        self.assertEqual({'nova', 'openstack-placement', 'keystone'},
                         set(pinned))
        self.assertEqual(
            {}, {project: pins[project] for project in pinned
                 if project in pins and pin(pins, project) != pinned[project]})
