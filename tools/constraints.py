#!/usr/bin/env python3
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
"""Upper constraints for the functional and scenario tests' services.

The tests run nova, placement and keystone of the newest release, whose
own floors can be above that release's upper-constraints pins (a copy of
openstack/requirements taken before its pins were raised: nova 34.0.0
needs keystoneauth1>=5.16.0 where 2026.2.txt pins 5.15.0). pip cannot
loosen a constraint, so this writes the constraints file with each such
pin moved up to the floor a line of the requirements files names, and
leaves every other pin as it is, as OpenStack's edit-constraints does for
a project's own line. It says on stderr which pins it moved.

    tools/constraints.py BASE REQUIREMENTS... --output FILE

tools/venv.sh and tox's functional, scenario, sandbox and cover envs run
it; the standard library only, as it runs before anything is installed.
"""

import argparse
import re
import sys

_PIN = re.compile(r'^([A-Za-z0-9_.-]+)===([^;\s]+)(\s*;.*)?$')
_FLOOR = re.compile(r'^([A-Za-z0-9_.-]+)\s*(?:[^#;]*,)?\s*>=\s*([^,;#\s]+)')


def normalized(project):
    return re.sub(r'[-_.]+', '-', project).lower()


def version_key(version):
    """Release numbers compared as numbers (5.16.0 above 5.15.0)."""
    return tuple(int(n) for n in re.findall(r'\d+', version))


def floors(lines):
    """{normalized name: floor} of the requirement lines with a >=."""
    found = {}
    for line in lines:
        match = _FLOOR.match(line.split('#')[0].strip())
        if match:
            found[normalized(match.group(1))] = match.group(2)
    return found


def raised(base_lines, requirement_floors):
    """(the constraints' lines with pins raised to the floors above them,
    [(project, pin, floor)] of the pins raised).
    """
    out, moved = [], []
    for line in base_lines:
        match = _PIN.match(line.strip())
        if match:
            project = normalized(match.group(1))
            floor = requirement_floors.get(project)
            if floor and version_key(floor) > version_key(match.group(2)):
                moved.append((project, match.group(2), floor))
                line = '%s===%s%s\n' % (match.group(1), floor,
                                        match.group(3) or '')
        out.append(line)
    return out, moved


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('base', help='an upper-constraints.txt')
    parser.add_argument('requirements', nargs='+',
                        help='requirements files whose floors win')
    parser.add_argument('--output', required=True)
    args = parser.parse_args(argv)
    wanted = {}
    for path in args.requirements:
        with open(path) as f:
            wanted.update(floors(f))
    with open(args.base) as f:
        lines, moved = raised(f.readlines(), wanted)
    with open(args.output, 'w') as f:
        f.writelines(lines)
    for project, pin, floor in moved:
        print('constraints: %s %s raised to %s, the requirements\' floor'
              % (project, pin, floor), file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
