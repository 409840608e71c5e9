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
"""The repair journal: what was there, written down before it changes.

One JSON object per line, flushed and fsync'd before the write it
describes, in a file only its owner can read. Each entry holds the full
allocation documents of every consumer the write touches, before and as
intended after, so ``restore`` can put back exactly what was there and
can tell whether anyone changed the consumer since; or, for a resource
provider that ``providers clean`` deletes, its full record (``provider``:
name, parent, generation, inventories, traits, aggregates). When placement
refuses a request outright (a generation conflict, any 4xx), one line
lists the entries it carried as never applied; after a 5xx, a timeout
or a dropped connection nobody knows, and ``restore`` compares instead.

Each run's writes begin, on a line of their own, with a run header
naming the placement endpoint it changed, so that ``restore`` can
recognise a journal from another cloud. A run killed inside a
``write(2)`` leaves its last line cut short (the kernel stops copying
at a page boundary); the next run to open the journal starts on a fresh
line and first records that cut. A cut line describes nothing that was
sent: a change only follows its whole, fsync'd batch of entries.
"""

import collections
import datetime
import json
import os
import re
import socket
import threading
import uuid

from oslo_log import log as logging

from nova_orphans import exception
from nova_orphans.i18n import _

LOG = logging.getLogger(__name__)

# Written by this release: run headers, cut marks, one "not applied"
# line per refused request, and a "restored" mark per restore. Version 1
# journals (no header, one "not applied" line per entry) are still read.
VERSION = 2
READABLE = (1, 2)
# How far back a reopening run looks for the start of the last line.
_TAIL_LIMIT = 16 * 1024 * 1024
# Where a whole entry may start inside a line (json.dumps with
# sort_keys): an entry a run of an older release glued onto a cut line.
_GLUED = re.compile(rb'\{"action": ')
# The end of a number cut short, as json reports it.
_NUMBER = re.compile(r'-?[0-9]*\.?[0-9]*([eE][-+]?[0-9]*)?')
_NUMBER_TAIL = re.compile(r'\.|[eE][-+]?')


# Where journals go by default when this user may write there (the
# systemd units' StateDirectory): a controller's operator, root or nova.
SYSTEM_STATE_PATH = '/var/lib/nova-orphans'


def default_directory(state_path=None):
    """Where journals go without --journal, the same for both front ends.

    ``state_path`` (``[nova_orphans] state_path``) if set; else
    $XDG_STATE_HOME/nova-orphans if XDG_STATE_HOME is set; else
    /var/lib/nova-orphans when this user can write there or create it;
    else ~/.local/state/nova-orphans, as for a user of ``openstack`` on
    a workstation.
    """
    if state_path:
        return state_path
    if os.environ.get('XDG_STATE_HOME'):
        return os.path.join(os.environ['XDG_STATE_HOME'], 'nova-orphans')
    if _writable(SYSTEM_STATE_PATH):
        return SYSTEM_STATE_PATH
    return os.path.join(os.path.expanduser('~'), '.local', 'state',
                        'nova-orphans')


def _writable(path):
    if os.path.isdir(path):
        return os.access(path, os.W_OK | os.X_OK)
    parent = os.path.dirname(path)
    return (not os.path.exists(path) and os.path.isdir(parent) and
            os.access(parent, os.W_OK | os.X_OK))


def default_path(state_path):
    """A new timestamped journal in the state directory (mode 0700)."""
    try:
        os.makedirs(state_path, mode=0o700, exist_ok=True)
    except OSError as e:
        raise exception.JournalError(
            path=state_path,
            reason=_('cannot create the state directory (%(error)s); pass '
                     '--journal PATH or set [nova_orphans] state_path') %
            {'error': e.strerror})
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y%m%dT%H%M%S.%fZ')
    return os.path.join(state_path, 'journal-%s-%d.jsonl' % (stamp,
                                                             os.getpid()))


