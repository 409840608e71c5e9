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
"""Ctrl-C and SIGTERM: stop at once while reading, between writes after.

Python delivers a signal to the main thread only, as an exception; the
repairs run in worker threads, which a KeyboardInterrupt in the main
thread does not stop (they went on writing, and the run then died with
a traceback and no journal path on screen). So while the command only
reads, a signal raises ``Interrupted`` (nothing was changed, nothing is
lost by unwinding anywhere); once it writes, a signal only sets a flag
that every repair stream asks before each batch and each write, so the
requests in flight finish, their journal entries match what was sent,
and the command prints what was done before it exits 128 + the signal
number (130 for SIGINT, 143 for SIGTERM), as a shell reports a process
a signal killed.
"""

import contextlib
import os
import signal
import sys
import threading

from nova_orphans import exit_codes
from nova_orphans.i18n import _
from nova_orphans import progress

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A signal stopped a run that had changed nothing.

    A KeyboardInterrupt: no ``except Exception`` on the way up turns it
    into a failed row, and cliff ends an ``openstack`` command with it
    quietly, exit code 130.
    """

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def say(line):
    """A line on the process's stderr, from a signal handler.

    os.write: the main thread may be inside a write to stderr itself
    (restore's progress), where print would fail.
    """
    try:
        sys.__stderr__.flush()
        os.write(sys.__stderr__.fileno(), (line + '\n').encode())
    except (OSError, ValueError, AttributeError):
        pass


def signal_name(signum):
    return signal.Signals(signum).name


def nothing_changed(signum):
    """The one line of a run a signal stopped before any write."""
    return _('Interrupted by %(signal)s; nothing was changed.') % {
        'signal': signal_name(signum)}


def ended(signum):
    """The line of a signal that came once the run's report was made:
    what was printed is all of it, and the exit code says the signal.
    """
    return _('Interrupted by %(signal)s as the run ended; its report above '
             'is complete.') % {'signal': signal_name(signum)}


def exit_now(signum):
    """``Stop``'s ``exit_now`` for a command that is its process (either
    console script), stopped before any write: one line and out at once,
    the requests in flight abandoned.

    Unwinding would wait for them: the readers' threads cannot be
    cancelled in the middle of a request, and the interpreter waits for
    its threads before it exits; for a service that does not answer,
    as long as the request's timeout, if it has one.
    """
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    say(('\n' if progress.is_terminal(sys.stderr) else '') +
        nothing_changed(signum))
    os._exit(exit_codes.of_signal(signum))


class Stop:
    """The flag a signal sets; safe to ask from any thread.

    ``exit_now(signum)``, if given, is called instead of raising while
    nothing was written: a process of its own need not unwind (its
    readers' threads cannot be cancelled in the middle of a request, and
    the interpreter would wait for them).
    """

    def __init__(self, exit_now=None):
        self._exit_now = exit_now
        self._event = threading.Event()
        self.signum = None
        self._raising = True
        self._notice = None

    def is_set(self):
        return self._event.is_set()

    __bool__ = is_set

    def set(self, signum):
        if self.signum is None:
            self.signum = signum
        self._event.set()

    def _handler(self, signum, frame):
        first = not self.is_set()
        self.set(signum)
        if self._raising:
            if self._exit_now is not None:
                self._exit_now(signum)
            raise Interrupted(signum)
        if first and self._notice and sys.stderr is sys.__stderr__:
            # Said at once, or a slow write in flight looks like a hang.
            say(self._notice % {'signal': signal_name(signum)})

    @contextlib.contextmanager
    def handled(self):
        """Take SIGINT and SIGTERM for the duration, then put back the
        handlers that were there.

        Only the main thread may set handlers: called from another one
        (an in-process caller's worker), the process's own handling is
        left alone and only ``set()`` stops the run.
        """
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {s: signal.signal(s, self._handler) for s in SIGNALS}
        try:
            yield self
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def start_writing(self, notice=None):
        """From here on a signal only sets the flag: the writes in flight
        finish and the caller reports what was done (a second Ctrl-C
        while it does so must not cut the report short either).

        ``notice`` (with ``%(signal)s``) is printed on stderr when the
        first signal comes, if stderr is the process's own.
        """
        if self.is_set():
            # A signal came before the first write: nothing to report.
            raise Interrupted(self.signum)
        self._notice = notice
        self._raising = False
