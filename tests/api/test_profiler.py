"""osprofiler: optional; when installed and [profiler] enabled, requests
whose trace headers are signed with one of [profiler] hmac_keys are
traced, and the notifier is set up when the service starts."""
import sys

import pytest

from placement import conf as placement_conf
from placement.api import app as placement_app
from placement.api import service
from placement.api.middleware import profiler

import conftest

pytestmark = pytest.mark.sqlite_only

KEY = 'profiler-test-key'


def _conf_file(tmp_path, url, enabled=True):
    path = tmp_path / 'placement.conf'
    path.write_text(
        '[api]\nauth_strategy = noauth2\n'
        '[placement_database]\nconnection = %s\n'
        '[profiler]\nenabled = %s\nhmac_keys = %s\n'
        'connection_string = messaging://\n' % (url, enabled, KEY))
    return str(path)


@pytest.fixture
def no_osprofiler(monkeypatch):
    """osprofiler not installed: its modules cannot be imported."""
    for name in ('osprofiler', 'osprofiler.opts', 'osprofiler.web',
                 'osprofiler.initializer'):
        monkeypatch.setitem(sys.modules, name, None)


def test_without_osprofiler_nothing_changes(backend, tmp_path,
                                            no_osprofiler):
    conf = placement_conf.load_config(
        config_files=[_conf_file(tmp_path, backend.url)])
    assert 'profiler' not in conf
    assert not profiler.enabled(conf)
    application = service.build_application(conf)
    assert type(application.app).__module__ == (
        'placement.api.operations.extensions')
    api = conftest.ApiClient(application)
    assert api.get('/traits', headers={'X-Trace-Info': 'x',
                                       'X-Trace-HMAC': 'y'}).status_code == 200


@pytest.fixture
def osprofiler(monkeypatch):
    """The real osprofiler, its notifier collecting what it is told (and
    its process-wide state put back afterwards)."""
    notifier = pytest.importorskip('osprofiler.notifier')
    web = pytest.importorskip('osprofiler.web')
    monkeypatch.setattr(web, '_ENABLED', web._ENABLED)
    monkeypatch.setattr(web, '_HMAC_KEYS', web._HMAC_KEYS)
    previous = notifier.get()
    created = []
    points = []

    def create(connection_string, **kwargs):
        created.append((connection_string, kwargs))
        return points.append
    monkeypatch.setattr(notifier, 'create', create)
    yield created, points
    notifier.set(previous)


def _trace_headers(key):
    from osprofiler import profiler as osprofiler_profiler
    from osprofiler import web
    osprofiler_profiler.init(key)
    try:
        return web.get_trace_id_headers()
    finally:
        osprofiler_profiler.clean()


def test_signed_requests_are_traced(backend, tmp_path, osprofiler):
    created, points = osprofiler
    conf = placement_conf.load_config(
        config_files=[_conf_file(tmp_path, backend.url)])
    assert profiler.enabled(conf)
    api = conftest.ApiClient(service.build_application(conf))
    [(connection_string, kwargs)] = created
    assert connection_string == 'messaging://'
    assert (kwargs['project'], kwargs['service']) == (
        'placement', 'placement')

    assert api.get('/traits').status_code == 200
    assert api.get('/traits', headers=_trace_headers('not-the-key')
                   ).status_code == 200
    assert points == []
    headers = _trace_headers(KEY)
    assert api.get('/traits?name=startswith:HW_',
                   headers=headers).status_code == 200
    assert [point['name'] for point in points] == ['wsgi-start', 'wsgi-stop']
    assert points[0]['info']['request']['path'] == '/traits'
    # The operator endpoints, in front of the API, are traced too.
    assert api.get('/healthcheck', token=None,
                   headers=headers).status_code == 200
    assert len(points) == 4


def test_disabled_is_not_installed(backend, tmp_path, osprofiler):
    created, points = osprofiler
    conf = placement_conf.load_config(
        config_files=[_conf_file(tmp_path, backend.url, enabled=False)])
    assert 'profiler' in conf and not profiler.enabled(conf)
    application = placement_app.create_app(conf, engine=backend.engine)
    assert type(application.app).__module__ == (
        'placement.api.operations.extensions')
    service.build_application(conf)
    assert created == []
