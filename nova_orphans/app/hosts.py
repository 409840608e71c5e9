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
"""``allocations list --group-by host``: what orphans cost each compute
node (engine.hosts), and the capacity families of a scan's metrics.

A run's shapes are read and checked before the scan reads anything
(``Capacity.read``): the flavors named (--flavor, and for the metrics
``[nova_orphans] capacity_flavors``) from nova, placement's resource
classes for the classes they name; a flavor nova does not have, or a
class placement does not have, is one line and exit status 127. Once
the scan has read the cloud, ``Capacity.view`` reads the inventories of
the providers the view needs (engine.hosts.providers_to_read), and
which of them carry the traits the shapes name, each once a run.
"""

from nova_orphans.engine import hosts
from nova_orphans.engine import shapes as shapes_mod
from nova_orphans import exception
from nova_orphans.i18n import _


def check_options(group_by, resources, flavors, metrics):
    """Refuse --resource without --group-by host, and --flavor without
    it or the metrics that count it: they would change nothing.
    """
    if group_by == 'host':
        return
    if resources:
        raise exception.InvalidInput(reason=_(
            '--resource is a shape of the host view: it needs --group-by '
            'host'))
    if flavors and not metrics:
        raise exception.InvalidInput(reason=_(
            '--flavor is counted by the host view (--group-by host) or by '
            'the metrics (--metrics-file, --format prometheus): it needs '
            'one of them'))


def _unique(names):
    return list(dict.fromkeys(names))


class Capacity:
    """The host view's shapes (``shapes``: the --resource shape, then
    the --flavor ones) and the metrics' flavors (``flavors``), and what
    the run read for them.
    """

    def __init__(self, sources, shapes=(), flavors=()):
        self.sources = sources
        self.shapes = list(shapes)
        self.flavors = list(flavors)
        self._inventories = {}
        self._traits = {}
        self._traits_read = frozenset()

    @classmethod
    def read(cls, sources, resources=(), flavors=(), metric_flavors=()):
        """The run's Capacity: its flavors read, every shape's classes
        checked against placement's.
        """
        shapes = []
        if resources:
            shapes.append(shapes_mod.from_resources(resources))
        names = _unique(list(flavors or ()) + list(metric_flavors or ()))
        by_name = {}
        if names:
            found = sources.nova().flavors(names)
            unknown = [n for n in names if n not in found]
            if unknown:
                raise exception.InvalidInput(reason=_(
                    'nova has no flavor %(names)s') % {
                    'names': ', '.join(unknown)})
            by_name = {n: shapes_mod.from_flavor(found[n]) for n in names}
        shapes += [by_name[n] for n in _unique(flavors or ())]
        metered = [by_name[n] for n in _unique(metric_flavors or ())]
        if shapes or metered:
            shapes_mod.check_classes(
                shapes + metered,
                sources.placement_reader().resource_classes())
        return cls(sources, shapes, metered)

    def view(self, snapshot, findings, shapes, every=False):
        """The engine.hosts.HostView of ``snapshot`` and ``findings`` for
        ``shapes``: with ``every``, the inventories of every compute
        node's tree are read (the rows of all nodes, whole totals).
        """
        reader = self.sources.placement_reader()
        wanted = hosts.providers_to_read(snapshot, findings, every)
        missing = wanted - self._inventories.keys()
        if missing:
            self._inventories.update(reader.inventories(missing))
        traits = frozenset().union(*(s.required | s.forbidden
                                     for s in shapes))
        if traits - self._traits_read:
            self._traits_read |= traits
            self._traits = reader.traits(self._traits_read)
        return hosts.host_view(snapshot, findings, self._inventories,
                               shapes, self._traits)

    def rows(self, view, every=False):
        """(keys, dicts) of the rows a listing shows (HOST_KEYS)."""
        return hosts.HOST_KEYS, [r.to_dict() for r in view.shown(every)]
