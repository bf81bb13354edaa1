"""/resource_providers/{uuid}/aggregates through the WSGI app."""
import uuid as uuidlib

import pytest

import error_text
import sql_rows


def _uuid():
    return str(uuidlib.uuid4())


@pytest.fixture
def path(provider):
    return '/resource_providers/%s/aggregates' % provider['uuid']


def _generation(api, provider):
    return api.get('/resource_providers/' + provider['uuid']).json[
        'generation']


def test_needs_1_1(api, path):
    assert api.get(path, version='1.0').status_code == 404
    assert api.put(path, json=[], version='1.0').status_code == 404


def test_missing_provider(api):
    path = '/resource_providers/%s/aggregates' % _uuid()
    assert api.get(path).status_code == 404
    assert api.put(path, json=[]).status_code == 404


def test_list_form_before_1_19(api, path, provider):
    first, second = _uuid(), _uuid()
    response = api.put(path, json=[second, first], version='1.18')
    assert response.status_code == 200
    assert response.json == {'aggregates': [second, first]}
    # No generation in or out, and it is not bumped.
    assert _generation(api, provider) == 0
    assert api.get(path, version='1.1').json == {
        'aggregates': [second, first]}
    old = api.put(path, json=[first], version='1.14')
    assert 'Last-Modified' not in old.headers
    assert api.get(path, version='1.18').json == {'aggregates': [first]}


def test_object_form_from_1_19(api, path, provider):
    aggregates = [_uuid(), _uuid()]
    response = api.put(path, json={'aggregates': aggregates,
                                   'resource_provider_generation': 0})
    assert response.status_code == 200
    assert response.json == {'aggregates': aggregates,
                             'resource_provider_generation': 1}
    assert 'Last-Modified' in response.headers
    listed = api.get(path)
    assert listed.json == response.json
    assert listed.headers['Cache-Control'] == 'no-cache'
    # The same set again still bumps the generation.
    again = api.put(path, json={'aggregates': aggregates,
                                'resource_provider_generation': 1})
    assert again.json['resource_provider_generation'] == 2


def test_stale_generation_writes_nothing(api, path):
    response = api.put(path, json={'aggregates': [_uuid()],
                                   'resource_provider_generation': 3})
    assert response.status_code == 409
    assert error_text.code(response) == 'placement.concurrent_update'
    assert api.get(path).json == {'aggregates': [],
                                  'resource_provider_generation': 0}


def test_aggregates_are_shared(api, path, backend):
    shared = _uuid()
    with backend.engine.begin() as conn:
        other = sql_rows.provider(conn)
    other_path = '/resource_providers/%s/aggregates' % other['uuid']
    for target in (path, other_path):
        assert api.put(target, json={
            'aggregates': [shared], 'resource_provider_generation': 0,
        }).status_code == 200
    assert api.put(path, json={'aggregates': [],
                               'resource_provider_generation': 1}
                   ).status_code == 200
    assert api.get(other_path).json['aggregates'] == [shared]


@pytest.mark.parametrize('version, body, message', [
    ('1.39', [_uuid()], 'is not of type'),
    ('1.18', {'aggregates': [], 'resource_provider_generation': 0},
     'is not of type'),
    ('1.39', {'aggregates': [_uuid()]}, "'resource_provider_generation' is "
     "a required property"),
    ('1.39', {'aggregates': ['harry'], 'resource_provider_generation': 0},
     "'harry' is not a 'uuid'"),
    ('1.18', ['A' * 8 + '-0000-0000-0000-' + '0' * 12] * 2,
     'has non-unique elements'),
])
def test_bad_bodies(api, path, version, body, message):
    response = api.put(path, json=body, version=version)
    assert response.status_code == 400
    assert message in error_text.detail(response)


def test_uuids_are_stored_as_given(api, path):
    compact = uuidlib.uuid4().hex.upper()
    response = api.put(path, json={'aggregates': [compact],
                                   'resource_provider_generation': 0})
    assert response.status_code == 200
    assert api.get(path).json['aggregates'] == [compact]


def test_long_uuid_spellings_are_stored_canonical(api, path):
    # "{...}" and "urn:uuid:..." do not fit the column as given.
    given = uuidlib.uuid4()
    response = api.put(path, json={
        'aggregates': ['{%s}' % given, 'urn:uuid:%s' % given],
        'resource_provider_generation': 0})
    assert response.status_code == 200
    assert response.json['aggregates'] == [str(given)] * 2
    assert api.get(path).json['aggregates'] == [str(given)]


def test_generation_beyond_any_row(api, path):
    response = api.put(path, json={'aggregates': [],
                                   'resource_provider_generation': 2 ** 70})
    assert response.status_code == 409
