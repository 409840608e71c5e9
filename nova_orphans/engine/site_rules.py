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
"""Site rules: classification rules a deployment adds without forking.

A site rule is registered in the ``nova_orphans.rules`` entry point
namespace as a factory ``factory(conf) -> rule``, where ``rule(ctx)``
returns a :class:`~nova_orphans.engine.rules.Verdict` or ``None`` like
the built-in rules, and is enabled by naming it in ``[nova_orphans]
site_rules``. Site rules run after the rules that protect unreadable
cells and other services' providers and consumers, and before every
other rule, so
they can keep an allocation out of the orphans (or call one an orphan)
but can never make nova-orphans write where it cannot verify, nor
repair what a live instance holds while nova is still working on it
(an orphan verdict of a site rule still gives way to rules.unsettled).
"""

from oslo_log import log as logging
import stevedore

from nova_orphans.engine import reasons
from nova_orphans.engine import rules
from nova_orphans import exception
from nova_orphans.i18n import _

LOG = logging.getLogger(__name__)

NAMESPACE = 'nova_orphans.rules'
# Built-in rules no site rule may come before.
PROTECTIVE = (rules.unverifiable, rules.unmanaged_provider,
              rules.unmanaged_consumer)
IGNORED = 'ignored'
# The in-tree rule for Zun's containers, by its entry point name.
ZUN = 'zun'


def chain(conf, zun=False):
    """The rule chain for this configuration and these sources.

    ``conf``: the configuration whose ``[nova_orphans] site_rules`` are
    loaded, None for a front end without one (``openstack``).
    ``zun``: the run's sources read Zun (app.sources.Sources.zun: Zun's
    database set in nova.conf, or Zun's API in osc's catalog), which
    turns the in-tree ``zun`` rule on even where ``site_rules`` does not
    name it (after the rules it names): Zun then shares the compute
    nodes, and without the rule every container's allocation there
    would be an orphan to delete.
    """
    names = list(conf.nova_orphans.site_rules) if conf is not None else []
    implied = zun and ZUN not in names
    if not names and not implied:
        return rules.DEFAULT_RULES

    def missing(names):
        raise exception.ConfigError(
            reason=_('[nova_orphans] site_rules: no rule named %(names)s in '
                     'the %(namespace)s entry point namespace') %
            {'names': ', '.join(sorted(names)), 'namespace': NAMESPACE})

    def failed(manager, entry_point, error):
        # stevedore's default logs the error and leaves the rule out: the
        # run would go on without what the site asked to protect.
        if isinstance(error, exception.NovaOrphansException):
            raise error
        raise exception.ConfigError(
            reason=_('[nova_orphans] site_rules: rule %(name)s could not be '
                     'loaded: %(error)s') %
            {'name': entry_point.name, 'error': error})

    site = ()
    if names:
        manager = stevedore.NamedExtensionManager(
            NAMESPACE, names=names, name_order=True, invoke_on_load=True,
            invoke_args=(conf,), on_missing_entrypoints_callback=missing,
            on_load_failure_callback=failed,
            propagate_map_exceptions=True)
        site = tuple(waiting_for_nova(ext.obj) for ext in manager)
    if implied:
        # In tree: no entry point to look up.
        site += (waiting_for_nova(zun_containers),)
    LOG.debug('Site rules: %s', names + ([ZUN] if implied else []))
    rest = tuple(r for r in rules.DEFAULT_RULES if r not in PROTECTIVE)
    return PROTECTIVE + site + rest


def waiting_for_nova(rule):
    """The site rule, whose orphans wait while nova works on their
    instance as the built-in rules' do (see rules.unsettled).
    """
    def guarded(ctx):
        verdict = rule(ctx)
        if verdict is not None and verdict.is_orphan:
            return rules.unsettled(ctx) or verdict
        return verdict
    guarded.__name__ = getattr(rule, '__name__', 'site_rule')
    return guarded


def ignore_consumers(conf):
    """Example site rule: leave the listed consumers alone.

    For consumers placement holds on behalf of a tool nova does not know
    (``[nova_orphans] ignored_consumers``): they are listed with reason
    ``ignored`` and action ``none``, and never written.
    """
    ignored = frozenset(conf.nova_orphans.ignored_consumers)

    def ignore(ctx):
        if ctx.allocation.consumer in ignored:
            return rules.Verdict(IGNORED, reasons.NONE,
                                 _('Listed in [nova_orphans] '
                                   'ignored_consumers.'))
        return None
    return ignore


def zun(conf):
    """In-tree site rule: what Zun's containers hold is Zun's.

    Zun with ``host_shared_with_nova`` allocates on nova's compute node
    providers under each container's (or capsule's) uuid, with the
    user's project and no consumer type: nova has no trace of such a
    consumer, and without this rule it is ``unknown_consumer``. The
    rule judges only those consumers, by what Zun says of them
    (``ctx.index.snapshot.nova.zun``, which the audit and each repair's
    fresh read fill: readers/zun_db.py, readers/zun_api.py):

    - Zun has a container or capsule of that uuid (a row of its
      ``container`` table): ``unmanaged_consumer``, never written;
    - Zun could not be read, or was not read for this consumer:
      ``unverifiable`` (it may be Zun's);
    - Zun has no row: the next rules judge it (``unknown_consumer``).
      Zun deletes a row only after its allocations, so a container
      Zun deleted leaves nothing it will free.

    The entry point's factory: needs ``[zun_database] connection``;
    setting it turns the rule on (see chain), as Zun's API in osc's
    service catalog does for openstack (app/api_sources.py).
    """
    if not conf.zun_database.connection:
        raise exception.ConfigError(
            reason=_('[nova_orphans] site_rules: the %(rule)s rule needs '
                     '[zun_database] connection') % {'rule': ZUN})
    return zun_containers


def zun_containers(ctx):
    """The zun rule itself (see zun): the same for both front ends,
    whichever reader filled ``ctx.index.snapshot.nova.zun``.
    """
    if not ctx.owner.untraced:
        return None
    consumer = ctx.allocation.consumer
    read = ctx.index.snapshot.nova.zun
    if read is None or consumer not in read.asked:
        return rules.Verdict(
            reasons.UNVERIFIABLE, reasons.NONE,
            _('nova has no trace of this consumer, and Zun was not read '
              'for it: it may be a Zun container\'s.'))
    if read.error is not None:
        return rules.Verdict(
            reasons.UNVERIFIABLE, reasons.NONE,
            _('nova has no trace of this consumer, and %(database)s, '
              'which may hold it as a container, could not be read: '
              '%(error)s.') % {'database': read.label,
                               'error': read.error})
    container = read.containers.get(consumer)
    if container is None:
        return None
    return rules.Verdict(
        reasons.UNMANAGED_CONSUMER, reasons.NONE,
        _('Zun %(kind)s %(uuid)s (status %(status)s, host %(host)s) '
          'holds this allocation.') % {
            'kind': container.kind, 'uuid': container.uuid,
            'status': container.status, 'host': container.host})
