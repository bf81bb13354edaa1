"""The capacity answer against an oracle: a scheduler placing instances
through the real API until none is left.

Each seed builds a random small cloud (flat hosts, NUMA trees with PFs,
disks shared through aggregates, traits, reserved amounts, allocation
ratios, unit and step limits, existing allocations) and two random
flavours (traits, aggregates wanted or not, in_tree, NUMA and PF
groups), counted with a few trees a batch for odd seeds, asks GET
/x-capacity/allocation_candidates for each, then for each in turn takes
the first candidate of GET /allocation_candidates and PUTs it as a new
consumer's allocations until there is none (the second flavour is asked
and placed on what the first one left). The totals must
be equal; so must the per-host counts of the hosts no sharing provider
serves. A failure names its seed.
"""
import random
import urllib.parse
import uuid as uuidlib

import pytest

from placement.candidates import capacity
from placement.db import trait as trait_db

import sql_rows

CLOUDS = 200
VERSION = '1.39'
SHARES = 'MISC_SHARES_VIA_AGGREGATE'
AGGREGATES = ('A', 'B')


def _amount(rng, total, unit=1):
    """An inventory record of ``total`` with random limits a flavour's
    amounts (multiples of ``unit``) still often meet."""
    record = {'total': total}
    if rng.random() < 0.3:
        record['reserved'] = min(total, rng.choice([unit, 2 * unit]))
    if rng.random() < 0.4:
        record['allocation_ratio'] = rng.choice([0.5, 1.5, 2.0, 3.0])
    if rng.random() < 0.1:
        record['step_size'] = rng.choice([unit, 2 * unit])
    if rng.random() < 0.1:
        record['min_unit'] = 2 * unit
    if rng.random() < 0.1:
        record['max_unit'] = max(record.get('min_unit', 1),
                                 record.get('step_size', 1),
                                 rng.choice([unit, 2 * unit, 4 * unit]))
    return record


class _Rows:
    """Providers by name, written straight into the database (sql_rows):
    one transaction for a whole cloud."""

    def __init__(self, conn):
        self.conn = conn
        self.uuids = {}
        self.ids = {}

    def aggregate(self, name):
        return self.uuids.setdefault(name, str(uuidlib.uuid4()))

    def provider(self, name, parent=None, inventory=None, traits=(),
                 aggregates=()):
        row = sql_rows.provider(self.conn, name=name,
                                parent_id=self.ids.get(parent))
        self.ids[name], self.uuids[name] = row['id'], row['uuid']
        sql_rows.inventory(self.conn, row['id'], inventory)
        sql_rows.traits(self.conn, row['id'], list(traits))
        sql_rows.aggregates(self.conn, row['id'],
                            [self.aggregate(agg) for agg in aggregates])


def _build(engine, rng):
    """A random cloud; (cloud, names of the hosts a sharing provider
    serves)."""
    with engine.begin() as conn:
        for trait in ('CUSTOM_GOLD', 'CUSTOM_PHYSNET_A', 'CUSTOM_PHYSNET_B'):
            # Flavours may name them whether or not a provider has them.
            trait_db.ensure(conn, trait)
        cloud = _Rows(conn)
        return cloud, _providers(cloud, rng)


