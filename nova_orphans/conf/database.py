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
"""The database connections nova.conf already names.

Only ``connection`` is read from each group; the rest of oslo.db's
options are nova's business. ``[placement_database]`` is optional: with
it, placement's tables are read in bulk instead of one GET per provider.
"""

from oslo_config import cfg

api_database_group = cfg.OptGroup(
    'api_database', title='nova API database',
    help='The nova API database: cell mappings, instance mappings and '
         'build requests are read from it.')

database_group = cfg.OptGroup(
    'database', title='nova cell database',
    help='The running [database] connection. Only used to fill the '
         'templates ({scheme}, {username}, {password}, {hostname}, {port}, '
         '{path}, {query}) in cell mappings, as nova does.')

placement_database_group = cfg.OptGroup(
    'placement_database', title='placement database (optional, read-only)',
    help='When set, providers and allocations are read from placement\'s '
         'database in bulk. Writes always go through the placement API.')


def _connection_opt(help_text):
    return cfg.StrOpt('connection', secret=True, help=help_text)


API_DB_OPTS = [_connection_opt(
    'SQLAlchemy URL of the nova API database. Required by '
    'nova-orphans-manage.')]
DB_OPTS = [_connection_opt(
    'SQLAlchemy URL of this host\'s cell database; used to fill '
    'templated cell mapping URLs.')]
PLACEMENT_DB_OPTS = [_connection_opt(
    'SQLAlchemy URL of the placement database, read-only. Optional.')]


def register_opts(conf):
    for group, opts in list_opts().items():
        conf.register_group(_fresh(group))
        conf.register_opts(opts, group=group.name)


def _fresh(group):
    """A new OptGroup like ``group``.

    oslo.config shallow-copies a group on registration, so a module-level
    group's option table would be shared by every ConfigOpts it is
    registered on; nova-orphans builds a new ConfigOpts on every call.
    """
    return cfg.OptGroup(group.name, title=group.title, help=group.help)


def list_opts():
    return {
        api_database_group: API_DB_OPTS,
        database_group: DB_OPTS,
        placement_database_group: PLACEMENT_DB_OPTS,
    }
