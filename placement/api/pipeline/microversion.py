"""Microversion negotiation: the request's version, read from its header.

The request's version is parsed once, before routing, and kept in the WSGI
environ so that error rendering (which may happen outside a handler) can
see it.
"""
from typing import Any

import flask
import microversion_parse
import werkzeug

from placement import versions
from placement.api.pipeline.wsgi_types import WSGIEnvironment
from placement.versions import VERSIONS

SERVICE_TYPE = 'placement'
ENVIRON_KEY = 'placement.microversion'
# Lower case, as upstream sends it: clients match the Vary value literally.
HEADER = 'openstack-api-version'


class NotAvailable(Exception):
    """The route does not exist at the request's version (answered 404)."""


class VersionError(Exception):
    """The version header is malformed (``acceptable`` False: unknown)."""

    def __init__(self, message: str, acceptable: bool) -> None:
        super().__init__(message)
        self.acceptable = acceptable


def min_version_string() -> str:
    return VERSIONS[0]


def max_version_string() -> str:
    return VERSIONS[-1]


def extract(environ: WSGIEnvironment) -> versions.Version:
    """Return the request's Version, or raise VersionError."""
    headers = microversion_parse.headers_from_wsgi_environ(environ)
    try:
        return microversion_parse.extract_version(
            headers, SERVICE_TYPE, VERSIONS)
    except TypeError as exc:
        raise VersionError(str(exc), acceptable=True)
    except ValueError as exc:
        raise VersionError(str(exc), acceptable=False)


def current() -> versions.Version:
    return flask.request.environ[ENVIRON_KEY]


def is_at_least(minimum: versions.Version) -> bool:
    return current() >= minimum


def by_version(choices: dict[str, Any] | dict[versions.Version, Any],
               version: versions.Version | None = None) -> Any:
    """Pick the value whose version key is the highest one not above the
    request's (or ``version``'s): ``by_version({MIN_VERSION: a, GATE: b})``.
    """
    return versions.pick(choices, current() if version is None else version)


def negotiate(environ: WSGIEnvironment) -> None:
    """Read the request's version into the environ, where error rendering
    finds it too (None while unread or unreadable); VersionError if the
    header names no version of the service."""
    environ[ENVIRON_KEY] = None
    environ[ENVIRON_KEY] = extract(environ)


def add_headers(response: werkzeug.Response,
                environ: WSGIEnvironment) -> None:
    """The version a response answers at, for clients and caches."""
    version = environ.get(ENVIRON_KEY)
    if version is not None:
        response.headers[HEADER] = 'placement %s' % (version,)
        response.vary.add(HEADER)
