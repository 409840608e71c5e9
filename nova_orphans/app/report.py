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
"""What a command has to say, for a front end to render and nothing more.

A ``Report`` holds a run's rows, the lines that close a table (its
summary, its "Outcomes:" and "Next:" lines), the lines said on stderr
after the rows (failures, the journal, the command that undoes the run,
what a signal stopped, retries), its warnings and its exit code. A
line that names a command to run holds it as a ``CommandLine``
(category, action, arguments): each front end writes it as its users
type it, ``nova-orphans-manage --config-file ... allocations clean ...``
or ``openstack --os-cloud ... allocation orphan clean ...``.
"""

from nova_orphans import output


class CommandLine:
    """A command to run next, whatever the front end: ``category``
    and ``action`` as nova-orphans-manage names them, and the arguments.
    """

    def __init__(self, category, action, *argv):
        self.category = category
        self.action = action
        self.argv = list(argv)


class Line:
    """One line of a report: ``text``, with ``%(command)s`` where it
    names ``command`` (a CommandLine).
    """

    def __init__(self, text, command=None):
        self.text = text
        self.command = command

    def render(self, command_line):
        """The line, its command written by ``command_line(cmd)``."""
        if self.command is None:
            return self.text
        return self.text % {'command': command_line(self.command)}


def lines(texts):
    return [t if isinstance(t, Line) else Line(t) for t in texts]


class Report:
    """A run, for a front end to render (see the module docstring).

    ``rows``: findings (``findings`` True; ``keys`` None: output.columns
    picks them) or dicts of other records with ``keys``. ``summary``
    (lines that close a table, on stdout) is made only when asked for:
    a long JSON list never builds it. ``notes``: lines for stderr after
    the rows, in every format. ``metrics``: the exposition text, for
    ``--format prometheus``. ``outcomes``: the rows' outcomes
    as shown (numbered failures), for the ``outcome`` column.
    """

    def __init__(self, exit_code, rows=(), keys=None, findings=True,
                 summary=None, notes=(), metrics=None, outcomes=None,
                 warnings=()):
        self.exit_code = exit_code
        self.rows = rows
        self.keys = keys
        self.findings = findings
        self._summary = summary
        self.notes = lines(notes)
        self.metrics = metrics
        self.outcomes = outcomes
        self.warnings = list(warnings)

    @property
    def summary(self):
        if callable(self._summary):
            self._summary = self._summary()
        return lines(self._summary or ())

    def dicts(self):
        """The rows as dicts, the outcome column included."""
        if not self.findings:
            return list(self.rows)
        return output.rows_as_dicts(self.rows, self.outcomes)

    def iter_dicts(self):
        """The rows as dicts, one at a time (a streamed JSON list)."""
        if not self.findings or self.outcomes is not None:
            return iter(self.dicts())
        return output.iter_dicts(self.rows)
