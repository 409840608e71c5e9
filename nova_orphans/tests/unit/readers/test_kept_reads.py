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
"""readers/kept_reads.py: the file, what makes it unusable, its writes."""

import hashlib
import json
import os
import stat

import fixtures
from oslotest import base

from nova_orphans.readers import kept_reads

CLOUD = {'placement': ('http', 'placement:8778', ''), 'region': 'r1'}
VM = {'VCPU': 1, 'MEMORY_MB': 512}


class KeptReadsTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.dir = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                'state')
        self.now = 1_800_000_000.0
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.readers.kept_reads._now', lambda: self.now))

    def kept(self, interval=3600, full=False, cloud=CLOUD):
        return kept_reads.KeptReads(self.dir, cloud, interval, full=full)

    def saved(self, held=None, listed=None):
        """A full read's file: {'rp1': (3, held)}."""
        kept = self.kept()
        kept.put('rp1', 3, held or {'vm1': VM})
        kept.put('rp2', 1, {})
        kept.save(listed or {'rp1': 3, 'rp2': 1}, full=True)
        return kept.path

    def test_round_trip(self):
        path = self.saved()
        self.assertEqual(os.path.join(self.dir, kept_reads.file_name(CLOUD)),
                         path)
        self.assertEqual(0o600, stat.S_IMODE(os.stat(path).st_mode))
        self.assertEqual(0o700, stat.S_IMODE(os.stat(self.dir).st_mode))
        self.assertEqual([os.path.basename(path)], os.listdir(self.dir))
        self.now += 60
        kept = self.kept()
        self.assertIsNone(kept.why_full)
        self.assertEqual(self.now - 60, kept.full_read_at)
        # Only a provider still at the generation it was kept under.
        self.assertEqual({'rp1': {'vm1': VM}, 'rp2': {}},
                         kept.reusable({'rp1': 3, 'rp2': 1, 'rp3': 0}))
        self.assertEqual({'rp2': {}}, kept.reusable({'rp1': 4, 'rp2': 1}))

    def test_each_cloud_its_own_file(self):
        other = dict(CLOUD, region='r2')
        self.assertNotEqual(kept_reads.file_name(CLOUD),
                            kept_reads.file_name(other))
        # Loaded, a tuple is a list: the same name.
        self.assertEqual(kept_reads.file_name(CLOUD), kept_reads.file_name(
            json.loads(json.dumps(CLOUD))))

    def why(self, data=None, **kwargs):
        path = os.path.join(self.dir, kept_reads.file_name(CLOUD))
        if data is not None:
            with open(path, 'wb') as f:
                f.write(data)
        kept = self.kept(**kwargs)
        if kept.why_full is not None:
            self.assertEqual({}, kept.reusable({'rp1': 3}))
        return kept.why_full

    def test_what_means_a_full_read(self):
        self.assertEqual('no kept reads yet', self.why())
        path = self.saved()
        with open(path, 'rb') as f:
            good = f.read()
        head, payload = good.split(b'\n')
        header = json.loads(head)

        def rewritten(payload=payload, **changes):
            return json.dumps(dict(header, **changes)).encode() + (
                b'\n' + payload)

        def summed(payload):
            return rewritten(payload, sha256=hashlib.sha256(
                payload).hexdigest())

        self.assertIsNone(self.why(good))
        self.assertEqual('asked for (--full-read or --all)',
                         self.why(full=True))
        self.assertEqual('full_read_interval is 0', self.why(interval=0))
        for data, why in (
                (good[:-5], 'the file is damaged (its payload does not '
                            'match its checksum)'),
                (head, 'the file is damaged (its payload does not match '
                       'its checksum)'),
                (good[:10], 'the file is damaged (its header is no JSON)'),
                (b'', 'the file is damaged (its header is no JSON)'),
                (b'\xff\xfe', 'the file is damaged (its header is no JSON)'),
                (b'[]\n{}', 'the file is not one of kept reads'),
                (rewritten(format='other'),
                 'the file is not one of kept reads'),
                (rewritten(version=2),
                 'the file is of another version (2, not 1)'),
                (rewritten(cloud={'placement': ['http', 'other', '']}),
                 'the file is of another cloud'),
                (rewritten(full_read_at='yesterday'),
                 'the file is damaged (no time of its full read)'),
                (summed(b'[[1]]'), 'the file is damaged'),
                (summed(b'{"rp1": [1]}'), 'the file is damaged'),
                (summed(b'{"rp1": ["1", {}]}'), 'the file is damaged'),
                (summed(b'{"rp1": [1, {"vm": 1}]}'), 'the file is damaged'),
                (summed(b'{"rp1": [1, []]}'), 'the file is damaged'),
                (summed(b'{"rp1": [1, {}'), 'the file is damaged')):
            self.assertTrue(self.why(data).startswith(why), (data, why))
        self.assertIsNone(self.why(summed(b'{"rp1": [1, {"vm": {}}]}')))

    def test_a_full_read_older_than_the_interval(self):
        self.saved()
        self.now += 3599
        self.assertIsNone(self.why())
        self.now += 1
        self.assertEqual('the last full read was 2027-01-15T08:00:00Z, not '
                         'within full_read_interval (3600 s)', self.why())
        self.assertIsNone(self.why(interval=7200))
        # A clock set back: no kept read is trusted either.
        self.now -= 7200
        self.assertTrue(self.why().startswith('the last full read was'))

    def test_a_kept_scan_keeps_the_full_reads_time(self):
        self.saved()
        self.now += 100
        kept = self.kept()
        kept.put('rp1', 4, {'vm2': VM})
        # rp2 gone from the listing: dropped.
        kept.save({'rp1': 4}, full=False)
        self.now += 100
        kept = self.kept()
        self.assertEqual(self.now - 200, kept.full_read_at)
        self.assertEqual({'rp1': {'vm2': VM}},
                         kept.reusable({'rp1': 4, 'rp2': 1}))
        # A full read starts the interval again, from when it began.
        began = self.now
        kept = self.kept(full=True)
        self.now += 30
        kept.put('rp1', 4, {})
        kept.save({'rp1': 4}, full=True)
        self.assertEqual(began, self.kept().full_read_at)

    def test_gone_providers_are_not_kept(self):
        kept = self.kept()
        kept.put('rp1', 3, {'vm1': VM})
        kept.put('rp1', None, {})
        kept.save({'rp1': 3}, full=True)
        self.assertEqual({}, self.kept().reusable({'rp1': 3}))

    def test_nothing_written_without_a_full_read(self):
        kept = self.kept()
        kept.put('rp1', 3, {'vm1': VM})
        # A scoped scan, the first: nothing to trust the rest with.
        kept.save({'rp1': 3, 'rp2': 1}, full=False)
        self.assertFalse(os.path.exists(self.dir))
        # With full_read_interval 0, nothing is ever written.
        kept = self.kept(interval=0)
        kept.put('rp1', 3, {'vm1': VM})
        kept.save({'rp1': 3}, full=True)
        self.assertFalse(os.path.exists(self.dir))

    def test_a_write_that_fails(self):
        path = self.saved()
        with open(path, 'rb') as f:
            before = f.read()
        self.useFixture(fixtures.MonkeyPatch(
            'os.replace', self._fail_replace))
        kept = self.kept()
        kept.put('rp1', 9, {})
        # Logged, never raised; the file as it was, no temporary left.
        kept.save({'rp1': 9}, full=True)
        with open(path, 'rb') as f:
            self.assertEqual(before, f.read())
        self.assertEqual([os.path.basename(path)], os.listdir(self.dir))

    @staticmethod
    def _fail_replace(src, dst):
        raise OSError(28, 'No space left on device')

    def test_unwritable_directory(self):
        blocker = os.path.join(os.path.dirname(self.dir), 'file')
        with open(blocker, 'w'):
            pass
        kept = kept_reads.KeptReads(os.path.join(blocker, 'state'), CLOUD,
                                    3600)
        self.assertEqual('the file cannot be read (Not a directory)',
                         kept.why_full)
        kept.put('rp1', 1, {})
        # Logged, never raised.
        kept.save({'rp1': 1}, full=True)
        self.assertFalse(os.path.exists(os.path.join(blocker, 'state')))
