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
"""Every cell at once, within a timeout.

As nova's own scatter_gather_cells: a cell whose database hangs costs
the run its timeout, never more, and cannot hold the others up. Its
thread is left to end on its own (a daemon: it never keeps the process
alive), and what it returns after the timeout is ignored.
"""

import threading
import time

# What a task still running at the timeout gives.
TIMED_OUT = object()


def gather(tasks, timeout):
    """{key: what ``task()`` returned, or TIMED_OUT} of ``tasks``,
    {key: (thread name, task)}, each run in a thread of its own, all at
    once, all given the same ``timeout`` seconds from now. A task
    handles its own errors: one that raises gives TIMED_OUT too, having
    given nothing in time.
    """
    results = {}
    lock = threading.Lock()

    def run(key, task):
        result = task()
        with lock:
            results.setdefault(key, result)

    threads = []
    for key, (name, task) in tasks.items():
        thread = threading.Thread(target=run, args=(key, task), name=name,
                                  daemon=True)
        thread.start()
        threads.append((key, thread))
    deadline = time.monotonic() + timeout
    for key, thread in threads:
        thread.join(max(0, deadline - time.monotonic()))
        with lock:
            results.setdefault(key, TIMED_OUT)
    # A late thread must not change what was already reported.
    with lock:
        return dict(results)
