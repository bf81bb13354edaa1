"""Operator extensions of placement-manage (upstream has neither):

``candidates explain QUERY [--microversion V] [--json]``
    why GET /allocation_candidates?QUERY finds no candidates, or no more
    than it does, read from the database (placement.candidates.explain).
``audit [--consumers FILE|-] [--fix]``
    inconsistent data (placement.db.audit). Exit status: 0 nothing found,
    1 something found (and, with --fix, repaired where it can be), 2 error.
``capacity [QUERY ...] [--flavour NAME=QUERY ...] [--file FILE] [--json]``
    how many more instances of flavours fit, and where
    (placement.candidates.capacity); --json prints the HTTP extension's
    answer.

All exit with status 2 for the ordinary mistakes placement-manage
reports in one line (placement.operator_errors): 1 means found.
"""
import argparse
import json
import sys
import urllib.parse

from oslo_utils import uuidutils

from placement import candidates
from placement import exception
from placement import querylang
from placement import versions
from placement.candidates import capacity
from placement.candidates import explain
from placement.db import audit

OK, FOUND, ERROR = 0, 1, 2


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser(
        'candidates', help='Allocation candidates tools (extension).')
    commands = group.add_subparsers(title='subcommands',
                                    dest='candidates_command')
    parser = commands.add_parser(
        'explain', help='Explain the allocation candidates of a query '
                        'string (extension).')
    parser.add_argument(
        'query', help='The query string of GET /allocation_candidates, e.g. '
                      "'resources=VCPU:1,MEMORY_MB:2048&required=HW_CPU_X86_"
                      "AVX2' (anything up to a '?' is ignored).")
    parser.add_argument(
        '--microversion', default='latest',
        help='The microversion to read the query string at (default: '
             'latest).')
    parser.add_argument('--json', action='store_true',
                        help='Print the JSON document of the HTTP extension.')
    parser.set_defaults(func=_explain, error_status=ERROR)

    parser = subparsers.add_parser(
        'audit', help='Report (and with --fix repair) inconsistent '
                      'allocations and consumers (extension).')
    parser.add_argument(
        '--consumers', metavar='FILE',
        help="The uuids of the consumers that really exist, one per line "
             "('-': standard input); allocations of any other consumer are "
             "reported as orphaned.")
    parser.add_argument(
        '--fix', action='store_true',
        help='Delete what is reported as orphaned or empty consumers.')
    parser.set_defaults(func=_audit, error_status=ERROR)

    parser = subparsers.add_parser(
        'capacity', help='Count how many more instances of flavours fit, '
                         'and where (extension).')
    parser.add_argument(
        'queries', nargs='*', metavar='QUERY',
        help='A flavour as the query string of GET /allocation_candidates '
             "asking for one instance, e.g. 'resources=VCPU:1,MEMORY_MB:"
             "2048'; unnamed.")
    parser.add_argument(
        '--flavour', action='append', default=[], metavar='NAME=QUERY',
        help='A named flavour (repeatable).')
    parser.add_argument(
        '--file', metavar='FILE',
        help="Named flavours, one a line: the name, blanks, the query "
             "string ('#' comments; '-': standard input).")
    parser.add_argument(
        '--microversion', default='latest',
        help='The microversion to read the query strings at (default: '
             'latest).')
    parser.add_argument(
        '--hosts', type=int, metavar='N',
        help='Hosts to list per flavour, most room first (default: none '
             'in text, 20 with --json).')
    parser.add_argument('--json', action='store_true',
                        help='Print the JSON document of the HTTP extension.')
    parser.set_defaults(func=_capacity, error_status=ERROR)


def _fail(message):
    print('placement-manage: %s' % message, file=sys.stderr)
    return ERROR


# -- candidates explain ----------------------------------------------------


def _explain(conf, database):
    query = conf.command.query
    query = query.split('?', 1)[1] if '?' in query else query
    try:
        version = versions.from_text(conf.command.microversion)
    except versions.UnknownVersion as exc:
        return _fail('invalid microversion: %s' % exc)
    try:
        request = querylang.parse(
            urllib.parse.parse_qsl(query, keep_blank_values=True), version)
    except exception.BadInput as exc:
        return _fail(str(exc))
    try:
        explanation = database.read(
            explain.explain, request, candidates.Settings.from_conf(conf))
    except exception.Invalid as exc:
        return _fail(str(exc))
    if conf.command.json:
        print(json.dumps(explanation.as_dict(), indent=2))
    else:
        print(explanation.text())
    return OK


# -- capacity --------------------------------------------------------------

# Hosts listed per flavour with --json when --hosts is not given, as the
# HTTP extension lists them.
JSON_HOSTS = 20


def _capacity(conf, database):
    command = conf.command
    try:
        version = versions.from_text(command.microversion)
    except versions.UnknownVersion as exc:
        return _fail('invalid microversion: %s' % exc)
    try:
        named = _named_flavours(command)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return _fail(str(exc))
    if not named:
        return _fail('no flavour given: QUERY, --flavour NAME=QUERY or '
                     '--file FILE')
    try:
        flavours = capacity.parse_flavours(named, version)
    except exception.BadInput as exc:
        return _fail(str(exc))
    hosts = command.hosts
    if hosts is None:
        hosts = JSON_HOSTS if command.json else 0
    if hosts < 0:
        return _fail('--hosts must not be negative')
    try:
        answer = database.read(capacity.count, flavours, hosts)
    except exception.Invalid as exc:
        return _fail(str(exc))
    if command.json:
        print(json.dumps(dict(answer.as_dict(),
                              microversion=versions.to_text(version)),
                         indent=2))
    else:
        print(_capacity_text(answer))
    return OK


