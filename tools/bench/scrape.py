#!/usr/bin/env python3
"""One scrape of ours' /metrics beside openstack-exporter's placement
collector.

    python tools/bench/scrape.py --backend postgresql --nodes 1000 10000 \
        100000 [--markdown]

At each size the seeded dataset is bulk-loaded into ours' database and
copied for upstream; then one scrape of ours' ``/metrics`` (provider and
aggregate metrics on, no capacity cache) is measured, and so is the
request pattern of openstack-exporter's placement collector (one
``GET /resource_providers``, then ``/inventories``, ``/usages`` and
``/allocations`` of every provider) against upstream and, at the smaller
sizes, against ours: seconds, bytes, series and the database's work.
See tools/README.md; results: tools/bench/RESULTS.md.
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import client
import report
import run
import servers

# openstack-exporter's defaultPlacementProviderRequestConcurrency
# (exporters/exporter.go): the limit of each of its three per-provider
# fetches, which its scheduler runs at the same time.
EXPORTER_CONCURRENCY = 10
# Its gophercloud client sets no microversion: placement answers at 1.0.
EXPORTER_VERSION = '1.0'
EXPORTER_FETCHES = ('inventories', 'usages', 'allocations')
# Above this many nodes the exporter pattern runs over a sample of the
# providers by default, and not against ours.
FULL_PATTERN_NODES = 10000
DEFAULT_SAMPLE = 5000
METRICS_OPTIONS = {'metrics': {'provider_metrics': True,
                               'aggregate_metrics': True,
                               'capacity_cache_seconds': 0}}
# PostgreSQL publishes a busy backend's counts when it goes idle, at most
# once a second, and those it held back 10 s later (PGSTAT_IDLE_INTERVAL).
FLUSH_SECONDS = 10.5
SERIES_FAMILIES = ('openstack_placement_', 'placement_aggregate_')

_STATS_POSTGRESQL = '''
import json, sys, psycopg2
conn = psycopg2.connect(host="127.0.0.1", port=int(sys.argv[2]),
                        user="postgres", dbname="postgres")
conn.autocommit = True
cur = conn.cursor()
for line in sys.stdin:
    cur.execute("SELECT pg_stat_clear_snapshot()")
    cur.execute(
        "SELECT active_time, xact_commit + xact_rollback, "
        "tup_returned + tup_fetched, (SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = %s) FROM pg_stat_database WHERE datname = %s",
        (sys.argv[1], sys.argv[1]))
    ms, xacts, rows, sessions = cur.fetchone()
    print(json.dumps({"ms": ms, "transactions": xacts, "rows": rows,
                      "sessions": sessions}), flush=True)
'''
_STATS_MYSQL = '''
import json, sys, pymysql
conn = pymysql.connect(host="127.0.0.1", port=3306, user="root",
                       autocommit=True)
cur = conn.cursor()
for line in sys.stdin:
    cur.execute("SHOW GLOBAL STATUS WHERE Variable_name = 'Com_select'")
    print(json.dumps({"selects": int(cur.fetchone()[1])}), flush=True)
'''


def log(message):
    run.log(message)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--backend', choices=servers.BACKENDS,
                        default='postgresql')
    parser.add_argument('--nodes', type=int, action='extend', nargs='+',
                        help='compute nodes; several sizes, or repeat '
                             '(default 1000 10000 100000)')
    parser.add_argument('--reps', type=int, default=5,
                        help='scrapes of ours\' /metrics per size')
    parser.add_argument('--exporter-concurrency', type=int,
                        default=EXPORTER_CONCURRENCY,
                        help='requests in flight per per-provider fetch '
                             '(openstack-exporter\'s default: %d; its three '
                             'fetches run at once)' % EXPORTER_CONCURRENCY)
    parser.add_argument('--exporter-sample', type=int,
                        help='providers whose details the exporter pattern '
                             'fetches, the rest extrapolated linearly '
                             '(default: all up to %d nodes, else %d; 0: all)'
                             % (FULL_PATTERN_NODES, DEFAULT_SAMPLE))
    parser.add_argument('--also-ours-exporter',
                        action=argparse.BooleanOptionalAction,
                        help='also send the exporter pattern to ours '
                             '(default: up to %d nodes)' % FULL_PATTERN_NODES)
    run.add_side_by_side_arguments(parser, port_base=18600)
    args = parser.parse_args(argv)
    args.nodes = args.nodes or [1000, 10000, 100000]
    return args


class DatabaseWork:
    """What the database did for one database, read from the server's
    statistics by a helper process of ``env`` (it has the drivers).

    PostgreSQL: ``pg_stat_database``'s ``active_time`` (ms spent running
    statements), transactions and rows read; ``settle`` waits until the
    server's sessions have published their counts. MariaDB: the
    server-wide ``Com_select`` (performance_schema is off here), which
    counts every client's statements. SQLite: nothing.
    """

    def __init__(self, database, env):
        self.database = database
        self.backend = database.backend
        self.proc = None
        if self.backend == 'postgresql':
            code, argv = _STATS_POSTGRESQL, [database.name,
                                             str(database.port)]
        elif self.backend == 'mysql':
            code, argv = _STATS_MYSQL, []
        else:
            return
        self.proc = subprocess.Popen(
            [env.python, '-c', code] + argv, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)

    def read(self):
        if self.proc is None:
            return {}
        self.proc.stdin.write('\n')
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError('the statistics reader ended')
        return json.loads(line)

    def settle(self, idle_since):
        """The counts once everything up to ``idle_since`` (a monotonic
        time after the last request) is published: on PostgreSQL at least
        FLUSH_SECONDS later, then two equal readings."""
        if self.backend != 'postgresql':
            return self.read()
        time.sleep(max(0.0, idle_since + FLUSH_SECONDS - time.monotonic()))
        return self._stable()

    def _stable(self):
        last = self.read()
        while True:
            time.sleep(0.5)
            now = self.read()
            if _counts(now) == _counts(last):
                return now
            last = now

    def flush(self):
        """End the database's sessions, so that each publishes all it
        counted; the counts then (PostgreSQL only, else None)."""
        if self.backend != 'postgresql':
            return None
        self.database.end_sessions()
        deadline = time.monotonic() + 30
        while self.read()['sessions'] and time.monotonic() < deadline:
            time.sleep(0.2)
        return self._stable()

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(10)
            self.proc = None


def _counts(reading):
    return {key: value for key, value in reading.items()
            if key != 'sessions'}


def delta(before, after):
    return {key: after[key] - before[key] for key in _counts(after)}


class Scrape:
    """One GET of ours' /metrics."""

    def __init__(self, resp, work):
        self.status = resp.status
        self.seconds = resp.seconds
        self.bytes = len(resp.body)
        self.work = work
        lines = [line for line in resp.body.split(b'\n')
                 if line and not line.startswith(b'#')]
        self.series = len(lines)
        self.families = {family: sum(1 for line in lines
                                     if line.startswith(family.encode()))
                         for family in SERIES_FAMILIES}


