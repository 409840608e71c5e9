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
"""The sentences of a report: what a run says around its rows.

Both front ends print these lines as they are (app/report.py holds
them, output.py fits them to a terminal): the summary under a table
(what the orphans hold, the projects most affected, what to run next),
the outcomes of a clean or restore counted by kind, the causes of
failures numbered once, what could not be read and what was retried.
"""

import collections
import re

from nova_orphans.engine import projects
from nova_orphans.engine import reasons
from nova_orphans.i18n import _
from nova_orphans import outcomes as outcomes_mod
from nova_orphans import output

# A failure text longer than this is shown as its error number.
SHORT_FAILURE = 80
_UUID = re.compile(r'[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?'
                   r'[0-9a-f]{12}', re.I)
_ADDRESS = re.compile(r' at 0x[0-9a-f]+', re.I)


def capacity(rows):
    """{resource class: amount} the rows' allocations hold, VCPU first."""
    total = collections.Counter()
    for row in rows:
        total.update(row['resources'])
    return output.amounts(total)


# The projects a list's summary names; "list --group-by project" has
# them all.
SUMMARY_PROJECTS = 3


def projects_line(totals):
    """The projects with most orphaned consumers, with what their
    orphans hold: whose quota usage the orphans are counted in.
    """
    named = ['%(project)s (%(consumers)d consumer(s): %(resources)s)' % {
        'project': t.project_id or _('unknown project'),
        'consumers': t.consumers, 'resources': output.amounts(t.resources)}
        for t in totals[:SUMMARY_PROJECTS]]
    more = len(totals) - SUMMARY_PROJECTS
    if more > 0:
        return _('Projects most affected: %(projects)s; %(more)d other '
                 'project(s) (see --group-by project).') % {
            'projects': ', '.join(named), 'more': more}
    return _('Projects most affected: %(projects)s.') % {
        'projects': ', '.join(named)}


def unread_lines(unread, services=()):
    """The warnings that say what a run could not read but its cells
    (each a sentence of results.Listing.unread), and then the other
    services a site rule needed and could not read (Zun's database or
    API, results.Listing.unreadable_services), one line each.
    """
    return [_('WARNING: %(what)s.') % {'what': what} for what in unread] + [
        _('WARNING: %(service)s could not be read (%(error)s); the '
          'consumers nova has no trace of are reported as unverifiable, '
          'never as orphans.') % {'service': s.label, 'error': s.error}
        for s in services]


def list_summary(rows, unreadable_cells=(), next_command=None):
    """The lines that close a human ``list``: what the orphans hold,
    and in which projects, what could not be read, and what to run
    next.
    """
    orphans = [r for r in rows if projects.charged(r['action'])]
    heal = [r for r in rows if r['action'] == reasons.HEAL]
    lines = []
    if orphans:
        lines.append(_(
            '%(orphans)d orphaned allocation(s) of %(consumers)d '
            'consumer(s) on %(providers)d resource provider(s) hold '
            '%(capacity)s.') % {
                'orphans': len(orphans),
                'consumers': len({r['consumer'] for r in orphans}),
                'providers': len({r['resource_provider'] for r in orphans}),
                'capacity': capacity(orphans)})
        lines.append(projects_line(projects.totals(
            (r['project_id'], r['consumer'], r['resources'])
            for r in orphans)))
    if heal:
        lines.append(_('%(count)d live instance(s) hold no allocations '
                       '(missing_allocations); "clean --heal" creates '
                       'them.') % {'count': len({r['consumer']
                                                 for r in heal})})
    if not orphans and not heal:
        lines.append(_('No orphaned allocations found.'))
    if unreadable_cells:
        lines.append(_('Cells not read: %(cells)s; their consumers are '
                       'unverifiable, never orphans.') % {
            'cells': ', '.join(unreadable_cells)})
    if (orphans or heal) and next_command:
        lines.append(_('Next: %(command)s') % {'command': next_command})
    return lines


def host_summary(summary, hosts, unreadable_cells=(), next_command=None):
    """The lines that close a host view (``summary``: its
    engine.hosts.Summary; ``hosts``: the compute hosts whose tree a
    clean gives something back on): what a clean gives back across the
    cloud, and for each shape how many more servers placement would
    accept after it, on how many hosts.
    """
    lines = []
    if summary.held:
        lines.append(_('A clean would give back %(capacity)s, on '
                       '%(hosts)d compute host(s).') % {
            'capacity': output.amounts(summary.held), 'hosts': hosts})
    else:
        lines.append(_('Orphans hold nothing on any compute host.'))
    for total in summary.shapes:
        lines.append(_('%(shape)s: %(more)d more server(s) after a clean, '
                       'on %(hosts)d host(s).') % {
            'shape': total.shape, 'more': total.more, 'hosts': total.hosts})
    if unreadable_cells:
        lines.append(_('Cells not read: %(cells)s; their consumers are '
                       'unverifiable, never orphans.') % {
            'cells': ', '.join(unreadable_cells)})
    if next_command:
        lines.append(_('Next: %(command)s') % {'command': next_command})
    return lines


