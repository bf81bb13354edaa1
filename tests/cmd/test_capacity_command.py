"""placement-manage capacity against a real database."""
import io
import json

import pytest

import api_cloud

SMALL = 'resources=VCPU:1,MEMORY_MB:1024'
AVX = SMALL + '&required=HW_CPU_X86_AVX2'


@pytest.fixture
def hosts(api):
    cloud = api_cloud.Cloud(api)
    cloud.provider('compute-1', inventory={
        'VCPU': 8, 'MEMORY_MB': {'total': 8192, 'reserved': 512}})
    cloud.allocate('vm-1', {'compute-1': {'MEMORY_MB': 5632}})
    cloud.provider('compute-2', inventory={'VCPU': 2, 'MEMORY_MB': 16384},
                   traits=['HW_CPU_X86_AVX2'])
    return cloud


def test_text(manage_cli, hosts):
    status, out, err = manage_cli('capacity', SMALL, '--flavour',
                                  'avx=' + AVX, '--hosts', '1')
    assert (status, err) == (0, '')
    assert out == [
        'flavour  fit  limited by  method  query',
        '-          4  MEMORY_MB   exact   ' + SMALL,
        'avx        2  VCPU        exact   ' + AVX,
        '  %s: compute-1 (%s) 2, limited by MEMORY_MB (exact)'
        % (SMALL, hosts.uuids['compute-1']),
        '  avx: compute-2 (%s) 2, limited by VCPU (exact)'
        % hosts.uuids['compute-2'],
    ]


def test_stranded(manage_cli, hosts):
    """compute-1 has room, but not for the only flavour asked."""
    status, out, _err = manage_cli('capacity', '--flavour', 'avx=' + AVX)
    assert status == 0
    assert out[2:] == [
        'stranded: MEMORY_MB 2048 on 1 host(s) where no flavour fits',
        'stranded: VCPU 8 on 1 host(s) where no flavour fits',
    ]


def test_json_from_a_file_as_the_http_answer(manage_cli, hosts, api,
                                             tmp_path, monkeypatch):
    flavours = tmp_path / 'flavours'
    flavours.write_text('small %s\n# not this\navx   %s\n' % (SMALL, AVX))
    status, out, _err = manage_cli('capacity', '--json', '--file',
                                   str(flavours))
    assert status == 0
    body = json.loads('\n'.join(out))
    http = api.post('/x-capacity/allocation_candidates', json={
        'flavours': {'small': SMALL, 'avx': AVX}}).json
    assert body == http
    monkeypatch.setattr('sys.stdin', io.StringIO('small %s\n' % SMALL))
    status, out, _err = manage_cli('capacity', '--json', '--file', '-')
    assert [f['fit'] for f in json.loads('\n'.join(out))['flavours']] == [4]


@pytest.mark.parametrize('args, message', [
    ([], 'no flavour given: QUERY, --flavour NAME=QUERY or --file FILE'),
    (['resources=VCPU:one'], 'Requested resource VCPU expected positive '
                             'integer amount. Got: one.'),
    (['--flavour', 'odd=resources=VCPU:one'],
     'Flavour odd: Requested resource VCPU expected positive integer '
     'amount. Got: one.'),
    (['--flavour', 'odd=resources=CUSTOM_NOPE:1'],
     'Flavour odd: Invalid resource class in resources parameter: No such '
     'resource class CUSTOM_NOPE.'),
    (['resources=CUSTOM_NOPE:1'], 'Invalid resource class in resources '
                                  'parameter: No such resource class '
                                  'CUSTOM_NOPE.'),
    (['--flavour', 'resources'], '--flavour resources: expected NAME=QUERY'),
    (['--file', '/nonexistent/flavours'],
     "[Errno 2] No such file or directory: '/nonexistent/flavours'"),
    ([SMALL, '--microversion', '1.9'],
     'Allocation candidates exist from microversion 1.10.'),
    ([SMALL, '--hosts', '-1'], '--hosts must not be negative'),
])
def test_errors(manage_cli, hosts, args, message):
    status, out, err = manage_cli('capacity', *args)
    assert (status, out) == (2, [])
    assert err == 'placement-manage: %s\n' % message


def test_bad_file_line(manage_cli, hosts, tmp_path):
    flavours = tmp_path / 'flavours'
    flavours.write_text('small %s\nlonely\n' % SMALL)
    status, _out, err = manage_cli('capacity', '--file', str(flavours))
    assert status == 2
    assert err == ('placement-manage: line 2: expected a name and a query '
                   'string\n')
