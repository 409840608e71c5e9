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
"""``[placement]``: keystoneauth session, auth and adapter options.

The same options nova registers, so the operator's nova.conf works as is
(including ``auth_type = admin_token`` with ``endpoint`` and ``token``).

keystoneauth is imported only when its options are registered or listed:
importing it (requests, its plugins) costs more than a whole fast-mode
``list`` of a small cloud, which never reaches the placement API.
"""

from oslo_config import cfg

from nova_orphans.conf import database

GROUP = 'placement'
SERVICE_TYPE = 'placement'

placement_group = cfg.OptGroup(
    GROUP, title='Placement service',
    help='How to reach the placement API; the same options as nova\'s.')

# Versions are the code's business, not the operator's (as in nova); the
# adapter loader still reads them, so they exist but cannot be set.
_VERSION_OPTS = ('version', 'min_version', 'max_version')
_VERSION_DUMMIES = [cfg.Opt(name, type=lambda value: None)
                    for name in _VERSION_OPTS]


def _adapter_opts():
    from keystoneauth1 import loading as ks_loading
    opts = [opt for opt in ks_loading.get_adapter_conf_options(
        include_deprecated=False) if opt.dest not in _VERSION_OPTS]
    cfg.set_defaults(opts, valid_interfaces=['internal', 'public'],
                     service_type=SERVICE_TYPE)
    return opts


def register_group(conf):
    """Just the group: its options are registered when a client needs them.

    oslo.config keeps a parsed file's values whatever is registered when,
    so ``register_opts`` may come after parsing.
    """
    conf.register_group(database._fresh(placement_group))


def register_opts(conf):
    """The group and keystoneauth's options; may be called again."""
    from keystoneauth1 import loading as ks_loading
    register_group(conf)
    ks_loading.register_session_conf_options(conf, GROUP)
    ks_loading.register_auth_conf_options(conf, GROUP)
    conf.register_opts(_adapter_opts() + _VERSION_DUMMIES, group=GROUP)


def list_opts():
    from keystoneauth1 import loading as ks_loading
    return {
        placement_group: (
            ks_loading.get_session_conf_options() +
            ks_loading.get_auth_common_conf_options() +
            ks_loading.get_auth_plugin_conf_options('password') +
            ks_loading.get_auth_plugin_conf_options('admin_token') +
            _adapter_opts()),
    }
