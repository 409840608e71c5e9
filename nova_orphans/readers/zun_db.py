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
"""Read, from Zun's database, which consumers are Zun's (``zun`` rule).

Zun (18.0.0, and every release since its capsule table was dropped)
keeps containers and capsules in one table, ``container``: a unique
``uuid``, which is the placement consumer of what the row holds, and
``container_type`` (0 container, 1 capsule, 2 and 3 a capsule's
containers). Zun has no soft delete: it deletes a row, with
``query.delete()``, only once it has deleted the row's allocations from
placement (``zun.compute.manager``: "only destroy the container in the
db if the delete_allocation_for_instance doesn't raise"), and it
creates the row before it claims any (the API creates the container,
then schedules it). So every row owns what its uuid holds, whatever its
status (a ``Deleted`` one awaits Zun's own clean-up), and a uuid with no
row holds nothing Zun will ever free.

Only the consumers nova has no trace of are looked up, by uuid, in one
read-only transaction; the table is never read whole.
"""

from oslo_log import log as logging
import sqlalchemy as sa

from nova_orphans import db_utils
from nova_orphans.engine import model
from nova_orphans.i18n import _

LOG = logging.getLogger(__name__)

TABLE = 'container'
COLUMNS = ('uuid', 'container_type', 'status', 'host')
CONTAINERS = sa.table(TABLE, *(sa.column(c) for c in COLUMNS))


class ZunDBReader:

    def __init__(self, url, max_retries=1, retry_interval=1):
        self.url = url
        self.label = _('Zun\'s database %(url)s') % {
            'url': db_utils.safe_url(url)}
        self._engines = db_utils.ReaderEngines(
            max_retries=max_retries, retry_interval=retry_interval)
        self._checked = False

    def close(self):
        self._engines.close()

    def read(self, consumers):
        """A model.ZunSnapshot of these consumers.

        Never raises for a database that cannot be read: the snapshot
        then says why (``error``), and the zun rule calls every consumer
        it was asked about unverifiable. No consumer, no read.
        """
        asked = frozenset(consumers)
        if not asked:
            return model.ZunSnapshot(asked=asked, label=self.label)
        try:
            with self._engines.connect(self.url) as conn:
                if not self._checked:
                    _check_schema(conn)
                    self._checked = True
                rows = list(db_utils.rows_in(conn, sa.select(CONTAINERS).where(
                    CONTAINERS.c.uuid.in_(db_utils.IN_VALUES)), asked))
        except Exception as e:
            error = db_utils.safe_error(e, self.url)
            LOG.warning('Zun\'s database %(url)s could not be read: '
                        '%(error)s', {'url': db_utils.safe_url(self.url),
                                      'error': error})
            return model.ZunSnapshot(asked=asked, error=error,
                                     label=self.label)
        containers = {
            uuid: model.ZunContainer(
                uuid, model.ZUN_KINDS.get(kind) or _(
                    'container of type %(type)s') % {'type': kind},
                status, host)
            for uuid, kind, status, host in rows}
        LOG.debug('Zun knows %(known)d of %(asked)d consumer(s) nova has '
                  'no trace of', {'known': len(containers),
                                  'asked': len(asked)})
        return model.ZunSnapshot(asked=asked, containers=containers,
                                 label=self.label)


def _check_schema(conn):
    """Refuse a database without Zun's container table and columns: a
    wrong connection (nova's database, an empty one) would otherwise
    show no consumer as Zun's, and each would be an orphan.
    """
    inspector = sa.inspect(conn)
    if not inspector.has_table(TABLE):
        raise LookupError(_('no table %(table)s: not a Zun database') %
                          {'table': TABLE})
    found = {c['name'] for c in inspector.get_columns(TABLE)}
    missing = [c for c in COLUMNS if c not in found]
    if missing:
        raise LookupError(_('table %(table)s has no column %(columns)s: '
                            'not a Zun schema nova-orphans knows') %
                          {'table': TABLE, 'columns': ', '.join(missing)})
