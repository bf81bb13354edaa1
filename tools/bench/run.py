#!/usr/bin/env python3
"""Benchmark this placement against upstream openstack-placement 16.0.0.

    python tools/bench/run.py --backend sqlite --nodes 1000 [--quick]
    python tools/bench/run.py --backend postgresql --replica [--nodes 1000]

Both servers run under gunicorn (noauth2) on fresh databases, receive the
same seeded dataset over the REST API and the same requests, interleaved.
``--replica`` puts the databases on a private PostgreSQL primary with a
streaming standby and measures candidate reads with and without
slave_connection instead of the other phases.
See tools/README.md; results: tools/bench/RESULTS.md.
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import typing

import client
import dataset
import environments
import replica
import report
import servers
import workload

LOAD_WORKERS = 2
BUG_WORKERS = 1
SCHEDULER_WORKERS = (2, 4)
SCHEDULER_CLIENTS = (8, 32)
# The Ironic fleet's scheduler phase: one race for the last free nodes.
RACE_WORKERS = SCHEDULER_WORKERS[0]
RACE_CLIENTS = SCHEDULER_CLIENTS[-1]
RACE_DEADLINE = 6  # times --scheduler-seconds
PERIODIC_WORKERS = LOAD_WORKERS
PERIODIC_CLIENTS = (8, 32)
PHASES = ('latency', 'nova-reads', 'bug', 'scheduler', 'periodic')
REPLICA_WORKERS = LOAD_WORKERS
REPLICA_CLIENTS = SCHEDULER_CLIENTS
# --separate-cpus: the placement server's CPUs and the databases'.
SERVICE_CPUS = {0}
DATABASE_CPUS = set(range(1, os.cpu_count() or 2))
BULK_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'bulk.py')


def log(message):
    print(message, flush=True)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--backend', choices=servers.BACKENDS,
                        default='sqlite')
    parser.add_argument('--mysql-driver', choices=servers.MYSQL_DRIVERS,
                        default='pymysql',
                        help='the driver ours reaches MariaDB through with '
                             '--backend mysql (mysqldb: mysqlclient); '
                             'upstream keeps PyMySQL')
    parser.add_argument('--nodes', type=int, action='extend', nargs='+',
                        help='compute nodes; several sizes, or repeat '
                             '(default 1000, 200 with --quick)')
    parser.add_argument('--reps', type=int,
                        help='timed repetitions per query and server '
                             '(default 10, 5 with --quick)')
    parser.add_argument('--quick', action='store_true',
                        help='small and short: for developing the harness')
    parser.add_argument('--markdown', action='store_true',
                        help='also record the tables in '
                             'tools/bench/RESULTS.md')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--skip', action='append', default=[],
                        choices=PHASES)
    parser.add_argument('--only', type=lambda text: text.split(','),
                        help='comma-separated phases to run, the others '
                             'skipped (%s)' % ', '.join(PHASES))
    parser.add_argument('--fleet', choices=dataset.FLEETS, default='nova',
                        help='the dataset: compute nodes (nova) or '
                             'bare-metal nodes of one unit each (ironic), '
                             'whose scheduler phase races for the last '
                             'free nodes of one flavour')
    parser.add_argument('--scheduler-traits', action='store_true',
                        help='the scheduler loop asks as Nova 2026.2 does, '
                             'with required=%s' % dataset.NOVA_TRAITS)
    parser.add_argument('--periodic-seconds', type=float,
                        help='duration of each periodic-task run '
                             '(default 10, 5 with --quick)')
    parser.add_argument('--query-budget', type=float,
                        help='seconds after which a query stops repeating '
                             '(default 20, 8 with --quick)')
    parser.add_argument('--scheduler-seconds', type=float,
                        help='duration of each scheduler run '
                             '(default 10, 5 with --quick)')
    parser.add_argument('--scheduler-limit', type=int, default=1000,
                        help='limit of the scheduler GET (nova: 1000)')
    parser.add_argument('--bug-timeout', type=float,
                        help='client timeout of the wide-tree queries '
                             '(default 120, 60 with --quick)')
    parser.add_argument('--rss-limit-mb', type=int, default=6144,
                        help='kill a server whose worker grows past this')
    parser.add_argument('--max-candidates', type=int,
                        help='[placement]max_allocation_candidates for both '
                             '(default: unset, i.e. unlimited)')
    parser.add_argument('--load-concurrency', type=int, default=4)
    parser.add_argument('--copy-load', action='store_true',
                        help='load the dataset over the REST API into ours '
                             'only and give upstream a copy of that '
                             'database (it adopts it in place, as in a '
                             'swap); saves most of the time at 10,000 nodes')
    parser.add_argument('--port-base', type=int, default=18450,
                        help='upstream listens here, ours on the next port')
    parser.add_argument('--upstream-venv',
                        help='use this venv instead of the cached one')
    parser.add_argument('--ours-venv',
                        help='use this venv for ours (pointing it at an '
                             'upstream venv benchmarks upstream twice)')
    parser.add_argument('--keep', action='store_true',
                        help='keep the databases and the work directory')
    parser.add_argument('--replica', action='store_true',
                        help='replica mode (PostgreSQL): the databases on a '
                             'private primary with a streaming standby; '
                             'concurrent candidate reads, primary only and '
                             'with slave_connection = standby, instead of '
                             'the latency, bug and scheduler phases')
    parser.add_argument('--replica-seconds', type=float,
                        help='duration of each replica-mode run '
                             '(default 20, 5 with --quick)')
    parser.add_argument('--replica-rounds', type=int,
                        help='replica-mode rounds over every configuration '
                             'and client count (default 2, 1 with --quick)')
    parser.add_argument('--replica-port-base', type=int, default=14420,
                        help='the private primary listens on this + 1, the '
                             'standby on + 2')
    parser.add_argument('--separate-cpus', action='store_true',
                        help='replica mode: the placement server on the '
                             'first CPU, both PostgreSQL servers on the '
                             'others (the clients anywhere), as if the '
                             'service and the databases had hosts of their '
                             'own')
    parser.add_argument('--scale', action='store_true',
                        help='scaling mode: ours alone at each --nodes '
                             'size, bulk-loaded straight into the database '
                             '(tools/bench/bulk.py), one table of latency, '
                             'claims/s, memory and database size by size')
    args = parser.parse_args(argv)
    if args.replica and args.backend != 'postgresql':
        parser.error('--replica needs --backend postgresql')
    if args.separate_cpus and not args.replica:
        parser.error('--separate-cpus needs --replica')
    if args.separate_cpus and os.cpu_count() < 2:
        parser.error('--separate-cpus needs at least 2 CPUs')
    if args.mysql_driver != 'pymysql' and args.backend != 'mysql':
        parser.error('--mysql-driver needs --backend mysql')
    if args.scale and (args.replica or args.copy_load):
        parser.error('--scale measures ours alone: no --replica or '
                     '--copy-load')
    if args.fleet != 'nova' and (args.scale or args.replica):
        parser.error('--fleet ironic goes with the side-by-side run only')
    if args.only:
        unknown = set(args.only) - set(PHASES)
        if unknown:
            parser.error('--only: unknown phases %s (choose from %s)' % (
                ', '.join(sorted(unknown)), ', '.join(PHASES)))
        args.skip = [phase for phase in PHASES if phase not in args.only]
    quick = args.quick
    args.nodes = args.nodes or [200 if quick else 1000]
    args.reps = args.reps or (5 if quick else 10)
    args.min_reps = min(args.reps, 3 if quick else 5)
    args.query_budget = args.query_budget or (8 if quick else 20)
    args.scheduler_seconds = args.scheduler_seconds or (5 if quick else 10)
    args.periodic_seconds = args.periodic_seconds or (5 if quick else 10)
    args.bug_timeout = args.bug_timeout or (60 if quick else 120)
    args.bug_reps = 1 if quick else 3
    args.replica_seconds = args.replica_seconds or (5 if quick else 20)
    args.replica_rounds = args.replica_rounds or (1 if quick else 2)
    return args


def _restart(srvs, workers):
    for srv in srvs:
        srv.start(workers)


def load_phase(srvs, data, args):
    loads = {}
    checks = {}
    if args.copy_load:
        return copy_load_phase(srvs, data, args)
    for srv in srvs:
        log('loading %d providers and %d consumers into %s ...' % (
            sum(len(tree) for tree in data.trees), len(data.consumers),
            srv.label))
        loader = dataset.Loader(srv.client, args.load_concurrency)
        started = time.monotonic()
        loader.load(data)
        loads[srv.label] = (time.monotonic() - started, loader.requests)
        checks[srv.label] = dataset.verify(srv.client, data)
        for problem in checks[srv.label]:
            log('!!! %s dataset check: %s' % (srv.label, problem))
        log('  %s loaded in %.1fs' % (srv.label, loads[srv.label][0]))
    return report.load_table(loads, checks)


def copy_load_phase(srvs, data, args):
    """Load ours over the REST API, then copy its database for upstream;
    both are checked against the dataset through their own API."""
    upstream, ours = srvs
    log('loading %d providers and %d consumers into ours ...' % (
        sum(len(tree) for tree in data.trees), len(data.consumers)))
    loader = dataset.Loader(ours.client, args.load_concurrency)
    started = time.monotonic()
    loader.load(data)
    loads = {'ours': (time.monotonic() - started, loader.requests)}
    ours.stop()
    started = time.monotonic()
    upstream.database.copy_from(ours.database)
    copied = time.monotonic() - started
    log('  ours loaded in %.1fs; database copied for upstream in %.1fs' % (
        loads['ours'][0], copied))
    _restart(srvs, LOAD_WORKERS)
    _check_microversions(srvs)
    checks = {}
    for srv in srvs:
        checks[srv.label] = dataset.verify(srv.client, data)
        for problem in checks[srv.label]:
            log('!!! %s dataset check: %s' % (srv.label, problem))
    return (report.load_table(loads, checks) +
            '\n\nUpstream was given a copy of the database ours loaded '
            '(copied in %.0fs); its check above ran through its own API: %s.'
            % (copied, '; '.join(checks['upstream'])
               or 'providers and usages as loaded'))


def _verify_and_time(srvs, queries, args):
    """Every query's answers compared once, then timed interleaved: the
    results and the peak worker RSS of each server during the timing."""
    log('verifying answers (once, without limit) ...')
    results = workload.verify_answers(srvs, queries, log)
    log('timing (interleaved) ...')
    with servers.MemoryMonitor(srvs) as memory:
        workload.measure_latency(srvs, results, args.reps, args.min_reps,
                                 args.query_budget, log)
    return results, ' / '.join('%s %.0f MB' % (label, kb / 1024)
                               for label, kb in memory.peak_kb.items())


def latency_phase(srvs, args):
    queries = (workload.ironic_latency_queries() if args.fleet == 'ironic'
               else workload.latency_queries())
    results, peaks = _verify_and_time(srvs, queries, args)
    return (report.latency_table(results) + '\n\n' +
            report.with_without(results, workload.NOVA_TRAITS_ROW,
                                workload.PLAIN_ROW,
                                'Nova 2026.2\'s required traits (`%s`)'
                                % dataset.NOVA_REQUIRED) +
            '\n\nPeak worker RSS during the latency phase: ' + peaks)


def nova_reads_phase(srvs, data, args):
    """Nova's reads, each answer compared whole between the servers."""
    queries, facts = workload.nova_read_queries(data)
    results, peaks = _verify_and_time(srvs, queries, args)
    return (report.latency_table(results, count='items') + '\n\n' +
            report.NOVA_READS_NOTES % facts +
            '\n\nPeak worker RSS during the phase: ' + peaks)


