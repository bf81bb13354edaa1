#!/usr/bin/env python3
"""How many more of ten flavours fit: ours' capacity answer beside
os-capacity's request pattern against upstream.

    python tools/bench/capacity.py --backend sqlite --nodes 1000 10000 \
        [100000] [--markdown]

At each size the seeded dataset is bulk-loaded into ours' database and
copied for upstream. Ours answers ``GET /x-capacity/flavours`` for the
ten flavours of ``capacity_flavours.txt`` (its ``[capacity]
flavours_file``), timed ``--reps`` times with the peak worker memory.
Against upstream runs what StackHPC's os-capacity asks at every scrape:
one ``GET /allocation_candidates`` per flavour without a limit, then
``GET /resource_providers`` and, for each provider, its inventories,
usages and aggregates, one request after the other as its client sends
them (above ``--full-pattern-nodes`` for a sample of the providers,
evenly spread, the rest extrapolated linearly). See tools/README.md;
results: tools/bench/RESULTS.md.
"""
import argparse
import datetime
import os
import shutil
import statistics
import sys
import tempfile
import time
import traceback

import report
import run
import servers

FLAVOURS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             'capacity_flavours.txt')
# The pattern's microversion: the highest both serve (the gold flavour
# needs root_required, 1.35).
PATTERN_VERSION = '1.39'
PER_PROVIDER = ('inventories', 'usages', 'aggregates')
FULL_PATTERN_NODES = 10000
DEFAULT_SAMPLE = 10000
# The targets of issue 46.
TARGET_RATIO = 50
TARGET_SECONDS = {10000: 1.0, 100000: 10.0}
TARGET_MB = 300


def log(message):
    run.log(message)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--backend', choices=servers.BACKENDS,
                        default='sqlite')
    parser.add_argument('--nodes', type=int, action='extend', nargs='+',
                        help='compute nodes; several sizes (default 1000 '
                             '10000)')
    parser.add_argument('--reps', type=int, default=5,
                        help='capacity answers of ours per size')
    parser.add_argument('--sample', type=int,
                        help='providers whose details the os-capacity '
                             'pattern fetches, the rest extrapolated '
                             '(default: all up to %d nodes, else %d)'
                             % (FULL_PATTERN_NODES, DEFAULT_SAMPLE))
    run.add_side_by_side_arguments(parser, port_base=18700)
    args = parser.parse_args(argv)
    args.nodes = args.nodes or [1000, 10000]
    return args


def flavour_queries():
    """(name, query string) of the benchmark's flavours."""
    found = []
    with open(FLAVOURS_FILE) as lines:
        for line in lines:
            line = line.strip()
            if line and not line.startswith('#'):
                name, query = line.split(None, 1)
                found.append((name, query.strip()))
    return found


def measure_ours(srv, reps):
    """(seconds of each answer, peak worker MB, the answer)."""
    srv.client.expect('GET', '/x-capacity/flavours')  # imports, caches
    seconds = []
    with servers.MemoryMonitor([srv]) as memory:
        for rep in range(reps):
            resp = srv.client.get('/x-capacity/flavours')
            if resp.status != 200:
                raise RuntimeError('ours answered %d: %s'
                                   % (resp.status, resp.body[:300]))
            seconds.append(resp.seconds)
            log('  ours %d/%d: %.3fs' % (rep + 1, reps, resp.seconds))
    return seconds, memory.peak_kb[srv.label] / 1024, resp.json()


class Pattern:
    """os-capacity's requests of one scrape against upstream."""

    def __init__(self):
        self.requests = 0
        self.candidates = {}    # flavour: (seconds, candidates)
        self.list_seconds = 0.0
        self.detail_seconds = 0.0
        self.providers = 0
        self.sampled = 0
        self.errors = {}

    def add(self, resp):
        self.requests += 1
        if resp.status != 200:
            self.errors[resp.status] = self.errors.get(resp.status, 0) + 1

    @property
    def seconds(self):
        factor = self.providers / self.sampled if self.sampled else 1.0
        return (sum(seconds for seconds, _count
                    in self.candidates.values())
                + self.list_seconds + self.detail_seconds * factor)


def os_capacity_pattern(srv, sample):
    pattern = Pattern()
    for name, query in flavour_queries():
        resp = srv.client.get('/allocation_candidates?' + query,
                              version=PATTERN_VERSION)
        pattern.add(resp)
        count = (len(resp.json()['allocation_requests'])
                 if resp.status == 200 else None)
        pattern.candidates[name] = (resp.seconds, count)
        log('  upstream candidates %s: %s, %.2fs, %s candidates'
            % (name, resp.status, resp.seconds, count))
    resp = srv.client.get('/resource_providers', version=PATTERN_VERSION)
    pattern.add(resp)
    pattern.list_seconds = resp.seconds
    uuids = [rp['uuid'] for rp in resp.json()['resource_providers']]
    pattern.providers = len(uuids)
    if sample and sample < len(uuids):
        step = len(uuids) / sample
        uuids = [uuids[int(index * step)] for index in range(sample)]
    pattern.sampled = len(uuids)
    started = time.monotonic()
    for number, uuid in enumerate(uuids, 1):
        for what in PER_PROVIDER:
            pattern.add(srv.client.get('/resource_providers/%s/%s'
                                       % (uuid, what),
                                       version=PATTERN_VERSION))
        if not number % 1000:
            log('  upstream providers: %d of %d' % (number, len(uuids)))
    pattern.detail_seconds = time.monotonic() - started
    return pattern


