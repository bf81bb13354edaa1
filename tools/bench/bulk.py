#!/usr/bin/env python3
"""Write the seeded dataset straight into an empty placement database.

    python tools/bench/bulk.py URL NODES [--seed N]

Loading 100,000 nodes over the REST API would take half a million
requests. This writes the rows the API would have written (ids,
generations, timestamps) in large batches: COPY on PostgreSQL, multi-row
INSERTs on MariaDB, executemany in one transaction on SQLite. The
dataset is streamed from ``dataset.generate``, one tree at a time.

Run it with ours' interpreter (it imports placement's tables), on a
database that ``placement-manage db sync`` has just created, with no
server running. It prints one JSON object: the seconds taken, the rows
written by table, the totals that ``dataset.verify_totals`` checks
through the API, the roots carrying ``dataset.RARE_TRAIT`` and the size
of the database in bytes.
"""
import argparse
import datetime
import io
import json
import os
import sys
import time

import dataset
import sqlalchemy as sa

from placement.db import consumer as consumer_db
from placement.db import engine as db_engine
from placement.db import resource_class as rc_db
from placement.db import standard_sync
from placement.db import tables
from placement.db import trait as trait_db

BATCH_ROWS = 50000
_RP = tables.resource_providers
# The columns written, by table, in flush order: referenced rows first.
# Columns left out (updated_at of rows the API only inserts) stay NULL.
COLUMNS = {
    tables.placement_aggregates: ('id', 'uuid', 'created_at'),
    _RP: ('id', 'uuid', 'name', 'generation', 'root_provider_id',
          'parent_provider_id', 'created_at', 'updated_at'),
    tables.inventories: ('id', 'resource_provider_id', 'resource_class_id',
                         'total', 'reserved', 'min_unit', 'max_unit',
                         'step_size', 'allocation_ratio', 'created_at'),
    tables.resource_provider_traits: ('trait_id', 'resource_provider_id',
                                      'created_at'),
    tables.resource_provider_aggregates: ('resource_provider_id',
                                          'aggregate_id', 'created_at'),
    tables.consumers: ('id', 'uuid', 'project_id', 'user_id', 'generation',
                       'consumer_type_id', 'created_at'),
    tables.allocations: ('id', 'resource_provider_id', 'consumer_id',
                         'resource_class_id', 'used', 'created_at'),
}
_COPY_ESCAPES = str.maketrans({'\\': '\\\\', '\t': '\\t', '\n': '\\n',
                               '\r': '\\r'})
_COPY_TEXT = {
    type(None): lambda value: '\\N',
    str: lambda value: value.translate(_COPY_ESCAPES),
    int: str,
    float: repr,
    datetime.datetime: lambda value: value.isoformat(' '),
}


class Writer:
    """Buffers rows by table; writes them all once BATCH_ROWS are waiting."""

    def __init__(self, conn):
        self.conn = conn
        self.backend = conn.dialect.name
        self.buffers = {table: [] for table in COLUMNS}
        self.buffered = 0
        self.written = {table.name: 0 for table in COLUMNS}

    def add(self, table, row):
        self.buffers[table].append(row)
        self.buffered += 1

    def flush_if_full(self):
        if self.buffered >= BATCH_ROWS:
            self.flush()

    def flush(self):
        for table, rows in self.buffers.items():
            if not rows:
                continue
            if self.backend == 'postgresql':
                self._copy(table, rows)
            else:
                self.conn.execute(table.insert(), [
                    dict(zip(COLUMNS[table], row)) for row in rows])
            self.written[table.name] += len(rows)
            rows.clear()
        self.buffered = 0
        if self.backend != 'sqlite':
            self.conn.commit()

    def _copy(self, table, rows):
        text = io.StringIO()
        for row in rows:
            text.write('\t'.join(_COPY_TEXT[type(value)](value)
                                 for value in row))
            text.write('\n')
        text.seek(0)
        cursor = self.conn.connection.dbapi_connection.cursor()
        cursor.copy_expert('COPY %s (%s) FROM STDIN' % (
            table.name, ', '.join(COLUMNS[table])), text)
        cursor.close()


