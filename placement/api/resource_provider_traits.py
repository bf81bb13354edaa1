"""/resource_providers/{uuid}/traits: list, replace, remove all (1.6+)."""
import flask

from placement import exception
from placement.api import errors
from placement.api import wsgi
from placement.db import resource_provider_trait as rp_trait_db
from placement.policies import trait as policies
from placement.schemas import resource_provider_trait as schema

blueprint = flask.Blueprint('resource_provider_traits', __name__)

_PATH = '/resource_providers/<uuid>/traits'
# A provider's traits exist from 1.6.
SINCE = (1, 6)


def _read(conn, uuid):
    # Upstream's GET says it twice.
    provider = wsgi.provider_or_404(uuid, '%(error)s: %(error)s', conn)
    return provider, rp_trait_db.of_provider(conn, provider['id'])


def _response(names, generation, rows):
    return wsgi.json_response(
        {'traits': names, 'resource_provider_generation': generation},
        last_modified=wsgi.last_modified_of(rows))


@blueprint.route(_PATH, methods=['GET'])
@wsgi.handler("List a provider's traits", {200: 'ProviderTraits'},
              min_version=SINCE)
def list_traits(uuid):
    wsgi.authorize(policies.RP_TRAIT_LIST)
    provider, rows = wsgi.read(_read, uuid)
    return _response([row['name'] for row in rows], provider['generation'],
                     rows)


def _replace(conn, uuid, names, expected_generation):
    provider = wsgi.provider_or_404(uuid, conn=conn)
    generation = rp_trait_db.replace(
        conn, provider, names, expected_generation)
    return generation, rp_trait_db.of_provider(conn, provider['id'])


@blueprint.route(_PATH, methods=['PUT'])
@wsgi.handler("Replace a provider's traits", {200: 'ProviderTraits'},
              min_version=SINCE, body=schema.PUT)
def update_traits(uuid):
    wsgi.authorize(policies.RP_TRAIT_UPDATE)
    wsgi.provider_or_404(uuid)
    data = wsgi.body()
    try:
        generation, rows = wsgi.write(
            _replace, uuid, data['traits'],
            data['resource_provider_generation'])
    except exception.NotFound as exc:
        # Unknown traits (a vanished provider is an HTTP 404 already).
        raise errors.BadRequest(str(exc))
    # Unlike GET, upstream's PUT answers with the names sorted.
    return _response(sorted(row['name'] for row in rows), generation, rows)


def _delete_all(conn, uuid):
    rp_trait_db.delete_all(conn, wsgi.provider_or_404(uuid, conn=conn))


@blueprint.route(_PATH, methods=['DELETE'])
@wsgi.handler("Remove all of a provider's traits", {204: None},
              min_version=SINCE)
def delete_traits(uuid):
    wsgi.authorize(policies.RP_TRAIT_DELETE)
    wsgi.write(_delete_all, uuid)
    return wsgi.empty_response()
