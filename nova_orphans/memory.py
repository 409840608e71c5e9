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
"""The cyclic garbage collector, as a run of this tool needs it.

A run creates a few hundred thousand long-lived records (a million in
fast mode at 50,000 compute nodes, doc/source/admin/performance.rst) and
no garbage cycles worth finding: every generation-2 pass walks all of
them again, which took a quarter to a half of a large run's time. The
one place the collector is tuned; the records' own size is
engine.model.record's.
"""

import contextlib
import gc


@contextlib.contextmanager
def paused():
    """No cyclic collection while a snapshot is built (and, for a
    listing, shown); restored, if it was on, after.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def freeze():
    """What is alive now lives until the process exits: the collector
    need not walk it again, as turning it back on and the interpreter's
    shutdown otherwise do (a fifth of a small run's time). Only for a
    process that is this command's alone (the console script), never an
    in-process caller's.
    """
    gc.freeze()
