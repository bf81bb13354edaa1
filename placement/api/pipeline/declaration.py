"""Route declarations: what a route is per microversion, and the wrapper
that enforces it on each request before the view runs (version range,
method, Accept, media type), and hands the view its validated query and
body.
"""
import dataclasses
import functools
from typing import Any
from typing import Callable
from typing import TypeVar

import flask

from placement import versions as versions_module
from placement.api.pipeline import errors as http_errors
from placement.api.pipeline import inputs
from placement.api.pipeline import microversion
from placement.api.pipeline import responses

View = TypeVar('View', bound=Callable[..., Any])

# The attribute of a wrapped view that holds its Declaration.
ATTRIBUTE = 'declaration'


@dataclasses.dataclass(frozen=True)
class Declaration:
    """What a route is, per microversion: the pipeline (``handler``)
    enforces it and the OpenAPI document
    (placement.api.operations.openapi) shows it, so the two cannot
    disagree.

    ``ok``, ``query`` and ``body`` are tables {first version: value}, as
    versions.pick reads them: ``ok`` values are {status: response body
    (placement.schemas.response.Body), or None for none}; ``query`` and
    ``body`` values are the JSON schemas ``params()`` and ``body()``
    validate with (None: no body at that version). ``versions`` is the
    (min, max) range the route exists in (404 outside); below
    ``method_from`` it answers 405 instead.
    ``errors`` words the domain errors the route answers in words of its
    own (errors.Wordings; the others as errors.register's default).
    """
    summary: str
    ok: dict
    versions: tuple = (versions_module.MIN_VERSION,
                       versions_module.MAX_VERSION)
    query: dict | None = None
    body: dict | None = None
    method_from: tuple | None = None
    content: bool = False
    accept: bool = True
    errors: http_errors.Wordings | None = None

    @property
    def documented_from(self) -> versions_module.Version:
        """The first version the method is served at."""
        return max(self.versions[0], self.method_from or self.versions[0])


def handler(summary: str, ok: Any,
            min_version: versions_module.Version | None = None,
            max_version: versions_module.Version | None = None,
            query: Any = None, body: Any = None,
            method_from: versions_module.Version | None = None,
            accept: bool = True,
            errors: http_errors.Wordings | None = None,
            ) -> Callable[[View], View]:
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
        accept=accept, errors=errors)

    def decorator(view):
        @functools.wraps(view)
        def checked(*args, **kwargs):
            low, high = declaration.versions
            version = microversion.current()
            if not low <= version <= high:
                raise microversion.NotAvailable()
            if method_from and version < method_from:
                raise http_errors.MethodNotAllowedYet()
            if accept and flask.request.method == 'GET':
                _check_accept()
            if declaration.body and versions_module.pick(
                    declaration.body, version) is not None:
                require_json_content()
            flask.g.declaration = declaration
            return view(*args, **kwargs)
        setattr(checked, ATTRIBUTE, declaration)
        return checked
    return decorator


def of(view: Callable[..., Any]) -> Declaration:
    """The Declaration ``handler`` attached to ``view``."""
    found = getattr(view, ATTRIBUTE, None)
    if not isinstance(found, Declaration):
        raise ValueError('%r has no route declaration' % (view,))
    return found


def _table(value):
    """A {version: value} table as given, or one for every version."""
    if value is None:
        return None
    if isinstance(value, dict) and value and all(
            isinstance(key, tuple) for key in value):
        return value
    return {versions_module.MIN_VERSION: value}


def body() -> Any:
    """The request's JSON document, validated against the route's body
    schema at the request's version.
    """
    return inputs.json_body(microversion.by_version(flask.g.declaration.body))


def params() -> dict[str, str]:
    """The query string as a dict (a repeated key keeps its last value),
    validated against the route's query schema at the request's version.
    """
    return inputs.query(microversion.by_version(flask.g.declaration.query))


def _check_accept():
    accept = flask.request.accept_mimetypes
    if accept and not accept.best_match([responses.JSON]):
        raise http_errors.NotAcceptable('Only application/json is provided')


def require_json_content() -> None:
    request = flask.request
    media_type = request.mimetype or None
    if media_type != responses.JSON:
        if media_type is None and request.content_length:
            raise http_errors.BadRequest(
                'content-type header required when content-length > 0')
        raise http_errors.UnsupportedMediaType(
            'The media type %s is not supported, use application/json'
            % media_type)
