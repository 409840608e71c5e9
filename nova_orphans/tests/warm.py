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
"""Console scripts run as processes, without paying for their imports.

``openstack`` spends about two seconds of CPU importing osc and every
installed plugin before it reads its first argument, and
``nova-orphans-manage`` most of a second; the tests run them hundreds
of times, and that was about a sixth of the suite's CPU.

So a test process starts, once for each console script, a *zygote*: a
Python process that has imported the script's entry point and then
waits. A run is a small *launcher* process, which is what the test's
``subprocess.Popen`` sees (its pid, its pipes, its exit code). The
launcher hands its standard streams, arguments, environment and working
directory to the zygote, which forks a child to call the entry point
in them; the child ends as the script would (exit code, or the signal
that killed it), and the launcher then ends the same way. A signal the
launcher takes is passed on to the child, and a launcher that is killed
takes its child with it.

Each child starts from the zygote's state, never from another run's,
and the code is this tree's, as the console script's would be. What a
warm run cannot show is the process before its imports: the tests of
that (a signal at the first instruction, SIGKILL at an exact request,
the installed wheel) run the console script itself.
"""

import array
import atexit
import gc
import importlib.metadata
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback

from nova_orphans import tests
from nova_orphans.tests import programs
from nova_orphans.tests import warm_launcher

#: The console scripts a zygote can run, and the modules their runs
#: import late (cliff loads a command's module when it runs it).
SCRIPTS = {
    'openstack': ('nova_orphans.osc.v1.orphan',
                  'nova_orphans.osc.v1.provider_orphan',
                  'keystoneauth1.loading._plugins.admin_token',
                  'keystoneauth1.loading._plugins.identity.generic'),
    'nova-orphans-manage': ('nova_orphans.cmd.manage',),
}
_zygotes = {}
_lock = threading.Lock()


def _script(path):
    """The SCRIPTS name of ``path`` if it is this interpreter's own
    console script, else None (another one: the installed wheel's).
    """
    name = os.path.basename(path)
    if name not in SCRIPTS:
        return None
    ours = os.path.join(os.path.dirname(sys.executable), name)
    found = shutil.which(path)
    if found is None or os.path.realpath(found) != os.path.realpath(ours):
        return None
    return name


def command(argv):
    """``argv`` (a console script and its arguments) as a warm run's
    command line; any other command as it is.
    """
    name = _script(argv[0])
    if name is None:
        return list(argv)
    return [sys.executable, '-I', '-S', warm_launcher.__file__,
            _zygote(name), argv[0]] + list(argv[1:])


def Popen(argv, **kwargs):
    """subprocess.Popen of ``argv``, warm when it is a console script."""
    return subprocess.Popen(command(argv), **kwargs)


def run(argv, **kwargs):
    """subprocess.run of ``argv``, warm when it is a console script."""
    return subprocess.run(command(argv), **kwargs)


def _zygote(name):
    """The socket of this process's zygote for ``name``, started on
    first use.
    """
    with _lock:
        started = _zygotes.get(name)
        if started is not None and started[0].poll() is None:
            return started[1]
        # Not in a test's temporary directory (oslotest's NestedTempfile
        # points tempfile.tempdir there), which goes with the test.
        saved, tempfile.tempdir = tempfile.tempdir, None
        try:
            directory = tempfile.mkdtemp(prefix='nova-orphans-warm-')
        finally:
            tempfile.tempdir = saved
        path = os.path.join(directory, 'socket')
        # Import time sees no OS_* setting of whichever test came first;
        # each run gets its own environment.
        env = programs.this_tree_first(
            {k: v for k, v in os.environ.items() if not k.startswith('OS_')})
        log = os.path.join(directory, 'zygote.log')
        with open(log, 'w') as errors:
            proc = subprocess.Popen(
                [sys.executable, '-m', __name__, 'zygote', path, name],
                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=errors, text=True, cwd=programs.REPO)
        ready = proc.stdout.readline()
        if ready != 'ready\n':
            proc.wait()
            with open(log) as f:
                raise RuntimeError('the %s zygote did not start:\n%s' % (
                    name, f.read()))
        atexit.register(_stop, proc, directory)
        _zygotes[name] = (proc, path)
        return path


def _stop(proc, directory):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    shutil.rmtree(directory, ignore_errors=True)


