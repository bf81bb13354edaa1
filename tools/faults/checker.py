"""Decide whether the ledger survived a fault run.

A fault run drives a workload through the API while database nodes are
killed, frozen or cut off, recording every client operation with its
outcome (``history.jsonl``), the database's usage and capacity during the
run (``samples.jsonl``), the faults (``faults.jsonl``) and the state left
at the end (``final.json``). An operation that ended ``ok`` must be
durable, one that ended ``fail`` must have changed nothing, and one that
ended ``unknown`` may have been applied or not, but entirely or not at all.
This module checks exactly that, plus capacity, the usages the API reports,
generations and the status codes, and sums up the run.

Usage: ``python tools/faults/checker.py RUN_DIR [--json]``; exit status 1
when there is any violation, 0 when there is none, 2 when the run directory
cannot be read.

Standard library only, so that it runs with any Python 3.11.
"""
from __future__ import annotations

import argparse
import collections
from collections.abc import Iterable
from collections.abc import Iterator
import dataclasses
import json
import math
import os
import sys
from typing import Any

# rp -> resource class -> amount: what one consumer holds.
State = dict[str, dict[str, int]]
# consumer -> State
Allocations = dict[str, State]
# rp -> resource class -> amount (capacity is a float product).
Amounts = dict[str, dict[str, float]]

ALLOCATION_OPS = frozenset({'claim', 'replace', 'move', 'delete'})
PROVIDER_OPS = frozenset({'inventory', 'trait', 'aggregate'})
OUTCOMES = ('ok', 'fail', 'unknown')
# How many op ids a one-line message spells out (op_ids keeps them all).
MESSAGE_IDS = 12


class RunError(Exception):
    """The run directory is missing a file or holds one it cannot parse."""


@dataclasses.dataclass
class Op:
    """One client operation of history.jsonl."""
    id: int
    process: str
    server: str
    op: str
    method: str
    path: str
    sent: float
    ended: float
    outcome: str
    status: int | None
    error: str | None
    # Allocation ops: the complete state of each consumer they touch.
    writes: Allocations | None = None
    # None = a new consumer; a consumer absent = its generation unchecked.
    consumer_generations: dict[str, int | None] | None = None
    # Provider ops.
    provider: str | None = None
    provider_generation: int | None = None
    new_provider_generation: int | None = None

    def consumers(self) -> list[str]:
        names = list(self.writes or {})
        names += [c for c in self.consumer_generations or {}
                  if c not in names]
        return names

    def state(self, consumer: str) -> State | None:
        """What ``consumer`` holds if this op is applied (None: untouched)."""
        if self.writes is None or consumer not in self.writes:
            return None
        return self.writes[consumer]

    @property
    def is_write(self) -> bool:
        return self.method.upper() not in ('GET', 'HEAD')


@dataclasses.dataclass
class Sample:
    time: float
    capacity: Amounts
    usage: Amounts


@dataclasses.dataclass
class Fault:
    fault: str
    target: str
    started: float
    ended: float
    recovered: float | None


@dataclasses.dataclass
class Final:
    allocations: Allocations
    capacity: Amounts
    usage_api: Amounts
    provider_generations: dict[str, int]
    consumer_generations: dict[str, int]


@dataclasses.dataclass
class Run:
    directory: str
    ops: list[Op]
    samples: list[Sample]
    faults: list[Fault]
    # None when the run stopped before reading the final state.
    final: Final | None
    meta: dict[str, Any]


@dataclasses.dataclass
class Violation:
    kind: str
    message: str
    op_ids: list[int]

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Report:
    violations: list[Violation]
    summary: dict[str, Any]

    @property
    def ok(self) -> bool:
        return not self.violations

    def as_dict(self) -> dict[str, Any]:
        return {'violations': [v.as_dict() for v in self.violations],
                'summary': self.summary}


# --- loading --------------------------------------------------------------

def _state(raw: Any) -> State:
    """A consumer's holdings, without empty providers or zero amounts (the
    database keeps no such rows, so they compare equal to nothing)."""
    state: State = {}
    for rp, classes in (raw or {}).items():
        amounts = {rc: int(amount) for rc, amount in (classes or {}).items()
                   if int(amount) != 0}
        if amounts:
            state[rp] = amounts
    return state


