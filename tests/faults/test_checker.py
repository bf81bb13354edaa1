"""tools/faults/checker.py on small hand-written runs: each test writes a
run directory the way the fault runner does and checks what is found."""
import json
import pathlib
import sys

import pytest

# The fault harness's tools are scripts, not a package.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / 'tools'
                       / 'faults'))
import checker  # noqa: E402

RP1 = 'rp-1'
RP2 = 'rp-2'
CAPACITY = {RP1: {'VCPU': 8.0, 'MEMORY_MB': 4096.0},
            RP2: {'VCPU': 8.0, 'MEMORY_MB': 4096.0}}
STATUS = {'ok': 200, 'fail': 409, 'unknown': 503}


def alloc(op_id, kind, sent, outcome, writes, generations=None,
          status='default', process='c1'):
    """An allocation op; ``generations`` None = a DELETE (unchecked)."""
    record = {
        'id': op_id, 'process': process, 'server': 'api1', 'op': kind,
        'method': 'DELETE' if kind == 'delete' else 'PUT',
        'path': '/allocations/%s' % next(iter(writes)),
        'sent': sent, 'ended': sent + 0.5, 'outcome': outcome,
        'status': STATUS[outcome] if status == 'default' else status,
        'error': None, 'writes': writes,
    }
    if generations is not None:
        record['consumer_generations'] = generations
    return record


def provider_op(op_id, sent, outcome, generation, new_generation,
                kind='inventory', rp=RP1):
    return {
        'id': op_id, 'process': 'p1', 'server': 'api2', 'op': kind,
        'method': 'PUT', 'path': '/resource_providers/%s/inventories' % rp,
        'sent': sent, 'ended': sent + 0.5, 'outcome': outcome,
        'status': STATUS[outcome], 'error': None, 'provider': rp,
        'provider_generation': generation,
        'new_provider_generation': new_generation,
    }


def write_run(path, ops, allocations, samples=(), faults=(), capacity=None,
              usage_api=None, provider_generations=None, final=True):
    def jsonl(name, records):
        path.joinpath(name).write_text(
            ''.join(json.dumps(r) + '\n' for r in records))
    jsonl('history.jsonl', ops)
    jsonl('samples.jsonl', samples)
    jsonl('faults.jsonl', faults)
    if final:
        path.joinpath('final.json').write_text(json.dumps({
            'allocations': allocations,
            'capacity': CAPACITY if capacity is None else capacity,
            'usage_api': (checker.sum_usage(allocations) if usage_api is None
                          else usage_api),
            'provider_generations': provider_generations or {},
            'consumer_generations': {c: 0 for c in allocations},
        }))
    path.joinpath('run.json').write_text(json.dumps({
        'topology': 'galera-backup', 'setting': 'test', 'service': 'this',
        'rounds': 1, 'faults': [], 'began': '2024-01-01T00:00:00'}))
    return str(path)


def violations(run_dir):
    return [(v.kind, v.op_ids)
            for v in checker.check(checker.load_run(run_dir)).violations]


def one(run_dir, kind):
    """The run's only violation, which must be of ``kind``: its op ids."""
    found = violations(run_dir)
    assert [k for k, _ in found] == [kind], found
    return found[0][1]


VCPU2 = {RP1: {'VCPU': 2}}
VCPU4 = {RP1: {'VCPU': 4}}
SPLIT = {RP1: {'VCPU': 2}, RP2: {'MEMORY_MB': 512}}


