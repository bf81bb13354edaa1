"""Bounds the time a unit of work waits on a database server.

A server that is frozen (stopped, a paused VM, a stalled disk) or cut
off by the network leaves its client waiting on the socket forever: its
kernel, or nobody, acknowledges what was sent, so no TCP timeout fires,
and libpq has no read timeout at all. So each pooled connection is
watched while it is checked out: when the deadline of the unit of work
that holds it passes, its socket is shut down. The driver's read ends at
once with a lost connection, SQLAlchemy discards the connection (and the
pool's older ones, which lead to the same server), and the request is
answered 503 instead of hanging.

The deadline is the one ``deadline()`` set for the current context (the
unit of work sets it once for all of its attempts), else ``timeout``
seconds from the checkout. The ping that checks a pooled connection
before use runs under it too: a connection to a frozen server fails its
ping and is replaced.
"""
import contextlib
import contextvars
import heapq
import itertools
import logging
import math
import os
import socket
import threading
import time
from typing import Any
from typing import Iterator
import weakref

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc

from placement import exception

LOG = logging.getLogger(__name__)

# The monotonic time by which the current unit of work must be done.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    'placement_db_deadline', default=None)
# Where a checked-out connection's watch is kept (its pool record's info).
_TOKEN = 'placement_watchdog_token'
# libpq's shortest connect timeout (the MySQL drivers take any).
_MIN_CONNECT_TIMEOUT = 2
# Marks a connection made for this checkout: it needs no ping.
_FRESH = 'placement_watchdog_fresh'
# When a pooled connection was last checked in (monotonic seconds).
_RETURNED = 'placement_watchdog_returned'
# A pooled connection idle at least this long is pinged at checkout; one
# used more recently is not (a round trip saved on almost every request
# of a busy worker): if its server went away meanwhile, its first
# statement fails as a lost connection, which invalidates the pool, and
# the unit of work runs again on a new connection.
PING_IF_IDLE_FOR = 1.0
# {engine: its timeout} of the engines watched.
_TIMEOUTS: 'weakref.WeakKeyDictionary[sa.Engine, float]' = (
    weakref.WeakKeyDictionary())


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[float]:
    """Connections checked out within the block are cut ``seconds`` from
    now (0: never); an enclosing deadline that is sooner is kept. Yields
    the monotonic deadline (infinity for none)."""
    outer = _DEADLINE.get()
    until = time.monotonic() + seconds if seconds > 0 else float('inf')
    if outer is not None:
        until = min(until, outer)
    token = _DEADLINE.set(until)
    try:
        yield until
    finally:
        _DEADLINE.reset(token)


def begin_deadline(seconds: float) -> contextvars.Token[float | None]:
    """Set the deadline ``seconds`` from now for what follows in this
    context (a whole request: its reads and writes share it), until
    ``end_deadline`` is given the token; 0: none."""
    return _DEADLINE.set(time.monotonic() + seconds if seconds > 0
                         else None)


def end_deadline(token: contextvars.Token[float | None]) -> None:
    _DEADLINE.reset(token)


def timeout_of(engine: sa.Engine) -> float:
    """The timeout ``engine`` is watched with (0: it is not)."""
    return _TIMEOUTS.get(engine, 0.0)


def remaining() -> float:
    """Seconds left before the current deadline (infinity without one)."""
    until = _DEADLINE.get()
    return float('inf') if until is None else until - time.monotonic()


def check() -> None:
    """Raise exception.DeadlineExceeded once the current deadline has
    passed: work done in Python (the candidate engine) calls it now and
    then, as it holds no socket the watchdog could cut."""
    until = _DEADLINE.get()
    if until is not None and time.monotonic() > until:
        raise exception.DeadlineExceeded()


