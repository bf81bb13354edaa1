"""/resource_providers/{uuid}/inventories through the WSGI app."""
import uuid as uuidlib

import pytest

import error_text
import sql_rows

MISSING = str(uuidlib.uuid4())


@pytest.fixture
def path(provider):
    return '/resource_providers/%s/inventories' % provider['uuid']


def _put_all(api, path, generation, inventories, **kwargs):
    return api.put(path, json={'resource_provider_generation': generation,
                               'inventories': inventories}, **kwargs)


def test_empty_list(api, path):
    response = api.get(path, version='1.15')
    assert response.status_code == 200
    assert response.json == {'resource_provider_generation': 0,
                             'inventories': {}}
    # No inventory, no date; but never cached.
    assert response.headers['Cache-Control'] == 'no-cache'
    assert 'Last-Modified' not in response.headers


def test_create_show_list(api, path, provider):
    response = api.post(path, json={'resource_class': 'DISK_GB',
                                    'total': 2048, 'reserved': 512,
                                    'allocation_ratio': 2})
    assert response.status_code == 201
    assert response.headers['Location'].endswith(path + '/DISK_GB')
    assert response.json == {
        'total': 2048, 'reserved': 512, 'min_unit': 1,
        'max_unit': 2147483647, 'step_size': 1, 'allocation_ratio': 2,
        'resource_provider_generation': 1}

    shown = api.get(path + '/DISK_GB', version='1.15')
    assert shown.json == dict(response.json, allocation_ratio=2.0)
    assert shown.headers['Cache-Control'] == 'no-cache'
    assert 'Last-Modified' in shown.headers
    old = api.get(path + '/DISK_GB', version='1.14')
    assert 'Last-Modified' not in old.headers
    assert 'Cache-Control' not in old.headers

    listed = api.get(path, version='1.15')
    assert listed.json['resource_provider_generation'] == 1
    assert listed.json['inventories']['DISK_GB']['total'] == 2048
    assert 'Last-Modified' in listed.headers


def test_missing_provider(api):
    base = '/resource_providers/%s/inventories' % MISSING
    message = 'No resource provider with uuid %s found' % MISSING
    assert error_text.detail(api.get(base)).endswith(
        '%s : %s' % (message, message))
    assert error_text.detail(api.get(base + '/VCPU')).endswith(
        '%s : %s' % (message, message))
    # Writes look the provider up before reading the body.
    for response in (api.post(base, json={'bogus': 1}),
                     api.put(base, json={'bogus': 1}),
                     api.put(base + '/VCPU', json={'bogus': 1}),
                     api.delete(base + '/VCPU'),
                     api.delete(base)):
        assert response.status_code == 404
        assert error_text.detail(response).endswith(message)


@pytest.mark.parametrize('body, expected', [
    ({'resource_class': 'DISK_GB'}, "'total' is a required property"),
    ({'resource_class': 'DISK_GB', 'total': 0},
     "Failed validating 'minimum' in schema['properties']['total']"),
    ({'resource_class': 'DISK_GB', 'total': 2, 'reserved': -1},
     "Failed validating 'minimum' in schema['properties']['reserved']"),
    ({'resource_class': 'DISK_GB', 'total': 2, 'step_size': 0},
     "Failed validating 'minimum' in schema['properties']['step_size']"),
    ({'resource_class': 'DISK_GB', 'total': 2147483648},
     "Failed validating 'maximum'"),
    ({'resource_class': 'DISK_GB', 'total': 2,
      'allocation_ratio': 3.40282e+39}, "Failed validating 'maximum'"),
    ({'resource_class': 'disk', 'total': 2}, "does not match"),
    ({'resource_class': 'DISK_GB', 'total': 2, 'color': 'red'},
     "Additional properties are not allowed"),
])
def test_create_invalid_body(api, path, body, expected):
    response = api.post(path, json=body)
    assert response.status_code == 400
    assert 'JSON does not validate' in error_text.detail(response)
    assert expected in error_text.detail(response)
    assert api.get(path).json['resource_provider_generation'] == 0


def test_create_malformed_and_media_type(api, path):
    response = api.post(path, data='{"foo": }',
                        headers={'Content-Type': 'application/json'})
    assert response.status_code == 400
    assert 'Malformed JSON' in error_text.detail(response)
    response = api.post(path, data='{}', headers={
        'Content-Type': 'text/plain'})
    assert response.status_code == 415


