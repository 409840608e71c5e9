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
"""Kept reads (readers/kept_reads.py) against the real placement.

A scan keeps what it read of placement per provider under the
provider's generation and the next reads only the providers whose
generation moved, and again those its reported findings rest on. The
requests counted here are the ones placement received (the fixture's
``requests``); the rows are compared with a ``--full-read`` scan's.
What generations cannot show is tested as the docs state it: a live
server's allocations deleted by ``DELETE /allocations/{consumer}``, and
a provider re-created under its uuid up to its old generation, are
seen at the first full read, which full_read_interval bounds.
"""

import collections
import glob
import hashlib
import json
import logging
import os
import stat
import time
import uuid as uuidlib

import fixtures

from nova_orphans.readers import kept_reads
from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import placement as placement_fx

ALLOCATIONS = '/allocations'
PROVIDERS = '/resource_providers/'
allocation_reads = placement_fx.allocation_reads


class KeptReadsTestCase(base.FunctionalTestCase):
    """nova-orphans-manage in this process, scanning the same cloud again:
    four compute nodes with a live server each, a deleted instance's
    allocation on the second and a consumer nova has no trace of on the
    third.
    """

    def setUp(self):
        super().setUp()
        self.hosts = ['host%d' % i for i in range(4)]
        self.nodes = [self.add_node(h) for h in self.hosts]
        self.live = [self.boot(h, rp) for h, rp in
                     zip(self.hosts, self.nodes)]
        self.gone = self.nova.add_instance('cell1', host='host1',
                                           node='host1', deleted=True)
        self.allocate(self.gone, self.nodes[1])
        self.stranger = str(uuidlib.uuid4())
        self.allocate(self.stranger, self.nodes[2])

    def scan(self, *argv, conf_file=None):
        """(rc, rows, requests placement received) of one ``allocations
        list --format json``; what it logged of its kept reads in
        ``self.logged``.
        """
        mark = len(self.placement.requests)
        logged = self.useFixture(fixtures.FakeLogger(
            name=kept_reads.__name__, level=logging.DEBUG,
            format='%(message)s'))
        rc, out, err = self.manage('allocations', 'list', '--format',
                                   'json', *argv, conf_file=conf_file)
        self.logged = logged.output
        self.assertIn(rc, (0, 3), err)
        self.assertNotIn('Traceback', err)
        return rc, json.loads(out), self.placement.requests_since(mark)

    def kept_file(self):
        found = glob.glob(os.path.join(self.state_path,
                                       kept_reads.PREFIX + '*.json'))
        self.assertEqual(1, len(found), found)
        return found[0]

    def expected(self):
        return sorted([self.gone, self.stranger])

    def test_second_scan_reads_what_findings_rest_on(self):
        rc, rows, first = self.scan()
        self.assertEqual(3, rc)
        self.assertEqual(self.expected(), sorted(r['consumer'] for r in rows))
        self.assertEqual(sorted(self.nodes), allocation_reads(first))
        # Unchanged: the provider list, and the providers the two orphans'
        # findings rest on; every other request as the first scan sent it.
        again, again_rows, second = self.scan()
        self.assertEqual((rc, rows), (again, again_rows))
        self.assertEqual(sorted(self.nodes[1:3]), allocation_reads(second))
        self.assertEqual(1, second.count(('GET', '/resource_providers')))
        unread = collections.Counter(
            ('GET', PROVIDERS + rp + ALLOCATIONS)
            for rp in (self.nodes[0], self.nodes[3]))
        self.assertEqual(collections.Counter(first) - unread,
                         collections.Counter(second))
        # A server booted on the fourth node moves its generation: read.
        self.boot('host3', self.nodes[3])
        _rc, _rows, third = self.scan()
        self.assertEqual(sorted(self.nodes[1:]), allocation_reads(third))
        # DELETE /allocations/{c} bumps no generation: the kept read
        # shows the orphan, and its provider's read again hides it.
        self.placement.request('DELETE', '/allocations/%s' % self.stranger)
        rc, rows, requests = self.scan()
        self.assertEqual([self.gone], [r['consumer'] for r in rows])
        self.assertEqual(sorted(self.nodes[1:3]), allocation_reads(requests))
        # What was read again is kept: the stranger's provider is not read
        # again, nothing there rests on it.
        _rc, _rows, requests = self.scan()
        self.assertEqual([self.nodes[1]], allocation_reads(requests))

    def test_the_file(self):
        """Beside the journals, mode 0600, one line of header and one of
        payload. Every kind of file the scan cannot trust (the unit
        tests try each way a file can be wrong) means a full read, the
        same rows, nothing raised, and the reason said at debug level;
        removed, the next scan reads everything again.
        """
        rc, rows, _requests = self.scan()
        path = self.kept_file()
        self.assertEqual(0o600, stat.S_IMODE(os.stat(path).st_mode))
        with open(path, 'rb') as f:
            good = f.read()
        head, payload = good.split(b'\n')
        header = json.loads(head)
        self.assertEqual(kept_reads.FORMAT, header['format'])
        self.assertEqual(['http', self.placement.endpoint[len('http://'):],
                          ''], header['cloud']['placement'])
        self.assertIn('api_database', header['cloud'])
        self.assertEqual(hashlib.sha256(payload).hexdigest(),
                         header['sha256'])
        kept = json.loads(payload)
        self.assertEqual(sorted(self.nodes), sorted(kept))
        generation, held = kept[self.nodes[1]]
        self.assertEqual(
            self.placement.provider_allocations(self.nodes[1])[
                'resource_provider_generation'], generation)
        self.assertEqual({self.live[1]: base.FLAVOR, self.gone: base.FLAVOR},
                         held)

        def rewritten(**changes):
            return json.dumps(dict(header, **changes)).encode() + (
                b'\n' + payload)

        checked = {
            'truncated': (good[:len(good) // 2], 'damaged'),
            'another version': (rewritten(version=kept_reads.VERSION + 1),
                                'of another version'),
            'another cloud': (rewritten(cloud={
                'placement': ['http', '192.0.2.1:8778', '']}),
                'of another cloud'),
            'a payload altered': (head + b'\n' + payload.replace(
                b'"VCPU":1', b'"VCPU":2', 1), 'does not match its checksum'),
        }
        for what, (data, why) in checked.items():
            with open(path, 'wb') as f:
                f.write(data)
            again, again_rows, requests = self.scan()
            self.assertEqual((rc, rows), (again, again_rows), what)
            self.assertEqual(sorted(self.nodes), allocation_reads(requests),
                             what)
            self.assertIn('a full read: ', self.logged, what)
            self.assertIn(why, self.logged.split('a full read: ')[1].split(
                '\n')[0], what)
        # Written again whole: the next scan keeps.
        self.assertEqual(sorted(self.nodes[1:3]),
                         allocation_reads(self.scan()[2]))
        os.remove(path)
        again, again_rows, requests = self.scan()
        self.assertEqual((rc, rows), (again, again_rows))
        self.assertEqual(sorted(self.nodes), allocation_reads(requests))
        self.assertIn('a full read: no kept reads yet', self.logged)
        # A directory where the file goes: read in full every time, and
        # the scan still succeeds.
        os.remove(path)
        os.mkdir(path)
        for _i in range(2):
            again, again_rows, requests = self.scan()
            self.assertEqual((rc, rows), (again, again_rows))
            self.assertEqual(sorted(self.nodes), allocation_reads(requests))

    def test_full_read(self):
        """--full-read and --all read every provider (a zero interval
        too: the unit tests); the metrics say which scans did; scoped
        scans are none.
        """
        def full_read(*argv):
            mark = len(self.placement.requests)
            rc, out, err = self.manage('allocations', 'list', '--format',
                                       'prometheus', *argv)
            self.assertEqual(3, rc, err)
            return [line for line in out.splitlines()
                    if line.startswith('nova_orphans_scan_full_read ')
                    ], allocation_reads(self.placement.requests_since(mark))
        self.scan()
        self.assertEqual((['nova_orphans_scan_full_read 0.0'],
                          sorted(self.nodes[1:3])), full_read())
        for argv in (['--full-read'], ['--all']):
            self.assertEqual((['nova_orphans_scan_full_read 1.0'],
                              sorted(self.nodes)), full_read(*argv), argv)
        self.assertEqual('Invalid input: --full-read-interval must not be '
                         'negative', self.manage(
                             'allocations', 'list',
                             '--full-read-interval', '-1')[2].strip()[
                                 len('ERROR: '):])
        # --host reads its tree, kept reads too, and --resource-provider
        # the same; neither counts as a full read.
        rc, rows, requests = self.scan('--host', 'host3')
        self.assertEqual((0, []), (rc, rows))
        self.assertEqual([], allocation_reads(requests))
        rc, rows, requests = self.scan('--resource-provider', self.nodes[1])
        self.assertEqual([self.gone], [r['consumer'] for r in rows])
        self.assertEqual([self.nodes[1]], allocation_reads(requests))
        rc, rows, requests = self.scan('--host', 'host1', '--full-read')
        self.assertEqual([self.gone], [r['consumer'] for r in rows])
        self.assertEqual([self.nodes[1]], allocation_reads(requests))
        _rc, _rows, requests = self.scan()
        self.assertEqual(sorted(self.nodes[1:3]), allocation_reads(requests))

    def test_deleted_allocations_of_a_live_server(self):
        """The one thing generations cannot show: a live server's
        allocations removed by DELETE /allocations/{c}. The kept scan
        still sees them held, so missing_allocations appears only at the
        next full read: --full-read, or once full_read_interval passed.
        So is a provider re-created up to its kept generation.
        """
        self.scan()
        missing = self.live[0]
        self.placement.request('DELETE', '/allocations/%s' % missing)
        _rc, rows, requests = self.scan()
        self.assertEqual(self.expected(),
                         sorted(r['consumer'] for r in rows))
        self.assertNotIn(self.nodes[0], allocation_reads(requests))
        _rc, rows, requests = self.scan('--full-read')
        self.assertEqual(sorted(self.expected() + [missing]),
                         sorted(r['consumer'] for r in rows))
        self.assertEqual('missing_allocations',
                         [r for r in rows
                          if r['consumer'] == missing][0]['reason'])
        # Kept from the full read: it stays.
        _rc, again, _requests = self.scan()
        self.assertEqual(rows, again)

        # The bound: once full_read_interval has passed since the last
        # full read began, the next scan is one.
        second = self.live[3]
        self.placement.request('DELETE', '/allocations/%s' % second)
        self.assertNotIn(second, [r['consumer'] for r in self.scan()[1]])
        self.assertNotIn(second, [r['consumer'] for r in self.scan(
            '--full-read-interval', '600')[1]])
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.readers.kept_reads._now',
            lambda: time.time() + 601))
        _rc, rows, requests = self.scan('--full-read-interval', '600')
        self.assertIn(second, [r['consumer'] for r in rows])
        self.assertEqual(sorted(self.nodes), allocation_reads(requests))

        # A provider deleted and re-created under its uuid starts again
        # at generation 0: should it reach the generation its kept read
        # had, the kept read stands, and what was written there since is
        # seen at the next full read.
        spare = self.placement.create_provider(
            'spare', inventory=base.INVENTORY, traits=['CUSTOM_SPARE'])
        self.nova.add_compute_node('cell1', 'spare', uuid=spare)
        self.scan()
        self.assertEqual(204, self.placement.delete_provider(
            spare).status_code)
        self.placement.create_provider('spare', uuid=spare,
                                       inventory=base.INVENTORY)
        leaked = str(uuidlib.uuid4())
        self.allocate(leaked, spare)
        self.assertEqual(2, self.placement.provider_allocations(spare)[
            'resource_provider_generation'])
        self.assertNotIn(leaked, [r['consumer'] for r in self.scan()[1]])
        self.assertIn(leaked, [r['consumer']
                               for r in self.scan('--full-read')[1]])

    def test_clean_and_restore_after_default_scans(self):
        """A clean after kept scans repairs exactly the orphans a full
        read finds, each read again before its write, and its restore
        puts back exactly what was there.
        """
        self.scan()
        self.scan()
        # Removed meanwhile, unseen by any generation: not repaired.
        self.placement.request('DELETE', '/allocations/%s' % self.stranger)
        before = self.placement.dump_state(generations=False)
        journal = os.path.join(self.tmp, 'clean.jsonl')
        rc, out, err = self.manage('allocations', 'clean', '--journal',
                                   journal, '--format', 'json')
        self.assertEqual(4, rc, err)
        self.assertEqual([(self.gone, 'done')],
                         [(r['consumer'], r['outcome'])
                          for r in json.loads(out)])
        after = dict(before)
        after.pop(self.gone)
        self.assertEqual(after, self.placement.dump_state(generations=False))
        # The clean's writes moved the generation: read, and nothing left.
        rc, rows, requests = self.scan()
        self.assertEqual((0, []), (rc, rows))
        self.assertEqual([self.nodes[1]], allocation_reads(requests))
        rc, out, err = self.manage('allocations', 'restore', '--journal',
                                   journal, '--format', 'json')
        self.assertEqual(4, rc, err)
        self.assertEqual(before, self.placement.dump_state(generations=False))
        rc, rows, _requests = self.scan()
        self.assertEqual([self.gone], [r['consumer'] for r in rows])

    def test_providers_list(self):
        """A deleted compute node's tree rests on every provider of it;
        the live trees are not read again.
        """
        child = self.add_child(self.nodes[0], 'host0-bw',
                               {'NET_BW_EGR_KILOBIT_PER_SEC': 1000})
        nodes = self.nova.table('cell1', 'compute_nodes')
        self.nova.execute('cell1', nodes.update().where(
            nodes.c.uuid == self.nodes[0]).values(deleted=nodes.c.id))

        def providers(*argv):
            start = len(self.placement.requests)
            rc, out, err = self.manage('providers', 'list', '--format',
                                       'json', *argv)
            self.assertEqual(3, rc, err)
            return (json.loads(out),
                    allocation_reads(self.placement.requests_since(start)))
        rows, reads = providers()
        self.assertEqual([self.nodes[0], child], [r['uuid'] for r in rows])
        self.assertEqual(sorted(self.nodes + [child]), reads)
        again, reads = providers()
        self.assertEqual(rows, again)
        # The tree, and where its allocation findings' consumers hold.
        self.assertEqual(sorted([self.nodes[0], child]), reads)
        self.assertEqual(rows, providers('--full-read')[0])
