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
"""nova's state strings that decide whether an allocation is still owned.

Copied as strings (the tool never imports nova). The terminal migration
statuses are exactly those nova itself excludes from "in progress" in
``migration_get_in_progress_by_host_and_node``; everything else, notably
``finished`` (a resize awaiting confirmation), still owns its allocations.
"""

MIGRATION_TERMINAL = frozenset((
    'confirmed', 'reverted', 'error', 'failed', 'completed', 'cancelled',
    'done',
))
MIGRATION_FAILED = frozenset(('error', 'failed'))
MIGRATION_SUCCEEDED = frozenset(('done', 'completed'))
EVACUATION = 'evacuation'

# vm_states.
BUILDING = 'building'
SOFT_DELETED = 'soft-delete'
SHELVED_OFFLOADED = 'shelved_offloaded'
# A resize or cold migration awaiting confirmation, or being confirmed.
RESIZED = 'resized'

# task_state of an instance (or build request) not placed yet.
SCHEDULING = 'scheduling'

# task_states during which a shelved-offloaded instance is being placed
# again, so its new allocations are legitimate.
UNSHELVE_TASK_STATES = frozenset(('unshelving', 'spawning'))


def migration_in_progress(migration):
    return migration.status not in MIGRATION_TERMINAL
