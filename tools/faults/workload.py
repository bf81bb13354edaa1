"""The workload: client threads writing through the API servers, each
operation recorded in history.jsonl as it ends.

Each client thread owns its consumers, so the operations on a consumer are
sequential. A consumer uuid lives once: from its creating claim until its
allocations are seen empty (deleted, or a claim that never landed); after
that it is never written again. Reusing it could let a late-landing DELETE
(which checks no generation) of the old life remove a claim of the new one,
and that would be the workload's fault, not the service's. Every other
write checks a consumer or provider generation, so a write that lands late
is refused by the server instead.
"""
from __future__ import annotations

import dataclasses
import itertools
import random
import threading
import time
from typing import Any
from typing import Collection
import uuid

import client
from records import Clock
from records import JsonLines

PROJECT = 'b8f0a4c6-1d5e-4b1a-9a27-6f3c2a1d0e11'
USER = '5d2e7c1a-93b4-4e8f-a0d6-2c1b7e9f4a33'
PROVIDERS = 6
# Small capacities: the clients' claims fill them and some are refused.
INVENTORY = {
    'VCPU': {'total': 16, 'allocation_ratio': 1.0},
    'MEMORY_MB': {'total': 4096, 'allocation_ratio': 1.0},
    'DISK_GB': {'total': 100, 'allocation_ratio': 1.0},
}
TOGGLED_TRAIT = 'CUSTOM_FAULTS_TOGGLE'
SEED_TRAITS = ['HW_CPU_X86_AVX2', TOGGLED_TRAIT]
AGGREGATES = ['3f6c2b7a-0d41-4c5e-8f1a-7b2d9e6c4a01',
              '9a1e4d2c-6b7f-4e3a-b5c8-0f2d1a7e6b02']
TOGGLED_AGGREGATE = 'c4e8a2f1-7d3b-4a6c-9e5f-1b0d2c8a7f03'
CONSUMERS_PER_CLIENT = 4
REREAD_INTERVAL = 0.5
THINK_TIME = (0.05, 0.2)

Allocations = dict[str, dict[str, int]]


def inventory_body(generation: int, half_max_unit: bool) -> dict[str, Any]:
    """Every class of INVENTORY; only max_unit differs between the two
    forms, so capacity never changes."""
    inventories = {}
    for rc, spec in INVENTORY.items():
        total = spec['total']
        inventories[rc] = {
            'total': total, 'reserved': 0, 'min_unit': 1,
            'max_unit': total // 2 if half_max_unit else total,
            'step_size': 1, 'allocation_ratio': spec['allocation_ratio']}
    return {'resource_provider_generation': generation,
            'inventories': inventories}


def _must(answer: client.Answer, what: str) -> Any:
    if answer.outcome != 'ok':
        raise RuntimeError('%s: %s %s' % (what, answer.status, answer.error))
    return answer.body


def seed(base_url: str) -> list[str]:
    """Providers with inventory, traits and aggregates; their uuids."""
    providers = []
    _must(client.call(base_url, 'PUT', '/traits/' + TOGGLED_TRAIT),
          'create trait')
    for index in range(PROVIDERS):
        rp = str(uuid.uuid4())
        body = _must(client.call(
            base_url, 'POST', '/resource_providers',
            {'uuid': rp, 'name': 'faults-cn%d' % (index + 1)}),
            'create provider')
        generation = body['generation']
        body = _must(client.call(
            base_url, 'PUT', '/resource_providers/%s/inventories' % rp,
            inventory_body(generation, False)), 'set inventory')
        generation = body['resource_provider_generation']
        traits = SEED_TRAITS if index % 2 == 0 else SEED_TRAITS[:1]
        body = _must(client.call(
            base_url, 'PUT', '/resource_providers/%s/traits' % rp,
            {'traits': traits, 'resource_provider_generation': generation}),
            'set traits')
        generation = body['resource_provider_generation']
        _must(client.call(
            base_url, 'PUT', '/resource_providers/%s/aggregates' % rp,
            {'aggregates': [AGGREGATES[index % 2]],
             'resource_provider_generation': generation}),
            'set aggregates')
        providers.append(rp)
    return providers


