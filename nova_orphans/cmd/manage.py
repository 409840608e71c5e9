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
``allocations`` and ``providers``. Return codes: nova_orphans.exit_codes,
the table both front ends share, shown by ``--help`` and the docs.

``main(argv)`` may be called many times in one process (nova's
functional harness, other tooling): it builds its own ConfigOpts each
time, writes to ``sys.stdout`` as it is at call time and never sets up
logging unless run as the console script.
"""

import argparse
import contextlib
import gc
import importlib.metadata
import inspect
import io
import logging as std_logging
import os
import re
import signal
import sys
import textwrap

from oslo_config import cfg
from oslo_log import handlers as log_handlers
from oslo_log import log as logging

from nova_orphans.cmd import allocations
from nova_orphans.cmd import journals
from nova_orphans.cmd import providers
from nova_orphans import conf as orphans_conf
from nova_orphans import db_utils
from nova_orphans import exception
from nova_orphans import exit_codes
from nova_orphans.i18n import _
from nova_orphans import interrupt

LOG = logging.getLogger(__name__)

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

ACTION_CODES = {
    ('allocations', 'list'): exit_codes.LIST_CODES,
    ('allocations', 'clean'): exit_codes.CLEAN_CODES,
    ('allocations', 'restore'): exit_codes.RESTORE_CODES,
    ('providers', 'list'): exit_codes.LIST_CODES,
    ('providers', 'clean'): exit_codes.CLEAN_CODES,
    ('providers', 'restore'): exit_codes.RESTORE_CODES,
    ('journals', 'list'): exit_codes.JOURNAL_CODES,
    ('journals', 'prune'): exit_codes.JOURNAL_CODES,
}

# Where oslo.config looks for nova.conf without --config-file (its
# _get_config_dirs for the project "nova"), for the error that none
# was found.
CONFIG_DIRS = ('~/.nova', '~', '/etc/nova', '/etc')

CATEGORIES = {
    'allocations': allocations.AllocationCommands,
    'providers': providers.ProviderCommands,
    'journals': journals.JournalCommands,
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


def _epilog(category, action):
    blocks = [exit_codes.help_text(ACTION_CODES[(category, action)],
                                   restoring=action == 'restore')]
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
            epilog=exit_codes.help_text(every), formatter_class=_HelpFormatter)
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


def _version():
    # Asked for only with --version: reading the installed package's
    # metadata costs a tenth of a second, more than a small run's reads.
    return importlib.metadata.version('nova-orphans')


def _parse(conf, argv):
    """Parse, turning argparse's usage dump into one line and a code."""
    conf.register_cli_opt(cfg.SubCommandOpt(
        'category', title=_('Command categories'),
        handler=_add_command_parsers))
    # --version is oslo.config's (argparse's): its text is looked up
    # only when it is asked for.
    version = ('--version' in argv[:_first_category(argv)] and _version()
               or '-')
    logging.register_options(conf)
    orphans_conf.register_opts(conf, placement_opts=False)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            conf(argv, project='nova', prog='nova-orphans-manage',
                 version=version, description=DESCRIPTION,
                 epilog=LOGGING_HELP)
    except SystemExit as e:
        if e.code:
            lines = err.getvalue().strip().splitlines()
            print(lines[-1] if lines else _('Invalid arguments'),
                  file=sys.stderr)
            hint = _misplaced(conf, argv)
            if hint:
                print(hint, file=sys.stderr)
            return exit_codes.INVALID_INPUT
        return exit_codes.SUCCESS
    except (cfg.ConfigFilesNotFoundError, cfg.ConfigFileParseError,
            cfg.ConfigFileValueError, cfg.Error) as e:
        print(_('Invalid configuration: %(error)s') % {
            'error': db_utils.safe_error(e)}, file=sys.stderr)
        return exit_codes.CONFIG_ERROR
    except OSError as e:
        # oslo.config finds a file it then cannot read (a directory, no
        # permission) and lets the OSError through.
        print(_('Invalid configuration: cannot read %(file)s: %(error)s') %
              {'file': e.filename, 'error': e.strerror}, file=sys.stderr)
        return exit_codes.CONFIG_ERROR
    if not conf.config_file and not conf.config_dir:
        print(_('Configuration error: no configuration file was found: '
                'looked for nova.conf and nova-orphans-manage.conf in '
                '%(dirs)s; give one with --config-file PATH (before the '
                'category).') % {'dirs': ', '.join(CONFIG_DIRS)},
              file=sys.stderr)
        return exit_codes.CONFIG_ERROR
    return None


def _misplaced(conf, argv):
    """The hint for a global option given after the category, which
    argparse only calls unrecognized.
    """
    names = {'--' + opt['opt'].dest.replace('_', '-')
             for opt in conf._cli_opts if opt['opt'].dest != 'category'}
    names |= {'--config-file', '--config-dir'}
    first = _first_category(argv)
    late = [word.split('=')[0] for word in argv[first + 1:]
            if word.split('=')[0] in names]
    if first == len(argv) or not late:
        return None
    return _('%(options)s must come before the category, as in: '
             'nova-orphans-manage %(option)s ... %(category)s ACTION') % {
        'options': ', '.join(late), 'option': late[0],
        'category': argv[first]}


def _first_category(argv):
    """Where the category is in ``argv`` (its length if nowhere)."""
    return next((i for i, word in enumerate(argv) if word in CATEGORIES),
                len(argv))


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


def _take_late_signals():
    """A signal after the run's report, while the process ends: said,
    and the exit code says it too (130/143), never a traceback.
    """
    def ended(signum, frame):
        interrupt.say(_('Interrupted by %(signal)s as the run ended; its '
                        'report above is complete.') % {
            'signal': interrupt.signal_name(signum)})
        os._exit(exit_codes.of_signal(signum))
    for signum in interrupt.SIGNALS:
        signal.signal(signum, ended)


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
    try:
        rc = _parse(conf, argv)
    except Exception as e:
        # A bug (the known faults have their codes): one line, 255.
        print(_('Unexpected error: %(error)s') % {
            'error': db_utils.safe_error(e)}, file=sys.stderr)
        return exit_codes.UNEXPECTED
    if rc is not None:
        return rc
    if console:
        _setup_logging(conf)
    category = conf.category
    commands = CATEGORIES[category.name](conf, console=console)
    try:
        code = getattr(commands, category.action_fn.replace('-', '_'))()
        if console:
            _take_late_signals()
        return code
    except exception.InvalidInput as e:
        print(db_utils.safe_error(e), file=sys.stderr)
        return e.exit_code
    except exception.NovaOrphansException as e:
        # A known fault: its own code and one line (a placement database
        # that cannot be read is 2: nothing could be checked, which is
        # neither "nothing found" nor a crash).
        print(_('ERROR: %(error)s') % {'error': db_utils.safe_error(e)},
              file=sys.stderr)
        LOG.debug('Command failed', exc_info=True)
        return exit_codes.of_error(e)
    except Exception as e:
        print(_('Unexpected error: %(error)s') % {
            'error': db_utils.safe_error(e)}, file=sys.stderr)
        LOG.error('Unexpected error', exc_info=True)
        return exit_codes.UNEXPECTED
    finally:
        commands.close()


if __name__ == '__main__':
    sys.exit(main())
