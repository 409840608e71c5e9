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
"""A test's own journal directory."""

import os

import fixtures


class StateHome(fixtures.Fixture):
    """XDG_STATE_HOME in a temporary directory of the test's: the
    default journal directory of both front ends, run in the test's
    process or started from it (see nova_orphans/tests/__init__.py).
    ``path``: that directory; ``journals``: the journal directory in it.
    """

    def _setUp(self):
        self.path = self.useFixture(fixtures.TempDir()).path
        self.journals = os.path.join(self.path, 'nova-orphans')
        self.useFixture(fixtures.EnvironmentVariable('XDG_STATE_HOME',
                                                     self.path))
