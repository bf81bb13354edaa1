"""A real Prometheus scraping two placement API servers.

Debian's Prometheus (``/usr/bin/prometheus``; tools/integration-deps.sh
installs it) runs on a free port with its data directory in a temporary
directory, scrape and evaluation interval 1 s, and loads
etc/prometheus/placement-rules.yml. It scrapes, as job ``placement``, two
gunicorn servers of 3 workers each, each with its own, empty,
``PROMETHEUS_MULTIPROC_DIR``, ``[metrics] provider_metrics`` and
``aggregate_metrics`` on, a named flavour in ``capacity_flavours`` and a
short capacity cache. Both use one
PostgreSQL database of their own (on the suite's server,
``PLACEMENT_TEST_PG_URL``), reached through a TCP proxy of the test's,
which can cut them off it; the same database is their
``slave_connection``, so that the replica series exist.

The shipped alerts wait (``for:``) minutes before they fire: 15 for the
per-provider usage alerts, 2 for the database one. Rather than wait that
long, or change the shipped file, Prometheus also loads a copy of its
alert group (``placement-alerts-test``) in which only every ``for:`` is
1 s: expressions, thresholds and labels are the shipped ones, and
evaluate the shipped recording rules. The tests wait until an alert fires
in the copy and check that the shipped group has it pending meanwhile.

Checked: a provider filled past 90% of a resource class fires the
per-provider critical alert (for it and that class only); the database
out of reach fires the database alert for both servers, whose scrapes
still succeed; the request counters, summed by Prometheus, count every
request sent to either server, whichever worker answered; and the
capacity series, per resource class and per provider, are what the API
reports in ``/inventories`` and ``/usages``; and every query of the
Grafana dashboard (etc/grafana/placement.json), its variables replaced,
parses and returns series.
"""
import concurrent.futures
import contextlib
import pathlib
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid

from prometheus_client import multiprocess
import pytest
import requests
import sqlalchemy as sa
import yaml

import api_hosts
from conftest import unavailable
import grafana_dashboard
import gunicorn_server

pytestmark = pytest.mark.integration

REPO = pathlib.Path(__file__).resolve().parents[2]
RULES = REPO / 'etc' / 'prometheus' / 'placement-rules.yml'
PROMETHEUS = pathlib.Path('/usr/bin/prometheus')
MULTIPROC_DIR_ENV = 'PROMETHEUS_MULTIPROC_DIR'
# The copy of the shipped alert group, with a short `for:`.
TEST_GROUP = 'placement-alerts-test'
TEST_FOR = '1s'
SHIPPED_GROUP = 'placement-alerts'
WORKERS = 3
# How long a test waits for Prometheus to see a change.
WAIT = 60
HEADERS = {'X-Auth-Token': 'admin',
           'OpenStack-API-Version': 'placement 1.39'}


