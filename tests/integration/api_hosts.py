"""Several placement API hosts behind HAProxy, each in a network namespace
of its own: a multi-host deployment on one machine.

``Topology(workdir, database, hosts=3)`` is a context manager that builds,
and afterwards tears down whatever happened (a failure half-way included):

- a Linux bridge ``phb-SUFFIX`` in the root namespace, at 10.213.X.1/24
  (X picked at random among the /24s that no address or route uses; SUFFIX
  is random, so leftovers of a crashed run never collide with a new one);
- per host i (1, 2, ...) a namespace ``ptest-hosts-PID-SUFFIX-hI`` with its
  loopback up and one end of a veth pair, ``phnI-SUFFIX`` at 10.213.X.(10+i);
  the other end, ``phvI-SUFFIX``, is a port of the bridge;
- in each namespace gunicorn serving placement on ADDRESS:8778
  (``ip netns exec NS gunicorn ...``), configured in ``workdir/hostI``;
- one HAProxy in the root namespace: HTTP on 127.0.0.1:<free port>
  (``Topology.url``) in front of the hosts, configured from the operators'
  sample etc/haproxy-placement.cfg with test settings (``proxy_config``:
  servers ``host1``..., an ``X-Served-By`` header naming the host that
  answered, checks every 500 ms, one log line per request); and TCP
  listeners ``db-hI-N`` on the bridge address, one per host and database
  server that host uses, forwarding to the server on 127.0.0.1: a
  namespace cannot reach the root namespace's loopback, and a host's own
  listeners let a test cut that host alone off its database.

Without network namespaces (``ip netns add`` fails: not root) each host is
instead a loopback address 127.X.Y.(10+i) in the root namespace, its
database listeners on 127.0.0.1, with a warning;
``PLACEMENT_TEST_API_HOSTS_LOOPBACK=1`` forces that.

``Database`` is what the hosts use: ``galera_database(galera)`` (host i on
Galera node i, ``mysql_wsrep_sync_wait = 1``) and ``postgresql_database()``
(a ``ptest_hosts_<hex>`` database on the system server) are context
managers yielding a migrated one, dropped afterwards; ``DATABASES`` maps
names to them. Another backend is one more such function.

``Host.kill()`` SIGKILLs a host's gunicorn (master and workers),
``Host.start()`` starts it again; ``Topology.cut_database(host)`` closes
that host's database connections and refuses it new ones (at its
listeners) until ``Topology.restore_database(host)``;
``Topology.server_states()`` is HAProxy's view of the hosts,
``Topology.server_stats()`` its whole ``show stat`` row per host, and
``Topology.proxy_log()`` its log, one ``LogLine`` per request.
``leftovers(tag)`` lists namespaces and links of ours still there.
"""
import contextlib
import dataclasses
import ipaddress
import json
import os
import pathlib
import random
import re
import secrets
import signal
import socket
import subprocess
import time
import uuid
import warnings

import requests
import sqlalchemy as sa

from placement.db import engine as db_engine
from placement.db import migration

import conftest
from conftest import make_conf
from conftest import unavailable
import gunicorn_server

HAPROXY = pathlib.Path('/usr/sbin/haproxy')
SAMPLE_CONFIG = (pathlib.Path(__file__).resolve().parents[2]
                 / 'etc' / 'haproxy-placement.cfg')
API_PORT = 8778
APP = 'placement.wsgi.api:application'
LOOPBACK_VARIABLE = 'PLACEMENT_TEST_API_HOSTS_LOOPBACK'
# Where the bridge's /24 is picked (10.213.X.0/24).
NETWORK_PREFIX = '10.213'
# Marks our namespaces and links (the alias of each link), with the pid of
# the test process that made them.
NAME_PREFIX = 'ptest-hosts'
START_TIMEOUT = 60
# Test settings for the health checks: a dead host is out within a second.
TEST_CHECKS = 'check inter 500ms fall 1 rise 1'
# One line per request in HAProxy's log (see LogLine).
LOG_FORMAT = 'ptest-request %ST %s %rc %tsc %Ta %HM %HU %tr %ci:%cp'


