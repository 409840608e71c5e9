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
"""``openstack allocation orphan journal list|prune``.

The journals of the journal directory, as ``nova-orphans-manage journals
list|prune`` shows and prunes them (nova_orphans/app/journals.py).
"""

from nova_orphans.app import journals as app
from nova_orphans import exit_codes
from nova_orphans.i18n import _
from nova_orphans.osc.v1 import common

# Without nova.conf, the retention default of [nova_orphans].
RETENTION_DAYS = 90


class _Journals(common.OrphanLister):

    CODES = exit_codes.JOURNAL_CODES
    REQUESTS = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--journal-dir', metavar='<dir>',
            help=_('The journal directory (default: where "clean" puts '
                   'journals: $XDG_STATE_HOME/nova-orphans if '
                   'XDG_STATE_HOME is set, else /var/lib/nova-orphans if '
                   'this user can write there or create it, else '
                   '~/.local/state/nova-orphans).'))
        return parser

    def directory(self, parsed_args):
        return parsed_args.journal_dir or app.default_directory(None)

    def finished(self):
        pass


class _Done:
    """What a listing of journals ends with: 0, or 1 if a removal
    failed.
    """

    def __init__(self, rows=()):
        self.code = app.prune_exit_code(rows)

    @property
    def exit_code(self):
        return self.code


class ListJournal(_Journals):
    """List the runs the repair journals hold, oldest first.

    One row per clean run: its journal, run id, the cloud it ran against
    (openstack: the cloud's name; nova-orphans-manage: its configuration
    files) and the placement it wrote to, host, when it started, its
    entries, how many placement refused, and when a restore of the
    journal last ended after it. Changes nothing.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--cloud', metavar='<cloud>',
            help=_('Only the runs against this cloud: its name in '
                   'clouds.yaml or its auth URL (openstack), a '
                   'configuration file (nova-orphans-manage), or the '
                   'placement endpoint the run wrote to.'))
        return parser

    def take_action(self, parsed_args):
        self.result = _Done()
        rows = [r.to_dict() for r in app.list_runs(
            self.directory(parsed_args), warn=self.say,
            cloud=parsed_args.cloud)]
        return common.record_listing(parsed_args, rows, app.JournalRun.KEYS)


class PruneJournal(_Journals):
    """Remove old journals from the journal directory.

    Only the journals "clean" named there (journal-TIME-PID.jsonl) whose
    last change is older than the retention: a journal is what "restore"
    needs, so keep them as long as a repair may have to be undone.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--older-than', metavar='<days>', type=int,
            default=RETENTION_DAYS,
            help=_('Remove the journals nothing wrote to for this many '
                   'days (default: %(default)s).'))
        parser.add_argument(
            '--dry-run', action='store_true',
            help=_('Show what would be removed; remove nothing.'))
        return parser

    def take_action(self, parsed_args):
        rows = app.prune(self.directory(parsed_args),
                         parsed_args.older_than, dry_run=parsed_args.dry_run)
        self.result = _Done(rows)
        return common.record_listing(parsed_args,
                                     [r.to_dict() for r in rows],
                                     app.Pruned.KEYS)