def test_clean_run_with_unknowns_either_way(tmp_path):
    ops = [
        # a: claimed, then an unknown replace that was applied.
        alloc(1, 'claim', 1.0, 'ok', {'a': VCPU2}, {'a': None}),
        alloc(2, 'replace', 2.0, 'unknown', {'a': VCPU4}, {'a': 0},
              status=None),
        # b: claimed, then an unknown delete that was not applied.
        alloc(3, 'claim', 1.0, 'ok', {'b': VCPU2}, {'b': None}, process='c2'),
        alloc(4, 'delete', 2.0, 'unknown', {'b': {}}, process='c2'),
        # c: an unknown claim that was not applied; d: a refused claim.
        alloc(5, 'claim', 1.0, 'unknown', {'c': VCPU2}, {'c': None},
              process='c3'),
        alloc(6, 'claim', 1.0, 'fail', {'d': VCPU2}, {'d': None},
              process='c4'),
        # e moves to f (ok), then f moves to g (unknown, applied whole).
        alloc(7, 'claim', 1.0, 'ok', {'e': SPLIT}, {'e': None},
              process='c5'),
        alloc(8, 'move', 2.0, 'ok', {'e': {}, 'f': SPLIT},
              {'e': 0, 'f': None}, process='c5'),
        alloc(9, 'move', 3.0, 'unknown', {'f': {}, 'g': SPLIT},
              {'f': 0, 'g': None}, process='c5'),
        # h: created, updated, deleted and created anew: generations
        # count again from the start.
        alloc(10, 'claim', 1.0, 'ok', {'h': VCPU2}, {'h': None},
              process='c6'),
        alloc(11, 'replace', 2.0, 'ok', {'h': VCPU4}, {'h': 0},
              process='c6'),
        alloc(12, 'delete', 3.0, 'ok', {'h': {}}, process='c6'),
        alloc(13, 'claim', 4.0, 'ok', {'h': VCPU2}, {'h': None},
              process='c6'),
        alloc(14, 'replace', 5.0, 'ok', {'h': VCPU4}, {'h': 0},
              process='c6'),
        # i: an unknown delete may have emptied it: a new creation is legal.
        alloc(15, 'claim', 1.0, 'ok', {'i': VCPU2}, {'i': None},
              process='c7'),
        alloc(16, 'delete', 2.0, 'unknown', {'i': {}}, process='c7'),
        alloc(17, 'claim', 3.0, 'ok', {'i': VCPU2}, {'i': None},
              process='c7'),
        provider_op(18, 1.0, 'ok', 0, 1),
        provider_op(19, 2.0, 'ok', 1, 2, kind='trait'),
        provider_op(20, 3.0, 'unknown', 2, None, kind='aggregate'),
        provider_op(21, 4.0, 'fail', 2, None),
        {**alloc(22, 'claim', 6.0, 'unknown', {'j': VCPU2}, {'j': None},
                 process='c8'), 'status': 503},
    ]
    final = {'a': VCPU4, 'b': VCPU2, 'g': SPLIT, 'h': VCPU4, 'i': VCPU2}
    capacity = {RP1: {'VCPU': 16.0}, RP2: {'MEMORY_MB': 1024.0}}
    samples = [{'time': 2.2, 'capacity': capacity,
                'usage': {RP1: {'VCPU': 8}, RP2: {'MEMORY_MB': 512}}}]
    faults = [{'fault': 'freeze', 'target': 'node1', 'started': 1.5,
               'ended': 3.5, 'recovered': 4.0}]
    run_dir = write_run(tmp_path, ops, final, samples, faults,
                        capacity=capacity, provider_generations={RP1: 7})
    report = checker.check(checker.load_run(run_dir))
    assert report.violations == []
    assert report.ok
    summary = report.summary
    assert summary['operations'] == 22
    assert summary['by_kind'] == {'aggregate': 1, 'claim': 10, 'delete': 3,
                                  'inventory': 2, 'move': 2, 'replace': 3,
                                  'trait': 1}
    assert summary['outcomes'] == {'ok': 13, 'fail': 2, 'unknown': 7}
    assert summary['statuses'] == {'200': 13, '409': 2, '503': 6, 'none': 1}
    assert summary['faults'] == {'freeze': 1}
    assert summary['samples'] == 1
    assert summary['consumers_checked'] == 10
    assert summary['run']['topology'] == 'galera-backup'
    text = checker.format_report(report)
    assert text.splitlines()[-1] == 'OK: no violations'
    assert 'freeze node1' in text


