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
"""The console script as a process, and a proxy that can stop it mid-write.

The crash and concurrency tests run ``nova-orphans-manage`` exactly as an
operator does, as a process of its own (the console script of the
test environment, importing the tree under test first), so that it can
be killed with SIGKILL or run twice at once. They stop it at an exact
step of a repair by holding one of its requests in the fault proxy:

* held before it is forwarded, the request's journal entries are on
  disk and placement has not seen it; the test kills the process and
  then either drops the request (it was never sent) or forwards it
  (placement applies it after the tool died: it was on its way);
* held after placement answered, the change is applied and the tool
  has not heard so.

Past its last request, a run is held where its journal's end record is
about to be written (held_at_end_record): a hook in its own process,
which says when it is there and then waits for the kill.

The processes are runners.start's; a run that a test only waits for
(the restore after a kill) is runners.manage's, in the test's process.
"""

import json
import os
import select
import signal
import subprocess
import sys
import threading
import urllib.parse
import uuid as uuidlib

import fixtures

from nova_orphans.tests.functional import base
from nova_orphans.tests.functional.fixtures import faults
from nova_orphans.tests.functional.fixtures import serving
from nova_orphans.tests import runners

# Holds give up after this long, so a test that forgot one never hangs.
HOLD_TIMEOUT = 120
BIG = {'VCPU': 100000, 'MEMORY_MB': 100000000, 'DISK_GB': 1000000}


def kill(proc):
    """SIGKILL, as the OOM killer or ``kill -9`` do; returns stderr."""
    proc.send_signal(signal.SIGKILL)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, proc.returncode
    return err


class Hold(faults.Rule):
    """One request stopped at the proxy until the test releases it."""

    def __init__(self, method, path, when, skip, match):
        super().__init__(method, path, skip=skip, match=match)
        self.when = when
        self.request = None
        # Placement's status, for a request held after it answered.
        self.result = None
        self.arrived = threading.Event()
        self._released = threading.Event()
        self._forward = True

    def wait(self, proc=None, timeout=HOLD_TIMEOUT):
        """Wait until the request is held; fails if ``proc`` ends first."""
        step = 0.05
        waited = 0.0
        while not self.arrived.wait(step):
            waited += step
            if proc is not None and proc.poll() is not None:
                out, err = proc.communicate()
                raise AssertionError(
                    'the command ended (%s) before %s %s was held:\n%s\n%s'
                    % (proc.returncode, self.method, self.path.pattern,
                       out, err))
            if waited > timeout:
                raise AssertionError('%s %s never arrived' % (
                    self.method, self.path.pattern))
        return self.request

    def release(self, forward=True):
        """Let the request go on: a held-before request is forwarded to
        placement, or with ``forward=False`` never sent at all.
        """
        self._forward = forward
        self._released.set()


class HoldingProxy(faults.FaultProxy):
    """The fault proxy, able to hold a request before or after placement
    handles it.
    """

    def _setUp(self):
        super()._setUp()
        self._holds = []
        # Runs before the proxy's own cleanups (wait_idle): a held
        # request must not keep the proxy busy forever.
        self.addCleanup(self.release_all)

    def hold(self, method, path, when='before', skip=0, match=None):
        """Hold the first matching request (after ``skip`` others);
        ``match(body)`` further narrows which requests count.
        """
        hold = Hold(method, path, when, skip, match)
        with self._lock:
            self._holds.append(hold)
        return hold

    def release_all(self):
        for hold in list(self._holds):
            hold.release(forward=False)

    def _held(self, method, path, body):
        path = urllib.parse.urlsplit(path).path
        parsed = json.loads(body) if body else None
        with self._lock:
            for hold in self._holds:
                if hold.arrived.is_set() or not hold.matches(method, path,
                                                             parsed):
                    continue
                if hold.skip:
                    hold.skip -= 1
                    continue
                hold.request = parsed
                return hold
        return None

    def _forward(self, method, path, headers, body):
        hold = self._held(method, path, body)
        if hold is not None and hold.when == 'before':
            hold.arrived.set()
            hold._released.wait(HOLD_TIMEOUT)
            if not hold._forward:
                # Never sent; nobody is left to read the answer.
                return 503, [], b'{}'
        answer = super()._forward(method, path, headers, body)
        if hold is not None and hold.when == 'after':
            hold.result = answer[0]
            hold.arrived.set()
            hold._released.wait(HOLD_TIMEOUT)
        return answer


# nova-orphans-manage in a process of its own, held for good right
# before its journal's end record is written: every other line of its
# run is on disk (fsync'd) when it says so on the file descriptor it is
# given, and it writes nothing more.
_AT_END_RECORD = """
import os
import sys
import threading

from nova_orphans.repair import journal

append = journal.Journal._append


def held(self, lines):
    if any('end' in line for line in lines):
        os.write(int(sys.argv[1]), b'at the end record')
        threading.Event().wait()
    return append(self, lines)


journal.Journal._append = held
from nova_orphans.cmd import manage  # noqa: E402
sys.exit(manage.main(sys.argv[2:]))
"""


