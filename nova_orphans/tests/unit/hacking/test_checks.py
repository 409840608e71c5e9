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
"""The local hacking checks (nova_orphans/hacking/checks.py)."""

import ast
import configparser
import os
import re
import textwrap

from oslotest import base

from nova_orphans.hacking import checks
from nova_orphans.tests import programs

ROOT = programs.REPO
PRODUCT = './nova_orphans/app/commands.py'
TEST = './nova_orphans/tests/unit/test_x.py'


def codes(found):
    return [message.split(':')[0] for _, message in found]


def tree_errors(check, source):
    tree = ast.parse(textwrap.dedent(source))
    return [(line, message.split(':')[0])
            for line, _, message, _ in check(tree, PRODUCT).run()]


class ServiceImportsTestCase(base.BaseTestCase):

    def test_product_imports_none(self):
        for line in ('import nova', 'import nova.conf',
                     'from nova import objects', 'from nova.db import api',
                     'import placement.deploy', 'from placement import db',
                     'import eventlet', 'from eventlet import greenthread'):
            self.assertEqual(['NO301'], codes(
                checks.no_service_imports(line, PRODUCT)), line)

    def test_own_package_and_tests_are_fine(self):
        for line in ('import nova_orphans', 'from nova_orphans import app',
                     'import novaclient', 'import placement_db_tools'):
            self.assertEqual([], codes(
                checks.no_service_imports(line, PRODUCT)), line)
        self.assertEqual([], codes(checks.no_service_imports(
            'from nova import test', TEST)))
        self.assertEqual([], codes(checks.no_service_imports(
            'import nova', './tools/bench/run.py')))

    def test_product_is_the_package_less_its_tests(self):
        self.assertTrue(checks._in_product('nova_orphans/output.py'))
        self.assertTrue(checks._in_product(
            '/src/nova_orphans/nova_orphans/readers/nova_db.py'))
        self.assertFalse(checks._in_product(
            '/src/nova_orphans/nova_orphans/tests/scenario/base.py'))
        self.assertFalse(checks._in_product('setup.py'))


class TranslatedLogsTestCase(base.BaseTestCase):

    def test_translated_log_message(self):
        for line in ('LOG.debug(_("x"))', 'LOG.warning( _("x %(a)s"), {})',
                     'self.LOG.error(_("x"))', 'LOG.exception(_("x"))'):
            self.assertEqual(['NO302'], codes(
                checks.no_translated_logs(line)), line)

    def test_plain_log_messages_and_translated_output(self):
        for line in ('LOG.debug("x %(a)s", {"a": _("y")})',
                     'LOG.info("x")', 'print(_("x"))',
                     'raise exception.ConfigError(reason=_("x"))'):
            self.assertEqual([], codes(
                checks.no_translated_logs(line)), line)


class PositionalTranslationsTestCase(base.BaseTestCase):

    def test_positional_placeholders(self):
        self.assertEqual(
            [(1, 'NO303'), (2, 'NO303'), (3, 'NO303'), (4, 'NO303'),
             (5, 'NO303')],
            tree_errors(checks.NoPositionalTranslations, '''\
                x = _('a %s') % a
                x = _('a %d b') % b
                x = _('%(a)s and %s') % c
                x = _('a ' '%5.1f') % d
                x = _('a %-8s') % e
                '''))
        self.assertEqual([(1, 'NO303')], tree_errors(
            checks.NoPositionalTranslations, "x = _('100%%%s') % a"))

    def test_named_placeholders_and_percent_signs(self):
        self.assertEqual([], tree_errors(
            checks.NoPositionalTranslations, '''\
                x = _('a %(name)s, %(n)d%%') % {'name': a, 'n': 5}
                x = _('100%% done, %%s is literal')
                x = 'a %s' % a
                x = gettext('a %s')
                x = other._('a %s')
                '''))


