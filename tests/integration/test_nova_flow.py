"""A compute node's life as Nova's scheduler report client drives it.

Plain HTTP through the whole WSGI app on every backend (tests/conftest.py's
``api_factory``), as Nova's service user (admin and service roles): the
provider tree with generations and retries on 409, granular allocation
candidates, claims with consumer generations, a migration moving
allocations between consumers and hosts, a reshape of VGPU inventory into a
child provider, healing allocations, and the teardown.
"""
import uuid

import pytest

import error_text

pytestmark = pytest.mark.integration

# The microversions Nova's report client asks for, per kind of call.
NESTED = '1.14'
POST_RETURNS_PROVIDER = '1.20'
AGGREGATE_GENERATION = '1.19'
TRAITS = '1.6'
INVENTORY = '1.26'
CONSUMER_GENERATION = '1.28'
RESHAPER = '1.30'
SAME_SUBTREE = '1.36'
CONSUMER_TYPES = '1.38'

PROJECT = uuid.uuid4().hex
USER = uuid.uuid4().hex
PHYSNET = 'CUSTOM_PHYSNET_PHYSNET0'
OTHER_PHYSNET = 'CUSTOM_PHYSNET_PHYSNET1'


class ReportClient:
    """A cache of provider generations and the calls that keep it true,
    refreshing and retrying when a concurrent writer wins (409).
    """

    MAX_ATTEMPTS = 4

    def __init__(self, api):
        self.api = api
        self.generations = {}
        self.conflicts = 0

    def call(self, method, path, version, json=None, expect=(200,)):
        response = self.api.request(
            method, path, json=json, version=version, token='nova:service',
            headers={'X-Roles': 'admin,service'})
        assert response.status_code in expect, (
            method, path, response.status_code, response.text)
        return response

    def ensure_tree(self, name, root_uuid, children):
        """Create the root and ``children`` ((name, uuid, parent uuid))
        unless the tree exists; remember every generation.
        """
        tree = self.call('GET', '/resource_providers?in_tree=' + root_uuid,
                         NESTED).json['resource_providers']
        known = {rp['uuid'] for rp in tree}
        for rp in tree:
            self.generations[rp['uuid']] = rp['generation']
        for rp_name, rp_uuid, parent in [(name, root_uuid, None)] + children:
            if rp_uuid in known:
                continue
            body = {'name': rp_name, 'uuid': rp_uuid}
            if parent:
                body['parent_provider_uuid'] = parent
            created = self.call('POST', '/resource_providers',
                                POST_RETURNS_PROVIDER, json=body).json
            self.generations[rp_uuid] = created['generation']

    def refresh(self, rp_uuid):
        self.generations[rp_uuid] = self.call(
            'GET', '/resource_providers/' + rp_uuid, NESTED).json['generation']

    def _put_with_generation(self, rp_uuid, path, version, body):
        """PUT ``body`` plus our generation; on a generation conflict
        refresh it and try again, as Nova does.
        """
        for _ in range(self.MAX_ATTEMPTS):
            sent = dict(body, resource_provider_generation=(
                self.generations[rp_uuid]))
            response = self.call('PUT', path, version, json=sent,
                                 expect=(200, 409))
            if response.status_code == 200:
                self.generations[rp_uuid] = response.json[
                    'resource_provider_generation']
                return response.json
            assert error_text.code(response) == (
                'placement.concurrent_update')
            self.conflicts += 1
            self.refresh(rp_uuid)
        pytest.fail('%s: still conflicting after %d attempts'
                    % (path, self.MAX_ATTEMPTS))

    def set_inventory(self, rp_uuid, inventories):
        return self._put_with_generation(
            rp_uuid, '/resource_providers/%s/inventories' % rp_uuid,
            INVENTORY, {'inventories': inventories})

    def set_traits(self, rp_uuid, traits):
        for trait in traits:
            if trait.startswith('CUSTOM_'):
                self.call('PUT', '/traits/' + trait, TRAITS,
                          expect=(201, 204))
        return self._put_with_generation(
            rp_uuid, '/resource_providers/%s/traits' % rp_uuid, TRAITS,
            {'traits': traits})

    def set_aggregates(self, rp_uuid, aggregates):
        return self._put_with_generation(
            rp_uuid, '/resource_providers/%s/aggregates' % rp_uuid,
            AGGREGATE_GENERATION, {'aggregates': aggregates})

    def allocations(self, consumer):
        return self.call('GET', '/allocations/' + consumer,
                         CONSUMER_TYPES).json

    def claim(self, consumer, allocations, consumer_generation,
              consumer_type='INSTANCE', expect=(204,)):
        return self.call('PUT', '/allocations/' + consumer, CONSUMER_TYPES,
                         json={'allocations': allocations,
                               'consumer_generation': consumer_generation,
                               'project_id': PROJECT, 'user_id': USER,
                               'consumer_type': consumer_type},
                         expect=expect)

    def usages(self, rp_uuid):
        return self.call('GET', '/resource_providers/%s/usages' % rp_uuid,
                         NESTED).json['usages']


