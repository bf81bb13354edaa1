"""Configuration options of the placement service.

Groups, option names, types, defaults and deprecated names match upstream
placement so that an existing placement.conf works unchanged.
"""

from collections.abc import Iterable
import difflib
import glob
from importlib import metadata
import logging
import os
import sys

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading
from oslo_config import cfg
from oslo_log import log
from oslo_middleware import cors
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import sizelimit
from oslo_policy import opts as policy_opts

LOG = logging.getLogger(__name__)

PROJECT = 'placement'
DISTRIBUTION = 'placement-fast'
CONFIG_FILE = 'placement.conf'
CONFIG_DIR_ENV = 'OS_PLACEMENT_CONFIG_DIR'
# The default [oslo_policy] policy_file, as upstream's.
POLICY_FILE = 'policy.yaml'
# Stands in for the project/user of consumers written before microversion 1.8.
INCOMPLETE_CONSUMER_ID = '00000000-0000-0000-0000-000000000000'

default_opts: list[cfg.Opt] = [
    cfg.StrOpt('tempdir', help='Working directory for temporary files.'),
    cfg.StrOpt(
        'pybasedir',
        default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        sample_default='<Path>',
        help='Directory the placement package is installed in; the base '
             'of state_path. Rarely needs changing.'),
    cfg.StrOpt(
        'state_path',
        default='$pybasedir',
        help='Top-level directory for state kept by placement.'),
]

# Registered but, as upstream, left out of the sample file.
service_opts = [
    cfg.BoolOpt(
        'log_options',
        default=True,
        help='Log every registered option value at DEBUG level on start.'),
]

api_group = cfg.OptGroup(
    'api', title='API options', help='Options of the placement HTTP API.')

api_opts = [
    cfg.StrOpt(
        'auth_strategy',
        default='keystone',
        choices=('keystone', 'noauth2'),
        deprecated_group='DEFAULT',
        help="How requests are authenticated. 'noauth2' trusts the request "
             "headers and is meant for testing only: it grants the admin "
             "role only when the user name is 'admin'."),
]

placement_group = cfg.OptGroup(
    'placement',
    title='Placement Service Options',
    help='Behaviour of the placement service.')

placement_opts = [
    cfg.BoolOpt(
        'randomize_allocation_candidates',
        default=False,
        help='When a limit cuts down the allocation candidates, pick a '
             'random sample of them instead of a stable, unspecified '
             'order.'),
    cfg.StrOpt(
        'incomplete_consumer_project_id',
        default=INCOMPLETE_CONSUMER_ID,
        help='Project id recorded for consumers whose allocations were '
             'written without one (microversions before 1.8).'),
    cfg.StrOpt(
        'incomplete_consumer_user_id',
        default=INCOMPLETE_CONSUMER_ID,
        help='User id recorded for consumers whose allocations were '
             'written without one (microversions before 1.8).'),
    cfg.IntOpt(
        'allocation_conflict_retry_count',
        default=10,
        help='How often the server retries writing allocations after a '
             'resource provider generation conflict.'),
    cfg.IntOpt(
        'max_allocation_candidates',
        default=-1,
        help='Upper bound on the allocation candidates generated for one '
             'request, to cap memory and time; -1 means no bound. The '
             'request limit parameter only applies after generation.'),
    cfg.IntOpt(
        'max_returned_allocation_candidates',
        default=100000, min=0,
        help='The most allocation candidates one GET '
             '/allocation_candidates answer may hold. A request whose '
             'answer would hold more (no limit, or a larger one) is '
             'refused with 400 instead of taking a worker\'s memory and '
             'time without bound; asking with a limit up to this never '
             'is. 0: no bound (upstream\'s behaviour). Not upstream\'s '
             'option.'),
    cfg.StrOpt(
        'allocation_candidates_generation_strategy',
        default='depth-first',
        choices=(
            ('depth-first',
             'exhaust one root provider before visiting the next'),
            ('breadth-first',
             'take one candidate from each root provider in turn'),
        ),
        help='Order in which root providers are visited while generating '
             'allocation candidates. breadth-first spreads candidates '
             'over roots when max_allocation_candidates is set.'),
]