def _providers(cloud, rng):
    """Hosts and sharing disks; the names of the hosts a sharing disk
    serves."""
    served = set()
    sharing_in = {agg for agg in AGGREGATES if rng.random() < 0.5}
    for host in range(rng.randint(2, 4)):
        name = 'host-%d' % host
        aggregates = [rng.choice(AGGREGATES)] if rng.random() < 0.8 else []
        if set(aggregates) & sharing_in:
            served.add(name)
        traits = [trait for trait in ('HW_CPU_X86_AVX2', 'CUSTOM_GOLD')
                  if rng.random() < 0.4]
        inventory = {}
        if rng.random() < 0.6:
            inventory['DISK_GB'] = _amount(rng, rng.choice([40, 60, 100]),
                                           10)
        if rng.random() < 0.55:
            inventory['VCPU'] = _amount(rng, rng.randint(1, 4))
            inventory['MEMORY_MB'] = _amount(
                rng, rng.choice([1024, 2048, 3072]), 512)
            cloud.provider(name, inventory=inventory, traits=traits,
                           aggregates=aggregates)
            continue
        cloud.provider(name, inventory=inventory, traits=traits,
                       aggregates=aggregates)
        for numa in range(rng.randint(1, 2)):
            child = '%s-numa%d' % (name, numa)
            cloud.provider(child, parent=name, inventory={
                'VCPU': _amount(rng, rng.randint(1, 3)),
                'MEMORY_MB': _amount(rng, rng.choice([1024, 2048, 3072]),
                                     512)},
                traits=['HW_NUMA_ROOT'])
            if rng.random() < 0.7:
                cloud.provider('%s-pf' % child, parent=child, inventory={
                    'SRIOV_NET_VF': _amount(rng, rng.randint(1, 4))},
                    traits=[rng.choice(['CUSTOM_PHYSNET_A',
                                        'CUSTOM_PHYSNET_B'])])
    for agg in sorted(sharing_in):
        cloud.provider('disk-%s' % agg, inventory={
            'DISK_GB': _amount(rng, rng.choice([40, 80, 150]), 10)},
            traits=[SHARES], aggregates=[agg])
    return served


def _existing_usage(api, rng):
    """A few instances already there, placed as the API would."""
    for _number in range(rng.randint(0, 3)):
        query = 'resources=VCPU:1,MEMORY_MB:512&limit=%d' % rng.randint(1, 5)
        found = api.get('/allocation_candidates?' + query,
                        version=VERSION).json
        if found['allocation_requests']:
            _claim(api, rng.choice(found['allocation_requests']))


def _flavour(rng, cloud):
    """A random query string of GET /allocation_candidates."""
    resources = {'VCPU': rng.choice([1, 1, 2]),
                 'MEMORY_MB': rng.choice([512, 512, 1024])}
    if rng.random() < 0.5:
        resources['DISK_GB'] = rng.choice([10, 20])
    pairs = [('resources', ','.join('%s:%d' % item
                                    for item in resources.items()))]
    if rng.random() < 0.15:
        pairs.append(('required', rng.choice(
            ['HW_CPU_X86_AVX2', '!CUSTOM_GOLD', 'in:HW_CPU_X86_AVX2,'
             'CUSTOM_GOLD'])))
    if rng.random() < 0.15:
        pairs.append(('member_of', cloud.aggregate(rng.choice(AGGREGATES))))
    if rng.random() < 0.1:
        pairs.append(('root_required', '!CUSTOM_GOLD'))
    shape = rng.random()
    if shape < 0.3:
        pairs.append(('resources1', 'SRIOV_NET_VF:1'))
        if rng.random() < 0.3:
            pairs.append(('required1', 'CUSTOM_PHYSNET_A'))
        if rng.random() < 0.4:
            pairs += [('resources2', 'SRIOV_NET_VF:1'),
                      ('group_policy', rng.choice(['none', 'isolate']))]
        if rng.random() < 0.3:
            pairs += [('resources3', 'VCPU:1'), ('same_subtree', '1,3')]
            if not any(key == 'group_policy' for key, _value in pairs):
                pairs.append(('group_policy', 'none'))
    elif shape < 0.5:
        # Split over NUMA nodes, as Nova asks with hw:numa_nodes=2; the
        # unsuffixed group's terms only with its disk.
        unsuffixed = pairs[1:] if 'DISK_GB' in resources else []
        pairs = [('resources1', 'VCPU:1,MEMORY_MB:512'),
                 ('resources2', 'VCPU:1,MEMORY_MB:512'),
                 ('group_policy', rng.choice(['none', 'isolate']))]
        if unsuffixed:
            pairs += [('resources', 'DISK_GB:%d' % resources['DISK_GB'])
                      ] + unsuffixed
    # The unsuffixed group's terms, when it asks for resources.
    unsuffixed = any(key == 'resources' for key, _value in pairs)
    if unsuffixed and rng.random() < 0.1:
        pairs.append(('member_of', '!' + cloud.aggregate(
            rng.choice(AGGREGATES))))
    if unsuffixed and rng.random() < 0.1:
        pairs.append(('in_tree', cloud.uuids[rng.choice(
            [name for name in cloud.uuids if name.startswith('host-')
             and '-numa' not in name])]))
    return urllib.parse.urlencode(pairs)


