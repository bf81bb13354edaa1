"""Responses: JSON bodies, empty answers, links and the cache headers
that GETs carry from 1.15.
"""
import datetime
import itertools
import json
import tempfile
from typing import Any
from typing import Iterable
from typing import Mapping

import flask
import orjson
from werkzeug import http as werkzeug_http

from placement import versions
from placement.api.pipeline import microversion
from placement.db import watchdog

JSON = 'application/json'


def json_response(data: Any, status: int = 200,
                  last_modified: datetime.datetime | None = None,
                  undated: bool = False) -> flask.Response:
    response = flask.Response(encode_json(data), status=status,
                              mimetype=JSON)
    return _with_cache_headers(response, last_modified, undated)


# Items of a large list encoded at a time, between two looks at the
# request's deadline.
_CHUNK = 256
# A large answer is encoded into memory up to this size, then into a
# temporary file.
_SPOOL_IN_MEMORY = 16 * 2 ** 20
# Bytes sent at a time from the spool.
_SEND = 2 ** 16


def spooled_json_response(key: str, items: Iterable[Any],
                          rest: Mapping[str, Any],
                          last_modified: datetime.datetime | None = None,
                          ) -> flask.Response:
    """The object {key: [items], **rest} for a large list: its items are
    made and encoded a chunk at a time into a spool (memory up to 16 MiB,
    then a temporary file), which is then sent. A worker never holds the
    answer's items or its body whole, and the request's deadline is
    looked at between chunks: an answer that would take longer to make
    ends in a 503, never in a body cut off half-way."""
    spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY)
    try:
        spool.write(b'{' + encode_json(key) + b':[')
        iterator = iter(items)
        separator = b''
        while chunk := list(itertools.islice(iterator, _CHUNK)):
            watchdog.check()
            spool.write(separator)
            spool.write(b','.join(encode_json(item) for item in chunk))
            separator = b','
        spool.write(b']')
        for name, value in rest.items():
            spool.write(b',' + encode_json(name) + b':' + encode_json(value))
        spool.write(b'}')
        size = spool.tell()
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    response = flask.Response(iter(lambda: spool.read(_SEND), b''),
                              mimetype=JSON)
    response.content_length = size
    response.call_on_close(spool.close)
    return _with_cache_headers(response, last_modified)


def encode_json(data: Any) -> bytes:
    """``data`` as JSON bytes. orjson encodes large bodies (a thousand
    allocation candidates) several times faster than the standard
    library, which takes what orjson refuses: integers beyond 64 bits,
    lone surrogates.
    """
    try:
        return orjson.dumps(data)
    except TypeError:
        return json.dumps(data, check_circular=False).encode()


def empty_response(status: int = 204, location: str | None = None,
                   last_modified: datetime.datetime | None = None,
                   ) -> flask.Response:
    response = flask.Response(status=status)
    del response.headers['Content-Type']
    if location:
        response.headers['Location'] = location
    return _with_cache_headers(response, last_modified)


def _with_cache_headers(response: flask.Response,
                        last_modified: datetime.datetime | None,
                        undated: bool = False) -> flask.Response:
    """From 1.15 a GET tells caches when the data last changed, and not to
    keep it; an ``undated`` answer (no date to give) only the latter.
    """
    if not microversion.is_at_least(versions.CACHE_HEADERS):
        return response
    if last_modified is not None:
        response.headers['Last-Modified'] = werkzeug_http.http_date(
            last_modified)
    if last_modified is not None or undated:
        response.headers['Cache-Control'] = 'no-cache'
    return response


def href(path: str) -> str:
    """A link as it appears in bodies: under the app's mount point."""
    return flask.request.script_root + path


def location(path: str) -> str:
    """An absolute URL for a Location header."""
    return flask.request.host_url.rstrip('/') + href(path)


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def last_modified_of(rows: Iterable[Mapping[str, Any]],
                     ) -> datetime.datetime:
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
