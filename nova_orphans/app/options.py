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
"""Every command's options, declared once for both front ends.

An ``Option`` is one command-line option: its flags, type, help, the
``[nova_orphans]`` option that gives its default (``config``), its
bounds. A ``Command`` (app/commands.py) lists the options it takes. Each
front end turns them into its own parser: ``nova-orphans-manage``'s
argparse actions under oslo.config (metavars as written, ``UUID``),
``openstack``'s cliff parsers (metavars as osc writes them, ``<uuid>``).
Neither front end declares an option of its own but what its framework
already has (oslo.config's and osc's global options; cliff's ``-f``,
``-c`` (``COLUMN``, which nova-orphans-manage offers as cliff does) and
its formatters' options, which both get from the formatters).
"""

from nova_orphans.app import foreign
from nova_orphans.conf import orphans as orphans_conf
from nova_orphans.engine import reasons
from nova_orphans import exception
from nova_orphans.i18n import _

_DEFAULTS = {opt.dest: opt.default for opt in orphans_conf.ORPHANS_OPTS}


class Option:
    """One command-line option.

    ``config``: the ``[nova_orphans]`` option that gives the default
    (nova-orphans-manage reads it from nova.conf; openstack, which reads
    no configuration file, takes its default value); a given option
    overrides it, and adds to it for a list. ``minimum`` (the least
    value accepted) and ``validate(value, name, error)`` (raises
    ``error`` for a value it refuses) bound the value given and the
    configuration's alike (``check``).
    """

    def __init__(self, flags, help, dest=None, metavar=None, type=None,
                 action=None, choices=None, config=None, minimum=None,
                 required=False, default=None, validate=None):
        self.flags = tuple(flags)
        self.help = help
        self.dest = dest or self.flags[0].lstrip('-').replace('-', '_')
        self.metavar = metavar
        self.type = type
        self.action = action
        self.choices = choices
        self.config = config
        self.minimum = minimum
        self.required = required
        self.default = default
        self.validate = validate

    def but(self, **changes):
        """This option with other attributes (another help, another
        default): one option, worded for another command.
        """
        return Option(**dict(vars(self), **changes))

    @property
    def config_default(self):
        return _DEFAULTS.get(self.config) if self.config else None

    def full_help(self):
        """The help, and where its default comes from."""
        if not self.config:
            return self.help
        return self.help + ' ' + _(
            'Default: [nova_orphans] %(name)s (nova-orphans-manage: from '
            'its configuration; openstack: %(value)s).') % {
            'name': self.config,
            'value': _describe(self.config_default)}

    def argparse_kwargs(self, metavar_style):
        """add_argument's keyword arguments; ``metavar_style(metavar)``
        writes the metavar as the front end does.
        """
        kwargs = {'dest': self.dest, 'help': self.full_help()}
        if self.metavar:
            kwargs['metavar'] = metavar_style(self.metavar)
        for name in ('type', 'action', 'choices'):
            if getattr(self, name) is not None:
                kwargs[name] = getattr(self, name)
        if self.required:
            kwargs['required'] = True
        if self.action in ('store_true', 'store_false'):
            kwargs['default'] = self.default
        elif self.action == 'append':
            kwargs['default'] = None
        return kwargs

    def check(self, value, from_config=False):
        """Refuse a value out of bounds, naming where it came from: the
        command line (InvalidInput, naming the flag) or, with
        ``from_config``, the configuration (ConfigError, naming
        ``[nova_orphans] config``).
        """
        if from_config:
            name = '[nova_orphans] %s' % self.config
            error = exception.ConfigError
        else:
            name, error = self.flags[0], exception.InvalidInput
        if value is None:
            # An empty value in nova.conf (``grace_period =``) reads as
            # None: refused where the option has a default to take.
            if from_config and self.config_default is not None:
                raise error(reason=_('%(option)s has no value') % {
                    'option': name})
            return
        if self.minimum is not None and value < self.minimum:
            raise error(reason=(
                _('%(option)s must not be negative') if self.minimum == 0
                else _('%(option)s must be at least %(minimum)d')) % {
                'option': name, 'minimum': self.minimum})
        if self.validate is not None:
            self.validate(value, name, error)


def _describe(value):
    if isinstance(value, list):
        return ', '.join(value) or _('none')
    return str(value)


def resolve(options, given, config=None):
    """The values a command runs with, resolved once: ``given`` (dest:
    value from the command line, None where not given) with each
    option's default filled in from ``config`` ({[nova_orphans] option:
    value}: nova.conf's, for nova-orphans-manage; None: the options' own
    defaults, for openstack, which reads no configuration file).

    Every value is checked where it came from (Option.check), before
    anything is read: a refused value is the user's to fix, on the
    command line or in the configuration.
    """
    from_config = config is not None
    config = config if from_config else _DEFAULTS
    resolved = dict(given)
    for option in options:
        value = resolved.get(option.dest)
        option.check(value)
        if option.config:
            default = config.get(option.config)
            option.check(default, from_config=from_config)
            if option.action == 'append':
                value = list(default or []) + list(value or [])
            elif value is None:
                value = default
        resolved[option.dest] = value
    return resolved


