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
"""Scenario tests on nova's functional harness (see NOTES.md).

nova chooses eventlet or native threading once, in ``monkey_patch.patch()``
(which ``nova.tests.functional`` calls on import). Only threading mode keeps
nova's databases in files that the tool, opening its own engines, can read.
Choose it here, before a test module imports anything from nova: some nova
modules (``nova.context``) pull in eventlet, after which threading mode
refuses to start.
"""

import logging
import os

os.environ.setdefault('OS_NOVA_DISABLE_EVENTLET_PATCHING', 'True')

# nova.test sets oslo.log up on import, with a handler on the real stdout;
# importing nova's compute and scheduler managers then logs, at INFO,
# every periodic task they skip: a line in the suite's output from each
# test worker, outside any test's log capture. Nothing a test asserts.
logging.getLogger('oslo_service.periodic_task').setLevel(logging.WARNING)

from nova import monkey_patch  # noqa: E402

monkey_patch.patch()
