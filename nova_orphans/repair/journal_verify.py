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
"""The journal's format, read back and verified before anything trusts it.

``restore`` writes into placement what a journal says was there; a
journal that is not the one its runs wrote (bit rot, a hand edit, a
partial copy, two files pasted together) would have it write the wrong
thing. So every line carries ``sum``: the SHA-256 of the line's
canonical JSON (sorted keys, no spaces, ``sum`` left out) after the
``sum`` of the line before it in its run. A run's header starts its
chain; its run id is the chain's nonce, so lines cannot move from one
run to another. The header also records ``follows``, the ``sum`` of the
last whole line the file held when the run began (None: none), so whole
runs cannot be removed from between others, duplicated or reordered. A
run that ends (normally, on an error, on SIGINT or SIGTERM) writes an
``end`` record counting its lines and entries; a run without one was
killed, or the file was cut short after it.

As databases do with their write-ahead logs (PostgreSQL's CRC and link
to the previous record, SQLite's journal nonce and page count), the
whole file is verified before the first write: a line that does not
verify (altered, missing, duplicated, moved, glued to the next) refuses
it, with its number. A line cut short is tolerated only where a killed
``write(2)`` leaves one: as the last line, or followed by the run that
next opened the file, whose chained ``cut`` mark names the byte offset
where the cut line ends.

A line of another ``version`` is not a journal entry: refused as any
other.
"""

import collections
import hashlib
import json
import os
import re

from nova_orphans import exception
from nova_orphans.i18n import _

VERSION = 3
# The end of a number, or of a \u escape, cut short, as json reports it.
_NUMBER = re.compile(r'-?[0-9]*\.?[0-9]*([eE][-+]?[0-9]*)?')
_NUMBER_TAIL = re.compile(r'\.|[eE][-+]?')
_ESCAPE_TAIL = re.compile(r'u[0-9a-fA-F]{0,3}')
_SUM = re.compile(r'[0-9a-f]{64}')

# How a run ended, as its end record says (see Journal.close).
COMPLETED = 'completed'
ERROR = 'error'
# What journals list shows for a run without an end record.
NO_END = 'no end record'


