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
"""What orphaned allocations hold, per project.

nova counts a project's cores and RAM from placement's usages when
``[quota] count_usage_from_placement`` is set, and only there with
unified limits: placement sums every allocation of the project's
consumers, orphans included. These totals say which projects pay for
orphans, and how much.
"""

import collections
import typing

from nova_orphans.engine import model
from nova_orphans.engine import reasons

# The exact keys of a project's totals (``list --group-by project``), in
# output order: a contract, as model.FINDING_KEYS.
PROJECT_KEYS = ('project_id', 'consumers', 'allocations', 'resources')


@model.record
class ProjectTotal:
    """A project's orphans: how many consumers, how many allocations
    (one consumer on one provider), and the resources they hold;
    ``project_id`` None for consumers whose project is not known.
    """

    project_id: typing.Optional[str]
    consumers: int
    allocations: int
    resources: typing.Dict[str, int]

    def to_dict(self):
        return {key: getattr(self, key) for key in PROJECT_KEYS}


def charged(action):
    """Whether an allocation with this repair action is an orphan that
    holds resources: a live instance missing its allocations
    (``heal``) holds none, and what is fine (``none``) is no orphan.
    """
    return action not in (reasons.NONE, reasons.HEAL)


def totals(held):
    """[ProjectTotal] of ``held``, (project, consumer, resources) of
    each orphaned allocation; most consumers first, then most
    allocations, then by project id (an unknown project last among
    equals).
    """
    consumers = collections.defaultdict(set)
    allocations = collections.Counter()
    resources = collections.defaultdict(collections.Counter)
    for project, consumer, amounts in held:
        consumers[project].add(consumer)
        allocations[project] += 1
        resources[project].update(amounts)
    result = [ProjectTotal(project, len(consumers[project]),
                           allocations[project], dict(resources[project]))
              for project in consumers]
    result.sort(key=lambda t: (-t.consumers, -t.allocations,
                               t.project_id is None, t.project_id or ''))
    return result
