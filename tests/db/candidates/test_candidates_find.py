"""placement.candidates.find and matching_providers on every backend,
with data written straight into the tables.
"""
import time
import urllib.parse
import uuid as uuidlib

import pytest

from placement import candidates
from placement import exception
from placement import querylang
from placement.candidates import loading
from placement.candidates import names as naming
from placement.candidates import narrowing as planner
from placement.candidates import request as candidates_request
from placement.candidates import sql as candidates_sql
from placement.candidates import survey_cache
from placement.db import resource_class as rc_db

import sql_rows
import sql_trace


class Builder:
    """Providers with inventories, traits and aggregates, by name, written
    with sql_rows; each committed at once. ``ids`` maps provider names to
    ids, ``uuids`` every name (aggregates too) to its uuid.
    """

    def __init__(self, engine):
        self.engine = engine
        self.ids = {}
        self.uuids = {}

    def provider(self, name, parent=None, inventory=None, traits=(),
                 aggregates=()):
        """``inventory``: {class: total or {field: value}}."""
        with self.engine.begin() as conn:
            row = sql_rows.provider(
                conn, name, parent_id=self.ids[parent] if parent else None)
            self.ids[name], self.uuids[name] = row['id'], row['uuid']
            sql_rows.inventory(conn, row['id'], inventory)
            sql_rows.traits(conn, row['id'], traits)
            sql_rows.aggregates(conn, row['id'], [
                self.uuids.setdefault(aggregate, str(uuidlib.uuid4()))
                for aggregate in aggregates])
            return row['id']

    def allocate(self, name, resources):
        with self.engine.begin() as conn:
            sql_rows.allocate(conn, self.ids[name], resources)


@pytest.fixture
def data(backend):
    return Builder(backend.engine)


@pytest.fixture
def find(backend):
    def run(query, version=(1, 39), **settings):
        request = querylang.parse(urllib.parse.parse_qsl(query), version)
        with backend.engine.connect() as conn:
            return candidates.find(
                conn, request, candidates.Settings(**settings))
    return run


@pytest.fixture
def cloud(data):
    """Two compute trees sharing a disk provider through aggregate A."""
    data.provider('cn1', inventory={'DISK_GB': 50}, aggregates=['A'],
                  traits=['HW_CPU_X86_AVX'])
    data.provider('numa0', parent='cn1',
                  inventory={'VCPU': 4, 'MEMORY_MB': 2048},
                  traits=['HW_NUMA_ROOT', 'CUSTOM_FOO'])
    data.provider('numa1', parent='cn1',
                  inventory={'VCPU': 4, 'MEMORY_MB': 2048})
    data.provider('cn2', inventory={
        'VCPU': {'total': 8, 'allocation_ratio': 2.0},
        'MEMORY_MB': {'total': 4096, 'reserved': 1024}},
        aggregates=['A'])
    data.provider('ss', inventory={'DISK_GB': 1000},
                  traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=['A'])
    data.allocate('cn2', {'VCPU': 3})
    return data


def _names(data, candidate):
    by_uuid = {u: n for n, u in data.uuids.items()}
    return {by_uuid[u]: r for u, r in candidate.allocations.items()}


def test_candidates_and_summaries(cloud, find):
    result = find('resources=VCPU:1,DISK_GB:10')
    found = sorted((_names(cloud, c) for c in result.candidates), key=str)
    assert found == sorted([
        {'numa0': {'VCPU': 1}, 'cn1': {'DISK_GB': 10}},
        {'numa1': {'VCPU': 1}, 'cn1': {'DISK_GB': 10}},
        {'numa0': {'VCPU': 1}, 'ss': {'DISK_GB': 10}},
        {'numa1': {'VCPU': 1}, 'ss': {'DISK_GB': 10}},
        {'cn2': {'VCPU': 1}, 'ss': {'DISK_GB': 10}},
    ], key=str)
    summaries = result.summaries
    assert set(summaries) == {cloud.uuids[n] for n in (
        'cn1', 'numa0', 'numa1', 'cn2', 'ss')}
    cn2 = summaries[cloud.uuids['cn2']]
    assert cn2.resources == {'VCPU': {'capacity': 16, 'used': 3},
                             'MEMORY_MB': {'capacity': 3072, 'used': 0}}
    numa0 = summaries[cloud.uuids['numa0']]
    assert numa0.parent_uuid == cloud.uuids['cn1']
    assert numa0.root_uuid == cloud.uuids['cn1']
    # Trait id order: standard traits come before custom ones.
    assert numa0.traits == ['HW_NUMA_ROOT', 'CUSTOM_FOO']


