"""/allocations and /resource_providers/{uuid}/allocations through the
WSGI app.
"""
import uuid as uuidlib

import pymysql
import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement.db import inventory as inv_db
from placement.db import resource_provider as rp_db
from placement.db import tables

import error_text
import sql_rows

INCOMPLETE = '00000000-0000-0000-0000-000000000000'


def _new():
    return str(uuidlib.uuid4())


def _stock(conn, inventories):
    provider = sql_rows.provider(conn)
    inv_db.replace_all(conn, provider, {
        name: inv_db.with_defaults(record)
        for name, record in inventories.items()}, 0)
    return rp_db.get_by_uuid(conn, provider['uuid'])


@pytest.fixture
def rp(backend):
    """DISK_GB in steps of 10 (10 to 1000 at once) and 16 usable VCPU."""
    with backend.engine.begin() as conn:
        return _stock(conn, {
            'DISK_GB': {'total': 2048, 'min_unit': 10, 'max_unit': 1000,
                        'step_size': 10},
            'VCPU': {'total': 10, 'reserved': 2, 'allocation_ratio': 2.0}})


@pytest.fixture
def rp2(backend):
    with backend.engine.begin() as conn:
        return _stock(conn, {'DISK_GB': {'total': 100},
                             'MEMORY_MB': {'total': 10}})


def _generation(backend, provider):
    with backend.engine.connect() as conn:
        return rp_db.get_by_uuid(conn, provider['uuid'])['generation']


def _consumer_rows(backend, consumer):
    with backend.engine.connect() as conn:
        return conn.execute(
            sa.select(tables.consumers.c.generation)
            .where(tables.consumers.c.uuid == consumer)).scalars().all()


def _put(api, consumer, resources, generation=None, version='1.39',
         **fields):
    """PUT (1.12+ form) with the fields the version requires."""
    body = {'allocations': {uuid: {'resources': amounts}
                            for uuid, amounts in resources.items()},
            'project_id': 'p', 'user_id': 'u'}
    if version >= '1.28':
        body['consumer_generation'] = generation
    if version >= '1.38':
        body['consumer_type'] = 'INSTANCE'
    body.update(fields)
    return api.put('/allocations/' + consumer, json=body, version=version)


def test_unknown_consumer_has_no_allocations(api):
    for version in ('1.0', '1.28', '1.39'):
        response = api.get('/allocations/' + _new(), version=version)
        assert response.status_code == 200
        assert response.json == {'allocations': {}}
    assert 'Last-Modified' not in api.get(
        '/allocations/' + _new(), version='1.14').headers
    assert 'Last-Modified' in api.get(
        '/allocations/' + _new(), version='1.15').headers
    # Not even the path is checked for being a uuid.
    assert api.get('/allocations/not-a-uuid').json == {'allocations': {}}


def test_list_form_and_views_by_version(api, rp):
    consumer = _new()
    response = api.put('/allocations/' + consumer, version='1.7', json={
        'allocations': [{'resource_provider': {'uuid': rp['uuid']},
                         'resources': {'DISK_GB': 10, 'VCPU': 2}}]})
    assert response.status_code == 204
    assert 'Last-Modified' not in response.headers

    expected = {rp['uuid']: {'resources': {'DISK_GB': 10, 'VCPU': 2},
                             'generation': 2}}
    assert api.get('/allocations/' + consumer, version='1.11').json == {
        'allocations': expected}
    # Before 1.8 the consumer gets the configured placeholder owner.
    owner = {'project_id': INCOMPLETE, 'user_id': INCOMPLETE}
    assert api.get('/allocations/' + consumer, version='1.12').json == dict(
        allocations=expected, **owner)
    assert api.get('/allocations/' + consumer, version='1.28').json == dict(
        allocations=expected, consumer_generation=1, **owner)
    shown = api.get('/allocations/' + consumer, version='1.38')
    assert shown.json == dict(allocations=expected, consumer_generation=1,
                              consumer_type='unknown', **owner)
    assert shown.headers['Cache-Control'] == 'no-cache'
    assert 'Last-Modified' in shown.headers


