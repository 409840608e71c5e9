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
"""Every command of both front ends, once: its options, its help, the
exit codes it can end with, and what it does, as a report.

``nova-orphans-manage CATEGORY ACTION`` and ``openstack WORDS`` are the
same ``Command``: a front end parses the command's options
(app/options.py), resolves them once (``options.resolve``: with
nova.conf's defaults, or the options' own) into the run's values, calls
``run(command, values, context)`` and renders the ``report.Report`` it
gets back. It decides nothing a user reads but the layout its framework
gives (cliff's formats, oslo.config's options) and how it writes a
command line.
"""

import functools
import textwrap
import time

from oslo_log import log as logging

from nova_orphans.app import allocations
from nova_orphans.app import hosts
from nova_orphans.app import journals
from nova_orphans.app import options as opts
from nova_orphans.app import providers
from nova_orphans.app import report as report_mod
from nova_orphans.app.report import CommandLine
from nova_orphans.app.report import Line
from nova_orphans.app import sentences
from nova_orphans.app import sources
from nova_orphans import exit_codes
from nova_orphans.i18n import _
from nova_orphans import interrupt
from nova_orphans import outcomes
from nova_orphans import output
from nova_orphans.repair import actions
from nova_orphans.repair import journal as journal_mod

LOG = logging.getLogger(__name__)
# Where a summary line names the command to run next (see _summary).
NEXT = '\0'
# The run's first words, at once, while the writes in flight finish.
STOPPING = _('%(signal)s: stopping; the requests in flight finish, then '
             'what was done is printed.')

UNREADABLE = {
    'allocations': _('WARNING: cell %(cell)s could not be read (%(error)s); '
                     'its consumers are reported as unverifiable, never as '
                     'orphans.'),
    'providers': _('WARNING: cell %(cell)s could not be read (%(error)s); a '
                   'tree nova may still have live there is reported as '
                   'unverifiable, never as an orphan.'),
}


class Context:
    """What a front end lends a run.

    ``sources()`` makes the run's app.sources.Sources (of the run's
    values), on first use (a journal listing reads no cloud);
    ``warn(line)`` says a line on stderr at once; ``progress`` is the
    run's Progress or None; ``notice`` what a signal prints at once once
    the writes began (None: stderr is not the process's own);
    ``state_path`` [nova_orphans] state_path.
    """

    def __init__(self, sources, stop, warn, progress=None, notice=None,
                 state_path=None):
        self._make_sources = sources
        self._sources = None
        self.stop = stop
        self.warn = warn
        self.progress = progress
        self.notice = notice
        self.state_path = state_path
        self.warnings = []
        # The command being run (see run), for the log.
        self.command = None

    def sources(self):
        if self._sources is None:
            self._sources = self._make_sources()
            if LOG.isEnabledFor(logging.DEBUG):
                LOG.debug('%(command)s reads %(sources)s', {
                    'command': self.command and self.command.name,
                    'sources': self._sources.describe()})
        return self._sources

    @property
    def retries(self):
        return self._sources.retries if self._sources is not None else None

    def say(self, line):
        self.warnings.append(line)
        self.warn(line)

    def unreadable(self, listing, category):
        """Each cell not read, and anything else, before any row: no
        output can look complete.
        """
        for cell in listing.unreadable_cells:
            self.say(UNREADABLE[category] % {'cell': cell.label,
                                             'error': cell.error})
        for line in sentences.unread_lines(listing.unread,
                                           listing.unreadable_services):
            self.say(line)

    def close(self):
        if self._sources is not None:
            self._sources.close()


class Command:
    """One command: ``category`` and ``action`` (nova-orphans-manage's
    words), ``osc`` (openstack's), its help, ``codes`` (the exit codes
    it can end with, all of them), ``options``, ``formats`` beyond
    output.FORMATS, and ``run(values, context)``, its Report.
    ``requests``: it asks the cloud (a journal command does not).
    """

    def __init__(self, category, action, osc, help, description, codes,
                 options, run, formats=(), restoring=False, requests=True,
                 progress=None):
        self.category = category
        self.action = action
        self.osc = osc
        self.help = help
        self.description = description
        self.codes = codes
        self.options = list(options)
        if progress:
            self.options += opts.progress(progress)
        self.options.append(opts.LONG)
        self._run = run
        self.formats = formats
        self.restoring = restoring
        self.requests = requests

    @property
    def name(self):
        return '%s %s' % (self.category, self.action)

    def epilog(self, bullets=False):
        """The "Return codes:" block of its --help."""
        return exit_codes.help_text(
            self.codes, restoring=self.restoring, bullets=bullets,
            listing=self.action == 'list', pruning=self.action == 'prune')

    def describe(self):
        """Its description, paragraphs filled."""
        return '\n\n'.join(textwrap.fill(' '.join(p.split()), 76)
                           for p in self.description.split('\n\n'))


