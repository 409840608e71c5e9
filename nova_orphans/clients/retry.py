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
"""Transient faults: reads retried within budgets, writes never blindly.

An haproxy in front of a restarting placement answers 503 with an HTML
page, resets connections or is slow, and a write can be applied while
its answer is lost. A read (GET, HEAD) is sent again after such a fault,
as many times as keystoneauth's adapter options say (``connect_retries``,
``status_code_retries``, ``retriable_status_codes``), after a jittered
exponential delay (a fixed one when ``connect_retry_delay`` or
``status_code_retry_delay`` is set, as in keystoneauth) or the
``Retry-After`` the answer asks for.

The loop is this module's, not keystoneauth's own, which is asked for
no retry (``connect_retries=0``, ``status_code_retries=0``): keystoneauth
would resend a write whose connection broke after it was sent, cannot
share a budget between requests, adds no jitter and counts nothing.

One ``Retries`` per run holds what the requests share: the budget (once
a service has failed every request for ``budget`` seconds, its faults
are no longer retried, so that a service down for good ends the run),
the deadline, after which no request is sent, and the counts for the
summary and the metrics.

A write (PUT, POST, DELETE) is sent once: a fault on it may have lost
only its answer, so the caller reads what it wrote and decides (see
repair.writes.write). ``fault_reason`` names what happened to it. The
options, the defaults and what is logged: ``doc/source/admin/faults.rst``.
"""

import collections
import random
import threading
import time
import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging

from nova_orphans.conf import orphans as orphans_conf
from nova_orphans.conf import service as service_conf
from nova_orphans import exception
from nova_orphans.i18n import _

LOG = logging.getLogger(__name__)

# The defaults (see conf/service.py). The delays of eight retries (see
# Retries.delay) keep a service that refuses everything from holding a
# run for long.
RETRIABLE_STATUS_CODES = tuple(service_conf.RETRIABLE_STATUS_CODES)
RETRIES = service_conf.RETRIES
BUDGET = orphans_conf.DEFAULT_RETRY_BUDGET
# Seconds a request may wait for its answer when the configuration sets
# none (the cloud's api_timeout, for openstack).
TIMEOUT = service_conf.TIMEOUT
IDEMPOTENT = frozenset(['GET', 'HEAD'])
# The exponential delays: the first, and the longest.
FIRST_DELAY = 0.1
MAX_DELAY = 2.0
# Reasons a fault is counted under (besides the status codes).
CONNECTION = 'connection'
TIMEOUT_REASON = 'timeout'


def fault_reason(error):
    """``connection`` or ``timeout`` for a keystoneauth error that may
    be transient (the request may never have reached the service, or
    its answer was lost), else None (TLS, a bad URL, keystone's own).
    """
    if isinstance(error, ks_exc.ConnectTimeout):
        return TIMEOUT_REASON
    if isinstance(error, (ks_exc.ConnectFailure,
                          ks_exc.UnknownConnectionError)):
        return CONNECTION
    return None


class DeadlineReached(exception.ServiceUnreachable):
    """The run's deadline passed before a request could be sent."""

    msg_fmt = _('%(service)s request %(method)s %(url)s not sent: the '
                'run\'s deadline (%(deadline)s s) has passed')


