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
"""The vocabulary of findings: reasons, actions and consumer types.

These strings are a contract: ``--reason`` takes them and other tooling
matches on them in the JSON output.
"""

# Actions.
DELETE_CONSUMER = 'delete_consumer'
REMOVE_PROVIDER = 'remove_provider'
RETURN_TO_INSTANCE = 'return_to_instance'
HEAL = 'heal'
# Only one provider's part of a live instance's own allocation goes.
TRIM_PROVIDER = 'trim_provider'
NONE = 'none'
ACTIONS = (DELETE_CONSUMER, REMOVE_PROVIDER, RETURN_TO_INSTANCE, HEAL,
           TRIM_PROVIDER, NONE)

# Orphan reasons.
DELETED_INSTANCE = 'deleted_instance'
UNKNOWN_CONSUMER = 'unknown_consumer'
EVACUATED_SOURCE = 'evacuated_source'
STALE_PROVIDER = 'stale_provider'
FINISHED_MIGRATION = 'finished_migration'
SHELVED_OFFLOADED = 'shelved_offloaded'
MISSING_ALLOCATIONS = 'missing_allocations'
LEAKED_PORT_ALLOCATION = 'leaked_port_allocation'
ORPHAN_REASONS = (
    DELETED_INSTANCE, UNKNOWN_CONSUMER, EVACUATED_SOURCE, STALE_PROVIDER,
    FINISHED_MIGRATION, SHELVED_OFFLOADED, MISSING_ALLOCATIONS,
    LEAKED_PORT_ALLOCATION,
)

# Reasons of allocations that are fine (listed with --all, action none).
ACTIVE_INSTANCE = 'active_instance'
ACTIVE_MIGRATION = 'active_migration'
BUILDING = 'building'
SOFT_DELETED = 'soft_deleted'
UNVERIFIABLE = 'unverifiable'
UNMANAGED_PROVIDER = 'unmanaged_provider'
# A consumer that is not nova's to judge: its project is one of
# [nova_orphans] foreign_projects, or its placement consumer type is not
# one nova writes (or is one of [nova_orphans] foreign_consumer_types).
UNMANAGED_CONSUMER = 'unmanaged_consumer'
IN_PROGRESS = 'in_progress'
HEALTHY_REASONS = (
    ACTIVE_INSTANCE, ACTIVE_MIGRATION, BUILDING, SOFT_DELETED, UNVERIFIABLE,
    UNMANAGED_PROVIDER, UNMANAGED_CONSUMER, IN_PROGRESS,
)

REASONS = ORPHAN_REASONS + HEALTHY_REASONS

# Consumer types as reported.
INSTANCE = 'instance'
MIGRATION = 'migration'
UNKNOWN = 'unknown'
# The consumer types nova's consumers may carry in placement (1.38+):
# nova 27 to 34 write none, which placement reads back as "unknown".
NOVA_CONSUMER_TYPES = frozenset(('INSTANCE', 'MIGRATION'))
UNTYPED = 'unknown'

# Resource provider trees (``providers list``; see provider_rules). The
# whole tree of a root shares its root's reason and action.
DELETE_PROVIDER = 'delete_provider'
# The tree's root is a compute node nova deleted: an orphan.
DELETED_COMPUTE_NODE = 'deleted_compute_node'
# Trees that are fine: a live compute node's; one nova never knew as a
# compute node (another service's, a sharing provider); one nobody can
# judge while a cell cannot be read (UNVERIFIABLE, as above).
LIVE_COMPUTE_NODE = 'live_compute_node'
UNMANAGED = 'unmanaged'
# A provider of a live compute node's tree that holds nothing while all
# its capacity is reserved: capacity nobody holds, reported, never
# cleaned (see provider_rules.fully_reserved_details).
FULLY_RESERVED = 'fully_reserved'

# What a restore's row did: the clean's action undone. A restore's rows
# name these, never the clean's action, so that they cannot be read as a
# second clean.
RESTORE_CONSUMER = 'restore_consumer'
RESTORE_ALLOCATION = 'restore_allocation'
RESTORE_MIGRATION = 'restore_migration'
REMOVE_HEALED = 'remove_healed'
RESTORE_PROVIDER = 'restore_provider'
RESTORE_ACTIONS = {
    DELETE_CONSUMER: RESTORE_CONSUMER,
    REMOVE_PROVIDER: RESTORE_ALLOCATION,
    TRIM_PROVIDER: RESTORE_ALLOCATION,
    RETURN_TO_INSTANCE: RESTORE_MIGRATION,
    HEAL: REMOVE_HEALED,
    DELETE_PROVIDER: RESTORE_PROVIDER,
}
