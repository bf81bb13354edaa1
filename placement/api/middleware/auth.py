"""Authentication middleware: keystonemiddleware or upstream's noauth2.

Both leave the version document at ``/`` open, so clients can discover
versions before they hold a token.
"""
import logging

from keystoneauth1 import exceptions as ksa_exceptions
from keystonemiddleware import auth_token
from oslo_config import cfg
import webob
import webob.exc

from placement.api.pipeline import errors
from placement.api.pipeline.wsgi_types import Body
from placement.api.pipeline.wsgi_types import StartResponse
from placement.api.pipeline.wsgi_types import WSGIApplication
from placement.api.pipeline.wsgi_types import WSGIEnvironment

LOG = logging.getLogger(__name__)
NOAUTH2 = 'noauth2'


def wrap(app: WSGIApplication, conf: cfg.ConfigOpts) -> WSGIApplication:
    if conf.api.auth_strategy == NOAUTH2:
        # As upstream, a bare mount point (empty path) needs a noauth2 token.
        return _SkipRoot(NoAuth2(app), app, open_paths=('/',))
    keystone = _KeystoneAuth(app, {'oslo_config_config': conf})
    return _SkipRoot(keystone, app, open_paths=('', '/'))


class _KeystoneAuth(auth_token.AuthProtocol):
    """keystonemiddleware, answering a Keystone outage in Placement's error
    format: its own 503 body is webob's generic one, not ``{"errors": ...}``.
    A Keystone it cannot even find (no endpoint of the configured interface
    in the catalog) is an outage too, not a 500.
    """

    def process_request(self, request: webob.Request,
                        ) -> webob.Response | None:
        try:
            return super().process_request(request)
        except webob.exc.HTTPServiceUnavailable as exc:
            return errors.ServiceUnavailable(exc.detail).to_wsgi(
                request.environ)
        except ksa_exceptions.ClientException as exc:
            LOG.error('Cannot validate tokens with Keystone: %s', exc)
            return errors.ServiceUnavailable(
                'The identity service is unavailable: %s' % exc).to_wsgi(
                    request.environ)


class _SkipRoot:
    def __init__(self, protected: WSGIApplication,
                 open_app: WSGIApplication,
                 open_paths: tuple[str, ...]) -> None:
        self.protected = protected
        self.open_app = open_app
        self.open_paths = open_paths

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Body:
        if environ.get('PATH_INFO', '') in self.open_paths:
            return self.open_app(environ, start_response)
        return self.protected(environ, start_response)


class NoAuth2:
    """Trust the token as ``user[:project]``; ``admin`` is the admin role.

    For tests and local use only: anyone can claim any identity.
    """

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Body:
        token = environ.get('HTTP_X_AUTH_TOKEN')
        if not token:
            return webob.exc.HTTPUnauthorized()(environ, start_response)
        user_id, _sep, project_id = token.partition(':')
        project_id = project_id or user_id
        environ['HTTP_X_USER_ID'] = user_id
        if not environ.get('HTTP_OPENSTACK_SYSTEM_SCOPE'):
            # The legacy header: an X-Project-Id sent by the client wins.
            environ['HTTP_X_TENANT_ID'] = project_id
        if 'HTTP_X_ROLES' not in environ:
            environ['HTTP_X_ROLES'] = 'admin' if user_id == 'admin' else ''
        return self.app(environ, start_response)
