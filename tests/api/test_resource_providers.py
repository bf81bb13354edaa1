"""/resource_providers through the WSGI app."""
import concurrent.futures
import uuid as uuidlib

import pytest

from placement.db import resource_provider as rp_db
from placement.db import tables

import conftest
import error_text
import sql_rows

RP_PATH = '/resource_providers'


def _uuid():
    return str(uuidlib.uuid4())


def _create(api, name, uuid=None, parent=None, version='1.39'):
    body = {'name': name}
    if uuid is not None:
        body['uuid'] = uuid
    if parent is not None:
        body['parent_provider_uuid'] = parent
    response = api.post(RP_PATH, json=body, version=version)
    assert response.status_code in (200, 201), response.json
    return response


def _names(response):
    assert response.status_code == 200, response.json
    return sorted(rp['name'] for rp in response.json['resource_providers'])


class TestCreate:
    def test_before_1_20_answers_201_and_location(self, api):
        uuid = _uuid()
        response = _create(api, 'one', uuid, version='1.19')
        assert response.status_code == 201
        assert response.headers['Location'].endswith(RP_PATH + '/' + uuid)
        assert 'Content-Type' not in response.headers
        assert response.data == b''

    def test_from_1_20_answers_the_provider(self, api):
        uuid = _uuid()
        response = _create(api, 'one', uuid)
        assert response.status_code == 200
        assert response.headers['Location'].endswith(RP_PATH + '/' + uuid)
        assert 'Last-Modified' in response.headers
        body = response.json
        assert body['uuid'] == uuid
        assert body['generation'] == 0
        assert body['parent_provider_uuid'] is None
        assert body['root_provider_uuid'] == uuid

    def test_uuid_is_generated_and_normalized(self, api):
        assert uuidlib.UUID(_create(api, 'generated').json['uuid'])
        given = uuidlib.uuid4()
        created = _create(api, 'dashless', given.hex.upper())
        assert created.json['uuid'] == str(given)

    def test_child(self, api):
        root = _create(api, 'root').json['uuid']
        middle = _create(api, 'middle', parent=root).json['uuid']
        leaf = _create(api, 'leaf', parent=middle).json
        assert leaf['parent_provider_uuid'] == middle
        assert leaf['root_provider_uuid'] == root

    def test_parent_needs_1_14(self, api):
        response = api.post(RP_PATH, version='1.13', json={
            'name': 'child', 'parent_provider_uuid': _uuid()})
        assert response.status_code == 400
        assert 'JSON does not validate' in error_text.detail(response)

    @pytest.mark.parametrize('same', [True, False])
    def test_bad_parent(self, api, same):
        uuid = _uuid()
        parent = uuid if same else _uuid()
        response = api.post(RP_PATH, json={
            'name': 'child', 'uuid': uuid, 'parent_provider_uuid': parent})
        assert response.status_code == 400
        reason = ('parent provider UUID cannot be same as UUID. Please set '
                  'parent provider UUID to None if there is no parent.'
                  if same else 'parent provider UUID does not exist.')
        assert error_text.detail(response).endswith(
            'Unable to create resource provider "child", %s: Object action '
            'create failed because: %s' % (uuid, reason))

    def test_empty_name(self, api):
        response = api.post(RP_PATH, json={'name': ''})
        assert response.status_code == 400
        assert error_text.detail(response).endswith('name is required')

    def test_duplicates(self, api):
        uuid = _uuid()
        _create(api, 'taken', uuid)
        by_uuid = api.post(RP_PATH, json={'name': 'other', 'uuid': uuid})
        assert by_uuid.status_code == 409
        assert error_text.detail(by_uuid).endswith(
            'Conflicting resource provider uuid: %s already exists.' % uuid)
        assert error_text.code(by_uuid) == 'placement.duplicate_name'
        by_name = api.post(RP_PATH, json={'name': 'taken'})
        assert by_name.status_code == 409
        assert error_text.detail(by_name).endswith(
            'Conflicting resource provider name: taken already exists.')

    def test_bad_bodies(self, api):
        for body in ({'name': 'x' * 201}, {'name': 'x', 'uuid': 'nope'},
                     {'uuid': _uuid()}, {'name': 'x', 'spam': 1}, []):
            response = api.post(RP_PATH, json=body)
            assert response.status_code == 400, body
            assert 'JSON does not validate' in error_text.detail(response)

    def test_unicode_name(self, api):
        uuid = _uuid()
        _create(api, '\u2603', uuid)
        listed = api.get(RP_PATH + '?name=%E2%98%83')
        assert [rp['uuid'] for rp in listed.json['resource_providers']] == [
            uuid]