class Watchdog:
    """One thread that shuts down the sockets of connections held past
    their deadline. Each watch keeps a duplicate of the socket's file
    descriptor, so that the connection the watch was armed for is the one
    cut, even if the driver closed its descriptor and the number was
    reused meanwhile."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._due: list[tuple[float, int]] = []
        self._armed: dict[int, int] = {}
        self._tokens = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, fileno: int, until: float) -> int:
        """Watch the socket ``fileno`` until ``until`` (monotonic);
        returns the token that ``disarm`` takes."""
        duplicate = os.dup(fileno)
        with self._lock:
            token = next(self._tokens)
            self._armed[token] = duplicate
            heapq.heappush(self._due, (until, token))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name='placement-db-watchdog',
                    daemon=True)
                self._thread.start()
            elif self._due[0][1] == token:
                self._wake.notify()
        return token

    def disarm(self, token: int) -> None:
        """Stop watching; once this returns, the socket is never cut."""
        with self._lock:
            duplicate = self._armed.pop(token, None)
        if duplicate is not None:
            os.close(duplicate)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._due or self._due[0][0] > time.monotonic():
                    wait = (self._due[0][0] - time.monotonic()
                            if self._due else None)
                    self._wake.wait(wait)
                _, token = heapq.heappop(self._due)
                duplicate = self._armed.pop(token, None)
                # Under the lock: a disarm that returned first wins.
                if duplicate is not None:
                    _cut(duplicate)


def _cut(duplicate: int) -> None:
    """Shut the socket down and close the duplicate descriptor."""
    LOG.warning('A database connection was held past its deadline: '
                'cutting it (the server does not answer)')
    sock = socket.socket(fileno=duplicate)
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed by the peer: nothing left to cut
    finally:
        sock.close()


WATCHDOG = Watchdog()


def watch(engine: sa.Engine, timeout: float, fileno: Any) -> None:
    """Watch ``engine``'s connections while they are checked out, each
    idle for PING_IF_IDLE_FOR or more first pinged under the watch
    (instead of SQLAlchemy's pool_pre_ping, which runs before any event
    could arm it, and on every checkout). ``fileno(dbapi_connection)``
    gives a connection's socket, or None for one that has none.

    A connection that fails its ping is replaced, and so are the pooled
    ones older than it: they lead to the same server. The replacement is
    not pinged (connecting proved the server answers), so a checkout
    never runs out of attempts."""
    _TIMEOUTS[engine] = timeout

    def arm(dbapi_connection, record):
        until = _DEADLINE.get()
        if until is None:
            until = (time.monotonic() + timeout if timeout > 0
                     else float('inf'))
        number = fileno(dbapi_connection)
        if number is not None and until != float('inf'):
            record.info[_TOKEN] = WATCHDOG.arm(number, until)

    @event.listens_for(engine, 'do_connect')
    def _connecting(dialect, _record, _cargs, cparams):
        # No socket to watch yet: a connection attempt is bounded by what
        # is left of the deadline instead, and none starts once it passed.
        left = remaining()
        if left <= 0:
            raise dialect.loaded_dbapi.OperationalError(
                'no time left to connect to the database')
        if left != float('inf'):
            cparams['connect_timeout'] = max(
                _MIN_CONNECT_TIMEOUT,
                min(int(cparams.get('connect_timeout') or left),
                    math.ceil(left)))

    # First of the connect listeners: what the dialect and the backend
    # run on a new connection (its first queries, session settings) is
    # watched too.
    @event.listens_for(engine, 'connect', insert=True)
    def _connected(dbapi_connection, record):
        record.info[_FRESH] = True
        arm(dbapi_connection, record)

    @event.listens_for(engine, 'checkout')
    def _checked_out(dbapi_connection, record, _proxy):
        if record.info.pop(_FRESH, False):
            # Watched since it connected, for the same deadline.
            return
        arm(dbapi_connection, record)
        returned = record.info.get(_RETURNED)
        if (returned is not None
                and time.monotonic() - returned < PING_IF_IDLE_FOR):
            return
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:  # noqa: BLE001 (any failure: replace it)
            alive = False
            LOG.info('A pooled database connection failed its ping: %s', exc)
        if not alive:
            _release(record)
            failed = sa_exc.DisconnectionError(
                'the pooled connection failed its ping')
            failed.invalidate_pool = True
            raise failed

    @event.listens_for(engine, 'checkin')
    def _checked_in(_dbapi_connection, record):
        _release(record)
        record.info[_RETURNED] = time.monotonic()


def _release(record: Any) -> None:
    token = record.info.pop(_TOKEN, None)
    if token is not None:
        WATCHDOG.disarm(token)
