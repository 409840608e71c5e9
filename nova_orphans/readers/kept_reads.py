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
"""Placement's allocations as earlier scans read them, kept for the next.

Placement bumps a provider's generation with every allocation written
on it (``PUT`` and ``POST /allocations``, an empty ``PUT`` included),
and with every inventory, trait and aggregate change; and
``GET /resource_providers`` lists every provider with its generation in
one request. So a provider's allocations read under a generation that
the listing still shows miss nothing written on it since. They may
still show an allocation removed since: ``DELETE /allocations/{c}``
bumps no generation, nor does a ``PUT`` on the provider a consumer
leaves for others. Nothing is therefore reported from a kept read
alone: the audit reads again every provider a finding rests on
(engine/resting.py, app/audit.py).

The generation kept with a provider's allocations is the one
``GET /resource_providers/{uuid}/allocations`` returned with them,
which placement reads before the allocations: what was read is at
least as new as it.

One file per cloud, beside the journals, named after the cloud's
identity (what a journal records, repair/restore.identity) and bound to
it: a file of another cloud, of another format, damaged, or older than
``[nova_orphans] full_read_interval`` since its last full read is not
used, and the scan reads every provider (a full read). Removing the
file only makes the next scan a full read. Its format:
``doc/source/admin/kept-reads.rst`` (The file).
"""

import hashlib
import json
import os
import time

from oslo_log import log as logging

from nova_orphans import metrics

LOG = logging.getLogger(__name__)

FORMAT = 'nova-orphans kept placement reads'
VERSION = 1
PREFIX = 'kept-reads-'


def _now():
    """Unix time: when a full read was, as the file records it."""
    return time.time()


def canonical(cloud):
    """The cloud identity as JSON keeps it (tuples as lists), so that a
    loaded one and a made one compare equal.
    """
    return json.loads(json.dumps(cloud, sort_keys=True))


def file_name(cloud):
    """The file of this cloud's kept reads: one per identity."""
    digest = hashlib.sha256(json.dumps(
        canonical(cloud), sort_keys=True).encode('utf-8')).hexdigest()
    return '%s%s.json' % (PREFIX, digest[:16])


