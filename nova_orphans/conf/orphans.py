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
"""``[nova_orphans]``: the tool's own knobs.

Defaults are chosen for a tool run by hand or from cron: a dead cell or a
slow placement must cost seconds, not oslo.db's 100 s of retries.

An option that a command-line option overrides (``config`` in
app/options.py) has its bounds there, in the option spec, and nowhere
here: nova.conf's value and the command line's are checked by the same
rule, each error naming where the value came from.
"""

from oslo_config import cfg

from nova_orphans.conf import database

orphans_group = cfg.OptGroup(
    'nova_orphans', title='nova-orphans',
    help='Options of nova-orphans itself.')

# Also the openstack plugin's default, which reads no configuration file.
DEFAULT_GRACE_PERIOD = 300
# Also the openstack plugin's --metrics-max-projects default.
DEFAULT_METRICS_MAX_PROJECTS = 20
# Also the openstack plugin's --metrics-max-hosts default.
DEFAULT_METRICS_MAX_HOSTS = 20
# Also the openstack commands' --retry-budget default: longer than a
# placement restart behind haproxy, short enough that a service down
# for good ends a cron run at once.
DEFAULT_RETRY_BUDGET = 15
# Requests in flight at once through the APIs: also the openstack
# commands', and that of the readers and repairs given none.
DEFAULT_CONCURRENCY = 8
# Also the openstack commands' --full-read-interval default: a day.
DEFAULT_FULL_READ_INTERVAL = 24 * 3600

