"""/resource_providers/{uuid}/inventories: list, replace all, delete all,
add one; show, replace or delete one resource class's inventory.

The provider is looked up before the body is read (a missing provider is
a 404 whatever the body), and capacity is checked before resource class
names, as upstream does.
"""
import re

import flask

from placement import exception
from placement import versions
from placement.api.pipeline import context
from placement.api.pipeline import declaration
from placement.api.pipeline import errors
from placement.api.pipeline import microversion
from placement.api.pipeline import responses
from placement.db import inventory as inv_db
from placement.policies import inventory as policies
from placement.schemas import inventory as schema

blueprint = flask.Blueprint('inventories', __name__)

_COLLECTION = '/resource_providers/<uuid>/inventories'
_ITEM = _COLLECTION + '/<resource_class>'

# Upstream's words for what went wrong, per route (errors.As): the
# provider's uuid, where a wording names it, is the path's ({uuid}) or, for
# a record inv_db.check_record refused, the stored one.
_UNKNOWN_CLASS = ('Unknown resource class in inventory for resource provider '
                  '{uuid}: {error}')
_CANNOT_CREATE = 'Unable to create inventory for resource provider %s: {error}'
_CANNOT_UPDATE = errors.As(
    errors.BadRequest,
    'Unable to update inventory for resource provider {error.provider_uuid}: '
    '{error}')
_CANNOT_DELETE_ONE = 'Unable to delete inventory of class {resource_class}: '
# Another writer changed the provider between our read and our write.
_UPDATE_CONFLICT = errors.As(
    errors.Conflict, 'update conflict: ' + exception.PROVIDER_CHANGED,
    errors.CONCURRENT_UPDATE)

_CREATE_ERRORS = {
    inv_db.InvalidInventory: errors.As(
        errors.BadRequest, _CANNOT_CREATE % '{error.provider_uuid}'),
    exception.NotFound: errors.As(
        errors.BadRequest, _CANNOT_CREATE % '{uuid}'),
    exception.Duplicate: errors.As(
        errors.Conflict, 'Update conflict: {error}', errors.CONCURRENT_UPDATE),
    exception.ConcurrentUpdate: errors.As(
        errors.Conflict, 'Update conflict: ' + exception.PROVIDER_CHANGED,
        errors.CONCURRENT_UPDATE),
}
_REPLACE_ERRORS = {
    inv_db.InvalidInventory: _CANNOT_UPDATE,
    exception.NotFound: errors.As(errors.BadRequest, _UNKNOWN_CLASS),
    exception.ConcurrentUpdate: _UPDATE_CONFLICT,
    exception.InUse: errors.As(
        errors.Conflict, 'update conflict: {error}', errors.INVENTORY_INUSE),
}
_DELETE_ALL_ERRORS = {
    exception.ConcurrentUpdate: errors.As(
        errors.Conflict,
        'Unable to delete inventory for resource provider {uuid} because the '
        'inventory was updated by another process. Please retry your '
        'request.', errors.CONCURRENT_UPDATE),
    exception.InUse: errors.As(errors.Conflict, code=errors.INVENTORY_INUSE),
}
_UPDATE_ERRORS = {
    inv_db.InvalidInventory: _CANNOT_UPDATE,
    inv_db.NoSuchInventory: errors.As(
        errors.BadRequest,
        'No inventory record with resource class for resource provider '
        '{uuid}: {error}'),
    exception.ConcurrentUpdate: _UPDATE_CONFLICT,
}
_DELETE_ERRORS = {
    exception.NotFound: errors.As(
        errors.NotFound,
        'No inventory of class {resource_class} found for delete: {error}'),
    # Upstream labels an in-use refusal as a concurrent update too.
    exception.InUse: errors.As(
        errors.Conflict, _CANNOT_DELETE_ONE + '{error}',
        errors.CONCURRENT_UPDATE),
    exception.ConcurrentUpdate: errors.As(
        errors.Conflict, _CANNOT_DELETE_ONE + exception.PROVIDER_CHANGED,
        errors.CONCURRENT_UPDATE),
}


def _read_shown(uuid):
    """The provider and its inventories, for the GETs."""
    return context.read_of_provider(
        uuid, inv_db.get_all,
        'No resource provider with uuid %(uuid)s found : %(error)s')


def _expected_generation(provider, data):
    """The body's generation, refused early if already stale."""
    generation = data['resource_provider_generation']
    if generation != provider['generation']:
        raise errors.Conflict('resource provider generation conflict',
                              code=errors.CONCURRENT_UPDATE)
    return generation


def _check_records(provider, inventories):
    reserved_may_equal_total = microversion.is_at_least(
        versions.RESERVED_EQUAL_TOTAL)
    for resource_class, record in inventories.items():
        inv_db.check_record(provider['uuid'], resource_class, record,
                            reserved_may_equal_total)


def _view(record, generation=None):
    view = {field: record[field] for field in inv_db.FIELDS}
    # Upstream leaves out a generation of 0 (a provider never written to).
    if generation:
        view['resource_provider_generation'] = generation
    return view


