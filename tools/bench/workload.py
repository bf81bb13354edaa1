"""What the benchmark measures: query latency, Nova's reads, the
wide-tree shapes of upstream bugs 2070257 and 2126751, a concurrent
scheduler loop, nova-compute's periodic reads and concurrent candidate
reads, always against both servers alike."""
import itertools
import json
import socket
import threading
import time
import uuid

from client import ConnectionFailed
from client import run_bounded
import dataset
from servers import MemoryMonitor

SIMPLE = 'resources=VCPU:1,MEMORY_MB:1024,DISK_GB:10'
SCHEDULER_PROJECT = dataset.uid('scheduler-project')
SCHEDULER_USER = dataset.uid('scheduler-user')
# The microversions of nova's report client (nova/scheduler/client/
# report.py) for the reads it makes: GET_USAGES_VERSION for quotas (also
# under unified limits), NESTED_PROVIDER_API_VERSION for a provider and
# its tree, traits at 1.6, AGGREGATE_GENERATION_VERSION,
# CONSUMER_GENERATION_VERSION for a consumer's allocations; inventories
# and a provider's allocations without a version, i.e. 1.0.
NOVA_USAGES_AT = '1.9'
NOVA_TREE_AT = '1.14'
NOVA_TRAITS_AT = '1.6'
NOVA_AGGREGATES_AT = '1.19'
NOVA_CONSUMER_AT = '1.28'
NOVA_PLAIN_AT = '1.0'
CONSUMER_TYPES = '1.38'  # the first with consumer_type


class Query:
    """One GET of candidates or providers; ``limited`` is the timed form,
    ``path`` the unlimited one; ``version`` the microversion it is sent
    at (None: client.MICROVERSION)."""

    what = 'candidates'

    def __init__(self, name, path, limit=None, version=None):
        self.name = name
        self.path = path
        self.limit = limit
        self.version = version
        self.limited = path + ('&limit=%d' % limit if limit else '')
        self.key = ('resource_providers' if path.startswith(
            '/resource_providers') else 'allocation_requests')

    def count(self, body):
        return len(body[self.key])

    def normalized(self, body):
        """Order-free form of an answer, to compare the two servers'."""
        if self.key == 'resource_providers':
            return frozenset(rp['uuid'] for rp in body[self.key])
        return frozenset(
            frozenset((rp, rc, amount)
                      for rp, alloc in request['allocations'].items()
                      for rc, amount in alloc['resources'].items())
            for request in body[self.key])


class ReadQuery(Query):
    """A read of Nova's, whose whole answer both servers must give alike
    (lists in any order); ``key`` names what is counted, None for one
    object."""

    what = 'answers'

    def __init__(self, name, path, key, version=None):
        super().__init__(name, path, version=version)
        self.key = key

    def count(self, body):
        return len(body[self.key]) if self.key else 1

    def normalized(self, body):
        return json.dumps(_sorted_json(body), sort_keys=True)