class TestShow:
    @pytest.mark.parametrize('version, relations', [
        ('1.0', ['self', 'inventories', 'usages']),
        ('1.1', ['self', 'inventories', 'usages', 'aggregates']),
        ('1.6', ['self', 'inventories', 'usages', 'aggregates', 'traits']),
        ('1.11', ['self', 'inventories', 'usages', 'aggregates', 'traits',
                  'allocations']),
    ])
    def test_links_by_version(self, api, version, relations):
        uuid = _create(api, 'rp').json['uuid']
        body = api.get(RP_PATH + '/' + uuid, version=version).json
        assert [link['rel'] for link in body['links']] == relations
        base = RP_PATH + '/' + uuid
        assert [link['href'] for link in body['links']] == [base] + [
            base + '/' + rel for rel in relations[1:]]

    def test_tree_fields_and_cache_headers_by_version(self, api):
        uuid = _create(api, 'rp').json['uuid']
        old = api.get(RP_PATH + '/' + uuid, version='1.13')
        assert set(old.json) == {'uuid', 'name', 'generation', 'links'}
        assert 'Last-Modified' not in old.headers
        new = api.get(RP_PATH + '/' + uuid, version='1.15')
        assert new.json['root_provider_uuid'] == uuid
        assert new.headers['Cache-Control'] == 'no-cache'
        assert 'Last-Modified' in new.headers

    def test_missing(self, api):
        missing = _uuid()
        response = api.get(RP_PATH + '/' + missing)
        assert response.status_code == 404
        assert error_text.detail(response).endswith(
            'No resource provider with uuid %s found' % missing)

    def test_links_under_a_prefix(self, api_factory):
        api = api_factory(prefix='/placement')
        uuid = _create(api, 'rp').json['uuid']
        body = api.get(RP_PATH + '/' + uuid).json
        assert body['links'][0]['href'] == '/placement/resource_providers/' + (
            uuid)


class TestList:
    def test_filters_by_name_and_uuid(self, api):
        one = _create(api, 'one').json['uuid']
        _create(api, 'two')
        assert _names(api.get(RP_PATH)) == ['one', 'two']
        assert _names(api.get(RP_PATH + '?name=two')) == ['two']
        assert _names(api.get(RP_PATH + '?uuid=' + one)) == ['one']
        assert _names(api.get(RP_PATH + '?uuid=%s&name=two' % one)) == []

    @pytest.mark.parametrize('version, accepted', [
        ('1.0', ['name', 'uuid']),
        ('1.3', ['name', 'uuid', 'member_of']),
        ('1.4', ['name', 'uuid', 'member_of', 'resources']),
        ('1.14', ['name', 'uuid', 'member_of', 'resources', 'in_tree']),
        ('1.18', ['name', 'uuid', 'member_of', 'resources', 'in_tree',
                  'required']),
    ])
    def test_query_schema_by_version(self, api, version, accepted):
        response = api.get(RP_PATH + '?spam=1', version=version)
        assert response.status_code == 400
        detail = error_text.detail(response)
        assert detail.split('\n\n ')[1].startswith(
            "Invalid query string parameters: Additional properties are not "
            "allowed ('spam' was unexpected)")
        for name in accepted:
            assert "'%s'" % name in detail
        assert detail.count("': {'type'") == len(accepted)

    def test_query_uuid_needs_dashes(self, api):
        response = api.get(RP_PATH + '?uuid=' + uuidlib.uuid4().hex)
        assert response.status_code == 400
        assert "is not a 'uuid'" in error_text.detail(response)

    def test_in_tree(self, api):
        root = _create(api, 'root').json['uuid']
        child = _create(api, 'child', parent=root).json['uuid']
        _create(api, 'other')
        for uuid in (root, child):
            assert _names(api.get(RP_PATH + '?in_tree=' + uuid)) == [
                'child', 'root']
        assert _names(api.get(RP_PATH + '?in_tree=' + _uuid())) == []

    def test_cache_headers_by_version(self, api):
        assert 'Last-Modified' not in api.get(RP_PATH, version='1.14').headers
        response = api.get(RP_PATH, version='1.15')
        assert response.headers['Cache-Control'] == 'no-cache'
        assert 'Last-Modified' in response.headers

    def test_policy(self, api):
        assert api.get(RP_PATH, token='user').status_code == 403