def test_lost_claim(tmp_path):
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': VCPU2}, {'a': None}),
           alloc(2, 'claim', 1.0, 'ok', {'b': VCPU2}, {'b': None})]
    run_dir = write_run(tmp_path, ops, {'b': VCPU2})
    assert one(run_dir, 'lost-write') == [1]


def test_lost_delete_back_to_the_claim(tmp_path):
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': VCPU2}, {'a': None}),
           alloc(2, 'delete', 2.0, 'ok', {'a': {}})]
    assert one(write_run(tmp_path, ops, {'a': VCPU2}), 'lost-write') == [2, 1]


def test_over_capacity_in_a_sample(tmp_path):
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': {RP1: {'VCPU': 6}}},
                 {'a': None}),
           alloc(2, 'claim', 1.0, 'unknown', {'b': {RP1: {'VCPU': 6}}},
                 {'b': None}, process='c2'),
           alloc(3, 'delete', 3.0, 'ok', {'b': {}}, process='c2')]
    samples = [{'time': 1.6, 'capacity': CAPACITY,
                'usage': {RP1: {'VCPU': 6}}},
               {'time': 2.0, 'capacity': CAPACITY,
                'usage': {RP1: {'VCPU': 12}}},
               {'time': 4.0, 'capacity': CAPACITY,
                'usage': {RP1: {'VCPU': 6}}}]
    run_dir = write_run(tmp_path, ops, {'a': {RP1: {'VCPU': 6}}}, samples)
    assert one(run_dir, 'over-capacity') == [1, 2]


def test_capacity_rounding_is_tolerated(tmp_path):
    # (10 - 0) * 0.3 in floats.
    capacity = {RP1: {'VCPU': 10 * 0.3 - 4e-16}}
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': {RP1: {'VCPU': 3}}},
                 {'a': None})]
    samples = [{'time': 2.0, 'capacity': capacity,
                'usage': {RP1: {'VCPU': 3}}}]
    run_dir = write_run(tmp_path, ops, {'a': {RP1: {'VCPU': 3}}}, samples,
                        capacity=capacity)
    assert violations(run_dir) == []


def test_over_capacity_only_at_the_end(tmp_path):
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': {RP1: {'VCPU': 6}}},
                 {'a': None}),
           alloc(2, 'claim', 2.0, 'ok', {'b': {RP1: {'VCPU': 6}}},
                 {'b': None}, process='c2')]
    samples = [{'time': 1.6, 'capacity': CAPACITY,
                'usage': {RP1: {'VCPU': 6}}}]
    final = {'a': {RP1: {'VCPU': 6}}, 'b': {RP1: {'VCPU': 6}}}
    assert one(write_run(tmp_path, ops, final, samples),
               'over-capacity') == [1, 2]


def test_half_stored_claim(tmp_path):
    ops = [alloc(1, 'claim', 1.0, 'unknown', {'a': SPLIT}, {'a': None})]
    run_dir = write_run(tmp_path, ops, {'a': {RP2: {'MEMORY_MB': 512}}})
    assert one(run_dir, 'half-applied') == [1]


def test_half_applied_replace(tmp_path):
    # The new allocations were written, the old ones never deleted.
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': VCPU2}, {'a': None}),
           alloc(2, 'replace', 2.0, 'unknown',
                 {'a': {RP2: {'MEMORY_MB': 512}}}, {'a': 0})]
    assert one(write_run(tmp_path, ops, {'a': SPLIT}),
               'half-applied') == [1, 2]


def test_half_applied_unknown_move(tmp_path):
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': VCPU2}, {'a': None}),
           alloc(2, 'move', 2.0, 'unknown', {'a': {}, 'b': VCPU2},
                 {'a': 0, 'b': None})]
    # a lost its allocations, b never got them: each alone is allowed.
    assert one(write_run(tmp_path, ops, {}), 'half-applied') == [2]


