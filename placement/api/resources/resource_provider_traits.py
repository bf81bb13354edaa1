"""/resource_providers/{uuid}/traits: list, replace, remove all (1.6+)."""
import flask

from placement import exception
from placement import versions
from placement.api.pipeline import context
from placement.api.pipeline import declaration
from placement.api.pipeline import errors
from placement.api.pipeline import responses
from placement.db import resource_provider_trait as rp_trait_db
from placement.policies import trait as policies
from placement.schemas import resource_provider_trait as schema

blueprint = flask.Blueprint('resource_provider_traits', __name__)

_PATH = '/resource_providers/<uuid>/traits'
# PUT refuses unknown traits (a vanished provider is a 404 already).
_UNKNOWN_TRAITS: errors.Wordings = {
    exception.NotFound: errors.As(errors.BadRequest)}


def _response(names, generation, rows):
    return responses.json_response(
        {'traits': names, 'resource_provider_generation': generation},
        last_modified=responses.last_modified_of(rows))


@blueprint.route(_PATH, methods=['GET'])
@declaration.handler("List a provider's traits", {200: schema.PROVIDER_TRAITS},
                     min_version=versions.TRAITS)
def list_traits(uuid: str) -> flask.Response:
    context.authorize(policies.RP_TRAIT_LIST)
    # Upstream's GET says it twice.
    provider, rows = context.read_of_provider(
        uuid, rp_trait_db.of_provider, '%(error)s: %(error)s')
    return _response([row['name'] for row in rows], provider['generation'],
                     rows)


def _replace(conn, uuid, names, expected_generation):
    provider = context.provider_or_404(uuid, conn=conn)
    generation = rp_trait_db.replace(
        conn, provider, names, expected_generation)
    return generation, rp_trait_db.of_provider(conn, provider['id'])


@blueprint.route(_PATH, methods=['PUT'])
@declaration.handler("Replace a provider's traits",
                     {200: schema.PROVIDER_TRAITS},
                     min_version=versions.TRAITS, body=schema.PUT,
                     errors=_UNKNOWN_TRAITS)
def update_traits(uuid: str) -> flask.Response:
    context.authorize(policies.RP_TRAIT_UPDATE)
    context.provider_or_404(uuid)
    data = declaration.body()
    generation, rows = context.write(
        _replace, uuid, data['traits'], data['resource_provider_generation'])
    # Unlike GET, upstream's PUT answers with the names sorted.
    return _response(sorted(row['name'] for row in rows), generation, rows)


def _delete_all(conn, uuid):
    rp_trait_db.delete_all(conn, context.provider_or_404(uuid, conn=conn))


@blueprint.route(_PATH, methods=['DELETE'])
@declaration.handler("Remove all of a provider's traits", {204: None},
                     min_version=versions.TRAITS)
def delete_traits(uuid: str) -> flask.Response:
    context.authorize(policies.RP_TRAIT_DELETE)
    context.write(_delete_all, uuid)
    return responses.empty_response()
