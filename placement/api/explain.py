"""GET /x-explain/allocation_candidates: an operator extension (upstream
Placement has no ``/x-`` paths) that explains why GET
/allocation_candidates with the same query string finds no candidates, or
no more than it does. Admin only (``placement:x-explain``).

The query string is read exactly as the real endpoint reads it (same
schemas per microversion, same 400s); without a placement version header
the latest microversion applies, since operators ask by hand and the
endpoint does not exist at 1.0. The explanation itself is
``placement.candidates.explain``.

``log_no_candidates`` writes the same explanation, on one line, to the
DEBUG log when the real endpoint answers with no candidates.
"""
import functools
import logging

import flask
import microversion_parse

from placement.api import errors
from placement.api import microversion
from placement.api import wsgi
from placement import candidates
from placement.candidates import explain
from placement import exception
from placement.policies import explain as policies
from placement import querylang

LOG = logging.getLogger(__name__)

PATH = '/x-explain/allocation_candidates'
# As GET /allocation_candidates.
MIN_VERSION = '1.10'

blueprint = flask.Blueprint('x_explain', __name__)


def _latest_version():
    return microversion.extract(
        {'HTTP_OPENSTACK_API_VERSION': 'placement latest'})


def _latest_by_default(view):
    """A request without a placement version header gets the latest
    microversion instead of 1.0.
    """
    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        environ = flask.request.environ
        headers = microversion_parse.headers_from_wsgi_environ(environ)
        if microversion_parse.get_version(
                headers, microversion.SERVICE_TYPE) is None:
            environ[microversion.ENVIRON_KEY] = _latest_version()
        return view(*args, **kwargs)
    return wrapper


@blueprint.route(PATH, methods=['GET'])
@_latest_by_default
@wsgi.handler(min_version=MIN_VERSION)
def explain_allocation_candidates():
    wsgi.authorize(policies.EXPLAIN)
    request = parse_request()
    settings = candidates.Settings.from_conf(wsgi.conf())
    try:
        explanation = wsgi.read(explain.explain, request, settings)
    except exception.Invalid as exc:
        raise errors.BadRequest(str(exc))
    return wsgi.json_response(dict(
        explanation.as_dict(), microversion=str(microversion.current())))


def parse_request():
    """The current request's query string as GET /allocation_candidates
    parses it (exception.BadInput with its messages).
    """
    return querylang.parse(flask.request.args.items(multi=True),
                           microversion.current())


def log_no_candidates(request, settings):
    """DEBUG-log why ``request`` (just answered with no candidates) found
    nothing. Costs nothing unless DEBUG is on; never fails the request.
    """
    if not LOG.isEnabledFor(logging.DEBUG):
        return
    try:
        explanation = wsgi.read(explain.explain, request, settings)
    except Exception:
        LOG.debug('Could not explain the empty allocation candidates of '
                  '%s', flask.request.full_path, exc_info=True)
        return
    LOG.debug('GET %s: %s', flask.request.full_path, explanation.one_line())