def _allocations(raw: Any) -> Allocations:
    return {consumer: _state(state) for consumer, state in (raw or {}).items()}


def _amounts(raw: Any) -> Amounts:
    return {rp: {rc: float(value) for rc, value in (classes or {}).items()}
            for rp, classes in (raw or {}).items()}


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _op(raw: dict[str, Any]) -> Op:
    writes = raw.get('writes')
    generations = raw.get('consumer_generations')
    return Op(
        id=int(raw['id']),
        process=str(raw.get('process', '')),
        server=str(raw.get('server', '')),
        op=str(raw['op']),
        method=str(raw.get('method', '')),
        path=str(raw.get('path', '')),
        sent=float(raw['sent']),
        ended=float(raw['ended']),
        outcome=str(raw['outcome']),
        status=_optional_int(raw.get('status')),
        error=None if raw.get('error') is None else str(raw['error']),
        writes=None if writes is None else _allocations(writes),
        consumer_generations=None if generations is None else {
            c: _optional_int(g) for c, g in generations.items()},
        provider=raw.get('provider'),
        provider_generation=_optional_int(raw.get('provider_generation')),
        new_provider_generation=_optional_int(
            raw.get('new_provider_generation')),
    )


def _jsonl(path: str) -> Iterator[dict[str, Any]]:
    with open(path, encoding='utf-8') as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except ValueError as exc:
                raise RunError('%s:%d: %s' % (path, number, exc))


def _read_jsonl(run_dir: str, name: str, required: bool) -> list[Any]:
    path = os.path.join(run_dir, name)
    if not os.path.exists(path):
        if required:
            raise RunError('%s: missing' % path)
        return []
    return list(_jsonl(path))


def _read_json(run_dir: str, name: str) -> Any:
    path = os.path.join(run_dir, name)
    if not os.path.exists(path):
        return None
    with open(path, encoding='utf-8') as source:
        try:
            return json.load(source)
        except ValueError as exc:
            raise RunError('%s: %s' % (path, exc))


def load_run(run_dir: str) -> Run:
    """Read RUN_DIR; only history.jsonl is required (a missing final.json
    is itself a violation, reported by check())."""
    if not os.path.isdir(run_dir):
        raise RunError('%s: not a directory' % run_dir)
    try:
        ops = [_op(raw) for raw in
               _read_jsonl(run_dir, 'history.jsonl', required=True)]
        samples = [Sample(time=float(raw['time']),
                          capacity=_amounts(raw.get('capacity')),
                          usage=_amounts(raw.get('usage')))
                   for raw in _read_jsonl(run_dir, 'samples.jsonl', False)]
        faults = [Fault(fault=str(raw['fault']), target=str(raw['target']),
                        started=float(raw['started']),
                        ended=float(raw['ended']),
                        recovered=None if raw.get('recovered') is None
                        else float(raw['recovered']))
                  for raw in _read_jsonl(run_dir, 'faults.jsonl', False)]
        raw_final = _read_json(run_dir, 'final.json')
        final = None if raw_final is None else Final(
            allocations=_allocations(raw_final.get('allocations')),
            capacity=_amounts(raw_final.get('capacity')),
            usage_api=_amounts(raw_final.get('usage_api')),
            provider_generations={
                rp: int(g) for rp, g in
                (raw_final.get('provider_generations') or {}).items()},
            consumer_generations={
                c: int(g) for c, g in
                (raw_final.get('consumer_generations') or {}).items()})
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RunError('%s: malformed record: %r' % (run_dir, exc))
    meta = _read_json(run_dir, 'run.json') or {}
    return Run(directory=run_dir, ops=ops, samples=samples, faults=faults,
               final=final, meta=meta)


# --- helpers --------------------------------------------------------------

def _fmt_state(state: State | None) -> str:
    if not state:
        return '{}'
    return '{%s}' % ', '.join(
        '%s: %s' % (rp, ' '.join('%s=%d' % (rc, amount)
                                 for rc, amount in sorted(classes.items())))
        for rp, classes in sorted(state.items()))


