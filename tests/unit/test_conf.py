"""Tests of placement.conf: option facts and config file resolution."""

from oslo_config import cfg
import pytest

from placement import conf


@pytest.fixture(autouse=True)
def _no_config_dir(monkeypatch):
    monkeypatch.delenv(conf.CONFIG_DIR_ENV, raising=False)


def _write(path, text):
    path.write_text(text)
    return str(path)


def _opts(group):
    """Options listed for the sample file under ``group``, by name."""
    listed = {getattr(g, 'name', g): opts for g, opts in conf.list_opts()}
    return {opt.name: opt for opt in listed[group]}


def test_defaults():
    c = conf.load_config(config_files=[])
    assert c.api.auth_strategy == 'keystone'
    p = c.placement
    assert p.randomize_allocation_candidates is False
    assert p.incomplete_consumer_project_id == conf.INCOMPLETE_CONSUMER_ID
    assert p.incomplete_consumer_user_id == conf.INCOMPLETE_CONSUMER_ID
    assert p.allocation_conflict_retry_count == 10
    assert p.max_allocation_candidates == -1
    assert p.allocation_candidates_generation_strategy == 'depth-first'
    assert c.placement_database.connection is None
    assert c.placement_database.mysql_sql_mode == 'TRADITIONAL'
    assert c.placement_database.max_retries == 10
    assert c.placement_database.sync_on_startup is False
    assert c.workarounds.optimize_for_wide_provider_trees is False
    assert c.oslo_policy.policy_file == 'policy.yaml'
    assert c.cors.allowed_origin is None
    assert 'OpenStack-API-Version' in c.cors.allow_headers


def test_choices():
    auth = _opts('api')['auth_strategy']
    assert list(auth.type.choices) == ['keystone', 'noauth2']
    strategy = _opts('placement')['allocation_candidates_generation_strategy']
    assert list(strategy.type.choices) == ['depth-first', 'breadth-first']


def test_connection_is_secret():
    assert _opts('placement_database')['connection'].secret


def test_list_opts_groups():
    names = [getattr(g, 'name', g) for g, _ in conf.list_opts()]
    assert names == ['DEFAULT', 'api', 'placement', 'placement_database',
                     'workarounds', 'metrics', 'healthcheck', 'capacity',
                     'oslo_middleware']


def test_request_body_size_limit_default():
    c = conf.load_config(config_files=[])
    assert c.oslo_middleware.max_request_body_size == 2 * 1024 * 1024


def test_invalid_choice_rejected(tmp_path):
    path = _write(tmp_path / 'p.conf', '[api]\nauth_strategy = basic\n')
    c = conf.load_config(config_files=[path])
    with pytest.raises(cfg.ConfigFileValueError):
        _ = c.api.auth_strategy


def test_auth_strategy_deprecated_group(tmp_path):
    path = _write(tmp_path / 'p.conf', '[DEFAULT]\nauth_strategy = noauth2\n')
    assert conf.load_config(config_files=[path]).api.auth_strategy == 'noauth2'


def test_config_dir_env(tmp_path, monkeypatch):
    path = _write(tmp_path / 'placement.conf',
                  '[placement_database]\nconnection = sqlite://\n')
    monkeypatch.setenv(conf.CONFIG_DIR_ENV, str(tmp_path))
    c = conf.load_config()
    assert c.config_file == [path]
    assert c.placement_database.connection == 'sqlite://'


def test_config_dir_env_without_file(tmp_path, monkeypatch):
    (tmp_path / 'policy.yaml').write_text('{}\n')
    monkeypatch.setenv(conf.CONFIG_DIR_ENV, str(tmp_path))
    c = conf.load_config()
    assert c.placement_database.connection is None
    # Policy files in that directory are still found.
    assert c.find_file('policy.yaml') == str(tmp_path / 'policy.yaml')


def test_explicit_files_win_over_env(tmp_path, monkeypatch):
    section = '[placement]\nmax_allocation_candidates = %d\n'
    _write(tmp_path / 'placement.conf', section % 5)
    other = tmp_path / 'other'
    other.mkdir()
    path = _write(other / 'x.conf', section % 7)
    monkeypatch.setenv(conf.CONFIG_DIR_ENV, str(tmp_path))
    c = conf.load_config(config_files=[path])
    assert c.placement.max_allocation_candidates == 7


def test_argv(tmp_path):
    path = _write(tmp_path / 'x.conf',
                  '[placement]\nallocation_conflict_retry_count = 3\n')
    c = conf.load_config(argv=['--config-file', path], config_files=[])
    assert c.placement.allocation_conflict_retry_count == 3


def test_default_locations_do_not_crash():
    assert conf.load_config().api.auth_strategy in ('keystone', 'noauth2')


def test_each_call_returns_new_conf():
    first = conf.load_config(config_files=[])
    assert first is not conf.load_config(config_files=[])


def test_overrides_do_not_leak_between_configurations():
    first = conf.load_config(config_files=[])
    first.set_override('connection', 'sqlite://', 'placement_database')
    second = conf.load_config(config_files=[])
    assert second.placement_database.connection is None
