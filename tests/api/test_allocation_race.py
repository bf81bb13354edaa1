"""Many clients racing for the last units of providers (and for one
provider's generation), through several
server processes sharing one database (every backend).

Whatever interleaving the processes and the database produce, the claims
acknowledged must fit the capacity, the stored usage must be exactly what
was acknowledged, and every loser must get a 409, never a 500.
"""
import concurrent.futures
import http.client
import json
import os
import re
import subprocess
import sys
import time
import uuid as uuidlib

import pytest

WORKERS = 4
THREADS = 4
CLIENTS = 24
# A loaded 2-core machine is slow to start even one server.
START_TIMEOUT = 60


@pytest.fixture
def server(backend, tmp_path):
    """The port of a gunicorn serving the app from WORKERS processes (the
    app is imported once, then the processes fork), all on the test's
    database.
    """
    (tmp_path / 'placement.conf').write_text(
        '[api]\nauth_strategy = noauth2\n'
        '[placement_database]\nconnection = %s\n' % backend.url)
    log = tmp_path / 'gunicorn.log'
    with open(log, 'w') as output:
        process = subprocess.Popen(
            [sys.executable, '-m', 'gunicorn', '--preload',
             '--workers', str(WORKERS), '--worker-class', 'gthread',
             '--threads', str(THREADS), '--no-control-socket',
             '--bind', '127.0.0.1:0', 'placement.wsgi.api:application'],
            stdout=output, stderr=subprocess.STDOUT,
            env=dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(tmp_path)))
    try:
        yield _wait_for_workers(process, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for_workers(process, log):
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        text = log.read_text()
        listening = re.search(r'Listening at: http://127.0.0.1:(\d+)', text)
        if listening and text.count('Booting worker') >= WORKERS:
            return int(listening.group(1))
        time.sleep(0.2)
    pytest.fail('gunicorn did not start:\n' + log.read_text()[-2000:])


def _request(port, method, path, body=None, version='1.39'):
    connection = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    headers = {'X-Auth-Token': 'admin',
               'OpenStack-API-Version': 'placement %s' % version,
               'Accept': 'application/json'}
    data = None
    if body is not None:
        data = json.dumps(body)
        headers['Content-Type'] = 'application/json'
    try:
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        text = response.read()
        return response.status, json.loads(text) if text else None
    finally:
        connection.close()


def _provider(port, inventories):
    uuid = str(uuidlib.uuid4())
    status, _ = _request(port, 'POST', '/resource_providers',
                         {'name': 'race-' + uuid, 'uuid': uuid})
    assert status == 200
    status, _ = _request(port, 'PUT', '/resource_providers/%s/inventories'
                         % uuid, {'resource_provider_generation': 0,
                                  'inventories': inventories})
    assert status == 200
    return uuid


def _claim(port, resources):
    """PUT allocations ({provider: {class: amount}}) for a new consumer."""
    consumer = str(uuidlib.uuid4())
    status, body = _request(port, 'PUT', '/allocations/' + consumer, {
        'allocations': {uuid: {'resources': amounts}
                        for uuid, amounts in resources.items()},
        'project_id': 'race', 'user_id': 'race',
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    return consumer, resources, status, body


def _race(port, claims):
    """Run the claims (lists of resources) at once; return [(consumer,
    resources, status, body)].
    """
    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        futures = [pool.submit(_claim, port, resources)
                   for resources in claims]
        return [future.result() for future in futures]


def _check_outcomes(outcomes):
    """Every claim either won (204) or lost cleanly (409); the winners."""
    for _, _, status, body in outcomes:
        assert status in (204, 409), (status, body)
        if status == 409:
            error = body['errors'][0]
            assert (error['code'] == 'placement.concurrent_update'
                    or 'exceed the capacity' in error['detail']), error
    return [(consumer, resources) for consumer, resources, status, _
            in outcomes if status == 204]


def _usage(port, provider):
    status, body = _request(port, 'GET',
                            '/resource_providers/%s/usages' % provider)
    assert status == 200
    return body['usages']


def _holders(port, provider):
    status, body = _request(port, 'GET',
                            '/resource_providers/%s/allocations' % provider)
    assert status == 200
    return {consumer: allocation['resources']
            for consumer, allocation in body['allocations'].items()}


def _acknowledged(winners, provider):
    return {consumer: resources[provider]
            for consumer, resources in winners if provider in resources}


def _fill(port, resources):
    """Claim ``resources`` one by one until refused; how many fit."""
    fitted = 0
    while True:
        _, _, status, body = _claim(port, resources)
        if status == 409:
            assert 'exceed the capacity' in body['errors'][0]['detail']
            return fitted
        assert status == 204, body
        fitted += 1


def test_racing_claims_never_exceed_capacity(server):
    # One test, so that the server starts once per backend.
    _last_units_of_one_provider(server)
    _compute_node_and_sharing_provider(server)
    _delete_racing_claims(server)
    _generation_race_on_one_provider(server)


def _last_units_of_one_provider(server):
    capacity = 10
    provider = _provider(server, {'VCPU': {'total': capacity}})
    # A little more than there is, so the last units are contended.
    outcomes = _race(server, [{provider: {'VCPU': 1}}] * 16
                     + [{provider: {'VCPU': 2}}] * 8)
    winners = _check_outcomes(outcomes)

    acknowledged = _acknowledged(winners, provider)
    used = sum(r['VCPU'] for r in acknowledged.values())
    assert 0 < used <= capacity
    assert _holders(server, provider) == acknowledged
    assert _usage(server, provider) == {'VCPU': used}
    # No hidden usage: what is left can still be claimed, exactly.
    assert _fill(server, {provider: {'VCPU': 1}}) == capacity - used


def _compute_node_and_sharing_provider(server):
    vcpus, disk = 12, 6
    compute = _provider(server, {'VCPU': {'total': vcpus}})
    shared = _provider(server, {'DISK_GB': {'total': disk}})
    both = {compute: {'VCPU': 1}, shared: {'DISK_GB': 1}}
    outcomes = _race(server, [both, {compute: {'VCPU': 1}}] * 12)
    winners = _check_outcomes(outcomes)

    on_compute = _acknowledged(winners, compute)
    on_shared = _acknowledged(winners, shared)
    # A claim of both providers holds both or neither.
    assert set(on_shared) <= set(on_compute)
    assert all(resources == both for consumer, resources in winners
               if consumer in on_shared)
    assert 0 < len(on_compute) <= vcpus and len(on_shared) <= disk
    assert _holders(server, compute) == on_compute
    assert _holders(server, shared) == on_shared
    assert _usage(server, compute) == {'VCPU': len(on_compute)}
    assert _usage(server, shared) == {'DISK_GB': len(on_shared)}
    assert _fill(server, {shared: {'DISK_GB': 1}}) == disk - len(
        on_shared)


def _delete_racing_claims(server):
    """A provider deleted while claims race for it: either the delete wins
    (and no acknowledged claim holds it) or a claim does (and the delete
    is refused with 409), never both, never a 500.
    """
    for _ in range(3):
        provider = _provider(server, {'VCPU': {'total': 100}})
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            deletion = pool.submit(_request, server, 'DELETE',
                                   '/resource_providers/' + provider)
            claims = [pool.submit(_claim, server, {provider: {'VCPU': 1}})
                      for _ in range(8)]
            deleted, body = deletion.result()
            outcomes = [claim.result() for claim in claims]
        assert deleted in (204, 409), (deleted, body)
        claimed = [consumer for consumer, _, status, _ in outcomes
                   if status == 204]
        for _, _, status, response in outcomes:
            assert status in (204, 400, 404, 409), (status, response)
        if deleted == 204:
            assert claimed == []
        else:
            assert claimed
            assert set(_holders(server, provider)) == set(claimed)


def _generation_race_on_one_provider(server):
    """Writers in several processes change one provider's traits from the
    same generation: exactly one wins, the others get 409
    placement.concurrent_update, and only the winner's traits are stored.
    """
    provider = _provider(server, {'VCPU': {'total': 1}})
    path = '/resource_providers/%s/traits' % provider
    status, body = _request(server, 'GET', path)
    assert status == 200
    generation = body['resource_provider_generation']
    wanted = ['CUSTOM_RACE_%d' % index for index in range(CLIENTS)]
    for name in wanted:
        assert _request(server, 'PUT', '/traits/' + name)[0] in (201, 204)
    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        outcomes = list(pool.map(
            lambda name: (name, *_request(
                server, 'PUT', path, {'resource_provider_generation':
                                      generation, 'traits': [name]})),
            wanted))
    winners = [name for name, status, _ in outcomes if status == 200]
    assert len(winners) == 1, outcomes
    for _name, status, response in outcomes:
        if status != 200:
            assert status == 409, (status, response)
            assert (response['errors'][0]['code']
                    == 'placement.concurrent_update')
    status, body = _request(server, 'GET', path)
    assert body['traits'] == winners
    assert body['resource_provider_generation'] == generation + 1
