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
"""Read, from Zun's container API, which consumers are Zun's (``zun``
rule, ``openstack`` front end).

What readers/zun_db.py reads from Zun's database, through the API:
Zun claims placement resources for its containers and capsules (a
capsule's own containers are claimed as the capsule), lists each in
its collection as long as its row exists, and deletes the row only
after the allocations. So a consumer listed is Zun's, whatever its
status, and one not listed holds nothing Zun will ever free.

Nothing is asked when no consumer nova has no trace of is on a
provider: the listing (clients/container.py) is read only for some.
"""

from oslo_log import log as logging

from nova_orphans.engine import model
from nova_orphans import exception
from nova_orphans.i18n import _

LOG = logging.getLogger(__name__)


class ZunAPIReader:

    def __init__(self, client):
        self.client = client
        self.label = _('Zun\'s container API %(url)s') % {
            'url': client.endpoint}

    def close(self):
        pass

    def read(self, consumers):
        """A model.ZunSnapshot of these consumers.

        Never raises for an API that cannot be read: the snapshot then
        says why (``error``), and the zun rule calls every consumer it
        was asked about unverifiable. No consumer, no request.
        """
        asked = frozenset(consumers)
        if not asked:
            return model.ZunSnapshot(asked=asked, label=self.label)
        try:
            listing = self.client.listing()
        except exception.NovaOrphansException as e:
            # Said once, by the front end (results.Listing
            # .unreadable_services): osc prints a logged warning too.
            LOG.debug('%(label)s could not be read: %(error)s',
                      {'label': self.label, 'error': e})
            return model.ZunSnapshot(asked=asked, error=str(e),
                                     label=self.label)
        containers = {
            row['uuid']: model.ZunContainer(row['uuid'], kind,
                                            row.get('status'),
                                            row.get('host'))
            for kind, row in listing if row['uuid'] in asked}
        LOG.debug('Zun knows %(known)d of %(asked)d consumer(s) nova has '
                  'no trace of', {'known': len(containers),
                                  'asked': len(asked)})
        return model.ZunSnapshot(asked=asked, containers=containers,
                                 label=self.label)
