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
"""What became of each row of a clean, a restore or a journal prune.

An outcome is data: its ``kind`` (done, skipped, failed), the
translated ``detail`` a person reads, the untranslated ``cause`` code
reads (interrupted, dry run, ...), whether the row's orphan is
``resolved`` and the exit code it alone would give. Code asks those;
it never parses the text back, which a loaded translation changes.
``str(outcome)`` is the text the rows show (``skipped: dry run``), the
``outcome`` value of the JSON rows.
"""

from nova_orphans import exit_codes
from nova_orphans.i18n import _

DONE = 'done'
SKIPPED = 'skipped'
FAILED = 'failed'
KINDS = (DONE, SKIPPED, FAILED)

# Causes code asks about.
INTERRUPTED = 'interrupted'
DRY_RUN = 'dry_run'
# The service refused the write for the credentials (401, 403): its
# policy does not grant the run's roles what the repair needs.
CREDENTIALS_REFUSED = 'credentials_refused'
# Failed, not journaled: another run held the journal (exit 12).
JOURNAL_BUSY = 'journal_busy'
# The causes of a failure that its error's exit code names.
_CAUSES = {exit_codes.CREDENTIALS_REFUSED: CREDENTIALS_REFUSED,
           exit_codes.JOURNAL_BUSY: JOURNAL_BUSY}


class Outcome:
    """One row's outcome (see the module docstring).

    ``resolved``: no orphan is left of the row (repaired here, removed
    or made moot by another writer, already as it should be); a row
    skipped for anything else (--max-count, --dry-run, nested
    resources, now another orphan) leaves its orphan.
    """

    __slots__ = ('kind', 'detail', 'cause', 'resolved')

    def __init__(self, kind, detail=None, cause=None, resolved=None):
        if kind not in KINDS:
            raise ValueError(kind)
        self.kind = kind
        self.detail = detail
        self.cause = cause
        self.resolved = kind == DONE if resolved is None else resolved

    @property
    def exit_code(self):
        """The code of a run of this one row (see exit_code below)."""
        if self.kind == FAILED:
            return (exit_codes.JOURNAL_BUSY if self.cause == JOURNAL_BUSY
                    else exit_codes.REPAIR_FAILED)
        if self.kind == DONE:
            return exit_codes.REPAIRED
        return exit_codes.SUCCESS if self.resolved else (
            exit_codes.ORPHANS_FOUND)

    def with_detail(self, detail):
        """The same outcome, told in other words (a numbered error)."""
        return Outcome(self.kind, detail, self.cause, self.resolved)

    def __str__(self):
        return (self.kind if self.detail is None
                else '%s: %s' % (self.kind, self.detail))

    def __repr__(self):
        return 'Outcome(%r)' % str(self)

    def _key(self):
        return (self.kind, self.detail, self.cause, self.resolved)

    def __eq__(self, other):
        return isinstance(other, Outcome) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())


DONE_OUTCOME = Outcome(DONE)


def done():
    return DONE_OUTCOME


def skipped(detail, cause=None, resolved=False):
    return Outcome(SKIPPED, detail, cause, resolved)


def failed(detail, cause=None):
    return Outcome(FAILED, detail, cause)


def failed_by(error, detail=None):
    """The outcome of a row ``error`` failed, told in its words (or
    ``detail``): refused credentials, or a journal another run holds
    (whose code, 12, says to run again, not to look), when the error's
    code says so.
    """
    return failed(detail or str(error),
                  _CAUSES.get(getattr(error, 'exit_code', None)))


def may_have_changed(outcomes):
    """Whether a row of ``outcomes`` may have changed the cloud: one
    done, or one failed for anything but refused credentials (a write
    whose answer was lost may have been applied). A run of none has
    nothing to undo.
    """
    return any(o.kind == DONE or
               (o.kind == FAILED and o.cause != CREDENTIALS_REFUSED)
               for o in outcomes)


def dry_run():
    """The outcome of every row of a --dry-run."""
    return skipped(_('dry run'), DRY_RUN)


def interrupted():
    """The outcome of a row a signal stopped before its write was sent."""
    return skipped(_('interrupted'), INTERRUPTED)


def count(outcomes, kind=None, cause=None):
    """How many of ``outcomes`` are of ``kind`` (and ``cause``)."""
    return sum(1 for o in outcomes
               if (kind is None or o.kind == kind) and
               (cause is None or o.cause == cause))


def exit_code(outcomes):
    """A run's code from its rows' outcomes: 9 if the credentials were
    refused a write and nothing was done (as refused credentials end a
    run that could not read), 1 if one failed, 12 if one could not be
    journaled (another run held the journal), 3 if an orphan is left
    (4 only when none is), 4 if something was done, else 0 (nothing to
    do, or nothing left).
    """
    outcomes = list(outcomes)
    if (any(o.cause == CREDENTIALS_REFUSED for o in outcomes) and
            not any(o.kind == DONE for o in outcomes)):
        return exit_codes.CREDENTIALS_REFUSED
    codes = {o.exit_code for o in outcomes}
    for code in (exit_codes.REPAIR_FAILED, exit_codes.JOURNAL_BUSY,
                 exit_codes.ORPHANS_FOUND, exit_codes.REPAIRED):
        if code in codes:
            return code
    return exit_codes.SUCCESS
