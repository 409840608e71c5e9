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
"""Local hacking checks: HACKING.rst's rules that a program can check.

flake8 loads them through tox.ini's ``[flake8:local-plugins]`` (in tox's
pep8 env and pre-commit's flake8 hook); each code is named in HACKING.rst
and tested in ``nova_orphans/tests/unit/hacking/test_checks.py``. Codes are
``NO3xx``: add the next number, keep this file in that order.
"""

import ast
import re

from hacking import core

_FORBIDDEN_IMPORT = re.compile(
    r'^\s*(?:import|from)\s+(nova|placement|eventlet)(?:\.|\s|$)')
_LOG_LEVELS = 'debug|info|warning|warn|error|exception|critical|log'
_TRANSLATED_LOG = re.compile(r'\bLOG\.(%s)\(\s*_\(' % _LOG_LEVELS)
# printf-style conversions, left to right: %%, %(name)s, or positional.
_CONVERSION = re.compile(r'%(?:%|\([^)]*\)|[-#0 +]*(?:\*|\d+)?'
                         r'(?:\.\d+)?[a-zA-Z])')
_FROM_IMPORT = re.compile(r'^\s*from\s+(\S+)\s+import\s+(.*)$')
_IMPORT = re.compile(r'^\s*import\s+(.*)$')


def _in_product(filename):
    """The package less its tests, which import nova's harness."""
    parts = filename.replace('\\', '/').split('/')
    if 'nova_orphans' not in parts[:-1]:
        return False
    last = len(parts) - 1 - parts[::-1].index('nova_orphans')
    return parts[last + 1] != 'tests'


@core.flake8ext
def no_service_imports(logical_line, filename):
    """NO301: the product never imports nova, placement or eventlet.

    They are the tests' requirements only, and nova's harness (which
    calls the tool in-process) runs in native-threading mode.
    """
    if not _in_product(filename):
        return
    m = _FORBIDDEN_IMPORT.match(logical_line)
    if m:
        yield (0, 'NO301: the product does not import %s (a test '
                  'requirement only)' % m.group(1))


@core.flake8ext
def no_translated_logs(logical_line):
    """NO302: log messages are not translated (only what users read is)."""
    m = _TRANSLATED_LOG.search(logical_line)
    if m:
        yield (m.start(), 'NO302: log messages are not translated: '
                          'no _() in LOG.%s()' % m.group(1))


class _ASTCheck:
    """A check of the whole module's tree (flake8's plugin protocol)."""

    name = __name__
    version = '1.0'
    # The one message of the check.
    MESSAGE = None

    def __init__(self, tree, filename):
        self.tree = tree
        self.filename = filename

    def run(self):
        found = {(n.lineno, n.col_offset): n
                 for n in self.offending(self.tree)}
        for line, col in sorted(found):
            yield (line, col, self.MESSAGE, type(self))

    def offending(self, tree):
        raise NotImplementedError


def _positional(text):
    return isinstance(text, str) and any(
        m.group() != '%%' and not m.group().startswith('%(')
        for m in _CONVERSION.finditer(text))


class NoPositionalTranslations(_ASTCheck):
    """NO303: a string given to _() names its values: %(name)s, not %s.

    A translator reorders the values in their language; positional
    placeholders cannot be reordered.
    """

    MESSAGE = ('NO303: _() strings name their values (%(name)s with a '
               'dict), no positional placeholder')

    def offending(self, tree):
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == '_' and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and _positional(node.args[0].value)):
                yield node


def _is_std_stream(node):
    return (isinstance(node, ast.Attribute)
            and node.attr in ('stdout', 'stderr')
            and isinstance(node.value, ast.Name)
            and node.value.id == 'sys')


def _std_streams(node):
    return [n for n in ast.walk(node) if _is_std_stream(n)]


class NoStreamsBoundAtImport(_ASTCheck):
    """NO304: sys.stdout and sys.stderr are read when used, never bound.

    A caller (nova's functional harness, a test) replaces them between
    calls of ``main()``: a default argument or a module or class attribute
    would keep the stream of the import.
    """

    MESSAGE = ('NO304: sys.stdout/sys.stderr bound at import (a default '
               'argument, module or class attribute): read it when used')

    def offending(self, tree):
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                 ast.Lambda)):
                args = node.args
                for default in args.defaults + [
                        d for d in args.kw_defaults if d is not None]:
                    yield from _std_streams(default)
            elif isinstance(node, (ast.Module, ast.ClassDef)):
                for statement in node.body:
                    if isinstance(statement, (ast.Assign, ast.AnnAssign)):
                        if statement.value is not None:
                            yield from _std_streams(statement.value)


@core.flake8ext
def no_global_config(logical_line, filename):
    """NO305: the product uses its own ConfigOpts, never cfg.CONF.

    ``main()`` can run many times in one process, beside nova's own
    global configuration.
    """
    if not _in_product(filename):
        return
    pos = logical_line.find('cfg.CONF')
    if pos != -1 and not logical_line[pos + 8:pos + 9].isalnum():
        yield (pos, 'NO305: use a cfg.ConfigOpts() of your own, never '
                    'the global cfg.CONF')


def _private(dotted):
    """Whether a dotted name has a part a library keeps to itself
    (``_name``; ``__name__``-style names are Python's, not private).
    """
    return any(part.startswith('_') and not (
        part.startswith('__') and part.endswith('__'))
        for part in dotted.split('.'))


def _foreign(module):
    return not module.startswith('.') and \
        module.split('.')[0] != 'nova_orphans'


@core.flake8ext
def no_private_imports(logical_line, filename):
    """NO306: the product imports no private module or name of another
    package (``from cliff import _argparse``, ``import a._b``,
    ``from a import _c``).

    A library's private names change in any release, and the tool runs
    on the libraries of eight OpenStack releases: only their public
    interfaces are used.
    """
    if not _in_product(filename):
        return
    m = _FROM_IMPORT.match(logical_line)
    if m:
        module, names = m.groups()
        names = [n.split()[0] for n in names.strip('()').split(',')
                 if n.strip()]
        if _foreign(module) and (_private(module) or
                                 any(_private(n) for n in names)):
            yield (0, 'NO306: %s: a private module or name of another '
                      'package; use its public interface' % module)
        return
    m = _IMPORT.match(logical_line)
    if m:
        for item in m.group(1).split(','):
            module = item.split()[0] if item.strip() else ''
            if module and _foreign(module) and _private(module):
                yield (0, 'NO306: %s: a private module of another '
                          'package; use its public interface' % module)