@dataclasses.dataclass
class Database:
    """A database for the hosts. ``url`` reaches it from the test (root
    namespace); host i uses ``host_urls[i % len]``; ``options`` are more
    ``[placement_database]`` options for every host (URLs among them, such
    as ``slave_connection``, are reached through the bridge as well).
    """

    name: str
    url: str
    host_urls: list
    options: dict = dataclasses.field(default_factory=dict)

    def host_url(self, index):
        return self.host_urls[index % len(self.host_urls)]

    def engine(self):
        """An engine for the test's own reads, configured as the hosts'."""
        return db_engine.create_engine(
            make_conf(self.url, placement_database=self.options))


def _migrated(url):
    engine = db_engine.create_engine(make_conf(url))
    try:
        migration.upgrade(engine)
    finally:
        engine.dispose()


@contextlib.contextmanager
def galera_database(galera):
    """A fresh database on the Galera cluster (tests/integration/galera.py):
    host i writes through node i; reads wait for what the cluster committed
    (``mysql_wsrep_sync_wait = 1``).
    """
    with galera.database() as database:
        _migrated(database.url)
        yield Database('galera', database.node_urls[0], database.node_urls,
                       {'mysql_wsrep_sync_wait': '1'})


@contextlib.contextmanager
def postgresql_database(server_url=None):
    """A fresh ``ptest_hosts_<hex>`` database on a PostgreSQL server (the
    suite's, ``PLACEMENT_TEST_PG_URL``, by default), dropped afterwards.
    """
    url = db_engine.normalize_url(
        server_url or conftest.SERVERS['postgresql'])
    admin = sa.create_engine(url, isolation_level='AUTOCOMMIT',
                             connect_args={'connect_timeout': 5})
    name = 'ptest_hosts_' + uuid.uuid4().hex[:12]
    try:
        try:
            with admin.connect() as conn:
                conn.exec_driver_sql('CREATE DATABASE %s' % name)
        except sa.exc.DBAPIError as exc:
            unavailable('PostgreSQL server %s is unreachable: the API hosts '
                        'tests on it are NOT being run: %s'
                        % (url.render_as_string(), exc.orig))
        try:
            database_url = url.set(database=name).render_as_string(
                hide_password=False)
            _migrated(database_url)
            yield Database('postgresql', database_url, [database_url])
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(
                    'DROP DATABASE IF EXISTS %s WITH (FORCE)' % name)
    finally:
        admin.dispose()


# Name -> function(request) returning the context manager of that
# database; ``request`` is pytest's, for the fixtures a backend needs.
DATABASES = {
    'galera': lambda request: galera_database(
        request.getfixturevalue('galera')),
    'postgresql': lambda request: postgresql_database(),
}


@dataclasses.dataclass
class Host:
    """API host ``name`` (HAProxy's server name, X-Served-By's value)."""

    name: str
    address: str
    namespace: str | None
    server: gunicorn_server.GunicornServer

    def start(self):
        self.server.start()

    def kill(self):
        self.server.kill()

    def stop(self):
        self.server.stop()


@dataclasses.dataclass
class LogLine:
    """A request as HAProxy logged it (LOG_FORMAT)."""

    status: int
    server: str        # '<NOSRV>' when no host was reached
    retries: int
    redispatched: bool
    termination: str   # e.g. '----', 'SH--' (server closed), 'sC--'
    total_ms: int
    method: str
    path: str

    @property
    def from_proxy(self):
        """Answered by HAProxy itself, not relayed from a host."""
        return self.server == '<NOSRV>' or self.termination[:1] in 'sS'


_LOG_LINE = re.compile(r'ptest-request (-?\d+) (\S+) (\+?)(\d+) (\S+) '
                       r'(-?\d+) (\S+) (\S+)')


def parse_proxy_log(text):
    """The LOG_FORMAT lines of an HAProxy log, as LogLines."""
    found = []
    for line in text.splitlines():
        match = _LOG_LINE.search(line)
        if match:
            (status, server, plus, retries, termination, total, method,
             path) = match.groups()
            found.append(LogLine(int(status), server, int(retries),
                                 bool(plus), termination, int(total),
                                 method, path))
    return found


def _ip(*args, check=True):
    return subprocess.run(['ip'] + [str(arg) for arg in args], check=check,
                          capture_output=True, text=True)