class TestResourcesFilter:
    @pytest.fixture
    def disk(self, api):
        uuid = _create(api, 'disk').json['uuid']
        response = api.put(RP_PATH + '/%s/inventories' % uuid, json={
            'resource_provider_generation': 0,
            'inventories': {
                'DISK_GB': {'total': 2048, 'reserved': 48, 'min_unit': 10,
                            'max_unit': 1000, 'step_size': 10,
                            'allocation_ratio': 1.5},
                'VCPU': {'total': 4}}})
        assert response.status_code == 200, response.json
        return uuid

    def _matches(self, api, resources):
        return _names(api.get(RP_PATH + '?resources=' + resources)) == [
            'disk']

    @pytest.mark.parametrize('resources, found', [
        ('DISK_GB:500', True),
        ('DISK_GB:500,VCPU:4', True),
        ('DISK_GB:5', False),       # below min_unit
        ('DISK_GB:1010', False),    # above max_unit
        ('DISK_GB:505', False),     # not a multiple of step_size
        ('VCPU:5', False),          # more than the capacity
        ('MEMORY_MB:1', False),     # no inventory of the class
    ])
    def test_unit_rules(self, api, disk, resources, found):
        assert self._matches(api, resources) is found

    def test_capacity_left(self, api, backend, disk):
        # (2048 - 48) * 1.5 = 3000 usable.
        with backend.engine.begin() as conn:
            provider = rp_db.get_by_uuid(conn, disk)
            sql_rows.allocate(conn, provider['id'], {'DISK_GB': 2000})
            sql_rows.allocate(conn, provider['id'], {'DISK_GB': 100})
        assert self._matches(api, 'DISK_GB:900')
        assert not self._matches(api, 'DISK_GB:910')

    def test_with_in_tree(self, api, disk):
        root = _create(api, 'root').json['uuid']
        child = _create(api, 'child', parent=root).json['uuid']
        for uuid, total in ((root, 2), (child, 8)):
            assert api.put(RP_PATH + '/%s/inventories' % uuid, json={
                'resource_provider_generation': 0,
                'inventories': {'VCPU': {'total': total}}},
            ).status_code == 200
        query = RP_PATH + '?in_tree=%s&resources=VCPU:' % root
        assert _names(api.get(query + '1')) == ['child', 'root']
        assert _names(api.get(query + '4')) == ['child']
        assert _names(api.get(query + '9')) == []
        # 'disk' has 4 VCPU too but is in another tree.
        assert _names(api.get(RP_PATH + '?resources=VCPU:4')) == [
            'child', 'disk']

    def test_amount_beyond_any_inventory(self, api, disk):
        assert not self._matches(api, 'DISK_GB:%d' % 2 ** 70)

    def test_needs_1_4(self, api, disk):
        response = api.get(RP_PATH + '?resources=VCPU:1', version='1.3')
        assert response.status_code == 400

    def test_unknown_class(self, api):
        response = api.get(RP_PATH + '?resources=CUSTOM_NOPE:1')
        assert response.status_code == 400
        assert error_text.detail(response).endswith(
            'Invalid resource class in resources parameter: No such '
            'resource class CUSTOM_NOPE.')

    def test_syntax_error(self, api):
        response = api.get(RP_PATH + '?resources=VCPU')
        assert response.status_code == 400
        assert error_text.detail(response).endswith('Got: VCPU.')