def bug_phase(srvs, args):
    """The wide-tree shapes of upstream bugs 2070257 and 2126751: ours
    with its defaults, upstream with its defaults and with each of its
    mitigations, every row on a single-worker server started for it
    alone. A configuration that failed a shape skips its other limits."""
    upstream, ours = srvs
    configs = [workload.ServerConfig(ours), workload.ServerConfig(upstream)]
    configs += [workload.ServerConfig(upstream, options)
                for options in workload.UPSTREAM_MITIGATIONS]
    log('wide-tree shapes (a fresh %d-worker server per row) ...'
        % BUG_WORKERS)
    for srv in srvs:
        srv.stop()
    rows = []
    try:
        for shape in workload.bug_shapes():
            failed_at = {}  # configuration name -> limit
            for query in shape:
                query_rows = [workload.BugRow(query, config)
                              for config in configs]
                for row in query_rows:
                    row.failed_at = failed_at.get(row.config.name)
                    if row.failed_at is None and not workload.measure_bug_row(
                            row, args.bug_reps, args.bug_timeout, BUG_WORKERS,
                            args.rss_limit_mb * 1024):
                        failed_at[row.config.name] = query.limit
                    log('  %s, limit=%d, %s: %s' % (
                        query.name, query.limit, row.config.name,
                        report.bug_latency(row, args.bug_timeout)))
                workload.note_count_mismatches(query_rows, log)
                rows += query_rows
    finally:
        for srv in srvs:
            srv.configure()
    _restart(srvs, BUG_WORKERS)
    return report.bug_table(rows, args.bug_timeout)


