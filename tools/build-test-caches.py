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
"""Build the functional tests' machine caches before the tests run.

The functional fixtures keep what costs seconds to make in the system
temp dir, made once per machine on first use (fixtures.nova_db's
``machine_cache``): nova's and placement's migrated schemas, keystone's
synced database, every supported release's nova schema and placement
(``test_releases``: a pip download of each release and its migrations),
and the MariaDB templates. On a new machine (CI) the test worker that
first needs one waits for it, mostly on the network. ``.ci/run`` runs
this in the background while its own checks run, the downloads side by
side, so that the suite starts with them made.

    python tools/build-test-caches.py

Prints each cache as it is ready; exits 1, with the error, if one cannot
be built (the test that needs it would fail the same way).
"""

import concurrent.futures
import importlib.metadata
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from nova_orphans.tests.functional.fixtures import keystone  # noqa: E402
from nova_orphans.tests.functional.fixtures import mariadb  # noqa: E402
from nova_orphans.tests.functional.fixtures import nova_db  # noqa: E402
from nova_orphans.tests.functional.fixtures import placement  # noqa: E402
from nova_orphans.tests.functional.fixtures import releases  # noqa: E402


def builders():
    """(name, function) of every cache, each safe to run beside the
    others (machine_cache takes a lock per cache).
    """
    yield 'nova schema', nova_db.schema_templates
    yield 'placement schema', placement._template
    yield 'keystone', keystone.template
    # The test venv's placement is served in process: nothing to build.
    served = importlib.metadata.version('openstack-placement')
    for series, nova, placement_release in releases.RELEASES:
        yield ('nova %s (%s)' % (nova, series),
               lambda nova=nova: releases.nova_schema(nova))
        if placement_release != served:
            yield ('placement %s (%s)' % (placement_release, series),
                   lambda version=placement_release:
                   releases.placement_release(version))
    if mariadb.missing() is None:
        yield 'MariaDB templates', mariadb.template_datadir


def main():
    started = time.monotonic()
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futures = {pool.submit(build): name for name, build in builders()}
        for future in concurrent.futures.as_completed(futures):
            name = futures[future]
            try:
                future.result()
            except Exception as e:
                failed += 1
                print('%s: FAILED: %s' % (name, e), flush=True)
            else:
                print('%s: ready at %.0f s' % (
                    name, time.monotonic() - started), flush=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
