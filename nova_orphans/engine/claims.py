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
"""What a live instance's ports and flavor claim (model.Claims).

Pure: both readers hand over nova's own records (the info cache's
network info, the flavor as nova stores it) and get the same answer, so
the two front ends prove a claim the same way.

A port with a resource request is bound with the providers placement
gave it: nova writes them into the port's binding profile as
``allocation``, one provider uuid, or with the extended resource
request a dict of request group uuid to provider uuid, and keeps the
binding profile in the vif's ``profile`` in the instance's network
info. A flavor's requests come from its own amounts and its
``resources*:`` extra specs (nova's ``resources_from_request_spec``);
the groups of a granular request may land on any provider of the tree,
so a class the flavor names is claimed wherever the instance holds it.
"""

import datetime

from oslo_serialization import jsonutils

from nova_orphans.engine import model
from nova_orphans.i18n import _

# What neutron's QoS rules request for a port (minimum bandwidth and
# minimum packet rate), and nothing but ports and a flavor that names
# them explicitly ever does.
PORT_CLASSES = frozenset((
    'NET_BW_EGR_KILOBIT_PER_SEC',
    'NET_BW_IGR_KILOBIT_PER_SEC',
    'NET_PACKET_RATE_KILOPACKET_PER_SEC',
    'NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC',
    'NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC',
))

# The flavor's own amounts' classes (VCPU, or PCPU with a dedicated or
# mixed CPU policy; disk may be 0 when booted from volume): claimed
# whatever the amounts, which only ever makes fewer findings.
FLAVOR_BASE_CLASSES = frozenset(('VCPU', 'PCPU', 'MEMORY_MB', 'DISK_GB'))


class Unproven(ValueError):
    """The record cannot prove anything; the message says why."""


class NoPortListed(Unproven):
    """nova's network info lists no port, which proves nothing: the
    network API's ports bound to the instance may (with_listed_ports).
    """


def port_providers(network_info, listed=False):
    """The providers the vifs' binding profiles name, as a frozenset.

    ``network_info``: the info cache's text, or its parsed list (the
    compute API reader builds one from the network API's ports).

    Raises Unproven when it is missing, empty, or not what nova writes:
    nova empties an info cache in more ways than by detaching every
    port (a refresh against a failing network API among them), so an
    empty one cannot prove that no port claims a provider. ``listed``:
    the list is the network API's own answer (the ports bound to the
    server), which neutron, that owns the bindings, gives: there, no
    port is a proof.
    """
    if network_info is None or network_info == '':
        raise Unproven(_('the instance has no network info'))
    if isinstance(network_info, (str, bytes)):
        try:
            network_info = jsonutils.loads(network_info)
        except ValueError:
            raise Unproven(_('the instance\'s network info cannot be '
                             'parsed'))
    if not isinstance(network_info, list):
        raise Unproven(_('the instance\'s network info cannot be parsed'))
    if not network_info and not listed:
        raise NoPortListed(_('the instance\'s network info lists no port'))
    found = set()
    for vif in network_info:
        if not isinstance(vif, dict):
            raise Unproven(_('the instance\'s network info cannot be '
                             'parsed'))
        profile = vif.get('profile') or {}
        if not isinstance(profile, dict):
            raise Unproven(_('the binding profile of port %(port)s cannot '
                             'be parsed') % {'port': vif.get('id')})
        allocation = profile.get('allocation')
        if not allocation:
            continue
        if isinstance(allocation, str):
            found.add(allocation)
        elif isinstance(allocation, dict) and all(
                isinstance(rp, str) for rp in allocation.values()):
            found.update(allocation.values())
        else:
            raise Unproven(_('the allocation in the binding profile of '
                             'port %(port)s cannot be parsed') %
                           {'port': vif.get('id')})
    return frozenset(found)


def flavor_classes(flavor):
    """The resource classes the flavor (nova's record, as a dict with
    ``vcpus``, ``memory_mb`` and ``extra_specs``) requests.

    Raises Unproven when there is no flavor or it is not nova's record.
    """
    if not isinstance(flavor, dict) or 'vcpus' not in flavor or (
            'memory_mb' not in flavor):
        raise Unproven(_('the instance\'s flavor cannot be read'))
    extra_specs = flavor.get('extra_specs') or {}
    if not isinstance(extra_specs, dict):
        raise Unproven(_('the instance\'s flavor cannot be read'))
    classes = set(FLAVOR_BASE_CLASSES)
    for key, value in extra_specs.items():
        group, _sep, rc = str(key).partition(':')
        if not group.startswith('resources') or not rc:
            continue
        try:
            amount = int(value)
        except (TypeError, ValueError):
            # nova refuses such a flavor; whatever it is, it may claim rc.
            amount = 1
        if amount:
            classes.add(rc)
    return frozenset(classes)


def claims(network_info, flavor, network_changed_at=None, ports_error=None,
           flavor_error=None, listed=False, ports_changed_at=None):
    """model.Claims from an instance's records.

    ``ports_error`` / ``flavor_error``: why a reader could not read that
    record at all (it then passes None for it). ``listed``: as for
    port_providers; otherwise ``network_info`` is nova's info cache
    (Claims.cache_only). ``ports_changed_at``: see Claims.
    """
    result = model.Claims(network_changed_at=_naive(network_changed_at),
                          ports_changed_at=_naive(ports_changed_at))
    if ports_error is not None:
        result.ports_error = ports_error
    else:
        try:
            result.port_providers = port_providers(network_info, listed)
            result.cache_only = not listed
        except NoPortListed as e:
            result.ports_error = str(e)
            result.ports_unlisted = True
        except Unproven as e:
            result.ports_error = str(e)
    if flavor_error is not None:
        result.flavor_error = flavor_error
    else:
        try:
            result.flavor_classes = flavor_classes(flavor)
        except Unproven as e:
            result.flavor_error = str(e)
    return result


def with_listed_ports(found, network_info=None, error=None):
    """``found`` (model.Claims) with what the network API answered: its
    ports bound to the instance, as network info (``id`` and
    ``profile``), or why it could not be asked.

    The network API's listing is neutron's own word, where nova's info
    cache is not: an empty one proves nothing (see port_providers), and
    one that lists ports is only as current as nova's last refresh of
    it, on neutron's events (no longer periodically by default since
    nova 31.0.0, bug 1996094): a lost event leaves it naming a port
    neutron deleted or unbound, or missing one neutron bound. The
    compute API's ``os-interface`` is neutron's answer too.
    """
    if error is not None:
        found.ports_error = error
        return found
    try:
        found.port_providers = port_providers(network_info, listed=True)
        found.ports_error = None
    except Unproven as e:
        found.ports_error = str(e)
    found.ports_unlisted = False
    found.cache_only = False
    return found


def neutron_not_asked(error):
    """Why a server's ports prove nothing when the network API could not
    be asked for them (``error``), as Claims.ports_error.
    """
    return _('neutron could not be asked for the ports bound to the '
             'server (%(error)s)') % {'error': error}


def flavor_record(serialized):
    """The current flavor from ``instance_extra.flavor`` as a dict, or
    None when the text is missing or not nova's versioned object.
    """
    try:
        data = jsonutils.loads(serialized or 'null')
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get('cur'), dict):
        return None
    cur = data['cur']
    cur = cur.get('nova_object.data', cur)
    return dict(cur) if isinstance(cur, dict) else None


def _naive(when):
    if isinstance(when, str):
        when = datetime.datetime.fromisoformat(when)
    if isinstance(when, datetime.datetime) and when.tzinfo is not None:
        when = when.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return when
