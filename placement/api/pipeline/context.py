"""What a view reaches through the request: its security context and
policy check, the configuration, and the database (reads, on the replica
where allowed, and writes, in one transaction).
"""
import flask
from sqlalchemy import exc as sa_exc

from placement import exception
from placement import policy
from placement.api.operations import metrics
from placement.api.pipeline import errors
from placement.db import engine as db_engine
from placement.db import resource_provider as rp_db


def authorize(action, target=None):
    """Check policy ``action`` for the request's security context."""
    try:
        policy.authorize(flask.current_app.config['PLACEMENT_ENFORCER'],
                         flask.g.context, action, target)
    except policy.PolicyForbidden as exc:
        raise errors.Forbidden(str(exc))


def engine():
    return flask.current_app.config['PLACEMENT_DATABASE'].engine


def conf():
    return flask.current_app.config['PLACEMENT_CONF']


def provider_or_404(uuid, detail='%(error)s', conn=None):
    """The provider row of ``uuid`` (read on ``conn`` inside a
    transaction, else on a connection of its own), or a 404 whose message
    ``detail`` words from ``uuid`` and ``error`` (upstream words it
    differently per route).
    """
    try:
        if conn is None:
            return read(rp_db.get_by_uuid, uuid)
        return rp_db.get_by_uuid(conn, uuid)
    except exception.NotFound as exc:
        raise errors.NotFound(detail % {'uuid': uuid, 'error': exc})


def read(fn, *args, **kwargs):
    """Run ``fn(connection, ...)`` on a read-only connection: to the
    replica when the request is one that may read from it (see
    placement.api.database) and the replica is usable now, else to the
    primary. A read the replica fails is read again from the primary, so
    that a replica never fails a request.
    """
    database = flask.current_app.config['PLACEMENT_DATABASE']
    rule = flask.request.url_rule
    replica = database.replica_for(rule.rule if rule else None)
    if replica is not None:
        try:
            with replica.engine.connect() as connection:
                return _counted('replica', fn, connection, *args, **kwargs)
        except sa_exc.SQLAlchemyError as exc:
            replica.failed(exc)
    with database.engine.connect() as connection:
        return _counted('primary', fn, connection, *args, **kwargs)


def _counted(server, fn, connection, *args, **kwargs):
    """``fn(connection, ...)``, counted as a read by ``server`` when it
    answers, be it with a result or a domain error (a 404)."""
    try:
        result = fn(connection, *args, **kwargs)
    except exception.PlacementError:
        metrics.DATABASE_READS.labels(server).inc()
        raise
    metrics.DATABASE_READS.labels(server).inc()
    return result


def write(fn, *args, attempts=db_engine.TRANSIENT_ATTEMPTS, retry_also=(),
          on_retry=None):
    """Run ``fn(connection, *args)`` in one transaction, retried from the
    start when the database reports a deadlock, a certification failure
    or a lost connection (see ``db_engine.retry_on_transient`` for
    ``attempts``, ``retry_also`` and ``on_retry``). On SQLite the
    transaction waits for the write lock first, so that concurrent writers
    (threads or processes) queue instead of failing.
    """
    def attempt():
        with engine().begin() as connection:
            db_engine.claim_write_lock(connection)
            return fn(connection, *args)
    return db_engine.retry_on_transient(
        attempt, attempts=attempts, retry_also=retry_also, on_retry=on_retry)