# The zygote -------------------------------------------------------------

def _serve(path, name):
    # cliff names the program from sys.argv[0] when it is imported.
    sys.argv = [os.path.join(os.path.dirname(sys.executable), name)]
    entry, = importlib.metadata.entry_points(group='console_scripts',
                                             name=name)
    main = entry.load()
    for module in SCRIPTS[name]:
        importlib.import_module(module)
    # As the console script's own process has it.
    sys.path[0] = os.path.dirname(sys.executable)
    gc.set_threshold(*tests.DEFAULT_GC_THRESHOLD)
    if threading.active_count() != 1:
        raise RuntimeError('threads started while importing %s: %s'
                           % (name, threading.enumerate()))
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wakeup_r, wakeup_w = os.pipe()
    os.set_blocking(wakeup_w, False)
    signal.set_wakeup_fd(wakeup_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    children = {}
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, 'accept')
    selector.register(wakeup_r, selectors.EVENT_READ, 'wakeup')
    sys.stdout.write('ready\n')
    sys.stdout.flush()
    while True:
        for key, _mask in selector.select(timeout=1):
            if key.data == 'accept':
                conn, _address = listener.accept()
                pid = _fork(conn, listener, main)
                if pid is None:
                    continue
                children[pid] = conn
                selector.register(conn, selectors.EVENT_READ, pid)
            elif key.data == 'wakeup':
                os.read(wakeup_r, 4096)
            elif not key.fileobj.recv(1):
                # The launcher is gone (killed): so is its run.
                try:
                    os.kill(key.data, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if not pid:
                break
            conn = children.pop(pid, None)
            if conn is not None:
                selector.unregister(conn)
                try:
                    conn.sendall(b'%d\n' % status)
                except OSError:
                    pass
                conn.close()
        if os.getppid() != parent:
            return


def _fork(conn, listener, main):
    # The descriptors come with the first byte: read it with recvmsg.
    fds = array.array('i')
    message = b''
    size = None
    while size is None or len(message) < warm_launcher.HEADER + size:
        data, ancdata, _flags, _address = conn.recvmsg(
            65536, socket.CMSG_SPACE(3 * fds.itemsize))
        if not data:
            conn.close()
            return None
        message += data
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[:len(payload) - len(payload) %
                                      fds.itemsize])
        if size is None and len(message) >= warm_launcher.HEADER:
            size = int.from_bytes(message[:warm_launcher.HEADER], 'big')
    request = message[warm_launcher.HEADER:]
    request = json.loads(request)
    pid = os.fork()
    if pid == 0:
        listener.close()
        conn.close()
        _child(main, request, list(fds))
    for fd in fds:
        os.close(fd)
    conn.sendall(b'%d\n' % pid)
    return pid


def _child(main, request, fds):
    """Become the console script's process; never returns."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    # Nothing else of the zygote's (other runs' sockets, its selector),
    # as subprocess closes a new process's other descriptors.
    os.closerange(3, os.sysconf('SC_OPEN_MAX'))
    os.chdir(request['cwd'])
    os.environ.clear()
    os.environ.update(request['env'])
    sys.argv = request['argv']
    # The streams Python gives a new process over these descriptors.
    encoding = os.environ.get('PYTHONIOENCODING') or None
    sys.stdin = sys.__stdin__ = open(0, 'r', encoding=encoding,
                                     closefd=False)
    sys.stdout = sys.__stdout__ = open(
        1, 'w', encoding=encoding, closefd=False,
        buffering=-1 if not os.isatty(1) else 1)
    sys.stderr = sys.__stderr__ = open(
        2, 'w', encoding=encoding, errors='backslashreplace',
        closefd=False, buffering=1)
    code = 1
    killed_by = None
    try:
        code = main()
        code = 0 if code is None else code
    except SystemExit as e:
        code = e.code
        if code is None:
            code = 0
        elif not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        killed_by = signal.SIGINT
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        threading._shutdown()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        code = 120
    finally:
        if killed_by is not None:
            signal.signal(killed_by, signal.SIG_DFL)
            os.kill(os.getpid(), killed_by)
        os._exit(code & 0xff)


if __name__ == '__main__':
    # The zygote of a test process: gone with it.
    _serve(sys.argv[2], sys.argv[3])
