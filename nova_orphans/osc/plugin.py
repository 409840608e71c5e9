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
"""OpenStackClient plugin: ``openstack allocation orphan ...``.

Registered under ``openstack.cli.extension`` with its own API name, so
it loads next to osc-placement (API name ``placement``, global option
``--os-placement-api-version``) without clashing, and works without it.
It adds no global option: both services are driven at microversions the
code picks and checks, which are not the operator's choice.

``make_client`` returns the clients the commands need (placement,
compute, network for the ports' bindings, and container for Zun's
containers), each a keystoneauth adapter on osc's session (whose
``--timeout`` bounds every request) with its endpoint looked up the way
openstacksdk does it, so that clouds.yaml's
``<service>_endpoint_override`` is honoured, and so are its
``connect_retries`` and ``status_code_retries``, with which the adapters
retry reads (clients.retry; see ``doc/source/cli/openstack.rst``,
Endpoints, and ``doc/source/admin/faults.rst``).

Only openstacksdk's public interface is read: the cloud region's
getters and ``config``, and its loader's ``cloud_config``.
"""

import logging

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1.identity import base as identity_base
from keystoneauth1 import token_endpoint

from nova_orphans.clients import compute
from nova_orphans.clients import container
from nova_orphans.clients import network
from nova_orphans.clients import placement
from nova_orphans.clients import retry

LOG = logging.getLogger(__name__)

API_NAME = 'nova_orphans'
API_VERSION_OPTION = 'os_nova_orphans_api_version'
DEFAULT_API_VERSION = '1'
API_VERSIONS = ('1',)


class Clients:
    """The placement, compute, network and container clients of one
    ``openstack`` run (``network`` may be None: no port claim is then
    ever proven; ``container`` None: Zun is never read).
    """

    def __init__(self, placement_client, compute_client,
                 network_client=None, container_client=None, region=None,
                 retries=None):
        self.placement = placement_client
        self.compute = compute_client
        self.network = network_client
        self.container = container_client
        # openstacksdk's cloud region: what names the cloud, for journals
        # (app.api_sources.APISources.cloud).
        self.region = region
        # The run's clients.retry.Retries, shared by the clients' adapters.
        self.retries = retries


# What openstacksdk 3.0.0 to 4.4.x make of a clouds.yaml's token.
_LOST_TOKEN = 'None'


def admin_token(instance):
    """The ``admin_token`` plugin the cloud's configuration names, where
    openstacksdk lost its token; None where nothing was lost.

    openstacksdk 3.0.0 to 4.4.x (python-openstackclient 6.6 to 7.5, the
    2024.1 to 2025.1 releases' pins) read ``auth: {token: ...}`` from
    clouds.yaml as the text "None": ``magic_fixes`` adds a top-level
    ``token`` of None, and ``_fix_backwards_project`` prefers it to the
    one under ``auth`` and turns it into a string. Every request then
    carries the token "None", which placement's policy refuses (403).
    The token given on the command line or in OS_TOKEN is not touched;
    the one in the cloud's own configuration is read again here, from
    the files openstacksdk reads (clouds.yaml and secure.yaml where
    OS_CLIENT_CONFIG_FILE or its search path finds them).
    """
    auth = instance.session.auth
    if not isinstance(auth, token_endpoint.Token) or \
            auth.token != _LOST_TOKEN:
        return None
    from openstack.config import loader
    region = instance.sdk_connection.config
    clouds = loader.OpenStackConfig().cloud_config or {}
    given = (clouds.get('clouds', {}).get(region.name) or {}).get(
        'auth', {}).get('token')
    if not given or given == _LOST_TOKEN:
        return None
    LOG.debug('Using the token of cloud %s as its configuration gives it '
              '(openstacksdk read it as "None")', region.name)
    return token_endpoint.Token(auth.endpoint, given)


def adapter(instance, service_type, retries=None, auth=None):
    """A keystoneauth adapter for ``service_type`` on osc's session,
    whose reads are retried (``retries``: the run's retry.Retries), with
    ``auth`` in place of the session's own (see admin_token).

    The cloud region (openstacksdk's view of clouds.yaml, the
    environment and the command line) knows the per-service interface,
    region, ``<service>_endpoint_override`` and retries.
    """
    region = instance.sdk_connection.config
    return retry.RetryingAdapter(ks_adapter.Adapter(
        session=instance.session, auth=auth,
        service_type=region.get_service_type(service_type),
        interface=region.get_interface(service_type),
        region_name=region.get_region_name(service_type),
        endpoint_override=region.get_endpoint(service_type),
        connect_retries=region.get_connect_retries(service_type),
        status_code_retries=region.get_status_code_retries(service_type)),
        retries if retries is not None else retry.Retries(),
        service=service_type, timeout=retry.TIMEOUT)


def cataloged(instance, service_adapter):
    """A function saying whether the cloud has the adapter's service:
    an endpoint override names it, or the service catalog lists it.

    Only an identity plugin (password, token, application credential)
    has a catalog: another (``admin_token``, ``none``) gives its one
    endpoint for every service, which says nothing of this one.
    """
    def has_service():
        if service_adapter.endpoint_override:
            return True
        if not isinstance(instance.session.auth,
                          identity_base.BaseIdentityPlugin):
            return False
        try:
            return bool(service_adapter.get_endpoint())
        except ks_exc.EndpointNotFound:
            return False
    return has_service


def make_client(instance):
    LOG.debug('Instantiating nova-orphans placement, compute, network and '
              'container clients')
    auth = admin_token(instance)
    retries = retry.Retries()
    zun = adapter(instance, container.SERVICE_TYPE, retries, auth)
    return Clients(
        placement.PlacementClient(adapter(instance, 'placement', retries,
                                          auth)),
        compute.ComputeClient(adapter(instance, 'compute', retries, auth)),
        network.NetworkClient(adapter(instance, 'network', retries, auth)),
        container.ContainerClient(zun, cataloged(instance, zun)),
        region=instance.sdk_connection.config, retries=retries)


def build_option_parser(parser):
    """No global options (see the module docstring)."""
    return parser


def check_api_version(check_version):
    """True for the one command set; anything else gets osc's warning."""
    return check_version in API_VERSIONS
