"""HTTP errors in Placement's wire format.

Clients match on the exact ``detail`` text and, from microversion 1.23, on
``code``; webob renders the body so that the html/plain/json variants are the
same as every other OpenStack service produces for a given Accept header.
"""
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import logging

import flask
from oslo_middleware import request_id
import sqlalchemy.exc
import webob.exc
from werkzeug import exceptions as http_exceptions

from placement import exception
from placement import versions
from placement.api.pipeline import microversion
from placement.db import engine as db_engine
from placement.exception import ILLEGAL_DUPLICATE_QUERYPARAM  # noqa: F401
from placement.exception import QUERYPARAM_BAD_VALUE  # noqa: F401
from placement.exception import QUERYPARAM_MISSING_VALUE  # noqa: F401

LOG = logging.getLogger(__name__)

DEFAULT = 'placement.undefined_code'
INVENTORY_INUSE = 'placement.inventory.inuse'
CONCURRENT_UPDATE = 'placement.concurrent_update'
DUPLICATE_NAME = 'placement.duplicate_name'
PROVIDER_IN_USE = 'placement.resource_provider.inuse'
PROVIDER_CANNOT_DELETE_PARENT = (
    'placement.resource_provider.cannot_delete_parent')
RESOURCE_PROVIDER_NOT_FOUND = 'placement.resource_provider.not_found'
# An error's detail is cut after this many characters: it may quote what
# the client sent (a list of unknown names, say), and a client that sent
# a megabyte must not get it back. Upstream's longest detail stays whole:
# a POST /reshaper without a required key quotes its whole schema (some
# 11 KB).
MAX_DETAIL = 16384
_CUT = ' [...]'