def _fmt_ids(ids: Iterable[int]) -> str:
    listed = list(ids)
    if not listed:
        return 'no op'
    shown = ', '.join(str(i) for i in listed[:MESSAGE_IDS])
    if len(listed) > MESSAGE_IDS:
        shown += ', ... (%d in all)' % len(listed)
    return ('op ' if len(listed) == 1 else 'ops ') + shown


def _unique(ids: Iterable[int]) -> list[int]:
    return list(dict.fromkeys(ids))


def _entries(state: State) -> set[tuple[str, str, int]]:
    return {(rp, rc, amount) for rp, classes in state.items()
            for rc, amount in classes.items()}


def _is_part(held: State, before: State, after: State) -> bool:
    """``held`` is an op's write half done: non-empty, neither the state
    before the op nor after it, made only of pieces of the two, with at
    least one piece the op brought. A strict part of a claim's writes is
    the plain case (before = {})."""
    if not held or held in (before, after):
        return False
    pieces = _entries(held)
    brought = _entries(after) - _entries(before)
    return (pieces <= _entries(before) | _entries(after)
            and bool(pieces & brought))


def sum_usage(allocations: Allocations) -> Amounts:
    """{provider: {class: amount}} the ``allocations`` use together."""
    usage: Amounts = {}
    for state in allocations.values():
        for rp, classes in state.items():
            for rc, amount in classes.items():
                usage.setdefault(rp, {}).setdefault(rc, 0)
                usage[rp][rc] += amount
    return usage


def _exceeds(used: float, capacity: float) -> bool:
    """Usage over capacity beyond float rounding of the capacity product."""
    return used > capacity + 1e-6 * max(1.0, abs(capacity))


def _timelines(ops: list[Op]) -> dict[str, list[Op]]:
    """consumer -> the allocation ops touching it, in the order sent (one
    process owns a consumer, so they ran one after the other)."""
    timelines: dict[str, list[Op]] = collections.defaultdict(list)
    for op in sorted(ops, key=lambda o: (o.sent, o.id)):
        for consumer in op.consumers():
            timelines[consumer].append(op)
    return dict(timelines)


def _last_ok(timeline: list[Op]) -> int:
    """Index of the last ok op of ``timeline``, -1 when none."""
    for index in range(len(timeline) - 1, -1, -1):
        if timeline[index].outcome == 'ok':
            return index
    return -1


def _possible_states(timeline: list[Op],
                     consumer: str) -> list[tuple[Op | None, State]]:
    """The states the consumer may be left in: the last ok op's (or the
    initial {}), or that of any unknown op sent after it."""
    last = _last_ok(timeline)
    states: list[tuple[Op | None, State]] = []
    if last < 0:
        states.append((None, {}))
    else:
        states.append((timeline[last], timeline[last].state(consumer) or {}))
    for op in timeline[last + 1:]:
        state = op.state(consumer)
        if op.outcome == 'unknown' and state is not None:
            states.append((op, state))
    return states


def _state_before(timeline: list[Op], op: Op, consumer: str) -> State:
    """What the consumer held before ``op`` as far as ok ops tell."""
    position = next(i for i, o in enumerate(timeline) if o is op)
    return _possible_states(timeline[:position], consumer)[0][1]


def _holders(timelines: dict[str, list[Op]], rp: str, rc: str,
             time: float) -> list[int]:
    """Ops that may have had (rp, rc) held at ``time``: per consumer, the
    last ok op ended by then and every ok/unknown op sent after it."""
    ids: list[int] = []
    for consumer, timeline in timelines.items():
        start = 0
        for index, op in enumerate(timeline):
            if op.outcome == 'ok' and op.ended <= time:
                start = index
        for op in timeline[start:]:
            if op.sent > time or op.outcome == 'fail':
                continue
            state = op.state(consumer) or {}
            if state.get(rp, {}).get(rc, 0) > 0:
                ids.append(op.id)
    return sorted(_unique(ids))


# --- checks ---------------------------------------------------------------

