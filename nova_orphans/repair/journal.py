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
provider that ``providers clean`` deletes, its full record. Each run's
lines begin with a run header naming the cloud it changed (see
app/sources.py) and end with an end record; every line carries a
checksum chained to the one before it (see journal_verify.py). One run
writes to a journal at a time, under an exclusive ``flock``.

The chain catches accidents, not another user: anyone who can write
the file can rewrite it whole, chain and all. So a journal is only
read or added to when no other user can write it (check_file), and
only written in a directory where no other user can replace it
(check_directory), each checked on the descriptor the run then uses;
root is no exception. A group's write is another user's unless the
group has no member but this user (OpenSSH's rule for StrictModes).

A cut line (a run killed inside ``write(2)``) describes nothing that
was sent: a change only follows its whole, fsync'd batch of entries.
What a journal holds, proves and survives, and what ``restore``
refuses: ``doc/source/admin/journal.rst``.
"""

import datetime
import errno
import fcntl
import grp
import os
import pwd
import socket
import stat
import threading
import uuid

from oslo_log import log as logging

from nova_orphans import exception
from nova_orphans.i18n import _
from nova_orphans.repair import journal_verify

LOG = logging.getLogger(__name__)

# Read back and verified by journal_verify.
load = journal_verify.load
COMPLETED = journal_verify.COMPLETED
ERROR = journal_verify.ERROR
# How far back a reopening run looks for the start of a line.
_TAIL_LIMIT = 16 * 1024 * 1024


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
    not be appended to, or that another user could write or replace
    (see check_file and check_directory, which the run's open checks
    again on its descriptors).
    """
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        reason = _('is a directory')
    elif not os.path.isdir(parent):
        reason = _('directory %(dir)s does not exist') % {'dir': parent}
    elif not os.access(path if os.path.exists(path) else parent, os.W_OK):
        reason = _('not writable')
    elif os.path.exists(path) and in_use(path):
        raise exception.JournalBusy(path=path, reason=IN_USE)
    else:
        check_directory(os.stat(parent), parent, path)
        if os.path.exists(path):
            check_file(os.stat(path), path)
        return
    raise exception.JournalError(path=path, reason=reason)


def check_file(st, path):
    """Refuse the journal at ``path`` (``st``: its stat, of the
    descriptor that reads it) if another user could have written it:
    restore would undo whatever they wrote there.
    """
    user = os.geteuid()
    if st.st_uid != user:
        reason = _('is owned by %(owner)s, not by %(user)s who runs this, '
                   'and only its owner may restore it or add to it: run '
                   'as %(owner)s, or check it and run "chown %(user)s '
                   '%(path)s"') % {'owner': _user_name(st.st_uid),
                                   'user': _user_name(user), 'path': path}
    elif st.st_mode & stat.S_IWOTH:
        reason = _('can be written by other users (mode %(mode)s), who '
                   'could have rewritten it: check it and run "chmod go-w '
                   '%(path)s"') % {'mode': _mode(st), 'path': path}
    elif _group_writes(st):
        reason = _('can be written by the group %(group)s (mode %(mode)s), '
                   'which has other members than %(user)s, who could have '
                   'rewritten it: check it and run "chmod g-w %(path)s"') % {
            'group': _group_name(st.st_gid), 'mode': _mode(st),
            'user': _user_name(user), 'path': path}
    else:
        return
    raise exception.JournalError(path=path, reason=reason)


def check_directory(st, directory, path=None):
    """Refuse to write a journal (``path``, or any) in ``directory``
    (``st``: its stat) if another user could replace it there: a
    directory owned by another user than this one or root, or that
    others can write, unless it is sticky (as /tmp), where only a
    file's owner may replace it and the journal must be this user's.
    """
    user = os.geteuid()
    if st.st_uid not in (user, 0):
        reason = _('the directory %(dir)s is owned by %(owner)s, who could '
                   'replace the journal: run "chown %(user)s %(dir)s" or '
                   'write journals in a directory of your own') % {
            'dir': directory, 'owner': _user_name(st.st_uid),
            'user': _user_name(user)}
    elif st.st_mode & stat.S_ISVTX:
        return
    elif st.st_mode & stat.S_IWOTH:
        reason = _('the directory %(dir)s can be written by other users '
                   '(mode %(mode)s), who could replace the journal: run '
                   '"chmod go-w %(dir)s" or write journals in a directory '
                   'of your own') % {'dir': directory, 'mode': _mode(st)}
    elif _group_writes(st):
        reason = _('the directory %(dir)s can be written by the group '
                   '%(group)s (mode %(mode)s), which has other members than '
                   '%(user)s, who could replace the journal: run "chmod g-w '
                   '%(dir)s" or write journals in a directory of your '
                   'own') % {'dir': directory, 'mode': _mode(st),
                             'group': _group_name(st.st_gid),
                             'user': _user_name(user)}
    else:
        return
    raise exception.JournalError(path=path or directory, reason=reason)


def _group_writes(st):
    """Whether ``st``'s group may write it and has a member other than
    the user this run is, or none (see group_members).
    """
    if not st.st_mode & stat.S_IWGRP:
        return False
    members = group_members(st.st_gid)
    return members is None or members != {os.geteuid()}


def group_members(gid):
    """The uids of the group's members, as OpenSSH's StrictModes counts
    them (Debian's user-group-modes): the users whose primary group it
    is, and those the group database lists; None for a group it does
    not know, or a member with no user of that name.
    """
    try:
        listed = grp.getgrgid(gid).gr_mem
        members = {pwd.getpwnam(name).pw_uid for name in listed}
    except KeyError:
        return None
    return members | {user.pw_uid for user in pwd.getpwall()
                      if user.pw_gid == gid}


def _mode(st):
    return '%04o' % stat.S_IMODE(st.st_mode)


def _group_name(gid):
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def _user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        # A container's uid without a passwd entry.
        return str(uid)


IN_USE = _('another run is writing to it now (a "clean" or "restore" with '
           'the same journal); try again once it has ended')


def in_use(path):
    """Whether a run holds the journal's lock (see Journal): asked
    before a run begins, so that it is refused before anything is read.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        return not _lock(fd, fcntl.LOCK_SH)
    finally:
        os.close(fd)


def _lock(fd, how):
    """Take the journal's lock without waiting: False if another run
    holds it. A file system without flock (some network ones) is
    written without: the lock only keeps two of our own runs apart.
    """
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        LOG.debug('No flock on %s: %s', fd, e)
    return True


class Journal:
    """Append-only; safe to share between repair threads.

    ``placement`` is the endpoint the run writes to and ``cloud`` what
    names the cloud it reached (see Sources.cloud), both recorded in the
    run header, so that ``restore`` refuses the journal in another cloud
    (see restore.check_cloud) and ``journals list`` says which cloud a
    run belongs to where several clouds' journals meet.
    """

    def __init__(self, path, placement=None, command='clean', cloud=None):
        self.path = path
        self._lock = threading.Lock()
        self._fd = None
        self.header = {'run': str(uuid.uuid4()), 'command': command,
                       'placement': placement,
                       'host': socket.gethostname(), 'pid': os.getpid()}
        if cloud:
            self.header['cloud'] = dict(cloud)
        # Written before the run's first entry, kept until it is on
        # disk: a fresh line, the header, a cut mark.
        self._newline = b''
        self._pending = []
        # The chain: the sum of the run's last line on disk, and how
        # many lines it has written.
        self._sum = None
        self._lines = 0
        self._broken = None
        self._created = False
        self.entries = 0

    def hold(self):
        """Take the lock of the journal, which exists, before this run
        writes its first line: a restore holds it from its read of the
        journal to its mark, so that no other run appends in between
        (its mark would then follow a run it never read). Refused, as a
        write is, while another run holds it.
        """
        with self._lock:
            if self._fd is None:
                self._open(create=False)

    def _open(self, create=True):
        # The directory and the file, each checked on the descriptor
        # then used: nobody else can swap them in between.
        parent = os.path.dirname(os.path.abspath(self.path))
        try:
            directory = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as e:
            raise exception.JournalError(path=self.path, reason=e.strerror)
        try:
            check_directory(os.fstat(directory), parent, self.path)
            fd, created = self._open_in(directory, create)
        finally:
            os.close(directory)
        self._fd = fd
        self._created = created

    def _open_in(self, directory, create):
        name = os.path.basename(self.path)
        created = False
        try:
            if create:
                try:
                    fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL |
                                 os.O_APPEND, 0o600, dir_fd=directory)
                    created = True
                except FileExistsError:
                    pass
            if not created:
                fd = os.open(name, os.O_RDWR | os.O_APPEND,
                             dir_fd=directory)
        except OSError as e:
            raise exception.JournalError(path=self.path, reason=e.strerror)
        try:
            if not created:
                check_file(os.fstat(fd), self.path)
            if not _lock(fd, fcntl.LOCK_EX):
                raise exception.JournalBusy(path=self.path, reason=IN_USE)
            if created:
                # The new name must survive a crash as well as its lines.
                os.fsync(directory)
                newline, cut, follows = b'', None, None
            else:
                newline, cut, follows = _tail(fd)
        except OSError as e:
            os.close(fd)
            raise exception.JournalError(path=self.path, reason=e.strerror)
        except exception.JournalError:
            os.close(fd)
            raise
        self._newline = newline
        self._pending = [dict(self.header, follows=follows)]
        if cut is not None:
            self._pending.append({'cut': cut})
        return fd, created

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
        self._write([dict(entry, id=entry_id)
                     for entry, entry_id in zip(entries, ids)],
                    entries=len(ids))
        return ids

    def restored(self, done, failed, journal_clouds=()):
        """A restore of this journal ended, with ``done`` changes undone
        and ``failed`` refused or failed: so that ``journals list`` can
        tell a journal restored from one that never was, and where (the
        restore's header names its cloud; ``journal_clouds``: the
        --journal-cloud it was given).
        """
        mark = {'done': done, 'failed': failed}
        if journal_clouds:
            mark['journal_cloud'] = list(journal_clouds)
        self._write([{'restored': mark}])

    def not_applied(self, entry_id, reason):
        """Placement refused the write of entry ``entry_id``."""
        self.not_applied_many([entry_id], reason)

    def not_applied_many(self, entry_ids, reason):
        """Placement refused the request carrying these entries.

        One line per request, however many consumers it carried: two
        runs meeting on the same consumers must not fill the journal.
        """
        self._write([{'not_applied': list(entry_ids), 'reason': reason}])

    def _write(self, lines, entries=0):
        with self._lock:
            if self._broken is not None:
                raise exception.JournalError(path=self.path,
                                             reason=self._broken)
            if self._fd is None:
                self._open()
            self._append(self._pending + lines)
            self._pending = []
            self._newline = b''
            self.entries += entries

    def _append(self, lines):
        """Write ``lines``, chained, in one write(2) and one fsync; on
        failure, take back whatever part of them reached the file.
        """
        data, last = [self._newline], self._sum
        for line in lines:
            encoded, last = journal_verify.seal(dict(line, time=_now()),
                                                last)
            data.append(encoded)
        data = b''.join(data)
        size = None
        try:
            size = os.fstat(self._fd).st_size
            while data:
                # A regular file takes it all at once; loop all the
                # same.
                data = data[os.write(self._fd, data):]
            os.fsync(self._fd)
        except OSError as e:
            self._take_back(size, e)
            raise exception.JournalError(path=self.path, reason=e.strerror)
        self._sum = last
        self._lines += len(lines)

    def _take_back(self, size, error):
        """A write failed: truncate the file to ``size``, where it was
        (this run holds its lock: nobody else wrote since). If even that
        fails, the run writes nothing more to it: what is left may be a
        cut line in the middle of its run.
        """
        try:
            if size is None:
                raise error
            os.ftruncate(self._fd, size)
            os.fsync(self._fd)
        except OSError as e:
            os.close(self._fd)
            self._fd = None
            self._broken = _('an earlier write failed (%(error)s) and could '
                             'not be taken back') % {'error': e.strerror}

    def close(self, how=COMPLETED):
        """Write the run's end record (``how`` it ended: COMPLETED,
        ERROR, or a signal's name) and let go of the file.

        Returns None, or why the end record could not be written: the
        run's entries are all there, but ``restore`` will say the
        journal cannot prove it (see journal_verify).
        """
        with self._lock:
            if self._fd is None:
                return self._broken
            try:
                if self._lines:
                    self._append([{'end': {'lines': self._lines,
                                           'entries': self.entries,
                                           'how': how}}])
            except exception.JournalError as e:
                return e.kwargs.get('reason')
            finally:
                self._let_go()
        return None

    def _let_go(self):
        """Close the file; one this run created and never wrote a line
        to (its first write failed and was taken back) is removed, not
        left as an empty file that restore would refuse as no journal.
        """
        try:
            if (self._created and not self._lines and
                    not os.fstat(self._fd).st_size):
                os.unlink(self.path)
        except OSError as e:
            LOG.debug('Empty journal %s left in place: %s', self.path, e)
        finally:
            os.close(self._fd)
            self._fd = None


def _tail(fd):
    """What a run appending to an existing journal writes first, and
    chains after: (a newline if the file does not end with one, the
    offset where its last line ends if that line is cut short, else
    None, the sum of its last whole line, None if it has none).
    """
    size = os.fstat(fd).st_size
    if not size:
        return b'', None, None
    newline = b'' if os.pread(fd, 1, size - 1) == b'\n' else b'\n'
    end = size - (not newline)
    cut = None
    first = True
    for start, line in _lines_backwards(fd, end):
        if not line.strip():
            continue
        try:
            last = journal_verify.parse(line)
        except ValueError:
            # The last line cut short; any other line that does not
            # parse (cut short too) is passed over, as restore does.
            if first:
                cut = start + len(line)
            first = False
            continue
        return newline, cut, last['sum']
    return newline, cut, None


def _lines_backwards(fd, end):
    """(start, bytes) of each line ending at ``end``, then before it."""
    while end >= 0:
        start = end
        while start > max(0, end - _TAIL_LIMIT):
            chunk = os.pread(fd, min(65536, start), max(0, start - 65536))
            cut = chunk.rfind(b'\n')
            if cut >= 0:
                start -= len(chunk) - cut - 1
                break
            start -= len(chunk)
        yield start, os.pread(fd, end - start, start)
        end = start - 1


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()
