"""GET /x-capacity (an extension): the capacity page, one HTML file.

The page holds no data, so it is served without a token, as a browser
opening the URL asks for it; its script reads the admin-only answer
beside it (GET x-capacity/flavours, or x-capacity/allocation_candidates
with the page's own query string: one flavour) with a token it keeps in
the tab's sessionStorage. Under ``[api] auth_strategy = noauth2`` it uses
the development token ``admin`` until given another. Self-contained: no
font, script or style from elsewhere (clouds are often air-gapped).
"""
import importlib.resources

from oslo_config import cfg
import webob

from placement.api.pipeline.wsgi_types import Body
from placement.api.pipeline.wsgi_types import StartResponse
from placement.api.pipeline.wsgi_types import WSGIEnvironment

PATH = '/x-capacity'
_PAGE = 'capacity.html'
# Nothing but this page's own script and style; it talks to its origin.
_CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; "
    "style-src 'unsafe-inline'; connect-src 'self'; img-src data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


class Page:

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        html = importlib.resources.files(__package__).joinpath(
            _PAGE).read_text(encoding='utf-8')
        self._body = html.replace(
            '@AUTH_STRATEGY@', conf.api.auth_strategy).encode('utf-8')

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Body:
        response = webob.Response(body=self._body,
                                  content_type='text/html', charset='utf-8')
        response.headers['Content-Security-Policy'] = (
            _CONTENT_SECURITY_POLICY)
        response.headers['X-Content-Type-Options'] = 'nosniff'
        response.cache_control = 'no-cache'
        return response(environ, start_response)