def _collection_view(generation, inventories):
    return {'resource_provider_generation': generation,
            'inventories': {name: _view(record)
                            for name, record in inventories.items()}}


def _collection_response(body, last_modified):
    """An empty collection has no date but is still not to be cached."""
    return responses.json_response(body, last_modified=last_modified,
                                   undated=True)


def _item_location(uuid, resource_class):
    return responses.location('/resource_providers/%s/inventories/%s'
                              % (uuid, resource_class))


@blueprint.route(_COLLECTION, methods=['GET'])
@declaration.handler("List a provider's inventories",
                     {200: schema.INVENTORIES})
def list_inventories(uuid: str) -> flask.Response:
    context.authorize(policies.LIST)
    provider, inventories = _read_shown(uuid)
    rows = list(inventories.values())
    return _collection_response(
        _collection_view(provider['generation'], inventories),
        responses.last_modified_of(rows) if rows else None)


@blueprint.route(_COLLECTION, methods=['POST'])
@declaration.handler(
        'Create one inventory', {201: schema.INVENTORY}, body=schema.POST,
        errors=_CREATE_ERRORS)
def create_inventory(uuid: str) -> flask.Response:
    context.authorize(policies.CREATE)
    provider = context.provider_or_404(uuid)
    data = declaration.body()
    resource_class = data['resource_class']
    record = inv_db.with_defaults(data)
    _check_records(provider, {resource_class: record})
    generation = context.write(inv_db.add, provider, resource_class, record)
    response = responses.json_response(
        _view(record, generation), status=201,
        last_modified=responses.utcnow())
    response.headers['Location'] = _item_location(uuid, resource_class)
    return response


@blueprint.route(_COLLECTION, methods=['PUT'])
@declaration.handler(
        "Replace all of a provider's inventories", {200: schema.INVENTORIES},
        body=schema.PUT_ALL,
        errors=_REPLACE_ERRORS)
def replace_inventories(uuid: str) -> flask.Response:
    context.authorize(policies.UPDATE)
    provider = context.provider_or_404(uuid)
    data = declaration.body()
    generation = _expected_generation(provider, data)
    for name in data['inventories']:
        if not re.match(schema.RESOURCE_CLASS_PATTERN, name):
            # Its record went unvalidated; the name can never be known.
            raise errors.BadRequest(_UNKNOWN_CLASS.format(
                uuid=uuid, error='No such resource class %s.' % name))
    inventories = {name: inv_db.with_defaults(record)
                   for name, record in data['inventories'].items()}
    _check_records(provider, inventories)
    generation = context.write(
        inv_db.replace_all, provider, inventories, generation)
    return _collection_response(
        _collection_view(generation, inventories),
        responses.utcnow() if inventories else None)


@blueprint.route(_COLLECTION, methods=['DELETE'])
@declaration.handler("Delete all of a provider's inventories", {204: None},
                     method_from=versions.DELETE_ALL_INVENTORIES,
                     errors=_DELETE_ALL_ERRORS)
def delete_inventories(uuid: str) -> flask.Response:
    context.authorize(policies.DELETE)
    provider = context.provider_or_404(uuid)
    context.write(inv_db.replace_all, provider, {}, provider['generation'])
    return responses.empty_response()


@blueprint.route(_ITEM, methods=['GET'])
@declaration.handler('Show one inventory', {200: schema.INVENTORY})
def show_inventory(uuid: str, resource_class: str) -> flask.Response:
    context.authorize(policies.SHOW)
    provider, inventories = _read_shown(uuid)
    record = inventories.get(resource_class)
    if record is None:
        raise errors.NotFound('No inventory of class %s for %s'
                              % (resource_class, uuid))
    return responses.json_response(
        _view(record, provider['generation']),
        last_modified=responses.last_modified_of([record]))


@blueprint.route(_ITEM, methods=['PUT'])
@declaration.handler(
        'Update one inventory', {200: schema.INVENTORY}, body=schema.PUT_ONE,
        errors=_UPDATE_ERRORS)
def update_inventory(uuid: str, resource_class: str) -> flask.Response:
    context.authorize(policies.UPDATE)
    provider = context.provider_or_404(uuid)
    data = declaration.body()
    generation = _expected_generation(provider, data)
    record = inv_db.with_defaults(data)
    _check_records(provider, {resource_class: record})
    generation = context.write(
        inv_db.update, provider, resource_class, record, generation)
    return responses.json_response(_view(record, generation),
                                   last_modified=responses.utcnow())


@blueprint.route(_ITEM, methods=['DELETE'])
@declaration.handler('Delete one inventory', {204: None},
                     errors=_DELETE_ERRORS)
def delete_inventory(uuid: str, resource_class: str) -> flask.Response:
    context.authorize(policies.DELETE)
    provider = context.provider_or_404(uuid)
    context.write(inv_db.delete, provider, resource_class)
    return responses.empty_response()
