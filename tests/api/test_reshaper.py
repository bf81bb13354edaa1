"""POST /reshaper through the WSGI app."""
import uuid as uuidlib

import pytest

from placement import exception
from placement.db import inventory as inv_db
from placement.db import resource_provider as rp_db

import error_text
import sql_rows


@pytest.fixture
def api(api_factory):
    """A client whose admin may reshape: only services may under the new
    default rules, admins too under the legacy ones.
    """
    return api_factory(oslo_policy={'enforce_new_defaults': False})


@pytest.fixture
def tree(backend):
    """A compute node with VCPU (8 used by ``vm``) and DISK_GB, and an
    empty child provider to move the VCPU to.
    """
    with backend.engine.begin() as conn:
        node = sql_rows.provider(conn)
        inv_db.replace_all(conn, node, {
            'VCPU': inv_db.with_defaults({'total': 16}),
            'DISK_GB': inv_db.with_defaults({'total': 100})}, 0)
        vm = sql_rows.allocate(conn, node['id'], {'VCPU': 8}, project='p',
                               user='u')
        child = sql_rows.provider(conn)
    return {'node': node['uuid'], 'child': child['uuid'], 'vm': vm}


def _generation(api, uuid):
    return api.get('/resource_providers/' + uuid).json['generation']


def _body(api, inventories, allocations, generations=None):
    generations = generations or {}
    return {
        'inventories': {
            uuid: {'resource_provider_generation': generations.get(
                uuid, _generation(api, uuid)), 'inventories': records}
            for uuid, records in inventories.items()},
        'allocations': allocations}


def _consumer(resources, generation, **fields):
    return dict({'allocations': {uuid: {'resources': amounts}
                                 for uuid, amounts in resources.items()},
                 'project_id': 'p', 'user_id': 'u',
                 'consumer_generation': generation}, **fields)


def _move_vcpu(api, tree, vm_generation=1, **fields):
    """The body moving VCPU and the vm's allocation to the child."""
    return _body(api, {tree['node']: {'DISK_GB': {'total': 100}},
                       tree['child']: {'VCPU': {'total': 16}}},
                 {tree['vm']: _consumer({tree['child']: {'VCPU': 8}},
                                        vm_generation, **fields)})


def test_moves_inventory_and_allocations(api, tree):
    response = api.post('/reshaper', version='1.30',
                        json=_move_vcpu(api, tree, vm_generation=0))
    assert response.status_code == 204
    usages = api.get('/resource_providers/%s/usages' % tree['child']).json
    assert usages == {'resource_provider_generation': 3,
                      'usages': {'VCPU': 8}}
    # The node's inventory changed twice; it is no longer allocated from.
    usages = api.get('/resource_providers/%s/usages' % tree['node']).json
    assert usages == {'resource_provider_generation': 3,
                      'usages': {'DISK_GB': 0}}
    shown = api.get('/allocations/' + tree['vm']).json
    assert shown['consumer_generation'] == 1
    assert shown['consumer_type'] == 'unknown'


def test_empty_inventories_change_once(api, tree):
    other = _move_vcpu(api, tree, vm_generation=0)
    api.post('/reshaper', version='1.30', json=other)
    body = _body(api, {tree['node']: {'DISK_GB': {'total': 100},
                                      'VCPU': {'total': 16}},
                       tree['child']: {}},
                 {tree['vm']: _consumer({tree['node']: {'VCPU': 8}}, 1)})
    assert api.post('/reshaper', version='1.30', json=body).status_code == (
        204)
    # Interim and final inventories plus the allocations for the node;
    # only the final (empty) inventory for the child, which the vm left.
    assert _generation(api, tree['node']) == 6
    assert _generation(api, tree['child']) == 4


def test_consumer_type_and_mappings(api, tree):
    body = _move_vcpu(api, tree, vm_generation=0, consumer_type='RESHAPED')
    response = api.post('/reshaper', version='1.37', json=body)
    assert response.status_code == 400
    assert "('consumer_type' was unexpected)" in error_text.reason(response)
    assert api.post('/reshaper', json=body).status_code == 204
    assert api.get('/allocations/' + tree['vm']).json['consumer_type'] == (
        'RESHAPED')
    body = _body(api, {tree['child']: {'VCPU': {'total': 16}}},
                 {tree['vm']: _consumer(
                     {tree['child']: {'VCPU': 8}}, 1,
                     mappings={'': [tree['child']]})})
    response = api.post('/reshaper', version='1.33', json=body)
    assert "('mappings' was unexpected)" in error_text.reason(response)
    assert api.post('/reshaper', version='1.34', json=body).status_code == (
        204)


