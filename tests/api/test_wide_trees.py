"""A wide provider tree through the WSGI app: one root whose children hold
one unit each of a class, asked for one unit in each of as many granular
groups under group_policy=isolate (a GPU or PCI host asked for all its
devices, the shape of upstream bug 2126751). Every assignment of the
children to the groups is a candidate: n! of the n^n combinations.
"""
import math

import pytest

import api_cloud

DEVICE = 'CUSTOM_WIDE_DEVICE'


def _wide_host(api, children):
    """A new host with ``children`` one-unit devices: {uuid: index} of
    the devices."""
    assert api.put('/resource_classes/' + DEVICE).status_code == 201
    cloud = api_cloud.Cloud(api)
    cloud.provider('host')
    return {cloud.provider('device-%d' % child, parent='host',
                           inventory={DEVICE: 1}): child
            for child in range(children)}


def _candidates(api, groups, limit=None):
    query = '&'.join('resources%d=%s:1' % (group, DEVICE)
                     for group in range(1, groups + 1))
    query += '&group_policy=isolate'
    if limit is not None:
        query += '&limit=%d' % limit
    response = api.get('/allocation_candidates?' + query)
    assert response.status_code == 200, response.json
    return response.json['allocation_requests']


def _assignment(candidate, devices):
    """The candidate as the index of the device each group got, in group
    order.

    Fails unless every group maps to exactly one device, each device
    gives its single unit and no device serves two groups.
    """
    allocations = candidate['allocations']
    assert {uuid: alloc['resources'] for uuid, alloc in allocations.items()
            } == {uuid: {DEVICE: 1} for uuid in allocations}
    mappings = candidate['mappings']
    assert all(len(uuids) == 1 for uuids in mappings.values())
    assigned = tuple(devices[mappings[str(group)][0]]
                     for group in range(1, len(mappings) + 1))
    assert len(set(assigned)) == len(assigned) == len(allocations)
    return assigned


def test_every_assignment_of_five_devices(api):
    devices = _wide_host(api, 5)
    assignments = [_assignment(candidate, devices)
                   for candidate in _candidates(api, 5)]
    assert len(assignments) == len(set(assignments)) == math.factorial(5)


@pytest.mark.parametrize('limit', [1000, 10])
def test_limit_on_eight_devices(api, limit):
    """8! = 40,320 candidates: the limit gives that many distinct ones,
    each with all eight devices."""
    devices = _wide_host(api, 8)
    assignments = {_assignment(candidate, devices)
                   for candidate in _candidates(api, 8, limit)}
    assert len(assignments) == limit
    assert {len(assignment) for assignment in assignments} == {8}


def test_more_groups_than_devices(api):
    _wide_host(api, 3)
    assert _candidates(api, 4) == []
