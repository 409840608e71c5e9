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
"""Read nova's side of the snapshot from the compute API, as an admin.

The same interface as :class:`nova_orphans.readers.nova_db.NovaDBReader`,
for operators who have API credentials but not nova's databases (the
``openstack allocation orphan`` commands).

The API hides cells, archived instances, the migrations of deleted
instances, instance mappings, build requests and deleted compute nodes;
none of that can turn a live allocation into an orphan (see
``doc/source/cli/openstack.rst``). Everything nova returns is put in one
readable, anonymous cell. A cell that does not respond shows up as
``UNKNOWN`` compute services (2.69); then one unreadable cell labelled
``(down)`` stands for it, the servers nova returns as ``UNKNOWN`` are
put in it, and the engine's ``unverifiable`` rule keeps everything they,
or unknown consumers, hold; nova lists no hypervisor while a cell is
down, so that rule then keeps every allocation. Deleted compute nodes
are proven from placement by
:class:`nova_orphans.readers.provider_proof.ProvingReader`, which the
osc commands wrap this reader in.

A consumer that no listing shows is looked up on its own (``GET
/servers/{uuid}``, its actions, its migrations) before it can be called
unknown, and migrations are listed again when such consumers remain: a
move that started after the first listing must not look like an orphan.
"""

import concurrent.futures
import datetime
import functools
from urllib import parse

from oslo_log import log as logging

from nova_orphans.clients import compute
from nova_orphans.clients import network as network_mod
from nova_orphans.conf import orphans as orphans_conf
from nova_orphans.engine import claims as claims_mod
from nova_orphans.engine import heal
from nova_orphans.engine import model
from nova_orphans.i18n import _
from nova_orphans.readers import base
from nova_orphans.readers import ports as ports_mod

LOG = logging.getLogger(__name__)

# Labels, not messages: they are data in the JSON output (``cell``).
API_CELL = model.Cell(uuid='compute-api', name=None, anonymous=True)
DOWN_CELL_UUID = 'compute-api-down'
# The first microversion showing a server's scheduler hints (nova 31).
HINTS_VERSION = (2, 100)
DOWN_CELL_NAME = '(down)'
UNKNOWN = 'UNKNOWN'
SOFT_DELETED = 'soft-delete'

HOST = 'OS-EXT-SRV-ATTR:host'
NODE = 'OS-EXT-SRV-ATTR:hypervisor_hostname'
VM_STATE = 'OS-EXT-STS:vm_state'
TASK_STATE = 'OS-EXT-STS:task_state'


def down_cell(hosts=()):
    if hosts:
        error = _('the compute API reports the services of %(hosts)s as '
                  'UNKNOWN: their cell does not respond') % {
            'hosts': ', '.join(sorted(hosts))}
    else:
        error = _('the compute API returned servers of a cell that does '
                  'not respond')
    return model.Cell(uuid=DOWN_CELL_UUID, name=DOWN_CELL_NAME,
                      readable=False, error=error)


def instance(server, deleted=False):
    """A model.Instance from a server document (detail view, admin)."""
    if server.get('status') == UNKNOWN and VM_STATE not in server:
        # A down cell's stand-in: id, tenant and a few more, no states.
        return model.Instance(uuid=server['id'], cell=DOWN_CELL_UUID,
                              project_id=server.get('tenant_id'),
                              user_id=server.get('user_id'))
    vm_state = server.get(VM_STATE)
    return model.Instance(
        uuid=server['id'], cell=API_CELL.uuid, host=server.get(HOST),
        node=server.get(NODE), vm_state=vm_state,
        task_state=server.get(TASK_STATE),
        deleted=deleted and vm_state != SOFT_DELETED,
        project_id=server.get('tenant_id'), user_id=server.get('user_id'))


def migration(doc):
    return model.Migration(
        uuid=doc['uuid'], instance_uuid=doc['instance_uuid'],
        cell=API_CELL.uuid, status=doc['status'],
        migration_type=doc.get('migration_type'),
        source_compute=doc.get('source_compute'),
        source_node=doc.get('source_node'),
        dest_compute=doc.get('dest_compute'),
        dest_node=doc.get('dest_node'))


