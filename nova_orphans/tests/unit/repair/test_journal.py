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
import grp
import os
import pwd
import re
import stat

import fixtures
from oslotest import base

from nova_orphans import exception
from nova_orphans.repair import actions
from nova_orphans.repair import journal
from nova_orphans.repair import restore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))


class JournalTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def test_entries_round_trip_in_order_with_private_mode(self):
        path = os.path.join(self.dir, 'j.jsonl')
        j = journal.Journal(path)
        for n in range(3):
            j.record({'action': 'delete_consumer', 'consumers': {'c%d' % n: {
                'before': {'allocations': {}}, 'after': {}}}})
        j.close()
        self.assertEqual(0o600, stat.S_IMODE(os.stat(path).st_mode))
        self.assertEqual(['c0', 'c1', 'c2'],
                         [list(e['consumers'])[0]
                          for e in journal.load(path).entries])

    def test_default_path_creates_private_state_dir(self):
        state = os.path.join(self.dir, 'state')
        path = journal.default_path(state)
        self.assertEqual(state, os.path.dirname(path))
        self.assertEqual(0o700, stat.S_IMODE(os.stat(state).st_mode))
        self.assertFalse(os.path.exists(path))

    def test_damaged_journal_is_refused(self):
        path = os.path.join(self.dir, 'bad.jsonl')
        j = journal.Journal(path)
        j.record({'action': 'delete_consumer', 'consumers': {}})
        j.close()
        with open(path, 'a') as f:
            f.write('{not json\n')
        # After the header, the entry and the end record.
        e = self.assertRaises(exception.JournalError, journal.load, path)
        self.assertIn('line 4', str(e))

    def test_missing_journal_is_invalid_input(self):
        self.assertRaises(exception.InvalidInput, journal.load,
                          os.path.join(self.dir, 'nope'))


class JournalSafetyTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, 'j.jsonl')

    def entry(self, consumer):
        return {'action': 'delete_consumer',
                'consumers': {consumer: {'before': {}, 'after': {}}}}

    def test_refused_write_is_marked_not_applied(self):
        j = journal.Journal(self.path)
        first = j.record(self.entry('c1'))
        j.record(self.entry('c2'))
        j.not_applied(first, '409 conflict')
        j.close()
        entries = journal.load(self.path).entries
        self.assertEqual([('c1', False, '409 conflict'), ('c2', None, None)],
                         [(list(e['consumers'])[0], e.get('applied'),
                           e.get('reason')) for e in entries])

    def test_line_cut_short_at_the_end_is_ignored(self):
        j = journal.Journal(self.path)
        j.record(self.entry('c1'))
        j.close()
        with open(self.path, 'a') as f:
            f.write('{"version": 3, "consumers": {"c2"')
        self.assertEqual(['c1'], [list(e['consumers'])[0]
                                  for e in journal.load(self.path).entries])

    def test_not_applied_for_an_unknown_entry_is_refused(self):
        j = journal.Journal(self.path)
        j.not_applied('nope', 'x')
        j.close()
        e = self.assertRaises(exception.JournalError, journal.load,
                              self.path)
        self.assertIn('refers to no earlier entry', str(e))

    def test_check_path(self):
        journal.check_path(self.path)
        self.assertIn('is a directory', str(self.assertRaises(
            exception.JournalError, journal.check_path, self.dir)))
        self.assertIn('does not exist', str(self.assertRaises(
            exception.JournalError, journal.check_path,
            os.path.join(self.dir, 'missing', 'j.jsonl'))))


class RecordManyTestCase(base.BaseTestCase):

    def test_batch_is_one_fsync_and_entries_of_their_own(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'j')
        j = journal.Journal(path)
        fsync = self.useFixture(fixtures.MockPatch(
            'nova_orphans.repair.journal.os.fsync')).mock
        ids = j.record_many([
            {'action': 'delete_consumer', 'consumers': {c: {
                'before': {'allocations': {}}, 'after': {}}}}
            for c in ('c0', 'c1', 'c2')])
        # The new file's directory, then the file.
        self.assertEqual(2, fsync.call_count)
        j.not_applied_many(ids[1:], 'conflict')
        self.assertEqual(3, fsync.call_count)
        self.assertEqual(3, j.entries)
        j.close()
        entries = journal.load(path).entries
        self.assertEqual(ids, [e['id'] for e in entries])
        self.assertEqual([True, False, False],
                         [e.get('applied', True) for e in entries])


