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
can tell whether anyone changed the consumer since. When placement
refuses a write outright (a generation conflict, any 4xx), a second
line says that entry was never applied; after a 5xx, a timeout or a
dropped connection nobody knows, and ``restore`` compares instead.
"""

import datetime
import json
import os
import threading
import uuid

from nova_orphans import exception
from nova_orphans.i18n import _

VERSION = 1


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
    """Append-only; safe to share between repair threads."""

    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        self._fd = None
        self.entries = 0

    def _open(self):
        try:
            self._fd = os.open(self.path,
                               os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as e:
            raise exception.JournalError(path=self.path, reason=e.strerror)

    def record(self, entry):
        """Write one entry durably; the change may only follow after.

        Returns the entry's id, for :meth:`not_applied`.
        """
        entry_id = str(uuid.uuid4())
        self._write(dict(entry, id=entry_id))
        with self._lock:
            self.entries += 1
        return entry_id

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

    def not_applied(self, entry_id, reason):
        """Placement refused the write of entry ``entry_id``."""
        self.not_applied_many([entry_id], reason)

    def not_applied_many(self, entry_ids, reason):
        """Placement refused the request carrying these entries."""
        self._write(*[{'not_applied': entry_id, 'reason': reason}
                      for entry_id in entry_ids])

    def _write(self, *entries):
        now = _now()
        data = ''.join(json.dumps(dict(entry, version=VERSION, time=now),
                                  sort_keys=True) + '\n'
                       for entry in entries).encode('utf-8')
        with self._lock:
            if self._fd is None:
                self._open()
            while data:
                # A regular file takes it all at once; loop all the same.
                data = data[os.write(self._fd, data):]
            os.fsync(self._fd)

    def close(self):
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def read(path):
    """All entries of a journal, oldest first; refuses a damaged file.

    An entry placement refused has ``applied`` False (and ``reason``).
    A last line cut short (the tool died while writing it) is ignored:
    its change was never sent, since a change only follows a whole,
    fsync'd line.
    """
    try:
        with open(path, encoding='utf-8') as f:
            lines = f.readlines()
    except (OSError, UnicodeDecodeError) as e:
        raise exception.JournalError(
            path=path, reason=getattr(e, 'strerror', None) or str(e))
    entries, by_id = [], {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            if not isinstance(entry, dict) or entry.get(
                    'version') != VERSION:
                raise ValueError('not a nova-orphans journal entry')
            if 'not_applied' in entry:
                refused = by_id.get(entry['not_applied'])
                if refused is None:
                    raise ValueError('refers to no earlier entry')
                refused['applied'] = False
                refused['reason'] = entry.get('reason')
                continue
            if not isinstance(entry.get('consumers'), dict):
                raise ValueError('not a nova-orphans journal entry')
        except ValueError as e:
            if entries and number == len(lines) and not line.endswith(
                    '\n'):
                break
            raise exception.JournalError(
                path=path, reason=_('line %(line)d: %(error)s') %
                {'line': number, 'error': e})
        if entry.get('id'):
            by_id[entry['id']] = entry
        entries.append(entry)
    return entries


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()
