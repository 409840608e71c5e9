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
"""The readers and the placement client of one run.

Two kinds, one per front end, each saying in its type what it reads:

* ``DatabaseSources`` (nova-orphans-manage): nova's API and cell
  databases from nova.conf, and placement through its API, or, in fast
  mode (``[placement_database] connection`` set), its database for the
  bulk reads and the API for everything else; the network API with
  ``[neutron]``'s credentials, for the ports of the few servers whose
  info cache lists none (readers.nova_db.NovaDBReader.read_claims);
* ``api_sources.APISources`` (openstack): the compute, placement and
  network APIs through osc's session (a module of its own: importing
  the compute API's reader costs keystoneauth, which a fast-mode list
  of nova-orphans-manage never needs).

The application layer asks a run's sources only what is declared here.
"""

import os
import time

from nova_orphans.app import foreign as foreign_mod
from nova_orphans.app import options as opts
from nova_orphans.conf import orphans as orphans_conf
from nova_orphans.conf import placement as placement_conf
from nova_orphans import db_utils
from nova_orphans.engine import rules as rules_mod
from nova_orphans.engine import site_rules
from nova_orphans.readers import nova_db
from nova_orphans.readers import placement_api
from nova_orphans.readers import placement_db as placement_db_mod
from nova_orphans.readers import zun_db
from nova_orphans.repair import journal

API_CONCURRENCY = orphans_conf.DEFAULT_CONCURRENCY
# How a journal's run header names the front end that wrote it.
FRONT_END = 'nova-orphans-manage'


def value(values, option):
    """The run's value of ``option`` (an options.Option) in ``values``
    (options.resolve's), or the option's own default where the command
    does not take it (or ``values`` is None).
    """
    if values is not None and option.dest in values:
        return values[option.dest]
    return option.config_default


def foreign(values):
    """The model.Foreign the run's --foreign-project and
    --foreign-consumer-type (and their configuration) declare; each was
    checked when the values were resolved.
    """
    return foreign_mod.declared(value(values, opts.FOREIGN_PROJECT),
                                value(values, opts.FOREIGN_CONSUMER_TYPE))


class Sources:
    """What a run reads and writes through.

    ``placement`` is the placement API client every write goes through;
    ``placement_db`` a database reader in fast mode, else None;
    ``rules`` the classification rules; ``concurrency`` the placement
    requests in flight at once; ``state_path`` where journals go by
    default; ``capacity_flavors`` the flavors a scan's metrics count;
    ``full_read_interval`` the seconds between full reads of placement
    through its API (readers/kept_reads.py).
    """

    placement_db = None
    # [nova_orphans] capacity_flavors: the flavors a scan's metrics count
    # (openstack reads no configuration file: none).
    capacity_flavors = ()
    rules = rules_mod.DEFAULT_RULES
    concurrency = API_CONCURRENCY
    state_path = None
    full_read_interval = opts.FULL_READ_INTERVAL.config_default
    # The run's clients.retry.Retries (its counts), once a client made
    # one; None while no service was asked anything.
    retries = None

    @property
    def placement(self):
        raise NotImplementedError()

    def placement_reader(self):
        """The reader of the audit's bulk reads."""
        raise NotImplementedError()

    def nova(self):
        """The nova reader; made on first use (a restore reads no nova)."""
        raise NotImplementedError()

    def check_writes(self):
        """Refuse a clean's writes (raise) when the reads that judge
        them may have missed what the credentials cannot see; nothing
        to check by default (nova's databases hold every row).
        """

    def zun(self):
        """The reader of Zun for the zun site rule (a reader of Zun's
        database or of its API, with ``read(consumers)`` returning a
        model.ZunSnapshot), or None: the sources read no Zun, and the
        rule is off unless a configuration names it.
        """
        return None

    def journal_dir(self):
        return journal.default_directory(self.state_path)

    def cloud(self):
        """What names the cloud, for a journal's run header (see
        journal_verify.Run.cloud, restore.identity): the addresses a
        restore compares, never a secret; {} when nothing does.
        """
        return {}

    def describe(self):
        """What the run reads and the configuration that names it, in
        words, for the log (never a password).
        """
        return 'the cloud'

    def close(self):
        """Let go of the connections the run kept."""


