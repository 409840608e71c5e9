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
"""What a run found or did, and the exit code that says so."""

from nova_orphans import exit_codes
from nova_orphans import outcomes


class Listing:
    """An audit's findings (``findings``) and its snapshot.

    ``rows``: the findings to show (by default all of them). The
    provider commands' listing also keeps the allocation findings of
    the trees in scope (``allocations``): the repairs need them.
    """

    def __init__(self, findings, snapshot, allocations=None, rows=None):
        self.findings = findings
        self.snapshot = snapshot
        self.allocations = allocations
        self.rows = findings if rows is None else rows

    @property
    def unreadable_cells(self):
        """The cells not read, each with ``label`` and ``error``."""
        return self.snapshot.nova.unreadable_cells

    @property
    def unread(self):
        """What else could not be read, each a sentence saying why."""
        return self.snapshot.nova.unread

    @property
    def unreadable_services(self):
        """Other services' databases the rules needed and could not
        read (Zun's), each with ``label`` and ``error``.
        """
        return self.snapshot.nova.unreadable_services

    @property
    def incomplete(self):
        return bool(self.unreadable_cells or self.unread
                    or self.unreadable_services)

    @property
    def orphans(self):
        return [f for f in self.findings if f.is_orphan]

    @property
    def exit_code(self):
        return exit_codes.of_listing(
            any(f.is_orphan for f in self.findings), self.incomplete)


class Repair:
    """The rows of a clean or restore and their outcomes.

    ``journal_path``: the journal, once it holds an entry (None for a
    dry run or a run that wrote nothing); ``signum``: the signal that
    came once the writes had begun; ``conflicts``: consumers another
    writer changed between the read and the write;
    ``allocation_outcomes``: the outcomes of the allocation repairs a
    provider clean made first; ``cloud``: what names the cloud the run
    reached, as its journal records it (Sources.cloud), for the command
    that undoes it; ``unended``: why a clean's journal has no end record
    (it could not be written), or None; ``unproven``: a restore's lines
    saying its journal cannot prove it is whole (no end record), [] when
    it can.
    """

    def __init__(self, rows, outcomes, listing=None, journal_path=None,
                 signum=None, conflicts=0, allocation_outcomes=(),
                 restoring=False, cloud=None, unended=None, unproven=()):
        self.rows = rows
        self.outcomes = outcomes
        self.listing = listing
        self.journal_path = journal_path
        self.signum = signum
        self.conflicts = conflicts
        self.allocation_outcomes = list(allocation_outcomes)
        self.restoring = restoring
        self.cloud = cloud or {}
        self.unended = unended
        self.unproven = list(unproven)

    @property
    def unreadable_cells(self):
        return self.listing.unreadable_cells if self.listing else []

    @property
    def unread(self):
        return self.listing.unread if self.listing else []

    @property
    def unreadable_services(self):
        return self.listing.unreadable_services if self.listing else []

    @property
    def incomplete(self):
        return bool(self.listing and self.listing.incomplete)

    @property
    def done(self):
        return outcomes.count(self.outcomes, outcomes.DONE)

    @property
    def failed(self):
        return outcomes.count(self.outcomes, outcomes.FAILED)

    @property
    def not_attempted(self):
        return outcomes.count(self.outcomes, cause=outcomes.INTERRUPTED)

    @property
    def exit_code(self):
        """130/143 if a signal came once writing had begun, whatever was
        left undone: the operator asked the run to stop, and a script
        must not read it as finished. 9 when the credentials were
        refused a write and nothing was done. 11 for a restore whose
        journal cannot prove it is whole, unless an entry failed (1).
        Else the rows' (outcomes.exit_code: 4 only when no orphan found
        is left; one skipped for --max-count, --dry-run or any other
        reason leaves 3), made 5 or 2 by what could not be read, but 1
        and 12.
        """
        if self.signum is not None:
            return exit_codes.of_signal(self.signum)
        code = outcomes.exit_code(self.outcomes)
        if code == exit_codes.CREDENTIALS_REFUSED:
            # Nothing was written: as a run refused its first read.
            return code
        if self.unproven and code != exit_codes.REPAIR_FAILED:
            # Never 0, 3 or 4 from a journal that cannot prove it holds
            # every change its runs made.
            return exit_codes.JOURNAL_UNPROVEN
        if code in (exit_codes.REPAIR_FAILED, exit_codes.JOURNAL_BUSY) or (
                not self.incomplete):
            return code
        if code in (exit_codes.ORPHANS_FOUND, exit_codes.REPAIRED):
            return exit_codes.INCOMPLETE_WITH_ORPHANS
        return exit_codes.INCOMPLETE
