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
through here, in one of two ways:

* As a process, the console script (of this interpreter's environment,
  or of another one's ``bin_dir``: the wheel's, a release's):
  ``manage`` and ``openstack`` run it to its end, a warm run
  (nova_orphans.tests.warm) unless ``cold``; ``run_all`` runs several
  at once, as reading commands can be; ``start`` gives the process
  itself, for a test that signals or kills it. Each runs in
  ``environment()``: the test's, without the ``OS_*`` variables of the
  shell the tests were started from (a cloud's credentials), importing
  this very tree first.
* In the test's own process, for the tests whose cloud lives there
  (nova's harness in the scenario tests) or that only need the
  command's result: ``manage_main`` and ``openstack_shell`` call the
  entry points with the standard streams captured.

Only unit tests run neither: they start no process, and a command's
result they need they get from the application layer.
"""

import collections
import concurrent.futures
import contextlib
import copy
import io
import logging
import os
import shutil
import subprocess
import sys
import warnings

import fixtures

from nova_orphans.tests import programs
from nova_orphans.tests import warm

MANAGE = 'nova-orphans-manage'
OPENSTACK = 'openstack'
# The test runner's own settings; every other OS_* variable (a cloud's
# credentials in the developer's shell) is unset for the test.
RUNNER_VARIABLES = ('OS_STDOUT_CAPTURE', 'OS_STDERR_CAPTURE',
                    'OS_TEST_TIMEOUT', 'OS_LOG_CAPTURE')
# How long a run may take before the test fails, saying so.
TIMEOUT = 120

Result = collections.namedtuple('Result', 'returncode stdout stderr')


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
    env = {k: v for k, v in (os.environ if env is None else env).items()
           if not k.startswith('OS_') or k in RUNNER_VARIABLES}
    programs.this_tree_first(env)
    for name, value in variables.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


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


def start(argv, env=None, cwd=None, warm_run=False):
    """``argv`` (a console script and its arguments) running, its
    standard output and error piped (text), nothing on its input: the
    process itself, which a test can signal or kill at any instant, or
    with ``warm_run`` a warm run.
    """
    popen = warm.Popen if warm_run else subprocess.Popen
    return popen(argv, env=environment() if env is None else env, cwd=cwd,
                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, text=True)


def run(argv, env=None, cwd=None, timeout=TIMEOUT, cold=False):
    """The Result of ``argv`` run to its end: a warm run unless ``cold``
    (any other program than this environment's console scripts runs as
    it is). A run that has not ended in ``timeout`` seconds is killed
    and fails the test.
    """
    proc = start(argv, env=env, cwd=cwd, warm_run=not cold)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError('%s did not end in %ss:\n%s' % (
            ' '.join(argv), timeout, err))
    return Result(proc.returncode, out, err)


def run_all(commands, cwd=None, timeout=180):
    """[Result] of ``commands`` (each an argv, or an (argv, environment)
    pair), run at once, in their order.
    """
    def one(command):
        argv, env = command if isinstance(command, tuple) else (command,
                                                                None)
        return run(argv, env=env, cwd=cwd, timeout=timeout)
    with concurrent.futures.ThreadPoolExecutor(len(commands)) as pool:
        return list(pool.map(one, commands))


def manage(*argv, conf_file=None, env=None, cwd=None, timeout=TIMEOUT,
           bin_dir=None):
    """The Result of ``nova-orphans-manage`` (see manage_argv) run."""
    return run(manage_argv(*argv, conf_file=conf_file, bin_dir=bin_dir),
               env=env, cwd=cwd, timeout=timeout)


def openstack(*argv, cloud=None, env=None, cwd=None, timeout=TIMEOUT,
              bin_dir=None):
    """The Result of ``openstack`` (see openstack_argv) run."""
    return run(openstack_argv(*argv, cloud=cloud, bin_dir=bin_dir),
               env=env, cwd=cwd, timeout=timeout)


# In the test's own process ---------------------------------------------

def manage_main(argv, main=None):
    """The Result of ``nova_orphans.cmd.manage.main(argv)`` (or of
    ``main``, a stand-in), called here with the standard streams
    captured: exactly as the console script calls it.
    """
    if main is None:
        from nova_orphans.cmd import manage
        main = manage.main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return Result(rc, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _variables(values):
    """The variables set (None: unset) for the block; those already so
    are not touched.
    """
    with contextlib.ExitStack() as stack:
        for name, value in values.items():
            if os.environ.get(name) != value:
                stack.enter_context(fixtures.EnvironmentVariable(name, value))
        yield


def openstack_shell(argv, variables):
    """The Result of python-openstackclient's shell run here with
    ``argv``, the environment's ``variables`` set (None: unset) for the
    run.

    Each run gets fresh osc-lib client handles (osc-lib's ClientCache
    keeps the first for the process, as osc-placement's functional
    tests also find), and leaves logging and the warning filters as it
    found them (each run adds a root handler, sets DEBUG and changes
    the filters).
    """
    from openstackclient import shell

    root = logging.getLogger()
    saved = (list(root.handlers), root.level,
             copy.copy(warnings.filters),
             {name: logger.level for name, logger in
              logging.Logger.manager.loggerDict.items()
              if isinstance(logger, logging.Logger)})
    out, err = io.StringIO(), io.StringIO()
    try:
        with _variables(variables), \
                fixtures.MonkeyPatch(
                    'osc_lib.clientmanager.ClientCache.__get__',
                    lambda cache, instance, owner:
                    cache.factory(instance)), \
                fixtures.MonkeyPatch('sys.stdout', out), \
                fixtures.MonkeyPatch('sys.stderr', err):
            try:
                rc = shell.OpenStackShell().run(list(argv))
            except SystemExit as e:
                rc = e.code
    finally:
        handlers, level, filters, levels = saved
        root.handlers[:] = handlers
        root.setLevel(level)
        warnings.filters[:] = filters
        # Only the loggers osc changed: each setLevel() clears the
        # level cache of every logger, and there are thousands.
        for name, value in levels.items():
            logger = logging.getLogger(name)
            if logger.level != value:
                logger.setLevel(value)
    return Result(rc, out.getvalue(), err.getvalue())
