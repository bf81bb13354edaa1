"""Helpers every handler module shares: the handler decorator, request
bodies, query strings, responses, links and policy checks.
"""
import dataclasses
import datetime
import functools
import json
import math

import flask
import orjson
from sqlalchemy import exc as sa_exc
from werkzeug import http as werkzeug_http

from placement import exception
from placement import policy
from placement import validation
from placement import versions as versions_module
from placement.api import errors
from placement.api import metrics
from placement.api import microversion
from placement.db import engine as db_engine
from placement.db import resource_provider as rp_db

JSON = 'application/json'
# Version from which GET responses carry cache headers.
CACHE_HEADERS_VERSION = (1, 15)

@dataclasses.dataclass(frozen=True)
class Declaration:
    """What a route is, per microversion: the pipeline (``handler``)
    enforces it and the OpenAPI document (placement.api.openapi) shows
    it, so the two cannot disagree.

    ``ok``, ``query`` and ``body`` are tables {first version: value}, as
    versions.pick reads them: ``ok`` values are {status: response schema
    name, or None for no body}; ``query`` and ``body`` values are the JSON
    schemas ``params()`` and ``body()`` validate with (None: no body at
    that version). ``versions`` is the (min, max) range the route exists
    in (404 outside); below ``method_from`` it answers 405 instead.
    """
    summary: str
    ok: dict
    versions: tuple = (versions_module.MIN_VERSION,
                       versions_module.MAX_VERSION)
    query: dict = None
    body: dict = None
    method_from: tuple = None
    content: bool = False
    accept: bool = True

    @property
    def documented_from(self):
        """The first version the method is served at."""
        return max(self.versions[0], self.method_from or self.versions[0])


def handler(summary, ok, min_version=None, max_version=None, query=None,
            body=None, method_from=None, accept=True):
    """Declare a view's route (see Declaration) and wrap the view with
    Placement's per-request contract.

    The checks run in upstream's order: version gate (404), a method the
    version does not have yet (405), Accept (406), request media type
    (415/400, when the route takes a body at the request's version); the
    view then does its own policy check first thing, so that the target
    can depend on the request, and asks for its validated query
    (``params()``) and body (``body()``) where upstream reads them. As
    upstream, only GETs check Accept; ``accept=False`` exempts a GET too
    (upstream's root and GET /traits/{name} answer whatever the client
    accepts). Tables may be given as a single value for every version.
    """
    declaration = Declaration(
        summary=summary, ok=_table(ok),
        versions=(min_version or versions_module.MIN_VERSION,
                  max_version or versions_module.MAX_VERSION),
        query=_table(query), body=_table(body), method_from=method_from,
        accept=accept)

    def decorator(view):
        @functools.wraps(view)
        def checked(*args, **kwargs):
            low, high = declaration.versions
            version = microversion.current()
            if not low <= version <= high:
                raise microversion.NotAvailable()
            if method_from and version < method_from:
                raise errors.MethodNotAllowedYet()
            if accept and flask.request.method == 'GET':
                _check_accept()
            if declaration.body and versions_module.pick(
                    declaration.body, version) is not None:
                require_json_content()
            flask.g.declaration = declaration
            return view(*args, **kwargs)
        checked.declaration = declaration
        return checked
    return decorator


def _table(value):
    """A {version: value} table as given, or one for every version."""
    if value is None:
        return None
    if isinstance(value, dict) and value and all(
            isinstance(key, tuple) for key in value):
        return value
    return {versions_module.MIN_VERSION: value}


def body():
    """The request's JSON document, validated against the route's body
    schema at the request's version.
    """
    return _json_body(microversion.by_version(flask.g.declaration.body))


def params():
    """The query string as a dict (a repeated key keeps its last value),
    validated against the route's query schema at the request's version.
    """
    return _query(microversion.by_version(flask.g.declaration.query))


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


def provider_or_404(uuid, detail='%(error)s', conn=None):
    """The provider row of ``uuid`` (read on ``conn`` inside a
    transaction, else on a connection of its own), or a 404 whose message
    ``detail`` words from ``uuid`` and ``error`` (upstream words it
    differently per route).
    """
    try:
        if conn is None:
            return read(rp_db.get_by_uuid, uuid)
        return rp_db.get_by_uuid(conn, uuid)
    except exception.NotFound as exc:
        raise errors.NotFound(detail % {'uuid': uuid, 'error': exc})


def context():
    return flask.g.context


def authorize(action, target=None):
    try:
        policy.authorize(flask.current_app.config['PLACEMENT_ENFORCER'],
                         context(), action, target)
    except policy.PolicyForbidden as exc:
        raise errors.Forbidden(str(exc))


def engine():
    return flask.current_app.config['PLACEMENT_DATABASE'].engine


def conf():
    return flask.current_app.config['PLACEMENT_CONF']


def _json_body(schema):
    """The request's JSON document, validated against ``schema``.

    What JSON forbids (NaN, Infinity, numbers no float holds) and what
    no column can store the same way on every backend (NUL, unpaired
    UTF-16 surrogates) is refused, as are documents nested deeper than
    any request body of the API can be.
    """
    raw = flask.request.get_data(cache=True)
    try:
        data = json.loads(raw, parse_constant=_not_a_json_number,
                          parse_float=_finite_float)
    except RecursionError:
        raise errors.BadRequest(_TOO_DEEP)
    except ValueError as exc:
        raise errors.BadRequest('Malformed JSON: %s' % exc)
    _check_document(data)
    validate(data, schema)
    return data