def compute_node(hypervisor):
    return model.ComputeNode(
        uuid=hypervisor['id'], host=(hypervisor.get('service') or {}).get(
            'host'),
        hypervisor_hostname=hypervisor['hypervisor_hostname'],
        hypervisor_type=hypervisor.get('hypervisor_type'),
        cell=API_CELL.uuid)


def service(doc, cell):
    return model.Service(host=doc['host'], binary=doc['binary'], cell=cell,
                         disabled=doc.get('status') == 'disabled',
                         forced_down=bool(doc.get('forced_down')))


def flavor(embedded):
    """The embedded flavor (2.47+) in the keys nova's DB record uses."""
    return {
        'vcpus': embedded['vcpus'], 'memory_mb': embedded['ram'],
        'root_gb': embedded.get('disk') or 0,
        'ephemeral_gb': embedded.get('ephemeral') or 0,
        'swap': embedded.get('swap') or 0,
        'extra_specs': dict(embedded.get('extra_specs') or {}),
    }


def listed_flavor(doc, extra_specs):
    """A flavor of ``GET /flavors/detail`` in the keys of nova's
    ``flavors`` row (nova_db.NovaDBReader.flavors): an embedded flavor's
    fields but its ephemeral disk's name, and its own name (swap is ""
    for none below microversion 2.75, as flavor() takes it).
    """
    return {'name': doc['name'], **flavor(dict(
        doc, ephemeral=doc.get('OS-FLV-EXT-DATA:ephemeral'),
        extra_specs=extra_specs))}


def when(text):
    """A compute API timestamp as a naive UTC datetime (as nova stores it).

    nova writes them with or without an offset (``Z``, ``+00:00``).
    """
    if not text:
        return None
    value = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value


class _NotAsked(Exception):
    """neutron could not be asked for a server's ports (``error``, a
    clients.network.NetworkError): unlike ports that neutron and nova
    name differently, a part of the cloud not read.
    """

    def __init__(self, error):
        super().__init__(error)
        self.error = error


