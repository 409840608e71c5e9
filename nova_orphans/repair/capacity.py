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
"""Placement's refusal of a write on a provider over capacity.

A provider is over capacity once its usage exceeds ``(total -
reserved) * allocation_ratio``: after an operator raised ``reserved``
(nova's ``reserved_host_memory_mb``...) or lowered an allocation ratio,
or a provider was re-created with lower initial ratios, while servers
held it. Placement answers 409 ``Unable to allocate inventory: Unable to
create allocation for '<class>' on resource provider '<uuid>'. The
requested amount would exceed the capacity.`` (no error code) to a write
that puts any allocation on such a provider:

- placement 9.0.0 to 13.x do so for every write that keeps any of it
  there, even one that adds nothing: a PUT that only removes another
  provider's part (``trim_provider``, ``remove_provider``) or a POST
  that moves a migration's allocation to its instance on the same
  provider (``return_to_instance``). placement 14.0.0 let a write
  through when it leaves the provider's usage no higher than before
  (commit 5ac4c70b, bug 2104040).
- every release refuses a write that adds to it: a ``restore`` that
  puts back what ``clean`` removed there.

A write that empties a consumer (``delete_consumer``) puts nothing on
any provider and is never refused for capacity.
"""

import re

from nova_orphans import exception
from nova_orphans.i18n import _

_OVER = re.compile(
    r"Unable to create allocation for '(?P<rc>[^']+)' on resource provider "
    r"'(?P<rp>[^']+)'\. The requested amount would exceed the capacity")


def refused(error):
    """(provider uuid, resource class) when ``error`` is placement's 409
    for a provider over capacity, else None.
    """
    if not isinstance(error, exception.PlacementError) or \
            error.status_code != 409:
        return None
    found = _OVER.search(str(error))
    return (found.group('rp'), found.group('rc')) if found else None


def _outcome(error, name_of, text):
    """``text`` filled in with the provider (its name and uuid) and the
    class placement refused, or None when ``error`` is another.
    """
    found = refused(error)
    if found is None:
        return None
    uuid, rc = found
    name = name_of(uuid) if name_of is not None else None
    provider = '%s (%s)' % (name, uuid) if name and name != uuid else uuid
    return text % {'provider': provider, 'rc': rc}


def repair_refused(error, name_of=None):
    """The outcome text of a repair placement refused for capacity, or
    None for any other error. ``name_of(uuid)``: a provider's name, or
    None.
    """
    return _outcome(error, name_of, _(
        'resource provider %(provider)s is over capacity for %(rc)s, and '
        'this placement refuses any allocation write that keeps an '
        'allocation there, even one that adds nothing (placement before '
        '14.0.0, bug 2104040): give it room for its usage (raise its '
        '%(rc)s allocation_ratio or lower its reserved, in nova.conf where '
        'nova reports them) and run clean again, or upgrade placement to '
        '14.0.0 or later'))


def restore_refused(error, name_of=None):
    """The outcome text of a restore placement refused for capacity, or
    None for any other error.
    """
    return _outcome(error, name_of, _(
        'resource provider %(provider)s is over capacity for %(rc)s, and '
        'placement refuses to put back an allocation that adds to its '
        'usage: give it room (raise its %(rc)s allocation_ratio or lower '
        'its reserved, in nova.conf where nova reports them) and run '
        'restore again'))
