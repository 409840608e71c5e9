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
containers), each a keystoneauth adapter on osc's session whose
endpoint is looked up the way openstacksdk does it, so
``placement_endpoint_override``, ``compute_endpoint_override``,
``network_endpoint_override`` and ``container_endpoint_override`` in
clouds.yaml are honoured.
"""

import logging

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1.identity import base as identity_base

from nova_orphans.clients import compute
from nova_orphans.clients import container
from nova_orphans.clients import network
from nova_orphans.clients import placement

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
                 network_client=None, container_client=None, cloud=None):
        self.placement = placement_client
        self.compute = compute_client
        self.network = network_client
        self.container = container_client
        # What names the cloud, for journals (see cloud_identity).
        self.cloud = cloud or {}


def adapter(instance, service_type):
    """A keystoneauth adapter for ``service_type`` on osc's session.

    The cloud region (openstacksdk's view of clouds.yaml, the
    environment and the command line) knows the per-service interface,
    region and ``<service>_endpoint_override``.
    """
    region = instance.sdk_connection.config
    return ks_adapter.Adapter(
        session=instance.session,
        service_type=region.get_service_type(service_type),
        interface=region.get_interface(service_type),
        region_name=region.get_region_name(service_type),
        endpoint_override=region.get_endpoint(service_type))


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


def cloud_identity(instance):
    """What names the cloud reached, for a journal's run header: the
    cloud's name in clouds.yaml (None when the command line or OS_*
    variables alone give it), its auth URL, region and project. The
    name alone may differ from one workstation to the next; the rest
    tells clouds apart wherever the journal is read.
    """
    region = instance.sdk_connection.config
    auth = region.config.get('auth') or {}
    # The name the region was made with ('' for none), as openstacksdk
    # stores it: its ``name`` property makes one up from a session when
    # there is none.
    attrs = vars(region)
    name = attrs.get('_name', attrs.get('name'))
    if name in ('envvars', 'defaults'):
        # openstacksdk's names for "no cloud named".
        name = None
    return {'name': name or None,
            'auth_url': auth.get('auth_url') or auth.get('endpoint'),
            'region': region.get_region_name() or None,
            'project': auth.get('project_name') or auth.get('project_id')}


def make_client(instance):
    LOG.debug('Instantiating nova-orphans placement, compute, network and '
              'container clients')
    zun = adapter(instance, container.SERVICE_TYPE)
    return Clients(placement.PlacementClient(adapter(instance, 'placement')),
                   compute.ComputeClient(adapter(instance, 'compute')),
                   network.NetworkClient(adapter(instance, 'network')),
                   container.ContainerClient(zun, cataloged(instance, zun)),
                   cloud=cloud_identity(instance))


def build_option_parser(parser):
    """No global options (see the module docstring)."""
    return parser


def check_api_version(check_version):
    """True for the one command set; anything else gets osc's warning."""
    return check_version in API_VERSIONS