class TestTraitAndAggregateFilters:
    @pytest.fixture
    def providers(self, api):
        """a: VMX in agg1; b: VMX, SSE in agg1, agg2; c: nothing."""
        agg1, agg2 = _uuid(), _uuid()
        setup = {'a': (['HW_CPU_X86_VMX'], [agg1]),
                 'b': (['HW_CPU_X86_VMX', 'HW_CPU_X86_SSE'], [agg1, agg2]),
                 'c': ([], [])}
        for name, (traits, aggregates) in setup.items():
            uuid = _create(api, name).json['uuid']
            assert api.put(RP_PATH + '/%s/traits' % uuid, json={
                'traits': traits, 'resource_provider_generation': 0,
            }).status_code == 200
            generation = 1 if traits else 0
            assert api.put(RP_PATH + '/%s/aggregates' % uuid, json={
                'aggregates': aggregates,
                'resource_provider_generation': generation,
            }).status_code == 200
        return agg1, agg2

    @pytest.mark.parametrize('required, version, names', [
        ('HW_CPU_X86_VMX', '1.18', ['a', 'b']),
        ('HW_CPU_X86_VMX,HW_CPU_X86_SSE', '1.18', ['b']),
        ('!HW_CPU_X86_SSE', '1.22', ['a', 'c']),
        ('HW_CPU_X86_VMX,!HW_CPU_X86_SSE', '1.22', ['a']),
        ('in:HW_CPU_X86_SSE,HW_CPU_X86_AVX', '1.39', ['b']),
        ('in:HW_CPU_X86_VMX,HW_CPU_X86_AVX&required=!HW_CPU_X86_SSE',
         '1.39', ['a']),
        # Before 1.39 the last `required` wins.
        ('HW_CPU_X86_SSE&required=HW_CPU_X86_VMX', '1.38', ['a', 'b']),
        ('HW_CPU_X86_SSE&required=HW_CPU_X86_VMX', '1.39', ['b']),
    ])
    def test_required(self, api, providers, required, version, names):
        response = api.get(RP_PATH + '?required=' + required,
                           version=version)
        assert _names(response) == names

    def test_unknown_trait(self, api):
        response = api.get(RP_PATH + '?required=HW_CPU_X86_VMX,CUSTOM_NOPE')
        assert response.status_code == 400
        assert error_text.detail(response).endswith(
            'Invalid trait(s) in "required" parameter: No such trait(s): '
            'CUSTOM_NOPE.')

    @pytest.mark.parametrize('query, message', [
        # Every unknown trait, in the client's order, before any class.
        ('resources=CUSTOM_NO_CLASS:1&required=CUSTOM_B,!CUSTOM_A,'
         'HW_CPU_X86_VMX',
         'Invalid trait(s) in "required" parameter: No such trait(s): '
         'CUSTOM_B, CUSTOM_A.'),
        # Then the first unknown class.
        ('resources=VCPU:1,CUSTOM_NO_1:1,CUSTOM_NO_2:1'
         '&required=HW_CPU_X86_VMX',
         'Invalid resource class in resources parameter: No such resource '
         'class CUSTOM_NO_1.'),
    ])
    def test_unknown_names_reported_as_upstream(self, api, query, message):
        response = api.get(RP_PATH + '?' + query, version='1.22')
        assert response.status_code == 400
        assert error_text.detail(response).endswith(message)

    def test_member_of(self, api, providers):
        agg1, agg2 = providers
        cases = [
            ('member_of=' + agg1, ['a', 'b']),
            ('member_of=in:%s,%s' % (agg2, _uuid()), ['b']),
            ('member_of=%s&member_of=%s' % (agg1, agg2), ['b']),
            ('member_of=!' + agg2, ['a', 'c']),
            ('member_of=!in:%s,%s' % (agg1, agg2), ['c']),
            ('member_of=%s&member_of=!%s' % (agg1, agg2), ['a']),
        ]
        for query_string, names in cases:
            assert _names(api.get(RP_PATH + '?' + query_string)) == names, (
                query_string)

    def test_member_of_versions(self, api, providers):
        agg1, agg2 = providers
        twice = '?member_of=%s&member_of=%s' % (agg1, agg2)
        response = api.get(RP_PATH + twice, version='1.23')
        assert error_text.detail(response).endswith(
            'Multiple member_of parameters are not supported')
        response = api.get(RP_PATH + '?member_of=!' + agg1, version='1.31')
        assert error_text.detail(response).endswith(
            'Forbidden member_of parameters are not supported in the '
            'specified microversion')
        response = api.get(RP_PATH + '?member_of=' + agg1, version='1.2')
        assert response.status_code == 400

    def test_filters_combine(self, api, providers):
        agg1, agg2 = providers
        assert _names(api.get(
            RP_PATH + '?member_of=%s&required=!HW_CPU_X86_SSE' % agg1)) == [
                'a']