class DatabaseSources(Sources):
    """nova.conf: nova's databases, placement's API (or its database).

    ``values``: the run's option values (options.resolve's, nova.conf's
    defaults filled in); None: the options' own defaults.
    """

    def __init__(self, conf, values=None):
        self.conf = conf
        self.values = values
        # Every --config-dir given (config_dir keeps only the last), else
        # those oslo.config found by default.
        self.config_dirs = list(conf.config_dirs or conf.config_dir or ())
        group = conf.nova_orphans
        self.concurrency = group.placement_concurrency
        self.state_path = group.state_path
        # A list's value (given, or nova.conf's); a clean takes nova.conf's.
        interval = opts.FULL_READ_INTERVAL
        if values is not None and interval.dest in values:
            self.full_read_interval = values[interval.dest]
        else:
            interval.check(group.full_read_interval, from_config=True)
            self.full_read_interval = group.full_read_interval
        self.capacity_flavors = list(group.capacity_flavors or ())
        self._placement = None
        self._nova = None
        self._rules = None
        self._zun = None
        self._retries = None
        # Where the run's deadline counts from.
        self._started = time.monotonic()
        self.placement_db = None
        if conf.placement_database.connection:
            self.placement_db = placement_db_mod.PlacementDBReader(
                conf.placement_database.connection,
                api_reader=_OnFirstUse(self._api_reader),
                max_retries=group.db_max_retries,
                retry_interval=group.db_retry_interval)

    @property
    def placement(self):
        if self._placement is None:
            # keystoneauth, and [placement]'s options, only from here on
            # (see nova_orphans.conf.register_opts).
            from nova_orphans.clients import placement as placement_client
            placement_conf.register_opts(self.conf)
            self._placement = placement_client.PlacementClient.from_conf(
                self.conf, retries=self._run_retries())
        return self._placement

    @property
    def retries(self):
        return self._retries

    def _run_retries(self):
        """The run's budget, deadline and counts, shared by its clients
        (made with the first: keystoneauth is imported only then).
        """
        if self._retries is None:
            from nova_orphans.clients import retry
            self._retries = retry.Retries(
                budget=value(self.values, opts.RETRY_BUDGET),
                deadline=value(self.values, opts.DEADLINE),
                started=self._started)
        return self._retries

    @property
    def rules(self):
        if self._rules is None:
            self._rules = site_rules.chain(self.conf,
                                           zun=self.zun() is not None)
        return self._rules

    def cloud(self):
        """The configuration files read, which name the cloud where
        journals are listed, and the addresses they give: keystone's
        auth URL and the region of ``[placement]`` (when it goes through
        keystone), and the API database's host and name (never its
        user or password).
        """
        cloud = {'front_end': FRONT_END,
                 'config_files': [os.path.abspath(path) for path in
                                  self.conf.config_file or ()]}
        if self.config_dirs:
            cloud['config_dirs'] = [os.path.abspath(path)
                                    for path in self.config_dirs]
        # keystoneauth registers the auth plugin's options (auth_url)
        # when the client is made.
        self.placement
        group = self.conf[placement_conf.GROUP]
        for key, option in (('auth_url', 'auth_url'),
                            ('region', 'region_name')):
            value = getattr(group, option, None)
            if value:
                cloud[key] = value
        database = db_utils.location(self.conf.api_database.connection)
        if database:
            cloud['api_database'] = database
        return cloud

    def describe(self):
        text = '%s and placement\'s API' % nova_db.NovaDBReader.describe(
            self.conf)
        if self.placement_db is not None:
            text += ' (%s for the bulk reads)' % self.placement_db.label
        return '%s, as configured by %s' % (text, ', '.join(
            list(self.conf.config_file or ()) + self.config_dirs)
            or 'nothing')

    def _api_reader(self):
        return placement_api.PlacementAPIReader(self.placement,
                                                self.concurrency)

    def placement_reader(self):
        return self.placement_db or self._api_reader()

    def nova(self):
        if self._nova is None:
            self._nova = nova_db.NovaDBReader(
                self.conf, network=self._network,
                grace_period=value(self.values, opts.GRACE_PERIOD),
                foreign=foreign(self.values))
        return self._nova

    def _network(self):
        # keystoneauth, and [neutron]'s options, only from here on, as
        # for placement.
        from nova_orphans.clients import network as network_client
        return network_client.NetworkClient.from_conf(
            self.conf, retries=self._run_retries())

    def zun(self):
        if self._zun is None and self.conf.zun_database.connection:
            group = self.conf.nova_orphans
            self._zun = zun_db.ZunDBReader(
                self.conf.zun_database.connection,
                max_retries=group.db_max_retries,
                retry_interval=group.db_retry_interval)
        return self._zun

    def close(self):
        for reader in (self._nova, self.placement_db, self._zun):
            if reader is not None:
                reader.close()


class _OnFirstUse:
    """An object built by ``factory()`` the first time it is used.

    Fast mode hands the placement API reader to the database reader for
    the rare reads that must come from the API; a ``list`` makes none,
    and loading keystoneauth's auth plugin looks through the installed
    packages' entry points (a quarter of a second when stevedore's cache
    of them is cold).
    """

    def __init__(self, factory):
        self._factory = factory
        self._obj = None

    def __getattr__(self, name):
        if self._obj is None:
            self._obj = self._factory()
        return getattr(self._obj, name)
