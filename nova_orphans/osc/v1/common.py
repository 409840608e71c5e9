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
"""The openstack commands, made from nova_orphans.app.commands.

Each command is one of app.commands' (``command_class``): its options,
help and exit codes are declared there once, for nova-orphans-manage
too. A command runs as both front ends run one (frontend.Run): it returns
the report's rows to cliff as (columns, rows), cliff prints them with
the format's formatter (output.py's, found in the commands' own
formatter namespaces), and ``run`` then prints what closes the report
and returns the exit code of the table both front ends share (cliff's
own convention, 1 for any error and 2 for a usage error, would tell a
script neither what happened nor the same as nova-orphans-manage). Only
cliff's, osc-lib's and argparse's public interfaces are used: the hooks
a command overrides (``get_parser``, ``get_description``,
``formatter_namespace``, ``take_action``, ``run``) and the parser's
public methods.
"""

import argparse
import contextlib
import functools
import logging
import os
import shlex
import sys

from keystoneauth1 import exceptions as ks_exc
from osc_lib.command import command

from nova_orphans.app import api_sources
from nova_orphans.app import commands
from nova_orphans.app import options as opts
from nova_orphans.clients import auth as auth_faults
from nova_orphans import exception
from nova_orphans import frontend
from nova_orphans import output

LOG = logging.getLogger(__name__)
# The loggers of this package, whose records a command's run makes.
PACKAGE = __name__.split('.')[0]
# The commands' formatters (setup.cfg's entry points: output.FORMATTERS);
# those of the commands that offer "-f prometheus" too.
FORMATTERS = 'nova_orphans.formatter.list'
METRICS_FORMATTERS = 'nova_orphans.formatter.metrics'


@functools.lru_cache(maxsize=None)
def _help_formatter(base):
    """``base`` (cliff's help formatter), printing descriptions and
    epilogs as written, line by line: they are filled already, and the
    return codes are a list that a refill would run into one paragraph.
    """
    return type('HelpFormatter',
                (argparse.RawDescriptionHelpFormatter, base), {})


def _exit(exit, status=0, message=None):
    """argparse's exit, its usage error's code the tool's (see
    frontend.usage_code).
    """
    exit(frontend.usage_code(status), message)


class OrphanLister(command.Lister):
    """Every command's base: ``COMMAND`` (an app.commands.Command) run,
    its report rendered, its exit code returned.
    """

    COMMAND = None

    def get_description(self):
        return self.COMMAND.help + '\n\n' + self.COMMAND.describe()

    def get_epilog(self):
        return self.COMMAND.epilog(bullets=True)

    @property
    def formatter_namespace(self):
        # The commands' own formatters (output.py): "-f prometheus" for
        # the commands that offer it only.
        if output.PROMETHEUS in self.COMMAND.formats:
            return METRICS_FORMATTERS
        return FORMATTERS

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.formatter_class = _help_formatter(parser.formatter_class)
        parser.exit = functools.partial(_exit, parser.exit)
        for option in self.COMMAND.options:
            parser.add_argument(*option.flags, **option.argparse_kwargs(
                opts.metavar_osc))
        return parser

    def sources(self, values):
        # osc names the cloud and its settings in its own --debug lines;
        # not the file it read them from.
        LOG.debug('Configuration: %(file)s', {'file': getattr(
            getattr(self.app, 'cloud_config', None), 'config_filename',
            None) or 'no clouds.yaml (the command line and OS_* variables)'})
        return api_sources.APISources(
            self.app.client_manager.nova_orphans, values,
            every_root=self.COMMAND.category == 'providers')

    def own_process(self):
        """Whether this command is the ``openstack`` process itself: not
        a command of osc's interactive shell, nor of a program that runs
        osc's shell in-process (see frontend.Run).
        """
        return (not self.app.interactive_mode and
                os.path.basename(sys.argv[0]) == 'openstack')

    def take_action(self, parsed_args):
        self.frontend_run.execute()
        keys, rows = self.frontend_run.listing(parsed_args.long,
                                               parsed_args.columns)
        # -c and --sort-column as the columns' keys, for cliff (which
        # knows neither the headers nor the rule of -c).
        parsed_args.columns = list(keys) if parsed_args.columns else []
        parsed_args.sort_columns = output.named(keys,
                                                parsed_args.sort_columns)
        return keys, rows

    def command_line(self, cmd):
        """The openstack command line of a report.CommandLine: against
        the cloud this run reached (--os-cloud, when clouds.yaml named
        it), whatever cloud the shell that runs it defaults to.
        """
        argv = ['openstack']
        cloud = self.frontend_run.context.sources().cloud().get('name')
        if cloud:
            argv += ['--os-cloud', cloud]
        argv += commands.find(cmd.category, cmd.action).osc.split()
        return ' '.join(shlex.quote(w) for w in argv + cmd.argv)

    def run(self, parsed_args):
        """The run's exit code, from the table both front ends share
        (cliff's own convention, 1 for any error, would tell a script
        neither what happened nor the same as nova-orphans-manage).
        """
        given = {o.dest: getattr(parsed_args, o.dest, None)
                 for o in self.COMMAND.options}
        given['format'] = parsed_args.formatter
        # openstack reads no configuration file: the options' own
        # defaults.
        run = self.frontend_run = frontend.Run(
            self.COMMAND, given, self.sources, self.app.stdout,
            self.app.stderr, own_process=self.own_process())

        def body():
            try:
                # cliff's: take_action, then the format's formatter.
                super(OrphanLister, self).run(parsed_args)
                run.out.flush()
            except BrokenPipeError:
                # The rows' reader went (see frontend.Stream).
                run.out.broken = True
            except ks_exc.ClientException as e:
                # Authentication happens on the first request, in osc's
                # session: keystone's answer, not a request of ours.
                raise (auth_faults.fault(e) or
                       exception.NovaOrphansException(str(e))) from e
            # cliff's --max-width is 0 when not given.
            run.close_report(self.command_line, parsed_args.max_width or None)
            return run.report.exit_code

        with package_level():
            return run.end(body)


@contextlib.contextmanager
def package_level():
    """osc sets the root logger to DEBUG whatever its handlers show:
    this package's loggers make no record below the level of every
    handler for the command's run (the lines of --debug cost a run CPU,
    which the default level must not pay).
    """
    package = logging.getLogger(PACKAGE)
    levels = [h.level for h in logging.getLogger().handlers]
    saved = package.level
    package.setLevel(max(logging.DEBUG, min(levels or [logging.WARNING])))
    try:
        yield
    finally:
        package.setLevel(saved)


def command_class(name, category, action, module):
    """The openstack command of app.commands' ``category action``."""
    cmd = commands.find(category, action)
    # A journal command reads local files only: osc logs in to no cloud
    # for it, and needs no credentials.
    return type(name, (OrphanLister,), {
        'COMMAND': cmd, '__module__': module, 'auth_required': cmd.requests,
        '__doc__': cmd.help + '\n\n' + cmd.describe()})
