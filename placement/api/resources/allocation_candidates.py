"""/allocation_candidates (1.10+): the query language is parsed by
placement.querylang and answered by placement.candidates; this module
only shapes the response for the request's microversion.
"""
import logging

import flask

from placement import candidates
from placement import querylang
from placement import versions
from placement.api.operations import metrics
from placement.api.pipeline import context
from placement.api.pipeline import declaration
from placement.api.pipeline import inputs
from placement.api.pipeline import microversion
from placement.api.pipeline import responses
from placement.candidates import explain
from placement.policies import allocation_candidate as policies
from placement.schemas import allocation_candidate as schema

blueprint = flask.Blueprint('allocation_candidates', __name__)

EXPLAIN_LOG = logging.getLogger('placement.api.resources.explain')


# Answers of this many candidates or more are shaped and encoded a chunk
# at a time into a spool (responses.spooled_json_response).
SPOOLED_FROM = 1000


# There are as many requests and summaries as candidates and providers
# in their trees: each view builds its body in one go.
def _request_as_list(candidate):
    """1.10-1.11: a list of {resource_provider, resources}."""
    return {'allocations': [
        {'resource_provider': {'uuid': uuid}, 'resources': resources}
        for uuid, resources in candidate.allocations.items()]}


def _request_as_dict(candidate):
    """1.12+: keyed by provider uuid, as PUT /allocations takes it."""
    return {'allocations': {
        uuid: {'resources': resources}
        for uuid, resources in candidate.allocations.items()}}


def _request_with_mappings(candidate):
    """1.34+: which providers satisfy which group."""
    allocations, mappings = candidate
    return {'allocations': {uuid: {'resources': resources}
                            for uuid, resources in allocations.items()},
            'mappings': mappings}


_REQUEST_VIEW = {
    versions.ALLOCATION_CANDIDATES: _request_as_list,
    versions.ALLOCATIONS_BY_PROVIDER: _request_as_dict,
    versions.GROUP_MAPPINGS: _request_with_mappings,
}


def _summary(summary):
    return {'resources': summary.resources}


def _summary_with_traits(summary):
    return {'resources': summary.resources, 'traits': summary.traits}


def _summary_in_tree(summary):
    resources, traits, parent_uuid, root_uuid = summary
    return {'resources': resources, 'traits': traits,
            'parent_provider_uuid': parent_uuid,
            'root_provider_uuid': root_uuid}


_SUMMARY_VIEW = {
    versions.ALLOCATION_CANDIDATES: _summary,
    versions.CANDIDATE_TRAITS: _summary_with_traits,
    versions.NESTED_CANDIDATES: _summary_in_tree,
}


@blueprint.route('/allocation_candidates', methods=['GET'])
@declaration.handler('Allocation candidates for a request of resources',
                     {200: schema.ALLOCATION_CANDIDATES},
                     min_version=versions.ALLOCATION_CANDIDATES,
                     query=schema.GET)
def list_allocation_candidates() -> flask.Response:
    context.authorize(policies.LIST)
    request = querylang.parse(inputs.query_pairs(), microversion.current())
    settings = candidates.Settings.from_conf(context.conf())
    with candidates.gc_paused():
        # Only the encoded response outlives the block.
        return _respond(request, settings)


def _respond(request, settings):
    with metrics.candidate_generation() as generation:
        result = context.read(candidates.find, request, settings)
        generation.found(len(result.candidates))
    if not result.candidates:
        _log_why_nothing(request, settings)
    request_view = microversion.by_version(_REQUEST_VIEW)
    summary_view = microversion.by_version(_SUMMARY_VIEW)
    summaries = {uuid: summary_view(summary)
                 for uuid, summary in result.summaries.items()}
    if len(result.candidates) >= SPOOLED_FROM:
        return responses.spooled_json_response(
            'allocation_requests', map(request_view, result.candidates),
            {'provider_summaries': summaries},
            last_modified=responses.utcnow())
    return responses.json_response({
        'allocation_requests': [request_view(c) for c in result.candidates],
        'provider_summaries': summaries,
    }, last_modified=responses.utcnow())


def _log_why_nothing(request, settings):
    """DEBUG-log why ``request`` (just answered with no candidates) found
    nothing (on the logger the README names). Costs nothing unless DEBUG
    is on; never fails the request.
    """
    if not EXPLAIN_LOG.isEnabledFor(logging.DEBUG):
        return
    try:
        explanation = context.read(explain.explain, request, settings)
    except Exception:
        EXPLAIN_LOG.debug('Could not explain the empty allocation candidates '
                          'of %s', flask.request.full_path, exc_info=True)
        return
    EXPLAIN_LOG.debug('GET %s: %s', flask.request.full_path,
                      explanation.one_line())
