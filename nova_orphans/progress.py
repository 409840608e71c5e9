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
"""Progress of a long scan, clean or restore, on stderr.

Counts are printed at most twice a second, and once at the end of each
stage, so a cron log stays short and a terminal shows movement. On a
terminal the count is rewritten in place, and only once the run has
lasted a few seconds: a quick run prints nothing but its result.
"""

import threading
import time

from oslo_log import log as logging

from nova_orphans.i18n import _

# How long a run shown progress by default (on a terminal) stays quiet.
AUTO_DELAY = 3.0


def is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """``stage(name, total)``, then ``progress(steps)`` from any thread.

    ``delay``: print nothing before that many seconds of the run have
    passed. ``tty``: rewrite one line per stage instead of adding lines.
    """

    def __init__(self, stream, interval=0.5, clock=time.monotonic,
                 delay=0.0, tty=False):
        self.stream = stream
        self.interval = interval
        self.clock = clock
        self.delay = delay
        self.tty = tty
        self._lock = threading.Lock()
        self._stage = None
        self._begin = clock()
        # Whether the current stage's line is on screen, unfinished.
        self._open = False

    def stage(self, name, total):
        """Start counting ``total`` steps of a named stage."""
        with self._lock:
            self._finish()
            self._stage, self._total, self._done = name, total, 0
            self._last = self.clock()

    def __call__(self, steps=1):
        with self._lock:
            self._done += steps
            now = self.clock()
            if now - self._last >= self.interval:
                self._last = now
                self._print()

    def finish(self):
        with self._lock:
            self._finish()

    def abandon(self):
        """End the stage without its final count (the run was
        interrupted), so what is printed next starts on its own line.
        """
        with self._lock:
            if self._open:
                self.stream.write('\n')
                self.stream.flush()
                self._open = False
            self._stage = None

    def _finish(self):
        if self._stage is not None:
            self._print(final=True)
            self._stage = None

    def _print(self, final=False):
        if self.clock() - self._begin < self.delay:
            return
        line = _('%(stage)s: %(done)d/%(total)d') % {
            'stage': self._stage, 'done': self._done, 'total': self._total}
        if self.tty:
            self.stream.write('\r' + line + '\x1b[K' + ('\n' if final else ''))
            self._open = not final
        else:
            self.stream.write(line + '\n')
        self.stream.flush()


def for_run(forced, table, stream):
    """A run's Progress, or None: ``forced`` is --progress (True),
    --no-progress (False) or neither (None), in which case progress is
    shown on a terminal, for a table, once the run lasts a few seconds.
    """
    terminal = is_terminal(stream)
    if forced:
        return Progress(stream, tty=terminal)
    if forced is None and terminal and table:
        return Progress(stream, tty=True, delay=AUTO_DELAY)
    return None


def log_time(log, started, message, values):
    """At debug level, ``message`` with ``values`` and the ``seconds``
    since ``started`` (time.monotonic()).
    """
    if log.isEnabledFor(logging.DEBUG):
        log.debug(message, dict(values, seconds=time.monotonic() - started))
