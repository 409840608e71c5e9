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
"""``.. manage-help::``: nova-orphans-manage's --help, from the code;
``.. exit-codes::``: the exit-code table both front ends share, from
nova_orphans.exit_codes.
"""

import argparse

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from nova_orphans.app import commands
from nova_orphans.cmd import manage
from nova_orphans import exit_codes


class ManageHelp(SphinxDirective):

    def run(self):
        parser = argparse.ArgumentParser(prog='nova-orphans-manage')
        manage._add_command_parsers(parser.add_subparsers())
        result = []
        for command in commands.COMMANDS:
            category, name = command.category, command.action
            action = _subparser(parser, category, name)
            section = nodes.section(ids=['%s-%s' % (category, name)])
            section += nodes.title(text='%s %s' % (category, name))
            section += nodes.literal_block(text=action.format_help())
            result.append(section)
        return result


def _subparser(parser, category, name):
    categories = parser._subparsers._group_actions[0].choices
    actions = categories[category]._subparsers._group_actions[0].choices
    return actions[name]


class ExitCodes(SphinxDirective):

    def run(self):
        table = nodes.table()
        group = nodes.tgroup(cols=2)
        table += group
        group += nodes.colspec(colwidth=8)
        group += nodes.colspec(colwidth=72)
        head = nodes.thead()
        head += _row(['Code', 'Meaning'])
        group += head
        body = nodes.tbody()
        for code in exit_codes.ALL_CODES:
            body += _row([str(code), exit_codes.MEANINGS[code]])
        group += body
        return [table, nodes.paragraph(text=exit_codes.PRECEDENCE)]


def _row(cells):
    row = nodes.row()
    for text in cells:
        entry = nodes.entry()
        entry += nodes.paragraph(text=text)
        row += entry
    return row


def setup(app):
    app.add_directive('manage-help', ManageHelp)
    app.add_directive('exit-codes', ExitCodes)
    return {'parallel_read_safe': True}
