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
"""The sources of an ``openstack`` run: the APIs (see app/sources.py)."""

from nova_orphans.app import options as opts
from nova_orphans.app import sources
from nova_orphans.engine import site_rules
from nova_orphans.readers import compute_api
from nova_orphans.readers import placement_api
from nova_orphans.readers import provider_proof
from nova_orphans.readers import zun_api

# How a journal's run header names the front end that wrote it.
FRONT_END = 'openstack'


class APISources(sources.Sources):
    """osc's clients: the compute, placement and network APIs, and
    Zun's container API when the cloud has one (``clients.container``
    cataloged: the zun site rule is then on, as ``[zun_database]
    connection`` turns it on for nova-orphans-manage).

    ``values``: the run's option values (options.resolve's; None: the
    options' own defaults). ``every_root``: prove every root with nova's
    trait deleted or not (the provider commands), or only the roots that
    consumers nothing live owns hold (the allocation commands; see
    provider_proof).
    """

    def __init__(self, clients, values=None, every_root=True,
                 state_path=None):
        self.clients = clients
        self.state_path = state_path
        self.full_read_interval = sources.value(values,
                                                opts.FULL_READ_INTERVAL)
        # Shared by the clients' adapters (osc.plugin.make_client).
        self.retries = (getattr(clients, 'retries', None) or
                        clients.placement.retries)
        budget = sources.value(values, opts.RETRY_BUDGET)
        if budget is not None:
            self.retries.budget = budget
        deadline = sources.value(values, opts.DEADLINE)
        if deadline:
            self.retries.set_deadline(deadline)
        self._nova = provider_proof.ProvingReader(
            compute_api.ComputeAPIReader(
                clients.compute, sources.API_CONCURRENCY,
                grace_period=sources.value(values, opts.GRACE_PERIOD),
                network=clients.network, foreign=sources.foreign(values)),
            clients.placement, every_root=every_root)
        self._zun = None
        self._zun_asked = False
        self._rules = None

    @property
    def placement(self):
        return self.clients.placement

    def cloud(self):
        """What names the cloud reached, from osc's cloud region
        (openstacksdk's): the cloud's name in clouds.yaml (None when the
        command line or OS_* variables alone give it), keystone's auth
        URL (None for a plugin without keystone: ``admin_token``'s
        endpoint is the service's own), region and project. The name
        alone may differ from one workstation to the next; the rest
        tells clouds apart wherever the journal is read.
        """
        region = getattr(self.clients, 'region', None)
        if region is None:
            return {'front_end': FRONT_END}
        auth = region.config.get('auth') or {}
        # openstacksdk's names for "no cloud named"; osc's loader names
        # a region without one ''.
        name = region.name
        return {'front_end': FRONT_END,
                'name': None if name in ('envvars', 'defaults') else
                name or None,
                'auth_url': auth.get('auth_url'),
                'region': region.get_region_name() or None,
                'project': auth.get('project_name') or auth.get('project_id')}

    def describe(self):
        return ('the placement, compute and network APIs, and Zun\'s '
                'container API where the catalog lists it, of the cloud '
                '%s' % ', '.join('%s %s' % (key, value) for key, value in
                                 sorted(self.cloud().items())
                                 if value and key != 'front_end'))

    def placement_reader(self):
        return placement_api.PlacementAPIReader(self.placement,
                                                sources.API_CONCURRENCY)

    def nova(self):
        return self._nova

    def check_writes(self):
        self.clients.compute.check_admin()

    def zun(self):
        # Asked once: looking in the catalog authenticates.
        if not self._zun_asked:
            self._zun_asked = True
            container = self.clients.container
            if container is not None and container.cataloged():
                self._zun = zun_api.ZunAPIReader(container)
        return self._zun

    @property
    def rules(self):
        if self._rules is None:
            self._rules = site_rules.chain(None, zun=self.zun() is not None)
        return self._rules