def test_half_applied_ok_move(tmp_path):
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': VCPU2}, {'a': None}),
           alloc(2, 'move', 2.0, 'ok', {'a': {}, 'b': VCPU2},
                 {'a': 0, 'b': None})]
    # Held twice: reported once, as the move's.
    final = {'a': VCPU2, 'b': VCPU2}
    assert one(write_run(tmp_path, ops, final), 'half-applied') == [2]


def test_fail_claim_present(tmp_path):
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': VCPU2}, {'a': None}),
           alloc(2, 'replace', 2.0, 'fail', {'a': VCPU4}, {'a': 0})]
    assert one(write_run(tmp_path, ops, {'a': VCPU4}),
               'fail-applied') == [1, 2]


def test_unexpected_state(tmp_path):
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': VCPU2}, {'a': None})]
    run_dir = write_run(tmp_path, ops, {'a': {RP2: {'VCPU': 1}},
                                        'z': VCPU2})
    assert violations(run_dir) == [('unexpected-state', [1]),
                                   ('unexpected-state', [])]


def test_repeated_consumer_generation(tmp_path):
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': VCPU2}, {'a': None}),
           alloc(2, 'replace', 2.0, 'ok', {'a': VCPU4}, {'a': 0}),
           alloc(3, 'replace', 3.0, 'ok', {'a': VCPU2}, {'a': 0})]
    assert one(write_run(tmp_path, ops, {'a': VCPU2}),
               'repeated-generation') == [2, 3]


def test_consumer_created_twice(tmp_path):
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': VCPU2}, {'a': None}),
           alloc(2, 'claim', 2.0, 'ok', {'a': VCPU4}, {'a': None})]
    assert one(write_run(tmp_path, ops, {'a': VCPU4}),
               'repeated-generation') == [1, 2]


def test_repeated_provider_generation(tmp_path):
    ops = [provider_op(1, 1.0, 'ok', 3, 4),
           provider_op(2, 2.0, 'ok', 3, 4, kind='trait')]
    run_dir = write_run(tmp_path, ops, {}, provider_generations={RP1: 4})
    assert one(run_dir, 'repeated-generation') == [1, 2]


def test_generation_skip(tmp_path):
    ops = [provider_op(1, 1.0, 'ok', 3, 5)]
    run_dir = write_run(tmp_path, ops, {}, provider_generations={RP1: 5})
    assert one(run_dir, 'generation-skip') == [1]


def test_lost_provider_write(tmp_path):
    ops = [provider_op(1, 1.0, 'ok', 3, 4), provider_op(2, 2.0, 'ok', 4, 5)]
    run_dir = write_run(tmp_path, ops, {}, provider_generations={RP1: 4})
    assert one(run_dir, 'lost-write') == [2]


def test_usage_mismatch(tmp_path):
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': VCPU2}, {'a': None})]
    run_dir = write_run(tmp_path, ops, {'a': VCPU2},
                        usage_api={RP1: {'VCPU': 0}})
    assert one(run_dir, 'usage-mismatch') == [1]


def test_server_error(tmp_path):
    ops = [alloc(1, 'claim', 1.0, 'unknown', {'a': VCPU2}, {'a': None},
                 status=500),
           alloc(2, 'claim', 2.0, 'unknown', {'a': VCPU2}, {'a': None},
                 status=503),
           alloc(3, 'claim', 3.0, 'ok', {'a': VCPU2}, {'a': None})]
    assert one(write_run(tmp_path, ops, {'a': VCPU2}), 'server-error') == [1]


def test_missing_final(tmp_path):
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': VCPU2}, {'a': None})]
    assert one(write_run(tmp_path, ops, {}, final=False),
               'missing-final') == []


VCPU1 = {RP1: {'VCPU': 1}}


def ok_at(op_id, ended):
    return alloc(op_id, 'claim', ended - 0.5, 'ok', {'c%d' % op_id: VCPU1},
                 {'c%d' % op_id: None})


