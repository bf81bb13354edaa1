"""A production server (Apache, gunicorn) running the service, and the checks
every such deployment must pass.

``running`` runs a server command in its own session, waits until the
placement root answers and stops the whole process group afterwards.
``Client`` sends requests to an endpoint such as
``http://127.0.0.1:PORT/placement``, ``new_provider`` makes a provider through
any such client. The checks: ``check_links_carry_prefix``;
``claim_race`` sends ``RACE_CLIENTS`` simultaneous claims for the last units
of one provider and asserts that nothing was over-allocated;
``claim_races_in_log`` also finds each claim in the server's log, and
several processes among those that served them.
"""
import concurrent.futures
import contextlib
import dataclasses
import os
import re
import signal
import subprocess
import threading
import time
import urllib.parse
import uuid as uuidlib

import pytest
import requests

RACE_CLIENTS = 32
# Seconds for a server to start: several processes load the application at
# once, on a small shared machine.
START_TIMEOUT = 180


@dataclasses.dataclass
class Client:
    """Requests to the placement endpoint at ``url`` (with any prefix)."""

    url: str
    timeout: float = 60

    @property
    def prefix(self):
        return urllib.parse.urlsplit(self.url).path

    def request(self, method, path, json=None, version='1.39'):
        headers = {'X-Auth-Token': 'admin', 'Accept': 'application/json',
                   'OpenStack-API-Version': 'placement %s' % version}
        return requests.request(method, self.url + path, json=json,
                                headers=headers, timeout=self.timeout)


@contextlib.contextmanager
def running(command, client, log_path, env=None):
    """Run the server ``command`` (output to ``log_path``) in its own
    session for the block, once ``client`` gets the placement root.
    """
    command = [str(part) for part in command]
    with open(log_path, 'ab') as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        _wait_until_serving(process, client, log_path)
        yield process
    finally:
        _stop(process)


def _wait_until_serving(process, client, log_path):
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail('%s exited with %s:\n%s' % (
                ' '.join(process.args), process.returncode,
                _tail(log_path)))
        try:
            if client.request('GET', '/').status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.3)
    pytest.fail('%s did not serve within %ss:\n%s' % (
        ' '.join(process.args), START_TIMEOUT, _tail(log_path)))


def _stop(process):
    """Stop the server and every process it started."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    try:
        # Any child left behind is in the session we created.
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _tail(log_path, lines=40):
    return '\n'.join(
        log_path.read_text(errors='replace').splitlines()[-lines:])


def check_links_carry_prefix(client):
    """Location and links in bodies include the endpoint's mount prefix."""
    uuid = str(uuidlib.uuid4())
    created = client.request('POST', '/resource_providers',
                             {'name': 'linked-' + uuid, 'uuid': uuid})
    assert created.status_code == 200, created.text
    own_path = '%s/resource_providers/%s' % (client.prefix, uuid)
    assert urllib.parse.urlsplit(
        created.headers['Location']).path == own_path
    hrefs = [link['href'] for link in created.json()['links']]
    assert own_path in hrefs
    assert all(href.startswith(client.prefix + '/') for href in hrefs)


def new_provider(client, inventories, name_prefix='race-'):
    """A new provider with ``inventories`` (as PUT takes them), made
    through ``client`` (any object with ``request(method, path, json)``);
    its uuid."""
    uuid = str(uuidlib.uuid4())
    response = client.request('POST', '/resource_providers',
                              {'name': name_prefix + uuid, 'uuid': uuid})
    assert response.status_code == 200, response.text
    response = client.request(
        'PUT', '/resource_providers/%s/inventories' % uuid,
        {'resource_provider_generation': 0, 'inventories': inventories})
    assert response.status_code == 200, response.text
    return uuid


def _claim(client, provider, vcpus):
    """PUT the allocation of ``vcpus`` for a new consumer: (consumer,
    response).
    """
    consumer = str(uuidlib.uuid4())
    response = client.request('PUT', '/allocations/' + consumer, {
        'allocations': {provider: {'resources': {'VCPU': vcpus}}},
        'project_id': 'race', 'user_id': 'race',
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    return consumer, response


def _assert_lost_cleanly(response):
    """A claim that lost was refused for want of room (claims queue for
    the providers they share: none fails as a conflict).
    """
    assert response.status_code == 409, (response.status_code, response.text)
    error = response.json()['errors'][0]
    assert 'exceed the capacity' in error['detail'], error


def claim_race(client, capacity=40, left=8):
    """``RACE_CLIENTS`` clients claim, at the same moment, 1 or 2 of the
    ``left`` last VCPUs of a provider. Checks that the acknowledged claims
    fit, are exactly what is stored, and that every loser got the capacity
    409; returns {consumer: status} of the contenders.
    """
    provider = new_provider(client, {'VCPU': {'total': capacity}})
    earlier, response = _claim(client, provider, capacity - left)
    assert response.status_code == 204, response.text

    start = threading.Barrier(RACE_CLIENTS, timeout=60)

    def contend(vcpus):
        start.wait()
        return vcpus, _claim(client, provider, vcpus)

    with concurrent.futures.ThreadPoolExecutor(RACE_CLIENTS) as pool:
        outcomes = list(pool.map(contend, [1, 2] * (RACE_CLIENTS // 2)))

    won = {}
    for vcpus, (consumer, response) in outcomes:
        if response.status_code == 204:
            won[consumer] = vcpus
        else:
            _assert_lost_cleanly(response)
    assert won, 'no claim succeeded'
    assert sum(won.values()) <= left

    won[earlier] = capacity - left
    holders = client.request(
        'GET', '/resource_providers/%s/allocations' % provider).json()
    assert {consumer: allocation['resources']['VCPU'] for consumer, allocation
            in holders['allocations'].items()} == won
    used = sum(won.values())
    usages = client.request(
        'GET', '/resource_providers/%s/usages' % provider).json()
    assert usages['usages'] == {'VCPU': used}
    # No usage hidden anywhere: exactly what is left can still be claimed.
    assert _fill(client, provider) == capacity - used
    return {consumer: response.status_code
            for _, (consumer, response) in outcomes}


def _fill(client, provider):
    """Claim one VCPU at a time until refused; how many fitted."""
    fitted = 0
    while True:
        _, response = _claim(client, provider, 1)
        if response.status_code != 204:
            _assert_lost_cleanly(response)
            return fitted
        fitted += 1


# A request log line as oslo.log writes it (anywhere in a log line, as
# Apache prefixes its own fields): pid, method, path, status.
_LOGGED = re.compile(r' (\d+) INFO placement\.requestlog \[[^]]*\] \S+ '
                     r'"(\w+) (\S+)" status: (\d+) len: ')


def claim_races_in_log(log_path, client, attempts=5):
    """``claim_race`` until claims of one race were served by more than
    one process (a loaded machine may let one process take them all),
    each claim found in the server's log with its status.
    """
    for _attempt in range(attempts):
        contenders = claim_race(client)
        if len(_serving_pids(log_path, client, contenders)) > 1:
            return
    pytest.fail('one process served every claim of %d races' % attempts)


def _serving_pids(log_path, client, contenders):
    logged = {}
    for line in log_path.read_text(errors='replace').splitlines():
        match = _LOGGED.search(line)
        if match:
            pid, method, path, status = match.groups()
            logged[method, path] = (pid, int(status))
    pids = set()
    for consumer, status in contenders.items():
        pid, logged_status = logged[
            'PUT', '%s/allocations/%s' % (client.prefix, consumer)]
        assert logged_status == status
        pids.add(pid)
    return pids