def run(command, values, context):
    """The Report of ``command`` run with ``values``, the run's option
    values (options.resolve's: bad input was refused before anything is
    read).
    """
    context.command = command
    started = time.monotonic()
    report = command._run(command, values, context)
    line = sentences.retries_line(context.retries)
    if line:
        report.notes.append(Line(line))
    report.warnings = context.warnings
    _log_requests(context.retries)
    LOG.debug('%(command)s: %(rows)d row(s), exit code %(code)d, in '
              '%(seconds).3f s', {
                  'command': command.name, 'rows': len(report.rows),
                  'code': report.exit_code,
                  'seconds': time.monotonic() - started})
    return report


def _log_requests(retries):
    """At debug level, the requests the run sent to each service and
    the seconds they took, summed (several at once count each).
    """
    if retries is None:
        return
    for service in sorted(retries.sent):
        LOG.debug('%(service)s: %(count)d request(s), %(seconds).3f s in '
                  'all', {'service': service,
                          'count': retries.sent[service],
                          'seconds': retries.seconds[service]})


# The runs -----------------------------------------------------------------


def _scope(values, show_all=False):
    return allocations.Scope(
        values.get('resource_provider'), values.get('host'),
        values.get('reasons'), show_all, project=values.get('project'),
        user=values.get('user'), full_read=values.get('full_read'))


def _metrics(values):
    if values.get('metrics_file') or values.get('format') == 'prometheus':
        return allocations.Metrics(
            values.get('metrics_file'),
            sources.value(values, opts.METRICS_MAX_PROJECTS),
            sources.value(values, opts.METRICS_MAX_HOSTS))
    return None


def _filters(values):
    """The scope's options, for the command printed as "Next:"."""
    argv = []
    for option in (opts.RESOURCE_PROVIDER, opts.HOST):
        if values.get(option.dest):
            argv += [option.flags[0], values[option.dest]]
    for reason in values.get('reasons') or ():
        argv += ['--reason', reason]
    for option in (opts.PROJECT, opts.USER):
        if values.get(option.dest) is not None:
            argv += [option.flags[0], values[option.dest]]
    return argv


def _summary(command, values, listing, summarize):
    """The lines that close a listing's table (``summarize``'s), made
    when a table is printed; its "Next:" line names the clean to run as
    a CommandLine, which each front end writes as its users type it.
    """
    def summary():
        rows = output.rows_as_dicts(listing.rows)
        # A stand-in for the command in the line that names it.
        lines = summarize(rows, [c.label for c in listing.unreadable_cells],
                          NEXT)
        return [Line(line.replace('%', '%%').replace(NEXT, '%(command)s'),
                     CommandLine(command.category, 'clean', '--dry-run',
                                 *_filters(values)))
                if NEXT in line else line for line in lines]
    return summary