def test_summaries_before_nesting(cloud, find):
    """Before 1.29 a candidate takes one provider per tree, and only the
    providers used are summarised; before 1.27 only the requested classes.
    """
    result = find('resources=VCPU:1,DISK_GB:10', version=(1, 26))
    found = sorted((_names(cloud, c) for c in result.candidates), key=str)
    assert found == sorted([
        {'numa0': {'VCPU': 1}, 'ss': {'DISK_GB': 10}},
        {'numa1': {'VCPU': 1}, 'ss': {'DISK_GB': 10}},
        {'cn2': {'VCPU': 1}, 'ss': {'DISK_GB': 10}},
    ], key=str)
    assert set(result.summaries) == {cloud.uuids[n] for n in (
        'numa0', 'numa1', 'cn2', 'ss')}
    assert result.summaries[cloud.uuids['cn2']].resources == {
        'VCPU': {'capacity': 16, 'used': 3}}


def test_limited_summaries_before_nesting(cloud, find):
    """Upstream summarises the providers of every candidate it made that
    sit in the trees of the candidates it returns.
    """
    result = find('resources=VCPU:1&limit=1', version=(1, 28))
    assert [_names(cloud, c) for c in result.candidates] == [
        {'numa0': {'VCPU': 1}}]
    assert set(result.summaries) == {cloud.uuids['numa0'],
                                     cloud.uuids['numa1']}


def test_mappings(cloud, find):
    result = find('resources_C=VCPU:1&required_C=CUSTOM_FOO'
                  '&resources_D=DISK_GB:10&group_policy=isolate')
    found = sorted((c.mappings for c in result.candidates), key=str)
    assert found == sorted([
        {'_C': [cloud.uuids['numa0']], '_D': [cloud.uuids['cn1']]},
        {'_C': [cloud.uuids['numa0']], '_D': [cloud.uuids['ss']]}], key=str)


def test_limit_and_max_candidates(cloud, find):
    assert len(find('resources=VCPU:1').candidates) == 3
    limited = find('resources=VCPU:1&limit=1')
    assert len(limited.candidates) == 1
    assert set(limited.summaries) == {cloud.uuids[n] for n in (
        'cn1', 'numa0', 'numa1')}
    assert len(find('resources=VCPU:1&limit=%d' % 10 ** 30).candidates) == 3
    assert len(find('resources=VCPU:1', max_candidates=2).candidates) == 2
    # As upstream, a bound of 0 still yields one candidate.
    assert len(find('resources=VCPU:1', max_candidates=0).candidates) == 1


def test_randomized_sample(cloud, find):
    seen = set()
    for _ in range(30):
        [candidate] = find('resources=VCPU:1&limit=1',
                           randomize=True).candidates
        seen.add(tuple(candidate.allocations))
    assert len(seen) == 3


def test_breadth_first(cloud, find):
    result = find('resources=VCPU:1&limit=2', strategy='breadth-first')
    roots = {cloud.uuids['cn1'], cloud.uuids['cn2']}
    assert {s.root_uuid for s in result.summaries.values()} == roots


def test_root_required(cloud, find):
    result = find('resources=VCPU:1&root_required=HW_CPU_X86_AVX')
    assert {tuple(_names(cloud, c)) for c in result.candidates} == {
        ('numa0',), ('numa1',)}


@pytest.mark.parametrize('query, message', [
    ('resources=VCPU:1,NOPE:1', 'Invalid resource class in resources '
     'parameter: No such resource class NOPE.'),
    ('resources=VCPU:1&required=CUSTOM_NOPE', 'No such trait(s): '
     'CUSTOM_NOPE.'),
    ('resources=VCPU:1&root_required=!CUSTOM_NOPE', 'No such trait(s): '
     'CUSTOM_NOPE.'),
])
def test_unknown_names(cloud, find, query, message):
    with pytest.raises(exception.Invalid) as info:
        find(query)
    assert str(info.value) == message


