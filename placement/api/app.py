"""Application factory: the Flask app and the WSGI middleware around it.

Outermost first: default Accept, the operator extensions (health, OpenAPI,
metrics: placement.api.extensions), CORS (when configured), request id, the
request log, authentication (keystone or noauth2), then Flask, which
negotiates the microversion, routes, checks policy and renders errors.
"""
import http
import logging

import flask
from oslo_context import context as oslo_context
from oslo_middleware import cors as cors_middleware
from oslo_middleware import request_id as request_id_middleware
import sqlalchemy.exc
from werkzeug import exceptions as http_exceptions

from placement import exception
from placement import policy
from placement.api import auth
from placement.api import database
from placement.api import errors
from placement.api import extensions
from placement.api import metrics
from placement.api import microversion
from placement.api import requestlog
from placement.api import routes
from placement.api import wsgi
from placement.db import engine as db_engine
from placement.db import migration

LOG = logging.getLogger(__name__)

def create_app(conf, engine=None):
    """Build the full WSGI pipeline for one configuration."""
    if engine is None:
        engine = db_engine.create_engine(conf)
        if conf.placement_database.sync_on_startup:
            migration.upgrade(engine)
    app = _flask_app(conf, engine)
    wsgi = auth.wrap(app, conf)
    wsgi = requestlog.RequestLog(wsgi)
    wsgi = request_id_middleware.RequestId(wsgi)
    if conf.cors.allowed_origin:
        wsgi = cors_middleware.CORS(wsgi, conf)
    wsgi = extensions.wrap(wsgi, app, conf, engine)
    return _DefaultAccept(wsgi)


class _DefaultAccept:
    """A missing or ``*/*`` Accept means JSON, so errors render as JSON."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if environ.get('HTTP_ACCEPT', '*/*') in ('', '*/*'):
            environ['HTTP_ACCEPT'] = 'application/json'
        return self.app(environ, start_response)


def _flask_app(conf, engine):
    app = flask.Flask('placement', static_folder=None)
    app.config.update(
        PLACEMENT_CONF=conf,
        PLACEMENT_ENFORCER=policy.get_enforcer(conf),
        PROVIDE_AUTOMATIC_OPTIONS=False,
    )
    app.url_map.strict_slashes = False
    app.url_map.redirect_defaults = False
    for blueprint in routes.blueprints():
        app.register_blueprint(blueprint)
    app.config['PLACEMENT_DATABASE'] = database.Database.from_conf(
        conf, engine, app.url_map, on_replica_check=metrics.replica_checked)
    app.before_request(_negotiate)
    app.after_request(_finish_response)
    app.register_error_handler(errors.PlacementHTTPError, _render_error)
    app.register_error_handler(microversion.NotAvailable, _not_available)
    app.register_error_handler(http_exceptions.HTTPException, _http_exception)
    app.register_error_handler(exception.PlacementError, _domain_error)
    app.register_error_handler(sqlalchemy.exc.DBAPIError, _database_error)
    app.register_error_handler(Exception, _unexpected)
    return app


def _negotiate():
    """Parse the microversion and build the request context."""
    request = flask.request
    environ = request.environ
    flask.g.context = oslo_context.RequestContext.from_environ(environ)
    environ[microversion.ENVIRON_KEY] = None
    try:
        environ[microversion.ENVIRON_KEY] = microversion.extract(environ)
    except microversion.VersionError as exc:
        error = errors.BadRequest if exc.acceptable else errors.NotAcceptable
        raise error('Invalid microversion: %s' % exc)
    _check_url(request)
    if request.method in ('HEAD', 'OPTIONS') and request.url_rule:
        # HEAD matched the GET rule only; Allow lists every rule's methods.
        adapter = flask.current_app.create_url_adapter(request)
        raise http_exceptions.MethodNotAllowed(
            valid_methods=adapter.allowed_methods())


QUERY_NOT_UTF8 = 'Invalid query string: it is not UTF-8.'


def _check_url(request):
    """Refuse a query string of raw bytes that are not UTF-8 (werkzeug
    decodes them strictly; percent-encoded ones become U+FFFD), and a NUL
    anywhere in the URL: no backend stores one.
    """
    try:
        args = request.args
    except UnicodeDecodeError:
        raise errors.BadRequest(QUERY_NOT_UTF8)
    if '\x00' in request.path or any(
            '\x00' in key or '\x00' in value
            for key, value in args.items(multi=True)):
        raise errors.BadRequest(wsgi.NUL_NOT_ALLOWED)


def _finish_response(response):
    """Standard reason phrases (werkzeug shouts them) and version headers."""
    response.status = '%d %s' % (
        response.status_code, http.HTTPStatus(response.status_code).phrase)
    version = flask.request.environ.get(microversion.ENVIRON_KEY)
    if version is not None:
        response.headers[microversion.HEADER] = 'placement %s' % (version,)
        response.vary.add(microversion.HEADER)
    return response


def _render_error(error):
    return error.to_wsgi(flask.request.environ)


def _not_available(_error):
    return errors.NotFound().to_wsgi(flask.request.environ)


def _http_exception(exc):
    if isinstance(exc, http_exceptions.MethodNotAllowed):
        return _render_error(errors.MethodNotAllowed(
            _declared_order(exc.valid_methods or ())))
    if isinstance(exc, http_exceptions.NotFound):
        return _render_error(errors.NotFound())
    if isinstance(exc, http_exceptions.BadRequest):
        return _render_error(errors.BadRequest(exc.description or ''))
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
    (exception.NotFound, errors.NotFound, None),
    (exception.Duplicate, errors.Conflict, None),
    (exception.InUse, errors.Conflict, None),
    (exception.ConcurrentUpdate, errors.Conflict, errors.CONCURRENT_UPDATE),
    (exception.PlacementError, errors.BadRequest, None),
)


def _domain_error(exc):
    for domain, http_error, code in _DOMAIN_ERRORS:
        if isinstance(exc, domain):
            return _render_error(http_error(str(exc), code=exc.code or code))


def _database_error(exc):
    if db_engine.is_unstorable_value(exc):
        # A value the schema let through but the column cannot hold.
        LOG.warning('Rejected input the database cannot store: %s', exc.orig)
        return _render_error(errors.BadRequest(
            'Invalid input: a value does not fit the database.'))
    if db_engine.is_conflict(exc):
        # Retried as often as configured, and still colliding.
        LOG.warning('Giving up on a write that kept colliding: %s', exc.orig)
        return _render_error(errors.Conflict(
            exception.DATA_CHANGED, code=errors.CONCURRENT_UPDATE))
    if db_engine.is_unreachable(exc) or db_engine.is_transient(exc):
        LOG.error('Database unreachable: %s', exc.orig)
        return _render_error(errors.ServiceUnavailable(
            'The placement database is unavailable.'))
    return _unexpected(exc)



def _unexpected(exc):
    if isinstance(exc, http_exceptions.HTTPException):
        return _http_exception(exc)
    LOG.exception('Unexpected error in request %s',
                  flask.request.environ.get('openstack.request_id'))
    return _render_error(errors.InternalServerError(
        'An unexpected error occurred. Check the server log for request %s.'
        % flask.request.environ.get('openstack.request_id')))