def _ip_json(*args):
    out = _ip('-j', *args).stdout
    return json.loads(out) if out.strip() else []


def _used_networks():
    """Every IPv4 network an address or route of the root namespace has."""
    networks = []
    for link in _ip_json('-4', 'addr', 'show'):
        for info in link.get('addr_info', []):
            networks.append(ipaddress.ip_interface(
                '%s/%s' % (info['local'], info['prefixlen'])).network)
    for route in _ip_json('-4', 'route', 'show', 'table', 'all'):
        dst = route.get('dst', '')
        if dst and dst != 'default':
            try:
                networks.append(ipaddress.ip_network(dst, strict=False))
            except ValueError:
                pass
    return networks


def _free_network():
    used = _used_networks()
    candidates = list(range(256))
    random.shuffle(candidates)
    for third in candidates:
        network = ipaddress.ip_network('%s.%d.0/24' % (NETWORK_PREFIX, third))
        if not any(network.overlaps(other) for other in used):
            return network
    raise RuntimeError('no free /24 in %s.0.0/16' % NETWORK_PREFIX)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def leftovers(tag=None):
    """Our namespaces and links still there, as (kind, name, tag): all of
    them, or those of the run ``tag`` (``PID-SUFFIX``)."""
    pattern = re.compile(r'%s-(\d+)-([0-9a-f]+)\b' % NAME_PREFIX)
    found = []
    try:
        namespaces = _ip_json('netns', 'list')
        links = _ip_json('link', 'show')
    except (OSError, subprocess.CalledProcessError):
        return found
    named = ([('netns', namespace['name'], namespace['name'])
              for namespace in namespaces]
             + [('link', link['ifname'], link.get('ifalias', ''))
                for link in links])
    for kind, name, marker in named:
        match = pattern.match(marker)
        if match and tag in (None, '%s-%s' % match.groups()):
            found.append((kind, name, '%s-%s' % match.groups()))
    return found


def sweep_stale():
    """Remove namespaces and links left by test processes that are gone
    (a crashed run): only empty namespaces, processes are left alone."""
    for kind, name, tag in leftovers():
        if _pid_alive(int(tag.split('-')[0])):
            continue
        if kind == 'netns':
            if _ip('netns', 'pids', name, check=False).stdout.strip():
                warnings.warn('namespace %s of a dead test run still has '
                              'processes: left alone' % name, stacklevel=2)
                continue
            _ip('netns', 'del', name, check=False)
        else:
            _ip('link', 'del', name, check=False)


def _port_free(address, port):
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError:
            return False
        return True


def _free_port(address):
    with socket.socket() as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


def _sections(config_text):
    """(header, [lines]) per section of an HAProxy configuration."""
    sections = []
    for line in config_text.splitlines():
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        if not line[0].isspace():
            sections.append((line.strip(), []))
        elif sections:
            sections[-1][1].append(line.strip())
    return sections


def proxy_config(sample_text, bind, servers, listeners=(), log_target=None,
                stats_socket=None):
    """The operators' sample with test settings: the frontend bound to
    ``bind``, the backend's servers ``servers`` [(name, address:port)]
    checked every 500 ms (TEST_CHECKS), X-Served-By naming the server that
    answered, a LOG_FORMAT line per request to ``log_target``, and TCP
    ``listeners`` [(name, bind, target)] appended.
    """
    out = []
    for header, lines in _sections(sample_text):
        kind = header.split()[0]
        kept = []
        for line in lines:
            word = line.split()[0]
            if kind == 'global' and word in (
                    'log', 'chroot', 'user', 'group', 'daemon', 'pidfile',
                    'stats'):
                continue
            if kind == 'frontend' and word == 'bind':
                line = 'bind %s' % bind
            # Our own log format instead, for every connection.
            if word == 'option' and line.split()[1] in ('httplog',
                                                        'dontlognull'):
                continue
            if kind == 'backend' and word == 'server':
                continue
            if kind == 'backend' and word == 'default-server':
                line = re.sub(r'\bcheck inter \S+ fall \d+ rise \d+',
                              TEST_CHECKS, line)
                if TEST_CHECKS not in line:
                    raise ValueError('unexpected default-server line in the '
                                     'sample: %r' % line)
            kept.append(line)
        if kind == 'global':
            if log_target:
                kept.append('log %s format raw local0' % log_target)
            if stats_socket:
                kept.append('stats socket %s mode 600 level admin'
                            % stats_socket)
        if kind == 'frontend':
            kept.append('log-format "%s"' % LOG_FORMAT)
        if kind == 'backend':
            # Not for production: which host answered.
            kept.append('http-response set-header X-Served-By %s')
            kept.extend('server %s %s' % server for server in servers)
        out.append(header)
        out.extend('    ' + line for line in kept)
        out.append('')
    for name, listen, target in listeners:
        out.extend([
            'listen %s' % name, '    mode tcp', '    no log',
            '    bind %s' % listen,
            # Pooled database connections sit idle for long.
            '    timeout client 1h', '    timeout server 1h',
            '    server db %s' % target, ''])
    return '\n'.join(out)