class Loader:
    """Turns the dataset's trees and consumers into rows."""

    def __init__(self, conn, now):
        self.conn = conn
        self.now = now
        self.writer = Writer(conn)
        self.next_id = {table: 1 for table in COLUMNS
                        if 'id' in COLUMNS[table]}
        self.provider_ids = {}     # uuid -> id
        self.aggregate_ids = {}    # uuid -> id
        # Allocations are posted ALLOCATION_BATCH consumers a request, and
        # each request bumps the generation of its providers once:
        # rp uuid -> [last request, requests] of consumers not yet counted.
        self.requests = {}
        self.consumer_count = 0
        self.usages = {}
        self.rare_roots = []
        self._ids_of_names()

    def _ids_of_names(self):
        """The standard classes and traits, as the API's first request
        would sync them; the dataset's custom ones, as its loader creates
        them; the consumer type, projects and users."""
        conn = self.conn
        standard_sync.sync_standard(conn)
        for name in dataset.CUSTOM_CLASSES:
            rc_db.create(conn, name)
        for name in dataset.CUSTOM_TRAITS:
            trait_db.ensure(conn, name)
        self.class_ids = dict(conn.execute(sa.select(
            tables.resource_classes.c.name,
            tables.resource_classes.c.id)).all())
        self.trait_ids = dict(conn.execute(sa.select(
            tables.traits.c.name, tables.traits.c.id)).all())
        self.type_id = consumer_db.ensure_type(conn, dataset.CONSUMER_TYPE)
        self.project_ids = {}
        self.user_ids = {}
        for index in range(dataset.PROJECTS):
            project = dataset.project_id(index)
            user = dataset.user_id(index)
            self.project_ids[project] = consumer_db.ensure_project(
                conn, project)
            self.user_ids[user] = consumer_db.ensure_user(conn, user)
        conn.commit()

    def _id(self, table):
        self.next_id[table] += 1
        return self.next_id[table] - 1

    def add(self, tree, consumers):
        for provider in tree:
            self.provider_ids[provider.uuid] = self._id(_RP)
        for consumer in consumers:
            self._add_consumer(consumer)
        root_id = self.provider_ids[tree[0].uuid]
        for provider in tree:
            self._add_provider(provider, root_id)
        if dataset.RARE_TRAIT in tree[0].traits:
            self.rare_roots.append(tree[0].uuid)
        self.writer.flush_if_full()

    def _add_provider(self, provider, root_id):
        """The provider as created, then given its inventories, traits and
        aggregates (one PUT, one generation each, if it has any) and the
        allocations counted so far."""
        add = self.writer.add
        now = self.now
        provider_id = self.provider_ids[provider.uuid]
        generation = sum(1 for part in (provider.inventories,
                                        provider.traits, provider.aggregates)
                         if part)
        generation += self.requests.pop(provider.uuid, (None, 0))[1]
        add(_RP, (provider_id, provider.uuid, provider.name, generation,
                  root_id, provider.parent and self.provider_ids[
                      provider.parent], now, now))
        for rc, inv in provider.inventories.items():
            add(tables.inventories, (
                self._id(tables.inventories), provider_id,
                self.class_ids[rc], inv['total'], inv['reserved'],
                inv['min_unit'], inv['max_unit'], inv['step_size'],
                inv['allocation_ratio'], now))
        for trait in provider.traits:
            add(tables.resource_provider_traits,
                (self.trait_ids[trait], provider_id, now))
        for aggregate in provider.aggregates:
            add(tables.resource_provider_aggregates,
                (provider_id, self._aggregate_id(aggregate), now))

    def _aggregate_id(self, uuid):
        if uuid not in self.aggregate_ids:
            table = tables.placement_aggregates
            self.aggregate_ids[uuid] = self._id(table)
            self.writer.add(table, (self.aggregate_ids[uuid], uuid, self.now))
        return self.aggregate_ids[uuid]

    def _add_consumer(self, consumer):
        uuid, project, user, request = consumer
        posted_in = self.consumer_count // dataset.ALLOCATION_BATCH
        self.consumer_count += 1
        # Created with its allocations: generation 1.
        self.writer.add(tables.consumers, (
            self._id(tables.consumers), uuid, self.project_ids[project],
            self.user_ids[user], 1, self.type_id, self.now))
        for rp, resources in request.items():
            seen = self.requests.setdefault(rp, [None, 0])
            if seen[0] != posted_in:
                seen[:] = [posted_in, seen[1] + 1]
            for rc, amount in resources.items():
                self.writer.add(tables.allocations, (
                    self._id(tables.allocations), self.provider_ids[rp],
                    uuid, self.class_ids[rc], amount, self.now))
        dataset.add_project_usages(self.usages, [consumer])

    def finish(self):
        """Write what is buffered; add the allocation requests of the
        providers written before their last consumers (the sharing ones);
        let the id sequences continue after the ids written."""
        self.writer.flush()
        conn = self.conn
        if self.requests:
            conn.execute(
                _RP.update().where(_RP.c.id == sa.bindparam('rp_id'))
                .values(generation=_RP.c.generation + sa.bindparam('bumps'),
                        updated_at=self.now),
                [{'rp_id': self.provider_ids[uuid], 'bumps': requests}
                 for uuid, (_, requests) in self.requests.items()])
        if conn.dialect.name == 'postgresql':
            for table, next_id in self.next_id.items():
                if next_id > 1:
                    conn.execute(sa.text(
                        "SELECT setval(pg_get_serial_sequence(:table, 'id'), "
                        ":last)"), {'table': table.name, 'last': next_id - 1})
        conn.commit()