def _project_ids(value, name, error):
    foreign.declared(projects=value, projects_option=name, error=error)


def _consumer_types(value, name, error):
    foreign.declared(consumer_types=value, types_option=name, error=error)


def metavar_upper(metavar):
    """nova-orphans-manage's metavars, as nova-manage writes them."""
    return metavar


def metavar_osc(metavar):
    """openstack's metavars, as osc writes them: ``<project-id>``."""
    return '<%s>' % metavar.lower().replace('_', '-')


JOURNAL_DIRECTORY_RULE = _(
    '[nova_orphans] state_path if set (nova-orphans-manage), else '
    '$XDG_STATE_HOME/nova-orphans if XDG_STATE_HOME is set, else '
    '/var/lib/nova-orphans if this user can write there or create it, else '
    '~/.local/state/nova-orphans')

# Scope --------------------------------------------------------------------

RESOURCE_PROVIDER = Option(
    ['--resource-provider'], metavar='UUID',
    help=_('Only allocations on this resource provider and its '
           'descendants.'))
HOST = Option(
    ['--host'], metavar='HOST',
    help=_('Only allocations on the provider trees of this compute host\'s '
           'nodes, deleted ones included.'))
REASON = Option(
    ['--reason'], metavar='REASON', action='append', dest='reasons',
    choices=reasons.REASONS,
    help=_('Only findings with this reason; repeatable. Choices: '
           '%(reasons)s.') % {'reasons': ', '.join(reasons.REASONS)})
GRACE_PERIOD = Option(
    ['--grace-period'], metavar='SECONDS', type=int, config='grace_period',
    minimum=0,
    help=_('Leave alone what a live server or its migrations hold if nova '
           'changed the server, a migration or its latest action less than '
           'this many seconds ago: nova may still be moving or deleting '
           'those allocations.'))
FOREIGN_PROJECT = Option(
    ['--foreign-project'], metavar='PROJECT_ID', action='append',
    dest='foreign_projects', config='foreign_projects',
    validate=_project_ids,
    help=_('A project whose consumers nova has no record of are another '
           'service\'s (unmanaged_consumer, never written); repeatable, '
           'added to the configured ones. Project ids only: names are not '
           'resolved.'))
FOREIGN_CONSUMER_TYPE = Option(
    ['--foreign-consumer-type'], metavar='TYPE', action='append',
    dest='foreign_consumer_types', config='foreign_consumer_types',
    validate=_consumer_types,
    help=_('A placement consumer type to call another service\'s, on top '
           'of every type nova does not write; repeatable, added to the '
           'configured ones.'))
PROJECT = Option(
    ['--project'], metavar='PROJECT_ID',
    help=_('Only the allocations of consumers of this project (its id), '
           'as placement records them: those counted in its quota usage.'))
USER = Option(
    ['--user'], metavar='USER_ID',
    help=_('Only the allocations of consumers of this user (its id).'))
ALL = Option(
    ['--all'], action='store_true', dest='show_all', default=False,
    help=_('Also list allocations that are fine, with action "none" and '
           'the reason they are fine.'))
GROUP_BY = Option(
    ['--group-by'], choices=('project', 'host'),
    help=_('One row per project or per compute host instead of one per '
           'allocation. project: its orphaned consumers, allocations and '
           'the resources they hold, which placement counts in its quota '
           'usage; the projects with most orphaned consumers first. host: '
           'what the orphans hold on the host\'s provider tree, what is '
           'free now and after a clean, and for each shape (--resource, '
           '--flavor) how many servers placement would accept now and after '
           'a clean; the hosts whose capacity orphans hold the largest share '
           'of first, only those with something held unless --all.'))
RESOURCE = Option(
    ['--resource'], metavar='RC=N', action='append', dest='resources',
    help=_('With --group-by host: a resource class and amount of one '
           'server, as "openstack allocation candidate list" takes them; '
           'repeatable, all of them one shape (VCPU=2 --resource '
           'MEMORY_MB=2048).'))
FLAVOR = Option(
    ['--flavor'], metavar='NAME', action='append', dest='flavors',
    help=_('With --group-by host: a flavor, by name, whose servers to count '
           'as nova asks placement for them; repeatable. With a metrics file '
           'or --format prometheus: also counted in the scan\'s metrics, '
           'beside [nova_orphans] capacity_flavors.'))

FULL_READ = Option(
    ['--full-read'], action='store_true', default=False,
    help=_('Read the allocations of every provider in scope from placement, '
           'as if no earlier scan had read any (see --full-read-interval); '
           '--all always does.'))
FULL_READ_INTERVAL = Option(
    ['--full-read-interval'], metavar='SECONDS', type=int, minimum=0,
    config='full_read_interval',
    help=_('Through placement\'s API, read every provider\'s allocations '
           'when the last full read is older than this; in between, read '
           'those of the providers whose generation moved, reuse what '
           'earlier scans read of the others, and read again every provider '
           'a reported finding rests on. An allocation removed by DELETE '
           '/allocations/{consumer} moves no generation: a live server '
           'whose allocations were deleted so is reported '
           'missing_allocations at most one full_read_interval late. 0: '
           'every scan reads everything.'))