database_group = cfg.OptGroup(
    'placement_database',
    title='Placement API database options',
    help='Database holding placement data. The service does not start '
         'without a connection.')

# Upstream marks 'connection' required; that is checked when the database
# is configured instead, so tools such as the policy generator can load
# the configuration without one.
database_opts = [
    cfg.StrOpt('connection', secret=True,
               help='SQLAlchemy URL of the placement database.'),
    cfg.StrOpt('connection_parameters', default='',
               help='Extra URL query parameters added when connecting, '
                    'as a=1&b=2.'),
    cfg.BoolOpt('sqlite_synchronous', default=True,
                help='Use synchronous mode with SQLite.'),
    cfg.StrOpt('slave_connection', secret=True,
               help='SQLAlchemy URL of a read-only replica of the '
                    'database (a PostgreSQL standby, a MariaDB replica '
                    'or another Galera node). Requests listed in '
                    'replica_routes read from it while its lag is within '
                    'replica_max_lag; everything else, and every write, '
                    'uses connection. Upstream accepts this option and '
                    'ignores it.'),
    cfg.ListOpt(
        'replica_routes',
        # The requests whose answers are advice, not ledger: a scheduler
        # claims what they suggest with a write that is checked on the
        # primary, so a stale answer costs at most a 409 and a retry.
        # What a client reads to build its next write (one provider's
        # inventories, traits, aggregates, allocations, generations) and
        # usages (quota counting) stay on the primary.
        default=['GET /allocation_candidates', 'GET /resource_providers',
                 'GET /resource_classes', 'GET /traits'],
        help='Requests, as "METHOD /path" with placeholders as in the '
             'API reference (e.g. GET /resource_providers/{uuid}/usages), '
             'that read from slave_connection when it is set. Only GET '
             'requests can be listed; an unknown one stops the service '
             'from starting. Empty: the replica is never read.'),
    cfg.FloatOpt(
        'replica_max_lag', default=1.0, min=0,
        help='Seconds a replica may be behind the primary and still be '
             'read from. While its lag is larger, or it is unreachable, '
             'reads go to the primary; they move back by themselves.'),
    cfg.FloatOpt(
        'replica_check_interval', default=1.0, min=0.1,
        help='Seconds between two checks of the replica\'s lag by each '
             'service process. A reader may see data as old as '
             'replica_max_lag plus this.'),
    cfg.StrOpt('mysql_sql_mode', default='TRADITIONAL',
               help='sql_mode set on MySQL sessions; empty keeps the '
                    'server setting.'),
    cfg.IntOpt('mysql_wsrep_sync_wait', min=0,
               help='Galera only: wsrep_sync_wait set on every MySQL '
                    'connection, so that reads wait until the node has '
                    'applied what other nodes committed (1 checks SELECTs; '
                    'see the Galera documentation for the other bits). '
                    'Set it when requests are spread over several Galera '
                    'nodes. Unset (the default) keeps the server '
                    'setting.'),
    cfg.IntOpt('connection_recycle_time', default=3600,
               help='Seconds after which a pooled connection is replaced.'),
    cfg.IntOpt('max_pool_size',
               help='Connections kept open in the pool; 0 means no limit.'),
    cfg.IntOpt('max_retries', default=10,
               help='Times the first connection is retried when the '
                    'service starts; -1 retries forever. When they run '
                    'out the service does not start (gunicorn exits: '
                    '"Worker failed to boot").'),
    cfg.IntOpt('retry_interval', default=10,
               help='Seconds between those connection attempts.'),
    cfg.IntOpt('max_overflow',
               help='Connections allowed beyond max_pool_size.'),
    cfg.IntOpt('connection_debug', default=0,
               help='SQL logging verbosity: 0 none, 50 the statements '
                    '(INFO), 100 their rows too (DEBUG), on the '
                    'sqlalchemy.engine logger.'),
    cfg.BoolOpt('connection_trace', default=False,
                help='Add the call sites in placement that sent each SQL '
                     'statement to it as a comment.'),
    cfg.IntOpt('pool_timeout',
               help='Seconds to wait for a free pooled connection.'),
    cfg.FloatOpt(
        'transaction_timeout', default=10.0, min=0,
        help='Seconds the database work of one request (all its reads '
             'and writes, retries and connection attempts included) may '
             'take. Past that, the request is answered 503: on a MySQL or '
             'PostgreSQL server the connection is cut, so that a frozen '
             'or cut-off database server cannot hang requests, and the '
             'pool replaces its connections to that server; on SQLite a '
             'wait for the lock another process holds ends. 0: wait '
             'forever (upstream\'s behaviour; on SQLite, 30 s for the '
             'lock). Not upstream\'s option.'),
    cfg.BoolOpt('sync_on_startup', default=False,
                help='Apply database schema migrations when the web '
                     'service starts.'),
]