def test_placeholder_owner_is_configurable(api_factory, rp):
    api = api_factory(placement={'incomplete_consumer_project_id': 'old-p',
                                 'incomplete_consumer_user_id': 'old-u'})
    consumer = _new()
    api.put('/allocations/' + consumer, version='1.0', json={
        'allocations': [{'resource_provider': {'uuid': rp['uuid']},
                         'resources': {'VCPU': 1}}]})
    shown = api.get('/allocations/' + consumer, version='1.12').json
    assert (shown['project_id'], shown['user_id']) == ('old-p', 'old-u')


@pytest.mark.parametrize('version, body, message', [
    ('1.0', {'allocations': []}, "Failed validating 'minItems'"),
    ('1.8', {'allocations': [{'resource_provider': {'uuid': _new()},
                              'resources': {'VCPU': 1}}]},
     "'project_id' is a required property"),
    ('1.12', {'allocations': [], 'project_id': 'p', 'user_id': 'u'},
     "[] is not of type 'object'"),
    ('1.12', {'allocations': {}, 'project_id': 'p', 'user_id': 'u'},
     'should be non-empty'),
    ('1.28', {'allocations': {}, 'project_id': 'p', 'user_id': 'u'},
     "'consumer_generation' is a required property"),
    ('1.33', {'allocations': {}, 'project_id': 'p', 'user_id': 'u',
              'consumer_generation': None, 'mappings': {'a': [_new()]}},
     "('mappings' was unexpected)"),
    ('1.38', {'allocations': {}, 'project_id': 'p', 'user_id': 'u',
              'consumer_generation': None},
     "'consumer_type' is a required property"),
    ('1.38', {'allocations': {}, 'project_id': 'p', 'user_id': 'u',
              'consumer_generation': None, 'consumer_type': 'instance'},
     "'instance' does not match '^[A-Z0-9_]+$'"),
])
def test_put_schema_by_version(api, version, body, message):
    response = api.put('/allocations/' + _new(), json=body, version=version)
    assert response.status_code == 400
    assert error_text.reason(response).startswith('JSON does not validate')
    assert message in error_text.reason(response)


def test_consumer_uuid_is_checked_then_normalized(api, rp):
    response = api.put('/allocations/not-a-uuid', json={})
    assert response.status_code == 400
    assert error_text.reason(response) == 'Malformed consumer_uuid: not-a-uuid'
    consumer = _new()
    assert _put(api, consumer.replace('-', '').upper(),
                {rp['uuid']: {'VCPU': 1}}).status_code == 204
    assert api.get('/allocations/' + consumer).json['consumer_generation'] == 1


def test_consumer_generation(api, backend, rp):
    consumer = _new()
    response = _put(api, consumer, {rp['uuid']: {'VCPU': 1}}, generation=3)
    assert response.status_code == 409
    assert error_text.reason(response) == (
        'consumer generation conflict - expected null but got 3')
    assert error_text.code(response) == 'placement.concurrent_update'
    assert _put(api, consumer, {rp['uuid']: {'VCPU': 1}}).status_code == 204
    response = _put(api, consumer, {rp['uuid']: {'VCPU': 2}})
    assert error_text.reason(response) == (
        'consumer generation conflict - expected 1 but got None')
    assert _put(api, consumer, {rp['uuid']: {'VCPU': 2}},
                generation=1).status_code == 204
    # Before 1.28 nobody checks it, but it still moves.
    assert _put(api, consumer, {rp['uuid']: {'VCPU': 3}},
                version='1.27').status_code == 204
    assert _consumer_rows(backend, consumer) == [3]


def test_owner_and_type_change_without_a_new_generation(api, rp):
    consumer = _new()
    _put(api, consumer, {rp['uuid']: {'VCPU': 1}})
    _put(api, consumer, {rp['uuid']: {'VCPU': 1}}, generation=1,
         project_id='p2', user_id='u2', consumer_type='MIGRATION')
    shown = api.get('/allocations/' + consumer).json
    assert (shown['project_id'], shown['user_id'], shown['consumer_type'],
            shown['consumer_generation']) == ('p2', 'u2', 'MIGRATION', 2)
    # Before 1.38 the type is left alone.
    _put(api, consumer, {rp['uuid']: {'VCPU': 1}}, generation=2,
         version='1.37')
    assert api.get('/allocations/' + consumer).json['consumer_type'] == (
        'MIGRATION')


