"""Turn a parsed configuration into a running WSGI application."""
import gc
import logging

from oslo_config import cfg
from oslo_log import log as oslo_log

from placement.api import app
from placement.api.middleware import auth
from placement.api.middleware import profiler
from placement.api.pipeline.wsgi_types import WSGIApplication
from placement.db import engine as db_engine

LOG = logging.getLogger(__name__)


class StartupError(Exception):
    """The service cannot start; the message is one clear line. An
    exception, not an exit: gunicorn then stops with "Worker failed to
    boot" and a non-zero status, as it does for upstream, instead of
    starting new workers for ever."""


def build_application(conf: cfg.ConfigOpts) -> WSGIApplication:
    """Set up logging and build the app; fail with one clear line when the
    database configuration is unusable or the database unreachable (after
    [placement_database] max_retries)."""
    oslo_log.setup(conf, 'placement')
    if conf.log_options:
        conf.log_opt_values(LOG, logging.DEBUG)
    if conf.api.auth_strategy == auth.NOAUTH2:
        LOG.warning('[api] auth_strategy = noauth2: every request is trusted '
                    'as the identity its token names. For tests and local '
                    'use only; never expose this service.')
    if conf.workarounds.optimize_for_wide_provider_trees:
        LOG.info('[workarounds] optimize_for_wide_provider_trees is set: it '
                 'has no effect here (the candidate engine does not need '
                 'it); it is accepted so that upstream\'s configuration '
                 'files load.')
    profiler.init(conf)
    try:
        application = app.create_app(conf)
    except db_engine.CANNOT_START as exc:
        LOG.critical('Cannot start placement: %s', exc)
        raise StartupError('placement: %s' % exc) from None
    # What the process holds once started (modules, SQLAlchemy's tables
    # and caches, the app) lives as long as it does: kept out of the
    # cyclic collector's scans, which every request's large answer would
    # otherwise make it repeat over the whole heap (a list of 14,000
    # providers took 190 ms, 107 ms with this). Before gunicorn forks
    # with --preload, it also spares the workers' shared pages.
    gc.freeze()
    return application
