"""Races of many clients against live placement servers, and what must
hold afterwards, whatever interleaving the servers and the database
produce.

``Servers(urls)`` sends each request to the next of one or more servers
(several API hosts sharing one database, or a Galera cluster behind
them). Each ``race_*`` function sets up its own providers, runs one race
and asserts:

- no response is a 5xx: a request either succeeds or is refused with
  Placement's 4xx;
- claims queue for the providers they share: every claim that fits
  succeeds, and one that does not fit gets upstream's capacity 409;
- nothing is over-allocated, and every acknowledged claim is stored,
  exactly (the usage is their sum, and what is left can be claimed);
- of writers that carry the same provider generation, exactly one wins;
  the others get 409 ``placement.concurrent_update``.

``ALL`` lists the races that need nothing but the servers.
"""
import concurrent.futures
import itertools
import threading
import uuid as uuidlib

import requests

CLIENTS = 24
BURST_CLIENTS = 32
BURST_CLAIMS = 4
CONCURRENT_UPDATE = 'placement.concurrent_update'
# Upstream's code for a resource class that exists already.
UNDEFINED_CODE = 'placement.undefined_code'
# Generous: a 2-core machine running several servers and a database
# cluster answers slowly under a burst.
TIMEOUT = 120


class Servers:
    """Placement endpoints taking turns, one request each."""

    def __init__(self, urls):
        self.urls = list(urls)
        self._next = itertools.cycle(range(len(self.urls)))
        self._lock = threading.Lock()

    def request(self, method, path, json=None, version='1.39', server=None):
        """Send a request (to server number ``server``, or the next one);
        return (status, decoded body or None). A 5xx fails the race.
        """
        if server is None:
            with self._lock:
                server = next(self._next)
        headers = {'X-Auth-Token': 'admin', 'Accept': 'application/json',
                   'OpenStack-API-Version': 'placement %s' % version}
        response = requests.request(method, self.urls[server] + path,
                                    json=json, headers=headers,
                                    timeout=TIMEOUT)
        assert response.status_code < 500, (
            method, path, response.status_code, response.text)
        return response.status_code, (response.json() if response.content
                                      else None)


def _in_parallel(calls, clients=CLIENTS):
    """Run the argument-less ``calls`` at once; their results in order."""
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        return [future.result()
                for future in [pool.submit(call) for call in calls]]


def provider(servers, inventories, name=None):
    """A new provider with ``inventories`` ({class: record}); its uuid."""
    uuid = str(uuidlib.uuid4())
    status, body = servers.request('POST', '/resource_providers', {
        'name': name or 'race-' + uuid, 'uuid': uuid})
    assert status == 200, body
    if inventories:
        status, body = servers.request(
            'PUT', '/resource_providers/%s/inventories' % uuid,
            {'resource_provider_generation': 0, 'inventories': inventories})
        assert status == 200, body
    return uuid


