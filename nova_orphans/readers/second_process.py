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
"""A read done in a process of its own, beside the run's.

CPython runs one thread's Python at a time. Reading a large cloud's
placement rows in a thread while the cells are read would only take
turns with them: sqlite even hands the interpreter lock back on every
row (see db_utils.serial_reads). A second process does that read on
another core, and hands back what it read in a form that costs the run
far less to take in than reading it would (see placement_rows).

The process is a new interpreter, isolated (see _START), not a fork and
not multiprocessing's spawn: by then the run has threads and open
connections, which a forked child would inherit half-made, and spawn
would run the main module of whatever program called the tool again.
It is told what to call on its standard input and answers on its
standard output, both pickled. It ignores SIGINT (Ctrl-C reaches the
whole process group, and the run decides what to do, see interrupt.py)
and is killed when the run no longer waits for it: it only reads, so
ending it at any point loses nothing.
"""

import importlib
import pickle
import selectors
import signal
import subprocess
import sys

# How often the run, waiting, asks whether it was cancelled (seconds).
POLL_INTERVAL = 0.2
# What is kept of the last line of the process's standard error.
_LINE = 500


# What the process runs. Isolated (-I): neither the directory it was
# started in nor PYTHON* variables decide what it imports (``python -m``
# would put the working directory first on its path, where any
# sqlalchemy.py would be imported in the tool's place); the run's
# sys.path, read first, does.
_START = ('import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); '
          'from %s import _main; _main()' % __name__)


class Unavailable(Exception):
    """No answer came from the second process: do the work here.

    Its text may hold what the process wrote on its standard error:
    remove credentials before showing it.
    """


def run(function, args, cancelled=None):
    """``function(*args)``, called in a second process.

    ``function`` is a module-level function (the process imports it by
    name) whose arguments and result pickle; it reports its own errors
    in its result, free of credentials. Returns None once
    ``cancelled()`` says yes. Raises Unavailable when no process could
    be started or it ended without an answer.
    """
    # The run's own import path first: the process imports what the run
    # imported, and nothing from where it was started (see _START).
    request = (pickle.dumps(sys.path) +
               pickle.dumps((function.__module__, function.__qualname__,
                             args)))
    if not sys.executable:
        # An embedding program that does not know its interpreter.
        raise Unavailable('no Python interpreter to start')
    try:
        process = subprocess.Popen(
            [sys.executable, '-I', '-c', _START], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        raise Unavailable('could not start %s: %s' % (sys.executable, e))
    try:
        answer, errors = _communicate(process, request, cancelled)
        if answer is None:
            return None
        process.wait()
        if process.returncode != 0 or not answer:
            # Its last line: a traceback's ends with the exception.
            last = errors.decode('utf-8', 'replace').strip().splitlines()
            raise Unavailable('it ended with exit code %s%s' % (
                process.returncode,
                ': ' + last[-1][-_LINE:] if last else ''))
        return pickle.loads(answer)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            stream.close()


def _communicate(process, request, cancelled):
    """(what it wrote on stdout, on stderr); (None, None) if cancelled.

    Both streams are read as they come, so that neither fills its pipe
    while the other is waited on.
    """
    try:
        process.stdin.write(request)
    except BrokenPipeError:
        # It ended at once: its exit code and stderr say why.
        pass
    try:
        process.stdin.close()
    except BrokenPipeError:
        # Closing flushes what a failed write left: closed all the same.
        pass
    out, err = [], []
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ, out)
        selector.register(process.stderr, selectors.EVENT_READ, err)
        while selector.get_map():
            if cancelled is not None and cancelled():
                return None, None
            for key, _events in selector.select(POLL_INTERVAL):
                chunk = key.fileobj.read1(1 << 20)
                if chunk:
                    key.data.append(chunk)
                else:
                    selector.unregister(key.fileobj)
    return b''.join(out), b''.join(err)


def _main():
    """The second process's side of run(), once _START set its path."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    module, name, args = pickle.load(sys.stdin.buffer)
    function = getattr(importlib.import_module(module), name)
    pickle.dump(function(*args), sys.stdout.buffer,
                protocol=pickle.HIGHEST_PROTOCOL)
    sys.stdout.flush()
