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
"""``journals list`` and ``prune``: journals an operator can keep.

A clean from cron writes a journal a night; an operator needs to see
which runs they hold and whether they were restored, and to let old ones
go after a retention period. Only the journal directory's own files
(``journal-*.jsonl``, the names clean gives them) are pruned: a journal
kept elsewhere with --journal is the operator's to keep.
"""

import collections
import datetime
import glob
import os

from nova_orphans import exception
from nova_orphans import exit_codes
from nova_orphans.i18n import _
from nova_orphans import outcomes
from nova_orphans.repair import journal

PATTERN = 'journal-*.jsonl'
DAY = 86400


class JournalRun:
    """One run of a journal, as ``journals list`` shows it.

    ``cloud`` names the cloud the run reached: for ``openstack``, the
    cloud's name in clouds.yaml (else its auth URL); for
    ``nova-orphans-manage``, the configuration files it read.
    ``placement`` is the placement endpoint the run wrote to.
    ``ended``: how the run ended (``completed``, ``error``, ``SIGINT``,
    ``SIGTERM``; "no end record" if it was killed or the file was cut
    short). ``restored``, ``restored_into`` and ``restored_by``: when
    the last restore of the journal after the run ended, the placement
    it restored into and its front end (empty if none did).
    """

    KEYS = ('journal', 'run', 'command', 'cloud', 'placement', 'host',
            'started', 'ended', 'entries', 'not_applied', 'restored',
            'restored_into', 'restored_by')

    def __init__(self, path, run, restores):
        header = run.header
        self.journal = path
        self.run = header.get('run')
        self.command = header.get('command')
        self.identity = run.cloud
        self.cloud = cloud_label(run.cloud)
        self.placement = run.placement
        self.host = header.get('host')
        self.started = header.get('time')
        self.ended = run.ended
        self.entries = len(run.entries)
        self.not_applied = sum(1 for e in run.entries
                               if e.get('applied') is False)
        # The last restore of the journal after this run, if any.
        later = [r for r in restores
                 if (r.get('time') or '') >= (self.started or '')]
        last = later[-1] if later else {}
        self.restored = last.get('time')
        self.restored_into = last.get('placement')
        self.restored_by = (last.get('cloud') or {}).get('front_end')

    def to_dict(self):
        return {key: getattr(self, key) for key in self.KEYS}


class Pruned(collections.namedtuple('Pruned', 'journal modified outcome')):
    """A journal file prune removed, or would remove (``outcome``)."""

    KEYS = ('journal', 'modified', 'outcome')

    def to_dict(self):
        return dict(self._asdict(), outcome=str(self.outcome))


def _config_paths(cloud):
    """The configuration files and directories a run read."""
    return (list(cloud.get('config_files') or []) +
            list(cloud.get('config_dirs') or []))


def cloud_label(cloud):
    """A run's cloud in one word (see JournalRun), or None."""
    files = _config_paths(cloud)
    if files:
        return ','.join(files)
    return cloud.get('name') or cloud.get('auth_url') or None


def _same_url(a, b):
    return bool(a and b) and a.rstrip('/') == b.rstrip('/')


def of_cloud(row, cloud):
    """Whether ``row`` (a JournalRun) ran against ``cloud``: its
    clouds.yaml name, auth URL, one of its configuration files, or the
    placement endpoint it wrote to.
    """
    identity = row.identity
    return (cloud in (identity.get('name'), row.cloud) or
            _same_url(cloud, identity.get('auth_url')) or
            _same_url(cloud, row.placement) or
            os.path.abspath(cloud) in _config_paths(identity))


def _files(directory):
    return sorted(glob.glob(os.path.join(directory, PATTERN)))


def list_runs(directory, warn=None):
    """Every run of every journal in ``directory``, oldest first (the
    runs against one cloud: see of_cloud).

    A journal that cannot be read is told to ``warn(line)`` and skipped:
    the others are still listed.
    """
    rows = []
    for path in _files(directory):
        try:
            contents = journal.load(path)
        except exception.JournalError as e:
            if warn is not None:
                warn(_('WARNING: %(error)s') % {'error': e})
            continue
        rows += [JournalRun(path, run, contents.restores)
                 for run in contents.runs]
    rows.sort(key=lambda r: (r.started or '', r.journal))
    return rows


def prune(directory, older_than_days, dry_run=False, now=None):
    """Remove the journals of ``directory`` that nothing wrote to for
    ``older_than_days`` days (their last change, restores included; at
    least 1, --older-than's bound in the option spec).
    """
    now = now if now is not None else datetime.datetime.now(
        datetime.timezone.utc).timestamp()
    rows = []
    for path in _files(directory):
        modified = os.stat(path).st_mtime
        if now - modified < older_than_days * DAY:
            continue
        stamp = datetime.datetime.fromtimestamp(
            modified, datetime.timezone.utc).isoformat()
        outcome = outcomes.dry_run()
        if not dry_run:
            try:
                os.unlink(path)
                outcome = outcomes.done()
            except OSError as e:
                outcome = outcomes.failed(e.strerror)
        rows.append(Pruned(path, stamp, outcome))
    return rows


def prune_exit_code(rows):
    """prune's code: 1 when a journal could not be removed; 3 when a
    dry run would remove one, as every --dry-run says it would act;
    else 0.
    """
    kept = [r.outcome for r in rows]
    if outcomes.count(kept, outcomes.FAILED):
        return exit_codes.REPAIR_FAILED
    if outcomes.count(kept, cause=outcomes.DRY_RUN):
        return exit_codes.ORPHANS_FOUND
    return exit_codes.SUCCESS


def mark_restored(mark, result, journal_clouds=(), warn=None):
    """Say in the journal that a restore of it ended: ``mark``, the
    restore's own journal.Journal (its header names the cloud restored
    into and the front end, as a clean's), which the caller closes; a
    journal that cannot be written to is told to ``warn`` and left as
    it is: the restore itself is done.
    """
    if not result.done and not result.failed:
        return
    try:
        mark.restored(result.done, result.failed, journal_clouds)
    except exception.JournalError as e:
        if warn is not None:
            warn(_('WARNING: %(error)s; "journals list" will not show it '
                   'restored.') % {'error': e})
