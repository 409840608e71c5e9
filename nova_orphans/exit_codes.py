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
"""The one exit-code table of both front ends.

Operators run the tool from cron, systemd timers and pipelines, where
the exit code is all a script reads: ``nova-orphans-manage`` and the
``openstack`` commands end every run with a code from this table, and
both ``--help`` outputs and doc/source/cli/exit-codes.rst show it.

A code says what is true of the cloud, never more: 0 and 4 only when
nothing is left to do in the whole cloud; a known fault (a service out
of reach, refused credentials, a bad configuration) has its own code and
255 is left for bugs in the tool.
"""

import textwrap

from nova_orphans.i18n import _

SUCCESS = 0
REPAIR_FAILED = 1
INCOMPLETE = 2
ORPHANS_FOUND = 3
REPAIRED = 4
INCOMPLETE_WITH_ORPHANS = 5
UNSUPPORTED_SCHEMA = 6
CONFIG_ERROR = 7
UNREACHABLE = 8
CREDENTIALS_REFUSED = 9
NOVA_UNREADABLE = 10
JOURNAL_UNPROVEN = 11
JOURNAL_BUSY = 12
INVALID_INPUT = 127
INTERRUPTED = 130
TERMINATED = 143
UNEXPECTED = 255

MEANINGS = {
    SUCCESS: _('nothing found, nothing to do (the whole cloud was read)'),
    REPAIR_FAILED: _('a repair failed (the others were still done)'),
    INCOMPLETE: _('incomplete: a cell, placement\'s database, neutron '
                  '(asked for the ports bound to a server) or (zun site '
                  'rule) Zun\'s database or API could not be '
                  'read, and the part that was read has no orphan'),
    ORPHANS_FOUND: _('orphans remain: found and not all repaired '
                     '(list, --dry-run, --max-count, or repairs skipped); '
                     'no repair failed'),
    REPAIRED: _('every orphan found was repaired'),
    INCOMPLETE_WITH_ORPHANS: _('incomplete (as 2), and orphans found in '
                               'the part that was read'),
    UNSUPPORTED_SCHEMA: _('unsupported or damaged nova schema; nothing was '
                          'changed'),
    CONFIG_ERROR: _('configuration error: no configuration file found, an '
                    'option missing or invalid, no placement endpoint in '
                    'the catalog for the region and interface; nothing '
                    'was changed'),
    UNREACHABLE: _('a service could not be reached (placement, keystone, '
                   'neutron); nothing was changed'),
    CREDENTIALS_REFUSED: _('the credentials were refused (keystone, or '
                           'placement and nova: their policies do not '
                           'grant the user\'s roles what the command '
                           'needs, or its token is not scoped to a '
                           'project; an openstack clean by a user that is '
                           'not nova\'s admin); nothing was changed'),
    NOVA_UNREADABLE: _('nova could not be read: its API database, or its '
                       'compute API; nothing was changed'),
    JOURNAL_UNPROVEN: _('the journal a restore read cannot prove it is '
                        'whole (a clean\'s run in it has no end record: '
                        'it was killed, or the file was cut short); the '
                        'entries that verify were restored, and a line '
                        'says what to check'),
    JOURNAL_BUSY: _('the journal is in use: another run ("clean" or '
                    '"restore" with the same --journal) is writing to it '
                    'now; nothing was written that needed it: run the same '
                    'command again once that run has ended'),
    INVALID_INPUT: _('invalid input on the command line (an option, a '
                     'uuid, a host, a journal that is empty, damaged, '
                     'altered, of another cloud or writable by another '
                     'user); nothing was changed'),
    INTERRUPTED: _('interrupted by SIGINT; what was done is printed first'),
    TERMINATED: _('terminated by SIGTERM; what was done is printed first'),
    UNEXPECTED: _('unexpected error: a bug in nova-orphans'),
}

# Where an action's code means something more precise.
RESTORE_MEANINGS = {
    SUCCESS: _('nothing to restore (every entry was already undone)'),
    REPAIR_FAILED: _('an entry was refused or failed (the others were '
                     'restored)'),
    ORPHANS_FOUND: _('entries would be restored (--dry-run)'),
    REPAIRED: _('everything restored'),
    JOURNAL_UNPROVEN: _('the journal cannot prove it is whole (a clean\'s '
                        'run in it has no end record: it was killed, or the '
                        'file was cut short); the entries that verify were '
                        'restored (with --dry-run, judged), and a line says '
                        'what to check'),
}
# journals prune: a journal is no orphan, but --dry-run says the same as
# every other command's: 3 when it would act, 0 when nothing is to do.
PRUNE_MEANINGS = {
    SUCCESS: _('nothing older than the retention, or every such journal '
               'removed'),
    ORPHANS_FOUND: _('journals would be removed (--dry-run)'),
}