@pytest.mark.parametrize('resources, message', [
    ({'MEMORY_MB': 1},
     "Inventory for 'MEMORY_MB' on resource provider '{rp}' invalid."),
    # Names of several missing classes come in the order of a Python set
    # of their ids, as upstream's do (MEMORY_MB is 1, IPV4_ADDRESS 9).
    ({'MEMORY_MB': 1, 'IPV4_ADDRESS': 1},
     "Inventory for 'MEMORY_MB, IPV4_ADDRESS' on resource provider '{rp}' "
     "invalid."),
    ({'IPV4_ADDRESS': 1, 'MEMORY_MB': 1},
     "Inventory for 'IPV4_ADDRESS, MEMORY_MB' on resource provider '{rp}' "
     "invalid."),
    ({'DISK_GB': 5}, "Unable to create allocation for 'DISK_GB' on resource "
     "provider '{rp}'. The requested amount would violate inventory "
     "constraints."),
    ({'DISK_GB': 1010}, "'DISK_GB' on resource provider '{rp}'. The "
     "requested amount would violate inventory constraints."),
    ({'DISK_GB': 15}, 'violate inventory constraints.'),
    # Checked in the request's order: the first problem is reported.
    ({'VCPU': 17, 'DISK_GB': 5}, "Unable to create allocation for 'VCPU' "
     "on resource provider '{rp}'. The requested amount would exceed the "
     "capacity."),
    ({'DISK_GB': 5, 'VCPU': 17}, "'DISK_GB' on resource provider '{rp}'. "
     "The requested amount would violate inventory constraints."),
])
def test_refused_by_inventory(api, rp, resources, message):
    response = _put(api, _new(), {rp['uuid']: resources})
    assert response.status_code == 409
    assert error_text.reason(response).startswith(
        'Unable to allocate inventory: ')
    assert error_text.reason(response).endswith(message.format(rp=rp['uuid']))
    assert error_text.code(response) == 'placement.undefined_code'


def test_provider_without_any_requested_class(api, rp, rp2, backend):
    with backend.engine.begin() as conn:
        bare = sql_rows.provider(conn)
    # rp2 has inventory, just not of VCPU; the bare provider has none of
    # the classes asked anywhere in the request, which is checked first.
    response = _put(api, _new(), {rp['uuid']: {'DISK_GB': 5},
                                  rp2['uuid']: {'VCPU': 1},
                                  bare['uuid']: {'VCPU': 1}})
    assert error_text.reason(response) == (
        "Unable to allocate inventory: Inventory for 'VCPU, DISK_GB' on "
        "resource provider '%s' invalid." % bare['uuid'])
    response = _put(api, _new(), {rp['uuid']: {'DISK_GB': 10},
                                  rp2['uuid']: {'VCPU': 1}})
    assert error_text.reason(response) == (
        "Unable to allocate inventory: Inventory for 'VCPU' on resource "
        "provider '%s' invalid." % rp2['uuid'])


def test_unknown_provider_and_class(api, rp):
    consumer, missing = _new(), _new()
    # A missing provider is reported before an unknown class...
    response = _put(api, consumer, {rp['uuid']: {'CUSTOM_X': 1},
                                    missing: {'VCPU': 1}})
    assert response.status_code == 400
    assert error_text.reason(response) == (
        "Allocation for resource provider '%s' that does not exist." % missing)
    # ... unknown classes in the request's order, before capacity.
    response = _put(api, consumer, {rp['uuid']: {'VCPU': 100, 'CUSTOM_Y': 1,
                                                 'CUSTOM_X': 1}})
    assert response.status_code == 400
    assert error_text.reason(response) == (
        'Unable to allocate inventory for consumer %s: No such resource '
        'class CUSTOM_Y.' % consumer)
    # A failed request leaves no consumer behind.
    assert api.get('/allocations/' + consumer).json == {'allocations': {}}
    assert _put(api, consumer, {rp['uuid']: {'VCPU': 1}}).status_code == 204