class Retries:
    """One run's retry budget, deadline and counts (see the module
    docstring). ``budget``: seconds; ``deadline``: seconds from
    ``started`` (a time.monotonic(); by default now), or None.
    ``sleep``, ``clock`` and ``rng``: for tests.
    """

    def __init__(self, budget=BUDGET, deadline=None, started=None,
                 sleep=time.sleep, clock=time.monotonic, rng=None):
        self._sleep = sleep
        self._clock = clock
        self._random = rng or random.Random()
        self._lock = threading.RLock()
        self._failing_since = {}
        # Retries per (service, reason), and the requests retried.
        self.counts = collections.Counter()
        self.requests = 0
        # Requests sent per service, and the seconds they took in all
        # (for --debug: see sent).
        self.sent = collections.Counter()
        self.seconds = collections.Counter()
        self.budget = budget
        self.deadline_seconds = None
        self._deadline = None
        self.set_deadline(deadline, started)

    def set_deadline(self, seconds, started=None):
        """The run ends ``seconds`` after ``started`` (by default now;
        None or 0: never).
        """
        if started is None:
            started = self._clock()
        self.deadline_seconds = seconds or None
        self._deadline = (started + seconds) if seconds else None

    def left(self):
        """Seconds to the deadline, or None."""
        return (None if self._deadline is None
                else self._deadline - self._clock())

    def check(self, service, method, url):
        """Raise DeadlineReached once the deadline has passed."""
        left = self.left()
        if left is not None and left <= 0:
            raise DeadlineReached(service=service, method=method, url=url,
                                  deadline=self.deadline_seconds)

    def now(self):
        """The run's clock, for ``timed``."""
        return self._clock()

    def timed(self, service, method, url, started, answer):
        """One request sent at ``started`` (``now()``): counted
        (``sent``, ``seconds``) and, at debug level, logged with its
        method, path, status (``answer``: a response, or the error it
        met) and time; never a header, a token or the endpoint's
        address, only the path.
        """
        took = self._clock() - started
        with self._lock:
            self.sent[service] += 1
            self.seconds[service] += took
        if LOG.isEnabledFor(logging.DEBUG):
            status = getattr(answer, 'status_code', None)
            LOG.debug('%(service)s %(method)s %(path)s: %(status)s in '
                      '%(seconds).3f s',
                      {'service': service, 'method': method,
                       'path': path_of(url), 'seconds': took,
                       'status': status if status is not None else
                       ' '.join(str(answer).split()) or type(answer).__name__})

    def answered(self, service):
        """The service gave an answer that is no transient fault."""
        if self._failing_since.get(service) is not None:
            self._failing_since[service] = None

    def delay(self, attempt, fixed=None, retry_after=None):
        """Seconds to wait before retry number ``attempt`` (from 0)."""
        if retry_after is not None:
            return retry_after
        if fixed:
            return fixed
        ceiling = min(MAX_DELAY, FIRST_DELAY * 2 ** attempt)
        return ceiling * self._random.uniform(0.5, 1.0)

    def retry(self, service, reason, delay, what, first):
        """Whether a request that met a transient fault (``reason``) may
        be sent again after ``delay`` seconds; if so, counts it, logs it
        and waits. ``first``: it is this request's first retry; ``what``
        names the request for the log.
        """
        now = self._clock()
        with self._lock:
            since = self._failing_since.get(service)
            if since is None:
                since = self._failing_since[service] = now
            if now + delay - since > self.budget:
                LOG.info('%(what)s: %(reason)s; not retried: %(service)s '
                         'has failed every request for %(failing).1f s '
                         '(retry budget %(budget)s s)',
                         {'what': what, 'reason': reason,
                          'service': service, 'failing': now - since,
                          'budget': self.budget})
                return False
            left = self.left()
            if left is not None and delay >= left:
                LOG.info('%(what)s: %(reason)s; not retried: the run\'s '
                         'deadline is %(left).1f s away',
                         {'what': what, 'reason': reason, 'left': left})
                return False
            self.counted(service, reason, first)
        LOG.info('%(what)s: %(reason)s; retrying in %(delay).2f s',
                 {'what': what, 'reason': reason, 'delay': delay})
        if delay > 0:
            self._sleep(delay)
        return True

    def counted(self, service, reason, first=True):
        """Count one transient fault met and got over (``first``: the
        first of its request).
        """
        with self._lock:
            self.counts[(service, str(reason))] += 1
            if first:
                self.requests += 1

    def lost(self, service, reason, what):
        """A write's answer was lost (``reason``): count it, as its
        request is settled by reading back what it wrote.
        """
        LOG.info('%(what)s: %(reason)s; the write may have been applied: '
                 'reading it back', {'what': what, 'reason': reason})
        with self._lock:
            since = self._failing_since.get(service)
            if since is None:
                self._failing_since[service] = self._clock()
            self.counted(service, reason)

    def may_write_again(self, service, attempt, limit, what):
        """After a lost answer and a read that found the write not
        applied: whether to send it again (the budget and ``limit``
        allow it), after the delay.
        """
        if attempt >= limit:
            return False
        delay = self.delay(attempt)
        now = self._clock()
        with self._lock:
            since = self._failing_since.get(service) or now
            left = self.left()
            if now + delay - since > self.budget or (
                    left is not None and delay >= left):
                return False
        LOG.info('%(what)s: not applied; sending it again in %(delay).2f s',
                 {'what': what, 'delay': delay})
        self._sleep(delay)
        return True


