"""Tables of results, printed and optionally kept in tools/bench/RESULTS.md."""
import math
import os
import re
import statistics

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       'RESULTS.md')
RESULTS_MARKER = '<!-- benchmark results: newest first -->'


def median(values):
    return statistics.median(values) if values else None


def p95(values):
    """Nearest-rank 95th percentile (no interpolation on few samples)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def ms(seconds):
    return '-' if seconds is None else '%.1f' % (seconds * 1000)


def ratio(ours, upstream):
    if not ours or not upstream:
        return '-'
    return '%.2fx' % (ours / upstream)


def table(header, rows):
    """A Markdown pipe table, padded so that it also reads in a terminal."""
    cells = [header] + [[str(cell) for cell in row] for row in rows]
    widths = [max(len(row[col]) for row in cells)
              for col in range(len(header))]

    def line(row):
        return '| ' + ' | '.join(
            cell.ljust(width) for cell, width in zip(row, widths)) + ' |'
    rule = '|' + '|'.join('-' * (width + 2) for width in widths) + '|'
    return '\n'.join([line(cells[0]), rule] + [line(row) for row in cells[1:]])


def _pair(mapping, labels, fmt=str):
    values = [mapping.get(label) for label in labels]
    return ' / '.join('-' if value is None else fmt(value)
                      for value in values)


def load_table(loads, checks):
    """``checks``: {label: problems found comparing it with the dataset}."""
    rows = []
    for label, (seconds, requests) in loads.items():
        problems = checks.get(label)
        rows.append([label, '%.1f' % seconds, requests,
                     '%.0f' % (requests / seconds if seconds else 0),
                     '; '.join(problems)[:200] if problems else
                     'providers and usages as loaded'])
    return table(['server', 'load s', 'requests', 'req/s', 'check'], rows)


def latency_table(results, labels=('upstream', 'ours'), count='candidates'):
    """A row per workload.QueryResult; ``count`` says what its counts
    count."""
    up, ours = labels
    rows = []
    for result in results:
        times = result.seconds
        notes = list(result.problems)
        if result.errors:
            notes.insert(0, 'errors %s' % _pair(result.errors, labels))
        rows.append([
            result.query.name, _pair(result.counts, labels),
            ms(median(times.get(up))), ms(p95(times.get(up))),
            ms(median(times.get(ours))), ms(p95(times.get(ours))),
            ratio(median(times.get(ours)), median(times.get(up))),
            '; '.join(notes)[:160]])
    return table(['query', count + ' up/ours', 'up median ms',
                  'up p95 ms', 'ours median ms', 'ours p95 ms',
                  'ours/up (<1: ours faster)', 'notes'], rows)


def with_without(results, with_name, without_name, what,
                 labels=('upstream', 'ours')):
    """One line: the median of the row ``with_name`` over that of
    ``without_name``, for each server (what ``what`` costs each)."""
    medians = {result.query.name: result.seconds for result in results}
    found = [medians.get(name, {}) for name in (with_name, without_name)]
    return '%s, with / without (`%s` / `%s`), median: %s.' % (
        what, with_name, without_name, '; '.join(
            '%s %s' % (label, ratio(median(found[0].get(label)),
                                    median(found[1].get(label))))
            for label in labels))


NOVA_READS_NOTES = (
    'Each answer is compared whole between the servers once before the '
    'timing (lists in any order): a difference prints `DIFFERENT '
    'answers` with where. Project: the dataset\'s first, '
    '%(project consumers)d consumers; its user owns the same ones (each '
    'project of the dataset has one user). Provider: the compute-node '
    'root with the most consumers, %(provider consumers)d; in_tree: a '
    'tree of %(tree providers)d providers. A microversion in brackets is '
    'the one nova\'s report client sends (1.0: it sends none); the rest '
    'go at 1.39.')


def periodic_table(runs, labels=('upstream', 'ours')):
    """``runs``: {clients: {label: workload.PeriodicStats}}."""
    up, ours = labels
    rows = []
    for clients, by_label in runs.items():
        def field(name, by_label=by_label):
            return {label: getattr(stats, name)
                    for label, stats in by_label.items()}
        rate = field('throughput')
        seconds = field('seconds')
        rows.append([
            clients, _pair(rate, labels, lambda v: '%.1f' % v),
            ratio(rate.get(ours), rate.get(up)),
            _pair(field('tree_rate'), labels, lambda v: '%.1f' % v),
            _pair(field('requests'), labels),
            _pair({label: median(values) for label, values in
                   seconds.items()}, labels, ms),
            _pair({label: p95(values) for label, values in
                   seconds.items()}, labels, ms),
            _pair(field('server_errors'), labels),
            _pair(field('other_errors'), labels),
            '; '.join(sample for stats in by_label.values()
                      for sample in stats.samples)[:160]])
    return table(['clients', 'req/s up/ours', 'ours/up (>1: ours faster)',
                  'trees/s up/ours', 'requests up/ours', 'median ms up/ours',
                  'p95 ms up/ours', '5xx up/ours', 'other errors up/ours',
                  'notes'], rows)


PERIODIC_NOTES = (
    'Each client refreshes its own share of the %d compute nodes in turn, '
    'reading what nova-compute\'s update_available_resource reads of one: '
    '`GET /resource_providers?in_tree=<node>` (1.14), then for every '
    'provider of the tree its inventories (1.0), traits (1.6) and '
    'aggregates (1.19), then the node\'s allocations (1.0); each server '
    'in turn for %gs per run. req/s counts the 200s, trees/s the trees '
    'read without a failure, until the last client returned.')


def bug_latency(row, timeout):
    """The median of a workload.BugRow, or why it has none."""
    times = row.seconds.get(row.label)
    if times:
        return '%s ms' % ms(median(times))
    if row.failed_at is not None:
        return 'not run'
    if row.killed:
        return 'killed'
    if row.label in row.timed_out:
        return '> %g s' % timeout
    return 'error'


def _times_of(seconds, ours):
    """``seconds`` as a multiple of ours' time."""
    return '%.0fx' % (seconds / ours) if seconds >= 10 * ours else (
        '%.1fx' % (seconds / ours))


