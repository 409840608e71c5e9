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
"""How both front ends end a run, written once.

``nova-orphans-manage`` and ``openstack`` end a run the same way (the
tests compare their output and exit codes): with its report, the lines
that close it and its exit code, the signal's if one came as it ended;
stopped by a signal before any write, with one line and 130 or 143; on
a known fault, with its one line and its code; on a bug, with one line
and 255 (the traceback goes to the log). Each front end says only where
its lines go (its streams), how it renders rows and where its logs go.

It prints, so it is no part of the application layer (nova_orphans.app,
which returns data); it sits between that layer and the front ends.
"""

import logging

from nova_orphans import db_utils
from nova_orphans import exception
from nova_orphans import exit_codes
from nova_orphans.i18n import _
from nova_orphans import interrupt
from nova_orphans import output

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


def close_report(report, table, command_line, out, err, max_width=None):
    """The lines that close a printed report: those under its table on
    ``out``, the others on ``err`` (see output.closing_lines).
    ``max_width``: the table's --max-width (None: not given).
    """
    under, after = output.closing_lines(
        report, table, command_line, output.line_width(out, max_width),
        output.line_width(err))
    for line in under:
        say(out, line)
    for line in after:
        say(err, line)


def run(body, stop, err, progress=None, bug_level=logging.DEBUG,
        cleanup=None):
    """The exit code of a run: ``body()`` prints the report and returns
    its exit code, with SIGINT and SIGTERM taken by ``stop`` (an
    interrupt.Stop) meanwhile.

    ``err``: the stream of the run's other lines; ``progress``: its
    Progress, ended on a line of its own when a signal stops the run;
    ``bug_level``: the level a bug's traceback is logged at (where the
    front end's log goes, never on the terminal); ``cleanup()``: called
    last, whatever happened.
    """
    try:
        try:
            with stop.handled():
                code = body()
        except interrupt.Interrupted as e:
            if progress is not None:
                progress.abandon()
            say(err, interrupt.nothing_changed(e.signum))
            return exit_codes.of_signal(e.signum)
        except exception.NovaOrphansException as e:
            LOG.debug('Command failed', exc_info=True)
            return fault(e, err)
        except Exception as e:
            LOG.log(bug_level, 'Unexpected error', exc_info=True)
            return fault(unexpected(e), err)
        if stop.signum is not None and code != exit_codes.of_signal(
                stop.signum):
            # The report is out, whole; the exit code says the signal.
            say(err, interrupt.ended(stop.signum))
            code = exit_codes.of_signal(stop.signum)
        return code
    finally:
        if cleanup is not None:
            cleanup()