def test_create_capacity_depends_on_version(api, path, provider):
    full = {'resource_class': 'DISK_GB', 'total': 10, 'reserved': 10}
    response = api.post(path, json=full, version='1.25')
    assert response.status_code == 400
    assert error_text.detail(response).endswith(
        "Unable to create inventory for resource provider %s: Invalid "
        "inventory for 'DISK_GB' on resource provider '%s'. The reserved "
        "value is greater than or equal to total." % (
            provider['uuid'], provider['uuid']))
    assert api.post(path, json=full, version='1.26').status_code == 201
    over = dict(full, resource_class='VCPU', reserved=11)
    response = api.post(path, json=over, version='1.26')
    assert response.status_code == 400
    assert error_text.detail(response).endswith(
        'The reserved value is greater than total.')


def test_create_unknown_class_and_duplicate(api, path, provider):
    response = api.post(path, json={'resource_class': 'NO_CLASS_14',
                                    'total': 1})
    assert response.status_code == 400
    assert error_text.detail(response).endswith(
        'Unable to create inventory for resource provider %s: No such '
        'resource class NO_CLASS_14.' % provider['uuid'])
    assert api.post(path, json={'resource_class': 'VCPU',
                                'total': 1}).status_code == 201
    response = api.post(path, json={'resource_class': 'VCPU', 'total': 1})
    assert response.status_code == 409
    assert 'Update conflict' in error_text.detail(response)
    assert error_text.code(response) == 'placement.concurrent_update'
    assert api.get(path).json['resource_provider_generation'] == 1


def test_update_one(api, path, provider):
    api.post(path, json={'resource_class': 'VCPU', 'total': 8})
    response = api.put(path + '/VCPU', json={
        'resource_provider_generation': 1, 'total': 16, 'reserved': 2})
    assert response.status_code == 200
    assert response.json['resource_provider_generation'] == 2
    assert response.json['reserved'] == 2
    # Leaving out a field puts its default back.
    assert api.get(path + '/VCPU').json == {
        'total': 16, 'reserved': 2, 'min_unit': 1, 'max_unit': 2147483647,
        'step_size': 1, 'allocation_ratio': 1.0,
        'resource_provider_generation': 2}


def test_update_one_errors(api, path, provider):
    api.post(path, json={'resource_class': 'VCPU', 'total': 8})
    stale = api.put(path + '/VCPU', json={
        'resource_provider_generation': 0, 'total': 16})
    assert stale.status_code == 409
    assert error_text.detail(stale).endswith(
        'resource provider generation conflict')
    assert error_text.code(stale) == 'placement.concurrent_update'

    absent = api.put(path + '/MEMORY_MB', json={
        'resource_provider_generation': 1, 'total': 16})
    assert absent.status_code == 400
    assert error_text.detail(absent).endswith(
        'No inventory record with resource class for resource provider '
        '%s: No inventory of class MEMORY_MB found.' % provider['uuid'])

    unknown = api.put(path + '/HOUSE', json={
        'resource_provider_generation': 1, 'total': 16})
    assert unknown.status_code == 404
    assert error_text.detail(unknown).endswith('No such resource class HOUSE.')

    full = {'resource_provider_generation': 1, 'total': 8, 'reserved': 8}
    response = api.put(path + '/VCPU', json=full, version='1.25')
    assert response.status_code == 400
    assert ('Unable to update inventory for resource provider'
            in error_text.detail(response))

    no_generation = api.put(path + '/VCPU', json={'total': 16})
    assert no_generation.status_code == 400
    assert ("'resource_provider_generation' is a required property"
            in error_text.detail(no_generation))

    assert api.get(path).json['resource_provider_generation'] == 1
    assert api.put(path + '/VCPU', json=full,
                   version='1.26').status_code == 200


def test_replace_all(api, path):
    response = _put_all(api, path, 0, {'IPV4_ADDRESS': {'total': 253},
                                       'DISK_GB': {'total': 1024}},
                        version='1.15')
    assert response.status_code == 200
    assert response.json['resource_provider_generation'] == 1
    assert response.json['inventories']['IPV4_ADDRESS'] == {
        'total': 253, 'reserved': 0, 'min_unit': 1, 'max_unit': 2147483647,
        'step_size': 1, 'allocation_ratio': 1.0}
    assert 'Last-Modified' in response.headers

    response = _put_all(api, path, 1, {'VCPU': {'total': 2}})
    assert response.status_code == 200
    assert api.get(path).json == {
        'resource_provider_generation': 2,
        'inventories': {'VCPU': response.json['inventories']['VCPU']}}

    emptied = _put_all(api, path, 2, {}, version='1.15')
    assert emptied.json == {'resource_provider_generation': 3,
                            'inventories': {}}
    assert 'Last-Modified' not in emptied.headers
    assert emptied.headers['Cache-Control'] == 'no-cache'


