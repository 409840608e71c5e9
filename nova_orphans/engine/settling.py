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
"""Whether nova may still be working on a live instance, and why.

nova records a move's end in its database before it deals with the
move's allocations: confirming, ``drop_move_claim_at_source`` sets the
migration ``confirmed`` (and the instance ACTIVE) and only then is the
migration's allocation on the source deleted; reverting,
``drop_move_claim_at_dest`` sets it ``reverted`` while the instance is
already back on its source host in task state ``resize_reverting``,
and only then does the source move the migration's allocation back to
the instance. What the rules would repair in that window is exactly
what nova is about to write, under a consumer generation it has
already read: repairing it makes nova's write fail and can leave the
server with no allocation at all. A re-read does not help, it shows
the same state.

So nothing a live instance or its migrations hold is repaired (the
rules' ``unsettled``), nor is the instance healed (heal), while the
instance has a task state, is ``resized``, has an event of its latest
instance action still running, or nova recorded a change to it, its
migrations or that action within the grace period.
"""

from nova_orphans.engine import nova_states
from nova_orphans.i18n import _


def why_unsettled(inst, nova):
    """Why nova may still be working on the live instance ``inst``, in
    words, or None if it is settled. ``nova``: the NovaSnapshot that
    holds its activity and the grace period's start (recent_since).
    """
    if inst.task_state is not None:
        return _('The instance has task_state %(task)s: nova is not done '
                 'with it.') % {'task': inst.task_state}
    if inst.vm_state == nova_states.RESIZED:
        return _('The instance is resized: its move is being confirmed or '
                 'awaits confirmation.')
    activity = nova.activity.get(inst.uuid)
    if activity is None:
        return None
    if activity.pending_event is not None:
        return _('nova has not finished %(event)s on the instance '
                 '(started %(since)s UTC).') % {
            'event': activity.pending_event,
            'since': timestamp(activity.pending_since)}
    if (nova.recent_since is not None and
            activity.changed_at is not None and
            activity.changed_at >= nova.recent_since):
        return _('nova changed the instance, one of its migrations or '
                 'its latest action at %(time)s UTC, within '
                 '[nova_orphans] grace_period of this run.') % {
            'time': timestamp(activity.changed_at)}
    return None


def timestamp(when):
    """A time of nova's (naive UTC) as the details write it, or ``?``."""
    return when.isoformat(sep=' ', timespec='seconds') if when else '?'