def test_unavailability(tmp_path):
    ops = [ok_at(1, 1.0), ok_at(2, 2.0), ok_at(3, 3.0),
           # During the first fault: refused, then unknown.
           alloc(4, 'claim', 4.0, 'fail', {'x': VCPU2}, {'x': None},
                 status=None),
           alloc(5, 'claim', 6.0, 'unknown', {'y': VCPU2}, {'y': None}),
           ok_at(6, 14.0), ok_at(7, 15.0), ok_at(8, 16.0),
           # Nothing ok after the second fault began.
           alloc(9, 'claim', 17.0, 'unknown', {'z': VCPU2}, {'z': None},
                 status=None)]
    faults = [{'fault': 'kill', 'target': 'node1', 'started': 3.5,
               'ended': 10.0, 'recovered': 12.0},
              {'fault': 'api-kill', 'target': 'api1', 'started': 16.2,
               'ended': 17.0, 'recovered': None}]
    final = {'c%d' % i: VCPU1 for i in (1, 2, 3, 6, 7, 8)}
    report = checker.check(checker.load_run(
        write_run(tmp_path, ops, final, faults=faults)))
    assert report.violations == []
    first, second = report.summary['unavailability']
    # From the fault's start (the last ok was before it) to the next ok.
    assert (first['seconds'], first['from'], first['to'],
            first['resumed']) == (10.5, 3.5, 14.0, True)
    # To the end of the workload (op 9 ended at 17.5), never resumed.
    assert (second['seconds'], second['from'], second['to'],
            second['resumed']) == (1.3, 16.2, 17.5, False)
    assert report.summary['longest_unavailability']['target'] == 'node1'
    assert report.summary['faults'] == {'api-kill': 1, 'kill': 1}
    assert 'no write ok for 10.5 s' in checker.format_report(report)


def test_unavailability_gap_inside_the_window(tmp_path):
    ops = [ok_at(1, 1.0), ok_at(2, 5.0), ok_at(3, 12.0), ok_at(4, 13.0)]
    faults = [{'fault': 'partition', 'target': 'node2', 'started': 0.5,
               'ended': 10.0, 'recovered': 11.0}]
    final = {'c%d' % i: VCPU1 for i in (1, 2, 3, 4)}
    report = checker.check(checker.load_run(
        write_run(tmp_path, ops, final, faults=faults)))
    outage = report.summary['unavailability'][0]
    assert (outage['seconds'], outage['from'], outage['to']) == (7.0, 5.0,
                                                                 12.0)


@pytest.mark.parametrize('clean', [True, False])
def test_cli_exit_status(tmp_path, capsys, clean):
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': VCPU2}, {'a': None})]
    run_dir = write_run(tmp_path, ops, {'a': VCPU2} if clean else {})
    assert checker.main([run_dir]) == (0 if clean else 1)
    text = capsys.readouterr().out
    assert ('OK: no violations' in text) == clean
    assert ('lost-write: consumer a' in text) != clean
    assert checker.main([run_dir, '--json']) == (0 if clean else 1)
    report = json.loads(capsys.readouterr().out)
    assert report['summary']['operations'] == 1
    assert [v['op_ids'] for v in report['violations']] == (
        [] if clean else [[1]])


def test_cli_unreadable_run(tmp_path, capsys):
    assert checker.main([str(tmp_path / 'nothing')]) == 2
    assert 'not a directory' in capsys.readouterr().err


def test_summary_names_the_slowest_request_and_the_errors(tmp_path):
    slow = alloc(2, 'claim', 2.0, 'unknown', {'b': VCPU2}, {'b': None},
                 status=503)
    slow.update(ended=14.5, error='placement.commit_outcome_unknown')
    ops = [alloc(1, 'claim', 1.0, 'ok', {'a': VCPU2}, {'a': None}), slow]
    summary = checker.check(checker.load_run(
        write_run(tmp_path, ops, {'a': VCPU2, 'b': VCPU2}))).summary
    assert summary['slowest_request'] == {
        'seconds': 12.5, 'id': 2, 'outcome': 'unknown', 'status': 503}
    assert summary['errors'] == {'placement.commit_outcome_unknown': 1}
