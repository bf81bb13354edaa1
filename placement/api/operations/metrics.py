"""Prometheus metrics (an extension; off unless ``[metrics] enabled``).

What is measured:

- every API request, by Flask url rule (``route``; ``-`` when no rule
  matches), method, status and microversion (``-`` when the request was
  refused before its version was read): a counter and a latency histogram;
- allocation write attempts that collided with another write, and the
  server-side retries they caused (placement.api.resources.allocations);
- allocation candidate generation: duration, and candidates returned;
- reads by the database server that answered them (primary or replica),
  and the last replica check's lag and verdict (only once a replica was
  checked: a service without one has no replica gauges);
- the database connection pool of this process: size and checked out;
- at scrape time, with one aggregate query: total, reserved, capacity
  ((total - reserved) * allocation_ratio) and used amounts of every
  resource class, and whether that query reached the database;
- if asked (``provider_metrics``, ``aggregate_metrics``), in one more
  statement each: every inventory of every provider under
  openstack-exporter's placement collector names, and capacity and usage
  per aggregate;
- if asked (``capacity_flavours``), the headroom of those named flavours
  as GET /x-capacity/allocation_candidates counts it, under os-capacity's
  names and labels (cloud-wide and per host), per aggregate, and the
  capacity stranded where none of them fits;
- with any of those, what a scrape read serves the scrapes of the next
  ``capacity_cache_seconds`` too.

Processes: prometheus_client keeps numbers per process. When the
``PROMETHEUS_MULTIPROC_DIR`` environment variable names a directory
before the service starts (gunicorn or mod_wsgi with several processes),
every process writes its numbers there and a scrape, answered by any of
them, sums them up; the directory must be empty when the service starts,
and gunicorn should call ``multiprocess.child_exit`` from its
``child_exit`` hook so
that the pool gauges of a dead worker go away. Without the variable, a
scrape reports the answering process only.
"""
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
import dataclasses
import ipaddress
import logging
import math
import threading
import time

from oslo_config import cfg
import prometheus_client
from prometheus_client import core as prometheus_core
from prometheus_client import exposition
from prometheus_client import multiprocess
from prometheus_client import registry as prometheus_registry
from sqlalchemy import event
import sqlalchemy.exc
import webob
from werkzeug import exceptions as http_exceptions
from werkzeug import routing

from placement import exception
from placement import versions
from placement.api.operations import aggregate_names
from placement.api.operations import multiprocess as processes
from placement.api.pipeline import errors
from placement.api.pipeline import microversion
from placement.api.pipeline.wsgi_types import Body
from placement.api.pipeline.wsgi_types import StartResponse
from placement.api.pipeline.wsgi_types import WSGIApplication
from placement.api.pipeline.wsgi_types import WSGIEnvironment
from placement.candidates import capacity as capacity_core
from placement.candidates import sql as candidates_sql
from placement.db import capacity_metrics
from placement.db import replica as replica_db
from placement.db import session

LOG = logging.getLogger(__name__)

# Label value for a request without a matching rule or a parsed version.
UNKNOWN = '-'
# Any other method is counted as OTHER: clients choose it, and every label
# value is a new series.
_METHODS = frozenset(('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE',
                      'OPTIONS'))

# No *_created series: they double the output and say when a process
# started, which process_start_time_seconds already does.
prometheus_client.disable_created_metrics()
# This process's metrics; in multiprocess mode their values live in files
# and a scrape reads those instead.
_REGISTRY = prometheus_registry.CollectorRegistry()

_REQUEST_LABELS = ('route', 'method', 'status', 'microversion')
REQUESTS = prometheus_client.Counter(
    'placement_http_requests',
    'API requests answered, by url rule, method, status and microversion.',
    _REQUEST_LABELS, registry=_REGISTRY)
REQUEST_SECONDS = prometheus_client.Histogram(
    'placement_http_request_duration_seconds',
    'Time from receiving an API request to starting its response.',
    _REQUEST_LABELS, registry=_REGISTRY,
    buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30))
ALLOCATION_CONFLICTS = prometheus_client.Counter(
    'placement_allocation_write_conflicts',
    'Allocation write attempts that collided with another write (a '
    'deadlock, a certification failure, a consumer changed meanwhile).',
    registry=_REGISTRY)
ALLOCATION_RETRIES = prometheus_client.Counter(
    'placement_allocation_write_retries',
    'Allocation writes the server ran again after such a conflict (the '
    'others were answered 409).', registry=_REGISTRY)
CANDIDATE_SECONDS = prometheus_client.Histogram(
    'placement_allocation_candidates_duration_seconds',
    'Time spent generating the allocation candidates of a request.',
    registry=_REGISTRY,
    buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60))
