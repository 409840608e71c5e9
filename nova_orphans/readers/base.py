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
"""What the audit (app/audit.py) may ask of a reader beyond reading.

The readers differ in what they can do (the API against fast mode, the
compute API against nova's databases). Each says so here, in its type,
with the answer for a reader that cannot: the audit asks these, never
whether a reader happens to have an attribute.
"""

import datetime


def recent_since(grace_period):
    """NovaSnapshot.recent_since for a read now: nova's changes at or
    after it are too recent to act on (see rules.unsettled); None when
    ``grace_period`` (a timedelta) is zero.

    Naive UTC, as nova stores its timestamps.
    """
    if not grace_period:
        return None
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return now - grace_period


class PlacementReader:
    """Placement's side: providers(), allocations(), consumers() and
    consumer() (see placement_api.PlacementAPIReader).
    """

    # What a log calls the source this reader reads.
    label = 'placement'

    # allocations() of every provider may run in a thread while nova is
    # read (Audit._read_both), because the reader then waits on
    # something else than the run's own Python: placement's workers, a
    # second process.
    reads_in_background = False

    # consumer_records() reads placement's consumer records in bulk, so
    # the audit need not read a record per consumer through consumers().
    reads_records_in_bulk = False

    # use_kept() makes allocations() take the providers whose generation
    # has not moved from earlier scans' reads (readers/kept_reads.py):
    # a reader of placement's API. One of its database reads everything
    # at once.
    keeps_reads = False
    # The providers whose allocations came from kept reads, not read in
    # this run: they may show allocations removed since (see
    # read_again).
    kept_providers = frozenset()

    def consumer_records(self, consumers=None):
        raise NotImplementedError()

    def use_kept(self, kept):
        """Reuse and keep reads through ``kept``; ignored by a reader
        that keeps none.
        """

    def read_again(self, provider_uuids):
        """The allocations on these providers (of kept_providers), read
        now.
        """
        raise NotImplementedError()

    def keep(self):
        """Keep what this run read for the next (see use_kept)."""

    def fully_reserved(self, provider_uuids):
        """{uuid: its classes} of these providers whose every inventory
        is reserved whole (PlacementSnapshot.fully_reserved); a reader
        that cannot tell says none.
        """
        return {}


class NovaReader:
    """nova's side: read(), resolve(), read_activity() and read_claims()
    (see nova_db.NovaDBReader).
    """

    # What a log calls the source this reader reads.
    label = 'nova'

    def read_claims(self, snapshot, instance_uuids):
        """Add these live instances' claims (model.Claims) to the
        snapshot; a reader that cannot leaves them unread, which
        rules.leaked_port_allocation takes as nothing proven.
        """

    def read_internal_hints(self, snapshot, instance_uuids):
        """Add the internal scheduler hints (``_nova*``) these live
        instances' request specs carry (NovaSnapshot.internal_hints); a
        reader that cannot read request specs leaves them unread.
        """

    def prove_host(self, nova, providers, host):
        """Add the compute nodes of ``host`` that nova deleted, where
        nova shows no deleted ones (provider_proof): ``--host`` of a
        retired host finds its trees, as nova's databases find them.
        """

    def prove_deleted_nodes(self, nova, providers, allocations, consumers):
        """Add the compute nodes that these consumers' allocations prove
        deleted, where nova shows no deleted ones (provider_proof).

        A reader that shows them (nova's databases) has nothing to add.
        """