def _claim(api, candidate):
    """PUT a candidate's allocations for a new consumer."""
    response = api.put('/allocations/%s' % uuidlib.uuid4(), json={
        'allocations': candidate['allocations'],
        'project_id': 'project', 'user_id': 'user',
        'consumer_generation': None, 'consumer_type': 'INSTANCE'},
        version=VERSION)
    assert response.status_code == 204, response.json
    return response


def _place_all(api, query):
    """Instances placed one by one: {root uuid: count}."""
    placed: dict[str | None, int] = {}
    while True:
        found = api.get('/allocation_candidates?' + query, version=VERSION)
        assert found.status_code == 200, found.json
        requests = found.json['allocation_requests']
        if not requests:
            return placed
        first = requests[0]
        summaries = found.json['provider_summaries']
        roots = {summaries[provider]['root_provider_uuid']
                 for provider in first['allocations']
                 if SHARES not in summaries[provider].get('traits', ())}
        # A candidate of sharing providers alone belongs to no one host.
        root = roots.pop() if len(roots) == 1 else None
        placed[root] = placed.get(root, 0) + 1
        _claim(api, first)
        assert sum(placed.values()) < 500, 'runaway placement'


@pytest.mark.parametrize('seed', range(CLOUDS))
def test_capacity_matches_placing_one_by_one(backend, api, seed,
                                             monkeypatch):
    if seed % 2:
        # A few trees a batch: hosts counted batch by batch, those a
        # sharing disk serves in one.
        monkeypatch.setattr(capacity, 'TREES_A_READ', 1 + seed % 3)
    rng = random.Random(seed)
    cloud, served = _build(backend.engine, rng)
    _existing_usage(api, rng)
    queries = [_flavour(rng, cloud) for _ in range(2)]
    together = api.post('/x-capacity/allocation_candidates', json={
        'flavours': {'f%d' % i: query for i, query in enumerate(queries)},
        'hosts': 1000}, version=VERSION)
    assert together.status_code == 200, (seed, together.json)
    names = {uuid: name for name, uuid in cloud.uuids.items()}
    # The second flavour is counted on what the first one left.
    for number, query in enumerate(queries):
        response = api.get('/x-capacity/allocation_candidates?%s&hosts=1000'
                           % query, version=None)
        assert response.status_code == 200, (seed, query, response.json)
        [answer] = response.json['flavours']
        assert all(type(count) is int for count in [answer['fit']] + [
            host['fit'] for host in answer['hosts']]), (seed, answer)
        if not number:
            assert _counts(answer) == _counts(
                together.json['flavours'][0]), seed
        placed = _place_all(api, query)
        context = 'seed %d, flavour %s: answer %s, placed %s' % (
            seed, query, answer, placed)
        assert answer['fit'] == sum(placed.values()), context
        counted = {host['uuid']: host['fit'] for host in answer['hosts']}
        for uuid in set(counted) | set(placed):
            if uuid is not None and names[uuid] not in served:
                assert counted.get(uuid, 0) == placed.get(uuid, 0), (
                    context, names[uuid])


def _counts(flavour):
    """A flavour's answer but its name and query string."""
    return {key: value for key, value in flavour.items()
            if key not in ('name', 'query')}
