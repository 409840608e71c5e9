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
"""The two front ends as the tests run them: one runner for each.

Every test that runs ``nova-orphans-manage`` or ``openstack`` runs it
through here. ``manage``, ``openstack``, ``run`` and ``run_all`` run
this environment's console script *in the test's own process*
(``here``): its entry point called as the script calls it, with the
run's arguments, environment, working directory and standard streams,
and whatever the run changes in the process put back after it. The
Result is what the process would have given: its exit code, and its
output as a pipe reads it.

What only a process shows (a signal, SIGKILL, two runs at once, a
broken pipe, the script's first instructions) and another
environment's console script (``bin_dir``) run as a process
(``start``, ``run(..., process=True)``), in ``environment()``.

``manage_main`` and ``openstack_shell`` call the entry points as a
program that embeds them does (nova's harness in the scenario tests).
Unit tests run neither: they get a command's result from the
application layer.
"""

import collections
import contextlib
import copy
import gc
import importlib.metadata
import io
import locale
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import warnings

import fixtures

from nova_orphans.tests import programs

MANAGE = 'nova-orphans-manage'
OPENSTACK = 'openstack'
# The test runner's own settings; every other OS_* variable (a cloud's
# credentials in the developer's shell) is unset for the test.
RUNNER_VARIABLES = ('OS_STDOUT_CAPTURE', 'OS_STDERR_CAPTURE',
                    'OS_TEST_TIMEOUT', 'OS_LOG_CAPTURE')
# How long a run may take before the test fails, saying so.
TIMEOUT = 120

Result = collections.namedtuple('Result', 'returncode stdout stderr')


class Checks:
    """What every test asserts of a run, for a TestCase to mix in."""

    def assertRanCleanly(self, result, codes=None, msg=None):
        """``result`` (exit code, stdout, stderr) is that of a run that
        ended as the tool ends, a fault included: no traceback on either
        stream, and with ``codes`` (an exit code or several) one of them.
        Returns ``result``.
        """
        rc, out, err = result
        where = '%s\n%s' % (msg, err) if msg else err
        self.assertNotIn('Traceback', (out or '') + (err or ''), where)
        if codes is not None:
            self.assertIn(rc, (codes,) if isinstance(codes, int) else codes,
                          where)
        return result


def script(name, bin_dir=None):
    """The console script ``name`` in ``bin_dir``; by default this
    interpreter's environment's (found on PATH when the interpreter has
    none beside it).
    """
    if bin_dir is not None:
        return os.path.join(bin_dir, name)
    own = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(own):
        return own
    return shutil.which(name) or own


def environment(env=None, **variables):
    """``env`` (default: this process's environment) as a run gets it:
    no ``OS_*`` variable but the test runner's, this tree imported
    first, and ``variables`` set (None: unset).
    """
    env = programs.this_tree_first({
        k: v for k, v in (os.environ if env is None else env).items()
        if not k.startswith('OS_') or k in RUNNER_VARIABLES})
    return _set(env, variables)


def _set(env, variables):
    """``env`` with ``variables`` set (None: unset)."""
    return {k: v for k, v in dict(env, **variables).items()
            if v is not None}


def outside(env=None):
    """``env`` (default: environment()) for a console script installed
    elsewhere (the wheel's virtualenv, a release's): nothing that would
    make it import this tree or the test virtualenv's packages, and
    writing bytecode as an installed package's modules have it.
    """
    return {k: v for k, v in (environment() if env is None else env).items()
            if k not in ('PYTHONPATH', 'VIRTUAL_ENV',
                         'PYTHONDONTWRITEBYTECODE')}


def unset_openstack_environment(test):
    """The same for ``test``'s own process, until the test ends."""
    for name in [k for k in os.environ if k.startswith('OS_') and
                 k not in RUNNER_VARIABLES]:
        test.useFixture(fixtures.EnvironmentVariable(name))


def manage_argv(*argv, conf_file=None, bin_dir=None):
    """``nova-orphans-manage [--config-file CONF_FILE] ARGV``."""
    config = ['--config-file', conf_file] if conf_file else []
    return [script(MANAGE, bin_dir)] + config + list(argv)


def openstack_argv(*argv, cloud=None, bin_dir=None):
    """``openstack [--os-cloud CLOUD] ARGV``."""
    chosen = ['--os-cloud', cloud] if cloud else []
    return [script(OPENSTACK, bin_dir)] + chosen + list(argv)


def own_script(path):
    """``MANAGE`` or ``OPENSTACK`` if ``path`` is this environment's
    console script of that name (the one ``script`` gives), else None.
    """
    name = os.path.basename(path)
    if name not in (MANAGE, OPENSTACK):
        return None
    found = shutil.which(path)
    if found is None or (os.path.realpath(found) !=
                         os.path.realpath(script(name))):
        return None
    return name