def _sorted_json(value):
    """``value`` with every list sorted: answers are sets in any order."""
    if isinstance(value, dict):
        return {key: _sorted_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted((_sorted_json(item) for item in value),
                      key=lambda item: json.dumps(item, sort_keys=True))
    return value


def first_difference(one, other, path=''):
    """Where two JSON values first differ, shortened for a note."""
    if isinstance(one, dict) and isinstance(other, dict):
        keys = set(one) ^ set(other)
        if keys:
            return '%s keys only in one: %s' % (path or '/', sorted(keys)[:3])
        for key in sorted(one):
            if one[key] != other[key]:
                return first_difference(one[key], other[key],
                                        '%s/%s' % (path, key))
    elif isinstance(one, list) and isinstance(other, list) and (
            len(one) == len(other)):
        for item, other_item in zip(_sorted_json(one), _sorted_json(other)):
            if item != other_item:
                return first_difference(item, other_item, path + '[]')
    return '%s: %s against %s' % (path or '/', json.dumps(one)[:60],
                                  json.dumps(other)[:60])


# The latency rows without and with Nova 2026.2's required traits.
PLAIN_ROW = 'AC simple limit=1000'
NOVA_TRAITS_ROW = PLAIN_ROW + ' + Nova 2026.2 traits'


def latency_queries():
    """The timed queries; every suffix and trait exists in the dataset."""
    ac = '/allocation_candidates?'
    nested = ('resources=DISK_GB:10'
              '&resources_NUMA=VCPU:2,MEMORY_MB:2048'
              '&resources_NIC=SRIOV_NET_VF:1&required_NIC=CUSTOM_PHYSNET_A'
              '&same_subtree=_NUMA,_NIC&group_policy=isolate')
    return [
        Query(PLAIN_ROW, ac + SIMPLE, limit=1000),
        Query('AC simple, no limit', ac + SIMPLE),
        Query('AC required+forbidden traits',
              ac + SIMPLE + '&required=HW_CPU_X86_AVX2,!CUSTOM_MAINTENANCE',
              limit=1000),
        Query(NOVA_TRAITS_ROW, ac + SIMPLE + '&' + dataset.NOVA_REQUIRED,
              limit=1000),
        Query('AC any-of traits (1.39)',
              ac + SIMPLE + '&required=in:CUSTOM_GOLD,CUSTOM_SILVER'
              '&root_required=!CUSTOM_MAINTENANCE', limit=1000),
        Query('AC member_of 2 of 10 aggs',
              ac + SIMPLE + '&member_of=in:%s,%s' % (
                  dataset.az_aggregate(0), dataset.az_aggregate(1)),
              limit=1000),
        Query('AC nested isolate+same_subtree', ac + nested, limit=1000),
        Query('AC sharing DISK_GB:2000',
              ac + 'resources=VCPU:1,MEMORY_MB:1024,DISK_GB:2000', limit=1000),
        Query('GET /resource_providers?resources',
              '/resource_providers?' + SIMPLE),
    ]


def ironic_latency_queries():
    """The timed queries of the Ironic fleet: one bare-metal node of the
    most common flavour, plain, with Nova 2026.2's traits, and in one
    conductor group's aggregate."""
    ac = '/allocation_candidates?resources=%s:1' % dataset.BAREMETAL_COMMON
    return [
        Query(PLAIN_ROW, ac, limit=1000),
        Query(NOVA_TRAITS_ROW, ac + '&' + dataset.NOVA_REQUIRED, limit=1000),
        Query('AC member_of 1 of %d groups' % dataset.IRONIC_GROUPS,
              ac + '&member_of=' + dataset.ironic_aggregate(0), limit=1000),
        Query('GET /resource_providers?resources',
              '/resource_providers?resources=%s:1'
              % dataset.BAREMETAL_COMMON),
    ]


def nova_read_queries(data):
    """Nova's reads of ``data``: a project's usages (with its user, with
    its consumer type) as the quota code asks for them, provider listings
    (all, a tree, an aggregate, a trait), one provider and what nova-compute
    reads of it, one consumer's allocations. The project is the first
    of the dataset's; the provider, the compute-node root with the most
    consumers; the tree, the first with children (Ironic: a node). With
    {fact: number} about them for the table's notes."""
    project = dataset.project_id(0)
    user = dataset.user_id(0)
    roots = [tree[0] for tree in data.trees
             if dataset.OWNER_TRAIT in tree[0].traits]
    tree_root = next((tree[0] for tree in data.trees
                      if len(tree) > 1 and tree[0] in roots), roots[0])
    held = {}
    for _, _, _, request in data.consumers:
        for rp in request:
            held[rp] = held.get(rp, 0) + 1
    busiest = max(roots, key=lambda root: held.get(root.uuid, 0))
    consumer = next(entry[0] for entry in data.consumers
                    if busiest.uuid in entry[3])
    aggregate = next(root.aggregates[0] for root in roots if root.aggregates)
    trait = (dataset.IRONIC_TRAIT if data.fleet == 'ironic'
             else 'CUSTOM_GOLD')
    usages = '/usages?project_id=' + project
    rp = '/resource_providers/' + busiest.uuid
    return [
        # No database, no policy: what any request costs each server.
        ReadQuery('GET / (the floor: no database)', '/', 'versions'),
        ReadQuery('GET /usages?project_id (1.39)', usages, 'usages'),
        ReadQuery('GET /usages?project_id (%s)' % NOVA_USAGES_AT, usages,
                  'usages', NOVA_USAGES_AT),
        ReadQuery('GET /usages?project_id&user_id (%s)' % NOVA_USAGES_AT,
                  usages + '&user_id=' + user, 'usages', NOVA_USAGES_AT),
        ReadQuery('GET /usages?project_id&consumer_type (%s)'
                  % CONSUMER_TYPES, usages + '&consumer_type='
                  + dataset.CONSUMER_TYPE, 'usages', CONSUMER_TYPES),
        ReadQuery('GET /resource_providers (all)', '/resource_providers',
                  'resource_providers'),
        ReadQuery('GET /resource_providers?in_tree (%s)' % NOVA_TREE_AT,
                  '/resource_providers?in_tree=' + tree_root.uuid,
                  'resource_providers', NOVA_TREE_AT),
        ReadQuery('GET /resource_providers?member_of',
                  '/resource_providers?member_of=' + aggregate,
                  'resource_providers'),
        ReadQuery('GET /resource_providers?required=' + trait,
                  '/resource_providers?required=' + trait,
                  'resource_providers'),
        ReadQuery('GET /resource_providers/{uuid} (%s)' % NOVA_TREE_AT, rp,
                  None, NOVA_TREE_AT),
        ReadQuery('GET .../{uuid}/inventories (%s)' % NOVA_PLAIN_AT,
                  rp + '/inventories', 'inventories', NOVA_PLAIN_AT),
        ReadQuery('GET .../{uuid}/traits (%s)' % NOVA_TRAITS_AT,
                  rp + '/traits', 'traits', NOVA_TRAITS_AT),
        ReadQuery('GET .../{uuid}/aggregates (%s)' % NOVA_AGGREGATES_AT,
                  rp + '/aggregates', 'aggregates', NOVA_AGGREGATES_AT),
        ReadQuery('GET .../{uuid}/usages', rp + '/usages', 'usages'),
        ReadQuery('GET .../{uuid}/allocations (%s)' % NOVA_PLAIN_AT,
                  rp + '/allocations', 'allocations', NOVA_PLAIN_AT),
        ReadQuery('GET /allocations/{consumer} (%s)' % NOVA_CONSUMER_AT,
                  '/allocations/' + consumer, 'allocations', NOVA_CONSUMER_AT),
    ], {'project consumers': sum(1 for entry in data.consumers
                                 if entry[1] == project),
        'provider consumers': held.get(busiest.uuid, 0),
        'tree providers': sum(len(tree) for tree in data.trees
                              if tree[0] is tree_root)}


def scale_queries(tree_root, limit=1000):
    """The scaling mode's timed queries: the candidate shapes of
    latency_queries, all with ``limit``; shapes whose answers do not grow
    with the cloud (the 25 nodes of one sharing aggregate, the tree of
    ``tree_root``, the dataset.RARE_TREES trees with dataset.RARE_TRAIT);
    GET /resource_providers?resources, which lists every match."""
    ac = '/allocation_candidates?' + SIMPLE
    queries = []
    listing = []
    for query in latency_queries():
        if query.key == 'resource_providers':
            listing.append(query)
        elif all(query.path != other.path for other in queries):
            queries.append(Query(query.name, query.path, limit=limit))
    return queries + [
        Query('AC member_of 1 sharing agg (%d nodes)'
              % dataset.SHARING_GROUP_SIZE,
              ac + '&member_of=' + dataset.sharing_aggregate(0), limit=limit),
        Query('AC in_tree (1 tree)', ac + '&in_tree=' + tree_root,
              limit=limit),
        Query('AC required rare trait (%d trees)' % dataset.RARE_TREES,
              ac + '&required=' + dataset.RARE_TRAIT, limit=limit),
    ] + listing


def _granular_query(name, resource_class, groups, policy, limit):
    """One unit of ``resource_class`` in each of ``groups`` granular
    groups."""
    path = '/allocation_candidates?%s&group_policy=%s' % ('&'.join(
        'resources%d=%s:1' % (group, resource_class)
        for group in range(1, groups + 1)), policy)
    return Query(name, path, limit=limit)


def bug_2070257_query(limit=10):
    return _granular_query('bug 2070257: %d children x 1-6 units, 6 groups, '
                           'none' % dataset.BUG_CHILDREN, dataset.BUG_CLASS,
                           6, 'none', limit)


def bug_2126751_query(limit):
    """A GPU or PCI host asked for all its 8 devices: 8! = 40,320 of the
    8^8 combinations are candidates."""
    devices = dataset.WIDE_CHILDREN
    return _granular_query('bug 2126751: %d children x 1 unit, %d groups, '
                           'isolate' % (devices, devices), dataset.WIDE_CLASS,
                           devices, 'isolate', limit)


def bug_shapes():
    """The queries of each wide-tree shape, larger limit first."""
    return [[bug_2070257_query()],
            [bug_2126751_query(limit) for limit in (1000, 10)]]


# Upstream 16.0.0's options against bug 2126751: each alone, then both,
# as the workaround's help text recommends.
_OPTIMIZE = {'workarounds': {'optimize_for_wide_provider_trees': True}}
_AT_MOST_1000 = {'placement': {'max_allocation_candidates': 1000}}
UPSTREAM_MITIGATIONS = (_OPTIMIZE, _AT_MOST_1000,
                        {**_OPTIMIZE, **_AT_MOST_1000})
# A fresh worker's first request imports and connects: not the bug's time.
WARM_UP_PATH = '/allocation_candidates?resources=%s:1&limit=1' % (
    dataset.WIDE_CLASS)


class ServerConfig:
    """A server and the options it is started with (none: its defaults,
    with the run's --max-candidates if given)."""

    def __init__(self, server, options=None):
        self.server = server
        self.options = options or {}

    @property
    def name(self):
        settings = ['[%s] %s = %s' % (section, key, value)
                    for section, values in self.options.items()
                    for key, value in values.items()]
        if self.server.max_candidates is not None and (
                'max_allocation_candidates'
                not in self.options.get('placement', {})):
            settings.insert(0, '--max-candidates %d'
                            % self.server.max_candidates)
        return '%s, %s' % (self.server.label,
                           ' + '.join(settings) or 'defaults')


class QueryResult:
    def __init__(self, query):
        self.query = query
        self.seconds = {}       # label -> [latency]
        self.errors = {}        # label -> count of failed requests
        self.counts = {}        # label -> candidates without limit
        self.limited_counts = {}
        self.timed_out = set()  # labels whose request ran past its timeout
        self.problems = []

    def record(self, label, seconds):
        self.seconds.setdefault(label, []).append(seconds)

    def fetch(self, server, path, timeout=None):
        """The 200 response of ``server``, or None with the failure counted
        (the first one of each server is kept for the notes)."""
        try:
            resp = server.client.get(path, timeout=timeout,
                                     version=self.query.version)
        except ConnectionFailed as exc:
            failure = str(exc)
            if isinstance(exc.__cause__, socket.timeout):
                self.timed_out.add(server.label)
        else:
            if resp.status == 200:
                return resp
            failure = '%s %s' % (resp.status,
                                 resp.body[:300].decode(errors='replace'))
        self.errors[server.label] = self.errors.get(server.label, 0) + 1
        if self.errors[server.label] == 1:
            self.problems.append('%s: %s' % (server.label, failure))
        return None

    def compare_counts(self, counts, servers, log, what=''):
        """Note (loudly) servers that disagree on the number of candidates."""
        if len(counts) == len(servers) and len(set(counts.values())) > 1:
            problem = 'COUNT MISMATCH%s %s' % (what, counts)
            self.problems.append(problem)
            log('!!! %s: %s' % (self.query.name, problem))
            return False
        return True


class BugRow(QueryResult):
    """One configuration's answers to one query of a bug shape."""

    def __init__(self, query, config):
        super().__init__(query)
        self.config = config
        self.peak_kb = 0
        self.killed = False     # grew past --rss-limit-mb
        self.failed_at = None   # not run: the limit at which it failed before

    @property
    def label(self):
        return self.config.server.label

    @property
    def count(self):
        return self.limited_counts.get(self.label)


def measure_bug_row(row, reps, timeout, workers, rss_limit_kb):
    """GET the row's query up to ``reps`` times from its server, started
    for it alone with its options and warmed up (so the time and the peak
    RSS are this query's), then stopped (a timed-out worker would keep
    computing). False when a request failed: one failure is enough to
    tell."""
    server = row.config.server
    server.configure(options=row.config.options)
    server.start(workers)
    server.client.expect('GET', WARM_UP_PATH)
    with MemoryMonitor([server], limit_kb=rss_limit_kb) as memory:
        for _ in range(reps):
            resp = row.fetch(server, row.query.limited, timeout=timeout)
            if resp is None:
                break
            row.record(row.label, resp.seconds)
            row.limited_counts[row.label] = row.query.count(resp.json())
    server.stop()
    row.peak_kb = memory.peak_kb[row.label]
    row.killed = row.label in memory.killed
    return not row.errors


def note_count_mismatches(rows, log):
    """Note (loudly) the rows of one query whose count of candidates
    differs from the first row's (ours)."""
    reference = rows[0]
    for row in rows[1:]:
        if None not in (row.count, reference.count) and (
                row.count != reference.count):
            problem = 'COUNT MISMATCH: %d, %s %d' % (
                row.count, reference.config.name, reference.count)
            row.problems.append(problem)
            log('!!! %s limit=%s, %s: %s' % (
                row.query.name, row.query.limit, row.config.name, problem))


def verify_answers(servers, queries, log):
    """Run each query once without limit on every server; compare answers.

    The counts must match; differing candidate sets (or, for Nova's
    reads, any difference in the answer but the order of lists) are
    reported too: both are conformance bugs in one of the servers.
    """
    results = []
    for query in queries:
        result = QueryResult(query)
        answers = {}
        bodies = []
        for server in servers:
            resp = result.fetch(server, query.path)
            if resp is not None:
                bodies.append(resp.json())
                result.counts[server.label] = query.count(bodies[-1])
                answers[server.label] = query.normalized(bodies[-1])
        if (result.compare_counts(result.counts, servers, log)
                and len(answers) == len(servers)
                and len(set(answers.values())) > 1):
            problem = 'same count, DIFFERENT %s' % query.what
            if isinstance(query, ReadQuery):
                problem += ' at ' + first_difference(*bodies[:2])
            result.problems.append(problem)
            log('!!! %s: %s' % (query.name, problem))
        results.append(result)
    return results


def measure_latency(servers, results, reps, min_reps, budget, log):
    """Interleaved timing: upstream, ours, upstream, ours, ...

    A query stops early once it has ``min_reps`` and has used ``budget``
    seconds, so the slow no-limit queries cannot blow the run time.
    """
    for result in results:
        query = result.query
        started = time.monotonic()
        for rep in range(reps):
            for server in servers:
                resp = result.fetch(server, query.limited)
                if resp is None:
                    continue
                result.record(server.label, resp.seconds)
                if rep == 0:
                    result.limited_counts[server.label] = query.count(
                        resp.json())
            if rep + 1 >= min_reps and time.monotonic() - started > budget:
                break
        log('  %-36s %s' % (query.name, '  '.join(
            '%s %d reps' % (label, len(times))
            for label, times in result.seconds.items())))
        result.compare_counts(result.limited_counts, servers, log,
                              ' with limit')
    return results


def first_allocation_request(text):
    """The first entry of ``allocation_requests`` without parsing the rest.

    Responses with limit=1000 run to hundreds of kB; decoding only the first
    object keeps the client's CPU (shared with the servers) out of the way.
    """
    key = text.find('"allocation_requests"')
    if key < 0:
        return None
    start = text.index('[', key) + 1
    while text[start] in ' \n\r\t':
        start += 1
    if text[start] == ']':
        return None
    return json.JSONDecoder().raw_decode(text, start)[0]


class LoopStats:
    """What the client threads of one timed loop saw: failures by kind,
    with the first few distinct ones kept as samples."""

    def __init__(self, label, clients):
        self.label = label
        self.clients = clients
        self.server_errors = 0
        self.other_errors = 0
        self.elapsed = 0.0
        self.samples = []
        self._lock = threading.Lock()

    def note(self, field, sample=None):
        with self._lock:
            setattr(self, field, getattr(self, field) + 1)
            if sample and len(self.samples) < 5 and (
                    sample not in self.samples):
                self.samples.append(sample)

    def failed(self, what, resp):
        """Count a non-200 answer: 5xx as server errors."""
        self.note('server_errors' if resp.status >= 500 else 'other_errors',
                  '%s %s %s' % (what, resp.status, resp.body[:200]))


class SchedulerStats(LoopStats):
    def __init__(self, label, workers, clients):
        super().__init__(label, clients)
        self.workers = workers
        self.claims = 0
        self.conflicts = 0
        self.no_candidates = 0
        self.conflict_codes = {}  # 409 error code -> count
        self.claim_seconds = []
        self.touched = set()  # providers of successful claims
        self.usage = {'consumer_count': 0}  # their 1.38 usages entry

    @property
    def throughput(self):
        return self.claims / self.elapsed if self.elapsed else 0.0

    def conflict(self, code):
        with self._lock:
            self.conflicts += 1
            self.conflict_codes[code] = self.conflict_codes.get(code, 0) + 1

    def claimed_ok(self, seconds, allocations):
        with self._lock:
            self.claims += 1
            self.claim_seconds.append(seconds)
            self.touched.update(allocations)
            dataset.add_usage(self.usage, {
                rp: alloc['resources'] for rp, alloc in allocations.items()})


def _error_code(resp):
    try:
        return resp.json()['errors'][0].get('code', '-')
    except (ValueError, LookupError, TypeError):
        return '-'


def scheduler_path(limit, nova_traits=False, resources=SIMPLE):
    """The scheduler's GET: nova asks for ``limit`` (1000) candidates;
    Nova 2026.2 also for its traits."""
    return '/allocation_candidates?%s&limit=%d%s' % (
        resources, limit, '&' + dataset.NOVA_REQUIRED if nova_traits else '')


def _get(server, path, stats, version=None):
    """``GET path``, or None with the failed connection noted."""
    try:
        return server.client.get(path, timeout=120, version=version)
    except ConnectionFailed as exc:
        stats.note('other_errors', str(exc))
        return None


def _run_clients(one_client, clients, stats):
    """Run ``clients`` threads of ``one_client``; ``stats`` with the time
    until the last one returned."""
    started = time.monotonic()
    run_bounded(one_client, range(clients), clients)
    stats.elapsed = time.monotonic() - started
    return stats


def scheduler_loop(server, clients, duration, path, stats,
                   until_full=False):
    """``clients`` threads: GET candidates (``path``), claim the first,
    retry on 409. ``until_full``: a thread ends at its first answer
    without candidates (a race for the last free ones: ``elapsed`` is
    then the time to fill them)."""
    deadline = time.monotonic() + duration

    def one_client(_):
        attempt_started = time.perf_counter()
        while time.monotonic() < deadline:
            resp = _get(server, path, stats)
            if resp is None:
                continue
            if resp.status != 200:
                stats.failed('GET', resp)
                continue
            request = first_allocation_request(resp.body.decode())
            if request is None:
                stats.note('no_candidates')
                if until_full:
                    return
                time.sleep(0.5)
                continue
            body = {'allocations': request['allocations'],
                    'project_id': SCHEDULER_PROJECT,
                    'user_id': SCHEDULER_USER,
                    'consumer_generation': None,
                    'consumer_type': dataset.CONSUMER_TYPE}
            try:
                put = server.client.put('/allocations/%s' % uuid.uuid4(),
                                        body, timeout=120)
            except ConnectionFailed as exc:
                stats.note('other_errors', str(exc))
                continue
            if put.status == 204:
                stats.claimed_ok(time.perf_counter() - attempt_started,
                                 request['allocations'])
                attempt_started = time.perf_counter()
            elif put.status == 409:
                stats.conflict(_error_code(put))
            else:
                stats.failed('PUT', put)

    return _run_clients(one_client, clients, stats)


class ReadStats(LoopStats):
    def __init__(self, label, clients):
        super().__init__(label, clients)
        self.seconds = []  # latency of each 200

    @property
    def requests(self):
        return len(self.seconds)

    @property
    def throughput(self):
        return self.requests / self.elapsed if self.elapsed else 0.0

    def answered(self, seconds):
        with self._lock:
            self.seconds.append(seconds)


def read_loop(server, clients, duration, path, stats):
    """``clients`` threads repeating ``GET path`` for ``duration`` seconds
    (the requests under way then are waited for and counted)."""
    deadline = time.monotonic() + duration

    def one_client(_):
        while time.monotonic() < deadline:
            resp = _get(server, path, stats)
            if resp is None:
                continue
            if resp.status == 200:
                stats.answered(resp.seconds)
            else:
                stats.failed('GET', resp)

    return _run_clients(one_client, clients, stats)


class PeriodicStats(ReadStats):
    def __init__(self, label, clients):
        super().__init__(label, clients)
        self.trees = 0  # refreshed without a failed read

    @property
    def tree_rate(self):
        return self.trees / self.elapsed if self.elapsed else 0.0

    def refreshed(self):
        with self._lock:
            self.trees += 1


def _read(server, path, version, stats):
    """One read of a periodic refresh: the body, or None with the failure
    counted."""
    resp = _get(server, path, stats, version)
    if resp is None:
        return None
    if resp.status != 200:
        stats.failed('GET', resp)
        return None
    stats.answered(resp.seconds)
    return resp.body


def refresh_tree(server, root, stats):
    """What nova-compute's update_available_resource reads of one compute
    node (its report client's get_provider_tree_and_ensure_root,
    _refresh_and_get_inventory, _refresh_associations and
    get_allocations_for_resource_provider): the tree, then each of its
    providers' inventories, traits and aggregates, then the node's
    allocations. True when every read answered 200."""
    body = _read(server, '/resource_providers?in_tree=' + root, NOVA_TREE_AT,
                 stats)
    if body is None:
        return False
    ok = True
    for rp in json.loads(body)['resource_providers']:
        for part, version in (('inventories', NOVA_PLAIN_AT),
                              ('traits', NOVA_TRAITS_AT),
                              ('aggregates', NOVA_AGGREGATES_AT)):
            ok = _read(server, '/resource_providers/%s/%s' % (
                rp['uuid'], part), version, stats) is not None and ok
    return _read(server, '/resource_providers/%s/allocations' % root,
                 NOVA_PLAIN_AT, stats) is not None and ok


def periodic_loop(server, clients, duration, roots, stats):
    """``clients`` threads, each refreshing its own share of ``roots``
    (compute-node root uuids) in turn, as many nova-computes would, for
    ``duration`` seconds."""
    deadline = time.monotonic() + duration

    def one_client(index):
        mine = roots[index::clients] or [roots[index % len(roots)]]
        for root in itertools.cycle(mine):
            if time.monotonic() >= deadline:
                return
            if refresh_tree(server, root, stats):
                stats.refreshed()

    return _run_clients(one_client, clients, stats)


def capacity_problems(server, runs, concurrency=4):
    """Check, via the API, that no provider the scheduler runs touched is over
    capacity and that the scheduler project's usages equal their claims."""
    touched = set()
    expected = {'consumer_count': 0}
    for stats in runs:
        touched |= stats.touched
        for key, amount in stats.usage.items():
            expected[key] = expected.get(key, 0) + amount
    problems = []
    lock = threading.Lock()

    def check(rp):
        try:
            inventories = server.client.expect(
                'GET', '/resource_providers/%s/inventories' % rp
            ).json()['inventories']
            usages = server.client.expect(
                'GET', '/resource_providers/%s/usages' % rp).json()['usages']
        except (RuntimeError, ConnectionFailed) as exc:
            with lock:
                problems.append('check of %s failed: %s' % (rp, exc))
            return
        for rc, used in usages.items():
            inv = inventories.get(rc)
            if used and (inv is None or used > dataset.capacity(inv)):
                with lock:
                    problems.append('OVER CAPACITY %s %s: used %d of %s' % (
                        rp, rc, used, inv and dataset.capacity(inv)))

    run_bounded(check, sorted(touched), concurrency)
    problems += dataset.usages_problems(server.client, SCHEDULER_PROJECT,
                                        expected)
    return problems
