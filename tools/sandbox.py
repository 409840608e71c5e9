#!/usr/bin/env python3
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
"""A local sandbox cloud with the seed documents' orphans in it.

Serves a real placement (openstack-placement) on 127.0.0.1, creates the
nova API and cell databases in sqlite with nova's own migrations, seeds
them with the situations the operators' documents describe, writes a
nova.conf for it and runs ``nova-orphans-manage allocations list``
against it, as an operator would on a controller.

    tools/sandbox                 # seed, list, stop
    tools/sandbox --keep          # ... and keep serving; try commands
    tools/sandbox --keep --keystone   # ... behind a real keystone

Exits 0 when the list finds the seeded orphans (its exit code 3), else 1.

With ``--keep`` it serves until SIGINT (Ctrl-C) or SIGTERM, with or
without a terminal (``tools/sandbox --keep &``), and then removes its
temporary directories.

With ``--keystone`` a real keystone on 127.0.0.1 stands in front of it,
as in production: placement (``[api] auth_strategy = keystone``) and
nova's compute API validate its tokens with keystonemiddleware, its
catalog holds their endpoints (public and internal, RegionOne), and the
nova.conf and clouds.yaml printed authenticate nova's service user with
its password.
"""

import argparse
import contextlib
import logging
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import uuid

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from nova_orphans.tests.functional.fixtures import keystone  # noqa: E402
from nova_orphans.tests.functional.fixtures import nova_db  # noqa: E402
from nova_orphans.tests.functional.fixtures import placement  # noqa: E402

FLAVOR = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
BIG = {'VCPU': 30, 'MEMORY_MB': 741376, 'DISK_GB': 1638}
INVENTORY = {'VCPU': 36, 'MEMORY_MB': 786432, 'DISK_GB': 1760}


# nova's traits on a compute node's root provider: COMPUTE_NODE from
# every release, OWNER_NOVA from nova 34 (the sandbox's), and
# COMPUTE_STATUS_DISABLED while the node's service is disabled.
NODE_TRAITS = ('COMPUTE_NODE', 'OWNER_NOVA')
DISABLED_TRAIT = 'COMPUTE_STATUS_DISABLED'
# The same uuids on every run, so that the rows, their order and the
# admin guide's transcripts are the same every time.
UUID_SEED = 'nova-orphans sandbox'


