"""The request log: one INFO line per request, in upstream's format.

    127.0.0.1 "GET /placement/traits" status: 200 len: 312 microversion: 1.39

on the ``placement.requestlog`` logger, so that log filters and dashboards
written for upstream Placement keep working. The length is the response's
Content-Length (0 for 204 and 304, ``-`` for a body of unknown length), the
microversion ``-`` when the request was refused before it was parsed
(e.g. 401).

The record is built as upstream builds it, for structured log consumers
(oslo.log's JSON formatter, ``[DEFAULT] use_json = true``): its ``args``
is one mapping with the keys ``REMOTE_ADDR``, ``REQUEST_METHOD``,
``REQUEST_URI``, ``status`` (the code, as text), ``bytes`` and
``microversion`` (the version as a pair, or ``-``), and it comes through
oslo.log's logger adapter, so that its ``extra`` holds ``project`` (the
request's project, which the formatter takes from the current context)
and ``version``.

The middleware sits just inside the request id middleware and makes a
RequestContext for the request current before anything else runs: oslo.log
takes the request id of a line from the current context, and without this a
request refused by authentication would be logged under the previous
request's id.
"""
from oslo_context import context as oslo_context
from oslo_log import log as oslo_log

from placement.api.pipeline import microversion
from placement.api.pipeline.wsgi_types import Body
from placement.api.pipeline.wsgi_types import StartResponse
from placement.api.pipeline.wsgi_types import WSGIApplication
from placement.api.pipeline.wsgi_types import WSGIEnvironment

LOG = oslo_log.getLogger('placement.requestlog')

LINE = ('%(REMOTE_ADDR)s "%(REQUEST_METHOD)s %(REQUEST_URI)s" '
        'status: %(status)s len: %(bytes)s microversion: %(microversion)s')


class RequestLog:

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Body:
        # Constructing a context makes it the thread's current one.
        oslo_context.RequestContext.from_environ(environ)
        uri = _request_uri(environ)
        remote = environ.get('REMOTE_ADDR', '-')
        LOG.debug('Starting request: %s "%s %s"',
                  remote, environ['REQUEST_METHOD'], uri)

        def logging_start_response(status, headers, exc_info=None):
            length = next((value for name, value in headers
                           if name.lower() == 'content-length'),
                          _no_length(status))
            LOG.info(LINE, {
                'REMOTE_ADDR': remote,
                'REQUEST_METHOD': environ['REQUEST_METHOD'],
                'REQUEST_URI': uri,
                'status': status.split(None, 1)[0],
                'bytes': length,
                'microversion': environ.get(microversion.ENVIRON_KEY) or '-',
            })
            return start_response(status, headers, exc_info)

        return self.app(environ, logging_start_response)


def _no_length(status):
    """A response without Content-Length: 0 when it cannot have a body."""
    return '0' if status[:3] in ('204', '304') else '-'


def _request_uri(environ):
    """The path as the client sent it: mount prefix, path and query."""
    uri = environ.get('SCRIPT_NAME', '') + environ.get('PATH_INFO', '')
    if environ.get('QUERY_STRING'):
        uri += '?' + environ['QUERY_STRING']
    return uri
