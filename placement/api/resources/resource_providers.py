"""/resource_providers: list with filters, create, show, update, delete."""
from typing import Any
from typing import Callable
from typing import Mapping
import uuid as uuid_lib

import flask

from placement import candidates
from placement import exception
from placement import querylang
from placement import versions
from placement.api.pipeline import context
from placement.api.pipeline import declaration
from placement.api.pipeline import errors
from placement.api.pipeline import inputs
from placement.api.pipeline import microversion
from placement.api.pipeline import responses
from placement.candidates import names as naming
from placement.db import resource_provider as rp_db
from placement.policies import resource_provider as policies
from placement.schemas import resource_provider as schema

blueprint = flask.Blueprint('resource_providers', __name__)

# Link relations of a provider body (in upstream's order) and the version
# that added each.
_LINK_RELATIONS = (
    ('inventories', versions.MIN_VERSION),
    ('usages', versions.MIN_VERSION),
    ('aggregates', versions.PROVIDER_AGGREGATES),
    ('traits', versions.TRAITS),
    ('allocations', versions.ALLOCATIONS_LINK),
)

# Upstream's words for what went wrong, per route (errors.As). POST
# mentions the provider's name and uuid (the client's, in canonical form,
# or a new one).
_CREATE_ERRORS: errors.Wordings = {
    exception.Invalid: errors.As(
        errors.BadRequest,
        'Unable to create resource provider "{name}", {uuid}: {error}'),
}
_UPDATE_ERRORS: errors.Wordings = {
    exception.Invalid: errors.As(
        errors.BadRequest, 'Unable to save resource provider {uuid}: {error}'),
}
_DELETE_ERRORS: errors.Wordings = {
    rp_db.HasChildren: errors.As(
        errors.Conflict, code=errors.PROVIDER_CANNOT_DELETE_PARENT),
    rp_db.HasAllocations: errors.As(
        errors.Conflict, code=errors.PROVIDER_IN_USE),
}
# The filters' names the providers do not know.
_LIST_ERRORS: errors.Wordings = {
    naming.UnknownResourceClass: errors.As(
        errors.BadRequest, naming.UNKNOWN_CLASS_REFUSED + '{error}'),
    naming.UnknownTrait: errors.As(
        errors.BadRequest,
        'Invalid trait(s) in "required" parameter: {error}'),
}


def path(uuid: str) -> str:
    return '/resource_providers/' + uuid


def view(row: Mapping[str, Any]) -> dict[str, Any]:
    """A provider as the API shows it at the request's version."""
    return viewer()(row)


def viewer() -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """``view`` for many rows: what depends on the request (links, tree
    fields) is worked out once.
    """
    prefix = responses.href(path(''))
    relations = [(rel, '/' + rel) for rel, since in _LINK_RELATIONS
                 if microversion.is_at_least(since)]
    in_tree = microversion.is_at_least(versions.PROVIDER_TREES)

    def show(row):
        base = prefix + row['uuid']
        links = [{'rel': 'self', 'href': base}]
        links += [{'rel': rel, 'href': base + tail}
                  for rel, tail in relations]
        body = {'uuid': row['uuid'], 'name': row['name'],
                'generation': row['generation'], 'links': links}
        if in_tree:
            body['parent_provider_uuid'] = row['parent_provider_uuid']
            body['root_provider_uuid'] = row['root_provider_uuid']
        return body
    return show


@blueprint.route('/resource_providers', methods=['GET'])
@declaration.handler('List resource providers',
                     {200: schema.RESOURCE_PROVIDERS},
                     query={versions.MIN_VERSION: schema.LIST_QUERY,
                            versions.MEMBER_OF_FILTER: schema.LIST_QUERY_1_3,
                            versions.RESOURCES_FILTER: schema.LIST_QUERY_1_4,
                            versions.PROVIDER_TREES: schema.LIST_QUERY_1_14,
                            versions.REQUIRED_FILTER: schema.LIST_QUERY_1_18},
                     errors=_LIST_ERRORS)