def test_version_and_policy(api, tree):
    assert api.post('/reshaper', version='1.29', json={}).status_code == 404
    assert api.get('/reshaper', version='1.30').headers['Allow'] == 'POST'
    response = api.post('/reshaper', version='1.30', token='user',
                        json=_move_vcpu(api, tree))
    assert response.status_code == 403


def _refused(api, body, status):
    response = api.post('/reshaper', version='1.30', json=body)
    assert response.status_code == status, response.json
    return response


def test_refusals_change_nothing(api, tree):
    missing = str(uuidlib.uuid4())
    node, child, vm = tree['node'], tree['child'], tree['vm']
    before = {uuid: api.get('/resource_providers/%s/inventories'
                            % uuid).json for uuid in (node, child)}

    body = _move_vcpu(api, tree, vm_generation=0)
    body['inventories'][missing] = body['inventories'].pop(child)
    response = _refused(api, body, 400)
    assert error_text.code(response) == 'placement.resource_provider.not_found'
    assert error_text.reason(response) == (
        'Resource provider %s in inventories not found: No resource provider '
        'with uuid %s found' % (missing, missing))

    body = _move_vcpu(api, tree, vm_generation=0)
    body['inventories'][node]['resource_provider_generation'] = 0
    response = _refused(api, body, 409)
    assert error_text.reason(response) == (
        'resource provider generation conflict for provider %s: actual: 1, '
        'given: 0' % node)
    assert error_text.code(response) == 'placement.concurrent_update'

    response = _refused(api, _move_vcpu(api, tree, vm_generation=3), 409)
    assert error_text.reason(response) == (
        'consumer generation conflict - expected 0 but got 3')

    body = _move_vcpu(api, tree, vm_generation=0)
    body['inventories'][child]['inventories'] = {'CUSTOM_NOPE': {'total': 1}}
    assert error_text.reason(_refused(api, body, 400)) == (
        'malformed reshaper data: No such resource class CUSTOM_NOPE.')

    # A name that is no class name is not validated, even as an object.
    body = _move_vcpu(api, tree, vm_generation=0)
    body['inventories'][child]['inventories']['none'] = ''
    assert error_text.reason(_refused(api, body, 400)) == (
        'malformed reshaper data: No such resource class none.')

    body = _move_vcpu(api, tree, vm_generation=0)
    body['allocations'][vm]['allocations'][missing] = {
        'resources': {'VCPU': 1}}
    assert error_text.reason(_refused(api, body, 400)) == (
        "Allocation for resource provider '%s' that does not exist."
        % missing)

    # Too much for the new inventory.
    body = _move_vcpu(api, tree, vm_generation=0)
    body['inventories'][child]['inventories']['VCPU']['total'] = 4
    assert error_text.reason(_refused(api, body, 409)) == (
        "Unable to allocate inventory: Unable to create allocation for "
        "'VCPU' on resource provider '%s'. The requested amount would "
        "exceed the capacity." % child)

    # The VCPU inventory of the node goes while still allocated.
    body = _move_vcpu(api, tree, vm_generation=0)
    body['allocations'] = {}
    response = _refused(api, body, 409)
    assert error_text.reason(response) == (
        "update conflict: Inventory for 'VCPU' on resource provider '%s' in "
        "use." % node)
    assert error_text.code(response) == 'placement.inventory.inuse'

    after = {uuid: api.get('/resource_providers/%s/inventories'
                           % uuid).json for uuid in (node, child)}
    assert after == before
    assert api.get('/allocations/' + vm).json['allocations'] == {
        node: {'resources': {'VCPU': 8}, 'generation': 1}}


def test_lost_race_on_inventory(api, tree, monkeypatch):
    def stale(conn, provider_id, expected_generation):
        raise exception.ConcurrentUpdate('changed')

    monkeypatch.setattr(rp_db, 'increment_generation', stale)
    response = _refused(api, _move_vcpu(api, tree, vm_generation=0), 409)
    assert error_text.reason(response) == (
        'update conflict: Another thread concurrently updated the resource '
        'provider data. Please retry your update')
    assert error_text.code(response) == 'placement.concurrent_update'