# The codes every action can end with, whatever it does.
_FAULTS = (UNSUPPORTED_SCHEMA, CONFIG_ERROR, UNREACHABLE,
           CREDENTIALS_REFUSED, NOVA_UNREADABLE, INVALID_INPUT,
           INTERRUPTED, TERMINATED, UNEXPECTED)
LIST_CODES = (SUCCESS, INCOMPLETE, ORPHANS_FOUND,
              INCOMPLETE_WITH_ORPHANS) + _FAULTS
CLEAN_CODES = tuple(sorted((SUCCESS, REPAIR_FAILED, INCOMPLETE,
                            ORPHANS_FOUND, REPAIRED, INCOMPLETE_WITH_ORPHANS,
                            JOURNAL_BUSY) + _FAULTS))
RESTORE_CODES = (SUCCESS, REPAIR_FAILED, ORPHANS_FOUND, REPAIRED,
                 CONFIG_ERROR, UNREACHABLE, CREDENTIALS_REFUSED,
                 JOURNAL_UNPROVEN, JOURNAL_BUSY, INVALID_INPUT, INTERRUPTED,
                 TERMINATED, UNEXPECTED)
JOURNAL_LIST_CODES = (SUCCESS, CONFIG_ERROR, INVALID_INPUT, INTERRUPTED,
                      TERMINATED, UNEXPECTED)
JOURNAL_PRUNE_CODES = (SUCCESS, REPAIR_FAILED, ORPHANS_FOUND, CONFIG_ERROR,
                       INVALID_INPUT, INTERRUPTED, TERMINATED, UNEXPECTED)
ALL_CODES = tuple(sorted(MEANINGS))

# Which code wins when several apply, first to last. A clean whose
# journal another run took between its check and its first write fails
# the rows it could not journal with 12 (outcomes.JOURNAL_BUSY): after a
# failure a person must look at (1), before what could not be read (the
# run is to be run again either way).
ORDER = (INTERRUPTED, REPAIR_FAILED, JOURNAL_BUSY, INCOMPLETE_WITH_ORPHANS,
         INCOMPLETE, JOURNAL_UNPROVEN, REPAIRED, ORPHANS_FOUND, SUCCESS)
# A list's 3: nothing was repaired, nor asked to be.
LIST_MEANINGS = {ORPHANS_FOUND: _('orphans found')}
SAME_CODES = _('The codes are the same for nova-orphans-manage and the '
               'openstack commands, but for what openstack does before it '
               'runs a command: it logs in to keystone first, so refused '
               'credentials and keystone out of reach end an openstack '
               'command with openstack\'s own 1.')


def precedence(codes=ALL_CODES):
    """The sentence saying which of ``codes`` wins, or '' when no two
    of them can apply at once.
    """
    order = [c for c in ORDER if c in codes]
    if len(order) < 3:
        return ''
    names = ['130/143' if c == INTERRUPTED else str(c) for c in order]
    return _('When several apply, the first of %(codes)s wins.') % {
        'codes': ', '.join(names)}


PRECEDENCE = precedence() + ' ' + SAME_CODES


def of_listing(orphans_found, incomplete):
    """A list's code: 3 when orphans were found; 5 and 2 when part of
    the cloud could not be read, so that no incomplete run looks clean.
    """
    if incomplete:
        return INCOMPLETE_WITH_ORPHANS if orphans_found else INCOMPLETE
    return ORPHANS_FOUND if orphans_found else SUCCESS


def of_signal(signum):
    """128 + the signal number, as a shell reports a killed process."""
    return 128 + signum


def of_error(error):
    """The code of an error that stopped a run: a known fault's own
    code, 255 for anything else (a bug).
    """
    return getattr(error, 'exit_code', UNEXPECTED)


def help_text(codes, restoring=False, bullets=False, listing=False,
              pruning=False):
    """The "Return codes:" block of an action's --help, either front
    end's: ``codes`` and which of them wins; ``bullets``: as a list that
    reads as reStructuredText too (the openstack commands' help is also
    their reference page).
    """
    meanings = {**MEANINGS, **(RESTORE_MEANINGS if restoring else {}),
                **(LIST_MEANINGS if listing else {}),
                **(PRUNE_MEANINGS if pruning else {})}
    lines = [_('Return codes:')]
    if bullets:
        lines.append('')
    for code in codes:
        lines.append(textwrap.fill(
            meanings[code], width=76, break_on_hyphens=False,
            initial_indent=('* %d: ' if bullets else '  %-5d') % code,
            subsequent_indent=' ' * (2 if bullets else 7)))
    indent = '' if bullets else '  '
    if bullets:
        lines.append('')
    lines.append(textwrap.fill(
        ' '.join(filter(None, [precedence(codes), SAME_CODES, _(
            'All of them: doc/source/cli/exit-codes.rst (nova-orphans docs, '
            '"Exit codes").')])),
        width=76, initial_indent=indent, subsequent_indent=indent,
        break_on_hyphens=False))
    return '\n'.join(lines)