@pytest.mark.parametrize('query', [
    # An earlier group finds nothing: upstream stops before the name.
    'resources=VCPU:99&resources1=NOPE:1',
    'resources=VCPU:1&root_required=CUSTOM_FOO&resources1=NOPE:1',
    'resources1=VCPU:1&member_of1=%s&required1=CUSTOM_NOPE' % (
        '11111111-1111-1111-1111-111111111111'),
])
def test_nothing_found_before_the_unknown_name(cloud, find, query):
    assert find(query).candidates == []


def test_group_in_an_unknown_tree_finds_nothing(cloud, find):
    unknown = str(uuidlib.uuid4())
    assert find('resources=VCPU:1&in_tree=%s' % unknown).candidates == []
    assert find('resources=VCPU:1&resources1=DISK_GB:1&in_tree1=%s'
                '&group_policy=none' % unknown).candidates == []
    # Unknown names are still reported first.
    with pytest.raises(exception.Invalid):
        find('resources=NOPE:1&in_tree=%s' % unknown)


def test_matching_providers(cloud, backend):
    def match(**fields):
        group = candidates_request.Group(**fields)
        with backend.engine.connect() as conn:
            return {cloud_name(cloud, p) for p in
                    candidates.matching_providers(conn, group)}
    assert match(resources={'VCPU': 1}) == {'numa0', 'numa1', 'cn2'}
    # cn2: 8 VCPU at ratio 2 with 3 used, but max_unit 8.
    assert match(resources={'VCPU': 8}) == {'cn2'}
    assert match(resources={'VCPU': 9}) == set()
    assert match(required=[frozenset(['CUSTOM_FOO'])]) == {'numa0'}
    assert match(forbidden={'MISC_SHARES_VIA_AGGREGATE'},
                 member_of=[{cloud.uuids['A']}]) == {'cn1', 'cn2'}
    assert match(in_tree=cloud.uuids['numa1']) == {'cn1', 'numa0', 'numa1'}
    assert match(in_tree=str(uuidlib.uuid4())) == set()
    assert len(match()) == 5
    with pytest.raises(naming.UnknownResourceClass):
        match(resources={'NOPE': 1})


def cloud_name(data, provider_id):
    return {i: n for n, i in data.ids.items()}[provider_id]


def test_mysql_capacity_arithmetic(data, find, backend):
    """MySQL computes with single precision ratios, as upstream's SQL
    filter does there: 10 * 0.7f is just below 7.
    """
    data.provider('cn', inventory={
        'VCPU': {'total': 10, 'allocation_ratio': 0.7}})
    fits = bool(find('resources=VCPU:7').candidates)
    assert fits is (backend.name != 'mysql')


def test_same_subtree_through_providers_without_inventory(data, find):
    data.provider('host')
    data.provider('numa', parent='host', inventory={'VCPU': 4})
    data.provider('nic', parent='host', traits=['CUSTOM_NIC'])
    data.provider('pf', parent='nic', inventory={'SRIOV_NET_VF': 4})
    [candidate] = find('resources_P=SRIOV_NET_VF:1&required_N=CUSTOM_NIC'
                       '&same_subtree=_P,_N&group_policy=none').candidates
    assert candidate.mappings == {'_P': [data.uuids['pf']],
                                  '_N': [data.uuids['nic']]}
    assert find('resources_C=VCPU:1&resources_P=SRIOV_NET_VF:1'
                '&same_subtree=_C,_P&group_policy=none').candidates == []
    assert len(find('resources_C=VCPU:1&resources_P=SRIOV_NET_VF:1'
                    '&group_policy=none').candidates) == 1