def start(argv, env=None, cwd=None):
    """``argv`` (a console script and its arguments) running as a
    process, its standard output and error piped (text), nothing on its
    input: a test can signal or kill it at any instant.
    """
    return subprocess.Popen(
        argv, env=environment() if env is None else env, cwd=cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def _waited(argv, proc, timeout):
    """The Result of ``proc`` (started from ``argv``) once it ended; one
    that has not ended in ``timeout`` seconds is killed and fails the
    test.
    """
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError('%s did not end in %ss:\n%s' % (
            ' '.join(argv), timeout, err))
    return Result(proc.returncode, out, err)


def run(argv, env=None, cwd=None, timeout=TIMEOUT, process=False):
    """The Result of ``argv`` run to its end: in this process (``here``)
    when it is this environment's console script, unless ``process``;
    otherwise as a process, which fails the test if it has not ended in
    ``timeout`` seconds.
    """
    env = environment() if env is None else env
    if not process and own_script(argv[0]):
        return here(argv, env, cwd=cwd)
    return _waited(argv, start(argv, env=env, cwd=cwd), timeout)


def run_all(commands, cwd=None, timeout=180):
    """[Result] of ``commands`` (each an argv, or an (argv, environment)
    pair), in their order: those of this environment's console scripts
    one after the other in this process (signal handlers can only be set
    on its main thread), the others as processes at once, meanwhile.
    """
    commands = [c if isinstance(c, tuple) else (c, environment())
                for c in commands]
    procs = {i: start(argv, env=env, cwd=cwd)
             for i, (argv, env) in enumerate(commands)
             if not own_script(argv[0])}
    results = [here(argv, env, cwd=cwd) if i not in procs else None
               for i, (argv, env) in enumerate(commands)]
    for i, proc in procs.items():
        results[i] = _waited(commands[i][0], proc, timeout)
    return results


def manage(*argv, conf_file=None, env=None, timeout=TIMEOUT):
    """The Result of ``nova-orphans-manage`` (see manage_argv) run."""
    return run(manage_argv(*argv, conf_file=conf_file), env=env,
               timeout=timeout)


def openstack(*argv, cloud=None, env=None, timeout=TIMEOUT):
    """The Result of ``openstack`` (see openstack_argv) run."""
    return run(openstack_argv(*argv, cloud=cloud), env=env, timeout=timeout)


# In the test's own process ---------------------------------------------

_entry_points = {}


def _entry_point(name):
    """The function the console script ``name`` calls."""
    if name not in _entry_points:
        entry, = importlib.metadata.entry_points(group='console_scripts',
                                                 name=name)
        _entry_points[name] = entry.load()
    return _entry_points[name]


def _pipe():
    """A text stream as a process's on a pipe: UTF-8, with a buffer."""
    return io.TextIOWrapper(io.BytesIO(), encoding='utf-8',
                            errors='backslashreplace', write_through=True)


def _read(stream):
    """What a pipe's reader gets of ``stream`` (subprocess's text mode:
    universal newlines).
    """
    stream.flush()
    return io.TextIOWrapper(io.BytesIO(stream.buffer.getvalue()),
                            encoding='utf-8').read()


def _set_environ(env):
    """os.environ becomes ``env``, variable by variable: the process's
    other threads never see it empty.
    """
    for name in [name for name in os.environ if name not in env]:
        del os.environ[name]
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def _set_handlers(handlers):
    for signum, handler in handlers.items():
        if signal.getsignal(signum) is not handler:
            signal.signal(signum, handler)


@contextlib.contextmanager
def _logging_kept():
    """Logging as it was before the block: the handlers, levels and
    filters of every logger (a run sets up its own and may disable
    others), the handlers the block added closed.
    """
    manager = logging.Logger.manager
    loggers = [logging.getLogger()] + [
        logger for logger in manager.loggerDict.values()
        if isinstance(logger, logging.Logger)]
    saved = [(logger, logger.level, list(logger.handlers),
              list(logger.filters), logger.propagate, logger.disabled)
             for logger in loggers]
    disable = manager.disable
    try:
        yield
    finally:
        before = {h for _l, _v, handlers, *_r in saved for h in handlers}
        added = set()
        known = {id(logger) for logger, *_r in saved}
        # The levels are assigned, not set with setLevel(): each
        # setLevel() empties every logger's cache of effective levels,
        # and there are thousands of loggers. logging.disable() below
        # empties them once.
        for logger in manager.loggerDict.values():
            if isinstance(logger, logging.Logger) and (
                    id(logger) not in known) and logger.level:
                # A level the run gave a logger it made (oslo.log's
                # default_log_levels).
                logger.level = logging.NOTSET
        for logger, level, handlers, filters, propagate, disabled in saved:
            added.update(h for h in logger.handlers if h not in before)
            if logger.handlers != handlers:
                logger.handlers[:] = handlers
            logger.filters[:] = filters
            logger.propagate = propagate
            logger.disabled = disabled
            logger.level = level
        logging.disable(disable)
        for handler in added - before:
            handler.close()


def _no_freeze():
    pass


@contextlib.contextmanager
def _as_process(argv, env, cwd, stdin, stdout, stderr, own=True):
    """This process as the console script's process would be for the
    block: ``argv``, the environment ``env`` (whole), ``cwd``, the
    standard streams (with ``own``, also the process's own:
    ``sys.__stdout__``...); all of it, and what the block changes in the
    process, put back after.
    """
    saved_environ = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_argv = sys.argv
    streams = ('stdin', 'stdout', 'stderr', '__stdin__', '__stdout__',
               '__stderr__')
    saved_streams = {name: getattr(sys, name) for name in streams}
    handlers = {s: signal.getsignal(s) for s in signal.valid_signals()}
    handlers = {s: h for s, h in handlers.items() if h is not None}
    hooks = (sys.excepthook, threading.excepthook, warnings.showwarning,
             copy.copy(warnings.filters))
    collector = (gc.get_threshold(), gc.isenabled(), gc.freeze)
    saved_locale = locale.setlocale(locale.LC_ALL)
    saved_tempdir = tempfile.tempdir
    try:
        with _logging_kept():
            _set_environ(env)
            if env.get('TMPDIR'):
                tempfile.tempdir = env['TMPDIR']
            if cwd is not None:
                os.chdir(cwd)
            sys.argv = list(argv)
            # What is alive here is the test runner's, not the run's to
            # freeze (memory.freeze).
            gc.freeze = _no_freeze
            sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
            if own:
                sys.__stdin__, sys.__stdout__, sys.__stderr__ = (
                    stdin, stdout, stderr)
            try:
                yield
            finally:
                for name, stream in saved_streams.items():
                    setattr(sys, name, stream)
                _set_handlers(handlers)
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        _set_environ(saved_environ)
        tempfile.tempdir = saved_tempdir
        (sys.excepthook, threading.excepthook, warnings.showwarning,
         warnings.filters[:]) = hooks
        threshold, enabled, gc.freeze = collector
        gc.set_threshold(*threshold)
        (gc.enable if enabled else gc.disable)()
        locale.setlocale(locale.LC_ALL, saved_locale)


def _fresh_clients():
    """osc-lib's ClientCache keeps the first client it makes for the
    whole process (as osc-placement's functional tests also find): one
    for each run instead.
    """
    return fixtures.MonkeyPatch(
        'osc_lib.clientmanager.ClientCache.__get__',
        lambda cache, instance, owner: cache.factory(instance))


def _called(main):
    """What the console script's ``sys.exit(main())`` makes the exit
    code, or the traceback and code of an exception that escapes.
    """
    try:
        code = main()
    except SystemExit as e:
        code = e.code
    except KeyboardInterrupt:
        traceback.print_exc()
        return -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        return 1
    if code is None:
        return 0
    if not isinstance(code, int):
        print(code, file=sys.stderr)
        return 1
    return code & 0xff


def here(argv, env=None, cwd=None, stdin=None, stdout=None, stderr=None):
    """The Result of ``argv`` (this environment's console script and its
    arguments) run in this process, on its main thread (see
    _as_process), as the console script calls its entry point.

    ``stdin`` (default: empty), ``stdout`` and ``stderr`` (default: a
    pipe each, read into the Result) are the run's standard streams:
    a terminal's, say.
    """
    name = own_script(argv[0])
    if name is None:
        raise ValueError('%s is not this environment\'s %s or %s' % (
            argv[0], MANAGE, OPENSTACK))
    main = _entry_point(name)
    out = _pipe() if stdout is None else stdout
    err = _pipe() if stderr is None else stderr
    with contextlib.ExitStack() as stack:
        if name == OPENSTACK:
            stack.enter_context(_fresh_clients())
            # cliff names the program from sys.argv[0] as it is imported.
            program = os.path.basename(argv[0])
            stack.enter_context(fixtures.MonkeyPatch('cliff.app.App.NAME',
                                                     program))
            stack.enter_context(fixtures.MonkeyPatch(
                'cliff.app.App.LOG', logging.getLogger(program)))
        stack.enter_context(_as_process(
            argv, environment() if env is None else env, cwd,
            io.StringIO() if stdin is None else stdin, out, err))
        code = _called(main)
    return Result(code, _read(out) if stdout is None else None,
                  _read(err) if stderr is None else None)


def manage_main(argv, main=None):
    """The Result of ``nova_orphans.cmd.manage.main(argv)`` (or of
    ``main``, a stand-in), called as a program that embeds the tool
    calls it, with the standard streams captured.
    """
    if main is None:
        from nova_orphans.cmd import manage
        main = manage.main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return Result(rc, out.getvalue(), err.getvalue())


def openstack_shell(argv, variables):
    """The Result of python-openstackclient's shell run here, as a
    program that embeds it does (``OpenStackShell().run(argv)``), with
    the environment's ``variables`` set (None: unset) for the run: each
    with fresh osc-lib clients, leaving the process as it found it.
    """
    from openstackclient import shell

    env = _set(os.environ, variables)
    out, err = io.StringIO(), io.StringIO()
    with _fresh_clients(), _as_process(sys.argv, env, None, sys.stdin,
                                       out, err, own=False):
        try:
            rc = shell.OpenStackShell().run(list(argv))
        except SystemExit as e:
            rc = e.code
    return Result(rc, out.getvalue(), err.getvalue())
