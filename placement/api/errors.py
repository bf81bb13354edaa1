"""HTTP errors in Placement's wire format.

Clients match on the exact ``detail`` text and, from microversion 1.23, on
``code``; webob renders the body so that the html/plain/json variants are the
same as every other OpenStack service produces for a given Accept header.
"""
import webob.exc

from placement.api import microversion
from placement.exception import ILLEGAL_DUPLICATE_QUERYPARAM  # noqa: F401
from placement.exception import QUERYPARAM_BAD_VALUE  # noqa: F401
from placement.exception import QUERYPARAM_MISSING_VALUE  # noqa: F401

DEFAULT = 'placement.undefined_code'
INVENTORY_INUSE = 'placement.inventory.inuse'
CONCURRENT_UPDATE = 'placement.concurrent_update'
DUPLICATE_NAME = 'placement.duplicate_name'
PROVIDER_IN_USE = 'placement.resource_provider.inuse'
PROVIDER_CANNOT_DELETE_PARENT = (
    'placement.resource_provider.cannot_delete_parent')
RESOURCE_PROVIDER_NOT_FOUND = 'placement.resource_provider.not_found'

# Version at which error bodies start carrying a ``code``.
CODE_MIN_VERSION = (1, 23)


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
    elif version >= CODE_MIN_VERSION:
        error['code'] = environ.get('placement.error_code') or DEFAULT
    return {'errors': [error]}