@pytest.mark.parametrize('generation, inventories, status, expected', [
    (99, {'VCPU': {'total': 1}}, 409, 'resource provider generation '
                                      'conflict'),
    (0, {'HOUSE': {'total': 1}}, 400, 'Unknown resource class in inventory'),
    (0, {'house': {'total': 1}}, 400, 'No such resource class house.'),
    # A name outside the pattern never reaches its (invalid) record.
    (0, {'house': 5}, 400, 'No such resource class house.'),
    (0, {'VCPU': {'total': 1, 'reserved': 1}}, 400,
     'greater than or equal to total'),
    (0, {'VCPU': {'total': 2147483648}}, 400, "Failed validating 'maximum'"),
    (0, {'VCPU': {'total': 1.5}}, 400, "1.5 is not of type 'integer'"),
    (0, {'VCPU': {'total': 1, 'resource_class': 'VCPU'}}, 400,
     'Additional properties are not allowed'),
])
def test_replace_all_errors(api, path, generation, inventories, status,
                            expected):
    response = _put_all(api, path, generation, inventories, version='1.23')
    assert response.status_code == status
    assert expected in error_text.detail(response)
    assert api.get(path).json == {'resource_provider_generation': 0,
                                  'inventories': {}}


def test_replace_all_reserved_equal_total_from_1_26(api, path):
    full = {'IPV4_ADDRESS': {'total': 253, 'reserved': 253}}
    assert _put_all(api, path, 0, full, version='1.25').status_code == 400
    assert _put_all(api, path, 0, full, version='1.26').status_code == 200


def test_delete_one(api, path):
    api.post(path, json={'resource_class': 'VCPU', 'total': 8})
    response = api.delete(path + '/VCPU')
    assert response.status_code == 204
    assert 'Content-Type' not in response.headers
    assert api.get(path).json['resource_provider_generation'] == 2

    again = api.delete(path + '/VCPU')
    assert again.status_code == 404
    assert error_text.detail(again).endswith(
        'No inventory of class VCPU found for delete: No inventory of class '
        'VCPU found for delete')
    unknown = api.delete(path + '/HOUSE')
    assert error_text.detail(unknown).endswith(
        'No inventory of class HOUSE found for delete: No such resource '
        'class HOUSE.')


def test_delete_all(api, path):
    assert api.delete(path, version='1.4').status_code == 405
    _put_all(api, path, 0, {'VCPU': {'total': 1}, 'DISK_GB': {'total': 1}})
    assert api.delete(path, version='1.5').status_code == 204
    # Deleting nothing still counts as a change.
    assert api.delete(path, version='1.5').status_code == 204
    assert api.get(path).json == {'resource_provider_generation': 3,
                                  'inventories': {}}


def test_in_use(api, path, provider, backend):
    _put_all(api, path, 0, {'VCPU': {'total': 8}, 'DISK_GB': {'total': 8},
                            'MEMORY_MB': {'total': 8}})
    with backend.engine.begin() as conn:
        sql_rows.allocate(conn, provider['id'], {'DISK_GB': 4, 'VCPU': 1})
    in_use = ("Inventory for 'VCPU, DISK_GB' on resource provider '%s' in "
              "use." % provider['uuid'])

    response = api.delete(path, version='1.23')
    assert response.status_code == 409
    assert error_text.detail(response).endswith(in_use)
    assert error_text.code(response) == 'placement.inventory.inuse'

    response = _put_all(api, path, 1, {}, version='1.23')
    assert response.status_code == 409
    assert error_text.detail(response).endswith('update conflict: ' + in_use)
    assert error_text.code(response) == 'placement.inventory.inuse'

    response = api.delete(path + '/DISK_GB')
    assert response.status_code == 409
    assert error_text.detail(response).endswith(
        "Unable to delete inventory of class DISK_GB: Inventory for "
        "'DISK_GB' on resource provider '%s' in use." % provider['uuid'])
    assert error_text.code(response) == 'placement.concurrent_update'

    assert api.get(path).json['resource_provider_generation'] == 1
    # Shrinking below what is allocated is allowed.
    response = _put_all(api, path, 1, {'VCPU': {'total': 1},
                                       'DISK_GB': {'total': 1}})
    assert response.status_code == 200
    assert api.delete(path + '/MEMORY_MB').status_code == 404


def test_allow_header(api, path):
    response = api.post(path + '/VCPU', json={})
    assert response.status_code == 405
    assert response.headers['Allow'] == 'GET, PUT, DELETE'
