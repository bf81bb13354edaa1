"""/resource_providers/{uuid}/traits: list, replace, remove all (1.6+)."""
import flask

from placement.api import errors
from placement.api import resource_providers
from placement.api import wsgi
from placement.db import resource_provider as rp_db
from placement.db import resource_provider_trait as rp_trait_db
from placement import exception
from placement.policies import trait as policies
from placement.schemas import resource_provider_trait as schema

blueprint = flask.Blueprint('resource_provider_traits', __name__)

_PATH = '/resource_providers/<uuid>/traits'


def _read(conn, uuid):
    try:
        provider = rp_db.get_by_uuid(conn, uuid)
    except exception.NotFound as exc:
        # Upstream's GET says it twice.
        raise errors.NotFound('%s: %s' % (exc, exc))
    return provider, rp_trait_db.of_provider(conn, provider['id'])


def _response(names, generation, rows):
    return wsgi.json_response(
        {'traits': names, 'resource_provider_generation': generation},
        last_modified=wsgi.last_modified_of(rows))


@blueprint.route(_PATH, methods=['GET'])
@wsgi.handler(min_version='1.6')
def list_traits(uuid):
    wsgi.authorize(policies.RP_TRAIT_LIST)
    provider, rows = wsgi.read(_read, uuid)
    return _response([row['name'] for row in rows], provider['generation'],
                     rows)


def _replace(conn, uuid, names, expected_generation):
    provider = resource_providers.get_or_404(conn, uuid)
    generation = rp_trait_db.replace(
        conn, provider, names, expected_generation)
    return generation, rp_trait_db.of_provider(conn, provider['id'])


@blueprint.route(_PATH, methods=['PUT'])
@wsgi.handler(min_version='1.6', content=True)
def update_traits(uuid):
    wsgi.authorize(policies.RP_TRAIT_UPDATE)
    wsgi.read(resource_providers.get_or_404, uuid)
    data = wsgi.json_body(schema.PUT)
    try:
        generation, rows = wsgi.write(
            _replace, uuid, data['traits'],
            data['resource_provider_generation'])
    except exception.ConcurrentUpdate as exc:
        raise errors.Conflict(str(exc), code=errors.CONCURRENT_UPDATE)
    except exception.NotFound as exc:
        raise errors.BadRequest(str(exc))
    # Unlike GET, upstream's PUT answers with the names sorted.
    return _response(sorted(row['name'] for row in rows), generation, rows)


def _delete_all(conn, uuid):
    provider = resource_providers.get_or_404(conn, uuid)
    rp_trait_db.delete_all(conn, provider)


@blueprint.route(_PATH, methods=['DELETE'])
@wsgi.handler(min_version='1.6')
def delete_traits(uuid):
    wsgi.authorize(policies.RP_TRAIT_DELETE)
    try:
        wsgi.write(_delete_all, uuid)
    except exception.ConcurrentUpdate as exc:
        raise errors.Conflict(str(exc), code=errors.CONCURRENT_UPDATE)
    return wsgi.empty_response()
