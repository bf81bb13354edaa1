"""GET /x-explain/allocation_candidates (an extension) and the DEBUG line
GET /allocation_candidates logs when it finds nothing.
"""
import logging

import pytest

import api_cloud
import error_text

PATH = '/x-explain/allocation_candidates?'
AVX2 = 'HW_CPU_X86_AVX2'


@pytest.fixture
def cloud(api):
    """Four hosts in aggregate A or B, each failing a different part of
    ``_classic_query``.
    """
    cloud = api_cloud.Cloud(api)
    cloud.provider('compute-1', inventory={
        'VCPU': 8, 'MEMORY_MB': {'total': 8192, 'reserved': 512}},
        traits=[AVX2], aggregates=['A'])
    cloud.allocate('vm-1', {'compute-1': {'MEMORY_MB': 5632}})
    cloud.provider('compute-2', inventory={'VCPU': 8, 'MEMORY_MB': 16384},
                   aggregates=['A'])
    cloud.provider('compute-3', inventory={'VCPU': 8, 'MEMORY_MB': 16384},
                   traits=[AVX2], aggregates=['B'])
    cloud.provider('compute-4', inventory={
        'VCPU': {'total': 4, 'allocation_ratio': 2.0}, 'MEMORY_MB': 16384},
        traits=[AVX2], aggregates=['A'])
    cloud.allocate('vm-2', {'compute-4': {'VCPU': 8}})
    return cloud


def _classic_query(cloud):
    return ('resources=VCPU:1,MEMORY_MB:4096&required=%s&member_of=%s'
            % (AVX2, cloud.uuids['A']))


def _explain(api, query, status=200, **kwargs):
    response = api.get(PATH + query, **kwargs)
    assert response.status_code == status, response.json
    return response.json


def _line(body, cloud, name):
    prefix = '%s (%s): ' % (name, cloud.uuids[name])
    [line] = [line for line in body['text'].splitlines()
              if line.startswith(prefix)]
    return line[len(prefix):]


def test_classic_causes_one_line_per_provider(api, cloud):
    body = _explain(api, _classic_query(cloud))
    assert body['text'].splitlines()[0] == (
        'No allocation candidates: 4 of 4 provider tree(s) excluded.')
    assert len(body['text'].splitlines()) == 5
    assert _line(body, cloud, 'compute-1') == (
        "group '': MEMORY_MB: requested 4096, free 2048 (total 8192, "
        "reserved 512, ratio 1.0, used 5632)")
    assert _line(body, cloud, 'compute-2') == (
        "group '': missing required trait HW_CPU_X86_AVX2")
    assert _line(body, cloud, 'compute-3') == (
        "group '': not in aggregate(s) member_of=%s" % cloud.uuids['A'])
    # An allocation ratio used up: the ratio is part of the line.
    assert _line(body, cloud, 'compute-4') == (
        "group '': VCPU: requested 1, free 0 (total 4, reserved 0, "
        "ratio 2.0, used 8)")


def test_structured_reasons(api, cloud):
    body = _explain(api, _classic_query(cloud))
    assert body['candidates'] == {
        'found': 0, 'found_complete': True, 'returned': 0}
    assert body['microversion'] == '1.39'
    by_uuid = {p['uuid']: p for p in body['providers']}
    [reason] = by_uuid[cloud.uuids['compute-1']]['reasons']
    assert reason == {
        'reason': 'capacity', 'group': '', 'resource_class': 'MEMORY_MB',
        'requested': 4096, 'free': 2048, 'total': 8192, 'reserved': 512,
        'allocation_ratio': 1.0, 'used': 5632,
        'message': reason['message']}
    [reason] = by_uuid[cloud.uuids['compute-2']]['reasons']
    assert (reason['reason'], reason['traits']) == ('missing_trait', [AVX2])
    assert all(p['excluded'] for p in body['providers'])


def test_agrees_with_the_endpoint(api, cloud):
    """A host the explanation does not exclude is a candidate."""
    query = 'resources=VCPU:1,MEMORY_MB:4096&required=%s' % AVX2
    real = api.get('/allocation_candidates?' + query).json
    [candidate] = real['allocation_requests']
    assert list(candidate['allocations']) == [cloud.uuids['compute-3']]
    body = _explain(api, query)
    assert body['candidates']['returned'] == 1
    kept = [p['name'] for p in body['providers'] if not p['excluded']]
    assert kept == ['compute-3']
    assert body['text'].splitlines()[0] == (
        '1 allocation candidate(s) returned, 1 found; 3 of 4 provider '
        'tree(s) excluded.')


