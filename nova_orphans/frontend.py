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
"""How both front ends run a command, written once.

``nova-orphans-manage`` and ``openstack`` run a command the same way
(the tests compare their output and exit codes), through a ``Run``: its
options resolved before anything is read, its report made by
``app.commands.run``, its rows rendered by output's formatters, then
the lines that close it and its exit code, the signal's if one came as
it ended; stopped by a signal before any write, with one line and 130
or 143; on a known fault, with its one line and its code; on a bug,
with one line and 255 (the traceback goes to the log). A front end says
only where its streams and its logs go, how it builds its sources and
how it writes a command line.

It prints, so it is no part of the application layer (nova_orphans.app,
which returns data); it sits between that layer and the front ends.
"""

import contextlib
import functools
import logging
import os
import signal
import sys

from nova_orphans.app import commands
from nova_orphans.app import options as opts
from nova_orphans import db_utils
from nova_orphans import exception
from nova_orphans import exit_codes
from nova_orphans.i18n import _
from nova_orphans import interrupt
from nova_orphans import memory
from nova_orphans import output
from nova_orphans import progress as progress_mod

LOG = logging.getLogger(__name__)


def usage_code(code):
    """The exit code of a command line argparse ended: its usage error
    (2) is the tool's invalid input, 127; help and --version are 0.
    """
    return exit_codes.INVALID_INPUT if code else exit_codes.SUCCESS


def say(stream, line):
    stream.write(line + '\n')


def fault(error, err):
    """A fault's one line on ``err`` (never a password); its exit code."""
    say(err, output.error_line(db_utils.safe_error(error), err))
    return exit_codes.of_error(error)


def unexpected(error):
    """A bug as the fault a run ends with: one line, exit code 255."""
    return exception.NovaOrphansException(
        _('Unexpected error: %(error)s') % {
            'error': db_utils.safe_error(error)})


class Stream:
    """A run's stream, whose reader may go (``| head -1``): what is
    written once it has gone is dropped, ``broken`` says so, and the run
    goes on to its own exit code, its lines on the other stream (the
    journal, the command that undoes it) still said.
    """

    def __init__(self, stream):
        self.stream = stream
        self.broken = False

    def _do(self, method, *args):
        if not self.broken:
            try:
                method(*args)
            except BrokenPipeError:
                self.broken = True

    def write(self, text):
        self._do(self.stream.write, text)

    def flush(self):
        self._do(self.stream.flush)

    def __getattr__(self, name):
        return getattr(self.stream, name)


class Run:
    """One run of ``command`` (an app.commands.Command) by a front end.

    ``given``: the command line's values ({dest: value}, the format's
    included); ``sources(values)``: the run's app.sources.Sources;
    ``out``, ``err``: its streams; ``config()``: nova.conf's values of
    the options' defaults (None: the options' own, as openstack has
    them); ``own_process``: the
    process is this run's alone (a console script's, not osc's
    interactive shell's nor an in-process caller's), so a signal before
    any write ends it at once and the collector need not walk again
    what the run has read (see memory).
    Progress and a signal's notice go to the process's stderr only:
    they are for a person at a terminal.
    """

    def __init__(self, command, given, sources, out, err, config=None,
                 own_process=False, state_path=None):
        self.command = command
        self.given = given
        self.format = given['format']
        self.table = self.format == output.TABLE
        self.out, self.err = Stream(out), Stream(err)
        self.own_process = own_process
        self.stop = interrupt.Stop(
            exit_now=interrupt.exit_now if own_process else None)
        own_stderr = err is sys.stderr
        self.progress = progress_mod.for_run(
            given.get('progress'), self.table, self.err) if own_stderr \
            else None
        self.notice = commands.STOPPING if own_stderr else None
        self._sources, self._config = sources, config
        self.state_path = state_path
        self.context = self.report = None
        if own_process:
            # What is imported lives until the process exits.
            memory.freeze()

    def say(self, line):
        say(self.err, line)

    def execute(self):
        """The command's report (``self.report``), its options resolved
        first: bad input is refused before anything is read.
        """
        values = opts.resolve(self.command.options, self.given,
                              self._config() if self._config else None)
        self.context = commands.Context(
            functools.partial(self._sources, values), self.stop, self.say,
            progress=self.progress, notice=self.notice,
            state_path=self.state_path)
        listing = self.command.action == 'list'
        with memory.paused() if listing else contextlib.nullcontext():
            self.report = commands.run(self.command, values, self.context)
            if self.own_process:
                memory.freeze()
        return self.report

    def listing(self, long=False, columns=None):
        """(columns, rows) of the report, for the format's formatter."""
        return output.listing(self.report, self.format, long, columns)

    def close_report(self, command_line, max_width=None):
        """The lines that close the printed report: those under its table
        on ``out``, the others on ``err`` (see output.closing_lines).
        ``command_line(cmd)`` writes a report.CommandLine as the front
        end's users type it; ``max_width``: the table's --max-width
        (None: not given).
        """
        under, after = output.closing_lines(
            self.report, self.table, command_line,
            output.line_width(self.out, max_width),
            output.line_width(self.err))
        for line in under:
            say(self.out, line)
        # All of stdout is out before the lines on stderr: a reader gone
        # is known now, not as the process exits.
        self.out.flush()
        for line in after:
            say(self.err, line)
        self.err.flush()

    def end(self, body, bug_level=logging.DEBUG):
        """The run's exit code: ``body()`` executes and prints the report
        and returns its exit code, with SIGINT and SIGTERM taken by
        ``stop`` meanwhile. ``bug_level``: the level a bug's traceback is
        logged at (where the front end's log goes, never on the
        terminal).
        """
        err = self.err
        try:
            try:
                with self.stop.handled():
                    code = body()
            except interrupt.Interrupted as e:
                if self.progress is not None:
                    self.progress.abandon()
                say(err, interrupt.nothing_changed(e.signum))
                return exit_codes.of_signal(e.signum)
            except exception.NovaOrphansException as e:
                LOG.debug('Command failed', exc_info=True)
                return fault(e, err)
            except Exception as e:
                LOG.log(bug_level, 'Unexpected error', exc_info=True)
                return fault(unexpected(e), err)
            signum = self.stop.signum
            if signum is not None and code != exit_codes.of_signal(signum):
                # The report is out, whole; the exit code says the signal.
                say(err, interrupt.ended(signum))
                code = exit_codes.of_signal(signum)
            return code
        finally:
            if self.context is not None:
                self.context.close()
            for stream in (self.out, self.err):
                if stream.broken and self.own_process:
                    # Else the interpreter's last flush fails (exit 120).
                    os.dup2(os.open(os.devnull, os.O_WRONLY),
                            stream.fileno())


def take_late_signals():
    """A signal after the run's report, while a console script's process
    ends: said, and the exit code says it too (130/143), never a
    traceback.
    """
    def ended(signum, frame):
        interrupt.say(interrupt.ended(signum))
        os._exit(exit_codes.of_signal(signum))
    for signum in interrupt.SIGNALS:
        signal.signal(signum, ended)