def _random_cloud(data, seed):
    """Trees (some nested, some full, some with a trait on the root),
    sharing providers (one with a child, one in a tree of its own that
    root_required turns away), aggregates and a rare class.
    """
    import random
    rand = random.Random(seed)
    with data.engine.begin() as conn:
        rc_db.create(conn, 'CUSTOM_RARE')
    for n in range(10):
        root = 'cn%d' % n
        local = {'DISK_GB': {'total': rand.choice([20, 100, 2000]),
                             'max_unit': rand.choice([20, 100, 2000])}}
        if n % 4 == 3:
            local = {}
        data.provider(root, inventory=local,
                      aggregates=rand.sample('ABC', rand.randint(0, 2)),
                      traits=rand.sample(['CUSTOM_GOLD', 'CUSTOM_MAINT'],
                                         rand.randint(0, 1)))
        hosts = [root]
        if n % 3 == 0:
            hosts = ['%s_numa%d' % (root, i) for i in range(2)]
            for host in hosts:
                data.provider(host, parent=root, traits=['HW_NUMA_ROOT'])
        for host in hosts:
            data.provider(host + '_cpu', parent=host, inventory={
                'VCPU': {'total': rand.choice([2, 8]),
                         'allocation_ratio': rand.choice([1.0, 4.0])},
                'MEMORY_MB': {'total': rand.choice([1024, 8192]),
                              'reserved': rand.choice([0, 512])}})
            if rand.random() < 0.5:
                data.allocate(host + '_cpu', {
                    'VCPU': rand.randint(1, 2), 'MEMORY_MB': 512})
        if n % 5 == 1:
            data.provider(root + '_gpu', parent=root,
                          inventory={'CUSTOM_RARE': 2})
    data.provider('ss', inventory={'DISK_GB': 5000},
                  traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=['A'])
    data.provider('ss_child', parent='ss', inventory={'VCPU': 4})
    data.provider('ss2', inventory={'DISK_GB': 3000, 'CUSTOM_RARE': 1},
                  traits=['MISC_SHARES_VIA_AGGREGATE', 'CUSTOM_MAINT'],
                  aggregates=['B'])
    data.allocate('ss2', {'DISK_GB': 2500})


_NARROWED_QUERIES = [
    'resources=VCPU:1,MEMORY_MB:512,DISK_GB:10',
    'resources=VCPU:1,MEMORY_MB:512,DISK_GB:1500',
    'resources=VCPU:4,DISK_GB:3000',
    'resources=DISK_GB:4000',
    'resources=DISK_GB:100',
    'resources=VCPU:1,CUSTOM_RARE:1',
    'resources=VCPU:1,DISK_GB:10&member_of=in:{A},{C}',
    'resources=VCPU:1,DISK_GB:10&member_of={B}&member_of=!{C}',
    'resources=VCPU:1,DISK_GB:100&root_required=!CUSTOM_MAINT',
    'resources=VCPU:1&root_required=CUSTOM_GOLD,!CUSTOM_MAINT',
    'resources=DISK_GB:2000&required=!CUSTOM_MAINT',
    'resources=DISK_GB:10&resources_C=VCPU:1,MEMORY_MB:512'
    '&resources_G=CUSTOM_RARE:1&group_policy=isolate',
    'resources_A=VCPU:1&resources_B=VCPU:1&member_of_A={A}'
    '&group_policy=none',
    'resources_N=VCPU:1&required_H=HW_NUMA_ROOT&same_subtree=_N,_H'
    '&group_policy=isolate',
    'resources=VCPU:99999999999',
    'resources=VCPU:1,DISK_GB:10&required=CUSTOM_GOLD',
    'resources=VCPU:1,DISK_GB:100&required=CUSTOM_MAINT',
    'resources=VCPU:1,MEMORY_MB:512&required=in:CUSTOM_GOLD,HW_NUMA_ROOT'
    '&required=!CUSTOM_MAINT',
    'resources=DISK_GB:10&resources_C=VCPU:1&required_C=HW_NUMA_ROOT'
    '&group_policy=none',
    'resources_C=VCPU:1&required_M=HW_NUMA_ROOT&same_subtree=_C,_M'
    '&group_policy=none',
]


@pytest.mark.parametrize('seed', [1, 2, 3])
def test_narrowing_changes_no_answer(data, find, seed):
    """Reading only the rows that can matter answers exactly as reading
    every row of the requested classes, summaries included.
    """
    _random_cloud(data, seed)
    asked = [(q.format(**data.uuids), (1, 39)) for q in _NARROWED_QUERIES]
    # Before nested providers, summaries cover other providers.
    asked += [(q, (1, 28)) for q in _NARROWED_QUERIES[:4]
              + _NARROWED_QUERIES[15:17]]
    narrowed = [find(query, version) for query, version in asked]
    for (query, version), result in zip(asked, narrowed):
        assert result == find(query, version, narrow=False), (query, version)
    assert sum(bool(result.candidates) for result in narrowed) > 10