@dataclasses.dataclass
class Consumer:
    uuid: str
    kind: str  # INSTANCE or MIGRATION
    generation: int | None = None
    allocations: Allocations = dataclasses.field(default_factory=dict)
    # An instance's migration consumer, holding its source allocations.
    migration: str | None = None


class Workload:
    """``clients`` threads writing through ``servers`` ({name: url},
    round-robin) until ``stop()``."""

    def __init__(self, servers: dict[str, str], providers: list[str],
                 clients: int, history: JsonLines, clock: Clock,
                 request_timeout: float, seed: int) -> None:
        self.servers = list(servers.items())
        self.providers = providers
        self.history = history
        self.clock = clock
        self.request_timeout = request_timeout
        self._ids = itertools.count(1)
        self._ids_lock = threading.Lock()
        self._stopping = threading.Event()
        # Re-reads give up this long after stop(): the topology is healthy
        # again by then, so only a broken service keeps them failing.
        self._reread_grace = 120.0
        self._stopped_at = 0.0
        self.threads = [
            threading.Thread(target=self._client, name='c%d' % (index + 1),
                             args=(index, random.Random(seed * 1000 + index)),
                             daemon=True)
            for index in range(clients)]
        self.errors: list[str] = []

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self, timeout: float = 180.0) -> list[str]:
        """Let every thread end its current operation; the names of those
        still running after ``timeout``."""
        self._stopped_at = time.monotonic()
        self._stopping.set()
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return [thread.name for thread in self.threads if thread.is_alive()]

    # --- One client ---------------------------------------------------------

    def _client(self, index: int, rng: random.Random) -> None:
        try:
            _Client(self, index, rng).run()
        except Exception as exc:  # recorded; the run reports it
            self.errors.append('%s: %r' % (threading.current_thread().name,
                                           exc))
            raise

    def next_id(self) -> int:
        with self._ids_lock:
            return next(self._ids)

    def stopping(self) -> bool:
        return self._stopping.is_set()

    def reread_expired(self) -> bool:
        return (self._stopping.is_set() and time.monotonic()
                > self._stopped_at + self._reread_grace)


