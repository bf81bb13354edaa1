"""The Grafana dashboard of the Placement service, etc/grafana/placement.json.

Built with grafanalib (the project's ``test`` extra). Regenerate the file
after changing this module:

    python tools/grafana/dashboard.py            # writes the file
    python tools/grafana/dashboard.py --check    # exit 1 if it differs

tests/unit/test_grafana_dashboard.py checks that the committed file is
what this module generates, and tests/integration/test_prometheus.py
sends every panel's queries to a real Prometheus.

Variables: ``datasource`` (any Prometheus data source) and ``job`` (the
scrape job of the service's [metrics] path; ``placement`` by default, as
etc/prometheus/placement-rules.yml expects). The ``placement_*``
selectors ask for ``job="$job"``; the per-provider series, with
openstack-exporter's names, are taken whichever job exports them, as the
rules take them. The queries do not need the recording rules loaded.
"""
import argparse
import json
import pathlib
import sys

from grafanalib import core

REPO = pathlib.Path(__file__).resolve().parents[2]
OUTPUT = REPO / 'etc' / 'grafana' / 'placement.json'

DATASOURCE = {'type': 'prometheus', 'uid': '${datasource}'}
JOB = 'job="$job"'
RATE = '[$__rate_interval]'
# Panels per line, on Grafana's 24-column grid.
WIDTH = 12
HEIGHT = 8

# Allocation writes: claims (PUT /allocations/{consumer}), several
# consumers at once (POST /allocations) and reshapes.
CLAIM_ROUTES = ('route=~"/allocations/<consumer_uuid>|/allocations'
                '|/reshaper", method=~"PUT|POST"')

# The fullest providers: how many.
TOP_PROVIDERS = 10


def _requests(selector=''):
    return ('rate(placement_http_requests_total{%s%s}%s)'
            % (JOB, selector, RATE))


def _quantile(q, metric, by):
    return ('histogram_quantile(%s, sum by (%s) (rate(%s_bucket{%s}%s)))'
            % (q, ', '.join(by + ('le',)), metric, JOB, RATE))


def _max_by(by, expr):
    return 'max by (%s) (%s)' % (by, expr)


# Per provider, openstack-exporter's names: as the recording rule
# hostname_resourcetype:openstack_placement_resource_usage:ratio.
PROVIDER_USAGE_RATIO = (
    'max by (hostname, resourcetype) (openstack_placement_resource_usage)'
    '\n  / max by (hostname, resourcetype) ('
    '\n    (openstack_placement_resource_total'
    ' - openstack_placement_resource_reserved)'
    '\n      * openstack_placement_resource_allocation_ratio)')


def _target(expr, legend, ref):
    return core.Target(expr=expr, legendFormat=legend, refId=ref,
                       datasource=DATASOURCE)


def _panel(title, description, targets, unit='short', **kwargs):
    return core.TimeSeries(
        title=title, description=description, dataSource=DATASOURCE,
        targets=[_target(expr, legend, chr(ord('A') + index))
                 for index, (expr, legend) in enumerate(targets)],
        unit=unit, legendDisplayMode='table', legendPlacement='bottom',
        legendCalcs=['lastNotNull', 'max'], tooltipMode='multi', **kwargs)