CANDIDATES_RETURNED = prometheus_client.Histogram(
    'placement_allocation_candidates_returned',
    'Allocation candidates returned by a request.', registry=_REGISTRY,
    buckets=(0, 1, 10, 50, 100, 500, 1000, 5000, 10000, 50000))
DB_POOL_SIZE = prometheus_client.Gauge(
    'placement_db_pool_size',
    'Connections the database pool keeps open (summed over processes).',
    registry=_REGISTRY, multiprocess_mode='livesum')
DB_POOL_CHECKED_OUT = prometheus_client.Gauge(
    'placement_db_pool_checked_out',
    'Database connections in use (summed over processes).',
    registry=_REGISTRY, multiprocess_mode='livesum')
DATABASE_READS = prometheus_client.Counter(
    'placement_database_reads',
    'Reads of API requests, by the server that answered them: primary, '
    'or replica ([placement_database] slave_connection).', ['server'],
    registry=_REGISTRY)
# The replica gauges: made at the first replica check, so that a service
# without a replica exports none (a gauge exists, at 0, from its creation
# on; "replica not usable" would then be what every such service says).
_REPLICA_GAUGES: list[prometheus_client.Gauge] = []
_REPLICA_GAUGES_LOCK = threading.Lock()


def database_read(server: str) -> None:
    """placement.db.session.Database ``on_read`` hook."""
    DATABASE_READS.labels(server).inc()


def replica_checked(check: replica_db.Check) -> None:
    """placement.db.replica.Replica ``on_check`` hook."""
    lag, usable = _replica_gauges()
    lag.set(math.nan if check.lag is None else check.lag)
    usable.set(1 if check.healthy else 0)


def _replica_gauges() -> list[prometheus_client.Gauge]:
    """(lag, usable), created on first use."""
    with _REPLICA_GAUGES_LOCK:
        if not _REPLICA_GAUGES:
            _REPLICA_GAUGES.extend((
                prometheus_client.Gauge(
                    'placement_replica_lag_seconds',
                    'Replica lag found by the last check (NaN when it '
                    'could not be read).',
                    registry=_REGISTRY, multiprocess_mode='livemostrecent'),
                prometheus_client.Gauge(
                    'placement_replica_usable',
                    'Whether the last check let reads go to the replica '
                    '(1) or not (0).',
                    registry=_REGISTRY, multiprocess_mode='livemostrecent'),
            ))
        return _REPLICA_GAUGES


class candidate_generation:
    """Times a candidate search; ``found(n)`` records its result size.

        with metrics.candidate_generation() as generation:
            result = ...
            generation.found(len(result.candidates))
    """

    def __enter__(self) -> 'candidate_generation':
        self._start = time.perf_counter()
        return self

    def found(self, count: int) -> None:
        CANDIDATES_RETURNED.observe(count)

    def __exit__(self, *_exc: object) -> None:
        CANDIDATE_SECONDS.observe(time.perf_counter() - self._start)


def instrument(app: WSGIApplication, url_map: routing.Map,
               engine: sqlalchemy.engine.Engine) -> WSGIApplication:
    """Wrap the API pipeline ``app`` to measure its requests, and count
    the connections ``engine`` hands out.
    """
    _watch_pool(engine)
    return _RequestMetrics(app, url_map)


class _RequestMetrics:

    def __init__(self, app: WSGIApplication, url_map: routing.Map) -> None:
        self.app = app
        self.url_map = url_map

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Body:
        start = time.perf_counter()

        def measured_start_response(status, headers, exc_info=None):
            self._observe(environ, status[:3], start)
            return start_response(status, headers, exc_info)

        try:
            return self.app(environ, measured_start_response)
        except Exception:
            self._observe(environ, '500', start)
            raise

    def _observe(self, environ, status, start):
        version = environ.get(microversion.ENVIRON_KEY)
        method = environ.get('REQUEST_METHOD')
        labels = (self._route(environ),
                  method if method in _METHODS else 'OTHER',
                  status, str(version) if version else UNKNOWN)
        REQUESTS.labels(*labels).inc()
        REQUEST_SECONDS.labels(*labels).observe(time.perf_counter() - start)

    def _route(self, environ):
        """The url rule the path matches (whatever the method), or '-'.

        Matched here rather than read from Flask, so that requests that
        authentication refused have their route too.
        """
        adapter = self.url_map.bind_to_environ(environ)
        try:
            rule, _args = adapter.match(return_rule=True)
        except http_exceptions.MethodNotAllowed as exc:
            rule, _args = adapter.match(
                method=sorted(exc.valid_methods or ())[0], return_rule=True)
        except http_exceptions.HTTPException:
            return UNKNOWN
        return rule.rule