workarounds_group = cfg.OptGroup(
    'workarounds',
    title='Workaround Options',
    help='Switches for known problems; enable only when affected.')

workarounds_opts = [
    cfg.BoolOpt(
        'optimize_for_wide_provider_trees',
        default=False,
        help='Upstream\'s workaround for slow allocation candidates in '
             'trees with many similar child providers (bug #2126751). It '
             'has no effect in this service, whose candidate engine does '
             'not need it; it is accepted (and its use logged once at '
             'start) so that upstream\'s configuration files load.'),
]

metrics_group = cfg.OptGroup(
    'metrics',
    title='Prometheus metrics (extension)',
    help='A Prometheus text endpoint, not part of the Placement API. '
         'Under gunicorn or mod_wsgi with several processes, set the '
         'PROMETHEUS_MULTIPROC_DIR environment variable (an empty '
         'directory, emptied before each start) so that every process\'s '
         'numbers are collected.')

metrics_opts = [
    cfg.BoolOpt(
        'enabled',
        default=False,
        help='Serve metrics at [metrics]path. While disabled that path '
             'is handled as any other unknown path.'),
    cfg.StrOpt(
        'path',
        default='/metrics',
        regex='^/[^?#]*$',
        help='Path of the metrics endpoint under the service root. It '
             'must not be a path of the Placement API.'),
    cfg.ListOpt(
        'allowed_networks',
        default=['127.0.0.1/32', '::1/128'],
        help='Networks (CIDR) whose clients may read the metrics, checked '
             'against the connection\'s address (REMOTE_ADDR; behind a '
             'proxy, that is the proxy\'s). Others get 403. No token is '
             'needed.'),
    cfg.BoolOpt(
        'provider_metrics',
        default=False,
        help='Also report every inventory of every resource provider '
             'under the names and labels of openstack-exporter\'s '
             'placement collector (openstack_placement_resource_total, '
             '_reserved, _allocation_ratio, _usage, _generation, with '
             'labels hostname (the provider\'s name) and resourcetype; '
             'and openstack_placement_up), read from the database in one '
             'statement per scrape. One series per provider and resource '
             'class.'),
    cfg.BoolOpt(
        'aggregate_metrics',
        default=False,
        help='Also report capacity ((total - reserved) * '
             'allocation_ratio) and usage per aggregate and resource '
             'class, over the providers that are members of the aggregate '
             '(placement_aggregate_resource_capacity, '
             'placement_aggregate_resource_used), read from the database '
             'in one statement per scrape.'),
    cfg.FloatOpt(
        'capacity_cache_seconds',
        default=5.0,
        min=0,
        help='While provider_metrics, aggregate_metrics or '
             'capacity_flavours is on, how long a process reuses what it '
             'read from the database for a scrape (these series, the per '
             'resource class series and the database_up gauges) before '
             'reading again, so that several '
             'scrapers cost one read per process per interval. 0 reads at '
             'every scrape. Without those options the per resource class '
             'series are read at every scrape.'),
    cfg.ListOpt(
        'capacity_flavours',
        default=[],
        help='Named flavours (of [capacity] flavours_file) whose headroom '
             'the metrics report, counted as GET '
             '/x-capacity/allocation_candidates counts it: under '
             'os-capacity\'s names and labels '
             '(openstack_free_capacity_by_flavor_total{flavor_name}, '
             'openstack_free_capacity_hypervisor_by_flavor{hypervisor, '
             'flavor_name, az_aggregate, project_aggregate}), so that '
             'its dashboards and alerts keep working, and per aggregate '
             '(placement_capacity_aggregate_fit{aggregate, '
             'aggregate_name, flavor_name}); with the free units no '
             'such flavour can use (placement_capacity_stranded, '
             'placement_capacity_stranded_hosts{resource_class}). '
             'Counted once per capacity_cache_seconds per process. An '
             'unknown name stops the service from starting. Empty: none '
             'of these series.'),
    cfg.StrOpt(
        'aggregate_names_file',
        help='A file naming aggregates, which Placement knows by uuid '
             'only, for the labels of the capacity_flavours series: one '
             'aggregate a line, "uuid name [availability_zone=ZONE] '
             '[filter_tenant_id=PROJECT]" (a shell\'s quoting; # '
             'comments). The name labels its per-aggregate series '
             '(aggregate_name; unnamed aggregates by their uuid); Nova\'s '
             'availability_zone and filter_tenant_id* metadata give its '
             'hosts os-capacity\'s az_aggregate and project_aggregate '
             'labels. Read again when it changes.'),
]

