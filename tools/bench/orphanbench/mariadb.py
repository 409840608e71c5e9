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
"""A throw-away MariaDB for the benchmark's nova and placement databases.

The server is the functional tests' (nova_orphans/tests/functional/
fixtures/mariadb.py), with a buffer pool that holds a large cloud's
tables: the benchmark measures the tool, not the server's disk reads.
Each generated cloud gets copies of the migrated template databases.
"""

from nova_orphans.tests.functional.fixtures import mariadb

TEMPLATE_API = mariadb.TEMPLATE_API
TEMPLATE_CELL = mariadb.TEMPLATE_CELL
TEMPLATE_PLACEMENT = mariadb.TEMPLATE_PLACEMENT
available = mariadb.available


class MariaDB(mariadb.MariaDB):

    #: The driver's default, as a production nova.conf leaves it: the
    #: benchmark's runs pay for what a production run pays for.
    PLAIN_CLIENTS = False

    def __init__(self, workdir):
        super().__init__(workdir, options=['--innodb-buffer-pool-size=1G'])