def bug_table(rows, timeout):
    """``rows``: workload.BugRow of each query and configuration, query by
    query, ours first (the reference of the last column)."""
    reference = {}
    lines = []
    for row in rows:
        query = row.query
        times = row.seconds.get(row.label)
        key = (query.name, query.limit)
        first = key not in reference
        ours = reference.setdefault(key, median(times))
        timed_out = row.label in row.timed_out
        if first or ours is None or not (times or timed_out):
            versus = '-'
        elif times:
            versus = _times_of(median(times), ours)
        else:
            versus = '> ' + _times_of(timeout, ours)
        notes = [] if timed_out and not times else list(row.problems)
        if row.failed_at is not None:
            notes.append('failed at limit=%d of this shape' % row.failed_at)
        if row.killed:
            notes.append('worker grew past --rss-limit-mb')
        lines.append([
            query.name, query.limit, row.config.name,
            bug_latency(row, timeout), len(times) if times else '-',
            '-' if row.count is None else row.count,
            '%.0f' % (row.peak_kb / 1024) if row.peak_kb else '-',
            versus, '; '.join(notes)[:200]])
    return table(['shape', 'limit', 'server, configuration', 'median',
                  'reps', 'candidates', 'peak worker RSS MB',
                  'time / ours\' (>1: ours faster)', 'notes'], lines)


