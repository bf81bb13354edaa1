"""A read replica ([placement_database] slave_connection) and whether it
may serve a read now.

A process asks ``Replica.usable()`` before each read it could send to the
replica. The answer comes from the last check of the replica's lag, which
runs at most once per check interval, in a thread of its own, so that
requests do not wait for it (a replica whose host went silent costs the
check's connect timeout, not a request's; only the first read after an
idle spell waits for the check it starts, at most FRESH_CHECK_WAIT). The
replica is usable while the last check, no older than two intervals,
found it answering with a lag within the bound; a read that fails on it
(``failed()``) makes it unusable until the next check says otherwise.
A read thus sees data at most about the lag bound plus one check
interval old (two intervals while a check hangs).

Lag is measured against the primary, so that a replica whose link to the
primary died silently, and which therefore believes itself current, is
found out:

- PostgreSQL standby (``pg_is_in_recovery()``): the time until its
  ``pg_last_wal_replay_lsn()`` reaches the primary's
  ``pg_current_wal_lsn()`` as read at the start of the check.
- MariaDB replica: the time until ``MASTER_GTID_WAIT`` reaches the
  primary's ``@@gtid_binlog_pos``, after every replication connection
  (``SHOW ALL REPLICAS STATUS``, named ones included) was found running.
  A connection whose ``Seconds_Behind_Master`` is NULL (stopped, broken)
  makes the replica unusable. MySQL: the largest ``Seconds_Behind_Source``
  of its channels, plus one (it is rounded down to whole seconds).
- Galera node: zero while ``Synced`` and ready; else unusable. Reads see
  what other nodes committed only once applied here: set
  ``mysql_wsrep_sync_wait`` to make them wait for it.
- A server that replicates from nobody (a primary, a promoted standby)
  serves its own data: zero.

Each wait stops just past the bound: a check never takes much longer.
"""
from collections.abc import Callable
import dataclasses
import logging
import math
import os
import threading
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement.db import backends
from placement.db.backends import ReplicaUnusable

LOG = logging.getLogger(__name__)

DEFAULT_MAX_LAG = 1.0
DEFAULT_CHECK_INTERVAL = 1.0
# A check older than this many intervals is not trusted: the process was
# idle meanwhile, or the thread that should have renewed it is stuck (a
# connect waiting for a silent host).
_CHECK_VALID_INTERVALS = 2
# Seconds a read waits for the check it started because the last one was
# too old to trust (after an idle spell): a replica that answers by then
# is read from at once; one that does not is not waited for longer.
FRESH_CHECK_WAIT = 0.05


@dataclasses.dataclass(frozen=True)
class Check:
    """What one look at the replica found: ``lag`` in seconds (None when
    it could not be read) and ``reason`` when the replica is not usable.
    """
    at: float
    lag: float | None
    reason: str | None = None

    @property
    def healthy(self) -> bool:
        return self.reason is None


_NEVER = Check(at=-math.inf, lag=None, reason='not checked yet')


class Replica:
    """The replica behind ``engine``, readable while its lag behind the
    ``primary`` engine is at most ``max_lag`` seconds; checked every
    ``interval`` seconds at most.

    ``on_check(check)`` is told of every check (metrics); ``measure`` is
    the function that reads the lag (``measure_lag``, replaceable for
    tests), ``clock`` a monotonic clock.
    """

    def __init__(self, engine: sa.engine.Engine, primary: sa.engine.Engine,
                 max_lag: float = DEFAULT_MAX_LAG,
                 interval: float = DEFAULT_CHECK_INTERVAL,
                 on_check: Callable[[Check], Any] | None = None,
                 measure: Callable[..., float] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.engine = engine
        self.primary = primary
        self.max_lag = max_lag
        self.interval = interval
        self._on_check = on_check
        self._measure = measure or measure_lag
        self._clock = clock
        self._lock = threading.Lock()
        self._last = _NEVER
        self._checking: threading.Thread | None = None
        self._check_started = -math.inf

    @property
    def last_check(self) -> Check:
        return self._last

    def usable(self) -> bool:
        """True if a read may go to the replica now. Starts a check in the
        background when the last one is due for renewal, and waits for it
        a little (FRESH_CHECK_WAIT) if the last one is too old to trust."""
        now = self._clock()
        if now - self._last.at >= self.interval:
            started = self._start_check(now)
            if started is not None and not self._trusted(now):
                started.join(FRESH_CHECK_WAIT)
        return self._trusted(self._clock())

    def _trusted(self, now):
        last = self._last
        return (last.healthy
                and now - last.at < _CHECK_VALID_INTERVALS * self.interval)

    def failed(self, exc: BaseException) -> None:
        """A read on the replica failed: send reads to the primary until a
        check finds the replica usable again."""
        LOG.warning('Read from the replica failed; reading from the '
                    'primary until it answers again: %s',
                    getattr(exc, 'orig', None) or exc)
        self._record(Check(at=self._clock(), lag=None,
                           reason='a read failed'))

    def expire(self) -> None:
        """The primary just wrote what reads will need (the standard
        classes and traits of a new database): trust no check made before
        now, so that the replica serves again only once it has it."""
        self._record(Check(at=self._clock(), lag=None,
                           reason='waiting for the primary\'s latest writes'))

    def check_now(self) -> Check:
        """Check the replica in this thread, and return what was found."""
        started = self._clock()
        try:
            with self.engine.connect() as connection:
                lag = self._measure(connection, self.primary, self.max_lag)
        except ReplicaUnusable as exc:
            check = Check(at=started, lag=None, reason=str(exc))
        except sa_exc.SQLAlchemyError as exc:
            check = Check(at=started, lag=None,
                          reason='check failed: %s'
                          % (getattr(exc, 'orig', None) or exc))
        else:
            reason = None
            if lag > self.max_lag:
                reason = 'lag %.3fs exceeds %.3fs' % (lag, self.max_lag)
            check = Check(at=started, lag=lag, reason=reason)
        self._record(check)
        return check

    def _start_check(self, now):
        """The thread of a new check, or None if one is in flight or
        started less than an interval ago."""
        with self._lock:
            # A thread inherited through fork() is not alive in the child.
            if self._checking is not None and self._checking.is_alive():
                return None
            if now - self._check_started < self.interval:
                return None
            self._check_started = now
            self._checking = threading.Thread(
                target=self.check_now, name='placement-replica-check',
                daemon=True)
            self._checking.start()
            return self._checking

    def _record(self, check):
        with self._lock:
            previous = self._last
            if check.at < previous.at:
                return  # a slow check finishing after a newer verdict
            self._last = check
        if previous.healthy != check.healthy or previous is _NEVER:
            if check.healthy:
                LOG.info('Replica usable (lag %.3fs); reading from it '
                         '(pid %d)', check.lag, os.getpid())
            else:
                LOG.warning('Replica not usable (%s); reading from the '
                            'primary (pid %d)', check.reason, os.getpid())
        if self._on_check is not None:
            self._on_check(check)


def measure_lag(connection: sa.engine.Connection, primary: sa.engine.Engine,
                bound: float = DEFAULT_MAX_LAG) -> float:
    """Seconds the server behind ``connection`` is behind ``primary`` (see
    the module docstring), waiting for it at most about ``bound`` seconds:
    a result above ``bound`` means "more than that". ReplicaUnusable if it
    is not replicating."""
    return backends.of(connection).replica_lag(connection, primary, bound)
