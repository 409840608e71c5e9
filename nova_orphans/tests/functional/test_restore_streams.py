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
"""``allocations restore`` of many entries: streams of batches, and in
fast mode each batch's consumers read from placement's database, with
every write still checked against the generation read there.
"""

import fixtures

from nova_orphans.tests.functional import test_clean

COUNT = 12


class RestoreStreamsTestCase(test_clean.RepairTestCase):

    def setUp(self):
        super().setUp()
        self.fast_conf = self.proxied_conf(timeout=10, name='fast.conf')
        with open(self.fast_conf, 'a') as f:
            f.write('\n[placement_database]\nconnection = %s\n' %
                    self.placement.db_url)
        # Small batches, each written in one POST: several batches and
        # streams out of a dozen entries.
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.repair.actions.BATCH', 3))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_orphans.repair.actions.BATCH_MIN', 2))

    def restore_fast(self):
        return self._run('restore', ('--journal', self.journal),
                         self.fast_conf)

    def cleaned(self, hosts):
        """COUNT gone instances over ``hosts``, cleaned; returns them and
        the state before the clean.
        """
        vms = [self.gone(host, rp) for n in range(COUNT)
               for host, rp in [hosts[n % len(hosts)]]]
        initial = self.placement.dump_state()
        rc, rows = self.clean(conf_file=self.fast_conf)
        self.assertEqual(4, rc)
        self.assertEqual({}, self.placement.dump_state())
        self.seen = len(self.proxy.requests())
        return vms, initial

    def big(self):
        """A node that holds COUNT instances."""
        return self.add_node('host3', inventory={
            'VCPU': 64, 'MEMORY_MB': 65536, 'DISK_GB': 100})

    def restore_requests(self, method=None, path=None):
        return [r for r in self.proxy.requests()[self.seen:]
                if (method is None or r.method == method) and
                (path is None or r.path == path)]

    def test_many_entries_read_from_the_database(self):
        """Three providers: three streams, each of two batches (3 + 1
        entries). No consumer is read through the API; each consumer is
        written once, the batches in one POST each.
        """
        host3 = self.add_node('host3')
        vms, initial = self.cleaned([('host1', self.host1),
                                     ('host2', self.host2),
                                     ('host3', host3)])
        rc, rows = self.restore_fast()
        self.assertEqual(4, rc)
        self.assertEqual(sorted((vm, 'done') for vm in vms),
                         sorted((r['consumer'], r['outcome']) for r in rows))
        self.assertEqual(initial, self.placement.dump_state())
        self.assertEqual([], [r for r in self.restore_requests('GET')
                              if r.path.startswith('/allocations/')])
        posts = self.restore_requests('POST', '/allocations')
        puts = self.restore_requests('PUT')
        self.assertEqual([3, 3, 3], [len(p.body) for p in posts])
        self.assertEqual(3, len(puts))
        self.assertEqual(
            sorted(vms),
            sorted([c for p in posts for c in p.body] +
                   [p.path.split('/')[-1] for p in puts]))
        # The consumers were gone: each write says so (no generation).
        self.assertEqual(
            {None}, {b['consumer_generation'] for p in posts
                     for b in p.body.values()} |
            {p.body['consumer_generation'] for p in puts})

    def test_consumer_changed_since_the_clean_is_refused(self):
        vms, initial = self.cleaned([('host3', self.big())])
        changed = vms[5]
        self.allocate(changed, self.host2, resources=test_clean.BIGGER)
        rc, rows = self.restore_fast()
        self.assertEqual(1, rc)
        self.assertEqual(
            sorted((vm, 'failed: refused: consumer %s changed since the '
                        'repair' % vm if vm == changed else 'done')
                   for vm in vms),
            sorted((r['consumer'], r['outcome']) for r in rows))
        self.assertEqual(dict(initial, **{changed: test_clean.held(
            {self.host2: test_clean.BIGGER})}), self.placement.dump_state())
        self.assertEqual([], [r for r in self.restore_requests('GET')
                              if r.path.startswith('/allocations/')])

    def test_write_carries_the_generation_read_from_the_database(self):
        """A consumer written between the batch's read and its POST: the
        POST is refused as a whole (409), and each entry of it is read
        again and judged on its own: the changed one is refused.
        """
        vms, initial = self.cleaned([('host3', self.big())])
        # One stream (one provider), newest entries first.
        first = [c for e in self.entries()[-3:] for c in e['consumers']]
        changed = first[0]
        self.proxy.inject('POST', '/allocations', before=lambda: (
            self.allocate(changed, self.host2)))
        rc, rows = self.restore_fast()
        self.assertEqual(1, rc)
        self.assertEqual(
            sorted((vm, 'failed: refused: consumer %s changed since the '
                        'repair' % vm if vm == changed else 'done')
                   for vm in vms),
            sorted((r['consumer'], r['outcome']) for r in rows))
        self.assertEqual(dict(initial, **{changed: test_clean.held(
            {self.host2: test_clean.FLAVOR})}), self.placement.dump_state())
        posts = self.restore_requests('POST', '/allocations')
        self.assertEqual([409, 204, 204, 204],
                         [p.result for p in posts])
        self.assertEqual(sorted(first), sorted(posts[0].body))
        # Only the refused batch's entries were read again, one by one.
        self.assertEqual(
            sorted('/allocations/' + c for c in first),
            sorted(r.path for r in self.restore_requests('GET')
                   if r.path.startswith('/allocations/')))
