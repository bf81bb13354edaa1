"""Fault injection, one fault at a time, each followed by a wait until the
topology is healthy again and the service answers through every API
server.

kill       SIGKILL every process of the node the service writes to, wait
           ``hold``/4 (Patroni: at least 12 s, so that the standby takes
           over), start the node again (it rejoins the others)
freeze     SIGSTOP them, hold, SIGCONT
partition  cut the node's link, hold, heal it
api-kill   SIGKILL one API server (master and workers), restart it after
           ``hold``/4 (at least 2 s); the servers take turns
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from typing import Any

from api_servers import ApiServer
import client
from records import Clock
from records import JsonLines
from topology import NETNS
from topology import Topology
from topology import signal_namespace

KINDS = ('kill', 'freeze', 'partition', 'api-kill')
NODE_FAULTS = ('kill', 'freeze', 'partition')
RECOVERY_TIMEOUT = 300.0


def log(message: str) -> None:
    print('[faults %s] %s' % (time.strftime('%H:%M:%S'), message),
          file=sys.stderr, flush=True)


class Injector:
    def __init__(self, topology: Topology, servers: list[ApiServer],
                 clock: Clock, out: JsonLines, hold: float) -> None:
        self.topology = topology
        self.servers = servers
        self.clock = clock
        self.out = out
        self.hold = hold
        self._api_turn = 0

    def inject(self, kind: str) -> dict[str, Any]:
        """Inject one fault, heal it, wait for recovery; its record (also
        written to faults.jsonl). ``recovered`` is None if the topology did
        not recover within RECOVERY_TIMEOUT."""
        if kind == 'api-kill':
            server = self.servers[self._api_turn % len(self.servers)]
            self._api_turn += 1
            target = server.name
            started = self.clock.now()
            log('api-kill %s' % target)
            server.kill()
            time.sleep(max(2.0, self.hold / 4))
            ended = self.clock.now()
            server.start()
            recovered = self.wait_recovered()
        else:
            node = self.topology.write_node()
            namespace = self.topology.namespace(node)
            target = 'node%d' % node
            started = self.clock.now()
            try:
                started, ended = getattr(self, '_' + kind)(node, namespace)
                recovered = self.wait_recovered()
            except (RuntimeError, subprocess.SubprocessError) as exc:
                # E.g. start-node failed: the run stops injecting and
                # says so; what happened until then is still checked.
                log('%s of node%d failed: %s' % (kind, node, exc))
                ended = self.clock.now()
                recovered = None
        record = {'fault': kind, 'target': target, 'started': started,
                  'ended': ended, 'recovered': recovered}
        self.out.write(record)
        log('%s %s: %.1f s, recovered after %s' % (
            kind, target, ended - started,
            '%.1f s' % (recovered - ended) if recovered is not None
            else 'NEVER'))
        return record

    def _kill(self, node: int, namespace: str) -> tuple[float, float]:
        log('kill node%d (%s)' % (node, namespace))
        started = self.clock.now()
        count = signal_namespace(namespace, signal.SIGKILL)
        log('  SIGKILLed %d processes' % count)
        time.sleep(self.topology.kill_downtime(self.hold))
        ended = self.clock.now()
        log('  start-node %d' % node)
        self.topology.restart_node(node)
        return started, ended

    def _freeze(self, node: int, namespace: str) -> tuple[float, float]:
        log('freeze node%d (%s) for %.0f s' % (node, namespace, self.hold))
        started = self.clock.now()
        try:
            signal_namespace(namespace, signal.SIGSTOP)
            time.sleep(self.hold)
        finally:
            signal_namespace(namespace, signal.SIGCONT)
        return started, self.clock.now()

    def _partition(self, node: int, namespace: str) -> tuple[float, float]:
        log('partition node%d (%s) for %.0f s' % (node, namespace,
                                                  self.hold))
        started = self.clock.now()
        try:
            subprocess.run([str(NETNS), 'cut', namespace], check=True)
            time.sleep(self.hold)
        finally:
            subprocess.run([str(NETNS), 'heal', namespace], check=True)
        return started, self.clock.now()

    def wait_recovered(self, timeout: float = RECOVERY_TIMEOUT
                       ) -> float | None:
        """When the topology was seen healthy and every API server served
        a read from the database; None after ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.topology.healthy() and all(
                    self.serves(server) for server in self.servers):
                return self.clock.now()
            time.sleep(1.0)
        return None

    @staticmethod
    def serves(server: ApiServer) -> bool:
        answer = client.call(server.url, 'GET', '/resource_providers',
                             timeout=10)
        return answer.outcome == 'ok'
