"""Turn a parsed configuration into a running WSGI application."""
import logging
import sys

from oslo_config import cfg
from oslo_log import log as oslo_log

from placement.api import app
from placement.api.middleware import auth
from placement.api.pipeline.wsgi_types import WSGIApplication
from placement.db import engine as db_engine

LOG = logging.getLogger(__name__)


def build_application(conf: cfg.ConfigOpts) -> WSGIApplication:
    """Set up logging and build the app; exit with one clear line when the
    database configuration is unusable.
    """
    oslo_log.setup(conf, 'placement')
    if conf.api.auth_strategy == auth.NOAUTH2:
        LOG.warning('[api] auth_strategy = noauth2: every request is trusted '
                    'as the identity its token names. For tests and local '
                    'use only; never expose this service.')
    try:
        return app.create_app(conf)
    except db_engine.DatabaseConfigError as exc:
        LOG.critical('Cannot start placement: %s', exc)
        sys.exit('placement: %s' % exc)