def _list_allocations(command, values, context):
    metrics = _metrics(values)
    prometheus = values.get('format') == 'prometheus'
    group_by = values.get('group_by')
    by_host = group_by == 'host'
    hosts.check_options(group_by, values.get('resources'),
                        values.get('flavors'), metrics is not None)
    run_sources = context.sources()
    capacity = None
    if by_host or metrics is not None:
        # Before the scan reads: an unknown flavor or class is refused.
        capacity = hosts.Capacity.read(
            run_sources, values.get('resources'), values.get('flavors'),
            (list(run_sources.capacity_flavors) +
             list(values.get('flavors') or ())) if metrics else ())
    if metrics is not None:
        metrics.capacity = capacity
    every = values.get('show_all')
    scope = _scope(values, every and not by_host)
    if by_host or (metrics is not None and capacity.flavors):
        # What is free on each host, and what fits, rests on every
        # allocation there: no kept read may stand in for one.
        scope.full_read = True
    listing = allocations.list_allocations(
        run_sources, scope, context.progress, metrics=metrics,
        rows=not prometheus)
    context.unreadable(listing, command.category)
    if prometheus:
        return report_mod.Report(listing.exit_code, metrics=metrics.text)
    if by_host:
        view = capacity.view(listing.snapshot, listing.rows,
                             capacity.shapes, every=every)
        keys, dicts = capacity.rows(view, every)
        return report_mod.Report(
            listing.exit_code, rows=dicts, keys=keys, findings=False,
            summary=_summary(command, values, listing, functools.partial(
                _host_summary, view)))
    summary = _summary(command, values, listing, sentences.list_summary)
    if group_by:
        keys, dicts = output.project_records(allocations.projects(listing))
        return report_mod.Report(listing.exit_code, rows=dicts, keys=keys,
                                 findings=False, summary=summary)
    return report_mod.Report(listing.exit_code, rows=listing.rows,
                             summary=summary)


def _host_summary(view, rows, unreadable_cells, next_command):
    """The lines that close a host view's table: what a clean gives
    back, the servers of each shape it makes room for, and the clean.
    """
    return sentences.host_summary(
        view.summary(), len([r for r in view.rows if r.held]),
        unreadable_cells, next_command if rows else None)


def _list_providers(command, values, context):
    listing = providers.list_providers(
        context.sources(), _scope(values, values.get('show_all')),
        context.progress)
    context.unreadable(listing, command.category)
    return report_mod.Report(
        listing.exit_code, rows=listing.rows, summary=_summary(
            command, values, listing, sentences.provider_list_summary))


def _clean(command, values, context):
    metrics = _metrics(values)
    scope, options = _scope(values), actions.RepairOptions(
        dry_run=values.get('dry_run'), journal=values.get('journal'),
        max_count=values.get('max_count'), heal=values.get('heal'),
        notice=context.notice)
    sources, stop, progress = (context.sources(), context.stop,
                               context.progress)
    if command.category == 'providers':
        listing = providers.read_for_clean(sources, scope, options, progress)
        # Before the first write: no output can look complete.
        context.unreadable(listing, command.category)
        return _repaired(providers.clean(sources, listing, options, stop,
                                         progress), _('deletion(s)'),
                         _('No orphaned resource providers found.'))
    listing = allocations.read_for_clean(sources, scope, options, progress,
                                         metrics)
    context.unreadable(listing, command.category)
    return _repaired(allocations.clean(sources, listing, options, stop,
                                       progress, metrics), _('repair(s)'),
                     _('No orphaned allocations found.'), metrics)


def _restore(command, values, context):
    metrics = _metrics(values)
    result = allocations.restore(
        context.sources(), values['journal'], context.stop,
        dry_run=values.get('dry_run'), progress=context.progress,
        warn=context.say, notice=context.notice, metrics=metrics,
        journal_clouds=values.get('journal_clouds') or ())
    report = _repaired(result, _('restore(s)'),
                       _('The journal holds no change to restore.'), metrics)
    # After the rows: what was restored, then why it may not be all.
    report.notes += report_mod.lines(result.unproven)
    if result.signum is not None and result.not_attempted:
        report.notes.append(Line(
            _('To restore the rest: %(command)s'),
            CommandLine(command.category, 'restore', '--journal',
                        values['journal'])))
    return report