def test_replacing_frees_the_consumers_own_amounts(api, rp):
    consumer, other = _new(), _new()
    assert _put(api, consumer, {rp['uuid']: {'VCPU': 10}}).status_code == 204
    assert _put(api, other, {rp['uuid']: {'VCPU': 6}}).status_code == 204
    assert _put(api, consumer, {rp['uuid']: {'VCPU': 10}},
                generation=1).status_code == 204
    response = _put(api, consumer, {rp['uuid']: {'VCPU': 11}}, generation=2)
    assert 'exceed the capacity' in error_text.reason(response)
    usages = api.get('/resource_providers/%s/usages' % rp['uuid']).json
    assert usages['usages']['VCPU'] == 16


def test_usage_over_a_shrunk_inventory_may_stay(api, backend, rp):
    consumer, other = _new(), _new()
    _put(api, consumer, {rp['uuid']: {'VCPU': 4}})
    _put(api, other, {rp['uuid']: {'VCPU': 4}})
    with backend.engine.begin() as conn:
        inv_db.replace_all(conn, rp, {
            'VCPU': inv_db.with_defaults({'total': 5}),
            'DISK_GB': inv_db.with_defaults({'total': 2048})}, 3)
    # Not increasing the provider's usage of the class is allowed...
    assert _put(api, consumer, {rp['uuid']: {'VCPU': 4}},
                generation=1).status_code == 204
    assert _put(api, consumer, {rp['uuid']: {'VCPU': 3}},
                generation=2).status_code == 204
    # ... increasing it beyond the capacity is not.
    response = _put(api, consumer, {rp['uuid']: {'VCPU': 4}}, generation=3)
    assert 'exceed the capacity' in error_text.reason(response)


def test_empty_allocations_remove_the_consumer(api, backend, rp, rp2):
    consumer = _new()
    _put(api, consumer, {rp['uuid']: {'VCPU': 1}, rp2['uuid']: {'DISK_GB': 1}})
    assert _put(api, consumer, {}, generation=1).status_code == 204
    assert api.get('/allocations/' + consumer).json == {'allocations': {}}
    assert _consumer_rows(backend, consumer) == []
    # Every provider it left got a new generation.
    assert _generation(backend, rp) == _generation(backend, rp2) == 3
    assert _put(api, consumer, {rp['uuid']: {'VCPU': 1}}).status_code == 204


def test_empty_allocations_for_a_new_consumer(api, backend, rp):
    # As upstream: the consumer is recorded, with generation 0.
    consumer = _new()
    assert _put(api, consumer, {}).status_code == 204
    assert _consumer_rows(backend, consumer) == [0]
    response = _put(api, consumer, {rp['uuid']: {'VCPU': 1}})
    assert error_text.reason(response) == (
        'consumer generation conflict - expected 0 but got None')
    assert _put(api, consumer, {rp['uuid']: {'VCPU': 1}},
                generation=0).status_code == 204


def test_moving_bumps_only_the_provider_allocated_from(api, backend, rp,
                                                       rp2):
    consumer = _new()
    _put(api, consumer, {rp['uuid']: {'VCPU': 1}})
    _put(api, consumer, {rp2['uuid']: {'DISK_GB': 1}}, generation=1)
    assert (_generation(backend, rp), _generation(backend, rp2)) == (2, 2)


def test_delete(api, backend, rp):
    consumer = _new()
    _put(api, consumer, {rp['uuid']: {'VCPU': 1}})
    response = api.delete('/allocations/' + consumer)
    assert response.status_code == 204
    assert _consumer_rows(backend, consumer) == []
    # Freeing capacity leaves the provider generation alone, as upstream.
    assert _generation(backend, rp) == 2
    response = api.delete('/allocations/' + consumer)
    assert response.status_code == 404
    assert error_text.reason(response) == (
        "No allocations for consumer '%s'" % consumer)
    assert api.delete('/allocations/x', version='1.0').status_code == 404


