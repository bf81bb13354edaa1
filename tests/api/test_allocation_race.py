"""Many clients racing for the last units of providers, through several
server processes sharing one database (every backend).

Whatever interleaving the processes and the database produce, the claims
acknowledged must fit the capacity, the stored usage must be exactly what
was acknowledged, and every loser must get a 409, never a 500.
"""
import concurrent.futures
import http.client
import json
import os
import subprocess
import sys
import time
import uuid as uuidlib

import pytest

SERVERS = 4
CLIENTS = 24
# Time allowed for a server to start (a loaded 2-core machine is slow).
START_TIMEOUT = 20


class Server:
    """A ``placement-api`` process on a free port."""

    def __init__(self, config):
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'placement.cmd.api', '--port', '0', '--',
             '--config-file', str(config)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env=dict(os.environ, PYTHONUNBUFFERED='1'))
        self.port = None

    def wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        for line in self.process.stdout:
            if 'listening on http://' in line:
                self.port = int(line.rsplit(':', 1)[1].strip(' /\n'))
                return
            if time.monotonic() > deadline:
                break
        pytest.fail('placement-api did not start')

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def servers(backend, tmp_path):
    config = tmp_path / 'placement.conf'
    config.write_text('[api]\nauth_strategy = noauth2\n'
                      '[placement_database]\nconnection = %s\n' % backend.url)
    started = [Server(config) for _ in range(SERVERS)]
    try:
        for server in started:
            server.wait_ready()
        yield [server.port for server in started]
    finally:
        for server in started:
            server.stop()


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


def _race(ports, claims):
    """Run the claims (lists of resources) at once, spread over the
    servers; return [(consumer, resources, status, body)].
    """
    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        futures = [pool.submit(_claim, ports[i % len(ports)], resources)
                   for i, resources in enumerate(claims)]
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


def test_racing_claims_never_exceed_capacity(servers):
    # One test, so that the servers start once per backend.
    _last_units_of_one_provider(servers)
    _compute_node_and_sharing_provider(servers)


def _last_units_of_one_provider(servers):
    capacity = 10
    provider = _provider(servers[0], {'VCPU': {'total': capacity}})
    # A little more than there is, so the last units are contended.
    outcomes = _race(servers, [{provider: {'VCPU': 1}}] * 16
                     + [{provider: {'VCPU': 2}}] * 8)
    winners = _check_outcomes(outcomes)

    acknowledged = _acknowledged(winners, provider)
    used = sum(r['VCPU'] for r in acknowledged.values())
    assert 0 < used <= capacity
    assert _holders(servers[1], provider) == acknowledged
    assert _usage(servers[2], provider) == {'VCPU': used}
    # No hidden usage: what is left can still be claimed, exactly.
    assert _fill(servers[3], {provider: {'VCPU': 1}}) == capacity - used


def _compute_node_and_sharing_provider(servers):
    vcpus, disk = 12, 6
    compute = _provider(servers[0], {'VCPU': {'total': vcpus}})
    shared = _provider(servers[0], {'DISK_GB': {'total': disk}})
    both = {compute: {'VCPU': 1}, shared: {'DISK_GB': 1}}
    outcomes = _race(servers, [both, {compute: {'VCPU': 1}}] * 12)
    winners = _check_outcomes(outcomes)

    on_compute = _acknowledged(winners, compute)
    on_shared = _acknowledged(winners, shared)
    # A claim of both providers holds both or neither.
    assert set(on_shared) <= set(on_compute)
    assert all(resources == both for consumer, resources in winners
               if consumer in on_shared)
    assert 0 < len(on_compute) <= vcpus and len(on_shared) <= disk
    assert _holders(servers[1], compute) == on_compute
    assert _holders(servers[2], shared) == on_shared
    assert _usage(servers[3], compute) == {'VCPU': len(on_compute)}
    assert _usage(servers[3], shared) == {'DISK_GB': len(on_shared)}
    assert _fill(servers[0], {shared: {'DISK_GB': 1}}) == disk - len(
        on_shared)
