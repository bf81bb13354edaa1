"""No allocation candidates answer takes a worker's memory or time
without bound: answers beyond [placement] max_returned_allocation_candidates
are refused, large ones are shaped and encoded a chunk at a time into a
spool, and the candidate engine and the encoding stop at the request's
deadline ([placement_database]
transaction_timeout).

One root with three children of 100 units each, asked for with N groups
of one unit and ``group_policy=none``, has 3**N candidates.
"""
import json

import pytest

from placement.api.pipeline import responses
from placement.api.resources import allocation_candidates

from api_cloud import Cloud


def _groups(count, extra=''):
    return '/allocation_candidates?%s&group_policy=none%s' % ('&'.join(
        'resources%d=VCPU:1' % n for n in range(1, count + 1)), extra)


def _tree(api):
    cloud = Cloud(api)
    cloud.provider('root')
    for name in ('c1', 'c2', 'c3'):
        cloud.provider(name, parent='root', inventory={'VCPU': 100})
    return cloud


@pytest.fixture
def bounded_api(api_factory):
    """At most 100 candidates per answer (3**4 = 81 fit, 3**5 do not)."""
    api = api_factory(placement={'max_returned_allocation_candidates': 100})
    _tree(api)
    return api


def test_an_answer_beyond_the_bound_is_refused_naming_the_option(
        bounded_api):
    response = bounded_api.get(_groups(5))
    assert response.status_code == 400
    error = response.json['errors'][0]
    assert error['code'] == 'placement.query.too_many_candidates'
    assert 'max_returned_allocation_candidates' in error['detail']
    assert 'limit=100' in error['detail']


@pytest.mark.parametrize('query, count', [
    (_groups(4), 81),                      # all of them fit
    (_groups(5, '&limit=100'), 100),       # a limit within the bound
    (_groups(4, '&limit=1000'), 81),       # a larger limit, fewer found
])
def test_answers_within_the_bound_are_given(bounded_api, query, count):
    response = bounded_api.get(query)
    assert response.status_code == 200, response.json
    assert len(response.json['allocation_requests']) == count


@pytest.mark.parametrize('version', ['1.16', '1.28'])
def test_the_bound_holds_before_nested_providers_too(api_factory, version):
    """Before 1.29 the answer is bounded as well, and a limit within the
    bound keeps it: three roots of 100 units, asked for with limit=1,
    give one candidate (and the summary of its provider)."""
    api = api_factory(placement={'max_returned_allocation_candidates': 2})
    cloud = Cloud(api)
    for name in ('cn1', 'cn2', 'cn3'):
        cloud.provider(name, inventory={'VCPU': 100})
    query = '/allocation_candidates?resources=VCPU:1'
    refused = api.get(query, version=version)
    assert refused.status_code == 400
    limited = api.get(query + '&limit=1', version=version)
    assert limited.status_code == 200, limited.json
    assert len(limited.json['allocation_requests']) == 1
    assert len(limited.json['provider_summaries']) == 1


@pytest.mark.parametrize('in_memory', [True, False],
                         ids=['in memory', 'in a file'])
def test_a_large_answer_is_spooled_as_it_would_be_sent_whole(
        api_factory, monkeypatch, in_memory):
    api = api_factory(placement={'max_returned_allocation_candidates': 0})
    _tree(api)
    whole = api.get(_groups(4))
    monkeypatch.setattr(allocation_candidates, 'SPOOLED_FROM', 10)
    if not in_memory:
        monkeypatch.setattr(responses, '_SPOOL_IN_MEMORY', 1000)
    spooled = api.get(_groups(4))
    assert spooled.status_code == 200
    assert spooled.headers['Content-Type'] == 'application/json'
    assert spooled.headers['Last-Modified']
    body = spooled.get_data()
    assert int(spooled.headers['Content-Length']) == len(body)
    assert json.loads(body) == json.loads(whole.get_data())


def test_an_answer_too_long_to_make_ends_at_the_deadline(api_factory):
    """Few candidates of many groups each: generated at once, but their
    shaping and encoding would outlast the deadline."""
    api = api_factory(placement={'max_returned_allocation_candidates': 0},
                      placement_database={'transaction_timeout': 0.5})
    _tree(api)
    response = api.get(_groups(60, '&limit=100000'))
    assert response.status_code == 503
    assert response.json['errors'][0]['code'] == (
        'placement.deadline_exceeded')


def test_the_engine_stops_at_the_request_deadline(api_factory):
    """3**14 candidates take minutes to make: the request ends at its
    deadline with a 503 in Placement's format instead."""
    api = api_factory(placement={'max_returned_allocation_candidates': 0},
                      placement_database={'transaction_timeout': 0.5})
    _tree(api)
    response = api.get(_groups(14))
    assert response.status_code == 503
    error = response.json['errors'][0]
    assert error['code'] == 'placement.deadline_exceeded'
    assert 'transaction_timeout' in error['detail']