# Repairs ------------------------------------------------------------------

DRY_RUN = Option(
    ['--dry-run'], action='store_true', default=False,
    help=_('Show what would be changed; change nothing.'))
JOURNAL = Option(
    ['--journal'], metavar='PATH',
    help=_('Journal file to append to (default: a new file in the journal '
           'directory: %(directory)s; mode 0600).') % {
        'directory': JOURNAL_DIRECTORY_RULE})
MAX_COUNT = Option(
    ['--max-count'], metavar='N', type=int, minimum=1,
    help=_('Change at most N consumers.'))
HEAL = Option(
    ['--heal'], action='store_true', default=False,
    help=_('Also create allocations for live instances that have none '
           '(missing_allocations), from their flavor. Through the compute '
           'API, servers with ports are left to "nova-manage placement '
           'heal_allocations".'))
RESTORE_JOURNAL = JOURNAL.but(
    required=True, help=_('The journal written by "clean".'))
RESTORE_DRY_RUN = DRY_RUN.but(
    help=_('Show what would be restored; change nothing.'))
JOURNAL_CLOUD = Option(
    ['--journal-cloud'], metavar='PLACEMENT_URL', action='append',
    dest='journal_clouds',
    help=_('Restore a journal whose runs recorded another cloud than the '
           'one reached now: this names the journal\'s cloud, by the '
           'placement endpoint its runs recorded, as the same cloud reached '
           'at another address (an internal and a public endpoint, a new '
           'name); repeatable. Without it, such a journal is refused, and '
           'the refusal names the value.'))

# The run ------------------------------------------------------------------

METRICS_FILE = Option(
    ['--metrics-file'], metavar='PATH',
    help=_('Also write the run\'s Prometheus metrics to this file, '
           'atomically (for node_exporter\'s textfile collector), incomplete '
           'runs included; a run that stops on an error leaves the file as '
           'it was.'))
METRICS_MAX_PROJECTS = Option(
    ['--metrics-max-projects'], metavar='N', type=int, minimum=1,
    config='metrics_max_projects',
    help=_('Projects with series of their own in '
           'nova_orphans_project_resources, those with most orphaned '
           'consumers; the others are summed under project_id="other".'))
METRICS_MAX_HOSTS = Option(
    ['--metrics-max-hosts'], metavar='N', type=int, minimum=1,
    config='metrics_max_hosts',
    help=_('Compute hosts with series of their own in '
           'nova_orphans_host_resources, those whose capacity orphans hold '
           'the largest share of; the others are summed under '
           'host="other".'))
RETRY_BUDGET = Option(
    ['--retry-budget'], metavar='SECONDS', type=int, minimum=0,
    config='retry_budget',
    help=_('Seconds a service may fail every request with transient faults '
           '(connection errors, timeouts, 429, 502, 503, 504) before the '
           'run stops retrying it; a write whose answer was lost is read '
           'back, and sent again only if it was not applied.'))
DEADLINE = Option(
    ['--deadline'], metavar='SECONDS', type=int, minimum=0,
    config='deadline',
    help=_('Seconds the run may last: once they have passed no request is '
           'sent (0: none).'))
# cliff's -c, which every openstack listing has.
COLUMN = Option(
    ['-c', '--column'], action='append', dest='columns', metavar='COLUMN',
    help=_('A column to show, repeatable: a JSON key, or a table\'s header '
           '(default: all of them).'))
LONG = Option(
    ['--long', '--verbose'], action='store_true', dest='long', default=False,
    help=_('Show every column in tables (other formats always have them '
           'all).'))


def progress(what):
    """--progress and --no-progress (None: neither given)."""
    return [
        Option(['--progress'], action='store_true', dest='progress',
               help=_('Report progress on stderr (%(what)s), also when '
                      'stderr is not a terminal or the output is not a '
                      'table. Default: on a terminal, for tables, once the '
                      'run has lasted a few seconds.') % {'what': what}),
        Option(['--no-progress'], action='store_false', dest='progress',
               help=_('Never report progress.')),
    ]


# Journals -----------------------------------------------------------------

JOURNAL_DIR = Option(
    ['--journal-dir'], metavar='DIR',
    help=_('The journal directory (default: where "clean" puts journals: '
           '%(directory)s).') % {'directory': JOURNAL_DIRECTORY_RULE})
CLOUD = Option(
    ['--cloud'], metavar='CLOUD',
    help=_('Only the runs against this cloud: its name in clouds.yaml or '
           'its auth URL (openstack), a configuration file '
           '(nova-orphans-manage), or the placement endpoint the run wrote '
           'to.'))
OLDER_THAN = Option(
    ['--older-than'], metavar='DAYS', type=int, minimum=1,
    config='journal_retention_days',
    help=_('Remove the journals nothing wrote to for DAYS days.'))
PRUNE_DRY_RUN = DRY_RUN.but(
    help=_('Show what would be removed; remove nothing.'))