class RetryingAdapter:
    """A keystoneauth adapter whose reads are retried (see the module
    docstring); everything else is the wrapped adapter's.

    ``service``: the name the counts and messages use; the retry options
    default to the wrapped adapter's, then to this module's defaults.
    """

    def __init__(self, adapter, retries, service=None, timeout=None):
        self._adapter = adapter
        self.retries = retries
        self.service = service or adapter.service_type
        self.connect_retries = _first(adapter.connect_retries, RETRIES)
        self.status_code_retries = _first(adapter.status_code_retries,
                                          RETRIES)
        self.retriable_status_codes = frozenset(
            adapter.retriable_status_codes or RETRIABLE_STATUS_CODES)
        self.connect_retry_delay = adapter.connect_retry_delay
        self.status_code_retry_delay = adapter.status_code_retry_delay
        self.timeout = timeout

    def __getattr__(self, name):
        return getattr(self._adapter, name)

    def request(self, url, method, idempotent=None, **kwargs):
        """The wrapped adapter's ``request``, retried if ``method`` is a
        read (``idempotent``: also another method that may be sent twice,
        such as a PUT that creates a name if absent).
        """
        kwargs['connect_retries'] = 0
        kwargs['status_code_retries'] = 0
        if idempotent is None:
            idempotent = method in IDEMPOTENT
        what = '%s %s %s' % (self.service, method, url)
        connect = status = 0
        while True:
            self.retries.check(self.service, method, url)
            self._timeout(kwargs)
            started = self.retries.now()
            try:
                resp = self._adapter.request(url, method, **kwargs)
            except ks_exc.ClientException as e:
                self.retries.timed(self.service, method, url, started, e)
                reason = fault_reason(e)
                if (reason is None or not idempotent or
                        connect >= self.connect_retries or
                        not self.retries.retry(
                            self.service, reason, self.retries.delay(
                                connect, self.connect_retry_delay),
                            what, first=not (connect or status))):
                    raise
                connect += 1
                continue
            self.retries.timed(self.service, method, url, started, resp)
            code = resp.status_code
            if code not in self.retriable_status_codes:
                self.retries.answered(self.service)
                return resp
            if (not idempotent or status >= self.status_code_retries or
                    not self.retries.retry(
                        self.service, code, self.retries.delay(
                            status, self.status_code_retry_delay,
                            _retry_after(resp)),
                        what, first=not (connect or status))):
                return resp
            status += 1

    def _timeout(self, kwargs):
        """Every request waits at most the timeout (the session's, else
        this adapter's), and never past the run's deadline.
        """
        timeout = self._adapter.session.timeout or self.timeout
        left = self.retries.left()
        if left is not None:
            timeout = min(timeout, max(left, 0.1)) if timeout else left
        if timeout:
            kwargs['timeout'] = timeout


def path_of(url):
    """The path (and query) of a request's ``url``, whether the URL is
    whole or relative to the endpoint ('/' for the endpoint itself):
    what a log may show of it.
    """
    parts = urllib.parse.urlsplit(url)
    return (parts.path or '/') + ('?' + parts.query if parts.query else '')


def _first(value, default):
    return default if value is None else value


def _retry_after(resp):
    """Seconds a 429 or 503 asks to wait (Retry-After in seconds), or
    None. An HTTP date, or nothing, leaves the delay to the backoff.
    """
    value = resp.headers.get('Retry-After') if resp.headers else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