def _repaired(result, what, nothing, metrics=None):
    """A clean's or restore's report: its rows with their outcomes
    (a failure that every row shares numbered, said once), the lines
    that close its table, and on stderr what failed, its journal and
    what a signal stopped.
    """
    shown, causes = sentences.group_failures(result.outcomes)

    def summary():
        lines = []
        if result.allocation_outcomes:
            lines.append(sentences.repairs_line(result.allocation_outcomes))
        lines.append(sentences.outcome_summary(result.outcomes)
                     if result.outcomes else nothing)
        return lines

    notes = []
    if result.conflicts:
        notes.append(sentences.other_writers_note(result.conflicts))
    notes += sentences.failure_lines(causes)
    if result.journal_path is not None:
        notes.append(_('Journal: %(path)s') % {'path': result.journal_path})
        if result.unended:
            notes.append(_(
                'WARNING: its end record could not be written (%(error)s): '
                'its entries are all there, but "restore" will say it '
                'cannot prove it is whole.') % {'error': result.unended})
        # restore is an "allocations" action whichever category ran;
        # nothing to undo when every write was refused.
        if outcomes.may_have_changed(
                list(result.outcomes) + result.allocation_outcomes):
            notes.append(Line(_('To undo: %(command)s'), CommandLine(
                'allocations', 'restore', '--journal', result.journal_path)))
    if result.signum is not None:
        notes.append(_('Interrupted by %(signal)s: %(done)d %(what)s done; '
                       '%(left)d not attempted (skipped: interrupted).') % {
            'signal': interrupt.signal_name(result.signum),
            'done': result.done, 'left': result.not_attempted,
            'what': what})
    return report_mod.Report(
        result.exit_code, rows=result.rows, outcomes=shown, summary=summary,
        notes=notes, metrics=metrics.text if metrics else None)


def _journal_dir(values, context):
    return values.get('journal_dir') or journal_mod.default_directory(
        context.state_path)


def _list_journals(command, values, context):
    directory = _journal_dir(values, context)
    cloud = values.get('cloud')
    every = journals.list_runs(directory, warn=context.say)
    rows = [r.to_dict() for r in every
            if not cloud or journals.of_cloud(r, cloud)]
    # A table names each journal by its file (output.cell): the
    # directory is said once, under it.
    if rows:
        summary = _('%(runs)d run(s) in %(journals)d journal(s) in '
                    '%(dir)s.') % {
            'runs': len(rows), 'dir': directory,
            'journals': len({r['journal'] for r in rows})}
    elif every:
        summary = _('No run against cloud %(cloud)s in %(dir)s; its '
                    '%(count)d run(s) are against: %(clouds)s.') % {
            'cloud': cloud, 'dir': directory, 'count': len(every),
            'clouds': ', '.join(sorted({r.cloud or r.placement or '-'
                                        for r in every}))}
    else:
        summary = _('No journal in %(dir)s.') % {'dir': directory}
    return report_mod.Report(
        exit_codes.SUCCESS, rows=rows, keys=journals.JournalRun.KEYS,
        findings=False, summary=[summary])


def _prune_journals(command, values, context):
    days = values['older_than']
    directory = _journal_dir(values, context)
    rows = journals.prune(directory, days, dry_run=values.get('dry_run'))
    summary = [_('No journal older than %(days)d day(s).') % {'days': days}]
    if rows:
        summary = [_('Journals in %(dir)s.') % {'dir': directory},
                   sentences.outcome_summary([r.outcome for r in rows])]
    return report_mod.Report(
        journals.prune_exit_code(rows), rows=[r.to_dict() for r in rows],
        keys=journals.Pruned.KEYS, findings=False,
        outcomes=[r.outcome for r in rows], summary=summary)


# The commands -------------------------------------------------------------

_RUN = [opts.RETRY_BUDGET, opts.DEADLINE]
# How a list reads placement through its API (readers/kept_reads.py).
_KEPT = [opts.FULL_READ, opts.FULL_READ_INTERVAL]
_FOREIGN = [opts.GRACE_PERIOD, opts.FOREIGN_PROJECT,
            opts.FOREIGN_CONSUMER_TYPE]
_ALLOCATIONS_SCOPE = [opts.RESOURCE_PROVIDER, opts.HOST, opts.REASON,
                      opts.PROJECT, opts.USER] + _FOREIGN
_PROVIDERS_SCOPE = [
    opts.RESOURCE_PROVIDER.but(help=_(
        'Only the provider tree holding this resource provider.')),
    opts.HOST.but(help=_('Only the provider trees of this compute host\'s '
                         'nodes, deleted ones included.'))] + _FOREIGN
_PROVIDERS_ALL = opts.ALL.but(help=_(
    'Also list providers that are fine, with action "none" and the reason '
    'they are fine.'))