class Host:
    """A compute node: root, two NUMA nodes, a PF on each."""

    def __init__(self, name):
        self.name = name
        self.root = str(uuid.uuid4())
        self.numa = [str(uuid.uuid4()) for _ in range(2)]
        self.pf = [str(uuid.uuid4()) for _ in range(2)]

    def children(self):
        return ([('%s_NUMA%d' % (self.name, i), numa, self.root)
                 for i, numa in enumerate(self.numa)]
                + [('%s_NUMA%d_PF' % (self.name, i), pf, self.numa[i])
                   for i, pf in enumerate(self.pf)])

    def providers(self):
        return [self.root] + self.numa + self.pf


def inventory(total, **fields):
    return dict({'total': total}, **fields)


def bring_up(client, host, aggregate):
    """What the resource tracker does on a compute node's first update."""
    client.ensure_tree(host.name, host.root, host.children())
    client.set_inventory(host.root, {
        'DISK_GB': inventory(100), 'VGPU': inventory(2)})
    for numa in host.numa:
        client.set_inventory(numa, {
            'VCPU': inventory(8, allocation_ratio=4.0),
            'MEMORY_MB': inventory(8192, reserved=512)})
    for pf, physnet in zip(host.pf, (PHYSNET, OTHER_PHYSNET)):
        client.set_inventory(pf, {'SRIOV_NET_VF': inventory(4)})
        client.set_traits(pf, [physnet, 'HW_NIC_SRIOV'])
    client.set_traits(host.root, ['COMPUTE_NODE', 'HW_CPU_X86_AVX2'])
    client.set_aggregates(host.root, [aggregate])


def candidates(client, aggregate):
    """A server on a NUMA node with a VF of that node's PF on PHYSNET."""
    query = ('resources=DISK_GB:10'
             '&resources1=VCPU:2,MEMORY_MB:1024'
             '&resources2=SRIOV_NET_VF:1&required2=%s' % PHYSNET
             + '&same_subtree=1,2&group_policy=isolate'
             '&member_of=%s&required=COMPUTE_NODE' % aggregate)
    return client.call('GET', '/allocation_candidates?' + query,
                       SAME_SUBTREE).json


@pytest.fixture
def client(api):
    return ReportClient(api)