def _server_errors(run: Run) -> list[Violation]:
    """During faults the service must answer 503 or succeed: any other
    5xx is a bug (an unhandled database error)."""
    return [Violation('server-error', '%s %s %s answered %d (%s) on %s'
                      % (op.op, op.method, op.path, op.status,
                         op.error or 'no error text', op.server or '?'),
                      [op.id])
            for op in sorted(run.ops, key=lambda o: o.id)
            if op.status is not None and 500 <= op.status < 600
            and op.status != 503]


def _capacity_samples(run: Run,
                      timelines: dict[str, list[Op]]) -> list[Violation]:
    """One violation per provider/class over capacity in some sample."""
    over: dict[tuple[str, str], list[tuple[Sample, float, float]]] = {}
    for sample in sorted(run.samples, key=lambda s: s.time):
        for rp, classes in sample.usage.items():
            for rc, used in classes.items():
                capacity = sample.capacity.get(rp, {}).get(rc, 0.0)
                if _exceeds(used, capacity):
                    over.setdefault((rp, rc), []).append(
                        (sample, used, capacity))
    violations = []
    for (rp, rc), hits in sorted(over.items()):
        worst, used, capacity = max(hits, key=lambda h: h[1] - h[2])
        ids = _holders(timelines, rp, rc, worst.time)
        violations.append(Violation(
            'over-capacity',
            'provider %s %s: usage %g over capacity %g at %.3f s '
            '(%d sample(s) over, %.3f-%.3f s); possible holders: %s'
            % (rp, rc, used, capacity, worst.time, len(hits),
               hits[0][0].time, hits[-1][0].time, _fmt_ids(ids)), ids))
    return violations


def _final_usage(run: Run, final: Final,
                 timelines: dict[str, list[Op]]) -> list[Violation]:
    violations = []
    usage = sum_usage(final.allocations)
    end = math.inf
    for rp, classes in sorted(usage.items()):
        for rc, used in sorted(classes.items()):
            capacity = final.capacity.get(rp, {}).get(rc, 0.0)
            if _exceeds(used, capacity):
                ids = _holders(timelines, rp, rc, end)
                violations.append(Violation(
                    'over-capacity',
                    'provider %s %s: final usage %g over capacity %g; '
                    'holders: %s' % (rp, rc, used, capacity, _fmt_ids(ids)),
                    ids))
    pairs = {(rp, rc) for amounts in (usage, final.usage_api)
             for rp, classes in amounts.items() for rc in classes}
    for rp, rc in sorted(pairs):
        stored = usage.get(rp, {}).get(rc, 0)
        reported = final.usage_api.get(rp, {}).get(rc, 0)
        if stored != reported:
            ids = _holders(timelines, rp, rc, end)
            violations.append(Violation(
                'usage-mismatch',
                'provider %s %s: the API reports usage %g, the allocations '
                'sum to %g; holders: %s'
                % (rp, rc, reported, stored, _fmt_ids(ids)), ids))
    return violations


def _moves(final: Final,
           timelines: dict[str, list[Op]]) -> tuple[list[Violation],
                                                     set[str]]:
    """Ops writing several consumers at once (a move) are all or nothing:
    when such an op is the last ok/unknown op of each of its consumers, it
    must show in every consumer it changes or in none. Returns the
    violations and the consumers they explain."""
    violations: list[Violation] = []
    covered: set[str] = set()
    seen: set[int] = set()
    for timeline in timelines.values():
        for op in timeline:
            if (op.id in seen or op.outcome not in ('ok', 'unknown')
                    or len(op.writes or {}) < 2):
                continue
            seen.add(op.id)
            applied: list[str] = []
            missing: list[str] = []
            for consumer in op.consumers():
                history = timelines[consumer]
                steps = [o for o in history
                         if o.outcome in ('ok', 'unknown')]
                if steps[-1] is not op:
                    break
                state = op.state(consumer)
                if state is None:
                    continue
                if state == _state_before(history, op, consumer):
                    continue    # unchanged by this op: tells nothing
                holds = final.allocations.get(consumer, {})
                (applied if holds == state else missing).append(consumer)
            else:
                if applied and missing:
                    covered.update(op.consumers())
                    violations.append(Violation(
                        'half-applied',
                        '%s op %d (%s) shows in consumer(s) %s but not in '
                        '%s (final %s)'
                        % (op.op, op.id, op.outcome, ', '.join(applied),
                           ', '.join(missing),
                           '; '.join(_fmt_state(
                               final.allocations.get(c, {}))
                               for c in missing)),
                        [op.id]))
    return violations, covered