def check_path(path):
    """Refuse, before anything is read or written, a journal that could
    not be appended to.
    """
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        reason = _('is a directory')
    elif not os.path.isdir(parent):
        reason = _('directory %(dir)s does not exist') % {'dir': parent}
    elif not os.access(path if os.path.exists(path) else parent, os.W_OK):
        reason = _('not writable')
    else:
        return
    raise exception.JournalError(path=path, reason=reason)


class Journal:
    """Append-only; safe to share between repair threads.

    ``placement`` is the endpoint the run writes to, recorded in the run
    header (see :func:`nova_orphans.repair.restore.check_cloud`), and
    ``cloud`` what names the cloud the run reached (see
    :meth:`nova_orphans.app.sources.Sources.cloud`), so that a journal
    says which cloud it belongs to where several clouds' journals meet
    (a workstation's journal directory).
    """

    def __init__(self, path, placement=None, command='clean', cloud=None):
        self.path = path
        self._lock = threading.Lock()
        self._fd = None
        # Written before the run's first line; kept until it is on disk.
        self._prefix = b''
        self.header = {'run': str(uuid.uuid4()), 'command': command,
                       'placement': placement,
                       'host': socket.gethostname(), 'pid': os.getpid()}
        if cloud:
            self.header['cloud'] = dict(cloud)
        self.entries = 0

    def _open(self):
        created = True
        try:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL |
                             os.O_APPEND, 0o600)
            except FileExistsError:
                created = False
                fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
        except OSError as e:
            raise exception.JournalError(path=self.path, reason=e.strerror)
        try:
            if created:
                # The new name must survive a crash as well as its lines.
                _fsync_directory(os.path.dirname(os.path.abspath(
                    self.path)))
                prefix = b''
            else:
                prefix = _reopen_prefix(fd)
        except OSError as e:
            os.close(fd)
            raise exception.JournalError(path=self.path, reason=e.strerror)
        self._fd = fd
        self._prefix = prefix + _line(self.header)

    def record(self, entry):
        """Write one entry durably; the change may only follow after.

        Returns the entry's id, for :meth:`not_applied`.
        """
        return self.record_many([entry])[0]

    def record_many(self, entries):
        """Write several entries durably with one fsync, for one request.

        Each stays an entry of its own (one consumer's change), so
        ``restore`` undoes them one by one as before. Returns their ids.
        """
        ids = [str(uuid.uuid4()) for _entry in entries]
        self._write(*[dict(entry, id=entry_id)
                      for entry, entry_id in zip(entries, ids)])
        with self._lock:
            self.entries += len(ids)
        return ids

    def restored(self, done, failed):
        """A restore of this journal ended, with ``done`` changes undone
        and ``failed`` refused or failed: so that ``journals list`` can
        tell a journal restored from one that never was.
        """
        self._write({'restored': {'done': done, 'failed': failed}})

    def not_applied(self, entry_id, reason):
        """Placement refused the write of entry ``entry_id``."""
        self.not_applied_many([entry_id], reason)

    def not_applied_many(self, entry_ids, reason):
        """Placement refused the request carrying these entries.

        One line per request, however many consumers it carried: two
        runs meeting on the same consumers must not fill the journal.
        """
        self._write({'not_applied': list(entry_ids), 'reason': reason})

    def _write(self, *entries):
        data = b''.join(_line(entry) for entry in entries)
        with self._lock:
            if self._fd is None:
                self._open()
            data = self._prefix + data
            try:
                while data:
                    # A regular file takes it all at once; loop all the
                    # same.
                    data = data[os.write(self._fd, data):]
                os.fsync(self._fd)
            except OSError as e:
                # Part of it may be on disk (a full file system): the
                # next write starts as a run of its own would, on a
                # fresh line after a cut mark.
                os.close(self._fd)
                self._fd = None
                raise exception.JournalError(path=self.path,
                                             reason=e.strerror)
            self._prefix = b''

    def close(self):
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _line(entry):
    return (json.dumps(dict(entry, version=VERSION, time=_now()),
                       sort_keys=True) + '\n').encode('utf-8')