_READ = _('providers read, consumers checked')
_REPAIRED = _('providers read, consumers checked, consumers repaired')
_RESTORED = _('journal entries restored')
_RESTORE_HELP = _(
    'A deleted provider is re-created (parents first) before the '
    'allocations that were on it, and refused if a provider with its uuid '
    'or name exists again. A consumer that changed since the repair is '
    'refused and reported, never overwritten; the others are still '
    'restored.\n\nThe whole journal is verified before the first write, '
    'dry runs too: a line altered, missing, added, moved or glued to '
    'another, an empty file, or a journal of another cloud than the one '
    'reached now (see --journal-cloud) is refused, and nothing is '
    'written. A journal whose run has no end record (it was killed, or '
    'the file was cut short) is restored as far as it verifies, and ends '
    '11.')

COMMANDS = [
    Command(
        'allocations', 'list', 'allocation orphan list',
        _('List orphaned allocations with their reason and repair action.'),
        _('Reads nova (its API and cell databases, or its compute API: '
          'hypervisors, services, servers, deleted ones too, and '
          'migrations), neutron where a server\'s info cache lists no port, '
          'Zun where a site rule asks, and placement; changes nothing. Each '
          'row is one consumer\'s allocation on one resource provider, '
          'with the reason it is an orphan and the action "clean" would '
          'take.\n\nA table ends with what the orphans hold, the projects '
          'they cost most and the command to run next. --group-by host '
          'shows instead, per compute host, what the orphans hold on its '
          'provider tree, what is free now and after a clean and how many '
          'servers of each --resource or --flavor shape placement would '
          'accept now and after it. --format prometheus '
          'writes node_exporter textfile-collector metrics of every reason '
          'and project instead, ignoring --reason, --all, --project and '
          '--user.'),
        exit_codes.LIST_CODES,
        _ALLOCATIONS_SCOPE + [opts.ALL.but(help=_(
            'Also list allocations that are fine, with action "none" and '
            'the reason they are fine; with --group-by host, every compute '
            'host.')), opts.GROUP_BY, opts.RESOURCE, opts.FLAVOR,
            opts.METRICS_FILE, opts.METRICS_MAX_PROJECTS,
            opts.METRICS_MAX_HOSTS] + _KEPT + _RUN,
        _list_allocations, formats=('prometheus',), progress=_READ),
    Command(
        'allocations', 'clean', 'allocation orphan clean',
        _('Repair orphaned allocations, journaled and generation-checked.'),
        _('Each consumer is read again from nova and placement right before '
          'its write and repaired only if it is still an orphan with the '
          'same action; the write carries the consumer generation just '
          'read. The journal, written before every change, lets "restore" '
          'undo the run. Repairs that fail are reported in the outcome '
          'column after the others are done.'),
        exit_codes.CLEAN_CODES,
        _ALLOCATIONS_SCOPE + [opts.DRY_RUN, opts.JOURNAL, opts.MAX_COUNT,
                              opts.HEAL, opts.METRICS_FILE] + _RUN,
        _clean, formats=('prometheus',), progress=_REPAIRED),
    Command(
        'allocations', 'restore', 'allocation orphan restore',
        _('Put back what a "clean" run changed, newest change first.'),
        _('Journals of "allocations clean" and "providers clean" alike. '
          '%(restore)s') % {'restore': _RESTORE_HELP},
        exit_codes.RESTORE_CODES,
        [opts.RESTORE_JOURNAL, opts.RESTORE_DRY_RUN, opts.JOURNAL_CLOUD,
         opts.METRICS_FILE] + _RUN, _restore, formats=('prometheus',),
        restoring=True, progress=_RESTORED),
    Command(
        'providers', 'list', 'resource provider orphan list',
        _('List resource provider trees of compute nodes nova deleted.'),
        _('One row per provider, children included, with the reason and the '
          'action "clean" would take; changes nothing. Through the compute '
          'API a tree is called deleted only when its root carries nova\'s '
          'mark (OWNER_NOVA or COMPUTE_NODE) and no hypervisor has its '
          'uuid, every cell answering.'),
        exit_codes.LIST_CODES,
        _PROVIDERS_SCOPE + [_PROVIDERS_ALL] + _KEPT + _RUN, _list_providers,
        progress=_READ),
    Command(
        'providers', 'clean', 'resource provider orphan clean',
        _('Delete the provider trees of compute nodes nova deleted.'),
        _('For each such tree: its orphaned allocations are repaired first '
          '(re-verified, generation-checked, journaled, as "allocations '
          'clean" does); a tree that still holds any other allocation is '
          'skipped, naming the consumers that hold it; otherwise it is '
          'deleted children first, each provider\'s full record '
          '(inventories, traits, aggregates) journaled before its DELETE, '
          'so that "restore" can re-create it.'),
        exit_codes.CLEAN_CODES,
        _PROVIDERS_SCOPE + [
            opts.DRY_RUN, opts.JOURNAL, opts.MAX_COUNT.but(
                help=_('Delete at most N provider trees.'))] + _RUN,
        _clean, progress=_REPAIRED),
    Command(
        'providers', 'restore', 'resource provider orphan restore',
        _('Re-create what a "providers clean" run deleted, parents first, '
          'then the allocations that were on the trees.'),
        _('The same journal replay as "allocations restore", which undoes '
          'the journal of either category. %(restore)s') % {
            'restore': _RESTORE_HELP},
        exit_codes.RESTORE_CODES,
        [opts.RESTORE_JOURNAL.but(help=_(
            'The journal written by "providers clean".')),
         opts.RESTORE_DRY_RUN, opts.JOURNAL_CLOUD] + _RUN,
        _restore, restoring=True, progress=_RESTORED),
    Command(
        'journals', 'list', 'allocation orphan journal list',
        _('List the runs the repair journals hold, oldest first.'),
        _('One row per clean run: its journal, run id, the cloud it ran '
          'against (openstack: the cloud\'s name; nova-orphans-manage: its '
          'configuration files) and the placement it wrote to, host, when '
          'it started, how it ended ("no end record": killed, or the file '
          'cut short), its entries, how many placement refused (never '
          'applied), and when a restore of the journal last ended after '
          'it, into which placement and by which front end. Reads only the '
          'journal directory: no cloud, no credentials. Changes nothing.'),
        exit_codes.JOURNAL_LIST_CODES, [opts.JOURNAL_DIR, opts.CLOUD],
        _list_journals, requests=False),
    Command(
        'journals', 'prune', 'allocation orphan journal prune',
        _('Remove old journals from the journal directory.'),
        _('Only the journals "clean" named there (journal-TIME-PID.jsonl) '
          'whose last change is older than the retention; a journal is '
          'what "restore" needs, so keep them as long as a repair may have '
          'to be undone.'),
        exit_codes.JOURNAL_PRUNE_CODES,
        [opts.JOURNAL_DIR, opts.OLDER_THAN, opts.PRUNE_DRY_RUN],
        _prune_journals, requests=False),
]