def digest(previous, line):
    """The ``sum`` of ``line`` (a dict; its own ``sum`` left out),
    chained after ``previous`` (None for a run's header).
    """
    body = {k: v for k, v in line.items() if k != 'sum'}
    data = json.dumps(body, sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(((previous or '') + '\n' + data).encode(
        'utf-8')).hexdigest()


def seal(line, previous):
    """``line`` as written: version 3, its ``sum`` chained after
    ``previous``. Returns (the bytes of the line, its sum).
    """
    line = dict(line, version=VERSION)
    line['sum'] = digest(previous, line)
    return ((json.dumps(line, sort_keys=True) + '\n').encode('utf-8'),
            line['sum'])


class Run:
    """The entries one run wrote, and its header.

    ``end``: its end record, None if it has none; ``restored``: the mark
    of a restore's run ({done, failed, ...}), None if it has none;
    ``first_line`` and ``last_line``: where it is in the file.
    """

    def __init__(self, header, line):
        self.header = header
        self.entries = []
        self.end = None
        self.restored = None
        self.first_line = self.last_line = line
        # Whether its last line is cut short.
        self.cut = False
        self.lines = 1
        self.sum = self.header.get('sum')

    @property
    def placement(self):
        return self.header.get('placement')

    @property
    def cloud(self):
        """What names the run's cloud ({} if nothing does): for
        ``openstack``, ``name`` (clouds.yaml's), ``auth_url``, ``region``
        and ``project``; for ``nova-orphans-manage``, ``config_files``,
        ``config_dirs``, ``auth_url``, ``region`` and ``api_database``;
        ``front_end`` for both.
        """
        cloud = self.header.get('cloud')
        return cloud if isinstance(cloud, dict) else {}

    @property
    def restoring(self):
        """Whether it is a restore's run: a header, a mark and an end
        record, and no entry, whatever became of it.
        """
        return self.header.get('command') == 'restore' and not self.entries

    @property
    def ended(self):
        """How it ended (its end record's ``how``), NO_END without one."""
        return self.end.get('how') if self.end is not None else NO_END

    def describe(self):
        """The run as a sentence names it."""
        header = self.header
        return _('run %(run)s (%(command)s on %(host)s, pid %(pid)s, '
                 'started %(time)s; lines %(first)d to %(last)d)') % {
            'run': header.get('run'), 'command': header.get('command'),
            'host': header.get('host'), 'pid': header.get('pid'),
            'time': header.get('time'), 'first': self.first_line,
            'last': self.last_line}


# What load() returns. ``runs``: [Run] with entries, oldest first;
# ``restores``: the marks restores left, oldest first, each with the
# cloud and front end of the restore; ``unended``: [Run] without an end
# record, and the numbers of cut lines no run's header precedes (a run
# killed inside its first write, or the file cut there).
Contents = collections.namedtuple('Contents',
                                  'entries runs restores unended')


def load(path, check=None):
    """A journal's entries and runs, every line verified; refuses an
    empty, damaged or altered file (exception.JournalError, 127).
    ``check(stat, path)`` is given the stat of the file opened, before
    it is read, to refuse it (journal.check_file).
    """
    try:
        with open(path, 'rb') as f:
            if check is not None:
                check(os.fstat(f.fileno()), path)
            data = f.read()
    except OSError as e:
        raise exception.JournalError(path=path, reason=e.strerror)
    if not data.strip():
        raise exception.JournalError(path=path, reason=_(
            'is empty: it is not a journal (a run writes its journal only '
            'once it changes something)'))
    return _Reader(path).read(_items(path, data))


# One line of the file as read: its number, where it ends (a byte
# offset), and its dict, or None (cut short, as a killed write leaves
# it), or False (damage, ``error`` says why).
_Item = collections.namedtuple('_Item', 'number end entry error')


def _items(path, data):
    items = []
    start = 0
    for number, line in enumerate(data.split(b'\n'), 1):
        end = start + len(line)
        if line.strip():
            items.append(_read_line(number, end, line))
        start = end + 1
    return items


def _read_line(number, end, line):
    try:
        return _Item(number, end, parse(line), None)
    except _Glued as e:
        return _Item(number, end, False, e)
    except ValueError as e:
        # None: cut short, where a killed run may have left it; False:
        # damaged wherever it is.
        return _Item(number, end, None if cut_short(line) else False, e)


class _Glued(ValueError):
    pass


def parse(line):
    """One line of a journal, as a dict; ValueError (why) if it is not
    one.
    """
    try:
        text = line.decode('utf-8')
    except UnicodeDecodeError:
        raise ValueError(_('not UTF-8'))
    try:
        entry = json.loads(text)
    except json.JSONDecodeError as e:
        if e.msg == 'Extra data' and _is_line(text[:e.pos]):
            raise _Glued(_('two lines glued together: the newline '
                           'between them is missing'))
        raise ValueError(str(e))
    if not isinstance(entry, dict):
        raise ValueError(_('not a JSON object'))
    version = entry.get('version')
    if version != VERSION:
        raise ValueError(_('version %(version)s; this release reads '
                           'version %(readable)s') % {
            'version': version, 'readable': VERSION})
    if not (isinstance(entry.get('sum'), str) and
            _SUM.fullmatch(entry['sum'])):
        raise ValueError(_('no checksum'))
    _check_kind(entry)
    return entry


def _check_kind(entry):
    """ValueError (why) if ``entry`` is not a well-formed record of its
    kind: a mark, an end record, a run's header, a provider's record or
    a consumers' entry.
    """
    if 'not_applied' in entry:
        refused = entry['not_applied']
        if not (isinstance(refused, list) and
                all(isinstance(r, str) for r in refused)):
            raise ValueError(_('a malformed "not applied" mark'))
    elif 'end' in entry:
        end = entry['end']
        if not (isinstance(end, dict) and all(
                isinstance(end.get(k), int) for k in ('lines', 'entries'))):
            raise ValueError(_('a malformed end record'))
    elif 'restored' in entry:
        mark = entry['restored']
        if not (isinstance(mark, dict) and all(
                isinstance(mark.get(k), int) for k in ('done', 'failed'))):
            raise ValueError(_('a malformed restore mark'))
    elif 'run' in entry or 'cut' in entry:
        # A run's header, a cut mark.
        pass
    elif 'provider' in entry:
        # A resource provider deleted by "providers clean": its record.
        if not isinstance(entry['provider'], dict) or not isinstance(
                entry['provider'].get('uuid'), str):
            raise ValueError(_('a malformed provider record'))
    elif not isinstance(entry.get('consumers'), dict):
        raise ValueError(_('no consumers'))


def _is_line(text):
    try:
        parse(text.encode('utf-8'))
    except ValueError:
        return False
    return True


def cut_short(line):
    """Whether the line is the start of a JSON object, cut short.

    Only such a line can be what a killed ``write(2)`` left (after a
    power loss, maybe followed by zeros); anything else is damage.
    """
    doc = line.rstrip(b'\0')
    if not doc.startswith(b'{'):
        return False
    try:
        doc = doc.decode('utf-8')
        json.loads(doc)
    except UnicodeDecodeError:
        return False
    except json.JSONDecodeError as e:
        rest = doc[e.pos:]
        return (e.pos == len(doc) or
                e.msg.startswith('Unterminated string') or
                e.msg.startswith('Invalid \\uXXXX escape') and
                bool(_ESCAPE_TAIL.fullmatch(rest)) or
                bool(_NUMBER_TAIL.fullmatch(rest)) or
                e.msg == 'Expecting value' and (
                    bool(_NUMBER.fullmatch(rest)) or
                    any(w.startswith(rest) for w in ('true', 'false',
                                                     'null'))))
    return False


class _Reader:
    """One pass over a journal's lines, in order, verifying each."""

    def __init__(self, path):
        self.path = path
        self.runs, self.restores = [], []
        self.entries, self.by_id = [], {}
        self.unended = []
        # The run whose chain is open (no end record yet).
        self.open = None
        # The sum of the last whole line (None: none).
        self.last_sum = None
        # The end of the last cut line since the last whole line, and
        # the offset the open run's next line (its cut mark) must name.
        self.cut_at = None
        self.expect_cut = None

    def refuse(self, number, reason, **kwargs):
        kwargs['line'] = number
        raise exception.JournalError(path=self.path, reason=reason % kwargs)

    def read(self, items):
        for i, item in enumerate(items):
            if item.entry is False:
                if isinstance(item.error, _Glued):
                    self.refuse(item.number, _('line %(line)d: %(error)s'),
                                error=item.error)
                self.refuse(item.number, _(
                    'line %(line)d is not a nova-orphans journal entry '
                    '(%(error)s)'), error=item.error)
            if item.entry is None:
                self.cut(items, i)
            else:
                self.verified(item)
        if self.open is not None:
            self.unended.append(self.open)
        return Contents(self.entries, [r for r in self.runs if r.entries],
                        self.restores, self.unended)

    def cut(self, items, i):
        item = items[i]
        following = items[i + 1] if i + 1 < len(items) else None
        # A killed run's last line: the file ends there, or the run
        # that next opened it begins (or that run was killed too).
        if following is not None and not (following.entry is None or
                                          'run' in following.entry):
            self.refuse(item.number, _(
                'line %(line)d is cut short, yet the run that wrote it '
                'went on after it: the journal is damaged'))
        if self.open is not None:
            self.open.last_line = item.number
            self.open.cut = True
            self.unended.append(self.open)
            self.open = None
        else:
            # A run killed inside its first write (its header), or the
            # file cut there.
            self.unended.append(item.number)
        self.cut_at = item.end

    def verified(self, item):
        entry, number = item.entry, item.number
        if 'run' in entry:
            if self.open is not None:
                # Killed between two writes; another run appended.
                self.unended.append(self.open)
            if entry.get('follows') != self.last_sum:
                self.refuse(number, _(
                    'line %(line)d: the run it begins does not follow the '
                    'line before it: a line or a run before it was '
                    'removed, added or moved'))
            if entry['sum'] != digest(None, entry):
                self.refuse(number, _(
                    'line %(line)d does not verify: the line was altered'))
            self.open = Run(entry, number)
            self.runs.append(self.open)
            self.expect_cut, self.cut_at = self.cut_at, None
        else:
            run = self.open
            if run is None:
                self.refuse(number, _(
                    'line %(line)d belongs to no run: the header of its '
                    'run is missing, or it comes after the run\'s end '
                    'record'))
            if entry['sum'] != digest(run.sum, entry):
                self.refuse(number, _(
                    'line %(line)d does not verify: the line was altered, '
                    'or a line of its run before it was removed, added or '
                    'moved'))
            if self.expect_cut is not None and entry.get(
                    'cut') != self.expect_cut:
                self.refuse(number, _(
                    'line %(line)d: the line before its run is cut short, '
                    'and no cut mark names it: the journal is damaged'))
            if self.expect_cut is None and 'cut' in entry:
                self.refuse(number, _(
                    'line %(line)d records a line cut short that is not '
                    'there: the journal is damaged'))
            self.expect_cut = None
            run.sum = entry['sum']
            run.last_line = number
            if 'end' in entry:
                self.end(run, entry, number)
            else:
                run.lines += 1
                self.dispatch(entry, number, run)
        self.last_sum = entry['sum']

    def end(self, run, entry, number):
        counted = (entry['end']['lines'], entry['end']['entries'])
        if counted != (run.lines, len(run.entries)):
            self.refuse(number, _(
                'line %(line)d: the end record counts %(lines)d lines and '
                '%(entries)d entries; its run has %(have_lines)d and '
                '%(have_entries)d'), lines=counted[0], entries=counted[1],
                have_lines=run.lines, have_entries=len(run.entries))
        run.end = entry['end']
        self.open = None

    def dispatch(self, entry, number, run):
        """An entry, a "not applied" or "restored" mark, or a cut mark."""
        if 'cut' in entry:
            return
        if 'restored' in entry:
            run.restored = entry['restored']
            self.restores.append(dict(
                entry['restored'], time=entry.get('time'),
                placement=run.placement, cloud=run.cloud))
            return
        if 'not_applied' in entry:
            for entry_id in entry['not_applied']:
                target = self.by_id.get(entry_id)
                if target is None:
                    self.refuse(number, _(
                        'line %(line)d: refers to no earlier entry'))
                target['applied'] = False
                target['reason'] = entry.get('reason')
            return
        if entry.get('id'):
            self.by_id[entry['id']] = entry
        self.entries.append(entry)
        run.entries.append(entry)


def proof_lines(path, contents):
    """What restore says of a journal that cannot prove it is whole
    (``contents.unended``), one line each, then what to check; [] for a
    journal that can.

    A restore's run without an end record is no such run: it wrote no
    entry, so whether the journal holds every change is the business of
    the runs that made them (see restore_lines).
    """
    lines = []
    for unended in contents.unended:
        if isinstance(unended, Run) and unended.restoring:
            continue
        if isinstance(unended, Run):
            lines.append(_(
                'WARNING: journal %(path)s: %(run)s has no end record: the '
                'run was killed (SIGKILL, the OOM killer, a power cut), or '
                'this file was cut short %(where)s (a partial copy, a full '
                'disk). Its %(count)d entry(ies) that verify are those read '
                'above; any it wrote after them are not in this file.') % {
                'path': path, 'run': unended.describe(),
                'where': _where(unended), 'count': len(unended.entries)})
        else:
            lines.append(_(
                'WARNING: journal %(path)s, line %(line)d: cut short, and '
                'no run begins before it: a run was killed inside its first '
                'write, or this file was cut short there.') % {
                'path': path, 'line': unended})
    if lines:
        lines.append(_(
            'The journal cannot prove it is whole. Check that it is the '
            'file the run wrote, not a copy, and how the run ended (the '
            'host\'s logs: journalctl, dmesg for the OOM killer); if the '
            'file was cut, restore from the whole one. If the run was '
            'killed, nothing it changed is missing here: it sent no change '
            'before its entry was on disk, and each entry read was judged '
            'above.'))
    return lines


def _where(run):
    """Where a file cut short after ``run``'s lines was cut."""
    return (_('at line %(line)d') if run.cut else
            _('after line %(line)d')) % {'line': run.last_line}


def restore_lines(path, contents):
    """What restore says of each earlier restore of the journal that did
    not end (``contents.unended``): a restore, and what its mark says it
    had done; [] when every one ended.
    """
    lines = []
    for run in contents.unended:
        if not (isinstance(run, Run) and run.restoring):
            continue
        if run.restored is None:
            done = _('before its mark, which says what it did, was written '
                     'whole, or this file was cut short %(where)s') % {
                'where': _where(run)}
        else:
            done = _('after it had restored %(done)d change(s), %(failed)d '
                     'refused or failed, as its mark says') % run.restored
        lines.append(_(
            'WARNING: journal %(path)s: %(run)s has no end record: that '
            'restore was killed (SIGKILL, the OOM killer, a power cut) '
            '%(done)s. A restore writes no entry: the runs it restored are '
            'judged on their own.') % {
            'path': path, 'run': run.describe(), 'done': done})
    return lines
