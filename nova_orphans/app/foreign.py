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
"""The other services' consumers the operator declares: checked once,
for both front ends, before anything is read.

The engine judges by the model.Foreign this makes (see
rules.unmanaged_consumer); what an operator may write in it is the
application's to check, and a value refused names the option it came
from (``[nova_orphans] foreign_projects`` or ``--foreign-project``).
"""

import re

from nova_orphans.engine import model
from nova_orphans.engine import reasons
from nova_orphans import exception
from nova_orphans.i18n import _

# Placement's consumer type names (CONSUMER_TYPE_PATTERN).
_CONSUMER_TYPE = re.compile(r'^[A-Z0-9_]+$')
# keystone's project ids: a uuid4's hex digits (the SQL resource backend,
# the only one since Mitaka); what nova passes placement from the token.
_PROJECT_ID = re.compile(r'^[0-9a-f]{32}$')


def declared(projects=(), consumer_types=(), projects_option='',
             types_option='', error=exception.ConfigError):
    """The model.Foreign the operator declares, checked.

    Project ids only: placement records a consumer's project id, and
    names are not resolved, so that both front ends judge alike from
    the same declaration (``nova-orphans-manage`` reads nova.conf and
    has no identity service to ask) and a name never silently matches
    nothing, which would leave another service's consumers to be
    cleaned. A value that is no keystone project id is refused with
    ``error``, naming ``projects_option`` (or ``types_option``).
    """
    ids = set()
    for value in projects:
        value = value.strip()
        if not _PROJECT_ID.match(value.lower()):
            raise error(reason=_(
                '%(option)s: %(value)s is not a project id (32 hex '
                'digits); project names are not resolved: give the id '
                '("openstack project show -f value -c id NAME")') % {
                'option': projects_option, 'value': value})
        ids.add(value.lower())
    kinds = set()
    for value in consumer_types:
        value = value.strip()
        if not _CONSUMER_TYPE.match(value):
            raise error(reason=_(
                '%(option)s: %(value)s is not a placement consumer type '
                '(upper case letters, digits and _)') % {
                'option': types_option, 'value': value})
        if value in reasons.NOVA_CONSUMER_TYPES:
            raise error(reason=_(
                '%(option)s: %(value)s is one of nova\'s own consumer '
                'types') % {'option': types_option, 'value': value})
        kinds.add(value)
    return model.Foreign(projects=frozenset(ids),
                         consumer_types=frozenset(kinds))
