"""Operator endpoints beside the Placement API (not part of upstream's):

    GET /healthcheck       database reachability; open (health.py)
    GET /x-openapi.json    OpenAPI description of the API; open (openapi.py)
    GET /x-capacity        the capacity page, HTML without data; open
                           (capacity_page.py)
    GET [metrics]path      Prometheus metrics, only when [metrics]enabled,
                           to [metrics]allowed_networks (metrics.py)

They are answered in front of the API pipeline: no token, no microversion,
no request log line, and they are not counted in the request metrics.
Their paths are checked at startup not to be API paths, so that every
API request behaves as upstream's.
"""
import flask
from oslo_config import cfg
import sqlalchemy
from werkzeug import exceptions as http_exceptions
from werkzeug import routing

from placement.api.operations import capacity_page
from placement.api.operations import health
from placement.api.operations import metrics
from placement.api.operations import openapi
from placement.api.pipeline import errors
from placement.api.pipeline.wsgi_types import Body
from placement.api.pipeline.wsgi_types import StartResponse
from placement.api.pipeline.wsgi_types import WSGIApplication
from placement.api.pipeline.wsgi_types import WSGIEnvironment

_METHODS = ('GET', 'HEAD')


def wrap(pipeline: WSGIApplication, flask_app: flask.Flask,
         conf: cfg.ConfigOpts,
         engine: sqlalchemy.engine.Engine) -> WSGIApplication:
    """``pipeline`` (the API) behind the operator endpoints."""
    endpoints: dict[str, WSGIApplication] = {
        health.PATH: health.HealthCheck(
            engine, replica=flask_app.config['PLACEMENT_DATABASE'].replica,
            disable_by_file=conf.healthcheck.disable_by_file_path),
        openapi.PATH: openapi.Endpoint(flask_app),
        capacity_page.PATH: capacity_page.Page(conf),
    }
    if conf.metrics.enabled:
        if conf.metrics.path in endpoints:
            raise ValueError('[metrics] path %s is taken by another '
                             'endpoint' % conf.metrics.path)
        endpoints[conf.metrics.path] = metrics.Endpoint(conf, engine)
        pipeline = metrics.instrument(pipeline, flask_app.url_map, engine)
    for path in endpoints:
        _check_not_api(path, flask_app.url_map)
    return _Dispatcher(pipeline, endpoints)


def _check_not_api(path: str, url_map: routing.Map) -> None:
    try:
        url_map.bind('placement').match(path)
    except http_exceptions.NotFound:
        return
    except http_exceptions.HTTPException:
        pass
    raise ValueError('%s is a Placement API path: it cannot serve an '
                     'extension' % path)


class _Dispatcher:

    def __init__(self, pipeline: WSGIApplication,
                 endpoints: dict[str, WSGIApplication]) -> None:
        self.pipeline = pipeline
        self.endpoints = endpoints

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Body:
        endpoint = self.endpoints.get(environ.get('PATH_INFO', ''))
        if endpoint is None:
            return self.pipeline(environ, start_response)
        if environ['REQUEST_METHOD'] not in _METHODS:
            endpoint = errors.MethodNotAllowed(_METHODS).to_wsgi(environ)
        return endpoint(environ, start_response)
