"""Request hygiene: the JSON body and the query string as the API reads
them, refusing what no backend stores the same way (NUL, unpaired
surrogates), what JSON forbids, and nesting no request needs.
"""
import json
import math
from typing import Any

import flask
import werkzeug
from werkzeug import exceptions as http_exceptions

from placement import validation
from placement.api.pipeline import errors

NUL_NOT_ALLOWED = 'Invalid input: NUL characters are not allowed.'


INCOMPLETE_BODY = ('The request body is incomplete: the connection ended '
                   'before the whole body arrived.')


SURROGATE_NOT_ALLOWED = ('Invalid input: unpaired UTF-16 surrogates are not '
                         'allowed.')


# The deepest body of the API (POST /allocations, /reshaper) has five
# levels; this leaves room while keeping validation well within Python's
# recursion limit.
MAX_JSON_DEPTH = 32


_TOO_DEEP = ('Malformed JSON: nested more than %d levels deep'
             % MAX_JSON_DEPTH)


def json_body(schema: dict[str, Any]) -> Any:
    """The request's JSON document, validated against ``schema``.

    What JSON forbids (NaN, Infinity, numbers no float holds) and what
    no column can store the same way on every backend (NUL, unpaired
    UTF-16 surrogates) is refused, as are documents nested deeper than
    any request body of the API can be.
    """
    raw = read_body()
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


def read_body() -> bytes:
    """The request body, whole, within [oslo_middleware]
    max_request_body_size (Flask's MAX_CONTENT_LENGTH); the same bytes on
    every call.

    A body that ends before its Content-Length, or a chunked one cut
    before its last chunk (the client closed, or its connection broke),
    is refused (BadRequest), as no server refuses it on its own:
    gunicorn hands on what arrived; gunicorn's chunked reader, mod_wsgi
    and werkzeug's server raise exceptions of their own.

    Werkzeug stops a body of unannounced length (chunked) at the limit
    and refuses only a read past it, so one more is asked for
    (RequestEntityTooLarge, even at the end of a body of exactly the
    limit: such a body must stay below it)."""
    request = flask.request
    try:
        raw = request.get_data(cache=True)
        limit = request.max_content_length
        if (request.content_length is None and limit is not None
                and len(raw) >= limit):
            request.stream.read(1)
    except http_exceptions.RequestEntityTooLarge:
        raise
    except Exception:
        # Whatever the server raises for a body it could not read whole
        # (gunicorn's NoMoreData or ChunkMissingTerminator, mod_wsgi's
        # OSError, werkzeug's ClientDisconnected).
        raise errors.BadRequest(INCOMPLETE_BODY) from None
    if request.content_length is not None and (
            len(raw) < request.content_length):
        raise errors.BadRequest(INCOMPLETE_BODY)
    return raw


def announces_body(request: werkzeug.Request) -> bool:
    """Whether the request says it carries a body (Content-Length above
    0, or chunked)."""
    return bool(request.content_length
                or request.headers.get('Transfer-Encoding'))


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


def validate(data: Any, schema: dict[str, Any]) -> None:
    """Check a body-like document against ``schema`` (BadInput)."""
    validation.check(data, schema)


def query_pairs() -> list[tuple[str, str]]:
    """The query string's (key, value) pairs, in order, repeats included."""
    return list(flask.request.args.items(multi=True))


def query(schema: dict[str, Any]) -> dict[str, str]:
    """The query string as a dict (a repeated key keeps its last value),
    validated against ``schema``.
    """
    return validation.check_query(query_pairs(), schema)


QUERY_NOT_UTF8 = 'Invalid query string: it is not UTF-8.'


def check_url(request: werkzeug.Request) -> None:
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
        raise errors.BadRequest(NUL_NOT_ALLOWED)
