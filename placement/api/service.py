"""Turn a parsed configuration into a running WSGI application."""
import gc
import logging
import sys

from oslo_config import cfg
from oslo_log import log as oslo_log

from placement import conf as placement_conf
from placement import operator_errors
from placement.api import app
from placement.api.middleware import auth
from placement.api.middleware import profiler
from placement.api.pipeline.wsgi_types import WSGIApplication

LOG = logging.getLogger(__name__)
# gunicorn's exit status for a worker that cannot start: it stops rather
# than starting new workers for ever.
WORKER_BOOT_ERROR = 3


class StartupError(Exception):
    """The service cannot start; the message is one clear line. An
    exception, not an exit: gunicorn then stops with "Worker failed to
    boot" and a non-zero status, as it does for upstream, instead of
    starting new workers for ever."""


def build_application(conf: cfg.ConfigOpts) -> WSGIApplication:
    """Set up logging and build the app; fail with one clear line
    (placement.operator_errors) on an ordinary mistake: the database
    configuration is unusable, the database unreachable (after
    [placement_database] max_retries) or without this code's schema,
    the policy file broken."""
    oslo_log.setup(conf, 'placement')
    placement_conf.warn_unknown_options(conf)
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
    failure: Exception | None = None
    try:
        profiler.init(conf)
        application = app.create_app(conf)
    except Exception as exc:
        line = operator_errors.one_line(exc)
        if line is None:
            raise
        failure = exc
    if failure is not None:
        # Logged outside the handler, where oslo.log would repeat the
        # exception after the line; with [DEFAULT] debug, its traceback.
        LOG.critical('Cannot start placement: %s', line,
                     exc_info=failure if conf.debug else None)
        raise StartupError('placement: %s' % line)
    # What the process holds once started (modules, SQLAlchemy's tables
    # and caches, the app) lives as long as it does: kept out of the
    # cyclic collector's scans, which every request's large answer would
    # otherwise make it repeat over the whole heap (a list of 14,000
    # providers took 190 ms, 107 ms with this). Before gunicorn forks
    # with --preload, it also spares the workers' shared pages.
    gc.freeze()
    return application


def load_application() -> WSGIApplication:
    """The application of the configuration found as load_config finds
    it, for WSGI servers (placement.wsgi.api). An ordinary mistake ends
    the process with its one line (logged CRITICAL when logging was
    set up) and status 3, gunicorn's "Worker failed to boot", without a
    traceback."""
    try:
        return build_application(placement_conf.load_config())
    except StartupError:
        pass
    except Exception as exc:
        # Read before logging could be set up.
        line = operator_errors.one_line(exc)
        if line is None:
            raise
        print('placement: %s' % line, file=sys.stderr, flush=True)
    raise SystemExit(WORKER_BOOT_ERROR)