def test_compute_node_life(client, api):
    aggregate = str(uuid.uuid4())
    source, dest = Host('source'), Host('dest')
    bring_up(client, source, aggregate)
    bring_up(client, source, aggregate)  # a periodic update: no change
    bring_up(client, dest, aggregate)
    assert client.conflicts == 0
    tree = client.call('GET', '/resource_providers?in_tree=' + source.root,
                       NESTED).json['resource_providers']
    parents = {rp['uuid']: rp['parent_provider_uuid'] for rp in tree}
    assert parents == dict(
        [(source.root, None)]
        + [(numa, source.root) for numa in source.numa]
        + [(pf, numa) for pf, numa in zip(source.pf, source.numa)])

    # Another writer (an operator adding a trait) moves the generation
    # after our cache was filled: our next write conflicts, refreshes and
    # wins on the second attempt, keeping the operator's change.
    stale = client.generations[source.root]
    assert api.put('/traits/CUSTOM_OPERATOR', version=TRAITS).status_code == (
        201)
    operator = api.put(
        '/resource_providers/%s/traits' % source.root, version=TRAITS,
        json={'resource_provider_generation': stale,
              'traits': ['COMPUTE_NODE', 'HW_CPU_X86_AVX2',
                         'CUSTOM_OPERATOR']})
    assert operator.status_code == 200, operator.text
    client.set_inventory(source.root, {
        'DISK_GB': inventory(200), 'VGPU': inventory(2)})
    assert client.conflicts == 1
    assert client.call('GET', '/resource_providers/%s/inventories'
                       % source.root, INVENTORY).json['inventories'][
        'DISK_GB']['total'] == 200

    # Scheduling: only NUMA0 has a PF on PHYSNET, on either host.
    found = candidates(client, aggregate)
    requests_by_root = {}
    for request in found['allocation_requests']:
        root = next(rp for rp in request['allocations']
                    if rp in (source.root, dest.root))
        requests_by_root[root] = request
    assert sorted(requests_by_root) == sorted([source.root, dest.root])
    chosen = requests_by_root[source.root]
    assert chosen['allocations'] == {
        source.root: {'resources': {'DISK_GB': 10}},
        source.numa[0]: {'resources': {'VCPU': 2, 'MEMORY_MB': 1024}},
        source.pf[0]: {'resources': {'SRIOV_NET_VF': 1}}}
    assert chosen['mappings'] == {
        '': [source.root], '1': [source.numa[0]], '2': [source.pf[0]]}
    summaries = found['provider_summaries']
    assert summaries[source.pf[0]]['parent_provider_uuid'] == source.numa[0]

    # The claim: a new consumer, so no generation yet.
    instance = str(uuid.uuid4())
    client.claim(instance, chosen['allocations'], None)
    claimed = client.allocations(instance)
    assert claimed['consumer_generation'] == 1
    assert claimed['consumer_type'] == 'INSTANCE'
    # A second scheduler racing for the same instance loses.
    lost = client.claim(instance, chosen['allocations'], None,
                        expect=(409,))
    assert error_text.code(lost) == 'placement.concurrent_update'
    assert client.usages(source.numa[0]) == {'VCPU': 2, 'MEMORY_MB': 1024}

    # Migration: the source allocations move to the migration record...
    migration = str(uuid.uuid4())
    client.call('POST', '/allocations', CONSUMER_TYPES, json={
        instance: {'allocations': {},
                   'consumer_generation': claimed['consumer_generation'],
                   'project_id': PROJECT, 'user_id': USER,
                   'consumer_type': 'INSTANCE'},
        migration: {'allocations': claimed['allocations'],
                    'consumer_generation': None,
                    'project_id': PROJECT, 'user_id': USER,
                    'consumer_type': 'MIGRATION'},
    }, expect=(204,))
    held = client.allocations(migration)
    assert held['consumer_type'] == 'MIGRATION'
    assert sorted(held['allocations']) == sorted(chosen['allocations'])
    # ... the instance, without allocations, is a new consumer again ...
    assert client.allocations(instance) == {'allocations': {}}
    # ... and claims on the destination, with a VGPU of its root.
    on_dest = requests_by_root[dest.root]['allocations']
    on_dest[dest.root]['resources']['VGPU'] = 1
    client.claim(instance, on_dest, None)
    # Confirming the migration drops the source allocations.
    client.call('DELETE', '/allocations/' + migration, CONSUMER_TYPES,
                expect=(204,))
    assert client.usages(source.numa[0]) == {'VCPU': 0, 'MEMORY_MB': 0}
    assert client.usages(dest.root) == {'DISK_GB': 10, 'VGPU': 1}

    # Reshape: the destination's VGPUs move from the root into a child
    # provider for the physical GPU, the instance's allocation with them.
    gpu = str(uuid.uuid4())
    client.ensure_tree(dest.name, dest.root,
                       [('dest_GPU0', gpu, dest.root)])
    current = client.allocations(instance)
    moved = {rp: {'resources': dict(alloc['resources'])}
             for rp, alloc in current['allocations'].items()}
    del moved[dest.root]['resources']['VGPU']
    moved[gpu] = {'resources': {'VGPU': 1}}
    client.call('POST', '/reshaper', RESHAPER, json={
        'inventories': {
            dest.root: {
                'resource_provider_generation': client.generations[dest.root],
                'inventories': {'DISK_GB': inventory(100)}},
            gpu: {
                'resource_provider_generation': client.generations[gpu],
                'inventories': {'VGPU': inventory(2)}},
        },
        'allocations': {instance: {
            'allocations': moved,
            'consumer_generation': current['consumer_generation'],
            'project_id': PROJECT, 'user_id': USER}},
    }, expect=(204,))
    assert client.usages(dest.root) == {'DISK_GB': 10}
    assert client.usages(gpu) == {'VGPU': 1}
    client.refresh(dest.root)
    client.refresh(gpu)

    # Healing: the instance's port VF was never allocated; add it with the
    # consumer generation, and retry after a stale generation is refused.
    healed = client.allocations(instance)
    with_port = {rp: {'resources': dict(alloc['resources'])}
                 for rp, alloc in healed['allocations'].items()}
    with_port.setdefault(dest.pf[1], {'resources': {}})['resources'][
        'SRIOV_NET_VF'] = 1
    stale = client.claim(instance, with_port,
                         healed['consumer_generation'] - 1, expect=(409,))
    assert error_text.code(stale) == 'placement.concurrent_update'
    client.claim(instance, with_port, healed['consumer_generation'])
    assert client.allocations(instance)['consumer_generation'] == (
        healed['consumer_generation'] + 1)
    assert client.usages(dest.pf[1]) == {'SRIOV_NET_VF': 1}

    # The instance is deleted.
    client.call('DELETE', '/allocations/' + instance, CONSUMER_TYPES,
                expect=(204,))
    assert client.allocations(instance) == {'allocations': {}}
    totals = client.call('GET', '/usages?project_id=' + PROJECT,
                         CONSUMER_TYPES).json['usages']
    assert totals == {}

    # The compute nodes go away, leaves first: a parent is refused.
    for host in (source, dest):
        refused = client.call('DELETE', '/resource_providers/' + host.root,
                              CONSUMER_TYPES, expect=(409,))
        assert error_text.code(refused) == (
            'placement.resource_provider.cannot_delete_parent')
    for rp in (source.pf + source.numa + [source.root]
               + dest.pf + [gpu] + dest.numa + [dest.root]):
        client.call('DELETE', '/resource_providers/' + rp, NESTED,
                    expect=(204,))
    assert client.call('GET', '/resource_providers', NESTED).json == {
        'resource_providers': []}