def held_at_end_record(argv, timeout=HOLD_TIMEOUT):
    """``nova-orphans-manage`` with ``argv`` (its arguments, as
    runners.manage_argv gives them after the script) running, once it is
    held at its journal's end record (see _AT_END_RECORD): the process,
    for the test to kill. Fails if it ends before.
    """
    read, write = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, '-c', _AT_END_RECORD, str(write)] + list(argv),
            env=runners.environment(), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            pass_fds=(write,))
        os.close(write)
        write = None
        ready, _w, _x = select.select([read], [], [], timeout)
        said = os.read(read, 64) if ready else b''
    finally:
        os.close(read)
        if write is not None:
            os.close(write)
    if said != b'at the end record':
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError('%s ended (%s) before its end record:\n%s\n%s'
                             % (' '.join(argv), proc.returncode, out, err))
    return proc


def batch(min_size):
    """A ``match`` for POST /allocations bodies of at least ``min_size``
    consumers (a batch, not a move between two consumers).
    """
    return lambda body: isinstance(body, dict) and len(body) >= min_size


class Cloud:
    """Orphans of both batched actions and a move, among live instances.

    Built with as few requests as possible (one POST /allocations for
    all consumers), so that each test can afford a fresh one; with
    ``strangers`` over 100 the tool writes batches of 100.
    """

    def __init__(self, test, deleted=3, strangers=104, evacuated=6,
                 returned=1, live=2):
        self.test = test
        nova, placement = test.nova, test.placement
        self.host1 = test.add_node('host1', inventory=BIG)
        self.host2 = test.add_node('host2', inventory=BIG)
        self.host3 = test.add_node('host3', inventory=BIG)
        flavor = base.FLAVOR
        allocations = {}
        # Instances forced to deleted in SQL, and consumers nova never
        # knew: emptied (delete_consumer), many to a request.
        self.deleted = []
        for _n in range(deleted):
            vm = nova.add_instance('cell1', host='host1', node='host1',
                                   vm_state='error')
            nova.force_delete_instance('cell1', vm)
            self.deleted.append(vm)
            allocations[vm] = {self.host1: flavor}
        self.strangers = [str(uuidlib.uuid4()) for _n in range(strangers)]
        for consumer in self.strangers:
            allocations[consumer] = {self.host1: flavor}
        # Evacuated from host2 to host3: host2's part is removed
        # (remove_provider), many to a request.
        self.evacuated = []
        for _n in range(evacuated):
            vm = nova.add_instance('cell1', host='host3', node='host3')
            nova.add_migration('cell1', vm, migration_type='evacuation',
                               status='done', source_compute='host2',
                               source_node='host2', dest_compute='host3',
                               dest_node='host3')
            self.evacuated.append(vm)
            allocations[vm] = {self.host2: flavor, self.host3: flavor}
        # Failed cold migrations: the migration's allocation moves back
        # to its instance (return_to_instance), one move per request.
        self.returned = []
        for _n in range(returned):
            vm = nova.add_instance('cell1', host='host1', node='host1')
            mig = nova.add_migration(
                'cell1', vm, migration_type='migration', status='error',
                source_compute='host1', source_node='host1',
                dest_compute='host2', dest_node='host2')
            self.returned.append((vm, mig))
            allocations[mig] = {self.host1: flavor}
        # Live instances on every host: never touched.
        self.live = []
        for host, rp in (('host1', self.host1), ('host2', self.host2),
                         ('host3', self.host3)):
            for _n in range(live):
                vm = nova.add_instance('cell1', host=host, node=host)
                self.live.append(vm)
                allocations[vm] = {rp: flavor}
        body = {c: {'allocations': {rp: {'resources': dict(res)}
                                    for rp, res in allocs.items()},
                    'project_id': base.PROJECT, 'user_id': base.USER,
                    'consumer_generation': None}
                for c, allocs in allocations.items()}
        # 1.37: untyped consumers, as nova 34 writes them.
        resp = placement.request('POST', '/allocations', json=body,
                                 version='1.37')
        assert resp.status_code == 204, resp.text
        self.orphans = (len(self.deleted) + len(self.strangers) +
                        len(self.evacuated) + len(self.returned))

    def state(self):
        """Placement's allocations, consumer generations aside: a
        restore re-creates emptied consumers, and no client can set a
        generation.
        """
        return self.test.placement.dump_state(generations=False)

    def repaired(self, before):
        """What a complete, uninterrupted ``clean`` leaves, from the
        state ``before`` it.
        """
        after = {c: dict(doc, allocations=dict(doc['allocations']))
                 for c, doc in before.items()
                 if c not in self.deleted and c not in self.strangers}
        for vm in self.evacuated:
            del after[vm]['allocations'][self.host2]
        for vm, mig in self.returned:
            after[vm] = dict(after.pop(mig))
        return after

    def undone(self, before, consumers):
        """The repaired state with the repairs of ``consumers`` (as the
        rows of a run name them) undone.
        """
        state = self.repaired(before)
        for consumer in consumers:
            state[consumer] = before[consumer]
        for vm, mig in self.returned:
            if mig in consumers:
                del state[vm]
        return state


_SERVE = '''
import sys
from nova_orphans.tests.functional.fixtures import placement
server = placement.PlacementServer()
server.setUp()
print(server.endpoint, flush=True)
sys.stdin.read()
server.cleanUp()
'''


class OtherPlacement(fixtures.Fixture):
    """A second, unrelated placement, served by a process of its own:
    placement's database context is global, so one process serves one.
    """

    def _setUp(self):
        self._proc = subprocess.Popen(
            [sys.executable, '-c', _SERVE], env=runners.environment(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True)
        self.addCleanup(self._stop)
        self.endpoint = self._proc.stdout.readline().strip()
        if not self.endpoint:
            raise RuntimeError('the other placement did not start')

    def _stop(self):
        serving.stop(self._proc)