def list_resource_providers() -> flask.Response:
    context.authorize(policies.LIST)
    params = declaration.params()
    filters = {key: params[key] for key in ('name', 'uuid') if key in params}
    group = querylang.provider_filter(
        inputs.query_pairs(), microversion.current())
    # Thousands of rows and views, freed by reference counting: the
    # collector would only rescan them as they are made.
    with candidates.gc_paused():
        rows = context.read(_list, filters, group)
        response = responses.json_response(
            {'resource_providers': list(map(viewer(), rows))},
            last_modified=responses.last_modified_of(rows))
        del rows
    return response


def _list(conn, filters, group):
    """Providers matching ``filters`` and, when given, on their own the
    request ``group``, which the candidate engine decides as it decides
    its single-provider groups.
    """
    if group is not None:
        filters['ids'] = candidates.matching_providers(conn, group)
    return rp_db.list_all(conn, **filters)


@blueprint.route('/resource_providers', methods=['POST'])
@declaration.handler('Create a resource provider',
                     {versions.MIN_VERSION: {201: None},
                      versions.CREATE_RETURNS_PROVIDER: {
                          200: schema.RESOURCE_PROVIDER}},
                     body={versions.MIN_VERSION: schema.POST,
                           versions.PROVIDER_TREES: schema.POST_1_14},
                     errors=_CREATE_ERRORS)
def create_resource_provider() -> flask.Response:
    context.authorize(policies.CREATE)
    data = declaration.body()
    name = data['name']
    # The canonical form, whatever spelling of the uuid the client used.
    uuid = str(uuid_lib.UUID(data['uuid']) if 'uuid' in data
               else uuid_lib.uuid4())
    errors.mention(name=name, uuid=uuid)
    row = context.write(rp_db.create, uuid, name,
                        data.get('parent_provider_uuid'))
    location = responses.location(path(uuid))
    if not microversion.is_at_least(versions.CREATE_RETURNS_PROVIDER):
        return responses.empty_response(201, location=location)
    response = responses.json_response(
        view(row), last_modified=responses.last_modified_of([row]))
    response.headers['Location'] = location
    return response


@blueprint.route('/resource_providers/<uuid>', methods=['GET'])
@declaration.handler('Show a resource provider',
                     {200: schema.RESOURCE_PROVIDER})
def show_resource_provider(uuid: str) -> flask.Response:
    context.authorize(policies.SHOW)
    row = context.provider_or_404(uuid)
    return responses.json_response(
        view(row), last_modified=responses.last_modified_of([row]))


@blueprint.route('/resource_providers/<uuid>', methods=['DELETE'])
@declaration.handler('Delete a resource provider', {204: None},
                     errors=_DELETE_ERRORS)
def delete_resource_provider(uuid: str) -> flask.Response:
    context.authorize(policies.DELETE)
    context.write(rp_db.delete, uuid)
    return responses.empty_response()


@blueprint.route('/resource_providers/<uuid>', methods=['PUT'])
@declaration.handler(
        'Update a resource provider', {200: schema.RESOURCE_PROVIDER},
        body={versions.MIN_VERSION: schema.PUT,
              versions.PROVIDER_TREES: schema.PUT_1_14},
        errors=_UPDATE_ERRORS)
def update_resource_provider(uuid: str) -> flask.Response:
    context.authorize(policies.UPDATE)
    before = context.provider_or_404(uuid)
    data = declaration.body()
    parent = data.get('parent_provider_uuid', rp_db.KEEP_PARENT)
    row = context.write(
        rp_db.update, uuid, data['name'], parent,
        microversion.is_at_least(versions.REPARENT))
    moved = (before['parent_provider_uuid'] is not None
             and row['parent_provider_uuid'] not in (
                 None, before['parent_provider_uuid']))
    if not moved:
        return responses.json_response(
            view(row), last_modified=responses.last_modified_of([row]))
    # Upstream's answer to a move between parents has no Last-Modified,
    # only the Cache-Control that goes with it.
    return responses.json_response(view(row), undated=True)