def analyze(engine):
    """Planner statistics now rather than from autovacuum or InnoDB's
    background sampling in the middle of the measurements. PostgreSQL
    also VACUUMs: the visibility map allows index-only scans, and the
    first reads do not write hint bits into every freshly copied page."""
    backend = engine.dialect.name
    with engine.connect().execution_options(
            isolation_level='AUTOCOMMIT') as conn:
        if backend == 'postgresql':
            conn.exec_driver_sql('VACUUM ANALYZE')
        elif backend in db_engine.MYSQL_BACKENDS:
            conn.exec_driver_sql('ANALYZE TABLE ' + ', '.join(
                table.name for table in tables.metadata.sorted_tables))


def database_bytes(engine):
    """The database's size on disk (tables and indexes)."""
    backend = engine.dialect.name
    if backend == 'sqlite':
        path = engine.url.database
        return sum(os.path.getsize(path + suffix) for suffix in ('', '-wal')
                   if os.path.exists(path + suffix))
    with engine.connect() as conn:
        if backend == 'postgresql':
            return conn.exec_driver_sql(
                'SELECT pg_database_size(current_database())').scalar()
        return int(conn.exec_driver_sql(
            'SELECT SUM(data_length + index_length) FROM '
            'information_schema.tables WHERE table_schema = DATABASE()'
        ).scalar())


def load(url, nodes, seed):
    """Bulk-load the dataset of ``nodes`` and ``seed``; the summary."""
    started = time.monotonic()
    engine = sa.create_engine(db_engine.normalize_url(url))
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    with engine.connect() as conn:
        loader = Loader(conn, now)
        for tree, consumers in dataset.generate(nodes, seed):
            loader.add(tree, consumers)
        loader.finish()
    written = time.monotonic()
    analyze(engine)
    summary = {
        'seconds': time.monotonic() - started,
        'analyze_seconds': time.monotonic() - written,
        'rows': loader.writer.written,
        'providers': loader.next_id[_RP] - 1,
        'usages': loader.usages,
        'rare_roots': loader.rare_roots,
        'database_bytes': database_bytes(engine),
    }
    engine.dispose()
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('url', help='SQLAlchemy URL of the database')
    parser.add_argument('nodes', type=int, help='compute nodes')
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args(argv)
    json.dump(load(args.url, args.nodes, args.seed), sys.stdout)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