ORPHANS_OPTS = [
    cfg.IntOpt('cell_timeout', default=60, min=1,
               help='Seconds to wait for the cell databases to be read, '
                    'all at once. A cell that takes longer is reported as '
                    'unreadable and its consumers as unverifiable; the run '
                    'goes on. Several slow cells cost the run this long '
                    'once, not once each.'),
    cfg.IntOpt('db_max_retries', default=1, min=1,
               help='Connection attempts when the tool opens a database '
                    '(nova\'s API and cell databases, and placement\'s in '
                    'fast mode), passed to oslo.db as max_retries. Only '
                    'connection errors are retried. Every failed attempt, '
                    'the last one included, is followed by a '
                    'db_retry_interval wait, after which the tool gives '
                    'up on that database. oslo.db\'s default for '
                    'services, 10 attempts 10 s apart, would hold a run '
                    'for over 100 s per unreachable database.'),
    cfg.IntOpt('db_retry_interval', default=1, min=0,
               help='Seconds between connection attempts.'),
    cfg.IntOpt('placement_concurrency', default=DEFAULT_CONCURRENCY, min=1,
               max=64,
               help='Placement requests in flight at once when reading '
                    'provider allocations and when repairing: "clean" '
                    'and "restore" write in streams of batches on '
                    'disjoint providers, half this many, each with an '
                    'equal share of these requests.'),
    cfg.IntOpt('retry_budget', default=DEFAULT_RETRY_BUDGET,
               help='Seconds a service (placement, neutron) may fail every '
                    'request with transient faults (connection errors, '
                    'timeouts, the retriable_status_codes of its group) '
                    'before the run stops retrying it: its requests then '
                    'fail at once, and a run that cannot read ends with '
                    'exit code 8. Within it, each read is retried up to '
                    'connect_retries and status_code_retries times (the '
                    'options of [placement] and [neutron]), with jittered '
                    'exponential delays, and a write whose answer was '
                    'lost is read back and sent again only if it was not '
                    'applied. 0 retries nothing.'),
    cfg.IntOpt('deadline', default=0,
               help='Seconds a run may last: once they have passed, no '
                    'request is sent (a read that is needed ends the run '
                    'with exit code 8; a repair not yet written is '
                    'reported failed) and no request waits beyond them. '
                    '0: no deadline; each request still waits at most '
                    '[placement] timeout.'),
    cfg.IntOpt('grace_period', default=DEFAULT_GRACE_PERIOD,
               help='Seconds after nova last changed a live instance, one '
                    'of its migrations, its latest instance action or (for '
                    'leaked_port_allocation) its network info, during '
                    'which none of its allocations is repaired '
                    '(they are listed as "in_progress"). nova changes its '
                    'database and placement in separate steps: a move '
                    'whose status says it is over may still have its '
                    'allocations moved or deleted by nova a moment later. '
                    'Leftovers last until someone removes them, so waiting '
                    'costs nothing. 0 turns the time limit off; task '
                    'states and unfinished instance action events still '
                    'protect an instance.'),
    cfg.ListOpt('site_rules', default=[],
                help='Site classification rules to run, by entry point name '
                     'in the nova_orphans.rules namespace, in this order. '
                     'They run after the rules protecting unreadable cells '
                     'and other services\' providers and before all others. '
                     'nova-orphans ships "ignore_consumers" and "zun" '
                     '(which [zun_database] connection turns on by '
                     'itself).'),
    cfg.ListOpt('ignored_consumers', default=[],
                help='Consumer uuids the "ignore_consumers" site rule keeps '
                     'out of the orphans (reason "ignored", action "none").'),
    cfg.ListOpt('foreign_projects', default=[],
                help='Ids of the projects whose placement consumers are '
                     'another service\'s, such as the projects Zun\'s '
                     'containers allocate under when Zun shares nova\'s '
                     'compute nodes (host_shared_with_nova). A consumer '
                     'nova has no record of whose project is listed is '
                     '"unmanaged_consumer" (action "none") and never '
                     'written; nova\'s own instances in these projects '
                     'are judged as any other. Project ids only (32 hex '
                     'digits, as placement records them): names are not '
                     'resolved, so that both front ends judge alike, and '
                     'a value that is no project id is refused.'),
    cfg.ListOpt('foreign_consumer_types', default=[],
                help='Placement consumer types (microversion 1.38) to '
                     'call another service\'s, on top of every type nova '
                     'does not write: a consumer nova has no record of '
                     'with any type but INSTANCE and MIGRATION is '
                     '"unmanaged_consumer" already. nova\'s own types '
                     'are refused. nova 27 to 34 write no type, which '
                     'placement reads back as "unknown": such consumers '
                     'are judged by nova\'s records (and foreign_projects) '
                     'alone.'),
    cfg.IntOpt('journal_retention_days', default=90,
               help='"journals prune" removes the journals of the journal '
                    'directory that nothing wrote to for this many days, '
                    'at least 1 (--older-than overrides it). A journal is '
                    'what "restore" needs to undo a clean: keep them for '
                    'as long as a repair may have to be undone.'),
    cfg.IntOpt('metrics_max_projects', default=DEFAULT_METRICS_MAX_PROJECTS,
               help='How many projects get series of their own in the '
                    'nova_orphans_project_resources metric (the resources '
                    'orphaned allocations hold per project, which '
                    'placement counts in the project\'s quota usage): '
                    'those with the most orphaned consumers. The others '
                    'are summed under project_id="other", so that a '
                    'cloud of many projects does not make a series per '
                    'project that ever leaked an allocation. At least 1.'),
    cfg.IntOpt('metrics_max_hosts', default=DEFAULT_METRICS_MAX_HOSTS,
               help='How many compute hosts get series of their own in the '
                    'nova_orphans_host_resources metric (what a clean would '
                    'give back on each host\'s provider tree): those where '
                    'orphans hold the largest share of a class\'s capacity. '
                    'The others are summed under host="other", so that a '
                    'large cloud does not make a series per host that ever '
                    'leaked an allocation. At least 1.'),
    cfg.ListOpt('capacity_flavors', default=[],
                help='Names of flavors whose servers a scan\'s metrics count '
                     '(nova_orphans_flavor_servers and '
                     'nova_orphans_flavor_hosts): how many placement would '
                     'accept on the compute nodes now and after a clean. '
                     'Read from nova\'s API database, public and private '
                     'flavors alike; a name nova has no flavor of stops the '
                     'scan before it reads anything (exit status 127). '
                     '"list --flavor" adds to them. Counting them reads '
                     'every compute node\'s inventories.'),
    cfg.IntOpt('full_read_interval', default=DEFAULT_FULL_READ_INTERVAL,
               help='Seconds between full reads of placement through its '
                    'API. In between, a scan reads the provider list once, '
                    'reads the allocations of the providers whose '
                    'generation moved (or that are new), and reuses what '
                    'an earlier scan read of the others, kept in a file '
                    'beside the journals; every provider a finding rests '
                    'on is read again before the finding is reported. '
                    'What a provider\'s generation cannot show, an '
                    'allocation removed by DELETE /allocations/{consumer}, '
                    'is seen at most one full_read_interval late: a live '
                    'server whose allocations an operator deleted is '
                    'reported missing_allocations only at the next full '
                    'read. --all and --full-read always read everything; '
                    '0 makes every scan a full read. Fast mode always '
                    'reads everything.'),
    cfg.StrOpt('state_path',
               help='Directory for repair journals when --journal is not '
                    'given, and for the placement reads kept between '
                    'scans (see full_read_interval), created with mode '
                    '0700. Unset, the same '
                    'default as the openstack commands: '
                    '$XDG_STATE_HOME/nova-orphans if XDG_STATE_HOME is '
                    'set, else /var/lib/nova-orphans when the user running '
                    'the tool can write there or create it (root; user '
                    'nova with the systemd unit\'s StateDirectory), else '
                    '~/.local/state/nova-orphans.'),
]


def register_opts(conf):
    conf.register_group(database._fresh(orphans_group))
    conf.register_opts(ORPHANS_OPTS, group=orphans_group.name)


def list_opts():
    return {orphans_group: ORPHANS_OPTS}
