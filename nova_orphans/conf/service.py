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
"""A service's group of keystoneauth options, as nova registers them.

``[placement]`` and ``[neutron]`` hold keystoneauth's session, auth and
adapter options in nova.conf; nova-orphans registers the same ones, so
the operator's nova.conf works as is (``auth_type = admin_token`` with
``endpoint`` and ``token`` included).

keystoneauth is imported only when the options are registered or
listed: importing it (requests, its plugins) costs more than a whole
fast-mode ``list`` of a small cloud, which never reaches an API.

Three defaults differ from keystoneauth's, which retry nothing and wait
forever: ``connect_retries``, ``status_code_retries`` (with
``retriable_status_codes``) and ``timeout`` (see
nova_orphans.clients.retry and ``doc/source/admin/faults.rst``).
"""

from oslo_config import cfg

from nova_orphans.conf import database

# Versions are the code's business, not the operator's (as in nova); the
# adapter loader still reads them, so they exist but cannot be set.
_VERSION_OPTS = ('version', 'min_version', 'max_version')
# The same objects every time: registering them again is then no
# duplicate.
_VERSION_DUMMIES = [cfg.Opt(name, type=lambda value: None)
                    for name in _VERSION_OPTS]

# Retries of a read per request, after connection errors and timeouts
# and after a retriable status each. At a 20 % fault rate a read fails
# nine times in a row once in about two million.
RETRIES = 8
# 429 (with its Retry-After) and what a proxy answers for a backend
# that restarts or is overloaded. 500 is the service's own error: sent
# again, the request fails again.
RETRIABLE_STATUS_CODES = [429, 502, 503, 504]
# Seconds a request waits for its answer.
TIMEOUT = 60
_STATUS_CODES_HELP = ('HTTP statuses after which a read is retried (up to '
                      'status_code_retries times).')
_DELAYS = ('If not set, jittered exponential delays from about 0.1 s, '
           'doubling up to 2 s, or the Retry-After of a 429 or 503.')
_RETRY_HELP = {
    'connect_retries': 'Times a read (GET) is retried after a connection '
                       'error, a reset or a timeout. Writes are never '
                       'retried blindly: a write whose answer was lost is '
                       'read back, and sent again only if it was not '
                       'applied (as many times). See also [nova_orphans] '
                       'retry_budget.',
    'connect_retry_delay': 'Seconds between two retries after connection '
                           'errors. ' + _DELAYS,
    'status_code_retries': 'Times a read (GET) is retried after a status of '
                           'retriable_status_codes.',
    'status_code_retry_delay': 'Seconds between two retries after a '
                               'retriable status. ' + _DELAYS,
    'retriable_status_codes': _STATUS_CODES_HELP,
}
# keystoneauth before 5.2 has no such option; the tool reads it all the
# same (the same object every time, as the version dummies).
_STATUS_CODES_OPT = cfg.ListOpt('retriable-status-codes',
                                item_type=cfg.types.Integer(),
                                default=RETRIABLE_STATUS_CODES,
                                help=_STATUS_CODES_HELP)


class ServiceGroup:
    """The group ``group`` (an OptGroup) of a service of ``service_type``.

    Adapter options default as nova's: ``valid_interfaces`` internal,
    then public, and the service type.
    """

    def __init__(self, group, service_type):
        self.group = group
        self.service_type = service_type

    @property
    def name(self):
        return self.group.name

    def _adapter_opts(self):
        from keystoneauth1 import loading as ks_loading
        opts = [opt for opt in ks_loading.get_adapter_conf_options(
            include_deprecated=False) if opt.dest not in _VERSION_OPTS]
        if not any(opt.dest == _STATUS_CODES_OPT.dest for opt in opts):
            opts.append(_STATUS_CODES_OPT)
        for opt in opts:
            # keystoneauth's words describe its own loop, not the tool's.
            opt.help = _RETRY_HELP.get(opt.dest, opt.help)
        cfg.set_defaults(opts, valid_interfaces=['internal', 'public'],
                         service_type=self.service_type,
                         connect_retries=RETRIES,
                         status_code_retries=RETRIES,
                         retriable_status_codes=RETRIABLE_STATUS_CODES)
        return opts

    @staticmethod
    def _session_opts():
        from keystoneauth1 import loading as ks_loading
        opts = ks_loading.get_session_conf_options()
        cfg.set_defaults(opts, timeout=TIMEOUT)
        return opts

    def register_group(self, conf):
        """Just the group: its options are registered when a client
        needs them. oslo.config keeps a parsed file's values whatever
        is registered when, so ``register_opts`` may come after parsing.
        """
        conf.register_group(database._fresh(self.group))

    def register_opts(self, conf):
        """The group and keystoneauth's options; may be called again."""
        from keystoneauth1 import loading as ks_loading
        self.register_group(conf)
        conf.register_opts(self._session_opts(), group=self.name)
        ks_loading.register_auth_conf_options(conf, self.name)
        conf.register_opts(self._adapter_opts() + _VERSION_DUMMIES,
                           group=self.name)

    def list_opts(self):
        from keystoneauth1 import loading as ks_loading
        return {
            self.group: (
                self._session_opts() +
                ks_loading.get_auth_common_conf_options() +
                ks_loading.get_auth_plugin_conf_options('password') +
                ks_loading.get_auth_plugin_conf_options('admin_token') +
                self._adapter_opts()),
        }