class TestUpdate:
    def test_rename(self, api):
        uuid = _create(api, 'old').json['uuid']
        response = api.put(RP_PATH + '/' + uuid, json={'name': 'new'},
                           version='1.15')
        assert response.status_code == 200
        assert response.json['name'] == 'new'
        assert response.json['generation'] == 0
        assert 'Last-Modified' in response.headers
        assert 'Location' not in response.headers
        assert api.get(RP_PATH + '/' + uuid).json['name'] == 'new'

    def test_rename_to_taken_name(self, api):
        _create(api, 'taken')
        uuid = _create(api, 'mine').json['uuid']
        response = api.put(RP_PATH + '/' + uuid, json={'name': 'taken'})
        assert response.status_code == 409
        assert error_text.code(response) == 'placement.duplicate_name'
        assert error_text.detail(response).endswith(
            'Conflicting resource provider taken already exists.')

    def test_missing_provider_before_body(self, api):
        response = api.put(RP_PATH + '/' + _uuid(), json={'bad': 1})
        assert response.status_code == 404

    def test_bad_body(self, api):
        uuid = _create(api, 'rp').json['uuid']
        for body in ({'name': 'x', 'uuid': uuid},
                     {'parent_provider_uuid': None}, {'name': 'x' * 201}):
            response = api.put(RP_PATH + '/' + uuid, json=body)
            assert response.status_code == 400, body
        response = api.put(RP_PATH + '/' + uuid, version='1.13', json={
            'name': 'x', 'parent_provider_uuid': None})
        assert response.status_code == 400

    def _put_parent(self, api, uuid, parent, version='1.39', name='rp'):
        return api.put(RP_PATH + '/' + uuid, version=version, json={
            'name': name, 'parent_provider_uuid': parent})

    def _refused(self, response, uuid, reason, action='update'):
        assert response.status_code == 400
        assert error_text.detail(response).endswith(
            'Unable to save resource provider %s: Object action %s failed '
            'because: %s' % (uuid, action, reason))

    def test_root_may_get_a_parent_from_1_14(self, api):
        parent = _create(api, 'parent').json['uuid']
        uuid = _create(api, 'rp').json['uuid']
        response = self._put_parent(api, uuid, parent, version='1.14')
        assert response.status_code == 200
        assert response.json['parent_provider_uuid'] == parent
        assert response.json['root_provider_uuid'] == parent

    def test_reparent_and_unparent_need_1_37(self, api):
        first = _create(api, 'first').json['uuid']
        second = _create(api, 'second').json['uuid']
        uuid = _create(api, 'rp', parent=first).json['uuid']
        self._refused(self._put_parent(api, uuid, second, version='1.36'),
                      uuid, 're-parenting a provider is not currently '
                      'allowed.')
        self._refused(self._put_parent(api, uuid, None, version='1.36'),
                      uuid, 'un-parenting a provider is not currently '
                      'allowed.')
        # Naming the current parent again is no change.
        assert self._put_parent(
            api, uuid, first, version='1.36').status_code == 200
        moved = self._put_parent(api, uuid, second, version='1.37')
        assert moved.json['root_provider_uuid'] == second
        # As upstream, a move between parents carries no Last-Modified.
        assert moved.headers['Cache-Control'] == 'no-cache'
        assert 'Last-Modified' not in moved.headers
        unparented = self._put_parent(api, uuid, None, version='1.37')
        assert unparented.json['parent_provider_uuid'] is None
        assert unparented.json['root_provider_uuid'] == uuid

    def test_moving_a_subtree_updates_its_roots(self, api):
        old_root = _create(api, 'old').json['uuid']
        new_root = _create(api, 'new').json['uuid']
        middle = _create(api, 'middle', parent=old_root).json['uuid']
        leaf = _create(api, 'leaf', parent=middle).json['uuid']
        assert self._put_parent(api, middle, new_root,
                                name='middle').status_code == 200
        assert _names(api.get(RP_PATH + '?in_tree=' + leaf)) == [
            'leaf', 'middle', 'new']
        assert api.get(RP_PATH + '/' + leaf).json[
            'root_provider_uuid'] == new_root
        self._put_parent(api, middle, None, name='middle')
        assert api.get(RP_PATH + '/' + leaf).json[
            'root_provider_uuid'] == middle

    def test_loops_are_refused(self, api):
        root = _create(api, 'root').json['uuid']
        child = _create(api, 'child', parent=root).json['uuid']
        reason = 'creating loop in the provider tree is not allowed.'
        self._refused(self._put_parent(api, root, root), root, reason)
        self._refused(self._put_parent(api, root, child), root, reason)

    def test_missing_parent(self, api):
        uuid = _create(api, 'rp').json['uuid']
        self._refused(self._put_parent(api, uuid, _uuid()), uuid,
                      'parent provider UUID does not exist.', 'create')