def measure_metrics(srv, work, reps):
    """``reps`` scrapes of ours' /metrics, each alone between settled
    database counts; then the counts no settle had published."""
    scrapes = []
    srv.client.expect('GET', '/metrics')  # the first pays for imports
    before = work.settle(time.monotonic())
    for rep in range(reps):
        resp = srv.client.get('/metrics')
        after = work.settle(time.monotonic())
        scrapes.append(Scrape(resp, delta(before, after) if after else {}))
        log('  /metrics %d/%d: %s, %.2fs, %d bytes, %d series, database %s'
            % (rep + 1, reps, resp.status, resp.seconds, len(resp.body),
               scrapes[-1].series, scrapes[-1].work))
        before = after
    flushed = work.flush()
    return scrapes, (delta(before, flushed) if flushed else None)


class Pattern:
    """openstack-exporter's requests of one scrape against one server;
    with a sample, the per-provider part extrapolated to every provider."""

    def __init__(self, label):
        self.label = label
        self.lock = threading.Lock()
        self.requests = 0
        self.bytes = 0
        self.errors = {}
        self.providers = 0
        self.sampled = 0
        # {'list' | 'details': seconds, bytes, database counts}
        self.seconds = {}
        self.part_bytes = {}
        self.work = {}
        # What the exporter would export: 4 series per inventory, one per
        # usage, one per consumer and class allocated.
        self.series = 0

    @property
    def factor(self):
        return self.providers / self.sampled if self.sampled else 1.0

    def total(self, parts):
        """list + details x factor of one measure."""
        if 'list' not in parts or 'details' not in parts:
            return None
        return parts['list'] + parts['details'] * self.factor

    def add(self, resp, kind):
        with self.lock:
            self.requests += 1
            self.bytes += len(resp.body)
            if resp.status != 200:
                self.errors[resp.status] = self.errors.get(resp.status, 0) + 1
                return
            if kind not in EXPORTER_FETCHES:
                return  # the listing: read by exporter_pattern
            body = resp.json()
            if kind == 'inventories':
                self.series += 4 * len(body['inventories'])
            elif kind == 'usages':
                self.series += len(body['usages'])
            elif kind == 'allocations':
                self.series += sum(len(alloc['resources']) for alloc in
                                   body['allocations'].values())