class TcpProxy:
    """Forwards 127.0.0.1:``port`` to ``target``; ``cut()`` closes every
    connection and closes new ones at once, until ``restore()``."""

    def __init__(self, target):
        self.target = target
        self._listener = socket.create_server(('127.0.0.1', 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets = set()
        self._cut = False
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self):
        with self._lock:
            self._cut = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown(sock)

    def restore(self):
        with self._lock:
            self._cut = False

    def close(self):
        self.cut()
        _shutdown(self._listener)
        self._listener.close()

    def _accept(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._cut:
                client.close()
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._sockets.update((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink),
                                 daemon=True).start()

    def _pump(self, source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            # Wakes the other direction's thread, which closes its end.
            _shutdown(sink)
            _shutdown(source)
            with self._lock:
                self._sockets.discard(source)
            source.close()


def _shutdown(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class Prometheus:
    """/usr/bin/prometheus on a free port of 127.0.0.1, its configuration
    and data in ``workdir``."""

    def __init__(self, workdir, targets, rule_files):
        self.workdir = pathlib.Path(workdir)
        self.port = gunicorn_server.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        config = {
            'global': {'scrape_interval': '1s', 'scrape_timeout': '1s',
                       'evaluation_interval': '1s'},
            'rule_files': [str(path) for path in rule_files],
            'scrape_configs': [{
                'job_name': 'placement',
                'metrics_path': '/metrics',
                'static_configs': [{'targets': list(targets)}],
            }],
        }
        self.config_path = self.workdir / 'prometheus.yml'
        self.config_path.write_text(yaml.safe_dump(config))
        self.log_path = self.workdir / 'prometheus.log'
        self.process = None

    def start(self):
        with open(self.log_path, 'ab') as log:
            self.process = subprocess.Popen(
                [str(PROMETHEUS), '--config.file=%s' % self.config_path,
                 '--storage.tsdb.path=%s' % (self.workdir / 'data'),
                 '--web.listen-address=127.0.0.1:%d' % self.port],
                stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, cwd=self.workdir,
                start_new_session=True)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('prometheus exited with %s:\n%s' % (
                    self.process.returncode, self.log_tail()))
            try:
                if requests.get(self.url + '/-/ready',
                                timeout=2).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError('prometheus not ready within %ss:\n%s'
                           % (WAIT, self.log_tail()))

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log_tail(self, lines=30):
        text = self.log_path.read_text(errors='replace')
        return '\n'.join(text.splitlines()[-lines:])

    def api(self, endpoint, **params):
        response = requests.get('%s/api/v1/%s' % (self.url, endpoint),
                                params=params, timeout=10)
        response.raise_for_status()
        body = response.json()
        assert body['status'] == 'success', body
        return body['data']

    def query(self, expr):
        """{labels (a frozenset of items): value} of an instant query."""
        return {frozenset(row['metric'].items()): float(row['value'][1])
                for row in self.api('query', query=expr)['result']}

    def rule_group(self, name):
        for group in self.api('rules', type='alert')['groups']:
            if group['name'] == name:
                return group
        raise AssertionError('no rule group %s loaded' % name)

    def alert_rule(self, group, alert, severity):
        for rule in self.rule_group(group)['rules']:
            if rule['name'] == alert and (
                    rule['labels'].get('severity') == severity):
                return rule
        raise AssertionError('no %s %s alert in %s' % (
            severity, alert, group))


def wait_for(check, what, timeout=WAIT, describe=None):
    """Call ``check`` until it returns a true value; return that value.
    On timeout, the error shows the last value, or what ``describe()``
    returns."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError('%s: not within %ss (last: %r)'
                         % (what, timeout, describe() if describe else last))


def short_for_copy(path):
    """The shipped alert group as another rules file: ``for:`` shortened,
    the rest as shipped."""
    with open(RULES) as rules_file:
        groups = yaml.safe_load(rules_file)['groups']
    alerts, = [group for group in groups if group['name'] == SHIPPED_GROUP]
    for rule in alerts['rules']:
        if 'for' in rule:
            rule['for'] = TEST_FOR
    alerts['name'] = TEST_GROUP
    path.write_text(yaml.safe_dump({'groups': [alerts]}, sort_keys=False))
    return path


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    if not PROMETHEUS.exists():
        unavailable('%s not found: the tests with a real Prometheus are NOT '
                    'being run (Debian package prometheus; '
                    'tools/integration-deps.sh installs it)' % PROMETHEUS)
    workdir = tmp_path_factory.mktemp('prometheus')
    with contextlib.ExitStack() as stack:
        database = stack.enter_context(api_hosts.postgresql_database())
        url = sa.engine.make_url(database.url)
        proxy = TcpProxy((url.host or '127.0.0.1', url.port or 5432))
        stack.callback(proxy.close)
        proxied = url.set(host='127.0.0.1', port=proxy.port)
        # A named flavour, for the flavour headroom series.
        flavours = workdir / 'flavours'
        flavours.write_text('m1.small resources=VCPU:1,MEMORY_MB:512\n')
        servers = []
        for name in ('api1', 'api2'):
            server = gunicorn_server.placement_server(workdir / name, {
                'placement_database': {
                    'connection': proxied.render_as_string(
                        hide_password=False),
                    # The database as its own "replica" (not a standby:
                    # lag 0), so that the replica series exist.
                    'slave_connection': proxied.render_as_string(
                        hide_password=False),
                    'sync_on_startup': 'false',
                },
                'metrics': {
                    'enabled': 'true',
                    'provider_metrics': 'true',
                    'aggregate_metrics': 'true',
                    'capacity_cache_seconds': '0.5',
                    'capacity_flavours': 'm1.small',
                },
                'capacity': {'flavours_file': str(flavours)},
            }, workers=WORKERS)
            # Each server its own directory, empty at start.
            metrics_dir = workdir / name / 'metrics'
            shutil.rmtree(metrics_dir, ignore_errors=True)
            metrics_dir.mkdir()
            server.env[MULTIPROC_DIR_ENV] = str(metrics_dir)
            server.metrics_dir = metrics_dir
            stack.enter_context(server)
            servers.append(server)
        prometheus = Prometheus(
            workdir, ['127.0.0.1:%d' % server.port for server in servers],
            [RULES, short_for_copy(workdir / 'placement-rules-test.yml')])
        stack.callback(prometheus.stop)
        prometheus.start()
        yield Cloud(servers, proxy, prometheus)


class Cloud:

    def __init__(self, servers, proxy, prometheus):
        self.servers = servers
        self.proxy = proxy
        self.prometheus = prometheus
        self.instances = ['127.0.0.1:%d' % s.port for s in servers]

    def request(self, method, path, server=0, expect=200, headers=None,
                **kwargs):
        response = requests.request(
            method, self.servers[server].url + path,
            headers=dict(HEADERS, **(headers or {})), timeout=30, **kwargs)
        assert response.status_code == expect, (
            method, path, response.status_code, response.text)
        return response.json() if response.content else None

    def provider(self, name, inventories):
        provider = self.request('POST', '/resource_providers',
                                json={'name': name})
        self.request('PUT', '/resource_providers/%s/inventories'
                     % provider['uuid'], server=1, json={
                         'resource_provider_generation':
                             provider['generation'],
                         'inventories': inventories})
        return provider['uuid']

    def allocate(self, provider, resources):
        self.request('PUT', '/allocations/%s' % uuid.uuid4(), expect=204,
                     json={
                         'allocations': {provider: {'resources': resources}},
                         'project_id': str(uuid.uuid4()),
                         'user_id': str(uuid.uuid4()),
                         'consumer_generation': None,
                         'consumer_type': 'INSTANCE'})

    def all_up(self):
        """Both targets scraped, and both read the database."""
        up = self.prometheus.query('up{job="placement"} == 1')
        database = self.prometheus.query(
            'placement_database_up{job="placement"} == 1')
        return len(up) == len(database) == len(self.servers)


def _alerts(rule, state=None, **labels):
    """The alerts of ``rule`` in ``state`` (any) with ``labels``."""
    return [alert for alert in rule['alerts']
            if state in (None, alert['state'])
            and all(alert['labels'].get(k) == v for k, v in labels.items())]


def test_request_counters_add_up_over_workers_and_servers(cloud):
    # A route and microversion no other test asks for: its series
    # start from nothing.
    labels = {'route': '/resource_classes', 'method': 'GET',
              'microversion': '1.7', 'status': '200'}
    count = 60
    sent = [count // 3, count - count // 3]

    def get(index):
        cloud.request('GET', '/resource_classes', server=int(index >= sent[0]),
                      headers={'OpenStack-API-Version': 'placement 1.7'})

    # Several at a time, so that several workers of each server answer.
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(get, range(count)))

    selector = ', '.join('%s="%s"' % item for item in labels.items())
    query = 'sum by (instance) (placement_http_requests_total{%s})' % selector
    expected = {frozenset({'instance': instance}.items()): float(n)
                for instance, n in zip(cloud.instances, sent, strict=True)}
    wait_for(lambda: cloud.prometheus.query(query) == expected,
             'each server counted the requests it answered')
    total = cloud.prometheus.query(
        'sum(placement_http_requests_total{job="placement", %s})' % selector)
    assert list(total.values()) == [float(count)]

    # Every server's count is the sum over its workers, of which more
    # than one answered: each worker's own file in the directory.
    for server, n in zip(cloud.servers, sent, strict=True):
        per_worker = {}
        for path in server.metrics_dir.glob('counter_*.db'):
            for metric in multiprocess.MultiProcessCollector.merge(
                    [str(path)]):
                for sample in metric.samples:
                    if (sample.name == 'placement_http_requests_total'
                            and sample.labels == labels):
                        per_worker[path.name] = sample.value
        assert sum(per_worker.values()) == n, per_worker
        assert len([v for v in per_worker.values() if v]) > 1, per_worker


def test_provider_usage_over_90_percent_fires_the_provider_alert(cloud):
    name = 'prom-full-%s' % uuid.uuid4().hex[:8]
    full = cloud.provider(name, {
        'VCPU': {'total': 20},
        'MEMORY_MB': {'total': 8192, 'reserved': 512},
    })
    # 19 of 20 VCPU: 95%; 1 GiB of 7.5: not even 80%.
    cloud.allocate(full, {'VCPU': 19, 'MEMORY_MB': 1024})
    alert = 'PlacementProviderUsageHigh'

    def fired():
        rule = cloud.prometheus.alert_rule(TEST_GROUP, alert, 'critical')
        firing = _alerts(rule, hostname=name, state='firing')
        shipped = cloud.prometheus.alert_rule(SHIPPED_GROUP, alert,
                                              'critical')
        pending = _alerts(shipped, hostname=name, state='pending')
        return firing and pending and (firing, shipped)

    firing, shipped = wait_for(fired, 'the provider alert fires')
    assert [a['labels']['resourcetype'] for a in firing] == ['VCPU']
    assert float(firing[0]['value']) == pytest.approx(0.95)
    # The shipped alert waits its 15 minutes before firing.
    assert shipped['duration'] == 15 * 60
    assert not _alerts(shipped, hostname=name, state='firing')


def test_capacity_series_match_the_api(cloud):
    idle = cloud.provider('prom-idle-%s' % uuid.uuid4().hex[:8], {
        'VCPU': {'total': 16, 'allocation_ratio': 4.0},
        'MEMORY_MB': {'total': 16384, 'reserved': 1024,
                      'allocation_ratio': 1.5},
        'DISK_GB': {'total': 500, 'reserved': 20},
    })
    cloud.allocate(idle, {'VCPU': 3, 'MEMORY_MB': 2048, 'DISK_GB': 40})

    # What the API says, asked of the other server than the one written.
    providers = cloud.request('GET', '/resource_providers',
                              server=1)['resource_providers']
    per_provider = {}
    per_class = {}
    for provider in providers:
        path = '/resource_providers/%s' % provider['uuid']
        inventories = cloud.request('GET', path + '/inventories')
        usages = cloud.request('GET', path + '/usages', server=1)['usages']
        for rc, inventory in inventories['inventories'].items():
            row = {
                'total': inventory['total'],
                'reserved': inventory['reserved'],
                'allocation_ratio': inventory['allocation_ratio'],
                'usage': usages[rc],
                'generation': inventories['resource_provider_generation'],
            }
            per_provider[provider['name'], rc] = row
            sums = per_class.setdefault(rc, dict.fromkeys(
                ('total', 'reserved', 'capacity', 'used'), 0))
            sums['total'] += row['total']
            sums['reserved'] += row['reserved']
            sums['capacity'] += ((row['total'] - row['reserved'])
                                 * row['allocation_ratio'])
            sums['used'] += row['usage']
    assert len(providers) >= 1 and per_class['VCPU']['used'] >= 3

    def series(metric, *labels):
        """{(instance, label values...): value} of ``metric``."""
        return {(row['instance'],) + tuple(row[label] for label in labels):
                value for row, value in (
                    (dict(key), value) for key, value in
                    cloud.prometheus.query(
                        '%s{job="placement"}' % metric).items())}

    def expected(table, field):
        return {(instance,) + key: float(values[field])
                for instance in cloud.instances
                for key, values in (
                    ((k,) if isinstance(k, str) else k, v)
                    for k, v in table.items())}

    def matches():
        mismatches = []
        for field, metric in (
                ('total', 'openstack_placement_resource_total'),
                ('reserved', 'openstack_placement_resource_reserved'),
                ('allocation_ratio',
                 'openstack_placement_resource_allocation_ratio'),
                ('usage', 'openstack_placement_resource_usage'),
                ('generation', 'openstack_placement_resource_generation')):
            want = expected(per_provider, field)
            got = series(metric, 'hostname', 'resourcetype')
            if not _close(got, want):
                mismatches.append((metric, got, want))
        for field in ('total', 'reserved', 'capacity', 'used'):
            metric = 'placement_resource_%s' % field
            want = expected(per_class, field)
            got = series(metric, 'resource_class')
            if not _close(got, want):
                mismatches.append((metric, got, want))
        return mismatches

    wait_for(lambda: not matches(), 'capacity series as the API says',
             describe=matches)


def _close(got, want):
    return got.keys() == want.keys() and all(
        got[key] == pytest.approx(value) for key, value in want.items())


def test_database_out_of_reach_fires_the_database_alert(cloud):
    wait_for(cloud.all_up, 'both servers scraped and reading the database')
    alert = 'PlacementDatabaseDown'
    cloud.proxy.cut()
    try:
        def fired():
            rule = cloud.prometheus.alert_rule(TEST_GROUP, alert, 'critical')
            firing = _alerts(rule, state='firing')
            shipped = cloud.prometheus.alert_rule(SHIPPED_GROUP, alert,
                                                  'critical')
            pending = _alerts(shipped, state='pending')
            return (len(firing) == len(pending) == len(cloud.servers)
                    and (firing, shipped))

        firing, shipped = wait_for(fired, 'the database alert fires for '
                                   'both servers')
        assert sorted(a['labels']['instance'] for a in firing) == sorted(
            cloud.instances)
        assert shipped['duration'] == 2 * 60
        # The servers still answer their scrapes: not a target down.
        up = cloud.prometheus.query('up{job="placement"}')
        assert sorted(up.values()) == [1.0] * len(cloud.servers)
        # openstack-exporter's gauge says so too.
        down = cloud.prometheus.query(
            'max by (instance) (openstack_placement_up{job="placement"})')
        assert sorted(down.values()) == [0.0] * len(cloud.servers)
        # And their API requests fail rather than hang.
        response = requests.get(cloud.servers[0].url + '/resource_providers',
                                headers=HEADERS, timeout=30)
        assert response.status_code == 503, response.text
    finally:
        cloud.proxy.restore()
    wait_for(cloud.all_up, 'the database back for both servers')
    wait_for(lambda: not _alerts(cloud.prometheus.alert_rule(
        TEST_GROUP, alert, 'critical')), 'the database alert resolved')


def test_every_dashboard_query_returns_series(cloud):
    # What the panels show: a provider in an aggregate, a claim on it,
    # capacity stranded on another, allocation candidates asked of each
    # server (which also checks the replica).
    name = 'prom-dash-%s' % uuid.uuid4().hex[:8]
    provider = cloud.provider(name, {'VCPU': {'total': 8},
                                     'MEMORY_MB': {'total': 4096}})
    generation = cloud.request(
        'GET', '/resource_providers/%s' % provider)['generation']
    cloud.request('PUT', '/resource_providers/%s/aggregates' % provider,
                  json={'aggregates': [str(uuid.uuid4())],
                        'resource_provider_generation': generation})
    cloud.allocate(provider, {'VCPU': 2, 'MEMORY_MB': 512})
    # Memory where the named flavour does not fit: stranded.
    stranded = cloud.provider('prom-stranded-%s' % uuid.uuid4().hex[:8], {
        'VCPU': {'total': 2}, 'MEMORY_MB': {'total': 4096}})
    cloud.allocate(stranded, {'VCPU': 2})
    for server in range(len(cloud.servers)):
        cloud.request('GET', '/allocation_candidates', server=server,
                      params={'resources': 'VCPU:1'})

    queries = grafana_dashboard.queries(grafana_dashboard.committed())
    assert queries

    def results():
        """{(panel, refId): error text, or the number of series}."""
        found = {}
        for title, ref, expr in queries:
            response = requests.get(
                cloud.prometheus.url + '/api/v1/query',
                params={'query': expr}, timeout=10)
            body = response.json()
            if body.get('status') != 'success':
                found[title, ref] = '%s: %s' % (body.get('error'), expr)
            else:
                found[title, ref] = len(body['data']['result'])
        return found

    def failing():
        return {key: value for key, value in results().items()
                if isinstance(value, str) or value < 1}

    # A rate needs two samples of a series in its window: the new series
    # need a few scrapes.
    wait_for(lambda: not failing(), 'every dashboard query returns series',
             describe=failing)
