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
"""``nova-orphans-manage journals ...``: list, prune.

Options, output and exit codes; what each action does is
nova_orphans/app/journals.py.
"""

import sys

from nova_orphans.app import journals as app
from nova_orphans.cmd import common
from nova_orphans.cmd.common import args
from nova_orphans import exit_codes
from nova_orphans.i18n import _
from nova_orphans import output

with_directory = args(
    '--journal-dir', metavar='DIR', dest='journal_dir',
    help=_('The journal directory (default: where "clean" puts journals: '
           '[nova_orphans] state_path if set, else '
           '$XDG_STATE_HOME/nova-orphans if XDG_STATE_HOME is set, else '
           '/var/lib/nova-orphans if this user can write there or create '
           'it, else ~/.local/state/nova-orphans).'))


class JournalCommands(common.Commands):
    """The repair journals "clean" leaves in the journal directory."""

    CATEGORY = 'journals'

    @classmethod
    def actions(cls):
        return [('list', cls.list), ('prune', cls.prune)]

    def directory(self):
        return self.cmd.journal_dir or app.default_directory(
            self.conf.nova_orphans.state_path)

    @with_directory
    @args('--cloud', metavar='CLOUD', dest='cloud',
          help=_('Only the runs against this cloud: its name in '
                 'clouds.yaml or its auth URL (openstack), a configuration '
                 'file (nova-orphans-manage), or the placement endpoint '
                 'the run wrote to.'))
    @common.with_format()
    @common.with_long
    @common.with_table_width
    @common.interruptible
    def list(self):
        """List the runs the journals hold, oldest first.

        One row per clean (or providers clean) run: its journal, run id,
        the cloud it ran against (openstack: the cloud's name;
        nova-orphans-manage: its configuration files) and the placement
        it wrote to, host, when it started, its entries, how many
        placement refused (never applied), and when a restore of the
        journal last ended after it. Changes nothing. Returns 0.
        """
        rows = [r.to_dict() for r in app.list_runs(
            self.directory(),
            warn=lambda line: print(line, file=sys.stderr),
            cloud=self.cmd.cloud)]
        if rows or not self.table:
            self.render_records(rows, app.JournalRun.KEYS)
        if self.table and not rows:
            self.say([_('No journal in %(dir)s.') % {
                'dir': self.directory()}])
        return exit_codes.SUCCESS

    @with_directory
    @args('--older-than', metavar='DAYS', type=int, dest='older_than',
          help=_('Remove the journals nothing wrote to for DAYS days '
                 '(default: [nova_orphans] journal_retention_days).'))
    @args('--dry-run', action='store_true', dest='dry_run',
          help=_('Show what would be removed; remove nothing.'))
    @common.with_format()
    @common.with_long
    @common.with_table_width
    @common.interruptible
    def prune(self):
        """Remove old journals from the journal directory.

        Only the directory's journal-*.jsonl files (the names "clean"
        gives its journals) whose last change is older than the
        retention; a journal is what "restore" needs, so keep them as
        long as a repair may have to be undone. Returns 0, or 1 when a
        journal could not be removed.
        """
        days = self.cmd.older_than
        if days is None:
            days = self.conf.nova_orphans.journal_retention_days
        rows = app.prune(self.directory(), days, dry_run=self.cmd.dry_run)
        dicts = [r.to_dict() for r in rows]
        if dicts or not self.table:
            self.render_records(dicts, app.Pruned.KEYS)
        if self.table:
            self.say([output.outcome_summary([r.outcome for r in rows])
                      if rows else _('No journal older than %(days)d '
                                     'day(s).') % {'days': days}])
        return app.prune_exit_code(rows)
