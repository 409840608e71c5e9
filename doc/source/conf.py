# -*- coding: utf-8 -*-
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

import os
import sys

sys.path.insert(0, os.path.abspath('_exts'))

extensions = [
    'manage_help',
    'sphinx.ext.autodoc',
    'openstackdocstheme',
    'oslo_config.sphinxext',
    'oslo_config.sphinxconfiggen',
    'cliff.sphinxext',
]

config_generator_config_file = (
    '../../etc/nova-orphans/nova-orphans-config-generator.conf')
sample_config_basename = '_static/nova-orphans'

openstackdocs_repo_name = 'x/nova-orphans'
openstackdocs_bug_project = 'nova-orphans'
openstackdocs_bug_tag = 'doc'
openstackdocs_auto_name = False

project = 'nova-orphans'
copyright = '2026, The nova-orphans Authors'
source_suffix = '.rst'
master_doc = 'index'
exclude_patterns = ['_build']
pygments_style = 'native'
html_theme = 'openstackdocs'
html_static_path = ['_static']
autoprogram_cliff_application = 'openstack'