# nova-orphans-manage's own help: its global options are oslo.config's
# and oslo.log's, and its journal option is not oslo.log's --use-journal.
DESCRIPTION = _(
    'Find and repair placement allocations that no live nova object owns, '
    'reading nova\'s configuration (--config-file, by default '
    '/etc/nova/nova.conf) on a controller: "allocations list" reports '
    'them, "allocations clean" repairs them, journaled and '
    'generation-checked, and "allocations restore" undoes a clean. '
    '"providers list" and "providers clean" do the same for the resource '
    'provider trees of compute nodes nova deleted. '
    '"nova-orphans-manage CATEGORY ACTION --help" shows an action\'s '
    'options and return codes.')

LOGGING_HELP = _(
    'Log records (the libraries\' database and HTTP retries, the '
    'command\'s own) go to --log-file or --log-dir, to journald with '
    '--use-journal, to syslog with --use-syslog, and to stderr only with '
    '--debug: without it a failure is one line on stderr. --use-journal '
    'is about logging; the repair journal that "restore" reads is the '
    '--journal PATH option of "allocations clean" and "allocations '
    'restore" (and of "providers clean").')

JOURNAL_HELP = _(
    '--journal PATH is the repair journal: the file where every change is '
    'recorded before it is made, so that "restore" can undo it. It is not '
    'oslo.log\'s --use-journal (given before the category), which sends '
    'log records to journald.')

CATEGORIES = {
    'allocations': _('Placement allocations that no live nova object owns.'),
    'providers': _('Resource provider trees of compute nodes nova deleted.'),
    'journals': _('The repair journals "clean" leaves in the journal '
                  'directory.'),
}

BY_NAME = {(c.category, c.action): c for c in COMMANDS}


def find(category, action):
    return BY_NAME[(category, action)]


def of_category(category):
    return [c for c in COMMANDS if c.category == category]
