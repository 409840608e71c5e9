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
"""Server shapes: what one server asks placement for.

A shape is one unnumbered request group of ``GET /allocation_candidates``:
resource amounts by class, required traits and forbidden traits
(engine.hosts counts how many such servers a provider tree takes).
Operators name one with ``--resource RC=N``, as osc-placement's
``allocation candidate list`` takes it (:func:`from_resources`), or with
a flavor, a plain mapping as nova stores it, turned into a request as
nova's ``scheduler.utils.ResourceRequest.from_request_spec`` does
(:func:`from_flavor`, :func:`resources_from_flavor`). Numbered groups
and ``hw:cpu_policy=mixed`` are refused. Not part of the shape: what
the image or the server's ports and devices add, and what nova's
scheduler adds to every request (the ``COMPUTE_STATUS_DISABLED`` root
trait, aggregates, availability zones). The extra specs translated:
``doc/source/admin/capacity.rst`` (Shapes).

Whether a class exists is placement's to say, at run time:
:func:`check_classes`.
"""

import math
import re
import typing

from nova_orphans.engine import model
from nova_orphans import exception
from nova_orphans.i18n import _

# Classes named first, in this order, wherever resources are written.
STANDARD_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')
# A resource class name as placement's API takes it.
_CLASS_NAME = re.compile(r'^[A-Z0-9_]+$')
# nova's ResourceRequest.XS_KEYPAT: resources[$S]:$RC and trait[$S]:$NAME.
_EXTRA_SPEC = re.compile(r'^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.*)$')
# nova.objects.fields' CPU policies, and os-traits' hyper-threading trait.
_CPU_POLICIES = ('dedicated', 'shared', 'mixed')
_THREAD_POLICIES = ('prefer', 'isolate', 'require')
_EMULATOR_POLICIES = ('share', 'isolate')
HYPERTHREADING = 'HW_CPU_HYPERTHREADING'


@model.record
class Shape:
    """One server as placement is asked for it: ``resources`` {class:
    amount}, ``required`` and ``forbidden`` traits (frozensets).
    """

    name: str
    resources: typing.Mapping[str, int]
    required: frozenset = frozenset()
    forbidden: frozenset = frozenset()


def ordered(amounts):
    """[(class, amount)]: STANDARD_CLASSES first, then by name."""
    order = [rc for rc in STANDARD_CLASSES if rc in amounts]
    order += sorted(rc for rc in amounts if rc not in STANDARD_CLASSES)
    return [(rc, amounts[rc]) for rc in order]


def plain(amounts):
    """``VCPU=1,MEMORY_MB=512``: one field, in :func:`ordered` order."""
    return ','.join('%s=%d' % item for item in ordered(amounts))


def _invalid(reason):
    return exception.InvalidInput(reason=reason)


def _label(flavor):
    return flavor.get('name') or _('(unnamed)')


def from_resources(arguments):
    """The shape of ``--resource`` arguments (``['VCPU=2', ...]``).

    Each is ``CLASS=AMOUNT``, an amount of at least 1 (placement's rule
    for a request); a class given twice is refused rather than one of
    its amounts guessed.
    """
    if not arguments:
        raise _invalid(_('a shape needs at least one --resource RC=N'))
    resources = {}
    for argument in arguments:
        rc, sep, amount = argument.partition('=')
        rc = rc.strip()
        if not sep or not _CLASS_NAME.match(rc):
            raise _invalid(_('--resource %(arg)s: expected RC=N, a '
                             'resource class and an amount (VCPU=2)') %
                           {'arg': argument})
        try:
            value = int(amount)
        except ValueError:
            value = 0
        if value < 1:
            raise _invalid(_('--resource %(arg)s: the amount must be a '
                             'whole number of at least 1') %
                           {'arg': argument})
        if rc in resources:
            raise _invalid(_('--resource %(rc)s is given twice') %
                           {'rc': rc})
        resources[rc] = value
    return Shape(plain(resources), resources)


def _extra_specs(flavor):
    specs = flavor.get('extra_specs') or {}
    return {str(k): v for k, v in specs.items()}