def _consumers(run: Run, final: Final,
               timelines: dict[str, list[Op]]) -> list[Violation]:
    """Each consumer's final holdings against the states its history
    allows (see _possible_states)."""
    violations, covered = _moves(final, timelines)
    for consumer, timeline in sorted(timelines.items()):
        if consumer in covered:
            continue
        held = final.allocations.get(consumer, {})
        allowed = _possible_states(timeline, consumer)
        if any(state == held for _, state in allowed):
            continue
        last = _last_ok(timeline)
        last_ok = timeline[last] if last >= 0 else None
        base = [last_ok.id] if last_ok else []
        expected = ' or '.join(
            '%s (%s)' % (_fmt_state(state),
                         'initial' if op is None else 'op %d' % op.id)
            for op, state in allowed)
        what = 'consumer %s: final %s, expected %s' % (
            consumer, _fmt_state(held), expected)
        later = timeline[last + 1:]
        fails = [op for op in later
                 if op.outcome == 'fail' and op.state(consumer) == held]
        parts = [op for op, state in allowed if op is not None
                 and _is_part(held, _state_before(timeline, op, consumer),
                              state)]
        earlier = [op for op in timeline[:max(last, 0)]
                   if op.state(consumer) == held]
        if fails:
            violations.append(Violation(
                'fail-applied', what + '; it is what failed %s wrote'
                % _fmt_ids(o.id for o in fails),
                _unique(base + [o.id for o in fails])))
        elif parts:
            violations.append(Violation(
                'half-applied', what + '; it is part of what %s wrote'
                % _fmt_ids(o.id for o in parts),
                _unique(base + [o.id for o in parts])))
        elif last_ok is not None and (not held or earlier):
            violations.append(Violation(
                'lost-write', what + '; the write of ok op %d is gone%s'
                % (last_ok.id, ' (back to what %s wrote)'
                   % _fmt_ids(o.id for o in earlier) if earlier else ''),
                _unique(base + [o.id for o in earlier])))
        else:
            violations.append(Violation(
                'unexpected-state', what,
                _unique(base + [op.id for op, _ in allowed
                                if op is not None])))
    for consumer in sorted(set(final.allocations) - set(timelines)):
        if final.allocations[consumer]:
            violations.append(Violation(
                'unexpected-state',
                'consumer %s holds %s but no op ever wrote it'
                % (consumer, _fmt_state(final.allocations[consumer])), []))
    return violations


def _consumer_generations(
        timelines: dict[str, list[Op]]) -> list[Violation]:
    """Two ok ops cannot both have won with the same consumer generation.
    A null generation creates the consumer; placement forgets a consumer
    whose allocations are deleted, so a new creation (and generations
    counting again from the start) is legal once the consumer may have
    been emptied: by an ok delete, or an unknown one (which may have been
    applied: flagging it would accuse a correct service)."""
    violations = []
    for consumer, timeline in sorted(timelines.items()):
        seen: dict[int, Op] = {}
        creation: Op | None = None
        emptied = True      # the initial state: no such consumer
        for op in timeline:
            if op.outcome == 'fail':
                continue
            generations = op.consumer_generations or {}
            if consumer in generations:
                generation = generations[consumer]
                if op.outcome == 'ok' and generation is None:
                    if not emptied:
                        ids = ([creation.id] if creation else []) + [op.id]
                        violations.append(Violation(
                            'repeated-generation',
                            'consumer %s created twice (null generation) '
                            'by ok %s with no deletion between'
                            % (consumer, _fmt_ids(ids)), ids))
                    creation, seen = op, {}
                elif op.outcome == 'ok' and generation is not None:
                    violations += _reused(seen, generation, op,
                                          'consumer ' + consumer)
                elif generation is None and emptied:
                    seen = {}   # it may have created the consumer anew
            state = op.state(consumer)
            if state is not None:
                if not state:
                    emptied = True
                elif op.outcome == 'ok':
                    emptied = False
    return violations