def _watch_pool(engine):
    pool = engine.pool
    size = getattr(pool, 'size', None)
    if size is not None:
        DB_POOL_SIZE.set(size())
    if not event.contains(engine, 'checkout', _checked_out):
        event.listen(engine, 'checkout', _checked_out)
        event.listen(engine, 'checkin', _checked_in)


def _checked_out(_dbapi_connection, _record, _proxy):
    DB_POOL_CHECKED_OUT.inc()


def _checked_in(_dbapi_connection, _record):
    DB_POOL_CHECKED_OUT.dec()


class Endpoint:
    """GET [metrics]path: the metrics, to clients of allowed networks."""

    def __init__(self, conf: cfg.ConfigOpts,
                 engine: sqlalchemy.engine.Engine) -> None:
        self._networks = allowed_networks(conf.metrics.allowed_networks)
        self._database = _DatabaseCollector(
            engine, providers=conf.metrics.provider_metrics,
            aggregates=conf.metrics.aggregate_metrics,
            flavours=_named_flavours(conf),
            names=aggregate_names.NamesFile(
                conf.metrics.aggregate_names_file),
            cache_seconds=conf.metrics.capacity_cache_seconds)

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Body:
        if not self._allowed(environ.get('REMOTE_ADDR', '')):
            return errors.Forbidden(
                'Metrics are not available to this address.').to_wsgi(
                    environ)(environ, start_response)
        encode, content_type = exposition.choose_encoder(
            environ.get('HTTP_ACCEPT', ''))
        response = webob.Response(body=encode(self._registry()),
                                  content_type=None)
        response.headers['Content-Type'] = content_type
        response.cache_control = 'no-store'
        return response(environ, start_response)

    def _allowed(self, address):
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        mapped = getattr(ip, 'ipv4_mapped', None)
        return any((mapped or ip) in network for network in self._networks)

    def _registry(self):
        registry = prometheus_registry.CollectorRegistry()
        directory = processes.directory()
        if directory:
            multiprocess.MultiProcessCollector(registry, path=directory)
        else:
            registry.register(_REGISTRY)
            prometheus_client.ProcessCollector(registry=registry)
        registry.register(self._database)
        return registry


def _named_flavours(conf: cfg.ConfigOpts) -> list[capacity_core.Flavour]:
    """The flavours of [metrics] capacity_flavours, from [capacity]
    flavours_file, read at the latest microversion; a name the file does
    not have, or a query GET /allocation_candidates would refuse, stops
    the service from starting (ValueError naming it)."""
    names = [name.strip() for name in conf.metrics.capacity_flavours
             if name.strip()]
    if not names:
        return []
    path = conf.capacity.flavours_file
    if not path:
        raise ValueError('[metrics] capacity_flavours needs [capacity] '
                         'flavours_file')
    try:
        with open(path, encoding='utf-8') as source:
            queries = dict(capacity_core.flavours_from_lines(source))
    except (OSError, ValueError) as exc:
        raise ValueError('[capacity] flavours_file %s: %s' % (path, exc))
    for name in names:
        if name not in queries:
            raise ValueError('[metrics] capacity_flavours: no flavour %s in '
                             '%s' % (name, path))
    try:
        return capacity_core.parse_flavours(
            [(name, queries[name]) for name in names], versions.MAX_VERSION)
    except exception.PlacementError as exc:
        raise ValueError('[metrics] capacity_flavours: %s' % exc)


