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


# Cold moves, and the statuses nova gives them before the guest left its
# source host (conductor's pre-migrating, the source's migrating).
COLD_MIGRATION_TYPES = frozenset(('migration', 'resize'))
BEFORE_THE_MOVE = frozenset(('pre-migrating', 'migrating'))


def cut_off(migration, instance):
    """A cold move nova stopped working on before the guest left its
    source, and never ended.

    nova-compute stopped (or died) in the middle of it: nova 33 and
    later cut off what is still running ``manager_shutdown_timeout``
    after a stop. On its next start, ``_init_instance`` reverts a guest
    found in task state ``resize_migrating`` and clears the task state,
    but leaves the migration's status as it was; nothing nova runs
    later ends it. A cold move in progress always has its instance in
    a task state (``resize_prep`` to ``resize_finish``) or ``resized``:
    one in these statuses whose live instance has neither, and is on
    the move's source node, is over.
    """
    return (migration.migration_type in COLD_MIGRATION_TYPES and
            migration.status in BEFORE_THE_MOVE and
            not (migration.deleted or migration.archived) and
            instance is not None and
            not (instance.deleted or instance.archived) and
            instance.task_state is None and instance.vm_state != RESIZED and
            (instance.host, instance.node) ==
            (migration.source_compute, migration.source_node))
