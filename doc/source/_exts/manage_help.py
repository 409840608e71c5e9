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
"""``.. manage-help::``: nova-orphans-manage's --help, from the code."""

import argparse

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from nova_orphans.cmd import manage


class ManageHelp(SphinxDirective):

    def run(self):
        parser = argparse.ArgumentParser(prog='nova-orphans-manage')
        manage._add_command_parsers(parser.add_subparsers())
        result = []
        for category, cls in manage.CATEGORIES.items():
            for name, _method in cls.actions():
                action = _subparser(parser, category, name)
                section = nodes.section(
                    ids=['%s-%s' % (category, name)])
                section += nodes.title(text='%s %s' % (category, name))
                section += nodes.literal_block(text=action.format_help())
                result.append(section)
        return result


def _subparser(parser, category, name):
    categories = parser._subparsers._group_actions[0].choices
    actions = categories[category]._subparsers._group_actions[0].choices
    return actions[name]


def setup(app):
    app.add_directive('manage-help', ManageHelp)
    return {'parallel_read_safe': True}