class PlacementHTTPError(Exception):
    """Raised by handlers; rendered by the app's error handler."""

    status = 500
    webob_class = webob.exc.HTTPInternalServerError

    def __init__(self, detail: str = '', code: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        if len(detail) > MAX_DETAIL:
            detail = detail[:MAX_DETAIL - len(_CUT)] + _CUT
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.headers = headers or {}

    def to_wsgi(self, environ: dict) -> webob.exc.WSGIHTTPException:
        """A webob response app; the code travels in the environ."""
        environ['placement.error_code'] = self.code
        return self.webob_class(
            detail=self.detail, json_formatter=json_formatter,
            headers=self.headers)


def _error(name, status, webob_class):
    return type(name, (PlacementHTTPError,),
                {'status': status, 'webob_class': webob_class})


BadRequest = _error('BadRequest', 400, webob.exc.HTTPBadRequest)
Forbidden = _error('Forbidden', 403, webob.exc.HTTPForbidden)
NotFound = _error('NotFound', 404, webob.exc.HTTPNotFound)
Conflict = _error('Conflict', 409, webob.exc.HTTPConflict)
NotAcceptable = _error('NotAcceptable', 406, webob.exc.HTTPNotAcceptable)


class UnsupportedMediaType(PlacementHTTPError):
    status = 415
    webob_class = webob.exc.HTTPUnsupportedMediaType

    def to_wsgi(self, environ: dict) -> webob.exc.WSGIHTTPException:
        # webob's text names the request's media type; a request without
        # one reads "None", as Python prints it.
        if not environ.get('CONTENT_TYPE'):
            environ['CONTENT_TYPE'] = 'None'
        return super().to_wsgi(environ)


RequestEntityTooLarge = _error(
    'RequestEntityTooLarge', 413, webob.exc.HTTPRequestEntityTooLarge)
ServiceUnavailable = _error(
    'ServiceUnavailable', 503, webob.exc.HTTPServiceUnavailable)
InternalServerError = _error(
    'InternalServerError', 500, webob.exc.HTTPInternalServerError)


class MethodNotAllowed(PlacementHTTPError):
    status = 405
    webob_class = webob.exc.HTTPMethodNotAllowed

    def __init__(self, allowed: Sequence[str]) -> None:
        super().__init__(
            'The method specified is not allowed for this resource.',
            headers={'Allow': ', '.join(allowed)})


class MethodNotAllowedYet(PlacementHTTPError):
    """405 for a method the request's microversion does not have yet."""

    status = 405
    webob_class = webob.exc.HTTPMethodNotAllowed


def json_formatter(body: str, status: str, title: str,
                   environ: dict) -> dict:
    """Shape webob's error text as Placement's ``errors`` document, its
    keys in upstream's order (clients that keep the raw text show it):
    status, title, detail, code, request_id, max_version, min_version.
    """
    error = {
        'status': int(status.split(None, 1)[0]),
        'title': title,
        'detail': webob.exc.strip_tags(body),
    }
    version = environ.get(microversion.ENVIRON_KEY)
    if version is not None and version >= versions.ERROR_CODES:
        error['code'] = environ.get('placement.error_code') or DEFAULT
    if request_id.ENV_REQUEST_ID in environ:
        error['request_id'] = environ[request_id.ENV_REQUEST_ID]
    if version is None and error['status'] == 406:
        # An unsupported version was asked for: tell the client which
        # versions are available.
        error['max_version'] = microversion.max_version_string()
        error['min_version'] = microversion.min_version_string()
    return {'errors': [error]}


def register(app: flask.Flask) -> None:
    """Render every error a request can meet in Placement's format."""
    app.register_error_handler(PlacementHTTPError, _render_error)
    app.register_error_handler(microversion.VersionError, _bad_version)
    app.register_error_handler(microversion.NotAvailable, _not_available)
    app.register_error_handler(http_exceptions.HTTPException, _http_exception)
    app.register_error_handler(exception.PlacementError, _domain_error)
    app.register_error_handler(sqlalchemy.exc.DBAPIError, _database_error)
    app.register_error_handler(sqlalchemy.exc.TimeoutError, _pool_exhausted)
    app.register_error_handler(Exception, _unexpected)


def _render_error(error):
    return error.to_wsgi(flask.request.environ)


def _bad_version(exc):
    error = BadRequest if exc.acceptable else NotAcceptable
    return _render_error(error('Invalid microversion: %s' % exc))


def _not_available(_error):
    return NotFound().to_wsgi(flask.request.environ)


def _http_exception(exc):
    if isinstance(exc, http_exceptions.MethodNotAllowed):
        return _render_error(MethodNotAllowed(
            _declared_order(exc.valid_methods or ())))
    if isinstance(exc, http_exceptions.NotFound):
        return _render_error(NotFound())
    if isinstance(exc, http_exceptions.RequestEntityTooLarge):
        return _render_error(RequestEntityTooLarge(
            'The request body is larger than [oslo_middleware] '
            'max_request_body_size (%d bytes).'
            % flask.current_app.config['MAX_CONTENT_LENGTH']))
    if isinstance(exc, http_exceptions.BadRequest):
        return _render_error(BadRequest(exc.description or ''))
    return exc


def _declared_order(methods):
    """The path's methods in the order their handlers are declared, which
    follows upstream's route table (clients see it in Allow).
    """
    adapter = flask.current_app.create_url_adapter(flask.request)
    # Rules compare equal by path alone: index them by identity.
    position = {id(rule): index for index, rule in
                enumerate(flask.current_app.url_map.iter_rules())}
    found = []
    for method in set(methods) - {'HEAD', 'OPTIONS'}:
        rule, _args = adapter.match(  # type: ignore[union-attr]
            method=method, return_rule=True)
        found.append((position[id(rule)], method))
    return [method for _index, method in sorted(found)]


@dataclasses.dataclass(frozen=True)
class As:
    """How a domain error is answered: with ``http_error``, whose detail
    is ``detail`` formatted (``str.format``) with ``error``, the domain
    error, and by name the request's path arguments and what its view
    ``mention``ed; and whose code is the error's own, else ``code``.
    """
    http_error: type[PlacementHTTPError]
    detail: str = '{error}'
    code: str | None = None


# {domain error class: As}: how a route words domain errors, where
# upstream words them its own way (``declaration.handler``'s ``errors``).
# An error takes the wording of its most specific class worded, the
# route's before the default's at the same class.
Wordings = Mapping[type[exception.PlacementError], As]

# What a domain error answers where its route words nothing better.
_DOMAIN_ERRORS: Wordings = {
    exception.PlacementError: As(BadRequest),
    exception.NotFound: As(NotFound),
    exception.Duplicate: As(Conflict, code=DUPLICATE_NAME),
    exception.InUse: As(Conflict),
    exception.ConcurrentUpdate: As(Conflict, code=CONCURRENT_UPDATE),
    exception.CommitOutcomeUnknown: As(ServiceUnavailable),
    exception.DeadlineExceeded: As(ServiceUnavailable),
}


def mention(**values: object) -> None:
    """Name ``values`` for the route's wording of its errors (see As),
    beside the path's arguments: what the view learns as it goes (a
    body's field, a uuid in canonical form).
    """
    flask.g.setdefault('error_mentions', {}).update(values)


def _domain_error(exc):
    wording = _wording(exc)
    values = dict(flask.request.view_args or {})
    values.update(flask.g.get('error_mentions', {}))
    return _render_error(wording.http_error(
        wording.detail.format(error=exc, **values),
        code=exc.code or wording.code))


def _wording(exc):
    """The wording of ``exc`` (see Wordings) on the current route."""
    declaration = flask.g.get('declaration')
    declared = (declaration.errors if declaration else None) or {}
    wordings = (declared.get(cls) or _DOMAIN_ERRORS.get(cls)
                for cls in type(exc).__mro__)
    # PlacementError, a class of every domain error, has one.
    return next(wording for wording in wordings if wording is not None)


def _database_error(exc):
    if db_engine.is_out_of_time(exc):
        return _domain_error(exception.DeadlineExceeded())
    if db_engine.is_unstorable_value(exc):
        # A value the schema let through but the column cannot hold.
        LOG.warning('Rejected input the database cannot store: %s', exc.orig)
        return _render_error(BadRequest(
            'Invalid input: a value does not fit the database.'))
    if db_engine.is_conflict(exc):
        # Retried as often as configured, and still colliding.
        LOG.warning('Giving up on a write that kept colliding: %s', exc.orig)
        return _render_error(Conflict(
            exception.DATA_CHANGED, code=CONCURRENT_UPDATE))
    if db_engine.is_schema_mismatch(exc):
        # The schema was removed or changed under the running service
        # (its start checks it): /healthcheck says which state it is in.
        LOG.error('The database lacks a table or column this release '
                  'uses: %s; placement-status upgrade check says what to '
                  'do', exc.orig)
        return _render_error(ServiceUnavailable(
            'The placement database does not have the schema this service '
            'needs.'))
    if db_engine.is_unreachable(exc) or db_engine.is_transient(exc):
        LOG.error('Database unreachable: %s', exc.orig)
        return _render_error(ServiceUnavailable(
            'The placement database is unavailable.'))
    return _unexpected(exc)


def _pool_exhausted(exc):
    """Every pooled connection stayed in use for pool_timeout."""
    LOG.warning('No free database connection: %s', exc)
    return _render_error(ServiceUnavailable(
        'The placement database has no free connection for this request '
        '([placement_database] max_pool_size, max_overflow); try again.'))


def _unexpected(exc):
    if isinstance(exc, http_exceptions.HTTPException):
        return _http_exception(exc)
    LOG.exception('Unexpected error in request %s',
                  flask.request.environ.get(request_id.ENV_REQUEST_ID))
    return _render_error(InternalServerError(
        'An unexpected error occurred. Check the server log for request %s.'
        % flask.request.environ.get(request_id.ENV_REQUEST_ID)))
