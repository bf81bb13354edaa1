"""/resource_providers/{uuid}/aggregates: list and replace (1.1+)."""
import flask

from placement import versions
from placement.api.pipeline import context
from placement.api.pipeline import declaration
from placement.api.pipeline import microversion
from placement.api.pipeline import responses
from placement.db import aggregate as aggregate_db
from placement.policies import aggregate as policies
from placement.schemas import aggregate as schema

blueprint = flask.Blueprint('aggregates', __name__)

_PATH = '/resource_providers/<uuid>/aggregates'


def _response(uuids, generation, last_modified):
    body = {'aggregates': uuids}
    if microversion.is_at_least(versions.AGGREGATES_GENERATION):
        body['resource_provider_generation'] = generation
    return responses.json_response(body, last_modified=last_modified)


@blueprint.route(_PATH, methods=['GET'])
@declaration.handler(
        "List a provider's aggregates", {200: schema.PROVIDER_AGGREGATES},
        min_version=versions.PROVIDER_AGGREGATES)
def list_aggregates(uuid: str) -> flask.Response:
    context.authorize(policies.LIST)
    provider, rows = context.read_of_provider(
        uuid, aggregate_db.of_provider)
    return _response([row['uuid'] for row in rows], provider['generation'],
                     responses.last_modified_of(rows))


def _replace(conn, uuid, uuids, expected_generation):
    provider = context.provider_or_404(uuid, conn=conn)
    return aggregate_db.replace(conn, provider, uuids, expected_generation)


@blueprint.route(_PATH, methods=['PUT'])
@declaration.handler(
        "Replace a provider's aggregates", {200: schema.PROVIDER_AGGREGATES},
        min_version=versions.PROVIDER_AGGREGATES,
        body={versions.PROVIDER_AGGREGATES: schema.PUT,
              versions.AGGREGATES_GENERATION: schema.PUT_1_19})
def update_aggregates(uuid: str) -> flask.Response:
    context.authorize(policies.UPDATE)
    context.provider_or_404(uuid)
    data = declaration.body()
    if microversion.is_at_least(versions.AGGREGATES_GENERATION):
        uuids = data['aggregates']
        expected_generation = data['resource_provider_generation']
    else:
        uuids, expected_generation = data, None
    generation, uuids = context.write(
        _replace, uuid, uuids, expected_generation)
    return _response(uuids, generation, responses.utcnow())