def claim(servers, resources, project='race', user='race'):
    """PUT allocations ({provider: {class: amount}}) for a new consumer:
    (consumer, resources, status, body).
    """
    consumer = str(uuidlib.uuid4())
    status, body = servers.request('PUT', '/allocations/' + consumer, {
        'allocations': {uuid: {'resources': amounts}
                        for uuid, amounts in resources.items()},
        'project_id': project, 'user_id': user,
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    return consumer, resources, status, body


def _winners(outcomes):
    """Every claim either won (204) or did not fit (409); the winners."""
    for _, _, status, body in outcomes:
        assert status in (204, 409), (status, body)
        if status == 409:
            error = body['errors'][0]
            assert 'exceed the capacity' in error['detail'], error
    return [(consumer, resources) for consumer, resources, status, _
            in outcomes if status == 204]


def usage(servers, uuid):
    status, body = servers.request(
        'GET', '/resource_providers/%s/usages' % uuid)
    assert status == 200
    return body['usages']


def holders(servers, uuid):
    status, body = servers.request(
        'GET', '/resource_providers/%s/allocations' % uuid)
    assert status == 200
    return {consumer: allocation['resources']
            for consumer, allocation in body['allocations'].items()}


def generation(servers, uuid):
    status, body = servers.request('GET', '/resource_providers/' + uuid)
    assert status == 200
    return body['generation']


def _acknowledged(winners, uuid):
    return {consumer: resources[uuid]
            for consumer, resources in winners if uuid in resources}


def _fill(servers, resources):
    """Claim ``resources`` one by one until refused; how many fit."""
    fitted = 0
    while True:
        _, _, status, body = claim(servers, resources)
        if status == 409:
            assert 'exceed the capacity' in body['errors'][0]['detail']
            return fitted
        assert status == 204, body
        fitted += 1


def race_burst_that_fits(servers):
    """Many instances booting at once on one provider with room for all
    of them: every claim succeeds, none is refused as a conflict, and
    each bumps the provider's generation once.
    """
    capacity = BURST_CLIENTS * BURST_CLAIMS
    uuid = provider(servers, {'VCPU': {'total': capacity}})

    def client():
        return [claim(servers, {uuid: {'VCPU': 1}})
                for _ in range(BURST_CLAIMS)]

    outcomes = [outcome for claims in _in_parallel(
        [client] * BURST_CLIENTS, BURST_CLIENTS) for outcome in claims]
    refused = [(status, body) for _, _, status, body in outcomes
               if status != 204]
    assert not refused, '%d of %d claims refused: %s' % (
        len(refused), capacity, refused[:3])
    assert usage(servers, uuid) == {'VCPU': capacity}
    assert set(holders(servers, uuid)) == {c for c, _, _, _ in outcomes}
    # One generation for the inventory, one per claim.
    assert generation(servers, uuid) == capacity + 1


def race_last_units_of_one_provider(servers):
    capacity = 10
    uuid = provider(servers, {'VCPU': {'total': capacity}})
    # A little more than there is, so the last units are contended.
    winners = _winners(_in_parallel(
        [lambda: claim(servers, {uuid: {'VCPU': 1}})] * 16
        + [lambda: claim(servers, {uuid: {'VCPU': 2}})] * 8))
    acknowledged = _acknowledged(winners, uuid)
    # The one-unit claims alone exceed the capacity: queued, they take
    # every unit, however the two-unit ones fared.
    assert sum(r['VCPU'] for r in acknowledged.values()) == capacity
    assert holders(servers, uuid) == acknowledged
    assert usage(servers, uuid) == {'VCPU': capacity}
    # No hidden usage either.
    assert _fill(servers, {uuid: {'VCPU': 1}}) == 0


def race_compute_node_and_sharing_provider(servers):
    vcpus, disk = 12, 6
    compute = provider(servers, {'VCPU': {'total': vcpus}})
    shared = provider(servers, {'DISK_GB': {'total': disk}})
    both = {compute: {'VCPU': 1}, shared: {'DISK_GB': 1}}
    outcomes = _in_parallel(
        [lambda: claim(servers, both),
         lambda: claim(servers, {compute: {'VCPU': 1}})] * 12)
    winners = _winners(outcomes)
    on_compute = _acknowledged(winners, compute)
    on_shared = _acknowledged(winners, shared)
    # A claim of both providers holds both or neither.
    assert set(on_shared) <= set(on_compute)
    assert all(resources == both for consumer, resources in winners
               if consumer in on_shared)
    # Every claim that fitted was taken: the compute node is full, and so
    # is the disk unless the VCPUs ran out first.
    assert len(on_compute) == vcpus
    if len(on_shared) < disk:
        assert all("'VCPU'" in body['errors'][0]['detail']
                   for _, _, status, body in outcomes if status == 409)
    assert len(on_shared) <= disk
    assert holders(servers, compute) == on_compute
    assert holders(servers, shared) == on_shared
    assert usage(servers, compute) == {'VCPU': vcpus}
    assert usage(servers, shared) == {'DISK_GB': len(on_shared)}


def race_claims_by_new_projects_and_users(servers):
    """Claims whose projects and users do not exist yet, several claims
    sharing each, so that their creation races: all succeed, and each
    project and user is recorded once.
    """
    uuid = provider(servers, {'VCPU': {'total': 64}})
    tag = uuidlib.uuid4().hex[:8]
    owners = [('project-%s-%d' % (tag, i % 4), 'user-%s-%d' % (tag, i % 6))
              for i in range(24)]
    outcomes = _in_parallel([
        (lambda project=project, user=user:
         claim(servers, {uuid: {'VCPU': 1}}, project, user))
        for project, user in owners])
    assert [status for _, _, status, _ in outcomes] == [204] * len(owners)
    for project in {project for project, _ in owners}:
        status, body = servers.request(
            'GET', '/usages?project_id=' + project, version='1.9')
        assert status == 200
        assert body['usages'] == {'VCPU': sum(
            1 for owner, _ in owners if owner == project)}


def race_delete_and_claims(servers):
    """A provider deleted while claims race for it: either the delete wins
    (and no acknowledged claim holds it) or a claim does (and the delete
    is refused with 409), never both.
    """
    for _ in range(3):
        uuid = provider(servers, {'VCPU': {'total': 100}})
        outcomes = _in_parallel(
            [lambda uuid=uuid: servers.request(
                'DELETE', '/resource_providers/' + uuid)]
            + [lambda uuid=uuid: claim(servers, {uuid: {'VCPU': 1}})] * 8)
        (deleted, body), claims = outcomes[0], outcomes[1:]
        assert deleted in (204, 409), (deleted, body)
        claimed = [consumer for consumer, _, status, _ in claims
                   if status == 204]
        for _, _, status, response in claims:
            assert status in (204, 400, 404, 409), (status, response)
        if deleted == 204:
            assert claimed == []
        else:
            assert claimed
            assert set(holders(servers, uuid)) == set(claimed)


def _one_winner(outcomes, expected_status=200, code=CONCURRENT_UPDATE):
    """Exactly one writer of a generation (or a name) won; the others got
    a 409 with ``code``. The winner's index.
    """
    winners = [index for index, (status, _) in enumerate(outcomes)
               if status == expected_status]
    assert len(winners) == 1, outcomes
    for status, body in outcomes:
        if status != expected_status:
            assert status == 409, (status, body)
            assert body['errors'][0]['code'] == code, body
    return winners[0]


def race_generation_checked_writes(servers):
    """Writers of inventories, traits and aggregates racing from one
    provider generation, each naming new traits and aggregates (some
    shared, so that their creation races too): one winner per write, and
    only the winner's data is stored.
    """
    uuid = provider(servers, {'VCPU': {'total': 8}})
    rp = '/resource_providers/' + uuid
    tag = uuidlib.uuid4().hex[:8].upper()

    start = generation(servers, uuid)
    totals = list(range(10, 10 + CLIENTS))
    outcomes = _in_parallel([
        (lambda total=total: servers.request('PUT', rp + '/inventories', {
            'resource_provider_generation': start,
            'inventories': {'VCPU': {'total': total}}}))
        for total in totals])
    won = _one_winner(outcomes)
    status, body = servers.request('GET', rp + '/inventories')
    assert body['inventories']['VCPU']['total'] == totals[won]
    assert body['resource_provider_generation'] == start + 1

    names = [['CUSTOM_%s_SHARED' % tag, 'CUSTOM_%s_%d' % (tag, index)]
             for index in range(CLIENTS)]

    def set_traits(wanted, current):
        for name in wanted:
            status, body = servers.request('PUT', '/traits/' + name)
            assert status in (201, 204), body
        return servers.request('PUT', rp + '/traits', {
            'resource_provider_generation': current, 'traits': wanted})

    current = start + 1
    won = _one_winner(_in_parallel([
        (lambda wanted=wanted: set_traits(wanted, current))
        for wanted in names]))
    status, body = servers.request('GET', rp + '/traits')
    assert sorted(body['traits']) == sorted(names[won])
    assert body['resource_provider_generation'] == current + 1

    shared = str(uuidlib.uuid4())
    aggregates = [[shared, str(uuidlib.uuid4())] for _ in range(CLIENTS)]
    current += 1
    won = _one_winner(_in_parallel([
        (lambda wanted=wanted: servers.request('PUT', rp + '/aggregates', {
            'resource_provider_generation': current,
            'aggregates': wanted}))
        for wanted in aggregates]))
    status, body = servers.request('GET', rp + '/aggregates')
    assert sorted(body['aggregates']) == sorted(aggregates[won])
    assert body['resource_provider_generation'] == current + 1


def race_resource_class_creation(servers):
    """Custom resource classes created at once: each new name once (they
    compete for the next free id), and of the creators of one name
    exactly one gets 201.
    """
    tag = uuidlib.uuid4().hex[:8].upper()
    names = ['CUSTOM_%s_%d' % (tag, index) for index in range(CLIENTS)]
    outcomes = _in_parallel([
        (lambda name=name: servers.request(
            'POST', '/resource_classes', {'name': name}))
        for name in names])
    assert [status for status, _ in outcomes] == [201] * len(names), outcomes
    shared = 'CUSTOM_%s_SHARED' % tag
    outcomes = _in_parallel([lambda: servers.request(
        'POST', '/resource_classes', {'name': shared})] * CLIENTS)
    _one_winner(outcomes, expected_status=201, code=UNDEFINED_CODE)
    for name in names + [shared]:
        assert servers.request('GET', '/resource_classes/' + name)[0] == 200


ALL = [race_burst_that_fits, race_last_units_of_one_provider,
       race_compute_node_and_sharing_provider,
       race_claims_by_new_projects_and_users, race_delete_and_claims,
       race_generation_checked_writes, race_resource_class_creation]