healthcheck_group = cfg.OptGroup(
    'healthcheck',
    title='Health check (extension)',
    help='GET /healthcheck, not part of the Placement API. The option has '
         'the name and meaning of oslo.middleware\'s healthcheck '
         'disable_by_file_path.')

healthcheck_opts = [
    cfg.StrOpt(
        'disable_by_file_path',
        help='While a file exists at this path, GET /healthcheck answers '
             '503 with "status": "disabled", whatever the database says, '
             'so that a load balancer checking it drains this host; the '
             'API itself keeps answering. Remove the file to put the host '
             'back. Unset: never disabled.'),
]

capacity_group = cfg.OptGroup(
    'capacity',
    title='Capacity answers (extension)',
    help='How many more instances of a flavour fit: GET and POST '
         '/x-capacity/allocation_candidates, GET /x-capacity/flavours and '
         'placement-manage capacity; not part of the Placement API.')

capacity_opts = [
    cfg.StrOpt(
        'flavours_file',
        help='A file of named flavours, one a line: a name, blanks, and '
             'the query string of GET /allocation_candidates that asks for '
             'one instance of it (e.g. "m1.small resources=VCPU:1,'
             'MEMORY_MB:2048,DISK_GB:20"); blank lines and lines starting '
             'with # are skipped. GET /x-capacity/flavours answers for '
             'them. Unset: no named flavours.'),
    cfg.IntOpt(
        'max_flavours', default=50, min=1,
        help='The most flavours one capacity request may ask about; a '
             'request for more is refused with 400.'),
    cfg.IntOpt(
        'max_hosts_listed', default=1000, min=0,
        help='The most hosts a capacity answer may list per flavour (its '
             'hosts parameter); a request for more is refused with 400. '
             'Counts always cover every host.'),
]

_GROUPED_OPTS = (
    (api_group, api_opts),
    (placement_group, placement_opts),
    (database_group, database_opts),
    (workarounds_group, workarounds_opts),
    (metrics_group, metrics_opts),
    (healthcheck_group, healthcheck_opts),
    (capacity_group, capacity_opts),
)

# Headers and methods placement clients use cross-origin (upstream's values).
_CORS_DEFAULTS = {
    'allow_headers': ['X-Auth-Token', 'X-Openstack-Request-Id',
                      'X-Identity-Status', 'X-Roles', 'X-Service-Catalog',
                      'X-User-Id', 'X-Tenant-Id', 'OpenStack-API-Version'],
    'expose_headers': ['X-Auth-Token', 'X-Openstack-Request-Id',
                       'X-Subject-Token', 'X-Service-Token',
                       'OpenStack-API-Version'],
    'allow_methods': ['GET', 'PUT', 'POST', 'DELETE', 'PATCH'],
}


