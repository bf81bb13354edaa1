"""etc/grafana/placement.json and its generator, tools/grafana/dashboard.py,
for the tests: the generator module (a script, not a package), the
committed dashboard, and its panels' queries with the dashboard's
variables replaced as Grafana replaces them.

Importable from any test module: tests/ is on sys.path.
"""
import importlib.util
import json
import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[1]
GENERATOR = REPO / 'tools' / 'grafana' / 'dashboard.py'
DASHBOARD = REPO / 'etc' / 'grafana' / 'placement.json'

# What a Prometheus query gets in place of Grafana's variables, the
# dashboard's own and the built-in interval ones.
SUBSTITUTIONS = {
    'job': 'placement',
    '__rate_interval': '1m',
    '__interval': '1m',
    '__range': '5m',
}


def generator():
    """tools/grafana/dashboard.py as a module."""
    spec = importlib.util.spec_from_file_location(
        'placement_grafana_dashboard', GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def committed():
    """The dashboard model of the committed file."""
    with open(DASHBOARD) as dashboard_file:
        return json.load(dashboard_file)


def panels(model):
    """Every panel that is not a row, rows' collapsed panels included."""
    for panel in model['panels']:
        if panel.get('type') == 'row':
            yield from panel.get('panels', [])
        else:
            yield panel


def substitute(expr, values=None):
    """``expr`` with ``$name``, ``${name}`` and ``[[name]]`` replaced."""
    values = SUBSTITUTIONS if values is None else values

    def value(match):
        name = next(group for group in match.groups() if group)
        if name not in values:
            raise KeyError('no value for the variable %s in %r'
                           % (name, expr))
        return values[name]

    return re.sub(r'\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]', value,
                  expr)


def queries(model):
    """[(panel title, refId, expression with the variables replaced)]."""
    return [(panel['title'], target['refId'], substitute(target['expr']))
            for panel in panels(model) for target in panel['targets']
            if not target.get('hide')]
