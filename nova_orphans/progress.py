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
"""``--progress``: how far a long scan or clean has got, on stderr.

Counts are printed at most twice a second, and once at the end of each
stage, so a cron log stays short and a terminal shows movement.
"""

import threading
import time

from nova_orphans.i18n import _


class Progress:

    def __init__(self, stream, interval=0.5, clock=time.monotonic):
        self.stream = stream
        self.interval = interval
        self.clock = clock
        self._lock = threading.Lock()
        self._stage = None

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

    def _finish(self):
        if self._stage is not None:
            self._print()
            self._stage = None

    def _print(self):
        self.stream.write(_('%(stage)s: %(done)d/%(total)d') % {
            'stage': self._stage, 'done': self._done,
            'total': self._total} + '\n')
        self.stream.flush()
