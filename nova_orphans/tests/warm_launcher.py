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
"""The launcher of a warm run (see warm): what the test sees as the
process. It imports only what it needs, from the standard library, in
an isolated interpreter (``-I -S``): it costs a hundredth of a second.
"""

import array
import json
import os
import signal
import socket
import sys

#: Bytes of the request's length, before the request.
HEADER = 4


def launch(path, script, args):
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    request = json.dumps({'argv': [script] + args, 'env': dict(os.environ),
                          'cwd': os.getcwd()}).encode()
    conn.sendmsg([len(request).to_bytes(HEADER, 'big') + request],
                 [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                   array.array('i', [0, 1, 2]))])
    # The child has them now: this process keeps no end of the pipes
    # the test reads to their end.
    for fd in (0, 1, 2):
        os.close(fd)
    reply = conn.makefile('rb')
    pid = int(reply.readline())

    def forward(signum, frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP,
                   signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, forward)
    line = reply.readline()
    if not line:
        # The zygote went away (the test process ended).
        os._exit(1)
    status = int(line)
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(os.waitstatus_to_exitcode(status))


if __name__ == '__main__':
    launch(sys.argv[1], sys.argv[2], sys.argv[3:])