def seed(rp_api, nova):
    """The seed documents' situations, plus healthy look-alikes.

    Returns {name: consumer uuid} for the summary, and the providers
    under 'nodes'.
    """
    rng = random.Random(UUID_SEED)

    def new_uuid():
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    nodes = {}
    for host in ('devstack1', 'devstack2', 'devstack3', 'devstack4'):
        nodes[host] = nova.add_compute_node('cell1', host, uuid=new_uuid())
        traits = NODE_TRAITS + ((DISABLED_TRAIT,) if host == 'devstack1'
                                else ())
        rp_api.create_provider(host, uuid=nodes[host], inventory=INVENTORY,
                               traits=traits)
    # devstack1 is down and fenced (seed 000): forced down, and disabled
    # as the evacuation guide says.
    services = nova.table('cell1', 'services')
    nova.execute('cell1', services.update().where(
        services.c.host == 'devstack1').values(
        forced_down=True, disabled=True,
        disabled_reason='fenced: evacuating'))
    bw = rp_api.create_provider(
        'devstack1:eth0', uuid=new_uuid(), parent=nodes['devstack1'],
        inventory={'NET_BW_EGR_KILOBIT_PER_SEC': 10000000})
    nodes['devstack1:eth0'] = bw

    def allocate(consumer, allocations):
        rp_api.put_allocations(consumer, allocations, nova_db.PROJECT,
                               nova_db.USER, consumer_type=None)

    def instance(host, **kwargs):
        return nova.add_instance('cell1', uuid=new_uuid(), host=host,
                                 node=host, **kwargs)

    def migration(vm, source, dest, **kwargs):
        return nova.add_migration('cell1', vm, uuid=new_uuid(),
                                  source_compute=source, source_node=source,
                                  dest_compute=dest, dest_node=dest,
                                  **kwargs)

    made = {'nodes': nodes}
    # Healthy servers.
    for n, host in enumerate(('devstack2', 'devstack3')):
        vm = instance(host)
        allocate(vm, {nodes[host]: FLAVOR})
        made['healthy-%d' % n] = vm
    # Seed 000: vm1 evacuated from devstack1 to devstack2; the source
    # keeps its allocation (and one on a bandwidth child provider).
    vm1 = instance('devstack2')
    allocate(vm1, {nodes['devstack1']: FLAVOR,
                   bw: {'NET_BW_EGR_KILOBIT_PER_SEC': 1000},
                   nodes['devstack2']: FLAVOR})
    migration(vm1, 'devstack1', 'devstack2', migration_type='evacuation',
              status='done')
    made['evacuated'] = vm1
    # Seed 001: a cold migration to devstack3 timed out; the instance is
    # back on devstack2, the target kept VCPU 30 of its 36.
    big = instance('devstack2', vm_state='stopped')
    allocate(big, {nodes['devstack2']: BIG, nodes['devstack3']: BIG})
    migration(big, 'devstack2', 'devstack3', migration_type='migration',
              status='error')
    made['failed-migration'] = big
    # Seed 003: an ERROR instance forced to deleted in SQL.
    forced = instance('devstack3', vm_state='error')
    allocate(forced, {nodes['devstack3']: FLAVOR})
    nova.force_delete_instance('cell1', forced)
    made['forced-deleted'] = forced
    # Nobody knows this consumer.
    stranger = new_uuid()
    allocate(stranger, {nodes['devstack3']: FLAVOR})
    made['unknown'] = stranger
    # A look-alike: a resize awaiting confirmation holds both nodes.
    resized = instance('devstack3', vm_state='resized')
    mig = migration(resized, 'devstack2', 'devstack3',
                    migration_type='resize', status='finished')
    allocate(mig, {nodes['devstack2']: FLAVOR})
    allocate(resized, {nodes['devstack3']: FLAVOR})
    made['resize-awaiting-confirm'] = resized
    # devstack4, retired: its last server was cold-migrated to devstack2
    # and confirmed, but the source allocation its migration held stayed;
    # then "openstack compute service delete" deleted the service and
    # the compute node, and placement refused to delete the provider.
    moved = instance('devstack2')
    retired = migration(moved, 'devstack4', 'devstack2',
                        migration_type='migration', status='confirmed')
    allocate(retired, {nodes['devstack4']: FLAVOR})
    allocate(moved, {nodes['devstack2']: FLAVOR})
    delete_host(nova, 'devstack4')
    made['deleted-node-migration'] = retired
    return made


def delete_host(nova, host):
    """What ``openstack compute service delete`` leaves of a host in
    nova's cell database: its service and compute node rows soft-deleted.
    """
    for table in ('compute_nodes', 'services'):
        t = nova.table('cell1', table)
        nova.execute('cell1', t.update().where(t.c.host == host).values(
            deleted=t.c.id))


def _console_script(name):
    """The absolute path of one of this environment's console scripts.

    Next to the running interpreter (the virtualenv's bin), else on
    PATH; absolute either way, so the hint works from any shell.
    """
    path = os.path.join(os.path.dirname(sys.executable), name)
    if os.access(path, os.X_OK):
        return path
    return shutil.which(name) or name


def _capture(outdir, name, conf, argv, note=None):
    """Run one command for real and keep what an operator would see."""
    command = [_console_script('nova-orphans-manage'), '--config-file',
               conf] + argv
    result = subprocess.run(command, capture_output=True, text=True)
    shown = ' '.join(['nova-orphans-manage', '--config-file',
                      '/etc/nova/nova.conf'] + argv)
    text = '$ %s\n%s%s(exit code %d)\n' % (
        shown, result.stdout, result.stderr, result.returncode)
    # As an operator's would read: nova.conf in /etc/nova, journals in
    # the default state_path.
    text = text.replace(conf, '/etc/nova/nova.conf').replace(
        os.path.dirname(conf), '/var/lib/nova-orphans')
    with open(os.path.join(outdir, name + '.txt'), 'w') as f:
        f.write(text)
    print(text)
    return result.returncode


def _delete_provider(outdir, name, rp_api, rp, host):
    resp = rp_api.delete_provider(rp)
    detail = ''
    if resp.status_code >= 400:
        detail = resp.json()['errors'][0]['detail'].split('\n')[-1].strip()
    text = '$ openstack resource provider delete %s    # %s\nHTTP %d %s\n' % (
        rp, host, resp.status_code, detail)
    with open(os.path.join(outdir, name + '.txt'), 'w') as f:
        f.write(text)
    print(text)
    return resp.status_code