def scheduler_phase(srvs, args):
    return report.scheduler_table(*scheduler_runs(srvs, args))


def race_phase(srvs, args):
    """The Ironic fleet's scheduler: many clients race for the last free
    nodes of the raced flavour, each until it finds none."""
    path = workload.scheduler_path(
        args.scheduler_limit, args.scheduler_traits,
        'resources=%s:1' % dataset.BAREMETAL_RACED)
    return report.scheduler_table(*scheduler_runs(
        srvs, args, path, [(RACE_WORKERS, RACE_CLIENTS)], until_full=True))


def scheduler_runs(srvs, args, path=None, shapes=None, until_full=False):
    """Every server's scheduler loops (``shapes``: (workers, clients); by
    default every SCHEDULER_WORKERS with every SCHEDULER_CLIENTS), then
    the capacity check of each: ({(workers, clients): {label:
    SchedulerStats}}, {label: problems})."""
    path = path or workload.scheduler_path(args.scheduler_limit,
                                           args.scheduler_traits)
    shapes = shapes or [(workers, clients) for workers in SCHEDULER_WORKERS
                        for clients in SCHEDULER_CLIENTS]
    seconds = args.scheduler_seconds * (RACE_DEADLINE if until_full else 1)
    runs = {}
    started = None
    for workers, clients in shapes:
        if workers != started:
            _restart(srvs, workers)
            started = workers
        runs[(workers, clients)] = {}
        for srv in srvs:
            stats = workload.SchedulerStats(srv.label, workers, clients)
            workload.scheduler_loop(srv, clients, seconds, path, stats,
                                    until_full)
            runs[(workers, clients)][srv.label] = stats
            log('  %d workers %2d clients %-8s %6.1f claims/s, '
                '%d 409s %s, %d 5xx, %d other errors' % (
                    workers, clients, srv.label, stats.throughput,
                    stats.conflicts, stats.conflict_codes or '',
                    stats.server_errors, stats.other_errors))
            for sample in stats.samples:
                log('    sample error: %s' % sample)
            # Requests still queued (clients gave up on them) must not
            # load the machine during the next run.
            srv.start(workers)
    checks = {}
    for srv in srvs:
        checks[srv.label] = workload.capacity_problems(
            srv, [by_label[srv.label] for by_label in runs.values()])
        for problem in checks[srv.label]:
            log('!!! %s: %s' % (srv.label, problem))
    return runs, checks


