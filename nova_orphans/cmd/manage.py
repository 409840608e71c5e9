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
"""nova-orphans-manage: the operator's command on a nova controller.

Laid out like nova-manage: ``nova-orphans-manage [--config-file F]...
CATEGORY ACTION [options]``, reading nova.conf; the categories are
``allocations`` and ``providers``. Return codes (also in ``--help`` and
the docs):

===  ==========================================================
0    nothing found, nothing to do (the whole cloud was read)
1    at least one repair failed (the others were still done)
2    incomplete: a cell, or placement's database in fast mode, could
     not be read, and the part that was read has no orphan
3    orphans found and nothing changed (list, clean --dry-run)
4    orphans found and all repaired
5    incomplete (as 2), and orphans found in the part that was read
     (listed or repaired)
6    unsupported or damaged nova schema: a table or column it reads is
     missing (nothing was written)
127  invalid input: bad uuid, unknown host, unreadable config
130  interrupted by SIGINT (what was done is printed first)
143  interrupted by SIGTERM (what was done is printed first)
255  unexpected error
===  ==========================================================

When several apply, the first of 130/143, 1, 5, 2, 4, 3, 0 wins.

``main(argv)`` may be called many times in one process (nova's
functional harness, other tooling): it builds its own ConfigOpts each
time, writes to ``sys.stdout`` as it is at call time and never sets up
logging unless run as the console script.
"""

import argparse
import contextlib
import gc
import inspect
import io
import logging as std_logging
import re
import sys
import textwrap

from oslo_config import cfg
from oslo_log import handlers as log_handlers
from oslo_log import log as logging

from nova_orphans.cmd import allocations
from nova_orphans.cmd import providers
from nova_orphans import conf as orphans_conf
from nova_orphans import db_utils
from nova_orphans import exception
from nova_orphans.i18n import _

LOG = logging.getLogger(__name__)

SUCCESS = 0
REPAIR_FAILED = 1
INCOMPLETE = 2
ORPHANS_FOUND = 3
REPAIRED = 4
INCOMPLETE_WITH_ORPHANS = 5
UNSUPPORTED_SCHEMA = 6
INVALID_INPUT = 127
INTERRUPTED = 130
TERMINATED = 143
UNEXPECTED = 255

DESCRIPTION = _(
    'Find and repair placement allocations that no live nova object owns, '
    'reading nova\'s configuration (--config-file, by default '
    '/etc/nova/nova.conf) on a controller: "allocations list" reports '
    'them, "allocations clean" repairs them, journaled and '
    'generation-checked, and "allocations restore" undoes a clean. '
    '"providers list" and "providers clean" do the same for the resource '
    'provider trees of compute nodes nova deleted. '
    '"nova-orphans-manage CATEGORY ACTION --help" shows an action\'s '
    'options and return codes.')

LOGGING_HELP = _(
    'Log records (the libraries\' database and HTTP retries, the '
    'command\'s own) go to --log-file or --log-dir, to journald with '
    '--use-journal, to syslog with --use-syslog, and to stderr only with '
    '--debug: without it a failure is one line on stderr. --use-journal '
    'is about logging; the repair journal that "restore" reads is the '
    '--journal PATH option of "allocations clean" and "allocations '
    'restore" (and of "providers clean").')

JOURNAL_HELP = _(
    '--journal PATH is the repair journal: the file where every change is '
    'recorded before it is made, so that "restore" can undo it. It is not '
    'oslo.log\'s --use-journal (given before the category), which sends '
    'log records to journald.')