def test_limit_and_max_candidates_are_named(api_factory, api, cloud):
    body = _explain(api, 'resources=VCPU:1&limit=1')
    assert body['candidates'] == {
        'found': 3, 'found_complete': True, 'returned': 1}
    assert 'limit=1 returned 1 of 3 candidate(s).' in body['text']
    capped = api_factory(placement={'max_allocation_candidates': 2})
    body = _explain(capped, 'resources=VCPU:1')
    assert body['candidates']['found'] == 2
    [reason] = body['request_reasons']
    assert reason['reason'] == 'max_allocation_candidates'
    assert reason['message'] == (
        '[placement] max_allocation_candidates=2 stopped the search after '
        '2 candidate(s); more exist.')


def test_missing_class_min_unit_and_forbidden_trait(api, cloud):
    cloud.provider('compute-5', inventory={'VCPU': {
        'total': 8, 'min_unit': 2, 'step_size': 2}}, traits=['CUSTOM_OLD'])
    body = _explain(api, 'resources=VCPU:3&required=!CUSTOM_OLD')
    assert _line(body, cloud, 'compute-5') == (
        "group '': VCPU: requested 3, step_size 2; group '': has forbidden "
        "trait CUSTOM_OLD")
    body = _explain(api, 'resources=VCPU:2,VGPU:1')
    assert _line(body, cloud, 'compute-5') == (
        "group '': no VGPU inventory in the tree or from a sharing provider")
    body = _explain(api, 'resources=VCPU:1&resources1=VCPU:1'
                         '&group_policy=none')
    assert _line(body, cloud, 'compute-5') == (
        "group '': VCPU: requested 1, min_unit 2; "
        "group '': VCPU: requested 1, step_size 2; "
        "group '1': VCPU: requested 1, min_unit 2; "
        "group '1': VCPU: requested 1, step_size 2")


def test_root_required_in_tree_and_isolate(api, cloud):
    body = _explain(api, 'resources=VCPU:1&root_required=!%s' % AVX2)
    assert _line(body, cloud, 'compute-3') == (
        'root_required: the root provider has forbidden trait %s' % AVX2)
    body = _explain(api, 'resources=VCPU:1&in_tree=%s'
                    % cloud.uuids['compute-2'])
    assert _line(body, cloud, 'compute-3') == (
        "group '': in_tree=%s is another tree" % cloud.uuids['compute-2'])
    body = _explain(api, 'resources1=VCPU:1&resources2=MEMORY_MB:1'
                         '&group_policy=isolate')
    assert _line(body, cloud, 'compute-2') == (
        'group_policy=isolate: the suffixed groups can only be satisfied '
        'by sharing a provider')


def test_nested_tree_and_same_subtree(api):
    cloud = api_cloud.Cloud(api)
    cloud.provider('cn', inventory={'VCPU': 4})
    cloud.provider('nic-a', parent='cn', inventory={
        'SRIOV_NET_VF': 4}, traits=['CUSTOM_PHYSNET_A'])
    cloud.provider('nic-b', parent='cn', inventory={
        'SRIOV_NET_VF': 4}, traits=['CUSTOM_PHYSNET_B'])
    cloud.allocate('vm', {'nic-b': {'SRIOV_NET_VF': 4}})
    body = _explain(api, 'resources=VCPU:1&resources_N=SRIOV_NET_VF:1'
                         '&required_N=CUSTOM_PHYSNET_B')
    # Each provider of the tree that could have served the group says why.
    assert _line(body, cloud, 'nic-a') == (
        "group '_N': missing required trait CUSTOM_PHYSNET_B")
    assert _line(body, cloud, 'nic-b') == (
        "group '_N': SRIOV_NET_VF: requested 1, free 0 (total 4, reserved "
        "0, ratio 1.0, used 4)")
    body = _explain(api, 'resources_N=SRIOV_NET_VF:1'
                         '&required_X=CUSTOM_PHYSNET_B&same_subtree=_N,_X'
                         '&group_policy=none')
    assert _line(body, cloud, 'cn') == (
        'same_subtree=_N,_X: the providers that satisfy these groups are '
        'not all under one of them')


