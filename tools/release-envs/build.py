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
"""The supported releases' own environments, with the tool installed.

Deployments install OpenStack software with their release's upper
constraints (devstack's ``pip_install -c``, kolla's image builds,
OpenStack-Ansible's venvs) on the Python their distribution runs nova
on. For each (release, Python) pair in ENVIRONMENTS this makes a
virtualenv with that Python and installs the wheel as an operator
would::

    pip install -c constraints/<release>.txt '<wheel>[osc]'

then checks that ``pip check`` is clean and that every package the
release pins is installed at its pin: the tool's requirements changed
none of them. nova_orphans/tests/environments then runs both front
ends from each virtualenv (NOVA_ORPHANS_RELEASE_ENVS; tools/release-envs/
check does both).

Python 3.11 is the one running this script (.venv's). Python 3.9, the
RHEL 9 family's, is Debian bullseye's 3.9.2, downloaded from Debian's
archive with a private sources list and unpacked into the cache, without
touching the system; its virtualenvs' ``python`` is a wrapper that finds
bullseye's OpenSSL 1.1 and libffi 7 there. pip 24.3.1 is the newest
that still runs on 3.9; every virtualenv gets it.

Usage::

    build.py --wheel dist/nova_orphans-*.whl [--dest DIR] [--jobs N]
             [RELEASE-pyVERSION ...]

An existing virtualenv is reused: the tool is uninstalled and the same
``pip install -c`` installs the new wheel against what is there, as in a
deployment's virtualenv. Prints one line per environment; exits 1 if one
failed, with pip's output.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CONSTRAINTS = os.path.join(HERE, 'constraints')

# (release, Python): every release on 3.11 (Debian 12's; within every
# release's tested runtimes but 2023.1's 3.8 to 3.10, whose pins install
# there all the same); 3.9 (the RHEL 9 family's) at both ends of the
# releases that run on it, 2023.1 and 2025.1.
ENVIRONMENTS = (
    ('2023.1', '3.9'), ('2025.1', '3.9'),
    ('2023.1', '3.11'), ('2023.2', '3.11'), ('2024.1', '3.11'),
    ('2024.2', '3.11'), ('2025.1', '3.11'), ('2025.2', '3.11'),
    ('2026.1', '3.11'), ('2026.2', '3.11'),
)
PIP = 'pip==24.3.1'
# Debian bullseye's Python 3.9 and what it needs beyond Debian 12's
# libraries, from the Debian mirror the machine's apt already uses.
APT = '/etc/apt'
BULLSEYE_PACKAGES = (
    'python3.9', 'python3.9-minimal', 'libpython3.9-minimal',
    'libpython3.9-stdlib', 'python3.9-venv', 'libssl1.1', 'libffi7',
    'libmpdec3', 'python3-distutils=3.9.2-1', 'python3-lib2to3=3.9.2-1')
_WRAPPER = '''#!/bin/bash
# Debian bullseye's python3.9, with bullseye's libraries (build.py).
root=%(root)s
libraries=$root/usr/lib/x86_64-linux-gnu
LD_LIBRARY_PATH=$libraries${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \\
    exec -a "$0" "$root/usr/bin/python3.9" "$@"
'''


# Suites of Debian's own archive (a mirror of it carries bullseye too).
_DEBIAN_SUITES = ('buster', 'bullseye', 'bookworm', 'trixie', 'forky',
                  'sid', 'oldoldstable', 'oldstable', 'stable', 'testing',
                  'unstable')


def _sources(etc):
    """(uri, suite) of each enabled ``deb`` source of apt under ``etc``:
    deb822 ``.sources`` files and one-line ``.list`` files in
    ``sources.list.d``, and ``sources.list``.
    """
    parts = os.path.join(etc, 'sources.list.d')
    names = sorted(os.listdir(parts)) if os.path.isdir(parts) else []
    for name in names:
        path = os.path.join(parts, name)
        if name.endswith('.sources'):
            with open(path) as f:
                text = f.read()
            for stanza in re.split(r'\n\s*\n', text):
                fields = {}
                for line in stanza.splitlines():
                    match = re.match(r'^([A-Za-z-]+):\s*(.*)$', line)
                    if match:
                        fields[match.group(1).lower()] = match.group(2)
                if ('deb' not in fields.get('types', '').split()
                        or fields.get('enabled', 'yes').lower() == 'no'):
                    continue
                for uri in fields.get('uris', '').split()[:1]:
                    for suite in fields.get('suites', '').split():
                        yield uri, suite
    lists = [os.path.join(parts, n) for n in names if n.endswith('.list')]
    for path in lists + [os.path.join(etc, 'sources.list')]:
        if not os.path.isfile(path):
            continue
        with open(path) as f:
            for line in f:
                words = re.sub(r'\[[^]]*\]', ' ', line.split('#')[0]).split()
                if len(words) >= 3 and words[0] == 'deb':
                    yield words[1], words[2]


def debian_mirror(etc=APT):
    """The URI of the Debian archive mirror apt uses here (not its
    security archive, not another vendor's repository).
    """
    for uri, suite in _sources(etc):
        base, _sep, pocket = suite.partition('-')
        if (base in _DEBIAN_SUITES and pocket != 'security'
                and re.match(r'^(https?|ftp|file):', uri)):
            return uri.rstrip('/')
    raise RuntimeError(
        'Python 3.9 comes from Debian bullseye\'s packages, fetched from '
        'the Debian mirror apt uses, and apt names none: no "deb" source '
        'of a Debian suite in %(etc)s/sources.list.d/*.sources, *.list or '
        '%(etc)s/sources.list' % {'etc': etc})


def name(release, python):
    return '%s-py%s' % (release, python)


def default_dest():
    return os.path.join(tempfile.gettempdir(), 'nova-orphans-release-envs')


def run(argv, **kwargs):
    """``argv``'s output; raises with it when it fails."""
    done = subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          stdin=subprocess.DEVNULL, **kwargs)
    if done.returncode:
        raise RuntimeError('%s exited %d:\n%s' % (
            ' '.join(argv), done.returncode, done.stdout))
    return done.stdout


