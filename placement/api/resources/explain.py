"""GET /x-explain/allocation_candidates: an operator extension (upstream
Placement has no ``/x-`` paths) that explains why GET
/allocation_candidates with the same query string finds no candidates, or
no more than it does. Admin only (``placement:x-explain``).

The query string is read exactly as the real endpoint reads it (same
schemas per microversion, same 400s); without a placement version header
the latest microversion applies, since operators ask by hand and the
endpoint does not exist at 1.0. The explanation itself is
``placement.candidates.explain`` (which GET /allocation_candidates also
writes to its DEBUG log, on one line, when it finds nothing).
"""
import functools
from typing import Callable

import flask
import microversion_parse

from placement import candidates
from placement import querylang
from placement import versions
from placement.api.pipeline import context
from placement.api.pipeline import declaration
from placement.api.pipeline import inputs
from placement.api.pipeline import microversion
from placement.api.pipeline import responses
from placement.candidates import explain
from placement.policies import explain as policies
from placement.schemas import allocation_candidate as schema

PATH = '/x-explain/allocation_candidates'

blueprint = flask.Blueprint('x_explain', __name__)


def _latest_version():
    return microversion.extract(
        {'HTTP_OPENSTACK_API_VERSION': 'placement latest'})


def latest_by_default(view: Callable[..., flask.Response]
                      ) -> Callable[..., flask.Response]:
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
@latest_by_default
@declaration.handler(
        'Explain which allocation candidates a query finds, and why not '
        'more (extension, admin only)', {200: schema.EXPLANATION},
        min_version=versions.ALLOCATION_CANDIDATES, query=schema.GET)
def explain_allocation_candidates() -> flask.Response:
    context.authorize(policies.EXPLAIN)
    request = querylang.parse(inputs.query_pairs(), microversion.current())
    settings = candidates.Settings.from_conf(context.conf())
    explanation = context.read(explain.explain, request, settings)
    return responses.json_response(dict(
        explanation.as_dict(), microversion=str(microversion.current())))
