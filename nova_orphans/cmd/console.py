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
"""The ``nova-orphans-manage`` console script.

Ctrl-C from the first instruction on: importing the command (oslo,
SQLAlchemy, keystoneauth) takes a few tenths of a second, and a signal
then would print a KeyboardInterrupt traceback. So this module, which
imports nothing heavy, takes SIGINT and SIGTERM before it imports the
command: nothing has been read or changed yet, and the process says so
in one line and exits 130 or 143. From then on the command's own
handling (nova_orphans.interrupt) takes over.
"""

import os
import signal
import sys

NOTHING_CHANGED = 'Interrupted by %(signal)s; nothing was changed.'
# The message catalogue's version of NOTHING_CHANGED, once it is loaded.
_translated = None


def _nothing_changed(signum, frame):
    line = (_translated or NOTHING_CHANGED) % {
        'signal': signal.Signals(signum).name}
    try:
        os.write(2, ('\n' + line + '\n').encode())
    finally:
        os._exit(128 + signum)


def main():
    global _translated
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _nothing_changed)
    from nova_orphans.i18n import _
    _translated = _(NOTHING_CHANGED)
    from nova_orphans.cmd import manage
    return manage.main()


if __name__ == '__main__':
    sys.exit(main())
