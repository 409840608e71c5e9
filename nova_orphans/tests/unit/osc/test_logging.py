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
"""An openstack command's log records: made only where a handler shows
them, in osc's own format.
"""

import io
import logging

import fixtures
from oslotest import base

from nova_orphans.osc.v1 import common


class PackageLevelTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.root = logging.getLogger()
        self.package = logging.getLogger('nova_orphans')
        self.useFixture(fixtures.MonkeyPatch(
            'logging.root.handlers', []))
        self.addCleanup(self.package.setLevel, self.package.level)
        self.addCleanup(self.root.setLevel, self.root.level)
        # As osc's LogConfigurator: the root at DEBUG, whatever the
        # console shows.
        self.root.setLevel(logging.DEBUG)
        self.stream = io.StringIO()
        self.console = logging.StreamHandler(self.stream)
        self.console.setFormatter(logging.Formatter('%(message)s'))
        self.root.addHandler(self.console)

    def test_no_debug_record_below_every_handler(self):
        """osc without --debug: the package makes no DEBUG record (the
        lines of --debug cost CPU), and is put back afterwards.
        """
        self.console.setLevel(logging.WARNING)
        audit = logging.getLogger('nova_orphans.app.audit')
        with common.package_level():
            self.assertFalse(audit.isEnabledFor(logging.DEBUG))
            self.assertTrue(audit.isEnabledFor(logging.WARNING))
        self.assertTrue(audit.isEnabledFor(logging.DEBUG))
        self.assertEqual('', self.stream.getvalue())

    def test_debug_records_as_osc_formats_them(self):
        self.console.setLevel(logging.DEBUG)
        with common.package_level():
            logging.getLogger('nova_orphans.app.audit').debug('read it')
        self.assertEqual('read it\n', self.stream.getvalue())