def sections():
    """[(row title, [panel, ...])], in the dashboard's order."""
    return [
        ('Requests', [
            _panel('Requests by route',
                   'API requests answered per second, by url rule, '
                   'method and status.',
                   [('sum by (route, method, status) (%s)' % _requests(),
                     '{{method}} {{route}} {{status}}')],
                   unit='reqps'),
            _panel('Latency by route (p50, p99)',
                   'Time until the response starts, by url rule.',
                   [(_quantile(0.5, 'placement_http_request_duration_seconds',
                               ('route',)), 'p50 {{route}}'),
                    (_quantile(0.99,
                               'placement_http_request_duration_seconds',
                               ('route',)), 'p99 {{route}}')],
                   unit='s'),
            _panel('Errors (5xx) by route',
                   'Requests answered 5xx per second, by url rule (0 for '
                   'the routes that answered none), and their share of '
                   'all requests.',
                   [('sum by (route) (%s)\n  or 0 * sum by (route) (%s)'
                     % (_requests(', status=~"5.."'), _requests()),
                     '{{route}}')],
                   unit='reqps'),
            _panel('Error ratio (5xx)',
                   'Share of the requests answered 5xx (the '
                   'PlacementHighErrorRatio alert fires over 5%).',
                   [('(sum(%s) or vector(0))\n  / sum(%s)'
                     % (_requests(', status=~"5.."'), _requests()),
                     '5xx')],
                   unit='percentunit'),
        ]),
        ('Allocation candidates', [
            _panel('Allocation candidates latency (p50, p99)',
                   'Candidate generation time (GET '
                   '/allocation_candidates, without encoding the '
                   'response), and the whole request.',
                   [(_quantile(0.5,
                               'placement_allocation_candidates_duration'
                               '_seconds', ()), 'generation p50'),
                    (_quantile(0.99,
                               'placement_allocation_candidates_duration'
                               '_seconds', ()), 'generation p99'),
                    ('histogram_quantile(0.99, sum by (le) (rate('
                     'placement_http_request_duration_seconds_bucket{%s, '
                     'route="/allocation_candidates"}%s)))' % (JOB, RATE),
                     'request p99')],
                   unit='s'),
            _panel('Allocation candidates returned',
                   'Candidates per response: median, 99th percentile '
                   'and mean; and responses per second.',
                   [(_quantile(0.5, 'placement_allocation_candidates'
                                    '_returned', ()), 'p50'),
                    (_quantile(0.99, 'placement_allocation_candidates'
                                     '_returned', ()), 'p99'),
                    ('sum(rate(placement_allocation_candidates_returned_sum'
                     '{%s}%s))\n  / sum(rate('
                     'placement_allocation_candidates_returned_count{%s}%s))'
                     % (JOB, RATE, JOB, RATE), 'mean'),
                    ('sum(rate(placement_allocation_candidates_returned_count'
                     '{%s}%s))' % (JOB, RATE), 'responses/s')]),
        ]),
        ('Allocation writes', [
            _panel('Claims by status',
                   'Allocation writes per second (PUT '
                   '/allocations/{consumer}, POST /allocations, POST '
                   '/reshaper), by status: 409 is a conflict the server '
                   'did not retry away.',
                   [('sum by (method, route, status) (%s)'
                     % _requests(', ' + CLAIM_ROUTES),
                     '{{method}} {{route}} {{status}}')],
                   unit='reqps'),
            _panel('Write conflicts and retries',
                   'Allocation writes that collided with another write '
                   '(deadlock, certification failure, consumer changed '
                   'meanwhile), and those the server ran again '
                   '([placement] allocation_conflict_retry_count).',
                   [('sum(rate(placement_allocation_write_conflicts_total'
                     '{%s}%s))' % (JOB, RATE), 'conflicts'),
                    ('sum(rate(placement_allocation_write_retries_total'
                     '{%s}%s))' % (JOB, RATE), 'retries')],
                   unit='ops'),
        ]),
        ('Database', [
            _panel('Database pool use',
                   'Connections in use and pool size, per API host '
                   '(summed over its processes).',
                   [('sum by (instance) (placement_db_pool_checked_out{%s})'
                     % JOB, 'in use {{instance}}'),
                    ('sum by (instance) (placement_db_pool_size{%s})' % JOB,
                     'size {{instance}}')]),
            _panel('Replica lag',
                   'Lag found by the last replica check, per API host, '
                   'and whether it let reads go to the replica (no series '
                   'without [placement_database] slave_connection).',
                   [('max by (instance) (placement_replica_lag_seconds{%s})'
                     % JOB, 'lag {{instance}}'),
                    ('min by (instance) (placement_replica_usable{%s})'
                     % JOB, 'usable {{instance}}')],
                   unit='s'),
            _panel('Database reads by server',
                   'Reads of API requests per second, by the server '
                   'that answered: primary or replica.',
                   [('sum by (server) (rate(placement_database_reads_total'
                     '{%s}%s))' % (JOB, RATE), '{{server}}')],
                   unit='ops'),
            _panel('Database up',
                   'Whether the capacity query of the last scrape reached '
                   'the database, per API host.',
                   [('min by (instance) (placement_database_up{%s})' % JOB,
                     '{{instance}}')]),
        ]),
        ('Capacity', [
            _panel('Capacity and use per resource class',
                   'Over all providers: capacity ((total - reserved) x '
                   'allocation ratio) and allocated. Every API host '
                   'reports the same figures: their max is taken.',
                   [(_max_by('resource_class',
                             'placement_resource_capacity{%s}' % JOB),
                     'capacity {{resource_class}}'),
                    (_max_by('resource_class',
                             'placement_resource_used{%s}' % JOB),
                     'used {{resource_class}}')]),
            _panel('Use per resource class',
                   'Allocated over capacity (the '
                   'PlacementResourceClassUsageHigh alerts fire over 80% '
                   'and 90%).',
                   [('%s\n  / %s' % (
                       _max_by('resource_class',
                               'placement_resource_used{%s}' % JOB),
                       _max_by('resource_class',
                               'placement_resource_capacity{%s}' % JOB)),
                     '{{resource_class}}')],
                   unit='percentunit'),
            _panel('Capacity and use per aggregate',
                   'Over the providers of each aggregate ([metrics] '
                   'aggregate_metrics): capacity and allocated.',
                   [(_max_by('aggregate, resource_class',
                             'placement_aggregate_resource_capacity{%s}'
                             % JOB),
                     'capacity {{aggregate}} {{resource_class}}'),
                    (_max_by('aggregate, resource_class',
                             'placement_aggregate_resource_used{%s}' % JOB),
                     'used {{aggregate}} {{resource_class}}')]),
            _panel('Fullest providers',
                   'The %d providers and resource classes with the '
                   'largest share of their capacity allocated '
                   '(openstack_placement_* series: [metrics] '
                   'provider_metrics, or openstack-exporter).'
                   % TOP_PROVIDERS,
                   [('topk(%d,\n  %s)' % (TOP_PROVIDERS,
                                          PROVIDER_USAGE_RATIO),
                     '{{hostname}} {{resourcetype}}')],
                   unit='percentunit'),
        ]),
        ('Flavour headroom', [
            _panel('Headroom by flavour',
                   'How many more instances of each named flavour fit in '
                   'the whole cloud ([metrics] capacity_flavours, under '
                   'os-capacity\'s name; the '
                   'PlacementFlavourCapacityLow alert fires under 10).',
                   [('max by (flavor_name) ('
                     'openstack_free_capacity_by_flavor_total)',
                     '{{flavor_name}}')]),
            _panel('Headroom by flavour and aggregate',
                   'How many more instances of each named flavour fit in '
                   'each aggregate (named by [metrics] '
                   'aggregate_names_file, else by uuid).',
                   [(_max_by('flavor_name, aggregate_name',
                             'placement_capacity_aggregate_fit{%s}' % JOB),
                     '{{flavor_name}} in {{aggregate_name}}')]),
            _panel('Stranded capacity',
                   'Free units of each resource class on hosts where '
                   'none of the named flavours fits even once: room in '
                   'the usage figures that no such instance can use.',
                   [(_max_by('resource_class',
                             'placement_capacity_stranded{%s}' % JOB),
                     '{{resource_class}}')]),
            _panel('Stranded share of free capacity',
                   'Stranded units over all free units ((capacity - '
                   'used)) of each resource class.',
                   [('%s\n  / (%s\n    - %s)' % (
                       _max_by('resource_class',
                               'placement_capacity_stranded{%s}' % JOB),
                       _max_by('resource_class',
                               'placement_resource_capacity{%s}' % JOB),
                       _max_by('resource_class',
                               'placement_resource_used{%s}' % JOB)),
                     '{{resource_class}}')],
                   unit='percentunit'),
        ]),
    ]


