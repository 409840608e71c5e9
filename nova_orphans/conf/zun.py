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
"""``[zun_database]``: Zun's database, for the ``zun`` site rule.

Zun with ``[compute] host_shared_with_nova`` allocates on nova's
compute node providers under its containers' uuids: without Zun's
database those consumers look like ``unknown_consumer`` orphans.
Setting the connection turns the ``zun`` site rule on (see
engine/site_rules.py).
"""

from oslo_config import cfg

from nova_orphans.conf import database

zun_database_group = cfg.OptGroup(
    'zun_database', title='Zun database (optional, read-only)',
    help='Zun\'s database. When its connection is set, the "zun" site rule '
         'is on: a consumer nova has no trace of that Zun knows as a '
         'container or capsule is listed as "unmanaged_consumer" and never '
         'repaired. If the database cannot be read, such consumers are '
         '"unverifiable" and the run is incomplete.')

ZUN_DB_OPTS = [cfg.StrOpt(
    'connection', secret=True,
    help='SQLAlchemy URL of Zun\'s database (Zun\'s own [database] '
         'connection), read-only: only its container table is read, for '
         'the consumers nova has no trace of. Setting it turns the "zun" '
         'site rule on, whether or not [nova_orphans] site_rules names '
         'it.')]


def register_opts(conf):
    conf.register_group(database._fresh(zun_database_group))
    conf.register_opts(ZUN_DB_OPTS, group=zun_database_group.name)


def list_opts():
    return {zun_database_group: ZUN_DB_OPTS}