NUL_NOT_ALLOWED = 'Invalid input: NUL characters are not allowed.'
SURROGATE_NOT_ALLOWED = ('Invalid input: unpaired UTF-16 surrogates are not '
                         'allowed.')
# The deepest body of the API (POST /allocations, /reshaper) has five
# levels; this leaves room while keeping validation well within Python's
# recursion limit.
MAX_JSON_DEPTH = 32
_TOO_DEEP = ('Malformed JSON: nested more than %d levels deep'
             % MAX_JSON_DEPTH)


def _not_a_json_number(name):
    raise ValueError('%s is not a JSON number' % name)


def _finite_float(text):
    number = float(text)
    if not math.isfinite(number):
        raise ValueError('number %s is out of range' % text)
    return number


def _check_document(document):
    """Refuse NUL, unpaired surrogates and excessive nesting anywhere in a
    JSON document, without recursing.
    """
    pending = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, str):
            _check_text(value)
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_JSON_DEPTH:
            raise errors.BadRequest(_TOO_DEEP)
        if isinstance(value, dict):
            for key in value:
                _check_text(key)
            value = value.values()
        pending.extend((item, depth + 1) for item in value)


def _check_text(text):
    if '\x00' in text:
        raise errors.BadRequest(NUL_NOT_ALLOWED)
    try:
        text.encode('utf-8')
    except UnicodeEncodeError:
        raise errors.BadRequest(SURROGATE_NOT_ALLOWED) from None


def validate(data, schema):
    """Check a body-like document against ``schema`` (BadInput)."""
    validation.check(data, schema)


def query_pairs():
    """The query string's (key, value) pairs, in order, repeats included."""
    return list(flask.request.args.items(multi=True))


def _query(schema):
    """The query string as a dict (a repeated key keeps its last value),
    validated against ``schema``.
    """
    return validation.check_query(query_pairs(), schema)


def json_response(data, status=200, last_modified=None, undated=False):
    response = flask.Response(encode_json(data), status=status,
                              mimetype=JSON)
    return _with_cache_headers(response, last_modified, undated)


def encode_json(data):
    """``data`` as JSON bytes. orjson encodes large bodies (a thousand
    allocation candidates) several times faster than the standard
    library, which takes what orjson refuses: integers beyond 64 bits,
    lone surrogates.
    """
    try:
        return orjson.dumps(data)
    except TypeError:
        return json.dumps(data, check_circular=False).encode()


def empty_response(status=204, location=None, last_modified=None):
    response = flask.Response(status=status)
    del response.headers['Content-Type']
    if location:
        response.headers['Location'] = location
    return _with_cache_headers(response, last_modified)


def _with_cache_headers(response, last_modified, undated=False):
    """From 1.15 a GET tells caches when the data last changed, and not to
    keep it; an ``undated`` answer (no date to give) only the latter.
    """
    if not microversion.is_at_least(CACHE_HEADERS_VERSION):
        return response
    if last_modified is not None:
        response.headers['Last-Modified'] = werkzeug_http.http_date(
            last_modified)
    if last_modified is not None or undated:
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
    """Run ``fn(connection, ...)`` on a read-only connection: to the
    replica when the request is one that may read from it (see
    placement.api.database) and the replica is usable now, else to the
    primary. A read the replica fails is read again from the primary, so
    that a replica never fails a request.
    """
    database = flask.current_app.config['PLACEMENT_DATABASE']
    rule = flask.request.url_rule
    replica = database.replica_for(rule.rule if rule else None)
    if replica is not None:
        try:
            with replica.engine.connect() as connection:
                return _counted('replica', fn, connection, *args, **kwargs)
        except sa_exc.SQLAlchemyError as exc:
            replica.failed(exc)
    with database.engine.connect() as connection:
        return _counted('primary', fn, connection, *args, **kwargs)


def _counted(server, fn, connection, *args, **kwargs):
    """``fn(connection, ...)``, counted as a read by ``server`` when it
    answers, be it with a result or a domain error (a 404)."""
    try:
        result = fn(connection, *args, **kwargs)
    except exception.PlacementError:
        metrics.DATABASE_READS.labels(server).inc()
        raise
    metrics.DATABASE_READS.labels(server).inc()
    return result


def write(fn, *args, attempts=db_engine.TRANSIENT_ATTEMPTS, retry_also=(),
          on_retry=None):
    """Run ``fn(connection, *args)`` in one transaction, retried from the
    start when the database reports a deadlock, a certification failure
    or a lost connection (see ``db_engine.retry_on_transient`` for
    ``attempts``, ``retry_also`` and ``on_retry``). On SQLite the
    transaction waits for the write lock first, so that concurrent writers
    (threads or processes) queue instead of failing.
    """
    def attempt():
        with engine().begin() as connection:
            db_engine.claim_write_lock(connection)
            return fn(connection, *args)
    return db_engine.retry_on_transient(
        attempt, attempts=attempts, retry_also=retry_also, on_retry=on_retry)
