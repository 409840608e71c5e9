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
"""Exceptions the front ends turn into one line and an exit code."""

from nova_orphans import exit_codes
from nova_orphans.i18n import _


class NovaOrphansException(Exception):
    """Base class; ``msg_fmt`` is filled with the keyword arguments.

    ``exit_code`` is the code both front ends end with when this error
    stops a run (see nova_orphans.exit_codes): the class's, unless the
    keyword gives another; UNEXPECTED (255) is kept for bugs.
    """

    msg_fmt = _('An unknown error occurred.')
    exit_code = exit_codes.UNEXPECTED

    def __init__(self, message=None, exit_code=None, **kwargs):
        self.kwargs = kwargs
        if not message:
            message = self.msg_fmt % kwargs
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class InvalidInput(NovaOrphansException):
    """The operator asked for something that cannot be."""

    msg_fmt = _('Invalid input: %(reason)s')
    exit_code = exit_codes.INVALID_INPUT


class ConfigError(NovaOrphansException):
    """The configuration cannot work: no file, an option missing or
    invalid, no endpoint of the service in the catalog.
    """

    msg_fmt = _('Configuration error: %(reason)s')
    exit_code = exit_codes.CONFIG_ERROR


class ServiceUnreachable(NovaOrphansException):
    """Placement, keystone or neutron could not be reached."""

    msg_fmt = _('%(service)s could not be reached: %(reason)s')
    exit_code = exit_codes.UNREACHABLE


class CredentialsRefused(NovaOrphansException):
    """Keystone, placement or nova refused the credentials."""

    msg_fmt = _('%(service)s refused the credentials: %(reason)s')
    exit_code = exit_codes.CREDENTIALS_REFUSED


class NovaUnreachable(NovaOrphansException):
    """nova's API database, or its compute API, could not be read."""

    msg_fmt = _('nova could not be read: %(reason)s')
    exit_code = exit_codes.NOVA_UNREADABLE


class PlacementError(NovaOrphansException):
    """``status_code``: placement's answer, if there was one;
    ``transient``: the reason of a fault that may be transient
    (clients.retry), else None.
    """

    msg_fmt = _('Placement request %(method)s %(url)s failed: %(reason)s')

    def __init__(self, message=None, status_code=None, transient=None,
                 **kwargs):
        super().__init__(message, **kwargs)
        self.status_code = status_code
        self.transient = transient


class PlacementVersionTooOld(ConfigError):
    msg_fmt = _('Placement at %(endpoint)s supports microversions up to '
                '%(max_version)s; nova-orphans needs at least '
                '%(min_version)s.')


class ComputeVersionTooOld(ConfigError):
    msg_fmt = _('The compute API at %(endpoint)s supports microversions up '
                'to %(max_version)s; nova-orphans needs %(min_version)s.')


class WrongEndpoint(ConfigError):
    """An endpoint answered, but not as the service would."""

    msg_fmt = _('%(service)s at %(url)s answered %(answer)s, not '
                '%(expected)s: %(hint)s')


class EndpointUnavailable(NovaOrphansException):
    """The service answered that it cannot serve now."""

    msg_fmt = _('%(service)s at %(url)s answered %(answer)s, not '
                '%(expected)s: %(hint)s')
    exit_code = exit_codes.UNREACHABLE


class GenerationConflict(NovaOrphansException):
    """Another writer changed the consumer between our read and our write.

    ``detail``: placement's own words (its consumer's generation, or a
    provider's; see repair.writes.write).
    """

    msg_fmt = _('Consumer %(consumer)s was changed concurrently.')

    def __init__(self, message=None, detail='', **kwargs):
        super().__init__(message, **kwargs)
        self.detail = detail


class PlacementDatabaseUnreadable(NovaOrphansException):
    """Fast mode could not read placement's database: nothing was checked
    (the run is incomplete).
    """

    msg_fmt = _('The placement database %(url)s could not be read: '
                '%(error)s')
    exit_code = exit_codes.INCOMPLETE


class CellUnreachable(NovaOrphansException):
    msg_fmt = _('Cell %(cell)s database could not be read: %(reason)s')


class JournalError(InvalidInput):
    msg_fmt = _('Journal %(path)s: %(reason)s')


class JournalBusy(JournalError):
    """Another run holds the journal's lock (exit code 12): nothing was
    written through it, and the same command succeeds once that run has
    ended.
    """

    exit_code = 12


class MetricsFileError(InvalidInput):
    """--metrics-file names a file that cannot be written (see
    nova_orphans.metrics.check_path, refused before anything is read).
    """

    msg_fmt = _('Metrics file %(path)s: %(reason)s')


class UnsupportedSchema(NovaOrphansException):
    """A nova database lacks what the readers select."""

    msg_fmt = _('%(database)s has no %(missing)s: nova-orphans reads the '
                'databases of nova %(oldest)s to %(newest)s, each upgraded '
                'by its own nova-manage (api_db sync, db sync).')
    exit_code = exit_codes.UNSUPPORTED_SCHEMA