# The server of seed 001's failed cold migration, as osc-placement's
# "allocation candidate list" asks for it.
SEED_001_SHAPE = ['--resource', 'VCPU=30', '--resource', 'MEMORY_MB=741376',
                  '--resource', 'DISK_GB=1638']


def walkthrough(outdir, conf, rp_api, nodes, nova):
    """The admin guide's session, captured from the running sandbox."""
    os.makedirs(outdir, exist_ok=True)
    journal = os.path.join(os.path.dirname(conf), 'journal.jsonl')
    steps = [
        ('01-list', ['allocations', 'list'], 3),
        ('02-list-host-json', ['allocations', 'list', '--host', 'devstack1',
                               '--format', 'json'], 3),
        ('02-hosts', ['allocations', 'list', '--group-by', 'host'] +
         SEED_001_SHAPE, 3),
        ('04-clean-dry-run', ['allocations', 'clean', '--dry-run'], 3),
        ('05-clean', ['allocations', 'clean', '--journal', journal], 4),
        ('06-list-after', ['allocations', 'list'], 0),
        ('06-hosts-after', ['allocations', 'list', '--group-by', 'host',
                            '--all'] + SEED_001_SHAPE, 0),
        ('07-restore', ['allocations', 'restore', '--journal', journal], 4),
        ('08-list-restored', ['allocations', 'list', '--all'], 3),
        ('10-providers-list', ['providers', 'list'], 3),
        ('11-providers-clean', ['providers', 'clean', '--journal',
                                journal + '.2'], 4),
        ('12-providers-list-after', ['providers', 'list', '--all'], 0),
    ]
    failures = []
    for name, argv, want in steps:
        if name == '04-clean-dry-run' and _delete_provider(
                outdir, '03-delete-provider-409', rp_api,
                nodes['devstack1:eth0'], 'devstack1:eth0') != 409:
            failures.append('03-delete-provider-409')
        if name == '10-providers-list':
            _delete_service(outdir, '09-delete-service', nova, 'devstack1')
        rc = _capture(outdir, name, conf, argv)
        if rc != want:
            failures.append('%s: exit code %d, expected %d' % (
                name, rc, want))
    return failures


def _delete_service(outdir, name, nova, host):
    """What ``openstack compute service delete`` does to nova's rows
    while allocations remain on the host's provider tree: nova deletes
    the service and its compute nodes, and gives up on the provider
    when placement refuses (409).
    """
    delete_host(nova, host)
    text = ('$ openstack compute service delete <nova-compute on %s>\n'
            '(nova deletes the service and its compute node; placement '
            'refuses to delete the provider tree, which still holds '
            'allocations, and nova leaves it)\n' % host)
    with open(os.path.join(outdir, name + '.txt'), 'w') as f:
        f.write(text)
    print(text)


class Stopped(BaseException):
    """SIGINT or SIGTERM: unwinds the fixtures, which remove their dirs."""

    def __init__(self, signum, kept=False):
        super().__init__(signum)
        self.signum = signum
        self.kept = kept


def _stop(signum, frame):
    raise Stopped(signum)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--keep', action='store_true',
                        help='keep the sandbox running until SIGINT '
                             '(Ctrl-C) or SIGTERM')
    parser.add_argument('--format', choices=('table', 'json'),
                        default='table')
    parser.add_argument('--keystone', action='store_true',
                        help='put a real keystone in front of placement '
                             'and the compute API, and configure both '
                             'front ends with password credentials')
    parser.add_argument('--walkthrough', metavar='DIR',
                        help='run the admin guide\'s session and save each '
                             'command\'s output in DIR')
    args = parser.parse_args()
    # Handlers for both, even when the shell started this with SIGINT
    # ignored ("&" without job control): either stops the sandbox at any
    # point, and the with-blocks below remove its directories.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _stop)
    try:
        return sandbox(args)
    except Stopped as e:
        name = signal.Signals(e.signum).name
        if e.kept:
            print('Sandbox stopped (%s); its directories are removed.' %
                  name, flush=True)
            return 0
        print('Interrupted (%s); the sandbox is removed.' % name,
              file=sys.stderr, flush=True)
        return 128 + e.signum


