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
"""Service URLs as the tool compares them, without importing a client
library: restore reads them before it knows it will talk to a service.
"""

import re

# The version at the end of an auth URL (/v3, /v2.0).
_VERSION = re.compile(r'/v\d+(?:\.\d+)?/?$')


def unversioned(path):
    """An auth URL's path without its version (/v3, /v2.0): keystone
    is the same service at either, as keystoneauth's discovery finds.
    """
    return _VERSION.sub('', path).rstrip('/')
