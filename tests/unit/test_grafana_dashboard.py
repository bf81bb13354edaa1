"""etc/grafana/placement.json is what tools/grafana/dashboard.py generates,
and every panel has a title and queries, on the dashboard's variables.
(tests/integration/test_prometheus.py sends the queries to a real
Prometheus.)"""
import re

import pytest

import grafana_dashboard

pytestmark = pytest.mark.sqlite_only


@pytest.fixture(scope='module')
def model():
    return grafana_dashboard.committed()


def test_committed_file_is_what_the_generator_gives():
    generated = grafana_dashboard.generator().render()
    assert grafana_dashboard.DASHBOARD.read_text() == generated, (
        'etc/grafana/placement.json differs from what '
        'tools/grafana/dashboard.py generates: run it to regenerate')


def test_check_mode_tells_a_stale_file(tmp_path):
    module = grafana_dashboard.generator()
    output = tmp_path / 'placement.json'
    assert module.main(['--check', '--output', str(output)]) == 1
    assert module.main(['--output', str(output)]) == 0
    assert module.main(['--check', '--output', str(output)]) == 0
    output.write_text(output.read_text().replace('Placement', 'Other'))
    assert module.main(['--check', '--output', str(output)]) == 1


def test_every_panel_has_a_title_and_a_query(model):
    panels = list(grafana_dashboard.panels(model))
    assert len(panels) >= 10
    for panel in panels:
        assert panel['title'].strip(), panel
        exprs = [target.get('expr', '').strip()
                 for target in panel['targets']]
        assert exprs and all(exprs), panel['title']
        assert panel['datasource'] == {'type': 'prometheus',
                                       'uid': '${datasource}'}
        for target in panel['targets']:
            assert target['datasource'] == panel['datasource']
        refs = [target['refId'] for target in panel['targets']]
        assert len(set(refs)) == len(refs), panel['title']


def test_panel_ids_unique_and_no_overlap(model):
    ids = [panel['id'] for panel in model['panels']]
    assert len(set(ids)) == len(ids)
    cells = set()
    for panel in model['panels']:
        pos = panel['gridPos']
        assert pos['x'] + pos['w'] <= 24, panel['title']
        for x in range(pos['x'], pos['x'] + pos['w']):
            for y in range(pos['y'], pos['y'] + pos['h']):
                assert (x, y) not in cells, panel['title']
                cells.add((x, y))


def test_variables(model):
    variables = {v['name']: v for v in model['templating']['list']}
    assert set(variables) == {'datasource', 'job'}
    assert variables['datasource']['type'] == 'datasource'
    assert variables['datasource']['query'] == 'prometheus'
    assert variables['job']['current']['value'] == 'placement'
    assert variables['job']['datasource']['uid'] == '${datasource}'


def test_placement_selectors_ask_for_the_job_variable(model):
    for panel in grafana_dashboard.panels(model):
        for target in panel['targets']:
            for selector in _selectors(target['expr'], 'placement_'):
                assert 'job="$job"' in selector, (panel['title'], selector)


def test_the_dashboard_names_the_sections_asked_for(model):
    titles = ' | '.join(p['title'] for p in model['panels']).lower()
    for words in ('requests', 'latency', 'errors (5xx)',
                  'allocation candidates latency',
                  'allocation candidates returned', 'claims',
                  'conflicts and retries', 'pool', 'replica lag',
                  'per resource class', 'per aggregate',
                  'fullest providers'):
        assert words in titles, words


def test_substitute():
    assert grafana_dashboard.substitute(
        'rate(x{job="$job"}[$__rate_interval]) ${job} [[job]]') == (
        'rate(x{job="placement"}[1m]) placement placement')
    with pytest.raises(KeyError):
        grafana_dashboard.substitute('x{a="$unknown"}')


def _selectors(expr, prefix):
    """The ``{...}`` label selectors of the metrics named ``prefix*``."""
    return [match.group(1) or '' for match in re.finditer(
        r'\b%s\w*(\{[^}]*\})?' % prefix, expr)]