def scheduler_table(runs, checks, labels=('upstream', 'ours')):
    """``runs``: {(workers, clients): {label: SchedulerStats}}."""
    up, ours = labels
    rows = []
    for (workers, clients), by_label in runs.items():
        def field(name, by_label=by_label):
            return {label: getattr(stats, name)
                    for label, stats in by_label.items()}
        claims_s = field('throughput')
        p50 = {label: median(stats.claim_seconds)
               for label, stats in by_label.items()}
        rows.append([
            workers, clients,
            _pair(claims_s, labels, lambda v: '%.1f' % v),
            ratio(claims_s.get(ours), claims_s.get(up)),
            _pair(field('claims'), labels),
            _pair(field('conflicts'), labels),
            _pair(field('server_errors'), labels),
            _pair(field('other_errors'), labels),
            _pair(p50, labels, ms)])
    text = table(['workers', 'clients', 'claims/s up/ours',
                  'ours/up (>1: ours faster)',
                  'claims up/ours', '409s up/ours', '5xx up/ours',
                  'other errors up/ours', 'claim p50 ms up/ours'], rows)
    codes = []
    for label in labels:
        total = {}
        for by_label in runs.values():
            if label in by_label:
                for code, count in by_label[label].conflict_codes.items():
                    total[code] = total.get(code, 0) + count
        codes.append('%s %s' % (label, ', '.join(
            '%s: %d' % item for item in sorted(total.items())) or 'none'))
    verdicts = []
    for label in labels:
        found = checks.get(label)
        if found is None:
            continue
        if not found:
            verdicts.append('%s: no provider over capacity, usages match '
                            'claims' % label)
            continue
        if not any(problem.startswith('OVER CAPACITY') for problem in found):
            found = ['no provider over capacity'] + found
        verdicts.append('%s: %s' % (label, '; '.join(found[:5])))
    return (text + '\n\n409 error codes: ' + ' | '.join(codes) +
            '\n\nCapacity check: ' + ' | '.join(verdicts))


def _share(by_role):
    """The primary's part of {role: amount}, as a percentage."""
    total = sum(by_role.values())
    if not total:
        return '-'
    return '%.1f%%' % (100.0 * by_role['primary'] / total)


def replica_table(windows, configs, client_counts, seconds):
    """``windows``: replica.Window of every run; a row per configuration
    (``configs``: names, in order) and client count, summed over rounds."""
    rows = []
    throughput = {}
    for clients in client_counts:
        for name in configs:
            runs = [window for window in windows
                    if window.config.name == name
                    and window.clients == clients]
            if not runs:
                continue
            latencies = [value for window in runs
                         for value in window.stats.seconds]
            elapsed = sum(window.stats.elapsed for window in runs)
            rate = len(latencies) / elapsed if elapsed else 0.0
            throughput[(name, clients)] = rate
            summed = {}
            for key in ('xacts', 'rows', 'cpu'):
                summed[key] = {role: sum(getattr(window, key)[role]
                                         for window in runs)
                               for role in ('primary', 'standby')}
            reads = {}
            for window in runs:
                for server, count in (window.reads or {}).items():
                    reads[server] = reads.get(server, 0) + count
            service_cpu = sum(window.service_cpu for window in runs)
            database_cpu = sum(summed['cpu'].values())
            primary_only = name.endswith('primary only')
            baseline = throughput.get((runs[0].config.server.label +
                                       ', primary only', clients))
            notes = []
            counts = {window.candidates for window in runs}
            if len(counts) > 1 or None in counts:
                notes.append('candidates %s' % sorted(counts, key=str))
            notes += [note for window in runs for note in window.notes]
            notes += [sample for window in runs
                      for sample in window.stats.samples]
            rows.append([
                name, clients, '%.1f' % rate,
                ' / '.join('%.1f' % window.stats.throughput
                           for window in runs),
                '-' if primary_only else ratio(rate, baseline),
                ms(median(latencies)), ms(p95(latencies)),
                sum(window.stats.server_errors for window in runs),
                sum(window.stats.other_errors for window in runs),
                '%d / %d' % (summed['xacts']['primary'],
                             summed['xacts']['standby']),
                _share(summed['xacts']), _share(summed['rows']),
                _share(summed['cpu']),
                '%.1f / %.1f' % (summed['cpu']['primary'],
                                 summed['cpu']['standby']),
                '%s / %s' % (ms(service_cpu / len(latencies)),
                             ms(database_cpu / len(latencies)))
                if latencies else '-',
                '%d / %d' % (reads.get('primary', 0), reads.get('replica', 0))
                if reads else '-',
                '; '.join(str(note) for note in notes)[:200]])
    text = table(['config', 'clients', 'req/s', 'req/s by round',
                  'vs primary only', 'median ms', 'p95 ms', '5xx',
                  'other errors', 'xacts primary / standby',
                  'primary share (xacts)', 'primary share (rows)',
                  'primary share (CPU)', 'CPU s primary / standby',
                  'CPU ms per read service / database',
                  'reads primary / replica (ours\' metrics)', 'notes'], rows)
    ratios = []
    for clients in client_counts:
        for ours, up in (('ours, primary only', 'upstream, primary only'),
                         ('ours, primary + standby',
                          'upstream, slave_connection = standby')):
            ratios.append('%d clients %s: %s' % (
                clients, 'primary only' if 'only' in ours else 'with standby',
                ratio(throughput.get((ours, clients)),
                      throughput.get((up, clients)))))
    return (text + '\n\nours/upstream req/s (>1: ours faster): ' +
            '; '.join(ratios) + '.\n\n' + REPLICA_NOTES % seconds)


