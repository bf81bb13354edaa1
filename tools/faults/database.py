"""What the harness reads straight from the service's database: the
sampler's capacity and usage, and the final state after the run.

Every engine here is the harness's own, with short timeouts: a frozen or
cut-off node must cost a skipped sample, not a stuck harness.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any

from records import Clock
from records import JsonLines
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

# Capacity and usage in one statement, so that both come from one
# snapshot: a claim committed between two statements would otherwise look
# like an over-allocation (or hide one).
CAPACITY_AND_USAGE = sa.text('''
SELECT 'c' AS kind, rp.uuid AS rp, rc.name AS rc,
       (i.total - i.reserved) * i.allocation_ratio AS amount
FROM inventories i
JOIN resource_providers rp ON rp.id = i.resource_provider_id
JOIN resource_classes rc ON rc.id = i.resource_class_id
UNION ALL
SELECT 'u', rp.uuid, rc.name, SUM(a.used)
FROM allocations a
JOIN resource_providers rp ON rp.id = a.resource_provider_id
JOIN resource_classes rc ON rc.id = a.resource_class_id
GROUP BY rp.uuid, rc.name
''')
ALLOCATIONS = sa.text('''
SELECT a.consumer_id, rp.uuid, rc.name, a.used
FROM allocations a
JOIN resource_providers rp ON rp.id = a.resource_provider_id
JOIN resource_classes rc ON rc.id = a.resource_class_id
''')
CONSUMER_GENERATIONS = sa.text('SELECT uuid, generation FROM consumers')
PROVIDER_GENERATIONS = sa.text(
    'SELECT uuid, generation FROM resource_providers')

Nested = dict[str, dict[str, Any]]

# A sample abandoned on a failing node makes the pool log the failed
# rollback of its connection, traceback and all: a skipped sample says it.
logging.getLogger('sqlalchemy.pool').setLevel(logging.CRITICAL)


def with_database(server_url: str, name: str) -> str:
    return sa.engine.make_url(server_url).set(database=name).render_as_string(
        hide_password=False)


def engine(url: str, timeout: float = 3.0) -> sa.Engine:
    """An engine without a pool whose connections give up after about
    ``timeout`` seconds where the driver allows it."""
    backend = sa.engine.make_url(url).get_backend_name()
    args: dict[str, Any]
    if backend == 'mysql':
        args = {'connect_timeout': max(1, int(timeout)),
                'read_timeout': max(1, int(timeout)),
                'write_timeout': max(1, int(timeout))}
    else:
        # A frozen server never answers: the statement timeout cannot end
        # the wait, the caller's thread deadline does (see Sampler).
        args = {'connect_timeout': max(2, int(timeout)),
                'options': '-c statement_timeout=%d' % (timeout * 1000)}
    return sa.create_engine(url, poolclass=NullPool, connect_args=args)


def create_database(server_url: str, name: str) -> None:
    """``name`` afresh on the server (dropped first if it exists)."""
    backend = sa.engine.make_url(server_url).get_backend_name()
    admin = sa.create_engine(server_url, poolclass=NullPool,
                             isolation_level='AUTOCOMMIT')
    try:
        with admin.connect() as conn:
            if backend == 'mysql':
                conn.exec_driver_sql('DROP DATABASE IF EXISTS `%s`' % name)
                conn.exec_driver_sql(
                    'CREATE DATABASE `%s` CHARACTER SET utf8mb4' % name)
            else:
                conn.exec_driver_sql(
                    'DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % name)
                conn.exec_driver_sql('CREATE DATABASE "%s"' % name)
    finally:
        admin.dispose()


def capacity_and_usage(conn: sa.Connection) -> tuple[Nested, Nested]:
    capacity: Nested = {}
    usage: Nested = {}
    for kind, rp, rc, amount in conn.execute(CAPACITY_AND_USAGE):
        if kind == 'c':
            capacity.setdefault(rp, {})[rc] = float(amount)
        else:
            usage.setdefault(rp, {})[rc] = int(amount)
    return capacity, usage


def read_final(url: str) -> dict[str, Any]:
    """Allocations, capacity and generations, read in one transaction
    (the workload has stopped; the snapshot is for good measure)."""
    eng = engine(url, timeout=30.0)
    try:
        with eng.connect() as conn:
            capacity, _ = capacity_and_usage(conn)
            allocations: Nested = {}
            for consumer, rp, rc, used in conn.execute(ALLOCATIONS):
                held = allocations.setdefault(consumer, {}).setdefault(rp,
                                                                       {})
                held[rc] = held.get(rc, 0) + int(used)
            consumers = {uuid: int(generation) for uuid, generation
                         in conn.execute(CONSUMER_GENERATIONS)}
            providers = {uuid: int(generation) for uuid, generation
                         in conn.execute(PROVIDER_GENERATIONS)}
    finally:
        eng.dispose()
    return {'allocations': allocations, 'capacity': capacity,
            'consumer_generations': consumers,
            'provider_generations': providers}


class Sampler:
    """Every ``interval`` seconds, capacity and usage from the database
    into samples.jsonl. Each sample runs in a thread of its own with a
    deadline: one stuck on a frozen node is abandoned (it ends when the
    node does) and the next is tried meanwhile, a few at most at once."""

    MAX_STUCK = 4

    def __init__(self, url: str, out: JsonLines, clock: Clock,
                 interval: float = 0.5, timeout: float = 3.0) -> None:
        self.engine = engine(url, timeout)
        self.out = out
        self.clock = clock
        self.interval = interval
        self.timeout = timeout
        self.taken = 0
        self.skipped = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name='sampler',
                                        daemon=True)
        self._pending: list[threading.Thread] = []

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        for thread in self._pending:
            thread.join(self.timeout)
        self.engine.dispose()

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self._pending = [t for t in self._pending if t.is_alive()]
            if len(self._pending) < self.MAX_STUCK:
                thread = threading.Thread(target=self._sample, daemon=True)
                self._pending.append(thread)
                thread.start()
                thread.join(self.timeout)
            else:
                self.skipped += 1
            self._stop.wait(max(0.0, self.interval
                                - (time.monotonic() - began)))

    def _sample(self) -> None:
        try:
            with self.engine.connect() as conn:
                capacity, usage = capacity_and_usage(conn)
        except Exception:  # a fault: the sample is skipped
            self.skipped += 1
            return
        if self._stop.is_set():
            return  # late, and the file may be closed already
        # When it answered: a statement held up by a frozen node reads its
        # snapshot once the node runs again.
        self.out.write({'time': self.clock.now(), 'capacity': capacity,
                        'usage': usage})
        self.taken += 1