def bullseye_python(cache):
    """Debian bullseye's Python 3.9 under ``cache``: its wrapper."""
    root = os.path.join(cache, 'python3.9-bullseye')
    wrapper = os.path.join(root, 'usr', 'bin', 'python3')
    if os.path.exists(wrapper):
        return wrapper
    if not shutil.which('apt-get') or not shutil.which('dpkg'):
        raise RuntimeError('Python 3.9 comes from Debian bullseye\'s '
                           'packages: apt-get and dpkg are needed')
    mirror = debian_mirror()
    work = tempfile.mkdtemp(prefix='bullseye-', dir=cache)
    try:
        sources = os.path.join(work, 'sources.list')
        with open(sources, 'w') as f:
            f.write('deb %s bullseye main\n' % mirror)
        for sub in ('lists/partial', 'cache/archives/partial', 'debs'):
            os.makedirs(os.path.join(work, sub))
        apt = ['apt-get', '-q', '-o', 'Dir::Etc::sourcelist=' + sources,
               '-o', 'Dir::Etc::sourceparts=/nonexistent',
               '-o', 'Dir::State::Lists=' + os.path.join(work, 'lists'),
               '-o', 'Dir::Cache=' + os.path.join(work, 'cache'),
               # Root's download is unsandboxed into a directory _apt
               # cannot write: say nothing of it.
               '-o', 'APT::Sandbox::User=root']
        run(apt + ['update'])
        debs = os.path.join(work, 'debs')
        run(apt + ['download'] + list(BULLSEYE_PACKAGES), cwd=debs)
        unpacked = os.path.join(work, 'root')
        for deb in sorted(os.listdir(debs)):
            run(['dpkg', '-x', os.path.join(debs, deb), unpacked])
        with open(os.path.join(unpacked, 'usr', 'bin', 'python3'), 'w') as f:
            f.write(_WRAPPER % {'root': root})
        os.chmod(os.path.join(unpacked, 'usr', 'bin', 'python3'), 0o755)
        os.rename(unpacked, root)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return wrapper


def interpreter(python, cache):
    if python == '3.9':
        return bullseye_python(cache)
    here = '%d.%d' % sys.version_info[:2]
    if python != here:
        raise RuntimeError('Python %s environments are made by the Python '
                           'running this script, which is %s' % (python,
                                                                 here))
    return sys.executable


def pinned(release):
    """{normalized name: [(version, marker or None)]}: the release's
    pins (2025.2 pins some packages once for Python 3.9, once for the
    others).
    """
    pins = {}
    with open(os.path.join(CONSTRAINTS, release + '.txt')) as f:
        for line in f:
            match = re.match(r'^([A-Za-z0-9_.-]+)===([^;\s]+)\s*(?:;(.*))?$',
                             line.strip())
            if match:
                pins.setdefault(normalized(match.group(1)), []).append(
                    (match.group(2), match.group(3)))
    return pins