@pytest.mark.parametrize('sharing_usage', ['up front', 'as needed'])
@pytest.mark.parametrize('probed', ['as surveyed', 'all', 'none'])
@pytest.mark.parametrize('seed', [1, 2])
def test_trees_read_in_batches_change_no_answer(data, find, seed, probed,
                                                sharing_usage, monkeypatch):
    """With a limit, trees are read a batch at a time until enough
    candidates came; the answer is the one reading them all would give,
    whichever conditions on a tree (scarce classes, required traits,
    member_of) the batch's roots are found by looking up tree by tree
    rather than among all the providers meeting them, and whether the
    sharing providers' usage is read up front or as batches need it
    (SHARING_USAGE_UP_FRONT).
    """
    if sharing_usage == 'as needed':
        monkeypatch.setattr(loading, 'SHARING_USAGE_UP_FRONT', 0)
    surveyed = planner.Narrowing.roots_shape

    def roots_shape(narrowing, roots):
        shape = surveyed(narrowing, roots)
        return shape._replace(
            probed=shape.order if probed == 'all' else ())
    if probed != 'as surveyed':
        monkeypatch.setattr(planner.Narrowing, 'roots_shape',
                            roots_shape)
    _random_cloud(data, seed)
    queries = [q.format(**data.uuids) for q in _NARROWED_QUERIES]
    asked = [(query + '&limit=%d' % limit, {})
             for query in queries for limit in (1, 2, 5, 12)]
    asked += [(query, {'max_candidates': 3}) for query in queries]
    batched = [find(query, first_batch=1, **settings)
               for query, settings in asked]
    for (query, settings), result in zip(asked, batched):
        assert result == find(query, batched=False, **settings), (
            query, settings)
    assert sum(len(result.candidates) > 1 for result in batched) > 10


def test_recent_survey_is_reused(backend, data, find, monkeypatch):
    """The counts behind narrowing are taken again only once they are
    SURVEY_SECONDS old (one statement fewer meanwhile); the answer never
    depends on them.
    """
    data.provider('cn1', inventory={'VCPU': 4, 'DISK_GB': 100})
    survey_cache.forget_surveys()
    clock = [1000.0]
    monkeypatch.setattr(time, 'monotonic', lambda: clock[0])
    with sql_trace.executed(backend.engine) as statements:
        query = 'resources=VCPU:1,DISK_GB:50'
        assert len(find(query).candidates) == 1
        surveyed = len(statements)
        data.provider('cn2', inventory={'VCPU': 4, 'DISK_GB': 100})
        clock[0] += survey_cache.SURVEY_SECONDS
        del statements[:]
        assert len(find(query).candidates) == 2
        assert len(statements) == surveyed - 1
        clock[0] += 1
        del statements[:]
        assert len(find(query).candidates) == 2
        assert len(statements) == surveyed


def test_trees_needed_last_time_come_in_one_batch(data, find,
                                                 monkeypatch):
    """A limited request that had to read a second batch of trees reads
    as many as it needed in its first batch the next time: one look for
    usable roots instead of two, and the same answer.
    """
    for index in range(8):
        data.provider('cn%d' % index, inventory={'VCPU': 4})
        if index % 2 == 0:
            data.allocate('cn%d' % index, {'VCPU': 4})
    looks = []
    usable_roots = candidates_sql.usable_roots

    def counted(*args):
        looks.append(args)
        return usable_roots(*args)
    monkeypatch.setattr(candidates_sql, 'usable_roots', counted)
    query = 'resources=VCPU:1&limit=3'
    first = find(query, first_batch=1)
    assert len(looks) == 2
    del looks[:]
    assert find(query, first_batch=1) == first
    assert len(looks) == 1
    assert [_names(data, c) for c in first.candidates] == [
        {name: {'VCPU': 1}} for name in ('cn1', 'cn3', 'cn5')]


