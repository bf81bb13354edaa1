"""What a view reaches through the request: its security context and
policy check, the configuration, and the database (reads, on the replica
where allowed, and writes, in one transaction).
"""
from collections.abc import Callable
from collections.abc import Iterator
import contextlib
from typing import Any
from typing import TypeVar

import flask
from oslo_config import cfg
import sqlalchemy as sa

from placement import exception
from placement import policy
from placement.api.pipeline import errors
from placement.db import resource_provider as rp_db
from placement.db import session

T = TypeVar('T')


def authorize(action: str, target: dict[str, Any] | None = None) -> None:
    """Check policy ``action`` for the request's security context."""
    try:
        policy.authorize(flask.current_app.config['PLACEMENT_ENFORCER'],
                         flask.g.context, action, target)
    except policy.PolicyForbidden as exc:
        raise errors.Forbidden(str(exc))


def conf() -> cfg.ConfigOpts:
    return flask.current_app.config['PLACEMENT_CONF']


def provider_or_404(uuid: str, detail: str = '%(error)s',
                    conn: sa.engine.Connection | None = None
                    ) -> dict[str, Any]:
    """The provider row of ``uuid`` (read on ``conn`` inside a
    transaction, else on a connection of its own), or a 404 whose message
    ``detail`` words from ``uuid`` and ``error`` (upstream words it
    differently per route).
    """
    with _provider_found(uuid, detail):
        if conn is None:
            return read(rp_db.get_by_uuid, uuid)
        return rp_db.get_by_uuid(conn, uuid)


def read_of_provider(uuid: str, fn: Callable[[sa.engine.Connection, int], T],
                     detail: str = '%(error)s') -> tuple[dict[str, Any], T]:
    """The provider row of ``uuid`` (else a 404 worded by ``detail``, as
    in provider_or_404) and ``fn(connection, provider id)``, read on one
    connection: a checkout and a transaction less than two reads."""
    def both(conn: sa.engine.Connection) -> tuple[dict[str, Any], T]:
        provider = rp_db.get_by_uuid(conn, uuid)
        return provider, fn(conn, provider['id'])
    with _provider_found(uuid, detail):
        return read(both)


@contextlib.contextmanager
def _provider_found(uuid: str, detail: str) -> Iterator[None]:
    """The provider's NotFound as a 404 (raised out of the read, which
    counts as answered by its server)."""
    try:
        yield
    except exception.NotFound as exc:
        raise errors.NotFound(detail % {'uuid': uuid, 'error': exc})


def read(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn(connection, ...)`` on a read-only connection: to the
    replica when the request is one that may read from it (see
    placement.api.replica_routes) and the replica is usable now, else to
    the primary (see placement.db.session.Database.read).
    """
    rule = flask.request.url_rule
    replica_ok = (rule is not None and rule.rule
                  in flask.current_app.config['PLACEMENT_REPLICA_RULES'])
    return _database().read(fn, *args, replica_ok=replica_ok, **kwargs)


def write(fn: Callable[..., T], *args: Any, **retry: Any) -> T:
    """Run ``fn(connection, *args)`` in one transaction, retried from the
    start on transient errors (see placement.db.session.Database.write
    for the ``retry`` options: ``attempts``, ``retry_also``, ``on_retry``).
    """
    return _database().write(fn, *args, **retry)


def _database() -> session.Database:
    return flask.current_app.config['PLACEMENT_DATABASE']