def sandbox(args):
    with keystone_server(args.keystone) as ks, \
            placement.PlacementServer(keystone=ks) as rp_api, \
            nova_db.NovaDatabases(cells=('cell1',)) as nova:
        conf = os.path.join(nova.dir, 'nova.conf')
        section = rp_api.endpoint
        if ks:
            section = ks.password_section()
            ks.set_endpoints(catalog(placement=rp_api.endpoint))
        # No state_path: both front ends then find the journals of the
        # shell's XDG_STATE_HOME (keep_hint), by the same default rule.
        nova.write_nova_conf(conf, section)
        made = seed(rp_api, nova)
        nodes = made.pop('nodes')
        print('Sandbox cloud: placement at %s, nova databases in %s'
              % (rp_api.endpoint, nova.dir))
        if ks:
            print('keystone at %s in front of it: placement and nova\'s '
                  'compute API validate its tokens, its catalog has their '
                  'endpoints (%s)' % (ks.auth_url, keystone.REGION_ONE))
        for name, consumer in made.items():
            print('  %-24s %s' % (name, consumer))
        if args.walkthrough:
            failures = walkthrough(args.walkthrough, conf, rp_api, nodes,
                                   nova)
            for failure in failures:
                print('UNEXPECTED: %s' % failure, file=sys.stderr)
            return 1 if failures else 0
        command = [_console_script('nova-orphans-manage'), '--config-file',
                   conf, 'allocations', 'list', '--format', args.format]
        print('\n$ ' + ' '.join(map(shlex.quote, command)), flush=True)
        rc = subprocess.call(command) if args.keep else list_once(command)
        print('(exit code %d: %s)' % (rc, {0: 'nothing found',
                                           3: 'orphans found'}.get(rc, '?')))
        if args.keep:
            print(keep_hint(conf, os.path.join(nova.dir, 'state'),
                            shown=bool(ks)), flush=True)
            with compute_api(nova, rp_api, ks) as clouds:
                print(osc_hint(clouds), flush=True)
                print('\nStop it with Ctrl-C, or: kill -TERM %d' %
                      os.getpid(), flush=True)
                wait_for_stop()
    return 0 if rc == 3 else 1


def list_once(command):
    """Run the list for a sandbox about to be removed: its "Next:" line
    would name a nova.conf that is gone once this returns, so it says
    how to try that command on a sandbox that stays up instead.
    """
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    for line in result.stdout.splitlines(True):
        match = re.match(r'Next: .* --config-file \S+ (.*)$', line)
        if match:
            line = ('Next: run "tools/sandbox --keep" to try "%s" on a '
                    'sandbox that stays up (this one is removed now).\n' %
                    match.group(1))
        sys.stdout.write(line)
    sys.stdout.flush()
    return result.returncode


@contextlib.contextmanager
def keystone_server(wanted):
    """A keystone of the sandbox's own, if wanted (else None)."""
    if not wanted:
        yield None
        return
    # placement's keystonemiddleware runs in this process: its warnings
    # (a deprecation at start, each refused token) would go to stderr,
    # into the sandbox's output. A refused client sees its 401.
    quiet = logging.getLogger('keystonemiddleware')
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    server = keystone.KeystoneServer(expiration=3600)
    try:
        yield server
    finally:
        server.stop()


def catalog(**urls):
    """keystone's endpoints of ``urls`` ({service type: url}), public and
    internal, in RegionOne, as set_endpoints takes them.
    """
    return {(service_type, interface, keystone.REGION_ONE): url
            for service_type, url in urls.items()
            for interface in ('public', 'internal')}


CLOUDS_YAML = """clouds:
  sandbox:
    auth_type: admin_token
    auth:
      endpoint: %(placement)s
      token: admin
    compute_endpoint_override: %(compute)s
"""


@contextlib.contextmanager
def compute_api(nova, rp_api, ks=None):
    """nova's compute API over the sandbox's databases; yields clouds.yaml.

    Served by tools/sandbox_compute.py in a session of its own (nova's
    global state stays out of this process; Ctrl-C on the terminal
    reaches only the sandbox, which stops it). None if it cannot start.
    With keystone ``ks``, keystonemiddleware validates the tokens as
    nova's service user, and the catalog gets its endpoints.
    """
    sections = {
        'DEFAULT': {'host': 'sandbox-api', 'transport_url': 'fake://'},
        'api_database': {'connection': nova.api_url},
        'database': {'connection': nova.cell_urls[nova.local_cell]},
    }
    auth = []
    if ks:
        sections['keystone_authtoken'] = ks.authtoken_section('nova')
        auth = ['keystone']
    conf = nova_db.write_ini(os.path.join(nova.dir, 'compute.conf'),
                             sections)
    log_file = os.path.join(nova.dir, 'compute-api.log')
    with open(log_file, 'a') as log:
        proc = subprocess.Popen(
            [sys.executable, os.path.join(os.path.dirname(
                os.path.abspath(__file__)), 'sandbox_compute.py'),
             conf, log_file] + auth,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
            text=True, start_new_session=True,
            env=dict(os.environ, OS_NOVA_DISABLE_EVENTLET_PATCHING='True'))
    try:
        endpoint = proc.stdout.readline().strip()
        clouds = None
        if endpoint:
            clouds = os.path.join(nova.dir, 'clouds.yaml')
            with open(clouds, 'w') as f:
                if ks:
                    ks.set_endpoints(catalog(placement=rp_api.endpoint,
                                             compute=endpoint))
                    yaml.safe_dump({'clouds': {'sandbox': ks.cloud()}}, f,
                                   sort_keys=False)
                else:
                    f.write(CLOUDS_YAML % {'placement': rp_api.endpoint,
                                           'compute': endpoint})
        else:
            print('The compute API did not start; see %s' % log_file,
                  file=sys.stderr, flush=True)
        yield clouds
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