def _fsync_directory(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _reopen_prefix(fd):
    """What a run appending to an existing journal writes first.

    A fresh line, always; and if the last line is cut short (an earlier
    run was killed inside its write), a mark saying so, with the offset
    where the cut line ends.
    """
    size = os.fstat(fd).st_size
    if not size:
        return b''
    end = size
    if os.pread(fd, 1, size - 1) == b'\n':
        end -= 1
    start = end
    while start > max(0, end - _TAIL_LIMIT):
        chunk = os.pread(fd, min(65536, start), max(0, start - 65536))
        cut = chunk.rfind(b'\n')
        if cut >= 0:
            start -= len(chunk) - cut - 1
            break
        start -= len(chunk)
    last = os.pread(fd, end - start, start)
    prefix = b'' if end < size else b'\n'
    try:
        _parse(last)
    except ValueError:
        if last.strip():
            prefix += _line({'cut': end})
    return prefix


# What load() returns. ``runs``: [Run], oldest first; ``warnings``: one
# line per line of the file that was cut short; ``restores``: the marks
# restores left (see Journal.restored), oldest first.
Contents = collections.namedtuple('Contents', 'entries warnings runs '
                                  'restores')


class Run:
    """The entries one run wrote, and its header (None before version 2
    or after a cut without one).
    """

    def __init__(self, header=None):
        self.header = header or {}
        self.entries = []

    @property
    def placement(self):
        return self.header.get('placement')

    @property
    def cloud(self):
        """What names the run's cloud ({} before it was recorded): for
        ``openstack``, ``name`` (clouds.yaml's), ``auth_url``, ``region``
        and ``project``; for ``nova-orphans-manage``, ``config_files``.
        """
        cloud = self.header.get('cloud')
        return cloud if isinstance(cloud, dict) else {}


def read(path):
    """All entries of a journal, oldest first; refuses a damaged file.

    See :func:`load`; its warnings are logged here.
    """
    contents = load(path)
    for warning in contents.warnings:
        LOG.warning('%s', warning)
    return contents.entries


def load(path):
    """A journal's entries, runs and warnings; refuses a damaged file.

    An entry placement refused has ``applied`` False (and ``reason``).
    A line cut short is tolerated, and reported, only where a killed run
    leaves one: as the last line of the file, or followed by a new run
    (its header or cut mark, or another such line), or with an entry of
    a run of an older release glued onto it. Anywhere else a line that
    is not a journal entry is damage, and the journal is refused.
    """
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except OSError as e:
        raise exception.JournalError(path=path, reason=e.strerror)
    raw = data.split(b'\n')
    if raw[-1] == b'':
        raw.pop()
    lines = []
    for number, line in enumerate(raw, 1):
        if not line.strip():
            continue
        try:
            lines.append((number, _parse(line), None))
            continue
        except ValueError as e:
            error = e
        glued = _unglue(line)
        if glued is not None:
            start, entry = glued
            try:
                # Whole, and only its newline missing.
                lines.append((number, _parse(line[:start]), None))
            except ValueError as e:
                lines.append((number, None if _cut_short(line[:start])
                              else False, e))
            lines.append((number, entry, None))
        else:
            # None: cut short, where a killed run may have left it;
            # False: damaged wherever it is.
            lines.append((number, None if _cut_short(line) else False,
                          error))
    # A line is cut short where a run stopped: what follows it begins
    # another run, or is another such line.
    cut = [False] * len(lines)
    follows_a_run = True
    for i in range(len(lines) - 1, -1, -1):
        number, entry, error = lines[i]
        if entry is False:
            follows_a_run = False
        elif entry is None:
            cut[i] = follows_a_run or (
                i + 1 < len(lines) and lines[i + 1][0] == number)
            follows_a_run = cut[i]
        else:
            follows_a_run = ('run' in entry or 'cut' in entry or
                             (i > 0 and lines[i - 1][0] == number))
    warnings, runs, restores = [], [Run()], []
    entries, by_id = [], {}
    for i, (number, entry, error) in enumerate(lines):
        if not entry:
            if entry is False:
                raise exception.JournalError(path=path, reason=_(
                    'line %(line)d is not a nova-orphans journal entry '
                    '(%(error)s)') % {'line': number, 'error': error})
            if not cut[i]:
                raise exception.JournalError(path=path, reason=_(
                    'line %(line)d is cut short, yet the run that wrote '
                    'it went on after it: the journal is damaged') %
                    {'line': number})
            if i + 1 < len(lines) and lines[i + 1][0] == number:
                warnings.append(_(
                    'WARNING: journal %(path)s, line %(line)d: starts with '
                    'an entry cut short when the run writing it was killed '
                    '(skipped: a change is only sent once its whole entry '
                    'is on disk); the entry glued after it is read.') %
                    {'path': path, 'line': number})
            else:
                warnings.append(_(
                    'WARNING: journal %(path)s, line %(line)d: cut short '
                    'when the run writing it was killed; skipped (a change '
                    'is only sent once its whole entry is on disk).') %
                    {'path': path, 'line': number})
            runs.append(Run())
            continue
        if 'run' in entry:
            runs.append(Run(entry))
            continue
        if 'cut' in entry:
            continue
        if 'restored' in entry:
            restores.append(entry)
            continue
        if 'not_applied' in entry:
            refused = entry['not_applied']
            for entry_id in ([refused] if isinstance(refused, str)
                             else refused):
                target = by_id.get(entry_id)
                if target is None:
                    raise exception.JournalError(
                        path=path, reason=_(
                            'line %(line)d: refers to no earlier entry') %
                        {'line': number})
                target['applied'] = False
                target['reason'] = entry.get('reason')
            continue
        if entry.get('id'):
            by_id[entry['id']] = entry
        entries.append(entry)
        runs[-1].entries.append(entry)
    return Contents(entries, warnings, [r for r in runs if r.entries],
                    restores)


def _parse(line):
    """One line of a journal, as a dict; ValueError (why) if it is not
    one.
    """
    try:
        entry = json.loads(line.decode('utf-8'))
    except UnicodeDecodeError:
        raise ValueError(_('not UTF-8'))
    if not isinstance(entry, dict):
        raise ValueError(_('not a JSON object'))
    version = entry.get('version')
    if version not in READABLE:
        raise ValueError(_('version %(version)s; this release reads '
                           'versions %(readable)s') % {
            'version': version,
            'readable': ', '.join(str(v) for v in READABLE)})
    if 'not_applied' in entry:
        refused = entry['not_applied']
        if not (isinstance(refused, str) or isinstance(refused, list) and
                all(isinstance(r, str) for r in refused)):
            raise ValueError(_('a malformed "not applied" mark'))
    elif 'run' in entry or 'cut' in entry or 'restored' in entry:
        if version < 2:
            raise ValueError(_('a run header in a version 1 line'))
    elif 'provider' in entry:
        # A resource provider deleted by "providers clean": its record.
        if not isinstance(entry['provider'], dict) or not isinstance(
                entry['provider'].get('uuid'), str):
            raise ValueError(_('a malformed provider record'))
    elif not isinstance(entry.get('consumers'), dict):
        raise ValueError(_('no consumers'))
    return entry


def _cut_short(line):
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
                bool(_NUMBER_TAIL.fullmatch(rest)) or
                e.msg == 'Expecting value' and (
                    bool(_NUMBER.fullmatch(rest)) or
                    any(w.startswith(rest) for w in ('true', 'false',
                                                     'null'))))
    return False


def _unglue(line):
    """The whole entry at the end of a line that starts cut short.

    Earlier releases appended a new run's first entry to the cut last
    line of a killed one. Returns (where it starts, the entry), or None.
    """
    for match in _GLUED.finditer(line, 1):
        try:
            entry = _parse(line[match.start():])
        except ValueError:
            continue
        if 'consumers' in entry or 'provider' in entry:
            return match.start(), entry
    return None


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()