def periodic_phase(srvs, data, args):
    """nova-compute's periodic reads of every compute node (the roots
    carrying OWNER_NOVA), by 8 and then 32 clients, each server in turn."""
    roots = [tree[0].uuid for tree in data.trees
             if dataset.OWNER_TRAIT in tree[0].traits]
    _restart(srvs, PERIODIC_WORKERS)
    runs = {}
    for clients in PERIODIC_CLIENTS:
        runs[clients] = {}
        for srv in srvs:
            stats = workload.PeriodicStats(srv.label, clients)
            workload.periodic_loop(srv, clients, args.periodic_seconds,
                                   roots, stats)
            runs[clients][srv.label] = stats
            log('  %2d clients %-8s %7.1f req/s, %6.1f trees/s, %d 5xx, '
                '%d other errors' % (
                    clients, srv.label, stats.throughput, stats.tree_rate,
                    stats.server_errors, stats.other_errors))
            for sample in stats.samples:
                log('    sample error: %s' % sample)
    return report.periodic_table(runs) + '\n\n' + (
        report.PERIODIC_NOTES % (len(roots), args.periodic_seconds))


def replica_phase(srvs, pair, args):
    """Candidate reads by 8 and 32 clients for each configuration, in
    rounds (every other round in reverse order), one server up at a time;
    the work each PostgreSQL server did for it."""
    upstream, ours = srvs
    log('waiting for the standby to replay the load ...')
    replayed = pair.wait_replayed([srv.database.name for srv in srvs])
    log('  replayed up to %s in %.1fs; standby restartpoint, minimum '
        'recovery point %s' % (replayed['lsn'], replayed['seconds'],
                               replayed['min_recovery']))
    configs = [replica.Config(ours, False), replica.Config(ours, True),
               replica.Config(upstream, False), replica.Config(upstream, True)]
    path = workload.scheduler_path(args.scheduler_limit)
    for srv in srvs:
        srv.stop()
    windows = []
    for rep in range(args.replica_rounds):
        order = configs if rep % 2 == 0 else configs[::-1]
        for clients in REPLICA_CLIENTS:
            for config in order:
                window = _replica_window(pair, config, clients, path, args)
                windows.append(window)
                stats = window.stats
                log('  round %d %2d clients %-38s %6.1f req/s, %d 5xx, '
                    '%d other errors; xacts primary/standby %d/%d, '
                    'CPU s %.1f/%.1f%s' % (
                        rep + 1, clients, config.name, stats.throughput,
                        stats.server_errors, stats.other_errors,
                        window.xacts['primary'], window.xacts['standby'],
                        window.cpu['primary'], window.cpu['standby'],
                        '' if window.reads is None else
                        '; reads %s' % window.reads))
                for note in window.notes + stats.samples:
                    log('    !!! %s' % note)
    log('pair at the end: %s' % pair.status().replace('\n', '; '))
    return report.replica_table(windows, [c.name for c in configs],
                                REPLICA_CLIENTS, args.replica_seconds)