class StreamsBoundAtImportTestCase(base.BaseTestCase):

    def test_defaults_and_module_and_class_attributes(self):
        # One error per stream named (the lambda's once).
        self.assertEqual(
            [(2, 'NO304'), (4, 'NO304'), (7, 'NO304'), (8, 'NO304'),
             (10, 'NO304'), (11, 'NO304'), (12, 'NO304'), (12, 'NO304'),
             (13, 'NO304'), (13, 'NO304')],
            tree_errors(checks.NoStreamsBoundAtImport, '''\
                import sys
                def main(argv, out=sys.stdout):
                    pass
                def warn(line, *, err=sys.stderr):
                    pass
                class Printer:
                    out = sys.stdout
                    def write(self, x, err=sys.stderr):
                        pass
                OUT = sys.stdout
                f = lambda x, o=sys.stdout: o
                STREAMS: tuple = (sys.stdout, sys.stderr)
                ERR = getattr(sys.stderr, 'buffer', sys.stdout)
                '''))

    def test_read_when_used(self):
        self.assertEqual([], tree_errors(
            checks.NoStreamsBoundAtImport, '''\
                import sys
                def main(argv, out=None):
                    out = out or sys.stdout
                    print('x', file=sys.stderr)
                class Printer:
                    def __init__(self):
                        self.out = sys.stdout
                    @property
                    def err(self):
                        return sys.stderr
                '''))


class GlobalConfigTestCase(base.BaseTestCase):

    def test_global_config_in_the_product(self):
        for line in ('CONF = cfg.CONF', 'cfg.CONF.register_opts(opts)',
                     'f(cfg.CONF)'):
            self.assertEqual(['NO305'], codes(
                checks.no_global_config(line, PRODUCT)), line)

    def test_own_config_and_tests(self):
        for line in ('conf = cfg.ConfigOpts()', 'x = cfg.CONFIG'):
            self.assertEqual([], codes(
                checks.no_global_config(line, PRODUCT)), line)
        self.assertEqual([], codes(checks.no_global_config(
            'CONF = cfg.CONF', TEST)))


class PrivateImportsTestCase(base.BaseTestCase):

    def test_private_modules_and_names_of_libraries(self):
        for line in ('from cliff import _argparse',
                     'from cliff import _argparse as cliff_argparse',
                     'from keystoneauth1._fair_semaphore import X',
                     'import keystoneauth1._fair_semaphore',
                     'import os, oslo_log._options as o',
                     'from oslo_config.cfg import (Opt, _Namespace)'):
            self.assertEqual(['NO306'], codes(
                checks.no_private_imports(line, PRODUCT)), line)

    def test_public_and_own_names(self):
        for line in ('from cliff.formatters import base',
                     'import argparse', 'from __future__ import annotations',
                     'from nova_orphans.app import _private',
                     'from . import _sibling',
                     'import nova_orphans._x',
                     'from oslo_config import cfg, types'):
            self.assertEqual([], codes(
                checks.no_private_imports(line, PRODUCT)), line)
        self.assertEqual([], codes(checks.no_private_imports(
            'from cliff import _argparse', TEST)))


class RegisteredTestCase(base.BaseTestCase):
    """Each check is registered under its code and named in HACKING.rst."""

    def test_registered_and_documented(self):
        config = configparser.ConfigParser()
        config.read(os.path.join(ROOT, 'tox.ini'))
        section = config['flake8:local-plugins']
        self.assertEqual('./nova_orphans/hacking', section['paths'])
        registered = dict(
            (code.strip(), target.strip().split(':'))
            for code, target in (
                line.split('=') for line in
                section['extension'].strip().splitlines()))
        with open(os.path.join(ROOT, 'HACKING.rst')) as f:
            hacking_rst = f.read()
        with open(checks.__file__) as f:
            source = f.read()
        self.assertEqual(
            sorted(set(re.findall(r'\bNO3\d\d\b', source))),
            sorted(registered))
        for code, (module, name) in registered.items():
            self.assertEqual('checks', module)
            check = getattr(checks, name)
            self.assertTrue(check.__doc__.startswith(code + ':'), name)
            self.assertIn('``%s``' % code, hacking_rst)