class ComputeAPIReader(base.NovaReader):

    def __init__(self, client, concurrency=orphans_conf.DEFAULT_CONCURRENCY,
                 grace_period=orphans_conf.DEFAULT_GRACE_PERIOD,
                 network=None, foreign=model.Foreign()):
        self.client = client
        # What the operator declares not nova's (model.Foreign).
        self.foreign = foreign
        # A clients.network.NetworkClient, for the ports' bindings (see
        # read_claims); without one, no port claim is ever proven.
        self.network = network
        self.concurrency = concurrency
        self.grace_period = datetime.timedelta(seconds=grace_period)

    @property
    def label(self):
        return 'nova\'s compute API at %s' % self.client.endpoint

    # Phase one: bulk listings ---------------------------------------------

    def read(self):
        """Services, compute nodes, live servers and migrations."""
        self.client.check_version()
        snapshot = model.NovaSnapshot(cells={API_CELL.uuid: API_CELL},
                                      foreign=self.foreign)
        down_hosts = set()
        for doc in self.client.get('/os-services')['services']:
            if doc.get('status') == UNKNOWN:
                down_hosts.add(doc['host'])
                snapshot.services.append(service(doc, DOWN_CELL_UUID))
            else:
                snapshot.services.append(service(doc, API_CELL.uuid))
        if down_hosts:
            cell = down_cell(down_hosts)
            # Not a warning: the commands print the unreadable cell
            # themselves, and openstack shows warnings on stderr.
            LOG.info('Compute API: %s', cell.error)
            snapshot.cells[cell.uuid] = cell
        try:
            hypervisors = self.client.pages('/os-hypervisors/detail',
                                            'hypervisors')
        except compute.ComputeError as e:
            if not down_hosts:
                raise
            # nova lists hypervisors cell by cell and fails on a down one.
            # Without compute nodes no provider is known to be nova's, so
            # the unverifiable rule keeps every allocation from being
            # called an orphan while the cell is down.
            LOG.warning('Compute API: hypervisors cannot be listed while a '
                        'cell does not respond (%s); no allocation will be '
                        'judged', e)
            hypervisors = ()
        for doc in hypervisors:
            node = compute_node(doc)
            snapshot.compute_nodes[node.uuid] = node
        self._add_servers(snapshot, self.client.pages(
            '/servers/detail', 'servers', {'all_tenants': 1}))
        self._add_migrations(snapshot, self._migrations())
        return snapshot

    def flavors(self, names):
        """As NovaDBReader.flavors, from the compute API: every flavor,
        public and private (``is_public=None``, an admin's), picked by
        name; the extra specs as the listing shows them (2.61+), else
        one ``GET /flavors/{id}/os-extra_specs`` each.
        """
        wanted = set(names)
        found = {}
        for doc in self.client.pages('/flavors/detail', 'flavors',
                                     {'is_public': 'None'}):
            if doc.get('name') not in wanted:
                continue
            specs = doc.get('extra_specs')
            if specs is None:
                specs = self.client.get(
                    '/flavors/%s/os-extra_specs' %
                    parse.quote(str(doc['id']), safe=''))['extra_specs']
            found[doc['name']] = listed_flavor(doc, specs)
        return found

    def _migrations(self, params=None):
        return self.client.pages('/os-migrations', 'migrations', params)

    # Phase two: the consumers nothing live owns ---------------------------

    def resolve(self, snapshot, consumers):
        """Deleted servers, then each remaining consumer on its own."""
        missing = self._missing(snapshot, consumers)
        if not missing:
            return snapshot
        self._add_servers(snapshot, self.client.pages(
            '/servers/detail', 'servers', {'all_tenants': 1, 'deleted': 1}),
            deleted=True)
        missing = self._missing(snapshot, consumers)
        if missing:
            # Moves started since the first listing (their consumers are
            # newer than it), then servers nova shows but did not list.
            self._add_migrations(snapshot, self._migrations())
            missing = self._missing(snapshot, consumers)
            self._lookup(snapshot, missing)
        return snapshot

    @staticmethod
    def _missing(snapshot, consumers):
        known = set(snapshot.instances) | set(snapshot.migrations)
        owners = {m.instance_uuid for m in snapshot.migrations.values()
                  if m.uuid in consumers}
        return (set(consumers) | owners) - known

    def _lookup(self, snapshot, uuids, listed_deleted=True):
        """GET /servers/{uuid} and its migrations, for each (see _one)."""
        one = functools.partial(self._one, listed_deleted=listed_deleted)
        for inst, migrations in self._map(one, sorted(uuids)):
            self._add_instances(snapshot, [inst] if inst else [])
            self._add_migrations(snapshot, migrations)

    def _one(self, uuid, listed_deleted=True):
        """The server nova has under ``uuid`` (an Instance) or None, and
        its migrations. ``listed_deleted``: the deleted servers were
        listed already, do not look for ``uuid`` among them again.
        """
        server = self.client.get_or_none('/servers/%s' % uuid)
        if server is not None:
            inst = instance(server['server'])
        else:
            inst = ((None if listed_deleted else self._listed_deleted(uuid))
                    or self._deleted_row(uuid))
        return inst, self._migrations({'instance_uuid': uuid})

    def _listed_deleted(self, uuid):
        deleted = self.client.get('/servers/detail', {
            'all_tenants': 1, 'deleted': 1, 'uuid': uuid})['servers']
        deleted = [s for s in deleted if s['id'] == uuid]
        return instance(deleted[0], deleted=True) if deleted else None

    def _deleted_row(self, uuid):
        """A deleted server nova does not list, or None.

        nova lists as deleted only the rows it deleted itself
        (``deleted = id``); a row set to ``deleted = 1`` in SQL, as a
        runbook does, is in no listing. Its actions still show (2.21+
        reads them with deleted rows), until it is archived.
        """
        actions = self.client.get_or_none(
            '/servers/%s/os-instance-actions' % uuid)
        if actions is None:
            return None
        return model.Instance(uuid=uuid, cell=API_CELL.uuid, deleted=True)

    # Re-verification before a write ---------------------------------------

    def read_consumers(self, audited, consumers):
        """Fresh servers and migrations for a few consumers.

        Cells, compute nodes and services come from ``audited`` (the
        audit's snapshot). Each consumer's server, or the server of the
        migration it was, is read again with all its migrations;
        consumers that are neither are looked for among all migrations.
        """
        snapshot = model.NovaSnapshot(
            cells=dict(audited.cells), compute_nodes=audited.compute_nodes,
            services=audited.services, foreign=self.foreign)
        self._read_fresh(snapshot, audited, consumers)
        live = [uuid for uuid, inst in snapshot.instances.items()
                if not (inst.deleted or inst.archived)]
        self.read_claims(snapshot, live)
        return self.read_activity(snapshot, live)

    def _read_fresh(self, snapshot, audited, consumers):
        todo = set()
        for consumer in consumers:
            mig = audited.migrations.get(consumer)
            todo.add(mig.instance_uuid if mig else consumer)
        fetched, relisted = set(), False
        while True:
            self._lookup(snapshot, todo, listed_deleted=False)
            fetched |= todo
            missing = self._missing(snapshot, consumers)
            todo = missing - fetched
            if todo:
                # The instances of migrations just found.
                continue
            if not missing or relisted:
                return snapshot
            # Still unknown: maybe a migration newer than the audit.
            self._add_migrations(snapshot, self._migrations())
            relisted = True
            todo = self._missing(snapshot, consumers) - fetched

    # When nova last worked on an instance ----------------------------------

    def read_activity(self, snapshot, instance_uuids):
        """model.Activity of these live instances: the server's and its
        migrations' times, its latest instance action and that action's
        events (2.58+ shows actions' updated_at; 2.51+ events to admins).
        """
        snapshot.recent_since = base.recent_since(self.grace_period)
        for uuid, activity in self._map(self._activity,
                                        sorted(instance_uuids)):
            if activity is not None:
                snapshot.activity[uuid] = activity
        return snapshot

    def _activity(self, uuid):
        times = []
        server = self.client.get_or_none('/servers/%s' % uuid)
        if server is not None:
            times += [server['server'].get('created'),
                      server['server'].get('updated')]
        for mig in self._migrations({'instance_uuid': uuid}):
            times += [mig.get('created_at'), mig.get('updated_at')]
        pending = since = None
        actions = self.client.get_or_none(
            '/servers/%s/os-instance-actions' % uuid)
        actions = (actions or {}).get('instanceActions') or []
        if actions:
            # nova lists them newest first.
            latest = actions[0]
            times += [latest.get('start_time'), latest.get('updated_at')]
            detail = self.client.get_or_none(
                '/servers/%s/os-instance-actions/%s' %
                (uuid, latest['request_id']))
            for event in ((detail or {}).get('instanceAction') or {}).get(
                    'events') or ():
                times += [event.get('start_time'), event.get('finish_time')]
                if not event.get('finish_time'):
                    pending, since = event.get('event'), when(
                        event.get('start_time'))
        changed = max((t for t in map(when, times) if t is not None),
                      default=None)
        if changed is None and pending is None:
            return uuid, None
        return uuid, model.Activity(changed_at=changed,
                                    pending_event=pending,
                                    pending_since=since)

    # What a live server's ports and flavor claim ---------------------------

    def read_claims(self, snapshot, instance_uuids):
        """model.Claims of these live servers: the flavor embedded in the
        server (2.47+), and the ports' binding profiles from the network
        API, as nova's network info holds them.

        The compute API does not show when nova last wrote a server's
        network info; its ports come from the network API itself, and
        its interface list (``os-interface``, which nova reads from the
        network API too) must name the same ports: a port being
        attached or detached between the two reads proves nothing.
        Unlike an empty info cache, the network API listing no port
        bound to the server is neutron's own word: no port claims
        anything. Where neutron cannot be asked, those claims stay
        unproven and the snapshot says why (``unread``): the run is
        incomplete, as nova_db.NovaDBReader's is.
        """
        not_asked = []
        for uuid, found, error in self._map(self._claims,
                                            sorted(instance_uuids)):
            snapshot.claims[uuid] = found
            if error is not None:
                not_asked.append(error)
        if not_asked:
            # The first server's error (they are read in uuid order):
            # one line, however many servers could not be asked about.
            snapshot.unread.append(ports_mod.not_asked(len(not_asked),
                                                       not_asked[0]))
        return snapshot

    def _claims(self, uuid):
        """(uuid, model.Claims, the NetworkError that kept neutron from
        being asked about the server or None).
        """
        server = self.client.get_or_none('/servers/%s' % uuid)
        if server is None:
            return uuid, claims_mod.claims(
                None, None, ports_error=_('the server is gone'),
                flavor_error=_('the server is gone')), None
        embedded = server['server'].get('flavor')
        try:
            record = flavor(embedded) if embedded else None
        except (KeyError, TypeError):
            record = None
        network_info = ports_error = not_asked = None
        try:
            network_info = self._network_info(uuid)
        except _NotAsked as e:
            not_asked = e.error
            ports_error = claims_mod.neutron_not_asked(e.error)
        except (compute.ComputeError, network_mod.NetworkError) as e:
            ports_error = _('the network API could not be read (%(error)s)'
                            ) % {'error': e}
        if ports_error is not None:
            LOG.debug('Ports of server %(server)s: %(error)s',
                      {'server': uuid, 'error': ports_error})
        return uuid, claims_mod.claims(network_info, record,
                                       ports_error=ports_error,
                                       listed=True), not_asked

    def _network_info(self, uuid):
        """The server's ports as nova's network info would show them
        (``id`` and ``profile``); raises when no proof can be had:
        _NotAsked when neutron could not be asked.
        """
        if self.network is None:
            raise _NotAsked(network_mod.NetworkError(
                method='GET', url='/ports',
                reason=_('no network API client')))
        attached = {doc.get('port_id') for doc in self.client.get(
            '/servers/%s/os-interface' % uuid)['interfaceAttachments']}
        try:
            ports = self.network.server_ports(uuid)
        except network_mod.NetworkError as e:
            raise _NotAsked(e)
        if attached != {p.get('id') for p in ports}:
            raise network_mod.NetworkError(
                method='GET', url='/ports',
                reason=_('the compute and network APIs name different '
                         'ports for the server'))
        return network_mod.network_info(ports)

    # Heal -----------------------------------------------------------------

    def read_internal_hints(self, snapshot, instance_uuids):
        """The ``_nova*`` scheduler hints of these servers, as the
        compute API shows them from 2.100 (nova 31, 2025.1) on; an older
        API shows none, and leaves them unread.
        """
        for uuid, hints in self._map(self._hints, sorted(instance_uuids)):
            hints = heal.internal_hints(hints)
            if hints:
                snapshot.internal_hints[uuid] = hints
        return snapshot

    def _hints(self, uuid):
        server = self.client.get_at('/servers/%s' % uuid, HINTS_VERSION)
        return uuid, ((server or {}).get('server') or {}).get(
            'scheduler_hints') or {}

    def heal_data(self, instances):
        """{instance uuid: (flavor, boot_from_volume, network_info)}.

        The flavor is the one embedded in the server; a server booted
        from volume shows an empty ``image``. The compute API does not
        show ports' resource requests, so every attached port counts as
        possibly having one: such instances are left to ``nova-manage
        placement heal_allocations``, which asks neutron.
        """
        data = {}
        for uuid, found in self._map(self._heal_one,
                                     sorted(i.uuid for i in instances)):
            if found is not None:
                data[uuid] = found
        return data

    def _heal_one(self, uuid):
        server = self.client.get_or_none('/servers/%s' % uuid)
        if server is None or not server['server'].get('flavor'):
            return uuid, None
        server = server['server']
        ports = self.client.get_or_none('/servers/%s/os-interface' % uuid)
        if ports is None:
            # Deleted since it was read.
            return uuid, None
        ports = ports['interfaceAttachments']
        network_info = [{'id': port.get('port_id'),
                         'profile': {'allocation': _('not shown by the '
                                                     'compute API')}}
                        for port in ports]
        return uuid, (flavor(server['flavor']), not server.get('image'),
                      network_info)

    # Helpers --------------------------------------------------------------

    def _map(self, func, items):
        if not items:
            return []
        with concurrent.futures.ThreadPoolExecutor(self.concurrency) as pool:
            return list(pool.map(func, items))

    @classmethod
    def _add_servers(cls, snapshot, servers, deleted=False):
        cls._add_instances(snapshot, [instance(server, deleted=deleted)
                                      for server in servers])

    @staticmethod
    def _add_instances(snapshot, instances):
        for inst in instances:
            if inst.uuid not in snapshot.instances:
                snapshot.instances[inst.uuid] = inst
            if inst.cell not in snapshot.cells:
                # Only a down cell's server shows it when no service did.
                snapshot.cells[inst.cell] = down_cell()

    @staticmethod
    def _add_migrations(snapshot, migrations):
        for doc in migrations:
            mig = migration(doc)
            snapshot.migrations.setdefault(mig.uuid, mig)
