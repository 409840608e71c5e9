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


def chain(conf):
    """The rule chain for this configuration."""
    names = conf.nova_orphans.site_rules
    if not names:
        return rules.DEFAULT_RULES

    def missing(names):
        raise exception.ConfigError(
            reason=_('[nova_orphans] site_rules: no rule named %(names)s in '
                     'the %(namespace)s entry point namespace') %
            {'names': ', '.join(sorted(names)), 'namespace': NAMESPACE})

    manager = stevedore.NamedExtensionManager(
        NAMESPACE, names=names, name_order=True, invoke_on_load=True,
        invoke_args=(conf,), on_missing_entrypoints_callback=missing,
        propagate_map_exceptions=True)
    site = tuple(waiting_for_nova(ext.obj) for ext in manager)
    LOG.debug('Site rules: %s', names)
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