def exporter_pattern(srv, work, sample, concurrency):
    """The placement collector's scrape: list every provider, then fetch
    the inventories, usages and allocations of each (of ``sample`` of
    them, evenly spread, when given), the three fetches at once with at
    most ``concurrency`` requests each."""
    pattern = Pattern(srv.label)
    before = work.settle(time.monotonic())
    resp = srv.client.get('/resource_providers', version=EXPORTER_VERSION)
    pattern.add(resp, 'list')
    if resp.status != 200:
        raise RuntimeError('GET /resource_providers: %s %s' % (
            resp.status, resp.body[:300]))
    pattern.seconds['list'] = resp.seconds
    pattern.part_bytes['list'] = len(resp.body)
    uuids = [rp['uuid'] for rp in resp.json()['resource_providers']]
    pattern.providers = len(uuids)
    if sample and sample < len(uuids):
        uuids = [uuids[index * len(uuids) // sample]
                 for index in range(sample)]
        pattern.sampled = sample
    middle = work.settle(time.monotonic())
    if middle:
        pattern.work['list'] = delta(before, middle)

    def fetch(kind):
        def one(uuid):
            pattern.add(srv.client.get(
                '/resource_providers/%s/%s' % (uuid, kind),
                version=EXPORTER_VERSION), kind)
        client.run_bounded(one, uuids, concurrency)

    threads = [threading.Thread(target=fetch, args=(kind,))
               for kind in EXPORTER_FETCHES]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    pattern.seconds['details'] = time.perf_counter() - started
    pattern.part_bytes['details'] = pattern.bytes - pattern.part_bytes['list']
    after = work.settle(time.monotonic())
    if after:
        pattern.work['details'] = delta(middle, after)
    log('  exporter pattern vs %s: %d requests, %.1fs, %d bytes, '
        'database %s%s' % (
            srv.label, pattern.requests, pattern.total(pattern.seconds),
            pattern.total(pattern.part_bytes), pattern.work,
            ' (%d of %d providers)' % (pattern.sampled, pattern.providers)
            if pattern.sampled else ''))
    return pattern


def _work_total(pattern, key):
    parts = {part: counts[key] for part, counts in pattern.work.items()
             if key in counts}
    return pattern.total(parts)


def _mb(amount):
    return '%.2f MB' % (amount / 2 ** 20)


def _spread(values, fmt):
    """median (max) of a scrape's measure."""
    return '%s (%s)' % (fmt(statistics.median(values)), fmt(max(values)))


def database_rows(backend):
    """(row name, key, formatter) of the database measures."""
    if backend == 'postgresql':
        return [('database time ms (pg_stat_database.active_time)', 'ms',
                 '{:,.0f}'.format),
                ('database transactions', 'transactions', '{:,.0f}'.format),
                ('database rows read (tup_returned + tup_fetched)', 'rows',
                 lambda value: '{:,.0f}'.format(value))]
    if backend == 'mysql':
        return [('SELECT statements (server-wide Com_select; time n/a)',
                 'selects', '{:,.0f}'.format)]
    return [('database time', None, None)]


def size_table(backend, scrapes, patterns):
    """Rows: the measures; columns: ours' /metrics, then every pattern."""
    header = ['per scrape', 'ours /metrics (median (max) of %d)'
              % len(scrapes)]
    header += ['exporter pattern vs %s%s' % (
        pattern.label, ' (extrapolated from %s of %s providers)' % (
            '{:,}'.format(pattern.sampled), '{:,}'.format(pattern.providers))
        if pattern.sampled else '') for pattern in patterns]
    ok = [scrape for scrape in scrapes if scrape.status == 200]
    rows = [['requests', '1'] + ['{:,}'.format(
        1 + len(EXPORTER_FETCHES) * pattern.providers)
        for pattern in patterns]]
    rows.append(['seconds (wall)', _spread(
        [scrape.seconds for scrape in scrapes], lambda v: '%.3f' % v)] + [
        '%.1f' % pattern.total(pattern.seconds) for pattern in patterns])
    rows.append(['response bytes', _spread(
        [scrape.bytes for scrape in scrapes], _mb)] + [
        _mb(pattern.total(pattern.part_bytes)) for pattern in patterns])
    rows.append(['series (exporter: the ones it would export)',
                 _spread([scrape.series for scrape in ok] or [0],
                         '{:,.0f}'.format)] + [
        '{:,.0f}'.format(pattern.series * pattern.factor)
        for pattern in patterns])
    for family in SERIES_FAMILIES:
        rows.append(['%s* series' % family, _spread(
            [scrape.families[family] for scrape in ok] or [0],
            '{:,.0f}'.format)] + ['-'] * len(patterns))
    for name, key, fmt in database_rows(backend):
        if key is None:
            rows.append([name] + ['n/a (SQLite)'] * (1 + len(patterns)))
            continue
        values = [scrape.work[key] for scrape in scrapes if scrape.work]
        rows.append([name, _spread(values, fmt) if values else '-'] + [
            fmt(_work_total(pattern, key)) if pattern.work else '-'
            for pattern in patterns])
    rows.append(['errors', ', '.join(
        str(scrape.status) for scrape in scrapes if scrape.status != 200)
        or 'none'] + [', '.join('%s x%d' % item for item in
                                sorted(pattern.errors.items())) or 'none'
                      for pattern in patterns])
    return report.table(header, rows)


def size_notes(backend, scrapes, residue, patterns, summary):
    """Plausibility of the database counts and the dataset checks."""
    notes = []
    inventories = summary['rows'].get('inventories')
    for scrape in scrapes:
        totals = scrape.families['openstack_placement_'] // 5
        if scrape.status == 200 and inventories and totals < inventories:
            notes.append('!!! /metrics reported %d inventories, %d loaded'
                         % (totals, inventories))
            break
    for pattern in patterns:
        if pattern.providers != summary['providers']:
            notes.append('!!! %s listed %d providers, %d loaded' % (
                pattern.label, pattern.providers, summary['providers']))
    if backend == 'postgresql':
        times = [scrape.work.get('ms', 0) for scrape in scrapes]
        walls = [scrape.seconds * 1000 for scrape in scrapes]
        if not all(0 < ms <= wall for ms, wall in zip(times, walls)):
            notes.append('!!! a scrape\'s database time is zero or above '
                         'its wall time: %s against %s ms' % (
                             times, ['%.0f' % wall for wall in walls]))
        if residue is not None:
            notes.append('Counts no settle had published, found once ours\' '
                         'sessions ended after the scrapes: %s.' % residue)
        for pattern in patterns:
            spent = _work_total(pattern, 'ms')
            wall = pattern.total(pattern.seconds) * 1000
            if not spent or spent > wall * run.LOAD_WORKERS:
                notes.append('!!! exporter pattern vs %s: database time %s '
                             'ms, implausible for %.0f ms with %d workers'
                             % (pattern.label, spent, wall, run.LOAD_WORKERS))
    return notes


def run_size(args, envs, nodes):
    """Load, start both servers and measure; (title, text) of the size."""
    ours_env, upstream_env = envs
    workdir = tempfile.mkdtemp(prefix='placement-scrape-',
                               dir=run._workdir_root())
    databases = [servers.Database(args.backend, 'bench_scrape_%s_%d' % (
        env.label, os.getpid()), workdir, env) for env in envs]
    works = []
    try:
        for database in databases:
            database.create()
        ours = servers.Server(ours_env, databases[0], args.port_base, workdir)
        upstream = servers.Server(upstream_env, databases[1],
                                  args.port_base + 1, workdir)
        ours.configure(metrics=True, options=METRICS_OPTIONS)
        ours.sync_db()
        log('bulk loading %d nodes into ours on %s ...' % (
            nodes, args.backend))
        started = time.monotonic()
        summary = run.bulk_load(ours_env, databases[0], nodes, args.seed)
        databases[1].copy_from(databases[0])
        for database in databases:
            database.analyze()
        log('  loaded, copied and analyzed in %.0fs: %d providers' % (
            time.monotonic() - started, summary['providers']))
        works = [DatabaseWork(database, ours_env) for database in databases]
        ours.start(run.LOAD_WORKERS)
        log('scraping ours\' /metrics ...')
        scrapes, residue = measure_metrics(ours, works[0], args.reps)
        sample = args.exporter_sample
        if sample is None:
            sample = 0 if nodes <= FULL_PATTERN_NODES else DEFAULT_SAMPLE
        patterns = []
        also_ours = args.also_ours_exporter
        if also_ours is None:
            also_ours = nodes <= FULL_PATTERN_NODES
        if also_ours:
            log('exporter pattern against ours ...')
            patterns.append(exporter_pattern(ours, works[0], sample,
                                             args.exporter_concurrency))
        ours.stop()
        upstream.start(run.LOAD_WORKERS)
        log('exporter pattern against upstream ...')
        patterns.append(exporter_pattern(upstream, works[1], sample,
                                         args.exporter_concurrency))
        upstream.stop()
        title = '{:,} nodes ({:,} providers, {:,} inventories)'.format(
            nodes, summary['providers'], summary['rows']['inventories'])
        text = size_table(args.backend, scrapes, patterns)
        notes = size_notes(args.backend, scrapes, residue, patterns, summary)
        return title, '\n\n'.join([text] + notes)
    except Exception as exc:  # noqa: B902 - the other sizes still run
        log('!!! %d nodes failed:\n%s' % (nodes, traceback.format_exc()))
        return ('{:,} nodes'.format(nodes), '**failed**: %s: %s' % (
            type(exc).__name__, str(exc)[:300]))
    finally:
        servers.stop_all()
        for work in works:
            work.close()
        if args.keep:
            log('kept %s and databases %s' % (
                workdir, ', '.join(database.name for database in databases)))
        else:
            for database in databases:
                database.drop()
            shutil.rmtree(workdir, ignore_errors=True)


def _database_method(backend):
    if backend == 'postgresql':
        return ('database time is the delta of the bench database\'s '
                '`pg_stat_database.active_time`, read once its sessions '
                'have published their counts (%gs after the last request, '
                'then two equal readings)' % FLUSH_SECONDS)
    if backend == 'mysql':
        return ('the database is measured by the delta of the server-wide '
                '`Com_select`, which also counts every other client\'s '
                'statements meanwhile; no time (performance_schema off)')
    return 'no database measures on SQLite'


def main(argv=None):
    args = parse_args(argv)
    ran = run.side_by_side(args, run_size, log)
    if ran is None:
        return 130
    sections, commit, started, load = ran
    heading = ('### %s: %s, one scrape of /metrics beside '
               'openstack-exporter, %s nodes' % (
                   datetime.date.today().isoformat(),
                   run._backend_label(args, True),
                   ' / '.join('{:,}'.format(nodes) for nodes in args.nodes)))
    facts = ('Ours at %s; %d gunicorn workers each; ours with `[metrics] '
             'provider_metrics`, `aggregate_metrics` and '
             '`capacity_cache_seconds = 0`; the exporter pattern at '
             'microversion %s, %d requests at most in flight per '
             'per-provider fetch, its three fetches at once; %s. Seed %d, '
             '%d CPUs, load average %.1f at start, %.1f at the end; %.0fs '
             'in all; times are client-side.' % (
                 commit, run.LOAD_WORKERS, EXPORTER_VERSION,
                 args.exporter_concurrency, _database_method(args.backend),
                 args.seed, os.cpu_count(), load, os.getloadavg()[0],
                 time.monotonic() - started))
    run._publish(args, heading, sections, facts)
    return 0


if __name__ == '__main__':
    sys.exit(main())