# The commands the kept sandbox suggests, as nova-orphans-manage's
# argv; OSC_COMMANDS spells their groups for openstack.
HINTS = (
    ['allocations', 'list', '--all'],
    ['allocations', 'clean', '--dry-run'],
    ['allocations', 'clean'],
    ['allocations', 'restore', '--journal', 'PATH'],
    ['providers', 'list'],
    ['providers', 'clean', '--dry-run'],
    ['providers', 'clean'],
    ['journals', 'list'],
)
OSC_COMMANDS = {'allocations': ['allocation', 'orphan'],
                'providers': ['resource', 'provider', 'orphan'],
                'journals': ['allocation', 'orphan', 'journal']}


def osc_hint(clouds):
    """How to point openstack at the sandbox, if it can be."""
    if clouds is None:
        return ''
    lines = ['', 'nova\'s compute API serves the same cloud, for the '
             'openstack client. Its clouds.yaml (%s):' % clouds, '']
    lines.extend(_shown(clouds))
    openstack = _console_script('openstack')
    if not os.path.isabs(openstack):
        lines.extend(['', 'Install python-openstackclient to use it.'])
        return '\n'.join(lines)
    lines.extend(['', 'Try, in another shell (after the lines above that '
                  'start with "." and "export"):',
                  '  export OS_CLIENT_CONFIG_FILE=%s' % shlex.quote(clouds)])
    for argv in HINTS:
        lines.append('  openstack --os-cloud sandbox %s' % ' '.join(
            OSC_COMMANDS[argv[0]] + argv[1:]))
    return '\n'.join(lines)


def _shown(path):
    """A file's lines, indented, for the operator to copy (no trailing
    blanks: an ini file's empty lines stay empty).
    """
    with open(path) as f:
        return [('  ' + line).rstrip()
                for line in f.read().rstrip('\n').splitlines()]


def keep_hint(conf, state, shown=False):
    """Commands to paste into another shell, whatever its directory;
    ``shown``: nova.conf itself first. XDG_STATE_HOME is ``state``, in
    the sandbox's directory: the journal directory of both front ends
    in that shell, removed with the sandbox.
    """
    manage = _console_script('nova-orphans-manage')
    activate = os.path.join(os.path.dirname(manage), 'activate')
    if shown:
        lines = ['', 'The sandbox is up. Its nova.conf (%s):' % conf, '']
        lines.extend(_shown(conf))
        lines.extend(['', 'Try, in another shell:'])
    else:
        lines = ['', 'The sandbox is up. Try, in another shell:']
    if os.path.exists(activate):
        lines.append('  . %s' % shlex.quote(activate))
        manage = 'nova-orphans-manage'
    lines.append('  export XDG_STATE_HOME=%s' % shlex.quote(state))
    for argv in HINTS:
        lines.append('  %s --config-file %s %s' % (
            manage, shlex.quote(conf), ' '.join(argv)))
    lines.append('("clean" prints its journal\'s path for "restore", which '
                 'also undoes a "providers clean"; both front ends keep '
                 'their journals in $XDG_STATE_HOME/nova-orphans.)')
    return '\n'.join(lines)


def wait_for_stop():
    """Serve until SIGINT or SIGTERM, which then raise Stopped(kept).

    Reads nothing from stdin: a sandbox started with "&" has none, or
    would be stopped by the terminal for reading it.
    """
    def stop(signum, frame):
        raise Stopped(signum, kept=True)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)
    while True:
        signal.pause()


if __name__ == '__main__':
    sys.exit(main())