# What each return code means in --help. Each action lists only the
# codes it can return.
RETURN_CODES = {
    0: _('nothing found, nothing to do'),
    1: _('a repair failed (the others were still done)'),
    2: _('incomplete: some allocations could not be verified (a cell, or '
         'placement\'s database, could not be read) and no orphan was '
         'found in the rest'),
    3: _('orphans found, nothing changed (--dry-run, or every repair '
         'skipped)'),
    4: _('orphans found and all repaired'),
    5: _('incomplete, and orphans found in the part that was read'),
    6: _('unsupported or damaged nova schema; nothing was changed'),
    127: _('invalid input; nothing was changed'),
    130: _('interrupted (SIGINT) after what was done was printed'),
    143: _('terminated (SIGTERM) after what was done was printed'),
    255: _('unexpected error'),
}
# Where an action's code means something more precise.
ACTION_MEANINGS = {
    'list': {3: _('orphans found (list never changes anything)')},
    'restore': {
        0: _('nothing to restore (every entry was already undone)'),
        1: _('an entry was refused or failed (the others were restored)'),
        3: _('entries would be restored (--dry-run)'),
        4: _('everything restored'),
    },
}
ACTION_CODES = {
    ('allocations', 'list'): (0, 2, 3, 5, 6, 127, 130, 143, 255),
    ('allocations', 'clean'): (0, 1, 2, 3, 4, 5, 6, 127, 130, 143, 255),
    ('allocations', 'restore'): (0, 1, 3, 4, 127, 130, 143, 255),
    ('providers', 'list'): (0, 2, 3, 5, 6, 127, 130, 143, 255),
    ('providers', 'clean'): (0, 1, 2, 3, 4, 5, 6, 127, 130, 143, 255),
}

CATEGORIES = {
    'allocations': allocations.AllocationCommands,
    'providers': providers.ProviderCommands,
}


class _HelpFormatter(argparse.HelpFormatter):
    """Paragraphs refilled one by one; blocks with indented lines kept."""

    def _fill_text(self, text, width, indent):
        blocks = []
        for block in re.split(r'\n\s*\n', text.strip()):
            if '\n ' in block:
                blocks.append(textwrap.indent(block, indent))
            else:
                blocks.append(textwrap.fill(
                    ' '.join(block.split()), width, initial_indent=indent,
                    subsequent_indent=indent, break_on_hyphens=False))
        return '\n\n'.join(blocks)


def return_codes_help(codes, meanings=RETURN_CODES):
    """The "Return codes:" block of an action's --help."""
    lines = [_('Return codes:')]
    for code in codes:
        lines.append(textwrap.fill(
            meanings[code], width=76, initial_indent='  %-5d' % code,
            subsequent_indent=' ' * 7))
    return '\n'.join(lines)


def _epilog(category, action):
    codes = ACTION_CODES[(category, action)]
    blocks = [return_codes_help(
        codes, {**RETURN_CODES, **ACTION_MEANINGS.get(action, {})})]
    if action in ('clean', 'restore'):
        blocks.append(JOURNAL_HELP)
    return '\n\n'.join(blocks)


def _add_command_parsers(subparsers):
    for category, cls in CATEGORIES.items():
        every = sorted({code for (c, _a), codes in ACTION_CODES.items()
                        if c == category for code in codes})
        parser = subparsers.add_parser(
            category, help=cls.__doc__,
            description=inspect.cleandoc(cls.__doc__),
            epilog=return_codes_help(every), formatter_class=_HelpFormatter)
        actions = parser.add_subparsers(dest='action', metavar='ACTION')
        actions.required = True
        for name, method in cls.actions():
            action = actions.add_parser(
                name, help=method.__doc__.splitlines()[0],
                description=inspect.cleandoc(method.__doc__),
                epilog=_epilog(category, name),
                formatter_class=_HelpFormatter)
            for args, kwargs in method.args:
                action.add_argument(*args, **kwargs)
            action.set_defaults(action_fn=name)


