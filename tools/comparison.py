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
"""Write doc/source/admin/comparison.rst from the scenario declarations.

The table comes from ``nova_orphans/tests/scenario/comparison.py``,
whose every entry a scenario test asserts against real nova state;
``test_comparison`` (in the scenario suite) fails when the committed
document differs from what this writes.

    tools/comparison.py            # rewrite the document
    tools/comparison.py --check    # exit 1 (and show a diff) if stale
"""

import argparse
import difflib
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, 'nova_orphans', 'tests', 'scenario',
                      'comparison.py')
DOCUMENT = os.path.join(ROOT, 'doc', 'source', 'admin', 'comparison.rst')


def load():
    """The declarations module, without importing nova (its package does)."""
    spec = importlib.util.spec_from_file_location('_comparison', SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true',
                        help='only compare; exit 1 if the document is stale')
    args = parser.parse_args(argv)
    text = load().render()
    with open(DOCUMENT) as f:
        current = f.read()
    if args.check:
        if current == text:
            return 0
        sys.stdout.writelines(difflib.unified_diff(
            current.splitlines(True), text.splitlines(True),
            DOCUMENT, 'generated'))
        return 1
    if current != text:
        with open(DOCUMENT, 'w') as f:
            f.write(text)
        print('wrote %s' % os.path.relpath(DOCUMENT, ROOT))
    return 0


if __name__ == '__main__':
    sys.exit(main())