def test_post_many_consumers(api, backend, rp, rp2):
    one, two = _new(), _new()

    def entry(resources, **fields):
        return dict({'allocations': {uuid: {'resources': amounts}
                                     for uuid, amounts in resources.items()},
                     'project_id': 'p', 'user_id': 'u'}, **fields)

    assert api.post('/allocations', json={}, version='1.12').status_code == (
        404)
    assert api.get('/allocations').headers['Allow'] == 'POST'
    # The amounts of all consumers count together.
    response = api.post('/allocations', version='1.13', json={
        one: entry({rp['uuid']: {'VCPU': 10}}),
        two: entry({rp['uuid']: {'VCPU': 10}})})
    assert 'exceed the capacity' in error_text.reason(response)
    response = api.post('/allocations', version='1.13', json={
        one: entry({rp['uuid']: {'CUSTOM_NOPE': 1}}),
        two: entry({rp['uuid']: {'VCPU': 1}})})
    assert error_text.reason(response) == (
        'Unable to allocate inventory No such resource class CUSTOM_NOPE.')
    response = api.post('/allocations', version='1.13', json={
        one: entry({rp['uuid']: {'VCPU': 10}}),
        two: entry({rp['uuid']: {'VCPU': 6}, rp2['uuid']: {'DISK_GB': 1}})})
    assert response.status_code == 204
    assert _generation(backend, rp) == 2
    assert api.get('/allocations/' + two).json['consumer_generation'] == 1

    response = api.post('/allocations', json={
        one: entry({}, consumer_generation=1, consumer_type='INSTANCE'),
        two: entry({}, consumer_generation=7, consumer_type='INSTANCE')})
    assert error_text.reason(response) == (
        'consumer generation conflict - expected 1 but got 7')
    response = api.post('/allocations', json={
        one: entry({}, consumer_generation=1, consumer_type='INSTANCE'),
        two: entry({rp2['uuid']: {'DISK_GB': 2}}, consumer_generation=1,
                   consumer_type='INSTANCE')})
    assert response.status_code == 204
    assert api.get('/allocations/' + one).json == {'allocations': {}}
    assert api.get('/allocations/' + two).json['allocations'] == {
        rp2['uuid']: {'resources': {'DISK_GB': 2}, 'generation': 3}}


def test_provider_allocations(api, rp):
    missing = _new()
    response = api.get('/resource_providers/%s/allocations' % missing)
    assert response.status_code == 404
    assert error_text.reason(response) == (
        "Resource provider '%s' not found: No resource provider with uuid "
        "%s found" % (missing, missing))
    path = '/resource_providers/%s/allocations' % rp['uuid']
    assert api.get(path).json == {'allocations': {},
                                  'resource_provider_generation': 1}
    one, two = _new(), _new()
    _put(api, one, {rp['uuid']: {'VCPU': 1, 'DISK_GB': 10}})
    _put(api, two, {rp['uuid']: {'VCPU': 2}})
    old = api.get(path, version='1.27')
    assert old.json == {
        'allocations': {one: {'resources': {'VCPU': 1, 'DISK_GB': 10}},
                        two: {'resources': {'VCPU': 2}}},
        'resource_provider_generation': 3}
    assert 'Last-Modified' in old.headers
    assert api.get(path, version='1.28').json['allocations'][two] == {
        'resources': {'VCPU': 2}, 'consumer_generation': 1}
    assert 'Last-Modified' not in api.get(path, version='1.14').headers


class _Deadlocking:
    """bump_generations failing as the database does on a deadlock or a
    Galera certification failure, ``failures`` times.
    """

    def __init__(self, failures):
        self.failures = failures
        self.calls = 0
        self.real = rp_db.bump_generations

    def __call__(self, conn, generations):
        self.calls += 1
        if self.calls <= self.failures:
            raise sa_exc.OperationalError(
                'UPDATE resource_providers', {}, pymysql.err.OperationalError(
                    1213, 'Deadlock found when trying to get lock'))
        return self.real(conn, generations)


def test_retries_then_gives_up_on_deadlocks(api_factory, rp, monkeypatch):
    api = api_factory(placement={'allocation_conflict_retry_count': 3})
    changing = _Deadlocking(failures=2)
    monkeypatch.setattr(rp_db, 'bump_generations', changing)
    assert _put(api, _new(), {rp['uuid']: {'VCPU': 1}}).status_code == 204
    assert changing.calls == 3

    changing = _Deadlocking(failures=3)
    monkeypatch.setattr(rp_db, 'bump_generations', changing)
    response = _put(api, _new(), {rp['uuid']: {'VCPU': 1}})
    assert response.status_code == 409
    assert error_text.code(response) == 'placement.concurrent_update'
    assert error_text.reason(response) == (
        'Inventory and/or allocations changed while attempting to allocate: '
        'Another thread concurrently updated the resource provider data. '
        'Please retry your update')
    assert changing.calls == 3