def _parse(conf, argv):
    """Parse, turning argparse's usage dump into one line and a code."""
    conf.register_cli_opt(cfg.SubCommandOpt(
        'category', title=_('Command categories'),
        handler=_add_command_parsers))
    logging.register_options(conf)
    orphans_conf.register_opts(conf, placement_opts=False)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            conf(argv, project='nova', prog='nova-orphans-manage',
                 description=DESCRIPTION, epilog=LOGGING_HELP)
    except SystemExit as e:
        if e.code:
            lines = err.getvalue().strip().splitlines()
            print(lines[-1] if lines else _('Invalid arguments'),
                  file=sys.stderr)
            return INVALID_INPUT
        return SUCCESS
    except (cfg.ConfigFilesNotFoundError, cfg.ConfigFileParseError,
            cfg.ConfigFileValueError, cfg.Error) as e:
        print(_('Invalid configuration: %(error)s') % {
            'error': db_utils.safe_error(e)}, file=sys.stderr)
        return INVALID_INPUT
    except OSError as e:
        # oslo.config finds a file it then cannot read (a directory, no
        # permission) and lets the OSError through.
        print(_('Invalid configuration: cannot read %(file)s: %(error)s') %
              {'file': e.filename, 'error': e.strerror}, file=sys.stderr)
        return INVALID_INPUT
    return None


def _setup_logging(conf):
    """Log records go to stderr only with --debug on the command line.

    Without it, a failure is the one line the command prints: oslo.db's
    connection retries, keystoneauth's and the tool's own warnings go to
    the log file (--log-file, --log-dir), journald or syslog when one is
    configured, and nowhere else. ``debug = True`` in nova.conf is the
    services' setting, not a request to see this command's logs.
    """
    # stdout is the command's output (JSON, metrics): oslo.log would log
    # there when nothing else is configured.
    conf.set_override('use_stderr', True)
    logging.setup(conf, 'nova-orphans')
    if conf.log_config_append:
        return
    if (conf.debug and conf.get_location('debug').location ==
            cfg.Locations.command_line):
        return
    root = std_logging.getLogger()
    for handler in list(root.handlers):
        if (type(handler) in (std_logging.StreamHandler,
                              log_handlers.ColorHandler) and
                handler.stream is sys.stderr):
            root.removeHandler(handler)
    if not root.handlers:
        # Else logging's last resort prints warnings on stderr.
        root.addHandler(std_logging.NullHandler())


def main(argv=None):
    console = argv is None
    if console:
        argv = sys.argv[1:]
        # The process is this command's alone, and what it has imported
        # lives until it exits: the collector need not walk all that
        # again, as the interpreter's shutdown otherwise does (a fifth
        # of a small run's time). Never done for in-process callers.
        gc.freeze()
    conf = cfg.ConfigOpts()
    rc = _parse(conf, argv)
    if rc is not None:
        return rc
    if console:
        _setup_logging(conf)
    category = conf.category
    commands = CATEGORIES[category.name](conf, console=console)
    try:
        return getattr(commands, category.action_fn.replace('-', '_'))()
    except exception.InvalidInput as e:
        print(db_utils.safe_error(e), file=sys.stderr)
        return INVALID_INPUT
    except exception.PlacementDatabaseUnreadable as e:
        # Nothing could be checked: not "nothing found", not a crash.
        print(_('ERROR: %(error)s') % {'error': db_utils.safe_error(e)},
              file=sys.stderr)
        return INCOMPLETE
    except exception.UnsupportedSchema as e:
        print(_('ERROR: %(error)s') % {'error': db_utils.safe_error(e)},
              file=sys.stderr)
        return UNSUPPORTED_SCHEMA
    except exception.NovaOrphansException as e:
        print(_('ERROR: %(error)s') % {'error': db_utils.safe_error(e)},
              file=sys.stderr)
        LOG.debug('Command failed', exc_info=True)
        return UNEXPECTED
    except Exception as e:
        print(_('Unexpected error: %(error)s') % {
            'error': db_utils.safe_error(e)}, file=sys.stderr)
        LOG.error('Unexpected error', exc_info=True)
        return UNEXPECTED
    finally:
        commands.close()


if __name__ == '__main__':
    sys.exit(main())