def test_sharing_provider_reachability(api):
    cloud = api_cloud.Cloud(api)
    cloud.provider('cn-1', inventory={'VCPU': 4}, aggregates=['A'])
    cloud.provider('cn-2', inventory={'VCPU': 4}, aggregates=['B'])
    cloud.provider('nfs', inventory={'DISK_GB': 100},
                   traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=['A'])
    cloud.provider('ceph', inventory={'DISK_GB': 100}, aggregates=['B'])
    body = _explain(api, 'resources=VCPU:1,DISK_GB:500')
    # Its own reason, then why its own tree anchors nothing.
    assert _line(body, cloud, 'nfs') == (
        "group '': DISK_GB: requested 500, free 100 (total 100, reserved 0, "
        "ratio 1.0, used 0); a sharing provider: it only completes the "
        "candidates of the trees it shares with")
    assert _line(body, cloud, 'cn-1') == (
        "group '': no DISK_GB inventory in the tree, and sharing provider(s) "
        "nfs (%s) cannot supply it" % cloud.uuids['nfs'])
    assert _line(body, cloud, 'cn-2') == (
        "group '': no DISK_GB inventory in the tree or from a sharing "
        "provider (sharing provider(s) nfs (%s) in no aggregate with it; "
        "ceph (%s) in an aggregate with it but without trait "
        "MISC_SHARES_VIA_AGGREGATE)" % (cloud.uuids['nfs'],
                                        cloud.uuids['ceph']))


def test_unknown_trait_where_the_endpoint_finds_nothing(api, cloud):
    query = ('resources=VCPU:1000&resources1=VCPU:1&required1=CUSTOM_NONE'
             '&group_policy=none')
    real = api.get('/allocation_candidates?' + query)
    assert real.json['allocation_requests'] == []
    body = _explain(api, query)
    [reason] = body['request_reasons']
    assert reason['reason'] == 'unknown_name'
    assert 'No such trait(s): CUSTOM_NONE' in reason['message']


@pytest.mark.parametrize('roles', [None, 'member,reader', 'service'])
def test_admin_only(api, cloud, roles):
    response = api.get(PATH + 'resources=VCPU:1', token='user:project',
                       headers={'X-Roles': roles})
    assert response.status_code == 403
    assert ('Policy does not allow placement:x-explain to be performed.'
            in error_text.raw_detail(response))
    # The real endpoint lets a service in.
    assert api.get('/allocation_candidates?resources=VCPU:1',
                   token='user:project', headers={'X-Roles': roles}
                   ).status_code == (200 if roles == 'service' else 403)


@pytest.mark.parametrize('query', [
    'resources=VCPU:x',
    'resources=VCPU:1&bogus=1',
    'resources=CUSTOM_NOPE:1',
    'resources=VCPU:1&required=CUSTOM_NOPE',
    'resources1=VCPU:1&resources2=VCPU:1',
])
def test_bad_query_strings_as_the_endpoint(api, query):
    real = api.get('/allocation_candidates?' + query)
    assert real.status_code == 400
    response = api.get(PATH + query)
    assert response.status_code == 400
    assert error_text.raw_detail(response) == (
        error_text.raw_detail(real))


def test_versions(api, cloud):
    """Latest without a version header; otherwise as the endpoint."""
    body = _explain(api, 'resources=VCPU:1&in_tree=%s'
                    % cloud.uuids['compute-2'], version=None)
    assert body['microversion'] == '1.39'
    _explain(api, 'resources=VCPU:1', status=404, version='1.9')
    # member_of is only known from 1.21: the 1.20 schema refuses it.
    _explain(api, 'resources=VCPU:1&member_of=%s' % cloud.uuids['A'],
             status=400, version='1.20')


def test_debug_line_when_nothing_found(api, cloud, caplog):
    caplog.set_level(logging.DEBUG, logger='placement.api.resources.explain')
    api.get('/allocation_candidates?resources=VCPU:1')
    assert not caplog.records
    api.get('/allocation_candidates?' + _classic_query(cloud))
    [record] = caplog.records
    message = record.getMessage()
    assert message.startswith(
        'GET /allocation_candidates?%s: No allocation candidates: 4 of 4 '
        'provider tree(s) excluded. | compute-1 (' % _classic_query(cloud))
    assert "missing required trait HW_CPU_X86_AVX2" in message
    assert '\n' not in message


def test_no_explanation_without_debug(api, cloud, caplog, monkeypatch):
    caplog.set_level(logging.INFO, logger='placement.api.resources.explain')
    calls = []
    monkeypatch.setattr('placement.candidates.explain.explain',
                        lambda *args: calls.append(args))
    response = api.get('/allocation_candidates?' + _classic_query(cloud))
    assert response.json['allocation_requests'] == []
    assert calls == []
    assert not caplog.records