def _named_flavours(command):
    """(name, query) of the flavours the command line gives, in order."""
    named = [('', query) for query in command.queries]
    for given in command.flavour:
        name, equals, query = given.partition('=')
        if not equals or not name:
            raise ValueError('--flavour %s: expected NAME=QUERY' % given)
        named.append((name, query))
    if command.file:
        if command.file == '-':
            named += capacity.flavours_from_lines(sys.stdin)
        else:
            with open(command.file) as source:
                named += capacity.flavours_from_lines(source)
    return named


def _capacity_text(answer):
    rows = [('flavour', 'fit', 'limited by', 'method', 'query')]
    rows += [(flavour.name or '-', str(flavour.fit),
              flavour.limited_by or '-', flavour.method, flavour.query)
             for flavour in answer.flavours]
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    lines = ['  '.join([value.ljust(width) if column != 1
                        else value.rjust(width)
                        for column, (value, width)
                        in enumerate(zip(row, widths))] + [row[4]])
             for row in rows]
    for flavour in answer.flavours:
        for host in flavour.hosts:
            lines.append('  %s: %s (%s) %d, limited by %s (%s)' % (
                flavour.name or flavour.query, host.name, host.uuid,
                host.fit, host.limited_by or '-', host.method))
    for rc, free, hosts in answer.stranded:
        lines.append('stranded: %s %d on %d host(s) where no flavour fits'
                     % (rc, free, hosts))
    return '\n'.join(lines)


# -- audit -----------------------------------------------------------------


def _audit(conf, database):
    existing = None
    if conf.command.consumers:
        try:
            existing = _read_consumers(conf.command.consumers)
        except (OSError, ValueError) as exc:
            return _fail(str(exc))
    return _run_audit(database, existing, conf.command.fix)


def _read_consumers(path):
    """The uuids of FILE ('-': stdin); blank lines and '#' comments are
    skipped. An empty list is refused: it would orphan every consumer.
    """
    if path == '-':
        lines = sys.stdin.read().splitlines()
    else:
        with open(path) as source:
            lines = source.read().splitlines()
    uuids = []
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        if not uuidutils.is_uuid_like(line):
            raise ValueError('%s line %d: not a uuid: %s' % (
                path, number, line))
        uuids.append(line)
    if not uuids:
        raise ValueError('%s lists no consumer: refusing to treat every '
                         'consumer as orphaned' % path)
    return uuids


def _run_audit(database, existing, fix):
    over, uninventoried, empty, orphans = database.read(_find, existing)
    for item in over:
        print('over capacity: %s (%s) %s: used %d, capacity %d (total %d, '
              'reserved %d, ratio %s)' % (
                  item.provider_name, item.provider_uuid,
                  item.resource_class, item.used, item.capacity, item.total,
                  item.reserved, explain.display_ratio(item.allocation_ratio)))
    for item in uninventoried:
        print('allocation without inventory: consumer %s holds %s=%d on '
              '%s (%s), which has no %s inventory' % (
                  item.consumer_uuid, item.resource_class, item.used,
                  item.provider_name, item.provider_uuid,
                  item.resource_class))
    for consumer in empty:
        print('empty consumer: %s' % _consumer_text(consumer))
    for consumer in orphans:
        print('orphaned consumer: %s holds %s' % (
            _consumer_text(consumer), _allocations_text(consumer)))
    found = len(over) + len(uninventoried) + len(empty) + len(orphans)
    if not found:
        print('audit: nothing found')
        return OK
    if not fix:
        print('audit: %d finding(s); dry run, nothing changed (--fix '
              'deletes orphaned and empty consumers)' % found)
        return FOUND
    repairs = ([(audit.delete_orphaned_consumer, c, 'the allocations of '
                 'orphaned consumer') for c in orphans]
               + [(audit.delete_empty_consumer, c, 'empty consumer')
                  for c in empty])
    fixed = sum(_repair(database, *repair) for repair in repairs)
    print('audit: %d finding(s), %d fixed, %d skipped; over-capacity and '
          'missing-inventory findings are only reported'
          % (found, fixed, len(repairs) - fixed))
    return FOUND


def _find(conn, existing):
    """What the audit reports, read in one go: over-capacity providers,
    allocations without inventory, empty and orphaned consumers (those
    not in ``existing``; none when it is None)."""
    over = audit.over_capacity(conn)
    uninventoried = audit.allocations_without_inventory(conn)
    empty = audit.empty_consumers(conn)
    orphans = ([] if existing is None
               else audit.orphaned_consumers(conn, existing))
    return over, uninventoried, empty, orphans


def _consumer_text(consumer):
    if consumer.id is None:
        return '%s (no consumer record)' % consumer.uuid
    return '%s (project %s, user %s, generation %d)' % (
        consumer.uuid, consumer.project, consumer.user, consumer.generation)


def _allocations_text(consumer):
    by_provider: dict[str, list[str]] = {}
    for item in consumer.allocations:
        by_provider.setdefault(
            '%s (%s)' % (item.provider_name, item.provider_uuid), []).append(
                '%s=%d' % (item.resource_class, item.used))
    return '; '.join('%s: %s' % (provider, ', '.join(amounts))
                     for provider, amounts in by_provider.items())


def _repair(database, delete, consumer, what):
    """Run one repair in its own transaction; whether it was done."""
    try:
        database.write(delete, consumer)
    except exception.ConcurrentUpdate:
        print('skipped: %s %s changed since the audit; run it again'
              % (what, consumer.uuid))
        return False
    print('fixed: deleted %s %s' % (what, consumer.uuid))
    return True
