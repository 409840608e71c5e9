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
CATEGORY ACTION [options]``, reading nova.conf. Return codes (also in
``--help`` and the docs):

===  ==========================================================
0    nothing found, nothing to do (the whole cloud was read)
1    at least one repair failed (the others were still done)
2    incomplete: a cell, or placement's database in fast mode, could
     not be read, and the part that was read has no orphan
3    orphans found and nothing changed (list, clean --dry-run)
4    orphans found and all repaired
5    incomplete (as 2), and orphans found in the part that was read
     (listed or repaired)
127  invalid input: bad uuid, unknown host, unreadable config
255  unexpected error
===  ==========================================================

When several apply, the first of 1, 5, 2, 4, 3, 0 wins.

``main(argv)`` may be called many times in one process (nova's
functional harness, other tooling): it builds its own ConfigOpts each
time, writes to ``sys.stdout`` as it is at call time and never sets up
logging unless run as the console script.
"""

import contextlib
import gc
import io
import sys

from oslo_config import cfg
from oslo_log import log as logging

from nova_orphans.cmd import allocations
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
INVALID_INPUT = 127
UNEXPECTED = 255

EPILOG = _('Return codes: 0 nothing found (the whole cloud was read); 1 a '
           'repair failed; 2 incomplete: a cell (or placement\'s database '
           'in fast mode) could not be read, no orphan in the rest; 3 '
           'orphans found, nothing changed; 4 all orphans repaired; 5 '
           'incomplete, and orphans found (listed or repaired) in the '
           'rest; 127 invalid input; 255 unexpected error. When several '
           'apply, the first of 1, 5, 2, 4, 3, 0 wins.')

CATEGORIES = {
    'allocations': allocations.AllocationCommands,
}


def _add_command_parsers(subparsers):
    for category, cls in CATEGORIES.items():
        parser = subparsers.add_parser(category, help=cls.__doc__,
                                       epilog=EPILOG)
        actions = parser.add_subparsers(dest='action', metavar='ACTION')
        actions.required = True
        for name, method in cls.actions():
            action = actions.add_parser(
                name, help=method.__doc__.splitlines()[0],
                description=method.__doc__, epilog=EPILOG)
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
            conf(argv, project='nova', prog='nova-orphans-manage')
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
    return None


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
        # stdout is the command's output (JSON, metrics): oslo.log would
        # log there when no log file is configured.
        conf.set_override('use_stderr', True)
        logging.setup(conf, 'nova-orphans')
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
    except exception.NovaOrphansException as e:
        print(_('ERROR: %(error)s') % {'error': db_utils.safe_error(e)},
              file=sys.stderr)
        LOG.debug('Command failed', exc_info=True)
        return UNEXPECTED
    except Exception as e:
        print(_('Unexpected error: %(error)s') % {
            'error': db_utils.safe_error(e)}, file=sys.stderr)
        LOG.debug('Unexpected error', exc_info=True)
        return UNEXPECTED
    finally:
        commands.close()


if __name__ == '__main__':
    sys.exit(main())
