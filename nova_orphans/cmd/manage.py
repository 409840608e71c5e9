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
CATEGORY ACTION [options]``, reading nova.conf. The categories, their
actions, options and exit codes are nova_orphans.app.commands', which
the openstack commands share: this module parses them with oslo.config
and prints the report each action returns.

``main(argv)`` may be called many times in one process (nova's
functional harness, other tooling): it builds its own ConfigOpts each
time, writes to ``sys.stdout`` as it is at call time and never sets up
logging unless run as the console script.
"""

import argparse
import functools
import importlib.metadata
import logging as std_logging
import re
import shlex
import shutil
import sys
import textwrap

from oslo_config import cfg
from oslo_log import handlers as log_handlers
from oslo_log import log as logging

from nova_orphans.app import commands
from nova_orphans.app import options as opts
from nova_orphans.app import sources as sources_mod
from nova_orphans import conf as orphans_conf
from nova_orphans import db_utils
from nova_orphans import exception
from nova_orphans import exit_codes
from nova_orphans import frontend
from nova_orphans.i18n import _
from nova_orphans import output

LOG = logging.getLogger(__name__)

# Where oslo.config looks for nova.conf without --config-file (its
# _get_config_dirs for the project "nova"), for the error that none
# was found.
CONFIG_DIRS = ('~/.nova', '~', '/etc/nova', '/etc')


def _filled(text):
    """``text`` for argparse.RawDescriptionHelpFormatter: paragraphs
    refilled one by one to the width argparse gives its help (the
    terminal's, less 2), blocks with indented lines (the return codes)
    kept as written.
    """
    width = max(shutil.get_terminal_size().columns - 2, 11)
    blocks = []
    for block in re.split(r'\n\s*\n', text.strip()):
        if '\n ' in block:
            blocks.append(block)
        else:
            blocks.append(textwrap.fill(
                ' '.join(block.split()), width, break_on_hyphens=False))
    return '\n\n'.join(blocks)


def _add_command_parsers(subparsers):
    subparsers.required = True
    for category, text in commands.CATEGORIES.items():
        every = commands.of_category(category)
        parser = subparsers.add_parser(
            category, help=text, description=_filled(text),
            epilog=_filled(exit_codes.help_text(sorted(
                {code for c in every for code in c.codes}))),
            formatter_class=argparse.RawDescriptionHelpFormatter)
        actions = parser.add_subparsers(dest='action', required=True)
        for command in every:
            epilog = command.epilog()
            if any(o.dest == 'journal' for o in command.options):
                epilog += '\n\n' + commands.JOURNAL_HELP
            action = actions.add_parser(
                command.action, help=command.help,
                description=_filled(
                    command.help + '\n\n' + command.description),
                epilog=_filled(epilog),
                formatter_class=argparse.RawDescriptionHelpFormatter)
            formats = output.FORMATS + command.formats
            action.add_argument(
                '-f', '--format', choices=formats, default=output.TABLE,
                help=_('Output format: %(choices)s (default: table). value '
                       'and csv print plain fields, resources as '
                       'VCPU=1,MEMORY_MB=512, an empty field in value as '
                       '"-".') % {'choices': ', '.join(formats)})
            for option in command.options + [opts.COLUMN]:
                action.add_argument(*option.flags, **option.argparse_kwargs(
                    opts.metavar_upper))
            for fmt in formats:
                output.FORMATTERS[fmt]().add_argument_group(action)


def _version():
    # Asked for only with --version: reading the installed package's
    # metadata costs a tenth of a second, more than a small run's reads.
    return importlib.metadata.version('nova-orphans')


def _parse(conf, argv):
    """Parse ``argv`` into ``conf``; None, or the exit code of a command
    line that ends here: help and --version 0, a usage error (argparse
    prints it, as nova-manage's) 127, a configuration that cannot be
    read 7.
    """
    conf.register_cli_opt(cfg.SubCommandOpt(
        'category', title=_('Command categories'),
        handler=_add_command_parsers))
    # --version is oslo.config's (argparse's): its text is looked up
    # only when it is asked for.
    version = '--version' in argv and _version() or '-'
    logging.register_options(conf)
    orphans_conf.register_opts(conf, placement_opts=False)
    try:
        conf(argv, project='nova', prog='nova-orphans-manage',
             version=version, description=commands.DESCRIPTION,
             epilog=commands.LOGGING_HELP)
    except SystemExit as e:
        return frontend.usage_code(e.code)
    except cfg.Error as e:
        return _error(exception.ConfigError(reason=db_utils.safe_error(e)))
    except OSError as e:
        # oslo.config finds a file it then cannot read (a directory, no
        # permission) and lets the OSError through.
        return _error(exception.ConfigError(
            reason=_('cannot read %(file)s: %(error)s') % {
                'file': e.filename, 'error': e.strerror}))
    if not conf.config_file and not conf.config_dir:
        return _error(exception.ConfigError(reason=_(
            'no configuration file was found: looked for nova.conf and '
            'nova-orphans-manage.conf in %(dirs)s; give one with '
            '--config-file PATH (before the category).') % {
            'dirs': ', '.join(CONFIG_DIRS)}))
    return None


def _error(error):
    """One line for a fault (output.error_line); its exit code."""
    return frontend.fault(error, sys.stderr)


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


def _config(conf, command):
    """nova.conf's values of the command's options' ``[nova_orphans]``
    defaults; a value oslo.config cannot read is a configuration error
    (an int that is none, say).
    """
    group = conf.nova_orphans
    try:
        return {o.config: group[o.config]
                for o in command.options if o.config}
    except cfg.Error as e:
        raise exception.ConfigError(reason=db_utils.safe_error(e)) from e


def _command_line(conf, command):
    """The nova-orphans-manage command line of a report.CommandLine,
    with the configuration this run read, ready to paste.
    """
    words = ['nova-orphans-manage']
    files = list(conf.config_file or ())
    if files != list(conf.default_config_files or ()):
        for path in files:
            words += ['--config-file', path]
    for path in conf.config_dirs:
        words += ['--config-dir', path]
    words += [command.category, command.action] + command.argv
    return ' '.join(shlex.quote(w) for w in words)


def _run(conf, console):
    """The action's exit code, once its report is printed."""
    parsed = conf.category
    command = commands.find(parsed.name, parsed.action)
    given = {o.dest: getattr(parsed, o.dest, None) for o in command.options}
    given['format'] = parsed.format
    run = frontend.Run(
        command, given, functools.partial(sources_mod.DatabaseSources, conf),
        sys.stdout, sys.stderr, config=functools.partial(_config, conf,
                                                         command),
        own_process=console, state_path=conf.nova_orphans.state_path)

    def body():
        run.execute()
        keys, rows = run.listing(parsed.long, parsed.columns)
        output.FORMATTERS[run.format]().emit_list(keys, rows, run.out,
                                                  parsed)
        run.close_report(functools.partial(_command_line, conf),
                         parsed.max_width or None)
        return run.report.exit_code

    # A bug's traceback goes to the log (--log-file, journald, syslog),
    # which shows errors; on stderr only with --debug.
    return run.end(body, bug_level=std_logging.ERROR)


def main(argv=None):
    console = argv is None
    if console:
        argv = sys.argv[1:]
    conf = cfg.ConfigOpts()
    try:
        rc = _parse(conf, argv)
        if rc is not None:
            return rc
        if console:
            _setup_logging(conf)
    except exception.NovaOrphansException as e:
        LOG.debug('Command failed', exc_info=True)
        return _error(e)
    except Exception as e:
        # Before the run (the log file cannot be opened, say): one line,
        # as the run's own faults end (see frontend.Run.end).
        LOG.error('Unexpected error', exc_info=True)
        return _error(frontend.unexpected(e))
    code = _run(conf, console)
    if console:
        frontend.take_late_signals()
    return code


if __name__ == '__main__':
    sys.exit(main())
