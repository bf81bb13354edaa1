"""HTTP errors in Placement's wire format.

Clients match on the exact ``detail`` text and, from microversion 1.23, on
``code``; webob renders the body so that the html/plain/json variants are the
same as every other OpenStack service produces for a given Accept header.
"""
import logging

import flask
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


class PlacementHTTPError(Exception):
    """Raised by handlers; rendered by the app's error handler."""

    status = 500
    webob_class = webob.exc.HTTPInternalServerError

    def __init__(self, detail='', code=None, headers=None):
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.headers = headers or {}

    def to_wsgi(self, environ):
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

    def to_wsgi(self, environ):
        # webob's text names the request's media type; a request without
        # one reads "None", as Python prints it.
        if not environ.get('CONTENT_TYPE'):
            environ['CONTENT_TYPE'] = 'None'
        return super().to_wsgi(environ)


ServiceUnavailable = _error(
    'ServiceUnavailable', 503, webob.exc.HTTPServiceUnavailable)
InternalServerError = _error(
    'InternalServerError', 500, webob.exc.HTTPInternalServerError)


class MethodNotAllowed(PlacementHTTPError):
    status = 405
    webob_class = webob.exc.HTTPMethodNotAllowed

    def __init__(self, allowed):
        super().__init__(
            'The method specified is not allowed for this resource.',
            headers={'Allow': ', '.join(allowed)})


class MethodNotAllowedYet(PlacementHTTPError):
    """405 for a method the request's microversion does not have yet."""

    status = 405
    webob_class = webob.exc.HTTPMethodNotAllowed


def json_formatter(body, status, title, environ):
    """Shape webob's error text as Placement's ``errors`` document."""
    error = {
        'status': int(status.split(None, 1)[0]),
        'title': title,
        'detail': webob.exc.strip_tags(body),
        'request_id': environ.get('openstack.request_id'),
    }
    version = environ.get(microversion.ENVIRON_KEY)
    if version is None:
        if error['status'] == 406:
            # An unsupported version was asked for: tell the client which
            # versions are available.
            error['max_version'] = microversion.max_version_string()
            error['min_version'] = microversion.min_version_string()
    elif version >= versions.ERROR_CODES:
        error['code'] = environ.get('placement.error_code') or DEFAULT
    return {'errors': [error]}


def register(app):
    """Render every error a request can meet in Placement's format."""
    app.register_error_handler(PlacementHTTPError, _render_error)
    app.register_error_handler(microversion.VersionError, _bad_version)
    app.register_error_handler(microversion.NotAvailable, _not_available)
    app.register_error_handler(http_exceptions.HTTPException, _http_exception)
    app.register_error_handler(exception.PlacementError, _domain_error)
    app.register_error_handler(sqlalchemy.exc.DBAPIError, _database_error)
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
        rule, _args = adapter.match(method=method, return_rule=True)
        found.append((position[id(rule)], method))
    return [method for _index, method in sorted(found)]


# What a domain error answers where its handler words nothing better, the
# first match winning.
_DOMAIN_ERRORS = (
    (exception.NotFound, NotFound, None),
    (exception.Duplicate, Conflict, None),
    (exception.InUse, Conflict, None),
    (exception.ConcurrentUpdate, Conflict, CONCURRENT_UPDATE),
    (exception.PlacementError, BadRequest, None),
)


def _domain_error(exc):
    for domain, http_error, code in _DOMAIN_ERRORS:
        if isinstance(exc, domain):
            return _render_error(http_error(str(exc), code=exc.code or code))


def _database_error(exc):
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
    if db_engine.is_unreachable(exc) or db_engine.is_transient(exc):
        LOG.error('Database unreachable: %s', exc.orig)
        return _render_error(ServiceUnavailable(
            'The placement database is unavailable.'))
    return _unexpected(exc)


def _unexpected(exc):
    if isinstance(exc, http_exceptions.HTTPException):
        return _http_exception(exc)
    LOG.exception('Unexpected error in request %s',
                  flask.request.environ.get('openstack.request_id'))
    return _render_error(InternalServerError(
        'An unexpected error occurred. Check the server log for request %s.'
        % flask.request.environ.get('openstack.request_id')))