def run_size(args, envs, nodes):
    """Load, start both servers and measure; (title, row, notes)."""
    ours_env, upstream_env = envs
    workdir = tempfile.mkdtemp(prefix='placement-capacity-',
                               dir=run._workdir_root())
    databases = [servers.Database(args.backend, 'bench_capacity_%s_%d' % (
        env.label, os.getpid()), workdir, env) for env in envs]
    try:
        for database in databases:
            database.create()
        ours = servers.Server(ours_env, databases[0], args.port_base, workdir)
        upstream = servers.Server(upstream_env, databases[1],
                                  args.port_base + 1, workdir)
        ours.configure(options={'capacity': {
            'flavours_file': FLAVOURS_FILE}})
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
        ours.start(run.LOAD_WORKERS)
        log('ours\' capacity answer ...')
        seconds, peak_mb, answer = measure_ours(ours, args.reps)
        ours.stop()
        sample = args.sample
        if sample is None:
            sample = 0 if nodes <= FULL_PATTERN_NODES else DEFAULT_SAMPLE
        upstream.start(run.LOAD_WORKERS)
        log('os-capacity pattern against upstream ...')
        pattern = os_capacity_pattern(upstream, sample)
        upstream.stop()
        return _row(nodes, summary, seconds, peak_mb, answer, pattern)
    except Exception as exc:  # noqa: B902 - the other sizes still run
        log('!!! %d nodes failed:\n%s' % (nodes, traceback.format_exc()))
        return (['{:,}'.format(nodes)] + ['-'] * 7
                + ['**failed**: %s: %s' % (type(exc).__name__,
                                           str(exc)[:200])])
    finally:
        servers.stop_all()
        if args.keep:
            log('kept %s and databases %s' % (
                workdir, ', '.join(database.name for database in databases)))
        else:
            for database in databases:
                database.drop()
            shutil.rmtree(workdir, ignore_errors=True)


def _row(nodes, summary, seconds, peak_mb, answer, pattern):
    ours = statistics.median(seconds)
    upstream = pattern.seconds
    speedup = upstream / ours
    target = TARGET_SECONDS.get(nodes)
    met = ['%.0fx %s %dx' % (speedup, '>=' if speedup >= TARGET_RATIO
                             else '<', TARGET_RATIO)]
    if target:
        met.append('%.2fs %s %gs' % (ours, '<' if ours < target else '>=',
                                     target))
    if nodes >= 100000:
        met.append('%.0f MB %s %d MB' % (peak_mb, '<' if peak_mb < TARGET_MB
                                         else '>=', TARGET_MB))
    fits = ', '.join('%s %s' % (flavour['name'], '{:,}'.format(
        flavour['fit'])) for flavour in answer['flavours'])
    candidates = ', '.join('%s %s' % (name, '-' if count is None
                                      else '{:,}'.format(count))
                           for name, (_seconds, count)
                           in pattern.candidates.items())
    extrapolated = ('' if pattern.sampled == pattern.providers else
                    ' (providers\' details from %d of %d, extrapolated)'
                    % (pattern.sampled, pattern.providers))
    return ['{:,}'.format(nodes), '{:,}'.format(summary['providers']),
            '%.3f (%.3f-%.3f)' % (ours, min(seconds), max(seconds)),
            '%.0f' % peak_mb,
            '%.1f%s' % (upstream, extrapolated),
            '{:,}'.format(pattern.requests)
            + ('' if not pattern.errors else ' (%s)' % ', '.join(
                '%d x %d' % item for item in pattern.errors.items())),
            '%.0fx' % speedup, '; '.join(met),
            'fit: %s; upstream candidates: %s' % (fits, candidates)]


def main(argv=None):
    args = parse_args(argv)
    ran = run.side_by_side(args, run_size, log)
    if ran is None:
        return 130
    rows, commit, started, load = ran
    heading = ('### %s: %s, capacity of 10 flavours beside os-capacity\'s '
               'pattern, %s nodes' % (
                   datetime.date.today().isoformat(),
                   run._backend_label(args, True),
                   ' / '.join('{:,}'.format(nodes) for nodes in args.nodes)))
    header = ['nodes', 'providers', 'ours s, median (min-max)',
              'ours peak worker MB', 'os-capacity pattern s',
              'its requests', 'speed-up', 'targets', 'answers']
    facts = ('Ours at %s: `GET /x-capacity/flavours` (the %d flavours of '
             'tools/bench/capacity_flavours.txt), %d answers per size; '
             'the os-capacity pattern once, against upstream 16.0.0 at '
             'microversion %s (candidates per flavour, then the providers '
             'and each one\'s inventories, usages and aggregates, one '
             'request at a time). %d gunicorn workers each; seed %d, %d '
             'CPUs, load average %.1f at start, %.1f at the end; %.0fs in '
             'all; times are client-side.' % (
                 commit, len(flavour_queries()), args.reps, PATTERN_VERSION,
                 run.LOAD_WORKERS, args.seed, os.cpu_count(), load,
                 os.getloadavg()[0], time.monotonic() - started))
    run._publish(args, heading, [('Capacity answer',
                                  report.table(header, rows))], facts)
    return 0


if __name__ == '__main__':
    sys.exit(main())
