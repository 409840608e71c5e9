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
"""Why an endpoint's answer is not the service's, in one line.

A misconfigured endpoint rarely fails to answer: a web server's welcome
page, a load balancer's 503 page, another service's 401, a 404 from the
right host at the wrong path, a redirect. Without a diagnosis these
surface as a JSON decoding error, or as a version number read from a
document that is not a version document. The version document is the
first request either client sends, so it is where they are told apart.
"""

import html
import http
import re

from nova_orphans import exception
from nova_orphans.i18n import _

_TITLE = re.compile(r'<title[^>]*>(.*?)</title>', re.I | re.S)
_HEADING = re.compile(r'<h[1-3][^>]*>(.*?)</h[1-3]>', re.I | re.S)
_TAG = re.compile(r'<[^>]*>')
_LONGEST = 120


def _one_line(text):
    text = ' '.join(str(text).split())
    if len(text) > _LONGEST:
        text = text[:_LONGEST - 3] + '...'
    return text


def status_text(status_code):
    """``404 Not Found``: the code and its standard phrase."""
    try:
        return '%d %s' % (status_code, http.HTTPStatus(status_code).phrase)
    except ValueError:
        return str(status_code)


def _content_type(resp):
    headers = getattr(resp, 'headers', None) or {}
    return (headers.get('Content-Type') or '').split(';')[0].strip().lower()


def _text(resp):
    try:
        return resp.text or ''
    except Exception:
        return ''


def is_html(resp):
    if _content_type(resp) in ('text/html', 'application/xhtml+xml'):
        return True
    head = _text(resp).lstrip()[:200].lower()
    return head.startswith(('<!doctype html', '<html'))


def html_title(text):
    """The page's title, or its first heading, or its first words."""
    for pattern in (_TITLE, _HEADING):
        match = pattern.search(text)
        if match:
            title = _one_line(html.unescape(_TAG.sub(' ', match.group(1))))
            if title:
                return title
    return _one_line(html.unescape(_TAG.sub(' ', text)))


def json_body(resp):
    """The decoded JSON body, or None when the body is not JSON."""
    if is_html(resp):
        return None
    try:
        return resp.json()
    except ValueError:
        return None


def body_summary(resp):
    """A one-line description of a body that is not the expected JSON."""
    text = _text(resp)
    if is_html(resp):
        return _('an HTML page ("%(title)s")') % {'title': html_title(text)}
    return '"%s"' % _one_line(text) if text.strip() else _('an empty body')


def answer(resp):
    """What the endpoint answered: its status and, if not JSON, its body."""
    status = status_text(resp.status_code)
    if json_body(resp) is not None:
        return status
    return _('%(status)s with %(body)s') % {
        'status': status, 'body': body_summary(resp)}


def version_document(resp, service, endpoint, expected, accept,
                     mistaken=None):
    """The JSON version document in ``resp``, or a one-line diagnosis.

    ``service`` names the service ("Placement"), ``endpoint`` is where
    it was asked (when the response does not say), ``expected`` what
    its version document is, ``accept(doc)`` says whether a JSON
    document is one, and ``mistaken(doc)`` can name, for a JSON
    document that is not, whose it looks like. A server error (5xx)
    raises EndpointUnavailable; any other wrong answer means the
    endpoint is not the service's, and raises WrongEndpoint.
    """
    url = getattr(resp, 'url', None) or endpoint
    status = resp.status_code
    kwargs = {'service': service, 'url': url, 'expected': expected}
    if 300 <= status < 400:
        headers = getattr(resp, 'headers', None) or {}
        location = headers.get('Location')
        if location:
            raise exception.WrongEndpoint(
                answer=_('%(status)s to %(location)s') % {
                    'status': status_text(status), 'location': location},
                hint=_('set the endpoint to the address it redirects to '
                       '(nova-orphans does not follow redirects)'), **kwargs)
        raise exception.WrongEndpoint(
            answer=answer(resp),
            hint=_('nova-orphans does not follow redirects'), **kwargs)
    if status >= 500:
        raise exception.EndpointUnavailable(
            answer=answer(resp),
            hint=_('is the service running behind this address (a load '
                   'balancer or proxy may answer for it)?'), **kwargs)
    doc = json_body(resp)
    if status in (401, 403):
        hint = _('the version document needs no authentication, so '
                 'another service or a proxy answers at this address')
    elif status == 404:
        hint = _('is the path of the endpoint right?')
    elif status != 200:
        hint = _('is this the service\'s endpoint?')
    elif doc is None:
        hint = _('a web server answers at this address, not the service')
    elif not (isinstance(doc, dict) and accept(doc)):
        raise exception.WrongEndpoint(
            answer=_('%(status)s with other JSON') % {
                'status': status_text(status)},
            hint=(mistaken and mistaken(doc)) or
            _('is this the service\'s endpoint?'), **kwargs)
    else:
        return doc
    raise exception.WrongEndpoint(answer=answer(resp), hint=hint, **kwargs)


def _causes(error):
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = (error.__cause__ or error.__context__ or
                 getattr(error, 'reason', None))
        if not isinstance(error, BaseException):
            error = None


def connection_error(error, url):
    """``cannot connect to URL ([Errno 111] Connection refused)``.

    keystoneauth's message nests requests' and urllib3's (pools, object
    addresses, retries); the operating system's reason at the bottom of
    the chain is what the operator can act on.
    """
    reason = None
    for cause in _causes(error):
        if isinstance(cause, OSError) and cause.strerror:
            reason = str(cause)
    if reason is None:
        return str(error)
    return _('cannot connect to %(url)s (%(reason)s)') % {
        'url': url, 'reason': reason}