class _Client:
    def __init__(self, workload: Workload, index: int,
                 rng: random.Random) -> None:
        self.w = workload
        self.rng = rng
        self.process = 'c%d' % (index + 1)
        self.turn = index
        self.consumers: dict[str, Consumer] = {}

    def run(self) -> None:
        while not self.w.stopping():
            self.step()
            time.sleep(self.rng.uniform(*THINK_TIME))

    def server(self) -> tuple[str, str]:
        self.turn += 1
        return self.w.servers[self.turn % len(self.w.servers)]

    # --- Choosing ------------------------------------------------------------

    def step(self) -> None:
        instances = [c for c in self.consumers.values()
                     if c.kind == 'INSTANCE']
        migrations = [c for c in self.consumers.values()
                      if c.kind == 'MIGRATION']
        roll = self.rng.random()
        if len(instances) < CONSUMERS_PER_CLIENT and roll < 0.35:
            return self.claim()
        if migrations and roll < 0.5:
            return self.delete_migration(self.rng.choice(migrations))
        roll = self.rng.random()
        if instances and roll < 0.3:
            return self.replace(self.rng.choice(instances))
        movable = [c for c in instances if c.migration is None]
        if movable and roll < 0.45:
            return self.move(self.rng.choice(movable))
        deletable = [c for c in instances if c.migration is None]
        if deletable and roll < 0.6:
            return self.delete(self.rng.choice(deletable))
        if roll < 0.8:
            return self.provider_op(self.rng.choice(
                ['inventory', 'trait', 'aggregate']))
        if len(instances) < CONSUMERS_PER_CLIENT + 2:
            return self.claim()
        return None

    def placement(self, avoid: Collection[str] = ()) -> Allocations:
        """Resources on one provider, or split over two (compute and
        disk), avoiding ``avoid`` when it can."""
        choices = [rp for rp in self.w.providers if rp not in avoid]
        if len(choices) < 2:
            choices = list(self.w.providers)
        vcpu = self.rng.randint(1, 4)
        memory = self.rng.choice([256, 512, 768, 1024])
        disk = self.rng.randint(1, 10)
        if self.rng.random() < 0.6:
            rp = self.rng.choice(choices)
            return {rp: {'VCPU': vcpu, 'MEMORY_MB': memory, 'DISK_GB': disk}}
        compute, storage = self.rng.sample(choices, 2)
        return {compute: {'VCPU': vcpu, 'MEMORY_MB': memory},
                storage: {'DISK_GB': disk}}

    # --- Allocation operations ----------------------------------------------

    def claim(self) -> None:
        consumer = Consumer(str(uuid.uuid4()), 'INSTANCE')
        self.consumers[consumer.uuid] = consumer
        allocations = self.placement()
        self.put_allocations('claim', consumer, allocations)

    def replace(self, consumer: Consumer) -> None:
        self.put_allocations('replace', consumer, self.placement())

    def delete(self, consumer: Consumer) -> None:
        if self.rng.random() < 0.5:
            self.put_allocations('delete', consumer, {})
            return
        answer, _ = self.send(
            'delete', 'DELETE', '/allocations/' + consumer.uuid, None,
            writes={consumer.uuid: {}}, generations={})
        self.after_write(answer, [consumer], late_delete=True)

    def delete_migration(self, migration: Consumer) -> None:
        answer, _ = self.send(
            'delete', 'DELETE', '/allocations/' + migration.uuid, None,
            writes={migration.uuid: {}}, generations={})
        self.after_write(answer, [migration], late_delete=True)

    def put_allocations(self, op: str, consumer: Consumer,
                        allocations: Allocations) -> None:
        body = {
            'allocations': {rp: {'resources': resources}
                            for rp, resources in allocations.items()},
            'project_id': PROJECT, 'user_id': USER,
            'consumer_generation': consumer.generation,
            'consumer_type': consumer.kind,
        }
        answer, _ = self.send(
            op, 'PUT', '/allocations/' + consumer.uuid, body,
            writes={consumer.uuid: allocations},
            generations={consumer.uuid: consumer.generation})
        self.after_write(answer, [consumer])

    def move(self, instance: Consumer) -> None:
        """Nova's migration: the instance's allocations move to other
        providers while a new migration consumer holds the source ones."""
        migration = Consumer(str(uuid.uuid4()), 'MIGRATION')
        source = instance.allocations
        destination = self.placement(avoid=set(source))
        body = {
            instance.uuid: {
                'allocations': {rp: {'resources': resources}
                                for rp, resources in destination.items()},
                'project_id': PROJECT, 'user_id': USER,
                'consumer_generation': instance.generation,
                'consumer_type': 'INSTANCE'},
            migration.uuid: {
                'allocations': {rp: {'resources': resources}
                                for rp, resources in source.items()},
                'project_id': PROJECT, 'user_id': USER,
                'consumer_generation': None,
                'consumer_type': 'MIGRATION'},
        }
        self.consumers[migration.uuid] = migration
        instance.migration = migration.uuid
        answer, _ = self.send(
            'move', 'POST', '/allocations', body,
            writes={instance.uuid: destination, migration.uuid: source},
            generations={instance.uuid: instance.generation,
                         migration.uuid: None})
        self.after_write(answer, [instance, migration])

    def after_write(self, answer: client.Answer, consumers: list[Consumer],
                    late_delete: bool = False) -> None:
        """Learn the consumers' state again unless the op was refused
        before reaching the server (nothing changed then)."""
        if answer.outcome == 'fail' and answer.status is None:
            for consumer in consumers:
                if consumer.generation is None and not consumer.allocations:
                    self.forget(consumer)
            return
        if late_delete and answer.outcome == 'unknown':
            # It may still land: its consumer is never written again.
            for consumer in consumers:
                self.forget(consumer)
            return
        for consumer in consumers:
            state = self.reread(consumer.uuid)
            if state is None or not state[1]:
                self.forget(consumer)
            else:
                consumer.generation, consumer.allocations = state

    def forget(self, consumer: Consumer) -> None:
        self.consumers.pop(consumer.uuid, None)
        for other in self.consumers.values():
            if other.migration == consumer.uuid:
                other.migration = None

    def reread(self, consumer: str) -> tuple[int | None, Allocations] | None:
        """(generation, allocations) as the API reports them now, retried
        until it answers; None if it never does."""
        while True:
            _, url = self.server()
            answer = client.call(url, 'GET', '/allocations/' + consumer,
                                 timeout=self.w.request_timeout)
            if answer.outcome == 'ok' and isinstance(answer.body, dict):
                body = answer.body
                allocations = {
                    rp: {rc: int(amount) for rc, amount
                         in entry.get('resources', {}).items()}
                    for rp, entry in body.get('allocations', {}).items()}
                return body.get('consumer_generation'), allocations
            if self.w.reread_expired():
                return None
            time.sleep(REREAD_INTERVAL)

    # --- Provider operations ----------------------------------------------

    def provider_op(self, op: str) -> None:
        rp = self.rng.choice(self.w.providers)
        path = '/resource_providers/%s/%s' % (rp, {
            'inventory': 'inventories', 'trait': 'traits',
            'aggregate': 'aggregates'}[op])
        _, url = self.server()
        current = client.call(url, 'GET', path,
                              timeout=self.w.request_timeout)
        if current.outcome != 'ok' or not isinstance(current.body, dict):
            return  # the read is not a checked operation
        generation = current.body['resource_provider_generation']
        body: dict[str, Any]
        if op == 'inventory':
            inventories = current.body.get('inventories', {})
            vcpu = inventories.get('VCPU', {})
            halved = vcpu.get('max_unit') == INVENTORY['VCPU']['total']
            body = inventory_body(generation, halved)
        elif op == 'trait':
            traits = set(current.body.get('traits', []))
            traits ^= {TOGGLED_TRAIT}
            body = {'traits': sorted(traits),
                    'resource_provider_generation': generation}
        else:
            aggregates = set(current.body.get('aggregates', []))
            aggregates ^= {TOGGLED_AGGREGATE}
            body = {'aggregates': sorted(aggregates),
                    'resource_provider_generation': generation}
        self.send(op, 'PUT', path, body, provider=rp,
                  provider_generation=generation)

    # --- Sending and recording --------------------------------------------

    def send(self, op: str, method: str, path: str, body: Any,
             writes: dict[str, Allocations] | None = None,
             generations: dict[str, int | None] | None = None,
             provider: str | None = None,
             provider_generation: int | None = None
             ) -> tuple[client.Answer, dict[str, Any]]:
        server, url = self.server()
        op_id = self.w.next_id()
        sent = self.w.clock.now()
        answer = client.call(url, method, path, body,
                             timeout=self.w.request_timeout)
        record: dict[str, Any] = {
            'id': op_id, 'process': self.process, 'server': server,
            'op': op, 'method': method, 'path': path, 'sent': sent,
            'ended': self.w.clock.now(), 'outcome': answer.outcome,
            'status': answer.status, 'error': answer.error,
        }
        if writes is not None:
            record['writes'] = writes
            record['consumer_generations'] = generations or {}
        if provider is not None:
            record['provider'] = provider
            record['provider_generation'] = provider_generation
            new_generation = None
            if answer.outcome == 'ok' and isinstance(answer.body, dict):
                new_generation = answer.body.get(
                    'resource_provider_generation')
            record['new_provider_generation'] = new_generation
        self.w.history.write(record)
        return answer, record
