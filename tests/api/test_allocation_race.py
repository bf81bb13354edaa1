"""Many clients racing for providers (their last units, their
generations) through several server processes sharing one database, on
every backend: the races of tests/claim_races.py.
"""
import pytest

import claim_races
import gunicorn_server

WORKERS = 4
THREADS = 4


@pytest.fixture
def server(backend, tmp_path):
    """The URL of a gunicorn serving the app from WORKERS processes of
    THREADS threads, all on the test's database; every worker has booted.
    """
    with gunicorn_server.placement_server(
            tmp_path, {'placement_database': {
                'connection': backend.url, 'sync_on_startup': 'false'}},
            workers=WORKERS, threads=THREADS) as server:
        yield server.url


def test_races(server):
    # One test, so that the server starts once per backend.
    servers = claim_races.Servers([server])
    for race in claim_races.ALL:
        race(servers)
