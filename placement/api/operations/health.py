"""GET /healthcheck (an extension): is the service able to reach its
database, and does the database have the schema this code serves? For
load balancers and orchestrators: no token, no microversion, no request
log line.

    200 {"status": "ok", "database": "ok"}
    503 {"status": "error", "database": "unreachable"}   the query failed
    503 {"status": "error", "database": "timeout"}       no answer in time
    503 {"status": "error", "database": "schema missing"} no schema, or
        "schema partial": tables or columns missing (placement.db.migration)
    503 {"status": "disabled", "database": "ok"}          drained by file

A schema with every table and column this code uses, at a revision other
than its own, still serves: 200, with ``"schema": "newer"`` (or
``"older"``) in the body and a warning logged when that changes. So the
previous release's hosts stay in service while ``placement-manage db
sync`` of the next one has run, until they are upgraded (they would not
start again on it: placement.api.app).

While the file [healthcheck] disable_by_file_path names exists, the check
answers 503 with ``"status": "disabled"`` (the database still checked and
reported), so that load balancers drain the host before it is stopped.

With a read replica ([placement_database] slave_connection) the body
also says whether reads go to it: ``"replica": "ok"``, or why not (its
last lag check's verdict, e.g. ``"lag 3.2s exceeds 1.0s"``). The status
follows the primary alone: without the replica, reads go to the primary.

The check is one statement on a pooled connection (migration.probe_schema:
the schema's revision, naming every table and column and reading none of
their rows), bounded by TIMEOUT seconds whatever the database or the
pool do; the schema is only read in full when that finds it wrong.
Concurrent health requests share the check in flight instead of
queueing more behind a stuck one.
"""
from collections.abc import Callable
from collections.abc import Iterable
from concurrent import futures
import logging
import os
import threading
from typing import Any

import sqlalchemy.exc
import webob

from placement.db import migration
from placement.db import replica as replica_db
from placement.db import session

LOG = logging.getLogger(__name__)

PATH = '/healthcheck'
TIMEOUT = 2.0


class HealthCheck:

    def __init__(self, engine: sqlalchemy.engine.Engine,
                 timeout: float = TIMEOUT,
                 replica: replica_db.Replica | None = None,
                 disable_by_file: str | None = None) -> None:
        # The primary alone, unsynced and uncounted: a health check
        # neither writes nor is a read of the API.
        self._primary = session.Database(engine)
        self._replica = replica
        self._timeout = timeout
        self._lock = threading.Lock()
        self._executor = futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix='placement-healthcheck')
        self._in_flight: futures.Future[migration.SchemaMismatch | None] | (
            None) = None
        self._disable_by_file = disable_by_file
        self._disabled = False
        self._schema_note: str | None = None

    def __call__(self, environ: dict[str, Any],
                 start_response: Callable[..., Any]) -> Iterable[bytes]:
        database, note = self._check_database()
        healthy = database == 'ok'
        status = 'ok' if healthy else 'error'
        if self.disabled():
            healthy, status = False, 'disabled'
        body: dict[str, str | None] = {'status': status, 'database': database}
        if note is not None:
            body['schema'] = note
        if self._replica is not None:
            body['replica'] = self.replica_status()
        response = webob.Response(
            json_body=body,
            status=200 if healthy else 503,
            content_type='application/json', charset=None)
        response.cache_control = 'no-store'
        return response(environ, start_response)

    def disabled(self) -> bool:
        """Whether the disable_by_file_path file exists (logged when that
        changes)."""
        path = self._disable_by_file
        disabled = path is not None and os.path.exists(path)
        if disabled != self._disabled:
            self._disabled = disabled
            if disabled:
                LOG.warning('Health check disabled: %s exists; answering '
                            '503 until it is removed', path)
            else:
                LOG.warning('Health check enabled again: %s is gone', path)
        return disabled

    def replica_status(self) -> str | None:
        """'ok', or why reads do not go to the replica; None without
        one."""
        replica = self._replica
        if replica is None:
            return None
        if replica.usable():
            return 'ok'
        return replica.last_check.reason

    def database_status(self) -> str:
        """'ok', or why the database cannot serve."""
        return self._check_database()[0]

    def _check_database(self) -> tuple[str, str | None]:
        """(database_status, the state of a schema at another revision
        that serves all the same, or None)."""
        with self._lock:
            if self._in_flight is None or self._in_flight.done():
                self._in_flight = self._executor.submit(
                    migration.probe_schema, self._primary)
            check = self._in_flight
        try:
            other_revision = check.result(timeout=self._timeout)
        except futures.TimeoutError:
            LOG.warning('Health check: the database did not answer within '
                        '%ss', self._timeout)
            return 'timeout', None
        except migration.SchemaMismatch as exc:
            LOG.warning('Health check: %s', exc)
            return 'schema %s' % exc.state, None
        except sqlalchemy.exc.SQLAlchemyError as exc:
            LOG.warning('Health check: the database is unreachable: %s', exc)
            return 'unreachable', None
        note = None if other_revision is None else other_revision.state
        if note != self._schema_note:
            self._schema_note = note
            if other_revision is not None:
                LOG.warning('Health check: %s', other_revision)
        return 'ok', note

