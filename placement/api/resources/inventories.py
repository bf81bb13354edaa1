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

_UNKNOWN_CLASS = ('Unknown resource class in inventory for resource provider '
                  '%s: %s')
_CANNOT_UPDATE = 'Unable to update inventory for resource provider %s: %s'
# Another writer changed the provider between our read and our write.
CONCURRENT_WRITE = ('Another thread concurrently updated the resource '
                    'provider data. Please retry your update')


def _shown_provider(uuid):
    return context.provider_or_404(
        uuid, 'No resource provider with uuid %(uuid)s found : %(error)s')


def _expected_generation(provider, data):
    """The body's generation, refused early if already stale."""
    generation = data['resource_provider_generation']
    if generation != provider['generation']:
        raise errors.Conflict('resource provider generation conflict',
                              code=errors.CONCURRENT_UPDATE)
    return generation


def _check_records(provider, inventories, message):
    reserved_may_equal_total = microversion.is_at_least(
        versions.RESERVED_EQUAL_TOTAL)
    for resource_class, record in inventories.items():
        try:
            inv_db.check_record(provider['uuid'], resource_class, record,
                                reserved_may_equal_total)
        except exception.Invalid as exc:
            raise errors.BadRequest(message % (provider['uuid'], exc))


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
def list_inventories(uuid):
    context.authorize(policies.LIST)
    provider = _shown_provider(uuid)
    inventories = context.read(inv_db.get_all, provider['id'])
    rows = list(inventories.values())
    return _collection_response(
        _collection_view(provider['generation'], inventories),
        responses.last_modified_of(rows) if rows else None)


@blueprint.route(_COLLECTION, methods=['POST'])
@declaration.handler(
        'Create one inventory', {201: schema.INVENTORY}, body=schema.POST)
def create_inventory(uuid):
    context.authorize(policies.CREATE)
    provider = context.provider_or_404(uuid)
    data = declaration.body()
    resource_class = data['resource_class']
    record = inv_db.with_defaults(data)
    cannot_create = 'Unable to create inventory for resource provider %s: %s'
    _check_records(provider, {resource_class: record}, cannot_create)
    try:
        generation = context.write(
            inv_db.add, provider, resource_class, record)
    except exception.NotFound as exc:
        raise errors.BadRequest(cannot_create % (uuid, exc))
    except exception.Duplicate as exc:
        raise errors.Conflict('Update conflict: %s' % exc,
                              code=errors.CONCURRENT_UPDATE)
    except exception.ConcurrentUpdate:
        raise errors.Conflict('Update conflict: %s' % CONCURRENT_WRITE,
                              code=errors.CONCURRENT_UPDATE)
    response = responses.json_response(
        _view(record, generation), status=201,
        last_modified=responses.utcnow())
    response.headers['Location'] = _item_location(uuid, resource_class)
    return response


@blueprint.route(_COLLECTION, methods=['PUT'])
@declaration.handler(
        "Replace all of a provider's inventories", {200: schema.INVENTORIES},
        body=schema.PUT_ALL)
def replace_inventories(uuid):
    context.authorize(policies.UPDATE)
    provider = context.provider_or_404(uuid)
    data = declaration.body()
    generation = _expected_generation(provider, data)
    for name in data['inventories']:
        if not re.match(schema.RESOURCE_CLASS_PATTERN, name):
            # Its record went unvalidated; the name can never be known.
            raise errors.BadRequest(_UNKNOWN_CLASS % (
                uuid, 'No such resource class %s.' % name))
    inventories = {name: inv_db.with_defaults(record)
                   for name, record in data['inventories'].items()}
    _check_records(provider, inventories, _CANNOT_UPDATE)
    try:
        generation = context.write(
            inv_db.replace_all, provider, inventories, generation)
    except exception.NotFound as exc:
        raise errors.BadRequest(_UNKNOWN_CLASS % (uuid, exc))
    except exception.ConcurrentUpdate:
        raise errors.Conflict('update conflict: %s' % CONCURRENT_WRITE,
                              code=errors.CONCURRENT_UPDATE)
    except exception.InUse as exc:
        raise errors.Conflict('update conflict: %s' % exc,
                              code=errors.INVENTORY_INUSE)
    return _collection_response(
        _collection_view(generation, inventories),
        responses.utcnow() if inventories else None)


@blueprint.route(_COLLECTION, methods=['DELETE'])
@declaration.handler("Delete all of a provider's inventories", {204: None},
                     method_from=versions.DELETE_ALL_INVENTORIES)
def delete_inventories(uuid):
    context.authorize(policies.DELETE)
    provider = context.provider_or_404(uuid)
    try:
        context.write(inv_db.replace_all, provider, {}, provider['generation'])
    except exception.ConcurrentUpdate:
        raise errors.Conflict(
            'Unable to delete inventory for resource provider %s because '
            'the inventory was updated by another process. Please retry '
            'your request.' % uuid, code=errors.CONCURRENT_UPDATE)
    except exception.InUse as exc:
        raise errors.Conflict(str(exc), code=errors.INVENTORY_INUSE)
    return responses.empty_response()


@blueprint.route(_ITEM, methods=['GET'])
@declaration.handler('Show one inventory', {200: schema.INVENTORY})
def show_inventory(uuid, resource_class):
    context.authorize(policies.SHOW)
    provider = _shown_provider(uuid)
    record = context.read(inv_db.get_all, provider['id']).get(resource_class)
    if record is None:
        raise errors.NotFound('No inventory of class %s for %s'
                              % (resource_class, uuid))
    return responses.json_response(
        _view(record, provider['generation']),
        last_modified=responses.last_modified_of([record]))


@blueprint.route(_ITEM, methods=['PUT'])
@declaration.handler(
        'Update one inventory', {200: schema.INVENTORY}, body=schema.PUT_ONE)
def update_inventory(uuid, resource_class):
    context.authorize(policies.UPDATE)
    provider = context.provider_or_404(uuid)
    data = declaration.body()
    generation = _expected_generation(provider, data)
    record = inv_db.with_defaults(data)
    _check_records(provider, {resource_class: record}, _CANNOT_UPDATE)
    try:
        generation = context.write(
            inv_db.update, provider, resource_class, record, generation)
    except inv_db.NoSuchInventory as exc:
        raise errors.BadRequest(
            'No inventory record with resource class for resource provider '
            '%s: %s' % (uuid, exc))
    except exception.ConcurrentUpdate:
        raise errors.Conflict('update conflict: %s' % CONCURRENT_WRITE,
                              code=errors.CONCURRENT_UPDATE)
    return responses.json_response(_view(record, generation),
                                   last_modified=responses.utcnow())


@blueprint.route(_ITEM, methods=['DELETE'])
@declaration.handler('Delete one inventory', {204: None})
def delete_inventory(uuid, resource_class):
    context.authorize(policies.DELETE)
    provider = context.provider_or_404(uuid)
    try:
        context.write(inv_db.delete, provider, resource_class)
    except exception.NotFound as exc:
        raise errors.NotFound('No inventory of class %s found for delete: %s'
                              % (resource_class, exc))
    except (exception.InUse, exception.ConcurrentUpdate) as exc:
        reason = (CONCURRENT_WRITE
                  if isinstance(exc, exception.ConcurrentUpdate) else exc)
        # Upstream labels an in-use refusal here as a concurrent update too.
        raise errors.Conflict('Unable to delete inventory of class %s: %s'
                              % (resource_class, reason),
                              code=errors.CONCURRENT_UPDATE)
    return responses.empty_response()
