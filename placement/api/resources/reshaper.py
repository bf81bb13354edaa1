"""/reshaper (1.30): replace the inventories of many providers and the
allocations of many consumers in one transaction.
"""
import flask

from placement import exception
from placement import versions
from placement.api.pipeline import context
from placement.api.pipeline import declaration
from placement.api.pipeline import errors
from placement.api.pipeline import responses
from placement.api.resources import claims
from placement.db import inventory as inventory_db
from placement.db import reshaper as reshaper_db
from placement.policies import reshaper as policies
from placement.schemas import allocation as schema

blueprint = flask.Blueprint('reshaper', __name__)


_MALFORMED = 'malformed reshaper data: {error}'
_UPDATE_CONFLICT = 'update conflict: '
# Upstream's words for what went wrong (the rest as for every request).
_ERRORS = {
    reshaper_db.ProviderNotFound: errors.As(
        errors.BadRequest, code=errors.RESOURCE_PROVIDER_NOT_FOUND),
    reshaper_db.ProviderGenerationConflict: errors.As(
        errors.Conflict, code=errors.CONCURRENT_UPDATE),
    inventory_db.InvalidInventory: errors.As(errors.BadRequest, _MALFORMED),
    exception.InUse: errors.As(
        errors.Conflict, _UPDATE_CONFLICT + '{error}', errors.INVENTORY_INUSE),
    **claims.write_errors(_MALFORMED, _UPDATE_CONFLICT),
}


@blueprint.route('/reshaper', methods=['POST'])
@declaration.handler(
        'Move inventories and allocations between providers at once',
        {204: None}, min_version=versions.RESHAPER, body=schema.RESHAPE,
        errors=_ERRORS)
def reshape() -> flask.Response:
    context.authorize(policies.RESHAPE)
    body = declaration.body()
    # A record whose name is no resource class name went unvalidated (it
    # may not even be an object): that name is refused as unknown in turn.
    inventories = {
        uuid: (entry['resource_provider_generation'],
               {name: inventory_db.with_defaults(
                   record if isinstance(record, dict) else {})
                for name, record in entry['inventories'].items()})
        for uuid, entry in body['inventories'].items()}
    for uuid, (_generation, records) in inventories.items():
        for name, record in records.items():
            inventory_db.check_units(uuid, name, record)
    requests = [
        claims.consumer_request(
            consumer_uuid, entry,
            claims.keyed_resources(entry['allocations']))
        for consumer_uuid, entry in body['allocations'].items()]
    claims.write_retrying(reshaper_db.reshape, inventories, requests)
    return responses.empty_response(204)
