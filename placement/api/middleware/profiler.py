"""osprofiler, wired as upstream wires it: optional, and only when the
library is installed (``pip install placement-fast[profiler]``) and
``[profiler] enabled = true``.

- ``[profiler]`` is osprofiler's option group, registered by
  placement.conf when the library can be imported; without it a
  ``[profiler]`` section is ignored and nothing changes.
- ``init`` sets up osprofiler's notifier (``[profiler]
  connection_string``) when the service starts.
- ``wrap`` puts osprofiler's WSGI middleware in front of the whole
  pipeline: a request whose trace headers are signed with one of
  ``[profiler] hmac_keys`` is traced; any other passes through as it is.
"""
import importlib
import socket
from types import ModuleType

from oslo_config import cfg

from placement.api.pipeline.wsgi_types import WSGIApplication

PROJECT = SERVICE = 'placement'


def _osprofiler(name: str) -> ModuleType | None:
    """osprofiler's module ``name``, or None when it is not installed."""
    try:
        return importlib.import_module('osprofiler.' + name)
    except ImportError:
        return None


def enabled(conf: cfg.ConfigOpts) -> bool:
    """Whether osprofiler is installed and [profiler] enabled."""
    return 'profiler' in conf and bool(conf.profiler.enabled)


def init(conf: cfg.ConfigOpts) -> None:
    """Set up osprofiler's notifier, when it is enabled."""
    initializer = _osprofiler('initializer')
    if initializer is None or not enabled(conf):
        return
    initializer.init_from_conf(
        conf=conf, context={}, project=PROJECT, service=SERVICE,
        host=socket.gethostname())


def wrap(app: WSGIApplication, conf: cfg.ConfigOpts) -> WSGIApplication:
    """``app`` behind osprofiler's WSGI middleware, when it is enabled."""
    web = _osprofiler('web')
    if web is None or not enabled(conf):
        return app
    return web.WsgiMiddleware(app, hmac_keys=conf.profiler.hmac_keys,
                              enabled=True)
