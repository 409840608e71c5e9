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

import atexit
import gc
import os
import shutil
import tempfile

# A test process builds nova's and placement's objects by the million:
# a young-generation pass every 700 allocations is a real share of its
# CPU. Cycles are still collected, less often. Only the test processes:
# the tool tunes its own runs (nova_orphans/memory.py), and the servers
# the fixtures start keep their defaults.
gc.set_threshold(50000, 50, 50)


# Where the tool puts journals without --journal (repair/journal.py's
# default_directory): never the machine's own /var/lib/nova-orphans or
# ~/.local/state, whatever a test forgets. Each test process, and every
# process it starts with its environment, writes into a directory of its
# own that goes when the process ends; the base classes of the
# functional and scenario tests give each test its own (StateHome).
_STATE_HOME = tempfile.mkdtemp(prefix='nova-orphans-state-')
atexit.register(shutil.rmtree, _STATE_HOME, ignore_errors=True)
os.environ['XDG_STATE_HOME'] = _STATE_HOME
