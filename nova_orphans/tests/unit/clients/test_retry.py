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
"""clients.retry: which faults are retried, how long, and what is
counted; with a fake adapter and a fake clock (no waiting).
"""

import logging
import random

import fixtures
from keystoneauth1 import exceptions as ks_exc
from oslotest import base

from nova_orphans.clients import retry


class FakeClock:

    def __init__(self):
        self.now = 1000.0
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(round(seconds, 3))
        self.now += seconds


class FakeResponse:

    def __init__(self, status_code, headers=None):
        self.status_code = status_code
        self.headers = headers or {}


class FakeSession:
    timeout = None


class FakeAdapter:
    """Answers from a script: a status, a (status, headers) pair or an
    exception per request; takes as long as ``took`` says.
    """

    service_type = 'placement'
    connect_retries = None
    status_code_retries = None
    retriable_status_codes = None
    connect_retry_delay = None
    status_code_retry_delay = None

    def __init__(self, clock, *script, took=0):
        self.script = list(script)
        self.sent = []
        self.session = FakeSession()
        self.clock = clock
        self.took = took

    def request(self, url, method, **kwargs):
        self.sent.append((method, url, kwargs.get('connect_retries'),
                          kwargs.get('status_code_retries'),
                          kwargs.get('timeout')))
        self.clock.now += self.took
        answer = self.script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, tuple):
            return FakeResponse(*answer)
        return FakeResponse(answer)


class RetryingAdapterTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.clock = FakeClock()
        self.retries = retry.Retries(sleep=self.clock.sleep,
                                     clock=self.clock,
                                     rng=random.Random(1))

    def adapter(self, *script, **kwargs):
        self.fake = FakeAdapter(self.clock, *script,
                                took=kwargs.pop('took', 0))
        for name, value in kwargs.items():
            setattr(self.fake, name, value)
        return retry.RetryingAdapter(self.fake, self.retries,
                                     timeout=retry.TIMEOUT)

    def test_read_retried_after_each_kind_of_fault(self):
        adapter = self.adapter(503, ks_exc.ConnectFailure('reset'), 502,
                               ks_exc.ConnectTimeout('slow'), 504, 429, 200)
        self.assertEqual(200, adapter.request('/x', 'GET').status_code)
        self.assertEqual(7, len(self.fake.sent))
        # keystoneauth is asked for no retry of its own; every request
        # has the timeout.
        self.assertEqual({(0, 0, 60)}, {s[2:] for s in self.fake.sent})
        self.assertEqual({('placement', '503'): 1, ('placement', '502'): 1,
                          ('placement', '504'): 1, ('placement', '429'): 1,
                          ('placement', 'connection'): 1,
                          ('placement', 'timeout'): 1},
                         dict(self.retries.counts))
        self.assertEqual(1, self.retries.requests)

    def test_each_request_timed_and_logged(self):
        """--debug's line of each request: its method, path (no
        endpoint, no header), status or error, and time; each counted.
        """
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_orphans.clients.retry', level=logging.DEBUG,
            format='%(levelname)s %(message)s'))
        adapter = self.adapter(503, ks_exc.ConnectFailure('reset'), 200,
                               took=0.25)
        url = 'http://user:pw@placement:8778/p/resource_providers?in_tree=x'
        adapter.request(url, 'GET', headers={'X-Auth-Token': 'tok'})
        self.assertEqual({'placement': 3}, dict(self.retries.sent))
        self.assertEqual(0.75, self.retries.seconds['placement'])
        path = 'placement GET /p/resource_providers?in_tree=x: '
        self.assertEqual([
            'DEBUG ' + path + '503 in 0.250 s',
            'DEBUG ' + path + 'reset in 0.250 s',
            'DEBUG ' + path + '200 in 0.250 s'],
            [line for line in log.output.splitlines()
             if line.startswith('DEBUG')])
        self.assertEqual('/', retry.path_of(''))
        self.assertEqual('/servers/detail?all_tenants=1',
                         retry.path_of('/servers/detail?all_tenants=1'))

    def test_delays_jittered_exponential(self):
        adapter = self.adapter(*([503] * 9))
        self.assertEqual(503, adapter.request('/x', 'GET').status_code)
        self.assertEqual(9, len(self.fake.sent))
        self.assertEqual(8, len(self.clock.slept))
        ceilings = [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0, 2.0]
        for slept, ceiling in zip(self.clock.slept, ceilings):
            self.assertTrue(ceiling / 2 <= slept <= ceiling,
                            (slept, ceiling))

    def test_fixed_delay_and_retry_after(self):
        adapter = self.adapter(503, (429, {'Retry-After': '3'}), 200,
                               status_code_retry_delay=0.5)
        self.assertEqual(200, adapter.request('/x', 'GET').status_code)
        self.assertEqual([0.5, 3.0], self.clock.slept)

    def test_not_retriable(self):
        for answer in (500, 404, 409, ks_exc.SSLError('bad cert')):
            adapter = self.adapter(answer, 200)
            if isinstance(answer, Exception):
                self.assertRaises(ks_exc.SSLError, adapter.request, '/x',
                                  'GET')
            else:
                self.assertEqual(answer,
                                 adapter.request('/x', 'GET').status_code)
            self.assertEqual(1, len(self.fake.sent))
        self.assertEqual({}, dict(self.retries.counts))

    def test_writes_sent_once(self):
        for method in ('PUT', 'POST', 'DELETE'):
            adapter = self.adapter(503, 200)
            self.assertEqual(503, adapter.request('/x', method).status_code)
            adapter = self.adapter(ks_exc.ConnectFailure('reset'), 200)
            self.assertRaises(ks_exc.ConnectFailure, adapter.request, '/x',
                              method)
            self.assertEqual(1, len(self.fake.sent))
        self.assertEqual([], self.clock.slept)
        self.assertEqual({}, dict(self.retries.counts))

    def test_retries_per_request_from_the_adapter(self):
        adapter = self.adapter(503, 503, 503, status_code_retries=1,
                               connect_retries=0)
        self.assertEqual(503, adapter.request('/x', 'GET').status_code)
        self.assertEqual(2, len(self.fake.sent))
        adapter = self.adapter(ks_exc.ConnectFailure('refused'),
                               connect_retries=0)
        self.assertRaises(ks_exc.ConnectFailure, adapter.request, '/x',
                          'GET')
        self.assertEqual(1, len(self.fake.sent))

    def test_budget_ends_the_retries_of_a_service_that_stays_down(self):
        """Once placement has failed every request for the budget, its
        faults are no longer retried: a request then fails at once.
        """
        self.retries.budget = 3
        adapter = self.adapter(*([503] * 20))
        self.assertEqual(503, adapter.request('/x', 'GET').status_code)
        # Delays of 0.1, 0.2, 0.4, 0.8, 1.6 at most: within 3 s, then
        # the next would pass it.
        self.assertLessEqual(sum(self.clock.slept), 3)
        sent = len(self.fake.sent)
        self.assertLess(sent, 9)
        # Once the budget has passed, a request is sent once.
        self.clock.now += 3
        self.assertEqual(503, adapter.request('/y', 'GET').status_code)
        self.assertEqual(sent + 1, len(self.fake.sent))
        # A good answer starts the count again.
        self.fake.script[:0] = [200, 503, 200]
        self.assertEqual(200, adapter.request('/z', 'GET').status_code)
        self.assertEqual(200, adapter.request('/z', 'GET').status_code)
        self.assertEqual(sent + 4, len(self.fake.sent))

    def test_budget_is_per_service(self):
        self.retries.budget = 1
        placement = self.adapter(*([503] * 5))
        placement.request('/x', 'GET')
        compute = self.adapter(503, 200)
        compute.service = 'compute'
        self.assertEqual(200, compute.request('/y', 'GET').status_code)

    def test_zero_budget_retries_nothing(self):
        self.retries.budget = 0
        adapter = self.adapter(503, 200)
        self.assertEqual(503, adapter.request('/x', 'GET').status_code)

    def test_deadline(self):
        self.retries.set_deadline(10)
        adapter = self.adapter(503, 200, 200)
        self.assertEqual(200, adapter.request('/x', 'GET').status_code)
        # The timeout never reaches past the deadline.
        self.assertLessEqual(self.fake.sent[-1][4], 10)
        self.clock.now += 10
        error = self.assertRaises(retry.DeadlineReached, adapter.request,
                                  '/y', 'GET')
        self.assertEqual('placement request GET /y not sent: the run\'s '
                         'deadline (10 s) has passed', str(error))
        self.assertEqual(8, error.exit_code)
        self.assertEqual(2, len(self.fake.sent))

    def test_retry_not_waiting_past_the_deadline(self):
        self.retries.set_deadline(2)
        adapter = self.adapter((503, {'Retry-After': '5'}), 200)
        self.assertEqual(503, adapter.request('/x', 'GET').status_code)
        self.assertEqual([], self.clock.slept)


class WritesTestCase(base.BaseTestCase):

    def test_lost_and_may_write_again(self):
        clock = FakeClock()
        retries = retry.Retries(budget=5, sleep=clock.sleep, clock=clock,
                                rng=random.Random(1))
        retries.lost('placement', '502', 'PUT /allocations/x')
        self.assertEqual({('placement', '502'): 1}, dict(retries.counts))
        self.assertEqual(1, retries.requests)
        self.assertTrue(retries.may_write_again('placement', 0, 2, 'PUT'))
        self.assertTrue(retries.may_write_again('placement', 1, 2, 'PUT'))
        self.assertFalse(retries.may_write_again('placement', 2, 2, 'PUT'))
        clock.now += 10
        self.assertFalse(retries.may_write_again('placement', 0, 2, 'PUT'))


class FaultReasonTestCase(base.BaseTestCase):

    def test_reasons(self):
        self.assertEqual('timeout',
                         retry.fault_reason(ks_exc.ConnectTimeout('x')))
        self.assertEqual('connection',
                         retry.fault_reason(ks_exc.ConnectFailure('x')))
        self.assertEqual('connection', retry.fault_reason(
            ks_exc.UnknownConnectionError('x', None)))
        self.assertIsNone(retry.fault_reason(ks_exc.SSLError('x')))
        self.assertIsNone(retry.fault_reason(ks_exc.Unauthorized()))