def _reused(seen: dict[int, Op], generation: int, op: Op,
            subject: str) -> list[Violation]:
    """A repeated-generation violation if an ok op in ``seen`` sent
    ``generation`` before ``op`` did; else ``op`` is remembered."""
    if generation in seen:
        ids = [seen[generation].id, op.id]
        return [Violation('repeated-generation', '%s: ok %s both sent '
                          'generation %d' % (subject, _fmt_ids(ids),
                                             generation), ids)]
    seen[generation] = op
    return []


def _provider_generations(run: Run) -> list[Violation]:
    """An ok provider op moves the provider's generation by exactly one,
    from a generation no other ok op sent; the final generation is at
    least the newest an ok op reported (else that write was lost)."""
    violations = []
    by_provider: dict[str, list[Op]] = collections.defaultdict(list)
    for op in sorted(run.ops, key=lambda o: (o.sent, o.id)):
        if op.provider is not None and op.outcome == 'ok':
            by_provider[op.provider].append(op)
    for rp, ops in sorted(by_provider.items()):
        seen: dict[int, Op] = {}
        for op in ops:
            sent, new = op.provider_generation, op.new_provider_generation
            if sent is None:
                continue
            violations += _reused(seen, sent, op, 'provider ' + rp)
            if new is not None and new != sent + 1:
                violations.append(Violation(
                    'generation-skip',
                    'provider %s: ok %s op %d sent generation %d and got '
                    '%d back' % (rp, op.op, op.id, sent, new), [op.id]))
        if run.final is not None and rp in run.final.provider_generations:
            final = run.final.provider_generations[rp]
            newest = max((op for op in ops
                          if op.new_provider_generation is not None),
                         key=lambda o: o.new_provider_generation or 0,
                         default=None)
            if (newest is not None and newest.new_provider_generation
                    is not None and newest.new_provider_generation > final):
                violations.append(Violation(
                    'lost-write',
                    'provider %s: final generation %d is older than the '
                    '%d that ok %s op %d got'
                    % (rp, final, newest.new_provider_generation,
                       newest.op, newest.id), [newest.id]))
    return violations


# --- summary --------------------------------------------------------------

def _unavailability(run: Run) -> list[dict[str, Any]]:
    """Per fault, the longest stretch with no write op ending ok that
    overlaps the fault window [started, recovered or ended]. A stretch is
    counted from the fault's start at the earliest (the quiet time before
    it is not the fault's doing) up to the next ok write, or to the end of
    the workload when none came (``resumed`` false)."""
    writes = [op for op in run.ops if op.is_write]
    if not writes:
        return []
    begin = min(op.sent for op in writes)
    end = max(op.ended for op in writes)
    marks = [begin] + sorted(op.ended for op in writes
                             if op.outcome == 'ok') + [end]
    results = []
    for fault in run.faults:
        until = fault.recovered if fault.recovered is not None else fault.ended
        best: dict[str, Any] = {'seconds': 0.0, 'from': None, 'to': None,
                                'resumed': True}
        for index, (a, b) in enumerate(zip(marks, marks[1:])):
            if b < fault.started or a > until:
                continue
            start = max(a, fault.started)
            if b - start > best['seconds']:
                best = {'seconds': round(b - start, 3),
                        'from': round(start, 3), 'to': round(b, 3),
                        # The last stretch ends at the workload's end.
                        'resumed': index < len(marks) - 2}
        results.append({'fault': fault.fault, 'target': fault.target,
                        'started': fault.started, 'ended': fault.ended,
                        'recovered': fault.recovered, **best})
    return results