def _laid_out():
    """The rows and panels with their places on the grid, ids in order."""
    panels = []
    y = 0
    for title, row_panels in sections():
        panels.append(core.RowPanel(
            title=title, gridPos=core.GridPos(h=1, w=24, x=0, y=y)))
        y += 1
        for index, panel in enumerate(row_panels):
            panel.gridPos = core.GridPos(
                h=HEIGHT, w=WIDTH, x=(index % 2) * WIDTH,
                y=y + (index // 2) * HEIGHT)
            panels.append(panel)
        y += (len(row_panels) + 1) // 2 * HEIGHT
    for number, panel in enumerate(panels, 1):
        panel.id = number
    return panels


def dashboard():
    """The grafanalib Dashboard."""
    return core.Dashboard(
        title='Placement',
        uid='placement',
        description='OpenStack Placement API: requests, allocation '
                    'candidates, allocation writes, database, capacity, '
                    'flavour headroom.',
        tags=['openstack', 'placement'],
        timezone='browser',
        refresh='1m',
        # Grafana 10's, whose JSON model the panels follow.
        schemaVersion=39,
        graphTooltip=core.GRAPH_TOOLTIP_MODE_SHARED_CROSSHAIR,
        templating=core.Templating(list=[
            core.Template(
                name='datasource', label='Data source', type='datasource',
                query='prometheus', default='Prometheus'),
            core.Template(
                name='job', label='Job', dataSource=DATASOURCE,
                query='label_values(placement_database_up, job)',
                default='placement'),
        ]),
        panels=_laid_out(),
    )


def render():
    """etc/grafana/placement.json's text."""
    return json.dumps(dashboard().to_json_data(), indent=2, sort_keys=True,
                      default=lambda value: value.to_json_data()) + '\n'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true',
                        help='exit 1 if the file differs from what this '
                             'module generates, without writing it')
    parser.add_argument('--output', type=pathlib.Path, default=OUTPUT)
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = (args.output.read_text() if args.output.exists()
                   else None)
        if current != text:
            print('%s is not what %s generates: regenerate it'
                  % (args.output, pathlib.Path(__file__).name),
                  file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