def _replica_window(pair, config, clients, path, args):
    """Start ``config``'s server alone, warm it up, run the timed reads,
    stop it; the database's work is counted from before the start to the
    end of its sessions, the database servers' CPU over the timed
    reads."""
    srv = config.server
    srv.configure(slave_connection=srv.database.url_at(pair.port['standby'])
                  if config.standby else None,
                  metrics=srv.label == 'ours')
    window = replica.Window(config, clients,
                            workload.ReadStats(srv.label, clients))
    before = pair.settled_stats(srv.database.name)
    log_offset = srv.log_size()
    srv.start(REPLICA_WORKERS)
    for _ in range(2 * REPLICA_WORKERS):
        resp = srv.client.get(path, timeout=120)
        if resp.status != 200:
            window.notes.append('warm-up GET %s %s' % (resp.status,
                                                       resp.body[:200]))
        elif window.candidates is None:
            window.candidates = workload.Query('', path).count(resp.json())
    cpu_before = pair.cpu_seconds()
    service_before = srv.cpu_seconds()
    workload.read_loop(srv, clients, args.replica_seconds, path, window.stats)
    window.service_cpu = srv.cpu_seconds() - service_before
    cpu_after = pair.cpu_seconds()
    window.cpu = {role: cpu_after[role] - cpu_before[role]
                  for role in replica.ROLES}
    if srv.metrics:
        resp = srv.client.get('/metrics')
        if resp.status == 200:
            window.reads = replica.database_reads(resp.body.decode())
        else:
            window.notes.append('GET /metrics %s' % resp.status)
    srv.stop()
    window.settle(before, pair.settled_stats(srv.database.name))
    window.notes += ['server log: %s' % note for note in
                     replica.log_signs(srv.log_since(log_offset))]
    return window


def bulk_load(env, database, nodes, seed):
    """Write the dataset straight into ``database`` with ``env``'s
    interpreter (bulk.py writes through placement.db.bulk_load); the
    summary it prints."""
    return json.loads(subprocess.run(
        [env.python, BULK_SCRIPT, database.url, str(nodes),
         '--seed', str(seed)],
        check=True, stdout=subprocess.PIPE, text=True).stdout)


def scale_size(args, env, nodes):
    """Ours alone at ``nodes``: bulk load, the load check through the API,
    then the latency of workload.scale_queries, the scheduler loops and
    the peak worker RSS over both. {row name: cell} of the scale table;
    a failure ends the size, not the run."""
    workdir = tempfile.mkdtemp(prefix='placement-bench-', dir=_workdir_root())
    database = servers.Database(args.backend, 'bench_scale_%d' % os.getpid(),
                                workdir, env, mysql_driver=args.mysql_driver)
    srv = servers.Server(env, database, args.port_base + 1, workdir,
                         args.max_candidates)
    cells = {}
    try:
        database.create()
        srv.sync_db()
        log('bulk loading %d nodes into ours on %s ...' % (nodes,
                                                           args.backend))
        started = time.monotonic()
        summary = bulk_load(env, database, nodes, args.seed)
        cells['bulk load s (of which ANALYZE)'] = '%.1f (%.1f)' % (
            time.monotonic() - started, summary['analyze_seconds'])
        rows = summary['rows']
        cells['providers / consumers / allocations'] = '%d / %d / %d' % (
            rows['resource_providers'], rows['consumers'], rows['allocations'])
        cells['database size MB'] = '%.0f' % (
            summary['database_bytes'] / 2 ** 20)
        log('  loaded in %s s' % cells['bulk load s (of which ANALYZE)'])
        srv.start(LOAD_WORKERS)
        _check_microversions([srv])
        problems = dataset.verify_totals(srv.client, summary['providers'],
                                         summary['usages'])
        for problem in problems:
            log('!!! ours dataset check: %s' % problem)
        cells['check through the API'] = ('; '.join(problems)[:200] or
                                          'providers and usages as loaded')
        srv.start(LOAD_WORKERS)  # the check's listing must not set the peak
        with servers.MemoryMonitor([srv]) as memory:
            if 'latency' not in args.skip:
                log('timing ...')
                results = [workload.QueryResult(query) for query in
                           workload.scale_queries(summary['rare_roots'][0])]
                workload.measure_latency([srv], results, args.reps,
                                         args.min_reps, args.query_budget,
                                         log)
                for result in results:
                    cells[result.query.name] = report.scale_latency(result)
            if 'scheduler' not in args.skip:
                runs, checks = scheduler_runs([srv], args)
                for (workers, clients), by_label in runs.items():
                    cells['scheduler claims/s, %d workers %d clients' % (
                        workers, clients)] = report.scale_claims(
                            by_label[srv.label])
                cells['capacity check after the scheduler'] = (
                    '; '.join(checks[srv.label])[:200] or
                    'no provider over capacity, usages match claims')
        cells['peak worker RSS MB'] = '%.0f' % (
            memory.peak_kb[srv.label] / 1024)
    except Exception as exc:  # noqa: B902 - the other sizes still run
        log('!!! %d nodes failed:\n%s' % (nodes, traceback.format_exc()))
        log('--- ours server log tail:\n%s' % srv.log_tail())
        cells['failed'] = '%s: %s' % (type(exc).__name__, str(exc)[:200])
    finally:
        servers.stop_all()
        if args.keep:
            log('kept %s and database %s' % (workdir, database.name))
        else:
            database.drop()
            shutil.rmtree(workdir, ignore_errors=True)
    return cells


