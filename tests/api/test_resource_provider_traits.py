"""/resource_providers/{uuid}/traits through the WSGI app."""
import uuid as uuidlib

import pytest

import error_text


@pytest.fixture
def path(provider):
    return '/resource_providers/%s/traits' % provider['uuid']


def _put(api, path, traits, generation, **kwargs):
    return api.put(path, json={'traits': traits,
                               'resource_provider_generation': generation},
                   **kwargs)


def test_needs_1_6(api, path):
    assert api.get(path, version='1.5').status_code == 404
    assert _put(api, path, [], 0, version='1.5').status_code == 404
    assert api.delete(path, version='1.5').status_code == 404


def test_missing_provider(api):
    missing = str(uuidlib.uuid4())
    path = '/resource_providers/%s/traits' % missing
    message = 'No resource provider with uuid %s found' % missing
    # Upstream's GET repeats the message.
    assert error_text.detail(api.get(path)).endswith(message + ': ' + message)
    assert error_text.detail(_put(api, path, [], 0)).endswith(message)
    assert error_text.detail(api.delete(path)).endswith(message)


def test_replace_list_and_delete(api, path):
    assert api.put('/traits/CUSTOM_MAGIC').status_code == 201
    empty = api.get(path, version='1.14')
    assert empty.json == {'traits': [], 'resource_provider_generation': 0}
    assert 'Last-Modified' not in empty.headers

    response = _put(api, path, ['HW_CPU_X86_VMX', 'CUSTOM_MAGIC',
                                'HW_CPU_X86_VMX'], 0)
    assert response.status_code == 200
    assert response.json == {'traits': ['CUSTOM_MAGIC', 'HW_CPU_X86_VMX'],
                             'resource_provider_generation': 1}
    assert 'Last-Modified' in response.headers
    listed = api.get(path)
    assert sorted(listed.json['traits']) == ['CUSTOM_MAGIC', 'HW_CPU_X86_VMX']
    assert listed.headers['Cache-Control'] == 'no-cache'

    in_use = api.delete('/traits/CUSTOM_MAGIC')
    assert in_use.status_code == 409

    deleted = api.delete(path)
    assert deleted.status_code == 204
    assert 'Content-Type' not in deleted.headers
    assert api.get(path).json == {'traits': [],
                                  'resource_provider_generation': 2}


def test_generation_moves_only_on_change(api, path):
    assert _put(api, path, ['HW_CPU_X86_VMX'], 0).json[
        'resource_provider_generation'] == 1
    same = _put(api, path, ['HW_CPU_X86_VMX'], 1)
    assert same.json['resource_provider_generation'] == 1
    # ... but a stale generation is refused even when nothing would change.
    stale = _put(api, path, ['HW_CPU_X86_VMX'], 0)
    assert stale.status_code == 409
    assert error_text.code(stale) == 'placement.concurrent_update'
    assert error_text.detail(stale).endswith(
        "Resource provider's generation already changed. Please update the "
        "generation and try again.")
    api.delete(path)
    api.delete(path)
    assert api.get(path).json['resource_provider_generation'] == 2


def test_unknown_traits_write_nothing(api, path):
    response = _put(api, path, ['CUSTOM_NOPE_B', 'HW_CPU_X86_VMX',
                                'CUSTOM_NOPE_A'], 0)
    assert response.status_code == 400
    assert error_text.detail(response).endswith(
        'No such trait CUSTOM_NOPE_B, CUSTOM_NOPE_A')
    assert api.get(path).json == {'traits': [],
                                  'resource_provider_generation': 0}


@pytest.mark.parametrize('body, message', [
    ({'traits': ['HW_CPU_X86_VMX']},
     "'resource_provider_generation' is a required property"),
    ({'traits': 'HW_CPU_X86_VMX', 'resource_provider_generation': 0},
     "'HW_CPU_X86_VMX' is not of type 'array'"),
    ({'traits': [''], 'resource_provider_generation': 0},
     "'' should be non-empty"),
    ({'traits': [], 'resource_provider_generation': 'x'},
     "'x' is not of type 'integer'"),
    ({'traits': [], 'resource_provider_generation': 0, 'more': 1},
     'Additional properties are not allowed'),
])
def test_bad_bodies(api, path, body, message):
    response = api.put(path, json=body)
    assert response.status_code == 400
    assert message in error_text.detail(response)