def normalized(project):
    return re.sub(r'[-_.]+', '-', project).lower()


def installed(python):
    """{normalized name: version} of what ``python``'s pip lists."""
    listed = json.loads(run([python, '-m', 'pip', 'list', '--format',
                             'json', '--disable-pip-version-check']))
    return {normalized(p['name']): p['version'] for p in listed}


def unpinned(versions, pins):
    """What of ``versions`` (installed) is not at one of its ``pins``
    (pinned(): a pin per Python, by its marker). pip, setuptools and
    wheel are the virtualenv's own.
    """
    wrong = []
    for project, version in sorted(versions.items()):
        options = pins.get(project)
        if project in ('pip', 'setuptools', 'wheel') or not options:
            continue
        if version not in [v for v, _marker in options]:
            wrong.append('%s %s (pinned: %s)' % (
                project, version, ', '.join(v for v, _m in options)))
    return wrong


def build(release, python, wheel, dest, cache, pip_wheel):
    """One environment, made or brought up to date; its directory."""
    env = os.path.join(dest, name(release, python))
    bin_python = os.path.join(env, 'bin', 'python')
    if not os.path.exists(bin_python):
        shutil.rmtree(env, ignore_errors=True)
        run([interpreter(python, cache), '-m', 'venv', '--without-pip',
             env])
        run([bin_python, os.path.join(pip_wheel, 'pip'), 'install', '-q',
             '--no-index', pip_wheel])
    pip = [bin_python, '-m', 'pip', '--disable-pip-version-check']
    run(pip + ['uninstall', '-q', '-y', 'nova-orphans'])
    # Without byte-compiling every module of every package: half the
    # time. What the tool imports is compiled below.
    run(pip + ['install', '-q', '--no-compile', '-c',
               os.path.join(CONSTRAINTS, release + '.txt'),
               wheel + '[osc]'])
    run(pip + ['check'])
    wrong = unpinned(installed(bin_python), pinned(release))
    if wrong:
        raise RuntimeError('not at the release\'s pins: ' + '; '.join(wrong))
    # Both console scripts load there (the openstack command finds the
    # plugin), and what they import is byte-compiled once, as pip would
    # have done, even where PYTHONDONTWRITEBYTECODE is set.
    compiling = {k: v for k, v in os.environ.items()
                 if k != 'PYTHONDONTWRITEBYTECODE'}
    for script in (['nova-orphans-manage', 'allocations', 'list'],
                   ['openstack', 'allocation', 'orphan', 'list']):
        script[0] = os.path.join(env, 'bin', script[0])
        run(script + ['--help'], env=compiling)
    return env


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--wheel', required=True)
    parser.add_argument('--dest', default=default_dest())
    parser.add_argument('--jobs', type=int, default=4)
    parser.add_argument('environments', nargs='*', metavar='RELEASE-pyX.Y',
                        help='default: all of them')
    args = parser.parse_args(argv)
    known = {name(r, p): (r, p) for r, p in ENVIRONMENTS}
    wanted = args.environments or list(known)
    unknown = [w for w in wanted if w not in known]
    if unknown:
        parser.error('unknown environment(s) %s; known: %s' % (
            ', '.join(unknown), ', '.join(known)))
    wheel = os.path.abspath(args.wheel)
    cache = os.path.join(args.dest, '.cache')
    os.makedirs(cache, exist_ok=True)
    pip_wheel = os.path.join(cache, 'pip-24.3.1-py3-none-any.whl')
    if not os.path.exists(pip_wheel):
        run([sys.executable, '-m', 'pip', 'download', '-q', '--no-deps',
             '-d', cache, PIP])
    if any(p == '3.9' for r, p in (known[w] for w in wanted)):
        bullseye_python(cache)

    def one(env_name):
        started = time.monotonic()
        try:
            build(*known[env_name], wheel, args.dest, cache, pip_wheel)
        except Exception as e:
            return env_name, time.monotonic() - started, e
        return env_name, time.monotonic() - started, None

    failed = False
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for env_name, took, error in pool.map(one, wanted):
            if error is None:
                print('%-12s %s (%.0f s)' % (
                    env_name, os.path.join(args.dest, env_name), took))
            else:
                failed = True
                print('%-12s FAILED (%.0f s): %s' % (env_name, took, error))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