def scale_mode(args, env):
    """--scale: ours alone at every size, one table with a column each."""
    commit = _commit()
    started = time.monotonic()
    load = os.getloadavg()[0]
    columns = {nodes: scale_size(args, env, nodes) for nodes in args.nodes}
    heading = '### %s: %s, scale mode (ours alone), %s nodes%s' % (
        datetime.date.today().isoformat(), _backend_label(args, False),
        ' / '.join('{:,}'.format(nodes) for nodes in args.nodes),
        ' (quick)' if args.quick else '')
    title = ('Ours alone, bulk-loaded; %d workers for the latency: median ms '
             '(candidates), allocation candidates with limit=1000; scheduler '
             'loop as in the other runs, %gs per run' % (
                 LOAD_WORKERS, args.scheduler_seconds))
    facts = ('Ours at %s; %d reps max per query, seed %d, %d CPUs, load '
             'average %.1f at start; %.0fs in all; microversion %s; times '
             'are client-side.' % (
                 commit, args.reps, args.seed, os.cpu_count(), load,
                 time.monotonic() - started, client.MICROVERSION))
    _publish(args, heading, [(title, report.scale_table(columns))], facts)


def _backend_label(args, with_upstream):
    """The backend a heading names; on MariaDB with the driver of each
    side (upstream's is always PyMySQL)."""
    if args.backend != 'mysql':
        return args.backend
    ours = 'mysql+' + args.mysql_driver
    if not with_upstream or args.mysql_driver == 'pymysql':
        return ours
    return 'mysql (ours %s, upstream mysql+pymysql)' % ours


def _publish(args, heading, sections, facts):
    """Print a run's tables and, with --markdown, record them."""
    body = '\n\n'.join(['#### %s\n\n%s' % (title, text)
                        for title, text in sections] + [facts])
    log('\n%s\n\n%s\n' % (heading, body))
    if args.markdown:
        report.save_markdown(heading, body)
        log('recorded in %s' % report.RESULTS)


def _phase(sections, srvs, title, func, *args):
    """Run one phase into ``sections``; a failure is reported in its place
    (with the servers' log tails) so that the other phases still run."""
    try:
        sections.append((title, func(srvs, *args)))
        return True
    except Exception as exc:  # noqa: B902 - any failure ends only the phase
        log('!!! phase failed: %s\n%s' % (title, traceback.format_exc()))
        for srv in srvs:
            log('--- %s server log tail:\n%s' % (srv.label, srv.log_tail()))
        sections.append((title, '**failed**: %s: %s' % (
            type(exc).__name__, str(exc)[:300])))
        return False


def _check_microversions(srvs):
    """Every request says 1.39: both servers must support it."""
    wanted = tuple(int(part) for part in client.MICROVERSION.split('.'))
    for srv in srvs:
        version = srv.client.expect('GET', '/').json()[
            'versions'][0]['max_version']
        if tuple(int(part) for part in version.split('.')) < wanted:
            log('!!! %s supports only microversion %s, requests use %s' % (
                srv.label, version, client.MICROVERSION))


def _workdir_root():
    """RAM-backed when possible: SQLite then measures placement, not fsync
    latency of the shared disk."""
    shm = '/dev/shm'
    return shm if os.access(shm, os.W_OK) else None


