"""The capacity extension (upstream Placement has no ``/x-`` paths): how
many more instances of flavours fit, and where. Admin only
(``placement:x-capacity``).

``GET /x-capacity/allocation_candidates?QUERY``
    one flavour: QUERY is read exactly as GET /allocation_candidates
    reads it at the request's microversion (the latest without a
    placement version header, as /x-explain), same 400s; the answer's
    flavour has the name "".
``POST /x-capacity/allocation_candidates``
    ``{"flavours": {NAME: QUERY, ...}}``: several named flavours at once.
``GET /x-capacity/flavours[?names=A,B]``
    the flavours of the file ``[capacity] flavours_file``, all or those
    named (an unknown name: 404).

Every form takes ``hosts``, how many hosts to list per flavour (default
20; more than ``[capacity] max_hosts_listed``: 400); more flavours than
``[capacity] max_flavours``: 400. A named flavour's refusals begin
"Flavour NAME: ". The answer is ``placement.candidates.capacity``'s
(its module docstring gives the fields), with the microversion the
query strings were read at.
"""
import urllib.parse

import flask

from placement import exception
from placement import querylang
from placement import versions
from placement.api.pipeline import context
from placement.api.pipeline import declaration
from placement.api.pipeline import inputs
from placement.api.pipeline import microversion
from placement.api.pipeline import responses
from placement.api.resources import explain
from placement.candidates import capacity
from placement.policies import explain as policies
from placement.schemas import allocation_candidate
from placement.schemas import capacity as schema

PATH = '/x-capacity/allocation_candidates'
FLAVOURS_PATH = '/x-capacity/flavours'

# Hosts listed per flavour when the request does not say.
DEFAULT_HOSTS = 20

blueprint = flask.Blueprint('x_capacity', __name__)


@blueprint.route(PATH, methods=['GET'])
@explain.latest_by_default
@declaration.handler(
        'Count how many more instances of a flavour fit, and where '
        '(extension, admin only)', {200: schema.ANSWER},
        min_version=versions.ALLOCATION_CANDIDATES,
        query=allocation_candidate.GET)
def count_one() -> flask.Response:
    context.authorize(policies.CAPACITY)
    pairs = inputs.query_pairs()
    hosts = [value for key, value in pairs if key == 'hosts']
    if hosts and not hosts[-1].isdigit():
        raise exception.BadInput(
            "Invalid query string parameters: 'hosts' must be a whole "
            "number, not %r." % hosts[-1])
    pairs = [(key, value) for key, value in pairs if key != 'hosts']
    request = querylang.parse(pairs, microversion.current())
    # As the operator wrote it: the names' separators left unquoted.
    query = urllib.parse.urlencode(pairs, safe=':,!')
    return _answer([capacity.Flavour('', query, request)],
                   hosts[-1] if hosts else None)


@blueprint.route(PATH, methods=['POST'])
@explain.latest_by_default
@declaration.handler(
        'Count how many more instances of named flavours fit, and where '
        '(extension, admin only)', {200: schema.ANSWER},
        min_version=versions.ALLOCATION_CANDIDATES, body=schema.POST)
def count_many() -> flask.Response:
    context.authorize(policies.CAPACITY)
    body = inputs.json_body(schema.POST)
    flavours = capacity.parse_flavours(body['flavours'].items(),
                                       microversion.current())
    return _answer(flavours, body.get('hosts'))


@blueprint.route(FLAVOURS_PATH, methods=['GET'])
@explain.latest_by_default
@declaration.handler(
        'Count how many more instances of the configured flavours fit, '
        'and where (extension, admin only)', {200: schema.ANSWER},
        min_version=versions.ALLOCATION_CANDIDATES,
        query=schema.GET_FLAVOURS)
def count_configured() -> flask.Response:
    context.authorize(policies.CAPACITY)
    params = inputs.query(schema.GET_FLAVOURS)
    configured = dict(_configured())
    wanted = list(configured)
    if 'names' in params:
        wanted = [name for name in params['names'].split(',') if name]
        for name in wanted:
            if name not in configured:
                raise exception.NotFound(
                    'No flavour named %s in [capacity] flavours_file.'
                    % name)
    flavours = capacity.parse_flavours(
        [(name, configured[name]) for name in wanted],
        microversion.current())
    return _answer(flavours, params.get('hosts'))


def _configured():
    """(name, query) of the flavours file; none when not configured."""
    path = context.conf().capacity.flavours_file
    if not path:
        return []
    try:
        with open(path) as source:
            return capacity.flavours_from_lines(source)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        # The file is the operator's, not the client's: say what is
        # wrong with it rather than fail.
        raise exception.NotFound(
            'The flavours of [capacity] flavours_file cannot be read: %s'
            % exc) from None


def _answer(flavours, hosts):
    limits = context.conf().capacity
    if len(flavours) > limits.max_flavours:
        raise exception.BadInput(
            '%d flavours asked for: at most %d may be asked in one request '
            '([capacity] max_flavours).'
            % (len(flavours), limits.max_flavours))
    listed = DEFAULT_HOSTS if hosts is None else int(hosts)
    if listed > limits.max_hosts_listed:
        raise exception.BadInput(
            'hosts=%d: an answer lists at most %d hosts per flavour '
            '([capacity] max_hosts_listed).'
            % (listed, limits.max_hosts_listed))
    answer = context.read(capacity.count, flavours, listed)
    return responses.json_response(dict(
        answer.as_dict(), microversion=str(microversion.current())))
