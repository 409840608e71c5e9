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
        cfg.set_defaults(opts, valid_interfaces=['internal', 'public'],
                         service_type=self.service_type)
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
        ks_loading.register_session_conf_options(conf, self.name)
        ks_loading.register_auth_conf_options(conf, self.name)
        conf.register_opts(self._adapter_opts() + _VERSION_DUMMIES,
                           group=self.name)

    def list_opts(self):
        from keystoneauth1 import loading as ks_loading
        return {
            self.group: (
                ks_loading.get_session_conf_options() +
                ks_loading.get_auth_common_conf_options() +
                ks_loading.get_auth_plugin_conf_options('password') +
                ks_loading.get_auth_plugin_conf_options('admin_token') +
                self._adapter_opts()),
        }
