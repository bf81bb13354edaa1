"""The database topologies under test, started and faulted through the
project's scripts (tools/galera.sh, tools/patroni.sh, tools/netns.sh).

Every database node runs in a network namespace of its own, holding its
processes and nothing else: a node is killed, frozen or cut off by acting
on ``ip netns pids NS`` or its link.
"""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import time

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

TOOLS = pathlib.Path(__file__).resolve().parents[1]
NETNS = TOOLS / 'netns.sh'
TOPOLOGIES = ('galera-single-writer', 'galera-every-node',
              'patroni-haproxy', 'patroni-multihost')
START_TIMEOUT = 300.0
STATUS_TIMEOUT = 20.0


def read_env(path: pathlib.Path) -> dict[str, str]:
    """VAR=value lines (optionally ``export``-ed or quoted)."""
    values = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith('#') or '=' not in line:
            continue
        name, value = line.split('=', 1)
        name = name.removeprefix('export ').strip()
        values[name] = value.strip().strip('"').strip("'")
    return values


def namespace_pids(namespace: str) -> list[int]:
    result = subprocess.run(['ip', 'netns', 'pids', namespace],
                            capture_output=True, text=True, check=False)
    return [int(pid) for pid in result.stdout.split()]


def signal_namespace(namespace: str, signum: int) -> int:
    """Send ``signum`` to every process in ``namespace``, again until no
    new one shows up (a process may fork meanwhile); how many got it."""
    done: set[int] = set()
    for _ in range(5):
        pids = [pid for pid in namespace_pids(namespace) if pid not in done]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass
            done.add(pid)
        time.sleep(0.1)
    return len(done)