def _summary(run: Run, violations: list[Violation],
             consumers: int) -> dict[str, Any]:
    statuses = collections.Counter(
        'none' if op.status is None else str(op.status) for op in run.ops)
    outages = _unavailability(run)
    longest = max(outages, key=lambda o: o['seconds'], default=None)
    slowest = max(run.ops, key=lambda op: op.ended - op.sent, default=None)
    return {
        'run': {k: run.meta[k] for k in ('topology', 'setting', 'service',
                                         'rounds') if k in run.meta},
        'operations': len(run.ops),
        'by_kind': dict(sorted(collections.Counter(
            op.op for op in run.ops).items())),
        'outcomes': {outcome: sum(op.outcome == outcome for op in run.ops)
                     for outcome in OUTCOMES},
        'statuses': dict(sorted(statuses.items())),
        'faults': dict(sorted(collections.Counter(
            f.fault for f in run.faults).items())),
        # What refused or unknown operations were answered: the error
        # code of Placement's body, or the client's own failure.
        'errors': dict(sorted(collections.Counter(
            op.error or 'none' for op in run.ops
            if op.outcome != 'ok').items())),
        'unavailability': outages,
        'longest_unavailability': longest,
        # The bound every request must end within.
        'slowest_request': None if slowest is None else {
            'seconds': round(slowest.ended - slowest.sent, 3),
            'id': slowest.id, 'outcome': slowest.outcome,
            'status': slowest.status},
        'samples': len(run.samples),
        'consumers_checked': consumers,
        'violations': dict(sorted(collections.Counter(
            v.kind for v in violations).items())),
    }


def check(run: Run) -> Report:
    timelines = _timelines(run.ops)
    violations = _server_errors(run)
    violations += _capacity_samples(run, timelines)
    if run.final is None:
        violations.append(Violation(
            'missing-final', 'no final.json: the run did not read the state '
            'it left, so no write could be verified', []))
        consumers = 0
    else:
        violations += _final_usage(run, run.final, timelines)
        violations += _consumers(run, run.final, timelines)
        consumers = len(set(timelines) | set(run.final.allocations))
    violations += _consumer_generations(timelines)
    violations += _provider_generations(run)
    return Report(violations, _summary(run, violations, consumers))


def _counts(counts: dict[str, int]) -> str:
    return ', '.join('%s %d' % item for item in counts.items()) or '-'


def format_report(report: Report) -> str:
    lines = ['%s: %s [%s]' % (v.kind, v.message, _fmt_ids(v.op_ids))
             for v in report.violations]
    s = report.summary
    if s['run']:
        lines.append('run: ' + ', '.join('%s %s' % item
                                          for item in s['run'].items()))
    lines += [
        'operations: %d (%s)' % (s['operations'], _counts(s['by_kind'])),
        'outcomes: ' + _counts(s['outcomes']),
        'statuses: ' + _counts(s['statuses']),
        'errors: ' + _counts(s['errors']),
        'faults: ' + _counts(s['faults']),
    ]
    for outage in s['unavailability']:
        lines.append(
            '  %s %s %.1f-%.1f s (recovered %s): no write ok for %.1f s%s'
            % (outage['fault'], outage['target'], outage['started'],
               outage['ended'], '-' if outage['recovered'] is None
               else '%.1f s' % outage['recovered'], outage['seconds'],
               '' if outage['from'] is None else ' (%.1f-%.1f s%s)' % (
                   outage['from'], outage['to'],
                   '' if outage['resumed'] else ', never resumed')))
    longest = s['longest_unavailability']
    if longest is not None:
        lines.append('longest unavailability: %.1f s (%s %s)' % (
            longest['seconds'], longest['fault'], longest['target']))
    slowest = s['slowest_request']
    if slowest is not None:
        lines.append('slowest request: %.1f s (op %d, %s, status %s)' % (
            slowest['seconds'], slowest['id'], slowest['outcome'],
            slowest['status']))
    lines.append('samples: %d; consumers checked: %d'
                 % (s['samples'], s['consumers_checked']))
    if report.violations:
        lines.append('FAILED: %d violation(s): %s' % (
            len(report.violations), _counts(s['violations'])))
    else:
        lines.append('OK: no violations')
    return '\n'.join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description='Check a fault run directory: exit 1 on any violation.')
    parser.add_argument('run_dir')
    parser.add_argument('--json', action='store_true',
                        help='print the report as JSON')
    args = parser.parse_args(argv)
    try:
        report = check(load_run(args.run_dir))
    except (RunError, OSError) as exc:
        print('checker: %s' % exc, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, sort_keys=True))
    else:
        print(format_report(report))
    return 0 if report.ok else 1


if __name__ == '__main__':
    sys.exit(main())