REPLICA_NOTES = (
    'Each run starts the one server measured (the other is stopped) with '
    'or without `[placement_database] slave_connection` = the standby '
    '(replica check interval and maximum lag at their defaults), sends '
    'it 4 warm-up GETs, then the clients repeat the GET for %gs; req/s '
    'counts the 200s until the last client returned. Primary share = '
    'primary / (primary + standby) of the bench database\'s work: xacts '
    '(`xact_commit + xact_rollback` in `pg_stat_database`) and rows '
    '(`tup_returned + tup_fetched`) from before the server started until '
    'its sessions had ended (so they include its start, the warm-up and, '
    'for ours, one `/metrics` scrape); CPU is utime + stime of each '
    'postmaster and its process tree (backends, WAL sender, receiver and '
    'replay, background processes) over the timed reads only; CPU ms per '
    'read divides the placement server\'s CPU (gunicorn master and '
    'workers) and the two database servers\' over the 200s. Reads by '
    'server come from ours\' `placement_database_reads_total`.')


def scale_latency(result):
    """A scaling-mode cell: median ms and candidates, or the errors."""
    times = next(iter(result.seconds.values()), None)
    counts = list(result.limited_counts.values())
    cell = '%s (%s)' % (ms(median(times)), counts[0] if counts else '-')
    if result.errors:
        cell += '; errors %d: %s' % (sum(result.errors.values()),
                                     '; '.join(result.problems)[:80])
    return cell


def scale_claims(stats):
    """A scaling-mode cell: claims/s of a workload.SchedulerStats, and
    its failures other than 409s."""
    cell = '%.1f' % stats.throughput
    for count, what in ((stats.server_errors, '5xx'),
                        (stats.other_errors, 'other errors')):
        if count:
            cell += '; %d %s' % (count, what)
    return cell


def scale_table(columns):
    """``columns``: {nodes: {row name: cell}}; rows in the order they first
    appear, a column per size."""
    names = []
    for cells in columns.values():
        names += [name for name in cells if name not in names]
    return table(['nodes'] + ['{:,}'.format(nodes) for nodes in columns],
                 [[name] + [cells.get(name, '-') for cells in
                            columns.values()] for name in names])


def save_markdown(heading, body):
    """Put a run's section first under the results marker, in place of the
    previous run of its kind (the same heading past the date): the file
    keeps the latest run of each, git history the older ones.
    """
    with open(RESULTS) as results:
        text = results.read()
    head, marker, runs = text.partition(RESULTS_MARKER)
    if not marker:
        head, runs = text.rstrip('\n') + '\n\n', ''
    kept = [run for run in re.split(r'\n(?=### )', runs.strip('\n'))
            if run and _kind(run) != _kind(heading)]
    sections = ['%s\n\n%s' % (heading, body.rstrip('\n'))] + [
        run.rstrip('\n') for run in kept]
    with open(RESULTS, 'w') as results:
        results.write(head + RESULTS_MARKER + '\n\n'
                      + '\n\n'.join(sections) + '\n')


def _kind(section):
    """What a run measured: its heading past the date."""
    return section.split('\n', 1)[0].partition(': ')[2]