class Topology:
    """A database topology under ``workdir``; ``script`` manages it."""

    script: pathlib.Path
    kind: str
    nodes = 0

    def __init__(self, name: str, workdir: pathlib.Path, port_base: int,
                 netns_prefix: str, network: str, setting: str) -> None:
        self.name = name
        self.workdir = workdir
        self.dir = workdir / 'db'
        self.port_base = port_base
        self.netns_prefix = netns_prefix
        self.network = network
        self.setting = setting
        self.env: dict[str, str] = {}
        self.log_path = workdir / 'topology.log'

    # --- The script ----------------------------------------------------------

    def script_env(self) -> dict[str, str]:
        raise NotImplementedError

    def run_script(self, *args: str, timeout: float = START_TIMEOUT,
                   check: bool = True) -> subprocess.CompletedProcess[str]:
        with open(self.log_path, 'a') as log:
            log.write('$ %s %s\n' % (self.script.name, ' '.join(args)))
            log.flush()
            result = subprocess.run(
                [str(self.script), *args], env=self.script_env(),
                stdout=subprocess.PIPE, stderr=log, text=True,
                timeout=timeout, check=False)
            log.write(result.stdout)
        if check and result.returncode != 0:
            raise RuntimeError('%s %s failed (exit %d); see %s' % (
                self.script.name, ' '.join(args), result.returncode,
                self.log_path))
        return result

    def start(self) -> None:
        self.run_script('start', str(self.dir))
        self.env = read_env(self.dir / 'env')

    def check_namespaces(self) -> None:
        """Fail unless every node runs in a namespace of its own (what
        node faults act on)."""
        if len(self.namespaces()) != self.nodes:
            raise RuntimeError('%s did not start its nodes in network '
                               'namespaces (%s lists %r)' % (
                                   self.script.name, self.netns_variable,
                                   self.namespaces()))

    def stop(self) -> None:
        """Stop everything; a node left frozen or cut off is resumed or
        healed first, in case the script does not."""
        for namespace in self.namespaces():
            signal_namespace(namespace, signal.SIGCONT)
            subprocess.run([str(NETNS), 'heal', namespace],
                           capture_output=True, check=False)
        if self.dir.exists():
            self.run_script('stop', str(self.dir), check=False)

    def healthy(self) -> bool:
        try:
            result = self.run_script('status', str(self.dir),
                                     timeout=STATUS_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            return False
        return result.returncode == 0

    def wait_writable(self, timeout: float = 60.0) -> None:
        """Return once a few new connections in a row through the
        service's URL reach a server that takes writes: right after a
        start, HAProxy counts every server up until its checks have
        failed."""
        query = ('SELECT NOT pg_is_in_recovery()' if self.kind == 'patroni'
                 else 'SELECT 1')
        engine = sa.create_engine(self.server_url, poolclass=NullPool)
        deadline = time.monotonic() + timeout
        streak = 0
        try:
            while streak < 5:
                try:
                    with engine.connect() as conn:
                        writable = bool(conn.exec_driver_sql(query).scalar())
                except sa.exc.DBAPIError:
                    writable = False
                streak = streak + 1 if writable else 0
                if time.monotonic() > deadline:
                    raise RuntimeError('%s does not reach a writable server'
                                       % self.url_variable)
                time.sleep(0.5)
        finally:
            engine.dispose()

    def restart_node(self, node: int) -> None:
        self.run_script('start-node', str(self.dir), str(node))

    # --- What the service and the faults use ---------------------------------

    netns_variable = ''
    url_variable = ''

    @property
    def server_url(self) -> str:
        """The SQLAlchemy server URL (no database) the service uses."""
        return self.env[self.url_variable]

    def namespaces(self) -> list[str]:
        # galera.sh separates them with spaces, patroni.sh with commas.
        return self.env.get(self.netns_variable, '').replace(',',
                                                             ' ').split()

    def namespace(self, node: int) -> str:
        return self.namespaces()[node - 1]

    def write_node(self) -> int:
        """The node the service writes to (1-based)."""
        raise NotImplementedError

    def kill_downtime(self, hold: float) -> float:
        """Seconds a killed node stays down before it is started again."""
        return max(1.0, hold / 4)


class Galera(Topology):
    script = TOOLS / 'galera.sh'
    kind = 'galera'
    nodes = 3
    netns_variable = 'PLACEMENT_TEST_GALERA_NETNS'
    url_variable = 'PLACEMENT_TEST_GALERA_URL'

    def script_env(self) -> dict[str, str]:
        return dict(
            os.environ,
            GALERA_PORT_BASE=str(self.port_base),
            GALERA_NETNS_PREFIX=self.netns_prefix,
            GALERA_NETWORK=self.network,
            GALERA_LAYOUT=self.name.removeprefix('galera-'),
            # Evict a frozen or cut-off node within seconds, so the others
            # keep committing.
            GALERA_SUSPECT_TIMEOUT='PT3S',
            GALERA_INACTIVE_TIMEOUT='PT6S',
            GALERA_INSTALL_TIMEOUT='PT6S',
        )

    def write_node(self) -> int:
        # single-writer: HAProxy's only active server; every-node: the
        # first of equals, faulted as the one writes go to.
        return 1


class Patroni(Topology):
    script = TOOLS / 'patroni.sh'
    kind = 'patroni'
    nodes = 2
    netns_variable = 'PLACEMENT_TEST_PATRONI_NETNS'

    def __init__(self, name: str, workdir: pathlib.Path, port_base: int,
                 netns_prefix: str, network: str, setting: str) -> None:
        super().__init__(name, workdir, port_base, netns_prefix, network,
                         setting)
        self.url_variable = ('PLACEMENT_TEST_PATRONI_MULTIHOST_URL'
                             if self.name == 'patroni-multihost'
                             else 'PLACEMENT_TEST_PATRONI_URL')

    def script_env(self) -> dict[str, str]:
        env = dict(
            os.environ,
            PATRONI_PORT_BASE=str(self.port_base),
            PATRONI_NETNS_PREFIX=self.netns_prefix,
            PATRONI_NETWORK=self.network,
        )
        if self.setting == 'async':
            env['PATRONI_SYNCHRONOUS'] = 'off'
        return env

    def kill_downtime(self, hold: float) -> float:
        # Past the leader key's ttl (10 s): the standby is promoted. A node
        # back sooner would find its own key and simply lead on.
        return max(12.0, hold / 4)

    def write_node(self) -> int:
        """The current leader, as Patroni reports it (retried through a
        failover in progress)."""
        deadline = time.monotonic() + 60
        while True:
            result = self.run_script('leader', str(self.dir),
                                     timeout=STATUS_TIMEOUT, check=False)
            if result.returncode == 0 and result.stdout.strip().isdigit():
                return int(result.stdout.strip())
            if time.monotonic() > deadline:
                raise RuntimeError('no Patroni leader; see %s'
                                   % self.log_path)
            time.sleep(1)


def make(name: str, workdir: pathlib.Path, port_base: int,
         netns_prefix: str, network: str, setting: str) -> Topology:
    if name not in TOPOLOGIES:
        raise ValueError('unknown topology %s' % name)
    cls: type[Topology] = Galera if name.startswith('galera') else Patroni
    return cls(name, workdir, port_base, netns_prefix, network, setting)
