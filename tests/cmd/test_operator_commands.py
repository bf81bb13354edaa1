"""placement-manage's extensions against a real database:
``candidates explain`` and ``audit``.
"""
import io
import json
import uuid as uuidlib

import pytest

import api_cloud


@pytest.fixture
def hosts(api):
    cloud = api_cloud.Cloud(api)
    cloud.provider('compute-1', inventory={
        'VCPU': 8, 'MEMORY_MB': {'total': 8192, 'reserved': 512}})
    cloud.allocate('vm-1', {'compute-1': {'MEMORY_MB': 5632}})
    cloud.provider('compute-2', inventory={'VCPU': 8, 'MEMORY_MB': 16384},
                   traits=['HW_CPU_X86_AVX2'])
    return cloud


def test_explain(manage_cli, hosts):
    status, out, err = manage_cli(
        'candidates', 'explain', 'resources=MEMORY_MB:4096'
        '&required=HW_CPU_X86_AVX2')
    assert (status, err) == (0, '')
    assert out == [
        '1 allocation candidate(s) returned, 1 found; 1 of 2 provider '
        'tree(s) excluded.',
        "compute-1 (%s): group '': MEMORY_MB: requested 4096, free 2048 "
        "(total 8192, reserved 512, ratio 1.0, used 5632); group '': "
        "missing required trait HW_CPU_X86_AVX2" % hosts.uuids['compute-1'],
    ]


def test_explain_json_and_path(manage_cli, hosts):
    """A whole request path is fine too; --json prints the HTTP body."""
    status, out, _err = manage_cli(
        'candidates', 'explain', '--json',
        '/allocation_candidates?resources=VCPU:1&limit=1')
    assert status == 0
    body = json.loads('\n'.join(out))
    assert body['candidates'] == {
        'found': 2, 'found_complete': True, 'returned': 1}
    assert body['request_reasons'][0]['reason'] == 'limit'


@pytest.mark.parametrize('args, message', [
    (['resources=VCPU:one'], 'Requested resource VCPU expected positive '
                             'integer amount. Got: one.'),
    (['resources=CUSTOM_NOPE:1'], 'Invalid resource class in resources '
                                  'parameter: No such resource class '
                                  'CUSTOM_NOPE.'),
    (['resources=VCPU:1&required=!CUSTOM_X', '--microversion', '1.21'],
     "Invalid query string parameters: Expected 'required' parameter value "
     "of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !CUSTOM_X"),
    (['resources=VCPU:1', '--microversion', '1.9'],
     'Allocation candidates exist from microversion 1.10.'),
    (['resources=VCPU:1', '--microversion', '2.0'],
     'invalid microversion: 2.0 is not a version from 1.0 to 1.39'),
])
def test_explain_errors(manage_cli, hosts, args, message):
    status, out, err = manage_cli('candidates', 'explain', *args)
    assert (status, out) == (2, [])
    assert err == 'placement-manage: %s\n' % message


@pytest.fixture
def untidy(hosts, api):
    """compute-1 over capacity; vm-2 on compute-2 is not in the consumer
    list; an empty consumer.
    """
    hosts.allocate('vm-2', {'compute-2': {'VCPU': 2}})
    hosts.inventory('compute-1', {'VCPU': 8, 'MEMORY_MB': 4096})
    hosts.uuids['vm-empty'] = str(uuidlib.uuid4())
    assert api.put('/allocations/' + hosts.uuids['vm-empty'], json={
        'allocations': {}, 'project_id': 'p', 'user_id': 'u',
        'consumer_generation': None, 'consumer_type': 'INSTANCE'}
    ).status_code == 204
    return hosts


def test_audit_clean(manage_cli, hosts, tmp_path):
    listing = tmp_path / 'servers'
    listing.write_text('%s\n' % hosts.uuids['vm-1'])
    assert manage_cli('audit', '--consumers', str(listing)) == (
        0, ['audit: nothing found'], '')


def test_audit_dry_run_then_fix(manage_cli, untidy, api, tmp_path,
                                monkeypatch):
    listing = tmp_path / 'servers'
    listing.write_text('# openstack server list\n%s\n\n' % untidy.uuids[
        'vm-1'])
    status, out, err = manage_cli('audit', '--consumers', str(listing))
    assert (status, err) == (1, '')
    assert out == [
        'over capacity: compute-1 (%s) MEMORY_MB: used 5632, capacity 4096 '
        '(total 4096, reserved 0, ratio 1.0)' % untidy.uuids['compute-1'],
        'empty consumer: %s (project p, user u, generation 0)'
        % untidy.uuids['vm-empty'],
        'orphaned consumer: %s (project project, user user, generation 1) '
        'holds compute-2 (%s): VCPU=2' % (untidy.uuids['vm-2'],
                                          untidy.uuids['compute-2']),
        'audit: 3 finding(s); dry run, nothing changed (--fix deletes '
        'orphaned and empty consumers)',
    ]
    assert api.get('/allocations/' + untidy.uuids['vm-2']).json[
        'allocations']

    monkeypatch.setattr('sys.stdin', io.StringIO(listing.read_text()))
    status, out, _err = manage_cli('audit', '--consumers', '-', '--fix')
    assert status == 1
    assert out[-3:] == [
        'fixed: deleted the allocations of orphaned consumer %s'
        % untidy.uuids['vm-2'],
        'fixed: deleted empty consumer %s' % untidy.uuids['vm-empty'],
        'audit: 3 finding(s), 2 fixed, 0 skipped; over-capacity and '
        'missing-inventory findings are only reported',
    ]
    assert api.get('/allocations/' + untidy.uuids['vm-2']).json[
        'allocations'] == {}
    assert api.get('/allocations/' + untidy.uuids['vm-1']).json[
        'allocations']
    # What is left is only reported.
    status, out, _err = manage_cli('audit', '--consumers', str(listing),
                                   '--fix')
    assert status == 1
    assert out[0].startswith('over capacity: compute-1')
    assert out[1] == ('audit: 1 finding(s), 0 fixed, 0 skipped; '
                      'over-capacity and missing-inventory findings are '
                      'only reported')


def test_audit_without_consumer_list(manage_cli, untidy):
    """Orphans need the list; the rest is found anyway."""
    status, out, _err = manage_cli('audit')
    assert status == 1
    assert not any(line.startswith('orphaned') for line in out)
    assert out[-1].startswith('audit: 2 finding(s)')


@pytest.mark.parametrize('content, message', [
    ('# nothing\n\n', 'lists no consumer: refusing to treat every consumer '
                      'as orphaned'),
    ('not-a-uuid\n', 'line 1: not a uuid: not-a-uuid'),
])
def test_audit_refuses_a_bad_consumer_list(manage_cli, untidy, tmp_path,
                                           content, message):
    listing = tmp_path / 'servers'
    listing.write_text(content)
    status, out, err = manage_cli('audit', '--consumers', str(listing),
                                  '--fix')
    assert (status, out) == (2, [])
    assert err == 'placement-manage: %s %s\n' % (listing, message)
    status, _out, err = manage_cli('audit', '--consumers',
                                   str(tmp_path / 'missing'))
    assert status == 2
    assert 'No such file or directory' in err