def run_size(args, envs, nodes):
    workdir = tempfile.mkdtemp(prefix='placement-bench-', dir=_workdir_root())
    srvs = []
    databases = []
    sections = []
    pair = None
    try:
        port = None
        if args.replica:
            pair = replica.Pair(os.path.join(workdir, 'pgr'),
                                args.replica_port_base, envs[-1])
            log('starting a PostgreSQL primary and standby on ports %d/%d '
                '...' % (pair.port['primary'], pair.port['standby']))
            pair.start()
            if args.separate_cpus:
                pair.pin(DATABASE_CPUS)
            port = pair.port['primary']
        for offset, env in enumerate(envs):
            database = servers.Database(
                args.backend, 'bench_%s_%d' % (env.label, os.getpid()),
                workdir, env, port, mysql_driver=args.mysql_driver
                if env.label == 'ours' else 'pymysql')
            database.create()
            databases.append(database)
            srv = servers.Server(env, database, args.port_base + offset,
                                 workdir, args.max_candidates)
            if args.separate_cpus:
                srv.cpus = SERVICE_CPUS
            if not (args.copy_load and env.label == 'upstream'):
                srv.sync_db()
            srvs.append(srv)
        # With --copy-load upstream starts once it has its copy.
        loading = [srv for srv in srvs
                   if not (args.copy_load and srv.label == 'upstream')]
        _restart(loading, LOAD_WORKERS)
        _check_microversions(loading)
        data = dataset.Dataset(nodes, args.seed, args.fleet)
        if not _phase(sections, srvs, 'Loading over the REST API (%d workers, '
                      '%d concurrent requests)' % (LOAD_WORKERS,
                                                   args.load_concurrency),
                      load_phase, data, args):
            return sections  # nothing to measure on a partial dataset
        for database in databases:
            database.analyze()
        if args.replica:
            _phase(sections, srvs, 'Replica mode: GET limit=%d by 8 and 32 '
                   'clients, %d workers, %gs per run, %d round%s' % (
                       args.scheduler_limit, REPLICA_WORKERS,
                       args.replica_seconds, args.replica_rounds,
                       '' if args.replica_rounds == 1 else 's'),
                   replica_phase, pair, args)
            return sections
        _measure(sections, srvs, data, args)
    finally:
        servers.stop_all()
        try:
            if not args.keep:
                for database in databases:
                    database.drop()
        finally:
            if pair is not None:
                pair.stop()
            if not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)
            else:
                log('kept %s' % workdir)
    return sections


def _measure(sections, srvs, data, args):
    """The phases of a side-by-side run that --skip leaves in."""
    ironic = args.fleet == 'ironic'
    nova = ', Nova 2026.2\'s traits' if args.scheduler_traits else ''
    if 'latency' not in args.skip:
        _phase(sections, srvs, 'Latency (%d workers, sequential requests)'
               % LOAD_WORKERS, latency_phase, args)
    if 'nova-reads' not in args.skip:
        _phase(sections, srvs, 'Nova reads (%d workers, sequential requests)'
               % LOAD_WORKERS, nova_reads_phase, data, args)
    if 'bug' not in args.skip and ironic:
        log('the Ironic fleet has no wide trees: no bug phase')
    elif 'bug' not in args.skip:
        _phase(sections, srvs, 'Wide-tree shapes of upstream bugs '
               '2070257 and 2126751 (%d worker, a fresh server per row, '
               'timeout %gs)' % (BUG_WORKERS, args.bug_timeout),
               bug_phase, args)
    if 'scheduler' not in args.skip and ironic:
        _phase(sections, srvs, 'Scheduler race for the last %d free %s nodes '
               '(%d workers, %d clients, GET limit=%d%s, PUT first candidate, '
               'retry on 409, each client until none is left)' % (
                   _free_nodes(data, dataset.BAREMETAL_RACED,
                               args.scheduler_traits),
                   dataset.BAREMETAL_RACED, RACE_WORKERS, RACE_CLIENTS,
                   args.scheduler_limit, nova), race_phase, args)
    elif 'scheduler' not in args.skip:
        _phase(sections, srvs, 'Scheduler loop (GET limit=%d%s, PUT first '
               'candidate, retry on 409; %gs per run)' % (
                   args.scheduler_limit, nova, args.scheduler_seconds),
               scheduler_phase, args)
    if 'periodic' not in args.skip:
        _phase(sections, srvs, 'Periodic-task reads (%d workers, %gs per run)'
               % (PERIODIC_WORKERS, args.periodic_seconds), periodic_phase,
               data, args)


def _phases_label(args):
    """What a heading adds when phases were left out or the scheduler
    asked as Nova 2026.2: a partial run must not replace a full one of
    the same size in RESULTS.md."""
    label = ''
    if args.skip:
        label += ', only %s' % ', '.join(
            phase for phase in PHASES if phase not in args.skip)
    if args.scheduler_traits and 'scheduler' not in args.skip:
        label += ', scheduler with Nova 2026.2\'s traits'
    return label


def _free_nodes(data, resource_class, enabled_only):
    """Nodes of ``resource_class`` that no consumer of ``data`` holds
    (``enabled_only``: without COMPUTE_STATUS_DISABLED)."""
    nodes = {tree[0].uuid for tree in data.trees
             if resource_class in tree[0].inventories and not (
                 enabled_only and dataset.DISABLED_TRAIT in tree[0].traits)}
    return len(nodes - {rp for entry in data.consumers for rp in entry[3]})


