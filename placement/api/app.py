"""Application factory: the Flask app and the WSGI middleware around it.

Outermost first: default Accept, osprofiler (when installed and enabled:
placement.api.middleware.profiler), the operator endpoints (health, OpenAPI,
metrics: placement.api.operations.extensions), oslo.middleware's
HTTPProxyToWSGI (when [oslo_middleware] enable_proxy_headers_parsing),
CORS (when configured), request id, the request log, authentication
(keystone or noauth2), then Flask, which negotiates the microversion,
routes, checks policy and renders errors (placement.api.pipeline).
"""
import http

import flask
from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_middleware import cors as cors_middleware
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id as request_id_middleware
import sqlalchemy as sa
from werkzeug import exceptions as http_exceptions

from placement import policy
from placement.api import replica_routes
from placement.api import routes
from placement.api.middleware import auth
from placement.api.middleware import profiler
from placement.api.middleware import requestlog
from placement.api.operations import extensions
from placement.api.operations import metrics
from placement.api.pipeline import errors
from placement.api.pipeline import inputs
from placement.api.pipeline import microversion
from placement.api.pipeline.wsgi_types import Body
from placement.api.pipeline.wsgi_types import StartResponse
from placement.api.pipeline.wsgi_types import WSGIApplication
from placement.api.pipeline.wsgi_types import WSGIEnvironment
from placement.db import engine as db_engine
from placement.db import migration
from placement.db import session
from placement.db import watchdog


def create_app(conf: cfg.ConfigOpts,
               engine: sa.engine.Engine | None = None) -> '_DefaultAccept':
    """Build the full WSGI pipeline for one configuration."""
    if engine is None:
        engine = db_engine.create_engine(conf)
        db_engine.wait_until_reachable(engine, conf)
        if conf.placement_database.sync_on_startup:
            # As placement-manage db sync: a migration takes its time.
            with db_engine.unbounded(conf, engine) as migrating:
                migration.upgrade(migrating)
        # A host whose database lacks this code's schema would answer
        # every request with an error: it does not start.
        migration.check_schema(engine)
    app = _flask_app(conf, engine)
    wsgi = auth.wrap(app, conf)
    wsgi = requestlog.RequestLog(wsgi)
    wsgi = request_id_middleware.RequestId(wsgi)
    if conf.cors.allowed_origin:
        wsgi = cors_middleware.CORS(wsgi, conf)
    if conf.oslo_middleware.enable_proxy_headers_parsing:
        # The scheme, host, path prefix and client address a reverse proxy
        # forwards (Forwarded, X-Forwarded-*) become the request's, so
        # links, Location headers and the request log show what the
        # client used. Only the API's requests: the operator endpoints
        # keep the connection's address, which the metrics' access rule
        # checks. Not installed while the option is off (its default):
        # it would do nothing but cost every request time.
        wsgi = http_proxy_to_wsgi.HTTPProxyToWSGI(wsgi, conf)
    wsgi = extensions.wrap(wsgi, app, conf, engine)
    wsgi = profiler.wrap(wsgi, conf)
    return _DefaultAccept(wsgi)


class _DefaultAccept:
    """A missing or ``*/*`` Accept means JSON, so errors render as JSON."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Body:
        if environ.get('HTTP_ACCEPT', '*/*') in ('', '*/*'):
            environ['HTTP_ACCEPT'] = 'application/json'
        return self.app(environ, start_response)


def _flask_app(conf, engine):
    app = flask.Flask('placement', static_folder=None)
    app.config.update(
        PLACEMENT_CONF=conf,
        PLACEMENT_ENFORCER=policy.get_enforcer(conf),
        PROVIDE_AUTOMATIC_OPTIONS=False,
        # Werkzeug refuses a larger body before reading it (by its
        # Content-Length), or as soon as a chunked one grows past it.
        MAX_CONTENT_LENGTH=conf.oslo_middleware.max_request_body_size,
    )
    app.url_map.strict_slashes = False
    app.url_map.redirect_defaults = False
    for blueprint in routes.BLUEPRINTS:
        app.register_blueprint(blueprint)
    _add_database(app, conf, engine)
    app.before_request(_start_deadline)
    app.before_request(_before_request)
    app.after_request(_after_request)
    app.teardown_request(_end_deadline)
    errors.register(app)
    return app


def _add_database(app, conf, engine):
    """The database requests reach through placement.api.pipeline.context:
    the primary ``engine``, synced with the standard classes and traits
    on first use, and the replica, when one is configured, for the
    requests of ``replica_routes``; reads counted in the metrics."""
    rules = replica_routes.replica_rules(
        conf.placement_database.replica_routes, app.url_map)
    replica = None
    if rules:
        replica = session.open_replica(
            conf, engine, on_check=metrics.replica_checked)
    app.config.update(
        PLACEMENT_REPLICA_RULES=rules,
        PLACEMENT_DATABASE=session.Database(
            engine, replica, sync_standard=True,
            on_read=metrics.database_read))


def _start_deadline():
    """The request's database work, all of it, has [placement_database]
    transaction_timeout to finish (placement.db.watchdog)."""
    flask.g.deadline = watchdog.begin_deadline(
        flask.current_app.config['PLACEMENT_CONF']
        .placement_database.transaction_timeout)


def _end_deadline(_exc):
    token = flask.g.pop('deadline', None)
    if token is not None:
        watchdog.end_deadline(token)


def _before_request():
    """Build the request context, negotiate the microversion, check the
    URL, read the body (refusing one that did not all arrive), and
    answer HEAD and OPTIONS (which only the GET rule matched). A body
    announced larger than the limit is refused first, on any route,
    unread."""
    req = flask.request
    limit = flask.current_app.config['MAX_CONTENT_LENGTH']
    if req.content_length is not None and req.content_length > limit:
        raise http_exceptions.RequestEntityTooLarge()
    flask.g.context = oslo_context.RequestContext.from_environ(req.environ)
    microversion.negotiate(req.environ)
    inputs.check_url(req)
    if inputs.announces_body(req):
        # Read whole before any handler runs, even one that ignores it: a
        # request whose body did not all arrive is not carried out.
        inputs.read_body()
    if req.method in ('HEAD', 'OPTIONS') and req.url_rule:
        # HEAD matched the GET rule only; Allow lists every rule's methods.
        adapter = flask.current_app.create_url_adapter(req)
        # None only without a request (and no SERVER_NAME).
        assert adapter is not None
        raise http_exceptions.MethodNotAllowed(
            valid_methods=adapter.allowed_methods())


def _after_request(response):
    """Standard reason phrases (werkzeug shouts them) and version headers."""
    response.status = '%d %s' % (
        response.status_code, http.HTTPStatus(response.status_code).phrase)
    microversion.add_headers(response, flask.request.environ)
    return response