def retries_line(retries):
    """What a run got over, or None: "12 requests retried after
    transient faults (placement 503: 9, placement connection: 4)."
    ``retries``: the run's clients.retry.Retries (or None).
    """
    if retries is None or not retries.requests:
        return None
    if retries.requests == 1:
        text = _('%(count)d request retried after transient faults '
                 '(%(faults)s).')
    else:
        text = _('%(count)d requests retried after transient faults '
                 '(%(faults)s).')
    return text % {
        'count': retries.requests,
        'faults': ', '.join('%s %s: %d' % (service, reason, n)
                            for (service, reason), n in sorted(
                                retries.counts.items()))}


def outcome_summary(outcomes):
    """One line counting the outcomes of a clean or restore, by kind."""
    counts = collections.Counter(counted(o) for o in outcomes)
    return _('Outcomes: %(counts)s.') % {'counts': ', '.join(
        '%d %s' % (n, o) for o, n in sorted(
            counts.items(), key=lambda item: (-item[1], item[0])))}


def counted(outcome):
    """How a summary counts an outcome: failures as one kind, each
    other outcome by its text.
    """
    if outcome.kind == outcomes_mod.FAILED:
        return outcome.kind
    return str(outcome)


def group_failures(outcomes):
    """(outcomes, causes): one cause per way the rows failed.

    Placement down fails every row alike with a long message, each
    naming its own consumer's URL: those rows are one cause, ``failed:
    error N``, and ``causes`` holds (N, how many rows, the first such
    row's full text), to be printed once. A short reason (``failed:
    changed concurrently; run restore again``) is its own id and stays
    on its row.
    """
    causes = collections.OrderedDict()
    keys = []
    for outcome in outcomes:
        if outcome.kind != outcomes_mod.FAILED:
            keys.append(None)
            continue
        text = outcome.detail
        key = _ADDRESS.sub('', _UUID.sub('{uuid}', text))
        keys.append(key)
        if key not in causes:
            causes[key] = [None, 0, text]
        causes[key][1] += 1
    numbered = [c for c in causes.values() if len(c[2]) > SHORT_FAILURE]
    for number, cause in enumerate(numbered, 1):
        cause[0] = number
    short = [o if k is None or not causes[k][0] else
             o.with_detail(_('error %(number)d') % {
                 'number': causes[k][0]})
             for o, k in zip(outcomes, keys)]
    return short, [tuple(c) for c in numbered]


def failure_lines(causes):
    """One line per numbered cause of failure, with its count."""
    return [_('Error %(number)d (%(count)d row(s)): %(text)s') % {
        'number': number, 'count': count, 'text': text}
        for number, count, text in causes]


def provider_list_summary(rows, unreadable_cells=(), next_command=None):
    """The lines that close a human ``providers list``."""
    orphans = [r for r in rows if r['action'] != 'none']
    lines = []
    if orphans:
        lines.append(_(
            '%(providers)d resource provider(s) in %(trees)d tree(s) of '
            'deleted compute nodes; %(allocations)d allocation(s) on them, '
            '%(orphans)d of them orphans.') % {
                'providers': len(orphans),
                'trees': len({r['root_provider'] for r in orphans}),
                'allocations': sum(r['allocations'] for r in orphans),
                'orphans': sum(r['orphan_allocations'] for r in orphans)})
    else:
        lines.append(_('No orphaned resource providers found.'))
    if unreadable_cells:
        lines.append(_('Cells not read: %(cells)s; their nodes\' trees '
                       'are unverifiable, and what they may own keeps a '
                       'deleted node\'s tree.') % {
            'cells': ', '.join(unreadable_cells)})
    if orphans and next_command:
        lines.append(_('Next: %(command)s') % {'command': next_command})
    return lines


def repairs_line(outcomes):
    """What was done to a provider clean's trees' orphaned allocations
    first.
    """
    counts = collections.Counter(counted(o) for o in outcomes)
    return _('Orphaned allocations on these trees, repaired first: '
             '%(outcomes)s.') % {'outcomes': ', '.join(
                 '%d %s' % (n, o) for o, n in sorted(
                     counts.items(), key=lambda item: (-item[1], item[0])))}


def other_writers_note(count):
    """What a front end says once when ``count`` consumers met another
    writer (Repairer.conflicts): a second clean beside this one makes
    every write of it meet one, so it is said once, never per consumer.
    """
    return _('%(count)d consumer(s) were changed by another writer '
             'between this run\'s read and its write (another clean or '
             'restore, or nova); each was read again and left as it was '
             'where it no longer needed this repair.') % {'count': count}
