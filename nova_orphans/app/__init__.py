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
"""What each command does, for both front ends.

``nova-orphans-manage`` (nova_orphans/cmd) and the ``openstack``
commands (nova_orphans/osc) parse their arguments, build the sources
their run reads (``sources``), call one function here and render its
result; the result says which exit code ends the run
(nova_orphans.exit_codes). Everything between, the audit, the repairs,
the journal and restore, is here, once:

* ``allocations``: list, clean and restore;
* ``hosts``: list's host view (--group-by host) and a scan's capacity
  metrics: the shapes, and what they need read;
* ``providers``: list and clean of the trees of deleted compute nodes;
* ``sources``: the readers and the placement client of a run, from
  nova.conf (nova's databases) or from osc's clients (the APIs);
* ``results``: what a run found or did, and its exit code.
"""