class KeptReads:
    """One cloud's kept reads: {provider uuid: (generation, {consumer:
    resources})}, loaded from ``directory`` and saved there again.

    ``cloud``: the cloud's identity (repair/restore.identity);
    ``interval``: [nova_orphans] full_read_interval, in seconds (0: no
    kept read is used); ``full``: the run asks for a full read.

    ``why_full`` says why this scan reads everything (a sentence for the
    log), None when kept reads may be used.
    """

    def __init__(self, directory, cloud, interval, full=False):
        self.directory = directory
        self.cloud = canonical(cloud)
        self.path = os.path.join(directory, file_name(cloud))
        self.interval = interval
        # When this scan began: its full read's time, if it is one.
        self.started = _now()
        self.full_read_at = None
        self._entries = {}
        self.why_full = self._load(full)
        if self.why_full is not None:
            self._entries = {}
            self.full_read_at = None
        LOG.debug('Kept placement reads %(path)s: %(state)s', {
            'path': self.path,
            'state': 'in use, %d provider(s), last full read %s' % (
                len(self._entries), _when(self.full_read_at))
            if self.why_full is None else
            'a full read: %s' % self.why_full})

    def _load(self, full):
        """Why the kept reads cannot be used, or None (they are loaded)."""
        if full:
            return 'asked for (--full-read or --all)'
        if not self.interval:
            return 'full_read_interval is 0'
        try:
            with open(self.path, 'rb') as f:
                data = f.read()
        except FileNotFoundError:
            return 'no kept reads yet'
        except OSError as e:
            return 'the file cannot be read (%s)' % e.strerror
        head, newline, payload = data.partition(b'\n')
        try:
            header = json.loads(head)
        except ValueError:
            return 'the file is damaged (its header is no JSON)'
        if not isinstance(header, dict) or header.get('format') != FORMAT:
            return 'the file is not one of kept reads'
        if header.get('version') != VERSION:
            return 'the file is of another version (%s, not %s)' % (
                header.get('version'), VERSION)
        if header.get('cloud') != self.cloud:
            return 'the file is of another cloud'
        full_read_at = header.get('full_read_at')
        if not isinstance(full_read_at, (int, float)):
            return 'the file is damaged (no time of its full read)'
        age = _now() - full_read_at
        if not 0 <= age < self.interval:
            return 'the last full read was %s, not within ' \
                'full_read_interval (%d s)' % (_when(full_read_at),
                                               self.interval)
        if not newline or hashlib.sha256(payload).hexdigest() != header.get(
                'sha256'):
            return 'the file is damaged (its payload does not match its ' \
                'checksum)'
        try:
            self._entries = _entries(json.loads(payload))
        except (ValueError, TypeError, AttributeError) as e:
            return 'the file is damaged (%s)' % e
        self.full_read_at = full_read_at
        return None

    def reusable(self, listed):
        """{provider: {consumer: resources}} of the ``listed`` providers
        ({uuid: generation}: the listing's) whose generation is the one
        their allocations were kept under.
        """
        if self.why_full is not None:
            return {}
        found = {}
        for uuid, generation in listed.items():
            entry = self._entries.get(uuid)
            if entry is not None and entry[0] == generation:
                found[uuid] = entry[1]
        return found

    def put(self, uuid, generation, held):
        """Keep a provider's allocations as read now: ``held`` is
        {consumer: resources}, ``generation`` the one placement returned
        with them (None: the provider is gone).
        """
        if generation is None:
            self._entries.pop(uuid, None)
        else:
            self._entries[uuid] = (generation, held)

    def save(self, listed, full):
        """Write the kept reads of the ``listed`` providers (the others
        are gone), atomically; ``full``: this scan read every one of
        them, which starts a new full_read_interval. A file that cannot
        be written only makes the next scan a full read (logged).
        """
        if not self.interval:
            return
        full_read_at = self.started if full else self.full_read_at
        if full_read_at is None:
            # No full read yet: nothing a next scan could trust more.
            LOG.debug('Kept placement reads not written: no full read '
                      'in this scan nor before it')
            return
        payload = json.dumps(
            {uuid: [entry[0], entry[1]] for uuid, entry in
             sorted(self._entries.items()) if uuid in listed},
            separators=(',', ':')).encode('utf-8')
        header = json.dumps({
            'format': FORMAT, 'version': VERSION, 'cloud': self.cloud,
            'full_read_at': full_read_at, 'written_at': _now(),
            'sha256': hashlib.sha256(payload).hexdigest()},
            sort_keys=True).encode('utf-8')
        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            metrics.replace_file(self.path, header + b'\n' + payload, 0o600)
        except OSError as e:
            LOG.debug('Kept placement reads not written to %(path)s: '
                      '%(error)s (the next scan reads everything)',
                      {'path': self.path, 'error': e.strerror or e})
            return
        LOG.debug('Kept placement reads of %(count)d provider(s) written '
                  'to %(path)s (%(size)d bytes; last full read %(when)s)', {
                      'count': len(listed), 'path': self.path,
                      'size': len(payload), 'when': _when(full_read_at)})


def _entries(loaded):
    """{provider: (generation, {consumer: resources})} of a loaded
    payload; TypeError or ValueError if it is not one.
    """
    entries = {}
    for uuid, (generation, held) in loaded.items():
        if type(generation) is not int or type(held) is not dict:
            raise TypeError('provider %s: no generation and allocations'
                            % uuid)
        for resources in held.values():
            if type(resources) is not dict:
                raise TypeError('provider %s: allocations without '
                                'resources' % uuid)
        entries[uuid] = (generation, held)
    return entries


def _when(timestamp):
    if timestamp is None:
        return 'never'
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(timestamp))