def _commit():
    """This checkout's commit, marked when the service code differs."""
    def git(*argv):
        return subprocess.run(['git', '-C', environments.REPO] + list(argv),
                              capture_output=True, text=True)
    head = git('rev-parse', '--short', 'HEAD').stdout.strip() or 'unknown'
    if git('diff', '--quiet', 'HEAD', '--', 'placement').returncode:
        head += ' with uncommitted changes to placement/'
    return head


_IMPORT_DRIVER = '''
import sys, sqlalchemy
sqlalchemy.engine.make_url(sys.argv[1]).get_dialect().import_dbapi()
'''


def _check_mysql_driver(env, driver):
    """Stop before any database is made when ours cannot import the
    driver: the db sync would fail with its output captured."""
    try:
        env.run_python(_IMPORT_DRIVER, 'mysql+%s://' % driver)
    except subprocess.CalledProcessError as exc:
        sys.exit('%s cannot use mysql+%s (README.md, "MariaDB drivers", '
                 'says how to install it): %s'
                 % (env.python, driver, exc.stderr.strip().splitlines()[-1]))


def add_side_by_side_arguments(parser, port_base):
    """The options of a bench that ``side_by_side`` runs: where its
    results go, its data's seed, its ports and venvs, what it keeps."""
    parser.add_argument('--markdown', action='store_true',
                        help='also record the tables in '
                             'tools/bench/RESULTS.md')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--port-base', type=int, default=port_base,
                        help='ours listens here, upstream on the next port')
    parser.add_argument('--upstream-venv',
                        help='use this venv instead of the cached one')
    parser.add_argument('--ours-venv', help='use this venv for ours')
    parser.add_argument('--keep', action='store_true',
                        help='keep the databases and the work directory')
    parser.set_defaults(mysql_driver='pymysql', quick=False)


class SideBySide(typing.NamedTuple):
    """What ``side_by_side`` ran: its results per node count, and the
    facts a report states of the run."""
    results: list
    commit: str
    started: float
    load: float


def side_by_side(args, run_size, log):
    """``run_size(args, envs, nodes)`` for each of ``args.nodes``, ours and
    upstream's environments set up first; None when interrupted. The
    servers are stopped either way."""
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)
    envs = [environments.ours(args.ours_venv, log),
            environments.upstream(args.upstream_venv, log)]
    log('\n'.join('%-9s %s' % (env.label + ':', env.python) for env in envs))
    commit = _commit()
    started = time.monotonic()
    load = os.getloadavg()[0]
    try:
        results = [run_size(args, envs, nodes) for nodes in args.nodes]
    except KeyboardInterrupt:
        log('interrupted; servers stopped')
        return None
    finally:
        servers.stop_all()
    return SideBySide(results, commit, started, load)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt('signal %d' % signum)


def main(argv=None):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)
    if args.scale:
        envs = [environments.ours(args.ours_venv, log)]
    else:
        envs = [environments.upstream(args.upstream_venv, log),
                environments.ours(args.ours_venv, log)]
    log('\n'.join('%-9s %s' % (env.label + ':', env.python) for env in envs))
    if args.backend == 'mysql':
        _check_mysql_driver(envs[-1], args.mysql_driver)
    try:
        if args.scale:
            scale_mode(args, envs[0])
            return 0
        for nodes in args.nodes:
            commit = _commit()
            started = time.monotonic()
            load = os.getloadavg()[0]
            sections = run_size(args, envs, nodes)
            heading = '### %s: %s, %d %s%s%s' % (
                datetime.date.today().isoformat(),
                _backend_label(args, True), nodes,
                'Ironic nodes' if args.fleet == 'ironic' else 'nodes',
                ', replica mode' if args.replica else _phases_label(args),
                ' (quick)' if args.quick else '')
            facts = ('Ours at %s; %s, seed %d, %d CPUs, load average '
                     '%.1f at start; %.0fs in all; microversion %s; times '
                     'are client-side%s.' % (
                         commit,
                         'primary and standby PostgreSQL on this machine'
                         + (', the placement server on CPU %s, both '
                            'PostgreSQL servers on CPU %s' % (
                                servers.cpu_list(SERVICE_CPUS),
                                servers.cpu_list(DATABASE_CPUS))
                            if args.separate_cpus else '')
                         if args.replica else
                         '%d reps max per query' % args.reps,
                         args.seed, os.cpu_count(), load,
                         time.monotonic() - started, client.MICROVERSION,
                         '' if args.replica else
                         ', ours/up < 1 means ours is faster'))
            _publish(args, heading, sections, facts)
    except KeyboardInterrupt:
        log('interrupted; servers stopped')
        return 130
    finally:
        servers.stop_all()
    return 0


if __name__ == '__main__':
    sys.exit(main())