def _choice(flavor, specs, key, allowed):
    value = specs.get(key)
    if value is not None and value not in allowed:
        raise _invalid(_('flavor %(flavor)s: %(key)s=%(value)s is none of '
                         '%(allowed)s') % {
            'flavor': _label(flavor), 'key': key, 'value': value,
            'allowed': ', '.join(allowed)})
    return value


def _request(flavor, boot_from_volume):
    """(resources, required, forbidden) of the flavor's unnumbered group,
    in nova's order: extra specs, then the CPU policies, then the
    flavor's own amounts where no spec named their class, zeros dropped.
    """
    specs = _extra_specs(flavor)
    resources, required, forbidden = {}, set(), set()
    for key, value in sorted(specs.items()):
        match = _EXTRA_SPEC.match(key)
        if not match:
            continue
        prefix, group, name = match.groups()
        if group is not None:
            raise _invalid(_('flavor %(flavor)s: %(key)s asks for a '
                             'numbered request group, which the host view '
                             'does not count') %
                           {'flavor': _label(flavor), 'key': key})
        if prefix == 'resources':
            try:
                amount = int(value)
            except (TypeError, ValueError):
                continue
            if amount >= 0 and _CLASS_NAME.match(name):
                resources[name] = amount
        elif value == 'required':
            required.add(name)
        elif value == 'forbidden':
            forbidden.add(name)
    policy = _choice(flavor, specs, 'hw:cpu_policy', _CPU_POLICIES)
    threads = _choice(flavor, specs, 'hw:cpu_thread_policy',
                      _THREAD_POLICIES)
    emulator = _choice(flavor, specs, 'hw:emulator_threads_policy',
                       _EMULATOR_POLICIES)
    if policy == 'mixed':
        raise _invalid(_('flavor %(flavor)s: hw:cpu_policy=mixed splits its '
                         'CPUs by masks the host view does not read') %
                       {'flavor': _label(flavor)})
    if policy == 'dedicated':
        resources['PCPU'] = int(flavor['vcpus']) + (
            1 if emulator == 'isolate' else 0)
    if threads == 'require':
        required.add(HYPERTHREADING)
    elif threads == 'isolate':
        forbidden.add(HYPERTHREADING)
    if 'VCPU' not in resources and 'PCPU' not in resources:
        resources['VCPU'] = int(flavor['vcpus'])
    if 'MEMORY_MB' not in resources:
        resources['MEMORY_MB'] = int(flavor['memory_mb'])
    if 'DISK_GB' not in resources:
        swap_gb = int(math.ceil((flavor.get('swap') or 0) / 1024.0))
        resources['DISK_GB'] = (
            (flavor.get('ephemeral_gb') or 0) + swap_gb +
            (0 if boot_from_volume else flavor.get('root_gb') or 0))
    return ({rc: amount for rc, amount in resources.items() if amount},
            frozenset(required), frozenset(forbidden))


def resources_from_flavor(flavor, boot_from_volume=False):
    """{class: amount} nova asks placement for a server of ``flavor``
    (nova's ``resources_from_flavor``): what ``clean --heal`` writes.
    """
    return _request(flavor, boot_from_volume)[0]


def from_flavor(flavor):
    """The shape of a new server of ``flavor``, booted from an image."""
    resources, required, forbidden = _request(flavor, False)
    if not resources:
        raise _invalid(_('flavor %(flavor)s asks placement for nothing') %
                       {'flavor': _label(flavor)})
    return Shape(flavor['name'], resources, required, forbidden)


def check_classes(shapes, known):
    """Refuse a shape naming a class placement does not have (``known``:
    placement's resource classes, ``GET /resource_classes``).
    """
    known = frozenset(known)
    for shape in shapes:
        unknown = sorted(set(shape.resources) - known)
        if unknown:
            raise _invalid(_('shape %(shape)s: placement has no resource '
                             'class %(classes)s') % {
                'shape': shape.name, 'classes': ', '.join(unknown)})