def test_trees_needed_last_time_bound_the_first_batch(data, find,
                                                     monkeypatch):
    """A limited request that needed fewer trees than its first batch
    held looks for a tenth more than those the next time, without the
    half batch of look-ahead, and gives the same answer.
    """
    for index in range(20):
        data.provider('cn%d' % index, inventory={'VCPU': 4})
    asked = []
    usable_roots = candidates_sql.usable_roots

    def counted(conn, narrowing, after, count):
        asked.append(count)
        return usable_roots(conn, narrowing, after, count)
    monkeypatch.setattr(candidates_sql, 'usable_roots', counted)
    query = 'resources=VCPU:1&limit=3'
    first = find(query, first_batch=10)
    assert asked == [16]
    del asked[:]
    assert find(query, first_batch=10) == first
    assert asked == [5]


@pytest.mark.parametrize('query', [
    'resources=DISK_GB:10&member_of={M}&root_required=CUSTOM_ROOT',
    'resources=DISK_GB:10&root_required=CUSTOM_ROOT',
    'resources=DISK_GB:10&member_of={M}',
])
@pytest.mark.parametrize('sharing_usage', ['up front', 'as needed'])
def test_batches_find_sharing_alone_at_trees_left_out(data, find, query,
                                                      sharing_usage,
                                                      monkeypatch):
    """A candidate of a sharing provider alone may anchor at a tree the
    narrowing leaves out (not in the member_of aggregate its sharing
    provider is in); read in batches, the trees the sharing provider
    serves still come with the last batch.
    """
    if sharing_usage == 'as needed':
        monkeypatch.setattr(loading, 'SHARING_USAGE_UP_FRONT', 0)
    data.provider('ss', inventory={'DISK_GB': 100}, aggregates=['M', 'S'],
                  traits=['MISC_SHARES_VIA_AGGREGATE'])
    for name in ('cn1', 'cn2', 'cn3'):
        data.provider(name, inventory={'VCPU': 8}, aggregates=['S'],
                      traits=['CUSTOM_ROOT'])
    query = query.format(**data.uuids)
    unbatched = find(query, batched=False)
    assert unbatched.candidates
    for limit in (1, 2, 10):
        assert find('%s&limit=%d' % (query, limit), first_batch=1) == find(
            '%s&limit=%d' % (query, limit), batched=False), limit


@pytest.mark.parametrize('trees_per_sharer', [0, 10 ** 9])
def test_sharing_anchors_of_listed_trees(backend, data, monkeypatch,
                                         trees_per_sharer):
    """The trees the sharing providers serve, among listed ones, are the
    same whichever way the database is asked: from the sharing providers'
    aggregates or from the trees (TREES_PER_SHARER; MariaDB only).
    """
    monkeypatch.setattr(candidates_sql, 'TREES_PER_SHARER', trees_per_sharer)
    data.provider('ss1', inventory={'DISK_GB': 100}, aggregates=['S', 'T'],
                  traits=['MISC_SHARES_VIA_AGGREGATE'])
    data.provider('ss2', inventory={'DISK_GB': 100}, aggregates=['T'],
                  traits=['MISC_SHARES_VIA_AGGREGATE'])
    data.provider('az', aggregates=['AZ'])
    for n in range(6):
        aggregates = ['AZ'] + (['S'] if n % 2 else []) + (
            ['T'] if n == 4 else [])
        data.provider('cn%d' % n)
        data.provider('cn%d_nic' % n, parent='cn%d' % n,
                      aggregates=aggregates if n % 3 else aggregates[:1])
        data.provider('cn%d_numa' % n, parent='cn%d' % n,
                      aggregates=aggregates)
    ids = data.ids
    roots = sorted(ids['cn%d' % n] for n in (0, 1, 2, 4, 5))
    with backend.engine.connect() as conn:
        anchors = set(map(tuple, candidates_sql.sharing_anchors(
            conn, [ids['ss1'], ids['ss2']], roots)))
        assert anchors == {
            (ids['ss1'], ids['cn1']), (ids['ss1'], ids['cn5']),
            (ids['ss1'], ids['cn4']), (ids['ss2'], ids['cn4'])}
        assert set(map(tuple, candidates_sql.sharing_anchors(
            conn, [ids['ss2']], roots[:1]))) == set()
        assert candidates_sql.sharing_anchors(conn, [ids['ss1']], []) == []