# The largest request body accepted (413 beyond), in bytes. The largest
# legitimate bodies are a POST /allocations moving a thousand consumers
# (about 0.5 MB with two providers each) and a POST /reshaper of a large
# compute host; 2 MiB leaves them room and refuses what no client sends.
# oslo.middleware's own default (112 KiB) would refuse the former.
MAX_REQUEST_BODY_SIZE = 2 * 1024 * 1024
cfg.set_defaults(sizelimit.OPTS, max_request_body_size=MAX_REQUEST_BODY_SIZE)


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register placement's options and the library options it relies on."""
    conf.register_opts(default_opts + service_opts)
    for group, opts in _GROUPED_OPTS:
        # A fresh OptGroup per ConfigOpts: oslo.config copies a registered
        # group shallowly, so sharing the module's object would share its
        # option state (and overrides) between configurations.
        conf.register_group(cfg.OptGroup(group.name, title=group.title,
                                         help=group.help))
        conf.register_opts(opts, group=group.name)
    log.register_options(conf)
    policy_opts.set_defaults(conf, policy_file=POLICY_FILE)
    cors.set_defaults(**_CORS_DEFAULTS)
    conf.register_opts(cors.CORS_OPTS, 'cors')
    conf.register_opts(http_proxy_to_wsgi.OPTS, 'oslo_middleware')
    conf.register_opts(sizelimit.OPTS, 'oslo_middleware')
    _register_profiler_opts(conf)


def _register_profiler_opts(conf: cfg.ConfigOpts) -> None:
    """osprofiler's [profiler] options, when it is installed (it is
    optional: placement.api.middleware.profiler)."""
    try:
        from osprofiler import opts as profiler_opts
    except ImportError:
        return
    profiler_opts.set_defaults(conf)


def list_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    """Options for ``oslo-config-generator --namespace placement.conf``."""
    return [('DEFAULT', list(default_opts))] + [
        (group, list(opts)) for group, opts in _GROUPED_OPTS] + [
        # max_request_body_size for its default, which is not
        # oslo.middleware's.
        ('oslo_middleware',
         list(http_proxy_to_wsgi.OPTS) + list(sizelimit.OPTS))]


# The oslo.config option namespaces (as oslo-config-generator and
# oslo-config-validator name them) of the options the service reads:
# its own and those of the libraries it loads.
OPTION_NAMESPACES = (
    'placement.conf', 'keystonemiddleware.auth_token', 'oslo.log',
    'oslo.middleware.cors', 'oslo.middleware.http_proxy_to_wsgi',
    'oslo.middleware.sizelimit', 'oslo.policy', 'osprofiler')
# The sections of optional libraries: when one is not installed, its
# section is not reported as unknown (nor are its options checked).
_OPTIONAL_SECTIONS = {'osprofiler': 'profiler'}
# Where keystonemiddleware reads the options of its authentication
# plugin, which keystoneauth registers only once it has loaded it.
_AUTHTOKEN = 'keystone_authtoken'


def warn_unknown_options(conf: cfg.ConfigOpts,
                         prog: str | None = None) -> None:
    """One warning per option or section of the configuration files that
    nothing here reads (a typo, an option of another service), naming
    the closest known name; the service starts all the same, as
    upstream's does. Logged, or printed on stderr after ``prog``'s name
    for the commands (their logging is not set up)."""
    for message in unknown_options(conf):
        if prog is None:
            LOG.warning('%s', message)
        else:
            print('%s: warning: %s' % (prog, message), file=sys.stderr)


def unknown_options(conf: cfg.ConfigOpts) -> list[str]:
    """The warnings of warn_unknown_options, in the files' order."""
    found: dict[str, dict[str, list[str]]] = {}
    for path in _files_read(conf):
        try:
            cfg.ConfigParser(path, found).parse()
        except (OSError, cfg.ParseError):
            continue  # oslo.config has said so already
    known = _known_options(conf, found)
    messages = []
    for section, options in found.items():
        group = 'DEFAULT' if section == 'DEFAULT' else section.lower()
        names = known.get(group)
        if names is None:
            guess = difflib.get_close_matches(group, known, n=1)
            messages.append(
                '[%s] is not a section this service reads%s: its options '
                'are ignored' % (section, ' (did you mean [%s]?)' % guess[0]
                                 if guess else ''))
            continue
        if not names:
            continue  # nothing known about it to check against
        for option in options:
            if option.replace('-', '_') in names:
                continue
            guess = difflib.get_close_matches(option, names, n=1)
            messages.append(
                '[%s] %s is not an option of this service%s: it is ignored'
                % (section, option, ' (did you mean %s?)' % guess[0]
                   if guess else ''))
    return messages


def _files_read(conf):
    """The configuration files ``conf`` was read from, in order."""
    files = list(conf.config_file or [])
    for directory in conf.config_dirs:
        files += sorted(glob.glob(os.path.join(directory, '*.conf')))
    return files