class TestDelete:
    def test_delete_cleans_up(self, api, backend):
        uuid = _create(api, 'rp').json['uuid']
        path = RP_PATH + '/' + uuid
        api.put(path + '/inventories', json={
            'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': 4}}})
        api.put(path + '/traits', json={
            'traits': ['HW_CPU_X86_VMX'], 'resource_provider_generation': 1})
        api.put(path + '/aggregates', json={
            'aggregates': [_uuid()], 'resource_provider_generation': 2})
        response = api.delete(path)
        assert response.status_code == 204
        assert api.get(path).status_code == 404
        with backend.engine.connect() as conn:
            for table in (tables.inventories,
                          tables.resource_provider_traits,
                          tables.resource_provider_aggregates):
                assert conn.execute(table.select()).first() is None
        missing = api.delete(path)
        assert missing.status_code == 404
        assert error_text.detail(missing).endswith(
            'No resource provider with uuid %s found for delete' % uuid)

    def test_parent_is_kept(self, api):
        parent = _create(api, 'parent').json['uuid']
        _create(api, 'child', parent=parent)
        response = api.delete(RP_PATH + '/' + parent)
        assert response.status_code == 409
        assert error_text.code(response) == (
            'placement.resource_provider.cannot_delete_parent')
        assert error_text.detail(response).endswith(
            'Unable to delete parent resource provider %s: It has child '
            'resource providers.' % parent)

    def test_provider_with_allocations_is_kept(self, api, backend):
        with backend.engine.begin() as conn:
            provider = sql_rows.provider(conn)
            sql_rows.allocate(conn, provider['id'], {'VCPU': 1})
        response = api.delete(RP_PATH + '/' + provider['uuid'])
        assert response.status_code == 409
        assert error_text.code(response) == 'placement.resource_provider.inuse'
        assert error_text.detail(response).endswith(
            'Unable to delete resource provider %s: Resource provider has '
            'allocations.' % provider['uuid'])


def test_generation_race_has_one_winner(app, api):
    """Concurrent writers from the same generation: exactly one succeeds,
    the others get 409 and write nothing.
    """
    uuid = _create(api, 'contended').json['uuid']
    path = RP_PATH + '/%s/traits' % uuid
    candidates = ['HW_CPU_X86_VMX', 'HW_CPU_X86_SSE', 'HW_CPU_X86_AVX',
                  'HW_CPU_X86_SSE2', 'HW_CPU_X86_AVX2', 'HW_CPU_X86_MMX']

    def attempt(trait):
        client = conftest.ApiClient(app)
        return trait, client.put(path, json={
            'traits': [trait], 'resource_provider_generation': 0})

    with concurrent.futures.ThreadPoolExecutor(len(candidates)) as pool:
        results = list(pool.map(attempt, candidates))
    statuses = sorted(response.status_code for _trait, response in results)
    assert statuses == [200] + [409] * (len(candidates) - 1)
    winner = [trait for trait, response in results
              if response.status_code == 200][0]
    for _trait, response in results:
        if response.status_code == 409:
            assert error_text.code(response) == 'placement.concurrent_update'
    current = api.get(path).json
    assert current == {'traits': [winner], 'resource_provider_generation': 1}
