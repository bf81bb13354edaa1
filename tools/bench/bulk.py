#!/usr/bin/env python3
"""Write the seeded dataset straight into an empty placement database.

    python tools/bench/bulk.py URL NODES [--seed N] [--fleet nova|ironic]

Loading 100,000 nodes over the REST API would take half a million
requests. This writes the rows the API would have written (ids,
generations, timestamps) in large batches: COPY on PostgreSQL, multi-row
INSERTs on MariaDB, executemany in one transaction on SQLite. The
dataset is streamed from ``dataset.generate``, one tree at a time.

Run it with ours' interpreter (it writes through placement.db.bulk_load),
on a database that ``placement-manage db sync`` has just created, with
no server running. It prints one JSON object: the seconds taken, the rows
written by table, the totals that ``dataset.verify_totals`` checks
through the API, the roots carrying ``dataset.RARE_TRAIT`` and the size
of the database in bytes.
"""
import argparse
import datetime
import json
import sys
import time

import dataset
import sqlalchemy as sa

from placement.db import bulk_load
from placement.db import consumer as consumer_db
from placement.db import engine as db_engine
from placement.db import resource_class as rc_db
from placement.db import standard_sync
from placement.db import trait as trait_db


class Loader:
    """Turns the dataset's trees and consumers into rows."""

    def __init__(self, conn, now, fleet='nova'):
        self.conn = conn
        self.fleet = fleet
        self.now = now
        self.writer = bulk_load.Writer(conn)
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
        would sync them (OWNER_NOVA among them); the fleet's custom ones,
        as its loader creates them; the consumer type, projects and
        users."""
        conn = self.conn
        standard_sync.sync_standard(conn)
        classes, traits = dataset.custom_names(self.fleet)
        for name in classes:
            rc_db.create(conn, name)
        for name in traits:
            trait_db.ensure(conn, name)
        self.class_ids = {row['name']: row['id']
                          for row in rc_db.list_all(conn)}
        self.trait_ids = trait_db.ids_by_name(
            conn, [row['name'] for row in trait_db.list_all(conn)])
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

    def add(self, tree, consumers):
        new_id = self.writer.new_id
        for provider in tree:
            self.provider_ids[provider.uuid] = new_id('resource_providers')
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
        add('resource_providers', (
            provider_id, provider.uuid, provider.name, generation, root_id,
            provider.parent and self.provider_ids[provider.parent], now, now))
        for rc, inv in provider.inventories.items():
            add('inventories', (
                self.writer.new_id('inventories'), provider_id,
                self.class_ids[rc], inv['total'], inv['reserved'],
                inv['min_unit'], inv['max_unit'], inv['step_size'],
                inv['allocation_ratio'], now))
        for trait in provider.traits:
            add('resource_provider_traits',
                (self.trait_ids[trait], provider_id, now))
        for aggregate in provider.aggregates:
            add('resource_provider_aggregates',
                (provider_id, self._aggregate_id(aggregate), now))

    def _aggregate_id(self, uuid):
        if uuid not in self.aggregate_ids:
            self.aggregate_ids[uuid] = self.writer.new_id(
                'placement_aggregates')
            self.writer.add('placement_aggregates',
                            (self.aggregate_ids[uuid], uuid, self.now))
        return self.aggregate_ids[uuid]

    def _add_consumer(self, consumer):
        uuid, project, user, request = consumer
        posted_in = self.consumer_count // dataset.ALLOCATION_BATCH
        self.consumer_count += 1
        # Created with its allocations: generation 1.
        self.writer.add('consumers', (
            self.writer.new_id('consumers'), uuid, self.project_ids[project],
            self.user_ids[user], 1, self.type_id, self.now))
        for rp, resources in request.items():
            seen = self.requests.setdefault(rp, [None, 0])
            if seen[0] != posted_in:
                seen[:] = [posted_in, seen[1] + 1]
            for rc, amount in resources.items():
                self.writer.add('allocations', (
                    self.writer.new_id('allocations'), self.provider_ids[rp],
                    uuid, self.class_ids[rc], amount, self.now))
        dataset.add_project_usages(self.usages, [consumer])

    def finish(self):
        """Write what is buffered; add the allocation requests of the
        providers written before their last consumers (the sharing ones);
        let the id sequences continue after the ids written."""
        self.writer.flush()
        bulk_load.add_to_generations(self.conn, {
            self.provider_ids[uuid]: requests
            for uuid, (_, requests) in self.requests.items()}, self.now)
        self.writer.finish()


def load(url, nodes, seed, fleet='nova'):
    """Bulk-load the dataset of ``nodes``, ``seed`` and ``fleet``; the
    summary."""
    started = time.monotonic()
    engine = sa.create_engine(db_engine.normalize_url(url))
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    with engine.connect() as conn:
        loader = Loader(conn, now, fleet)
        for tree, consumers in dataset.generate(nodes, seed, fleet):
            loader.add(tree, consumers)
        loader.finish()
    written = time.monotonic()
    # Planner statistics now rather than from autovacuum or InnoDB's
    # background sampling in the middle of the measurements.
    with engine.connect().execution_options(
            isolation_level='AUTOCOMMIT') as conn:
        bulk_load.analyze(conn)
    summary = {
        'seconds': time.monotonic() - started,
        'analyze_seconds': time.monotonic() - written,
        'rows': loader.writer.written,
        'providers': loader.writer.last_ids['resource_providers'],
        'usages': loader.usages,
        'rare_roots': loader.rare_roots,
    }
    with engine.connect() as conn:
        summary['database_bytes'] = bulk_load.database_bytes(conn)
    engine.dispose()
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('url', help='SQLAlchemy URL of the database')
    parser.add_argument('nodes', type=int, help='compute nodes')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--fleet', choices=dataset.FLEETS, default='nova')
    args = parser.parse_args(argv)
    json.dump(load(args.url, args.nodes, args.seed, args.fleet), sys.stdout)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