def allowed_networks(cidrs: list[str]) -> list[
        ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """[metrics]allowed_networks as ip_network objects; a bad entry stops
    the service from starting (ValueError naming it).
    """
    networks = []
    for cidr in cidrs:
        try:
            networks.append(ipaddress.ip_network(cidr.strip(), strict=False))
        except ValueError as exc:
            raise ValueError('[metrics] allowed_networks: %s' % exc) from None
    return networks


@dataclasses.dataclass(frozen=True)
class _Capacity:
    """What one scrape read from the database; ``providers``,
    ``aggregates`` and ``flavours`` are None when their series are off.
    ``host_aggregates``: the aggregates of each host (root provider id),
    read only when aggregate_names_file gives zones or project filters."""
    classes: list[capacity_metrics.ClassCapacity]
    providers: list[capacity_metrics.ProviderCapacity] | None
    aggregates: list[capacity_metrics.AggregateCapacity] | None
    flavours: capacity_core.Answer | None = None
    host_aggregates: dict[int, list[str]] = dataclasses.field(
        default_factory=dict)


class _DatabaseCollector:
    """Capacity read from the database at scrape time (the same for every
    process, so never kept in the metric files): per resource class
    always; per provider (openstack-exporter's names), per aggregate and
    the headroom of named flavours (os-capacity's names) when asked.

    With any of the latter, one read serves the scrapes of
    ``cache_seconds``: those are larger, and every scraper of every
    process would otherwise read them again. Failed reads are not kept.
    """

    _GAUGES = (
        ('total', 'placement_resource_total',
         'Inventory total of a resource class over all providers.'),
        ('reserved', 'placement_resource_reserved',
         'Reserved amount of a resource class over all providers.'),
        ('capacity', 'placement_resource_capacity',
         'Allocatable amount of a resource class over all providers: '
         '(total - reserved) * allocation_ratio.'),
        ('used', 'placement_resource_used',
         'Allocated amount of a resource class over all providers.'),
    )
    # openstack-exporter's placement collector: its names, labels and
    # help texts, so that what was built on it keeps working.
    _EXPORTER_LABELS = ['hostname', 'resourcetype']
    _EXPORTER_GAUGES = (
        ('total', 'openstack_placement_resource_total', 'resource_total'),
        ('allocation_ratio', 'openstack_placement_resource_allocation_ratio',
         'resource_allocation_ratio'),
        ('generation', 'openstack_placement_resource_generation',
         'resource_generation'),
        ('reserved', 'openstack_placement_resource_reserved',
         'resource_reserved'),
        ('used', 'openstack_placement_resource_usage', 'resource_usage'),
    )
    _AGGREGATE_GAUGES = (
        ('capacity', 'placement_aggregate_resource_capacity',
         'Allocatable amount of a resource class over the members of an '
         'aggregate: (total - reserved) * allocation_ratio.'),
        ('used', 'placement_aggregate_resource_used',
         'Allocated amount of a resource class over the members of an '
         'aggregate.'),
    )

    # os-capacity's names, labels and help texts, so that its dashboards
    # and alerts keep working.
    _OS_CAPACITY_TOTAL = (
        'openstack_free_capacity_by_flavor_total',
        'Free capacity if you fill the cloud full of each flavor')
    _OS_CAPACITY_HOST = (
        'openstack_free_capacity_hypervisor_by_flavor',
        'Free capacity for each hypervisor if you fill remaining space '
        'full of each flavor')
    _OS_CAPACITY_HOST_LABELS = ['hypervisor', 'flavor_name', 'az_aggregate',
                                'project_aggregate']

    def __init__(self, engine: sqlalchemy.engine.Engine, *,
                 providers: bool = False, aggregates: bool = False,
                 flavours: Sequence[capacity_core.Flavour] = (),
                 names: aggregate_names.NamesFile | None = None,
                 cache_seconds: float = 0) -> None:
        self._database = session.Database(engine)
        self._providers = providers
        self._aggregates = aggregates
        self._flavours = list(flavours)
        self._names = names or aggregate_names.NamesFile(None)
        self._cache_seconds = cache_seconds if (
            providers or aggregates or flavours) else 0
        self._lock = threading.Lock()
        self._cached: _Capacity | None = None
        self._read_at = 0.0

    def collect(self) -> Iterator[prometheus_core.Metric]:
        capacity = self._capacity()
        up = 0 if capacity is None else 1
        yield prometheus_core.GaugeMetricFamily(
            'placement_database_up',
            'Whether the capacity query of this scrape reached the database.',
            value=up)
        if self._providers:
            yield prometheus_core.GaugeMetricFamily(
                'openstack_placement_up', 'up', value=up)
        if capacity is None:
            return
        for field, name, documentation in self._GAUGES:
            family = prometheus_core.GaugeMetricFamily(
                name, documentation, labels=['resource_class'])
            for row in capacity.classes:
                family.add_metric([row.resource_class], getattr(row, field))
            yield family
        if capacity.providers is not None:
            for field, name, documentation in self._EXPORTER_GAUGES:
                family = prometheus_core.GaugeMetricFamily(
                    name, documentation, labels=self._EXPORTER_LABELS)
                for inventory in capacity.providers:
                    family.add_metric(
                        [inventory.provider_name, inventory.resource_class],
                        getattr(inventory, field))
                yield family
        if capacity.aggregates is not None:
            for field, name, documentation in self._AGGREGATE_GAUGES:
                family = prometheus_core.GaugeMetricFamily(
                    name, documentation,
                    labels=['aggregate', 'resource_class'])
                for sums in capacity.aggregates:
                    family.add_metric(
                        [sums.aggregate_uuid, sums.resource_class],
                        getattr(sums, field))
                yield family
        if capacity.flavours is not None:
            yield from self._flavour_families(capacity)

    def _flavour_families(self, capacity: _Capacity
                          ) -> Iterator[prometheus_core.Metric]:
        answer = capacity.flavours
        assert answer is not None
        total = prometheus_core.GaugeMetricFamily(
            *self._OS_CAPACITY_TOTAL, labels=['flavor_name'])
        per_host = prometheus_core.GaugeMetricFamily(
            *self._OS_CAPACITY_HOST, labels=self._OS_CAPACITY_HOST_LABELS)
        per_aggregate = prometheus_core.GaugeMetricFamily(
            'placement_capacity_aggregate_fit',
            'How many more instances of a named flavour fit on the hosts '
            'of an aggregate (aggregate_name from aggregate_names_file, '
            'else its uuid).',
            labels=['aggregate', 'aggregate_name', 'flavor_name'])
        named = self._names.aggregates()
        host_labels = {}
        for flavour in answer.flavours:
            total.add_metric([flavour.name], flavour.fit)
            # As os-capacity: hosts where none fits have no series.
            for host in flavour.hosts:
                if host.root not in host_labels:
                    host_labels[host.root] = _os_capacity_labels(
                        capacity.host_aggregates.get(host.root, ()), named)
                per_host.add_metric(
                    [host.name, flavour.name, *host_labels[host.root]],
                    host.fit)
            for aggregate, fit in flavour.aggregates:
                known = named.get(aggregate)
                per_aggregate.add_metric(
                    [aggregate, known.name if known else aggregate,
                     flavour.name], fit)
        yield from (total, per_host, per_aggregate)
        stranded = prometheus_core.GaugeMetricFamily(
            'placement_capacity_stranded',
            'Free units of a resource class on the hosts where none of '
            'the named flavours fits even once.',
            labels=['resource_class'])
        stranded_hosts = prometheus_core.GaugeMetricFamily(
            'placement_capacity_stranded_hosts',
            'Hosts where none of the named flavours fits even once that '
            'have free units of a resource class.',
            labels=['resource_class'])
        for resource_class, free, hosts in answer.stranded:
            stranded.add_metric([resource_class], free)
            stranded_hosts.add_metric([resource_class], hosts)
        yield from (stranded, stranded_hosts)

    def _capacity(self) -> _Capacity | None:
        """The last read if younger than the cache time, else a new one
        (None if the database did not answer). Concurrent scrapes of a
        process wait for one read rather than each making their own."""
        with self._lock:
            if (self._cached is not None and time.monotonic()
                    < self._read_at + self._cache_seconds):
                return self._cached
            try:
                capacity = self._database.read(self._read)
            except sqlalchemy.exc.SQLAlchemyError as exc:
                LOG.warning('Metrics: cannot read capacity: %s', exc)
                self._cached = None
                return None
            self._cached, self._read_at = capacity, time.monotonic()
            return capacity

    def _read(self, conn: sqlalchemy.Connection) -> _Capacity:
        flavours = None
        host_aggregates: dict[int, list[str]] = {}
        if self._flavours:
            try:
                flavours = capacity_core.count(conn, self._flavours)
            except exception.PlacementError as exc:
                # A class or trait a flavour names and the cloud does not
                # (yet) have: the other series still go out.
                LOG.warning('Metrics: cannot count capacity_flavours: %s',
                            exc)
            if any(aggregate.availability_zone or aggregate.project_filter
                   for aggregate in self._names.aggregates().values()):
                for root, aggregate in candidates_sql.root_aggregates(conn):
                    host_aggregates.setdefault(root, []).append(aggregate)
        return _Capacity(
            capacity_metrics.by_resource_class(conn),
            capacity_metrics.by_provider(conn) if self._providers else None,
            capacity_metrics.by_aggregate(conn) if self._aggregates
            else None, flavours, host_aggregates)


def _os_capacity_labels(
        aggregates: Iterable[str],
        named: dict[str, aggregate_names.Aggregate]) -> tuple[str, str]:
    """(az_aggregate, project_aggregate) of a host in ``aggregates``, as
    os-capacity gives them from Nova's aggregates: the availability zone
    of one (the last by uuid, as its hosts are in one zone), the name of
    its project-filtering aggregate or "multiple"; "" for none."""
    zone, projects = '', []
    for uuid in sorted(aggregates):
        aggregate = named.get(uuid)
        if aggregate is None:
            continue
        zone = aggregate.availability_zone or zone
        if aggregate.project_filter:
            projects.append(aggregate.name)
    project = (aggregate_names.MULTIPLE if len(projects) > 1
               else ''.join(projects))
    return zone, project