class CloudTestCase(base.BaseTestCase):
    """Each run's header names its cloud, and the journal directory is
    chosen by one rule for every user.
    """

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def test_header_names_the_cloud(self):
        path = os.path.join(self.dir, 'j.jsonl')
        cloud = {'name': 'prod', 'auth_url': 'https://keystone.example/v3',
                 'region': 'RegionOne', 'project': 'admin'}
        j = journal.Journal(path, placement='https://placement.example',
                            cloud=cloud)
        j.record({'action': 'delete_consumer', 'consumers': {'c': {
            'before': {'allocations': {}}, 'after': {}}}})
        j.close()
        j = journal.Journal(path, placement='http://127.0.0.1:8778')
        j.record({'action': 'delete_consumer', 'consumers': {'d': {
            'before': {'allocations': {}}, 'after': {}}}})
        j.close()
        first, second = journal.load(path).runs
        self.assertEqual((cloud, 'https://placement.example'),
                         (first.cloud, first.placement))
        self.assertEqual(({}, 'http://127.0.0.1:8778'),
                         (second.cloud, second.placement))

    def test_default_directory(self):
        home = os.path.join(self.dir, 'home')
        system = os.path.join(self.dir, 'var-lib', 'nova-orphans')
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.repair.journal.SYSTEM_STATE_PATH', system))
        self.useFixture(fixtures.EnvironmentVariable('HOME', home))
        self.useFixture(fixtures.EnvironmentVariable('XDG_STATE_HOME'))
        local = os.path.join(home, '.local', 'state', 'nova-orphans')
        # /var/lib missing: not writable, whoever runs it.
        self.assertEqual(local, journal.default_directory())
        # Writable (root, or nova once StateDirectory made it).
        os.makedirs(os.path.dirname(system))
        self.assertEqual(system, journal.default_directory())
        os.mkdir(system, 0o700)
        self.assertEqual(system, journal.default_directory())
        self.useFixture(fixtures.EnvironmentVariable(
            'XDG_STATE_HOME', os.path.join(self.dir, 'xdg')))
        self.assertEqual(os.path.join(self.dir, 'xdg', 'nova-orphans'),
                         journal.default_directory())
        self.assertEqual('/srv/j', journal.default_directory('/srv/j'))
        if os.geteuid() != 0:
            # Not writable by this user: its own directory.
            self.useFixture(fixtures.EnvironmentVariable('XDG_STATE_HOME'))
            os.chmod(system, 0o500)
            self.addCleanup(os.chmod, system, 0o700)
            self.assertEqual(local, journal.default_directory())


