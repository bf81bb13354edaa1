"""Helpers every handler module shares: the handler decorator, request
bodies, query strings, responses, links and policy checks.
"""
import datetime
import functools
import json

import flask
import jsonschema
from werkzeug import http as werkzeug_http

from placement.api import errors
from placement.api import microversion
from placement.db import engine as db_engine
from placement import policy

JSON = 'application/json'
# Version from which GET responses carry cache headers.
CACHE_HEADERS_VERSION = (1, 15)

_VALIDATOR_CACHE = {}


def handler(min_version=None, max_version=None, content=False):
    """Wrap a view with Placement's per-request contract.

    The checks run in upstream's order: version gate (404), Accept (406),
    request media type (415/400); the view does its own policy check first
    thing so that the target can depend on the request.
    """
    def decorator(view):
        gated = microversion.gate(min_version, max_version)(view)

        @functools.wraps(view)
        def wrapper(*args, **kwargs):
            _check_accept()
            if content:
                require_json_content()
            return gated(*args, **kwargs)
        return wrapper
    return decorator


def _check_accept():
    accept = flask.request.accept_mimetypes
    if accept and not accept.best_match([JSON]):
        raise errors.NotAcceptable('Only application/json is provided')


def require_json_content():
    request = flask.request
    media_type = request.mimetype or None
    if media_type != JSON:
        if media_type is None and request.content_length:
            raise errors.BadRequest(
                'content-type header required when content-length > 0')
        raise errors.UnsupportedMediaType(
            'The media type %s is not supported, use application/json'
            % media_type)


def context():
    return flask.g.context


def authorize(action, target=None):
    try:
        policy.authorize(flask.current_app.config['PLACEMENT_ENFORCER'],
                         context(), action, target)
    except policy.PolicyForbidden:
        raise errors.Forbidden(
            'Policy does not allow %s to be performed.' % action)


def engine():
    return flask.current_app.config['PLACEMENT_DATABASE'].engine


def conf():
    return flask.current_app.config['PLACEMENT_CONF']


def _validator(schema):
    key = id(schema)
    validator = _VALIDATOR_CACHE.get(key)
    if validator is None:
        validator = jsonschema.Draft4Validator(
            schema, format_checker=jsonschema.FormatChecker())
        _VALIDATOR_CACHE[key] = validator
    return validator


def json_body(schema):
    """The request's JSON document, validated against ``schema``."""
    raw = flask.request.get_data(cache=True)
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise errors.BadRequest('Malformed JSON: %s' % exc)
    validate(data, schema)
    return data


def validate(data, schema, prefix='JSON does not validate'):
    try:
        _validator(schema).validate(data)
    except jsonschema.ValidationError as exc:
        raise errors.BadRequest('%s: %s' % (prefix, exc))


def query(schema):
    """The query string as a dict (a repeated key keeps its last value),
    validated against ``schema``.
    """
    params = flask.request.args.to_dict(flat=False)
    params = {key: values[-1] for key, values in params.items()}
    validate(params, schema, prefix='Invalid query string parameters')
    return params


def json_response(data, status=200, last_modified=None):
    response = flask.Response(json.dumps(data), status=status, mimetype=JSON)
    return _with_cache_headers(response, last_modified)


def empty_response(status=204, location=None, last_modified=None):
    response = flask.Response(status=status)
    del response.headers['Content-Type']
    if location:
        response.headers['Location'] = location
    return _with_cache_headers(response, last_modified)


def _with_cache_headers(response, last_modified):
    """From 1.15 a GET tells caches when the data last changed."""
    if (last_modified is not None
            and microversion.is_at_least(CACHE_HEADERS_VERSION)):
        response.headers['Last-Modified'] = werkzeug_http.http_date(
            last_modified)
        response.headers['Cache-Control'] = 'no-cache'
    return response


def href(path):
    """A link as it appears in bodies: under the app's mount point."""
    return flask.request.script_root + path


def location(path):
    """An absolute URL for a Location header."""
    return flask.request.host_url.rstrip('/') + href(path)


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def last_modified_of(rows):
    """Newest updated_at/created_at of ``rows``; now if none has one."""
    newest = None
    for row in rows:
        stamp = row.get('updated_at') or row.get('created_at')
        if stamp is not None and (newest is None or stamp > newest):
            newest = stamp
    if newest is None:
        return utcnow()
    if newest.tzinfo is None:
        newest = newest.replace(tzinfo=datetime.timezone.utc)
    return newest



def read(fn, *args, **kwargs):
    """Run ``fn(connection, ...)`` on a read-only connection."""
    with engine().connect() as connection:
        return fn(connection, *args, **kwargs)


def write(fn, *args, **kwargs):
    """Run ``fn(connection, ...)`` in one transaction, retried from the
    start when the database reports a deadlock or lost connection.
    """
    def attempt():
        with engine().begin() as connection:
            return fn(connection, *args, **kwargs)
    return db_engine.retry_on_transient(attempt)
