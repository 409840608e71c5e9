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

import fixtures
from oslotest import base

from nova_orphans.tests import programs

ROOT = programs.REPO
PAGE = os.path.join(ROOT, 'doc', 'source', 'install', 'index.rst')
# The columns of the page's table, after release, nova and Python.
LIBRARIES = ('python-openstackclient', 'openstacksdk', 'keystoneauth1',
             'sqlalchemy', 'oslo-db', 'cliff', 'osc-lib')


BUILD = programs.tool('tools', 'release-envs', 'build.py')
CONSTRAINTS = programs.tool('tools', 'constraints.py')


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
    constraints, with the pins below the services' floors raised.
    """

    def test_tox_and_the_venv_use_the_newest_release(self):
        newest = max(BUILD.ENVIRONMENTS)[0]
        default = 'tools/release-envs/constraints/%s.txt' % newest
        config = configparser.ConfigParser(interpolation=None)
        config.read(os.path.join(ROOT, 'tox.ini'))
        self.assertEqual(
            '{env:TOX_CONSTRAINTS_FILE:{toxinidir}/%s}' % default,
            config['testenv']['constraints'])
        with open(os.path.join(ROOT, 'tools', 'venv.sh')) as f:
            self.assertIn(
                'CONSTRAINTS=${TOX_CONSTRAINTS_FILE:-%s}' % default, f.read())

    def test_services_are_not_pinned(self):
        pins = BUILD.pinned(max(BUILD.ENVIRONMENTS)[0])
        for service in ('nova', 'openstack-placement', 'keystone'):
            self.assertNotIn(service, pins)

    def test_pins_below_a_floor_raised_to_it(self):
        floors = CONSTRAINTS.floors([
            'keystoneauth1>=5.16.0 # Apache-2.0\n',
            'hacking>=6.1.0,<9\n', 'SQLAlchemy<2.1\n', 'foo<9,>=2.10\n',
            '# nova>=99\n', 'nova==34.0.0\n'])
        self.assertEqual({'keystoneauth1': '5.16.0', 'hacking': '6.1.0',
                          'foo': '2.10'}, floors)
        lines, moved = CONSTRAINTS.raised(
            ['keystoneauth1===5.15.0\n', 'hacking===6.1.0\n',
             "foo===2.9;python_version=='3.9'\n",
             "foo===2.11;python_version>='3.10'\n", 'bar===1.0\n'],
            floors)
        self.assertEqual(
            ['keystoneauth1===5.16.0\n', 'hacking===6.1.0\n',
             "foo===2.10;python_version=='3.9'\n",
             "foo===2.11;python_version>='3.10'\n", 'bar===1.0\n'], lines)
        self.assertEqual([('keystoneauth1', '5.15.0', '5.16.0'),
                          ('foo', '2.9', '2.10')], moved)


class DebianMirrorTestCase(base.BaseTestCase):
    """build.py fetches Python 3.9 from the Debian mirror apt uses."""

    def etc(self, sources_list=None, **parts):
        etc = self.useFixture(fixtures.TempDir()).path
        os.mkdir(os.path.join(etc, 'sources.list.d'))
        for name, text in parts.items():
            name = name.replace('_sources', '.sources').replace(
                '_list', '.list')
            with open(os.path.join(etc, 'sources.list.d', name), 'w') as f:
                f.write(text)
        if sources_list is not None:
            with open(os.path.join(etc, 'sources.list'), 'w') as f:
                f.write(sources_list)
        return etc

    def test_deb822_sources_other_vendors_and_security_left_out(self):
        etc = self.etc(
            a_nodesource_sources=(
                'Types: deb\nURIs: https://deb.nodesource.com/node_20.x\n'
                'Suites: nodistro\nComponents: main\n'),
            debian_sources=(
                'Types: deb\n'
                '# http://snapshot.debian.org/archive/debian/20250520\n'
                'URIs: http://security.example/debian-security\n'
                'Suites: bookworm-security\nComponents: main\n\n'
                'Types: deb-src\nURIs: http://src.example/debian\n'
                'Suites: bookworm\nComponents: main\n\n'
                'Enabled: no\nTypes: deb\nURIs: http://off.example/debian\n'
                'Suites: bookworm\nComponents: main\n\n'
                'Types: deb\nURIs: http://mirror.example/debian/\n'
                'Suites: bookworm bookworm-updates\nComponents: main\n'),
            google_list='deb https://packages.example/apt cloud-sdk main\n')
        self.assertEqual('http://mirror.example/debian',
                         BUILD.debian_mirror(etc))

    def test_one_line_lists_and_sources_list(self):
        etc = self.etc(mirror_list=(
            '# deb http://commented.example/debian bookworm main\n'
            'deb-src http://src.example/debian bookworm main\n'
            'deb [arch=amd64 signed-by=/k.gpg] http://list.example/debian '
            'bookworm main\n'))
        self.assertEqual('http://list.example/debian',
                         BUILD.debian_mirror(etc))
        etc = self.etc(sources_list=(
            'deb http://old.example/debian bullseye main contrib\n'))
        self.assertEqual('http://old.example/debian',
                         BUILD.debian_mirror(etc))

    def test_no_debian_mirror_is_one_clear_error(self):
        etc = self.etc(ubuntu_list=(
            'deb http://archive.example/ubuntu jammy main\n'
            'deb http://security.example/debian-security bookworm-security '
            'main\n'))
        e = self.assertRaises(RuntimeError, BUILD.debian_mirror, etc)
        self.assertEqual(
            'Python 3.9 comes from Debian bullseye\'s packages, fetched '
            'from the Debian mirror apt uses, and apt names none: no "deb" '
            'source of a Debian suite in %(etc)s/sources.list.d/*.sources, '
            '*.list or %(etc)s/sources.list' % {'etc': etc}, str(e))