class PermissionsTestCase(base.BaseTestCase):
    """Journals, and their directories, that another user could write:
    real files and modes in a temp dir. The cases of another owner or
    group need root (CI runs the tests as root) to give them away.
    """

    # No user or group of this machine: named by their number.
    OTHER = 424242

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, 'j.jsonl')
        self.record(self.path)
        self.user = pwd.getpwuid(os.geteuid()).pw_name

    def record(self, path):
        j = journal.Journal(path)
        j.record({'action': 'delete_consumer',
                  'consumers': {'c1': {'before': {}, 'after': {}}}})
        self.assertIsNone(j.close())

    def read(self, path=None):
        return journal.load(path or self.path, check=journal.check_file)

    def refused(self, func, *args):
        return str(self.assertRaises(exception.JournalError, func, *args))

    def give_away(self, path, uid=-1, gid=-1):
        if os.geteuid() != 0:
            self.skipTest('only root can give a file to another user')
        os.chown(path, uid, gid)

    def others_write(self, path, mode):
        return ('Journal %s: can be written by other users (mode %04o), '
                'who could have rewritten it: check it and run "chmod go-w '
                '%s"' % (path, mode, path))

    def members(self, members):
        """The journal's group has these members (uids), or is unknown
        (None): the group database faked, the file's mode real.
        """
        gid = os.stat(self.path).st_gid
        self.useFixture(fixtures.MockPatch(
            'nova_orphans.repair.journal.group_members',
            lambda g: members if g == gid else None))

    def group_writes(self, mode):
        return ('Journal %(path)s: can be written by the group %(group)s '
                '(mode %(mode)04o), which has other members than %(user)s, '
                'who could have rewritten it: check it and run "chmod g-w '
                '%(path)s"' % {
                    'path': self.path, 'mode': mode, 'user': self.user,
                    'group': grp.getgrgid(os.stat(self.path).st_gid).gr_name})

    def test_own_journal(self):
        self.assertEqual(1, len(self.read().entries))
        # Its group has no member but this user (a private group, the
        # image's fsGroup).
        self.members({os.geteuid()})
        os.chmod(self.path, 0o660)
        self.assertEqual(1, len(self.read().entries))
        self.record(self.path)
        self.assertEqual(2, len(self.read().entries))

    def test_group_with_other_members_is_refused(self):
        """OpenSSH's rule: group write only for a group whose members
        (primary and listed) are this user alone; a group with another
        member, with none, or unknown is another user's.
        """
        os.chmod(self.path, 0o620)
        for members in ({os.geteuid(), self.OTHER}, {self.OTHER}, set(),
                        None):
            with fixtures.MockPatch(
                    'nova_orphans.repair.journal.group_members',
                    lambda g, m=members: m):
                self.assertEqual(self.group_writes(0o620),
                                 self.refused(self.read))
                self.assertEqual(self.group_writes(0o620),
                                 self.refused(self.record, self.path))
                # Read, not written: the group's write is what counts.
                os.chmod(self.path, 0o640)
                self.assertEqual(1, len(self.read().entries))
                os.chmod(self.path, 0o620)

    def test_image_fs_group(self):
        """The shipped image's group database (its Containerfile's
        groupadd and useradd): group 42424, the pods' fsGroup, has no
        member but user 42424, the pods' runAsUser, so the journals the
        volume makes group-writable are accepted; with another member,
        refused.
        """
        with open(os.path.join(ROOT, 'deploy', 'container',
                               'Containerfile')) as f:
            recipe = f.read()
        [(gid, group)] = re.findall(r'groupadd --system --gid (\d+) (\w+)',
                                    recipe)
        [(uid, primary, name)] = re.findall(
            r'useradd --system --uid (\d+) --gid (\w+) .*?--shell \S+ (\w+)',
            ' '.join(recipe.replace('\\\n', ' ').split()))
        self.assertEqual((group, '42424', '42424'), (primary, uid, gid))
        gid, uid = int(gid), int(uid)
        users = [pwd.struct_passwd((name, 'x', uid, gid, '', '/', '/'))]
        groups = {gid: grp.struct_group((group, 'x', gid, []))}
        self.useFixture(fixtures.MockPatch('grp.getgrgid',
                                           lambda g: groups[g]))
        self.useFixture(fixtures.MockPatch('pwd.getpwall', lambda: users))
        self.useFixture(fixtures.MockPatch('pwd.getpwuid', lambda u: {
            p.pw_uid: p for p in users}[u]))
        self.useFixture(fixtures.MockPatch('pwd.getpwnam', lambda n: {
            p.pw_name: p for p in users}[n]))
        self.useFixture(fixtures.MockPatch('os.geteuid', lambda: uid))
        self.assertEqual({uid}, journal.group_members(gid))
        st = os.stat_result((stat.S_IFREG | 0o660, 0, 0, 1, uid, gid, 0,
                             0, 0, 0))
        journal.check_file(st, '/var/lib/nova-orphans/j.jsonl')
        journal.check_directory(os.stat_result((
            stat.S_IFDIR | stat.S_ISGID | 0o770, 0, 0, 1, uid, gid, 0, 0, 0,
            0)), '/var/lib/nova-orphans')
        users.append(pwd.struct_passwd(('other', 'x', self.OTHER, gid, '',
                                        '/', '/')))
        self.assertIn('can be written by the group nova (mode 0660), which '
                      'has other members than nova', self.refused(
                          journal.check_file, st, 'j.jsonl'))

    def test_journal_page_shows_the_lines(self):
        """The security section of admin/journal.rst shows each refusal
        as the checks word it (nova's journals, a shared group).
        """
        with open(os.path.join(ROOT, 'doc', 'source', 'admin',
                               'journal.rst')) as f:
            page = f.read()
        section = page.split('\nWho can write a journal\n', 1)[1]
        section = re.split(r'\n[^\n]+\n-{3,}\n', section)[0]
        shown = [' '.join(block.split()) for block in re.findall(
            r'\n    (ERROR: Journal .*?)(?=\n\n|\n?$)', section, re.S)]
        nova, other = 64060, 64061
        users = {nova: pwd.struct_passwd(('nova', 'x', nova, nova, '', '/',
                                          '/'))}
        groups = {4242: grp.struct_group(('operators', 'x', 4242,
                                          ['nova', 'alice']))}
        self.useFixture(fixtures.MockPatch('os.geteuid', lambda: nova))
        self.useFixture(fixtures.MockPatch('pwd.getpwuid',
                                           lambda u: users[u]))
        self.useFixture(fixtures.MockPatch('grp.getgrgid',
                                           lambda g: groups[g]))
        self.useFixture(fixtures.MockPatch(
            'nova_orphans.repair.journal.group_members',
            lambda g: {nova, other}))

        def refused(func, mode, gid, *args):
            kind = stat.S_IFDIR if func is journal.check_directory else (
                stat.S_IFREG)
            st = os.stat_result((kind | mode, 0, 0, 1, nova, gid, 0, 0, 0,
                                 0))
            return 'ERROR: ' + self.refused(func, st, *args)

        self.assertEqual([
            refused(journal.check_file, 0o666, nova,
                    '/srv/journals/j.jsonl'),
            refused(journal.check_file, 0o660, 4242,
                    '/srv/journals/j.jsonl'),
            refused(journal.check_directory, 0o777, nova, '/srv/shared',
                    '/srv/shared/j.jsonl')], shown)

    def test_group_members_of_this_machine(self):
        """The group database as it is: this user's primary group holds
        it; a gid nobody has is unknown.
        """
        user = pwd.getpwuid(os.geteuid())
        self.assertIn(user.pw_uid, journal.group_members(user.pw_gid))
        self.assertEqual(
            {p.pw_uid for p in pwd.getpwall()
             if p.pw_gid == user.pw_gid} |
            {pwd.getpwnam(n).pw_uid
             for n in grp.getgrgid(user.pw_gid).gr_mem},
            journal.group_members(user.pw_gid))
        self.assertIsNone(journal.group_members(self.OTHER))

    def test_world_writable_is_refused_before_it_is_read(self):
        for mode in (0o602, 0o666):
            os.chmod(self.path, mode)
            self.assertEqual(self.others_write(self.path, mode),
                             self.refused(self.read))
        # Not read: what it holds is not what is refused.
        with open(self.path, 'wb') as f:
            f.write(b'{not json\n')
        self.assertEqual(self.others_write(self.path, 0o666),
                         self.refused(self.read))

    def test_writable_by_another_group(self):
        self.give_away(self.path, gid=self.OTHER)
        os.chmod(self.path, 0o620)
        self.assertEqual(
            'Journal %(path)s: can be written by the group %(other)s (mode '
            '0620), which has other members than %(user)s, who could have '
            'rewritten it: check it and run "chmod g-w %(path)s"' % {
                'path': self.path, 'other': self.OTHER, 'user': self.user},
            self.refused(self.read))
        os.chmod(self.path, 0o640)
        self.assertEqual(1, len(self.read().entries))

    def test_owned_by_another_user(self):
        """root too: a journal another user owns is theirs until root
        takes it over.
        """
        self.give_away(self.path, uid=self.OTHER)
        with open(self.path, 'rb') as f:
            before = f.read()
        message = (
            'Journal %(path)s: is owned by %(other)s, not by %(user)s who '
            'runs this, and only its owner may restore it or add to it: '
            'run as %(other)s, or check it and run "chown %(user)s '
            '%(path)s"' % {'path': self.path, 'other': self.OTHER,
                           'user': self.user})
        self.assertEqual(message, self.refused(self.read))
        # Neither added to (a clean's --journal, a restore's mark) nor
        # checked as fit for it.
        self.assertEqual(message, self.refused(self.record, self.path))
        self.assertEqual(message, self.refused(journal.Journal(
            self.path, command='restore').hold))
        self.assertEqual(message, self.refused(journal.check_path,
                                               self.path))
        with open(self.path, 'rb') as f:
            self.assertEqual(before, f.read())
        os.chown(self.path, os.geteuid(), -1)
        self.assertEqual(1, len(self.read().entries))

    def test_restore_refuses_before_reading(self):
        os.chmod(self.path, 0o646)
        message = self.others_write(self.path, 0o646)
        # A dry run reads without a mark; a restore holds its mark
        # first.
        self.assertEqual(message, self.refused(
            restore.load, self.path, 'http://placement'))
        self.assertEqual(message, self.refused(
            restore.load, self.path, 'http://placement', None, (),
            journal.Journal(self.path, command='restore')))

    def test_directory_others_can_write(self):
        shared = os.path.join(self.dir, 'shared')
        os.mkdir(shared)
        os.chmod(shared, 0o777)
        path = os.path.join(shared, 'j.jsonl')
        message = (
            'Journal %(path)s: the directory %(dir)s can be written by '
            'other users (mode 0777), who could replace the journal: run '
            '"chmod go-w %(dir)s" or write journals in a directory of your '
            'own' % {'path': path, 'dir': shared})
        self.assertEqual(message, self.refused(self.record, path))
        self.assertEqual(message, self.refused(journal.check_path, path))
        self.assertEqual([], os.listdir(shared))
        # Without --journal: the directory journals go to.
        self.assertEqual(message.replace(path, shared, 1), self.refused(
            actions.RepairOptions().check, shared))
        actions.RepairOptions(dry_run=True).check(shared)
        # Sticky, as /tmp: only a file's owner can replace it.
        os.chmod(shared, 0o1777)
        journal.check_path(path)
        actions.RepairOptions().check(shared)
        self.record(path)
        self.assertEqual(1, len(self.read(path).entries))
        # A group with no member but this user.
        os.chmod(shared, 0o770)
        self.members({os.geteuid()})
        self.record(path)
        self.assertEqual(2, len(self.read(path).entries))

    def test_directory_group_with_other_members(self):
        shared = os.path.join(self.dir, 'shared')
        os.mkdir(shared)
        os.chmod(shared, 0o770)
        path = os.path.join(shared, 'j.jsonl')
        self.useFixture(fixtures.MockPatch(
            'nova_orphans.repair.journal.group_members',
            lambda g: {os.geteuid(), self.OTHER}))
        self.assertEqual(
            'Journal %(path)s: the directory %(dir)s can be written by the '
            'group %(group)s (mode 0770), which has other members than '
            '%(user)s, who could replace the journal: run "chmod g-w '
            '%(dir)s" or write journals in a directory of your own' % {
                'path': path, 'dir': shared, 'user': self.user,
                'group': grp.getgrgid(os.stat(shared).st_gid).gr_name},
            self.refused(self.record, path))
        self.assertEqual([], os.listdir(shared))
        # Sticky, as /tmp: accepted.
        os.chmod(shared, 0o1770)
        self.record(path)
        self.assertEqual(1, len(self.read(path).entries))

    def test_sticky_directory_file_of_another_user(self):
        os.chmod(self.dir, 0o1777)
        self.give_away(self.path, uid=self.OTHER)
        self.assertIn('is owned by %s' % self.OTHER,
                      self.refused(self.record, self.path))

    def test_directory_of_another_group_or_user(self):
        self.give_away(self.dir, gid=self.OTHER)
        os.chmod(self.dir, 0o770)
        path = os.path.join(self.dir, 'new.jsonl')
        self.assertIn('the directory %s can be written by the group %s '
                      '(mode 0770)' % (self.dir, self.OTHER),
                      self.refused(self.record, path))
        os.chmod(self.dir, 0o750)
        self.record(path)
        os.chown(self.dir, self.OTHER, -1)
        self.assertEqual(
            'Journal %(path)s: the directory %(dir)s is owned by %(other)s, '
            'who could replace the journal: run "chown %(user)s %(dir)s" or '
            'write journals in a directory of your own' % {
                'path': path, 'dir': self.dir, 'other': self.OTHER,
                'user': self.user}, self.refused(self.record, path))