class Topology:
    """``hosts`` API hosts behind HAProxy on ``database`` (a Database);
    gunicorn with ``workers`` processes of ``threads`` threads per host.
    """

    def __init__(self, workdir, database, hosts=3, workers=2, threads=4,
                 pool_size=4):
        self.workdir = pathlib.Path(workdir)
        self.database = database
        self.host_count = hosts
        self.workers = workers
        self.threads = threads
        self.pool_size = pool_size
        self.suffix = secrets.token_hex(3)
        self.tag = '%d-%s' % (os.getpid(), self.suffix)
        self.alias = '%s-%s' % (NAME_PREFIX, self.tag)
        self.namespaces = True
        self.hosts = []
        self.bridge = None
        self.bridge_address = None
        self.port = None
        self.haproxy = None
        self.haproxy_log = self.workdir / 'haproxy.log'
        self.haproxy_config = self.workdir / 'haproxy.cfg'
        self.stats_socket = self.workdir / 'haproxy.sock'
        # {host index: {(server host, port): (listener name, (address,
        # port))}}: where each host reaches each database server.
        self.db_listeners = {}
        self._stack = contextlib.ExitStack()

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def __enter__(self):
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._build()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc_info):
        self._stack.close()

    # --- Network ---------------------------------------------------------

    def _build(self):
        addresses = self._network()
        self._database_listeners()
        for index, address in enumerate(addresses):
            self.hosts.append(self._host(index, address))
        # The hosts reach their database through HAProxy's listeners, and
        # the service checks its database as it starts: HAProxy first.
        self._start_haproxy()
        for host in self.hosts:
            host.start()
            self._stack.callback(host.stop)
        self._wait_every_host_up()

    def _network(self):
        """The hosts' addresses, once their network is up."""
        if os.environ.get(LOOPBACK_VARIABLE, '').strip() in ('1', 'true'):
            return self._loopback('%s is set' % LOOPBACK_VARIABLE)
        sweep_stale()
        probe = '%s-%s-h1' % (self.alias, 'probe')
        try:
            _ip('netns', 'add', probe)
        except (OSError, subprocess.CalledProcessError) as exc:
            reason = getattr(exc, 'stderr', None) or exc
            return self._loopback('ip netns add failed: %s' % reason)
        _ip('netns', 'del', probe, check=False)

        network = _free_network()
        self.bridge = 'phb-' + self.suffix
        self.bridge_address = str(network[1])
        _ip('link', 'add', self.bridge, 'type', 'bridge')
        self._stack.callback(_ip, 'link', 'del', self.bridge, check=False)
        _ip('link', 'set', 'dev', self.bridge, 'alias', self.alias)
        _ip('addr', 'add', '%s/%d' % (self.bridge_address, network.prefixlen),
            'dev', self.bridge)
        _ip('link', 'set', self.bridge, 'up')
        addresses = []
        for index in range(self.host_count):
            number = index + 1
            namespace = '%s-h%d' % (self.alias, number)
            outside = 'phv%d-%s' % (number, self.suffix)
            inside = 'phn%d-%s' % (number, self.suffix)
            address = str(network[10 + number])
            _ip('netns', 'add', namespace)
            self._stack.callback(_ip, 'netns', 'del', namespace, check=False)
            _ip('link', 'add', outside, 'type', 'veth', 'peer', 'name',
                inside)
            # Deleting the namespace deletes the pair; not if moving failed.
            self._stack.callback(_ip, 'link', 'del', outside, check=False)
            _ip('link', 'set', 'dev', outside, 'alias', self.alias)
            _ip('link', 'set', inside, 'netns', namespace)
            _ip('link', 'set', outside, 'master', self.bridge, 'up')
            _ip('-n', namespace, 'link', 'set', 'lo', 'up')
            _ip('-n', namespace, 'addr', 'add',
                '%s/%d' % (address, network.prefixlen), 'dev', inside)
            _ip('-n', namespace, 'link', 'set', inside, 'up')
            addresses.append(address)
        return addresses

    def _loopback(self, reason):
        warnings.warn(
            'API hosts: no network namespaces (%s): the hosts are loopback '
            'addresses of this namespace instead, NOT separate network '
            'hosts' % reason, stacklevel=5)
        self.namespaces = False
        for _ in range(50):
            base = '127.%d.%d.' % (random.randint(1, 254),
                                   random.randint(0, 255))
            addresses = [base + str(11 + index)
                         for index in range(self.host_count)]
            if all(_port_free(address, API_PORT) for address in addresses):
                return addresses
        raise RuntimeError('no free loopback addresses for the API hosts')

    def _database_listeners(self):
        """A listener per host and database server that host's
        configuration names (self.db_listeners)."""
        listen_address = self.bridge_address or '127.0.0.1'
        taken = set()
        for index in range(self.host_count):
            targets = self.db_listeners.setdefault(index, {})
            for url in self._database_urls(index):
                target = (url.host or '127.0.0.1',
                          url.port or _default_port(url))
                if target in targets:
                    continue
                # The server's own port on the bridge address, if free.
                port = target[1]
                while (port in taken or (listen_address, port) == target
                       or not _port_free(listen_address, port)):
                    port = _free_port(listen_address)
                taken.add(port)
                name = 'db-h%d-%d' % (index + 1, len(targets) + 1)
                targets[target] = (name, (listen_address, port))

    def _database_urls(self, index):
        urls = [self.database.host_url(index)]
        urls += [value for value in self.database.options.values()
                 if '://' in str(value)]
        return [db_engine.normalize_url(url) for url in urls]

    def _through(self, index, value):
        if '://' not in str(value):
            return value
        url = db_engine.normalize_url(value)
        target = (url.host or '127.0.0.1', url.port or _default_port(url))
        _name, (host, port) = self.db_listeners[index][target]
        return url.set(host=host, port=port).render_as_string(
            hide_password=False)

    # --- Processes -------------------------------------------------------

    def _host(self, index, address):
        number = index + 1
        workdir = self.workdir / ('host%d' % number)
        workdir.mkdir(parents=True, exist_ok=True)
        database = {
            'connection': self._through(
                index, self.database.host_url(index)),
            'sync_on_startup': 'false',
            'max_pool_size': str(self.pool_size),
            'max_overflow': '2',
        }
        for option, value in self.database.options.items():
            database[option] = self._through(index, value)
        gunicorn_server.write_config(workdir / 'placement.conf', {
            'api': {'auth_strategy': 'noauth2'},
            'placement_database': database,
        })
        namespace = ('%s-h%d' % (self.alias, number)
                     if self.namespaces else None)
        prefix = ['ip', 'netns', 'exec', namespace] if namespace else []
        server = gunicorn_server.GunicornServer(
            gunicorn_server.OUR_BIN / 'gunicorn', APP, workdir, port=API_PORT,
            env={'OS_PLACEMENT_CONFIG_DIR': str(workdir)}, host=address,
            command_prefix=prefix, workers=self.workers, threads=self.threads)
        host = Host('host%d' % number, address, namespace, server)
        return host

    def _start_haproxy(self):
        self.port = gunicorn_server.free_port()
        listeners = [
            (name, '%s:%d' % listen, '%s:%d' % target)
            for index, targets in sorted(self.db_listeners.items())
            for target, (name, listen) in sorted(targets.items())]
        self.haproxy_config.write_text(proxy_config(
            SAMPLE_CONFIG.read_text(), '127.0.0.1:%d' % self.port,
            [(host.name, '%s:%d' % (host.address, API_PORT))
             for host in self.hosts],
            listeners, log_target='stdout',
            stats_socket=self.stats_socket))
        checked = subprocess.run(
            [HAPROXY, '-c', '-q', '-f', self.haproxy_config],
            capture_output=True, text=True)
        if checked.returncode:
            raise RuntimeError('haproxy rejects %s:\n%s%s' % (
                self.haproxy_config, checked.stdout, checked.stderr))
        with open(self.haproxy_log, 'ab') as log:
            self.haproxy = subprocess.Popen(
                [HAPROXY, '-db', '-f', self.haproxy_config], stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        self._stack.callback(self._stop_haproxy)

    def _wait_every_host_up(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.haproxy.poll() is not None:
                raise RuntimeError('haproxy exited with %s:\n%s' % (
                    self.haproxy.returncode, self.haproxy_log.read_text()))
            try:
                if (self.server_states() == {
                        host.name: 'UP' for host in self.hosts}
                        and requests.get(self.url, timeout=5).ok):
                    return
            except (OSError, requests.RequestException):
                pass
            time.sleep(0.2)
        raise RuntimeError('haproxy did not see every host up: %s'
                           % self._stats_or_error())

    def _stats_or_error(self):
        try:
            return self.server_states()
        except OSError as exc:
            return exc

    def _stop_haproxy(self):
        if self.haproxy.poll() is None:
            self.haproxy.terminate()
            try:
                self.haproxy.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.haproxy.pid, signal.SIGKILL)
                self.haproxy.wait()

    # --- HAProxy's view --------------------------------------------------

    def haproxy_command(self, command):
        """A command on HAProxy's stats socket; its answer."""
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(str(self.stats_socket))
            sock.sendall(command.encode() + b'\n')
            chunks = []
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        return b''.join(chunks).decode()

    def server_stats(self):
        """{host name: {column: value}}: HAProxy's ``show stat`` rows of
        the hosts (``status``, ``scur``: requests in progress,
        ``check_status``, ``check_code``: of the last health check...)."""
        lines = self.haproxy_command('show stat').splitlines()
        header = lines[0].lstrip('# ').split(',')
        stats = {}
        for line in lines[1:]:
            row = dict(zip(header, line.split(',')))
            if row.get('pxname') == 'placement_api' and row['svname'] not in (
                    'FRONTEND', 'BACKEND'):
                stats[row['svname']] = row
        return stats

    def server_states(self):
        """{host name: 'UP', 'DOWN', ...} as HAProxy sees the hosts."""
        return {name: row['status']
                for name, row in self.server_stats().items()}

    def _host_listeners(self, host):
        return [name for name, _listen in
                self.db_listeners[self.hosts.index(host)].values()]

    def cut_database(self, host):
        """Cut ``host`` off its database servers: HAProxy closes its
        connections to them and closes every new one at once (its
        listeners have no server left), until restore_database(host)."""
        for name in self._host_listeners(host):
            self.haproxy_command('disable server %s/db' % name)
            self.haproxy_command('shutdown sessions server %s/db' % name)

    def restore_database(self, host):
        for name in self._host_listeners(host):
            self.haproxy_command('enable server %s/db' % name)

    def wait_for_state(self, host, state, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.server_states().get(host.name) == state:
                return
            time.sleep(0.1)
        raise AssertionError('%s not %s after %ss: %s' % (
            host.name, state, timeout, self.server_states()))

    def proxy_log(self):
        """Every request HAProxy logged so far, as LogLines."""
        return parse_proxy_log(self.haproxy_log.read_text(errors='replace'))

    def describe(self):
        """The topology in a few lines, for a test's output."""
        lines = ['haproxy %s (pid %s), config %s' % (
            self.url, self.haproxy.pid if self.haproxy else '-',
            self.haproxy_config)]
        if self.namespaces:
            lines.append('bridge %s at %s' % (self.bridge,
                                              self.bridge_address))
        for host in self.hosts:
            lines.append('%s: %s:%d in %s' % (
                host.name, host.address, API_PORT,
                host.namespace or 'the root namespace (loopback)'))
        return '\n'.join(lines)


def _default_port(url):
    return {'postgresql': 5432}.get(url.get_backend_name(), 3306)

