"""etc/prometheus/placement-rules.yml: promtool accepts it, its unit tests
(etc/prometheus/tests/) pass and test every alert firing and not firing,
and its expressions name only metrics this service exports (or the
per-provider names of openstack-exporter, and Prometheus' own ``up``);
os-capacity's flavour series are among those it exports.
"""
import pathlib
import re
import shutil
import subprocess
import time
import uuid

from prometheus_client import parser
import pytest
import yaml

import conftest

RULES_DIR = pathlib.Path(__file__).resolve().parents[2] / 'etc' / 'prometheus'
RULES = RULES_DIR / 'placement-rules.yml'
RULE_TESTS = sorted((RULES_DIR / 'tests').glob('*.yml'))

# Per-provider series, with openstack-exporter's names (labels hostname
# and resourcetype), which the rules use whichever job exports them.
EXPORTER_NAMES = frozenset((
    'openstack_placement_resource_total',
    'openstack_placement_resource_usage',
    'openstack_placement_resource_reserved',
    'openstack_placement_resource_allocation_ratio',
))
PROMETHEUS_NAMES = frozenset(('up',))

_KEYWORDS = frozenset((
    'and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on',
    'ignoring', 'group_left', 'group_right', 'atan2', 'inf', 'nan'))


def _promtool():
    path = shutil.which('promtool')
    if path is None:
        conftest.unavailable(
            'promtool not found: the Prometheus rules are not checked '
            '(Debian package prometheus; tools/integration-deps.sh '
            'installs it)')
    return path


def _run(*args):
    done = subprocess.run([_promtool(), *map(str, args)], cwd=RULES_DIR,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _rules():
    with open(RULES) as f:
        return [rule for group in yaml.safe_load(f)['groups']
                for rule in group['rules']]


def metric_names(expr):
    """The metric (and recording rule) names a PromQL expression selects."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    expr = re.sub(r'\{[^}]*\}', ' ', expr)
    expr = re.sub(r'\[[^\]]*\]', ' ', expr)
    expr = re.sub(r'\b(?:by|without|on|ignoring|group_left|group_right)'
                  r'\s*\([^)]*\)', ' ', expr)
    names = set()
    for match in re.finditer(r'(?<![\w.:])([a-zA-Z_:][\w:]*)(\s*\()?',
                             expr):
        name, call = match.groups()
        if not call and name.lower() not in _KEYWORDS:
            names.add(name)
    return names


def test_metric_names_parser():
    assert metric_names(
        'sum by (job, le) (rate(a_total{job="placement", x=~"5.."}[5m]))'
        ' / on (job) group_left (route) b:c:d > bool 0.5e3'
        ' or histogram_quantile(0.99, e_bucket offset 1m) < Inf'
        ' unless absent(up{job="p"})') == {'a_total', 'b:c:d', 'e_bucket',
                                             'up'}


def test_promtool_check_rules():
    assert 'SUCCESS' in _run('check', 'rules', RULES)


def test_promtool_test_rules():
    assert RULE_TESTS
    _run('test', 'rules', *RULE_TESTS)


def test_every_alert_is_tested_firing_and_not_firing():
    fired, quiet = set(), set()
    for path in RULE_TESTS:
        with open(path) as f:
            for case in yaml.safe_load(f)['tests']:
                for check in case.get('alert_rule_test', ()):
                    (fired if check.get('exp_alerts') else quiet).add(
                        check['alertname'])
    alerts = {rule['alert'] for rule in _rules() if 'alert' in rule}
    assert alerts - fired == set(), 'never tested firing'
    assert alerts - quiet == set(), 'never tested not firing'


def test_recording_rules_are_defined_before_use():
    recorded = set()
    for rule in _rules():
        used = {name for name in metric_names(rule['expr']) if ':' in name}
        assert used <= recorded, (rule, used - recorded)
        if 'record' in rule:
            assert ':' in rule['record'], rule
            recorded.add(rule['record'])


def _exported_names(api_factory, tmp_path):
    """The sample names of a scrape of a service with an inventory in an
    aggregate, a named flavour, that answered requests, computed
    candidates and checked a (dead) replica."""
    flavours = tmp_path / 'flavours'
    flavours.write_text('m1.small resources=VCPU:1\n')
    api = api_factory(metrics={
        'enabled': True, 'capacity_flavours': ['m1.small'],
    }, capacity={'flavours_file': str(flavours)}, placement_database={
        'slave_connection': 'sqlite:////nonexistent-placement-dir/r.db',
        'replica_check_interval': 0.1})
    provider = str(uuid.uuid4())
    assert api.post('/resource_providers', json={
        'name': provider, 'uuid': provider}).status_code == 200
    assert api.put('/resource_providers/%s/inventories' % provider, json={
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 8}}}).status_code == 200
    assert api.put('/resource_providers/%s/aggregates' % provider, json={
        'resource_provider_generation': 1,
        'aggregates': [str(uuid.uuid4())]}).status_code == 200
    deadline = time.monotonic() + 10
    while True:
        assert api.get('/resource_providers').status_code == 200
        assert api.get('/allocation_candidates?resources=VCPU:1'
                       ).status_code == 200
        response = api.get('/metrics', token=None, version=None,
                           environ_overrides={'REMOTE_ADDR': '127.0.0.1'})
        assert response.status_code == 200
        names = {sample.name for family in
                 parser.text_string_to_metric_families(response.text)
                 for sample in family.samples}
        if 'placement_replica_usable' in names:
            return names
        assert time.monotonic() < deadline, 'the replica was never checked'
        time.sleep(0.05)


@pytest.mark.sqlite_only
def test_rules_name_only_exported_metrics(api_factory, tmp_path):
    exported = _exported_names(api_factory, tmp_path)
    known = exported | EXPORTER_NAMES | PROMETHEUS_NAMES
    used = set()
    for rule in _rules():
        used |= {name for name in metric_names(rule['expr'])
                 if ':' not in name}
    assert used - known == set()
    # The rules do use this service's metrics (the parser found them).
    assert {'placement_http_requests_total', 'placement_database_up',
            'placement_replica_usable', 'placement_resource_capacity',
            'placement_db_pool_checked_out',
            'openstack_free_capacity_by_flavor_total',
            'placement_capacity_aggregate_fit'} <= used