def _known_options(conf, found):
    """{group: the option names (and deprecated names) it may hold};
    an empty set for a group whose options cannot be known."""
    known: dict[str, set[str]] = {}

    def add(group, opts):
        names = known.setdefault(group, set())
        for opt in opts:
            names.update((opt.dest, opt.name))
            for old in opt.deprecated_opts:
                known.setdefault(old.group or group, set()).add(
                    (old.name or opt.name).replace('-', '_'))

    loaded = {ep.name: ep for ep in metadata.entry_points(
        group='oslo.config.opts') if ep.name in OPTION_NAMESPACES}
    for namespace in OPTION_NAMESPACES:
        try:
            listed = loaded[namespace].load()()
        except (KeyError, ImportError):
            # Not installed (osprofiler is optional).
            optional = _OPTIONAL_SECTIONS.get(namespace)
            if optional:
                known.setdefault(optional, set())
            continue
        for group, opts in listed:
            add(getattr(group, 'name', group) or 'DEFAULT', opts)
    # What is registered here (command-line options among them): the
    # names of the options and groups (iterating a ConfigOpts gives
    # both), and of the groups found the options.
    registered = set(conf)
    known.setdefault('DEFAULT', set()).update(registered)
    for section in found:
        group = section.lower()
        if group != 'DEFAULT' and group in registered:
            attr = conf[group]
            if isinstance(attr, cfg.ConfigOpts.GroupAttr):
                known.setdefault(group, set()).update(attr)
    _add_auth_plugin_options(known, found)
    return known


def _add_auth_plugin_options(known, found):
    """The options of keystonemiddleware's authentication plugin (its
    auth_type) in keystone_authtoken, or the section its auth_section
    names; unknown (not checked) if the plugin does not load."""
    settings = found.get(_AUTHTOKEN, {})
    section = (settings.get('auth_section') or [_AUTHTOKEN])[-1]
    auth_type = (found.get(section, {}).get('auth_type')
                 or settings.get('auth_type') or [None])[-1]
    if not auth_type:
        return
    try:
        opts = loading.get_auth_plugin_conf_options(auth_type)
    except ks_exceptions.NoMatchingPlugin:
        known[section] = set()
        return
    names = known.setdefault(section, set())
    if section != _AUTHTOKEN:
        names.update(('auth_type', 'auth_section'))
    for opt in opts:
        names.update((opt.dest, opt.name.replace('-', '_')))
        names.update(old.name.replace('-', '_')
                     for old in opt.deprecated_opts if old.name)


def _config_sources(config_files):
    """Return (extra CLI args, default_config_files, default_config_dirs).

    None lets oslo.config search its standard places for 'placement'.
    """
    if config_files is not None:
        return [], list(config_files), []
    dirname = os.environ.get(CONFIG_DIR_ENV, '').strip()
    if not dirname:
        return [], None, None
    path = os.path.join(dirname, CONFIG_FILE)
    if os.path.isfile(path):
        # Policy files are then looked up next to this file.
        return [], [path], []
    # Only a --config-dir given as argument (not default_config_dirs) makes
    # oslo.config look for policy files in that directory.
    return ['--config-dir', dirname], [], []


def version_string() -> str:
    """The installed version of this service ('unknown' when it runs
    from a checkout that was never installed)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return 'unknown'


def load_config(argv: Iterable[str] | None = None,
                config_files: Iterable[str] | None = None,
                cli_opts: Iterable[cfg.Opt] = (),
                prog: str = PROJECT) -> cfg.ConfigOpts:
    """Return a new, parsed ConfigOpts for placement.

    argv is never taken from sys.argv: the WSGI server owns it. Commands
    pass their own ``cli_opts`` (sub-commands) to parse with it, and their
    name as ``prog`` for usage and help. ``--version`` prints
    version_string() and exits.
    """
    conf = cfg.ConfigOpts()
    register_opts(conf)
    conf.register_cli_opts(cli_opts)
    extra_args, files, dirs = _config_sources(config_files)
    conf(list(argv or []) + extra_args, project=PROJECT, prog=prog,
         version=version_string(),
         default_config_files=files, default_config_dirs=dirs)
    return conf
