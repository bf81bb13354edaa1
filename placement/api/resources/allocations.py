"""/allocations/{consumer_uuid}: show, replace, delete a consumer's
allocations; /allocations (1.13): replace those of many consumers at once;
/resource_providers/{uuid}/allocations: what a provider has given out.
"""
from typing import Any
import uuid as uuidlib

import flask
from oslo_utils import uuidutils

from placement import versions
from placement.api.pipeline import context
from placement.api.pipeline import declaration
from placement.api.pipeline import errors
from placement.api.pipeline import microversion
from placement.api.pipeline import responses
from placement.api.resources import claims
from placement.db import allocation as alloc_db
from placement.policies import allocation as policies
from placement.schemas import allocation as schema

blueprint = flask.Blueprint('allocations', __name__)


# How both allocation writes begin their answer to a lost race.
_CHANGED = ('Inventory and/or allocations changed while attempting to '
            'allocate: ')

# What GET /allocations/{uuid} tells about the consumer, by version.
_CONSUMER_FIELDS = {
    versions.MIN_VERSION: (),
    versions.ALLOCATIONS_BY_PROVIDER: ('project_id', 'user_id'),
    versions.CONSUMER_GENERATION: ('project_id', 'user_id',
                                   'consumer_generation'),
    versions.CONSUMER_TYPE: ('project_id', 'user_id', 'consumer_generation',
                             'consumer_type'),
}
# What GET /resource_providers/{uuid}/allocations tells about each
# consumer, by version.
_PROVIDER_CONSUMER_FIELDS = {
    versions.MIN_VERSION: (),
    versions.CONSUMER_GENERATION: ('consumer_generation',),
}

def _listed_resources(allocations):
    """{provider uuid: resources} of a 1.0-1.11 allocations list."""
    return {allocation['resource_provider']['uuid']: allocation['resources']
            for allocation in allocations}


@blueprint.route('/allocations/<consumer_uuid>', methods=['GET'])
@declaration.handler("A consumer's allocations",
                     {200: schema.CONSUMER_ALLOCATIONS})
def show_allocations(consumer_uuid: str) -> flask.Response:
    context.authorize(policies.ALLOC_LIST)
    rows, consumer = context.read(alloc_db.for_consumer, consumer_uuid)
    allocations: dict[str, dict[str, Any]] = {}
    for row in rows:
        allocation = allocations.setdefault(row['provider_uuid'], {
            'resources': {}, 'generation': row['provider_generation']})
        allocation['resources'][row['resource_class']] = row['used']
    body = {'allocations': allocations}
    if consumer is not None:
        for field in microversion.by_version(_CONSUMER_FIELDS):
            body[field] = consumer[field]
    return responses.json_response(
        body, last_modified=responses.last_modified_of(rows))


@blueprint.route('/allocations/<consumer_uuid>', methods=['PUT'])
@declaration.handler("Replace a consumer's allocations", {204: None},
                     body=schema.PUT,
                     errors=claims.write_errors(
                         'Unable to allocate inventory for consumer '
                         '{consumer_uuid}: {error}', _CHANGED))
def set_allocations(consumer_uuid: str) -> flask.Response:
    context.authorize(policies.ALLOC_UPDATE)
    if not uuidutils.is_uuid_like(consumer_uuid):
        raise errors.BadRequest('Malformed consumer_uuid: %s' % consumer_uuid)
    consumer_uuid = str(uuidlib.UUID(consumer_uuid))
    errors.mention(consumer_uuid=consumer_uuid)
    body = declaration.body()
    resources = microversion.by_version(
        {versions.MIN_VERSION: _listed_resources,
         versions.ALLOCATIONS_BY_PROVIDER: claims.keyed_resources}
    )(body['allocations'])
    claims.write_retrying(alloc_db.write, [
        claims.consumer_request(consumer_uuid, body, resources)])
    return responses.empty_response(204)


@blueprint.route('/allocations', methods=['POST'])
@declaration.handler(
        'Replace the allocations of several consumers', {204: None},
        min_version=versions.MANY_CONSUMERS, body=schema.POST,
        errors=claims.write_errors(
            'Unable to allocate inventory {error}', _CHANGED))
def set_many_allocations() -> flask.Response:
    context.authorize(policies.ALLOC_MANAGE)
    body = declaration.body()
    requests = [
        claims.consumer_request(consumer_uuid, entry,
                                claims.keyed_resources(entry['allocations']))
        for consumer_uuid, entry in body.items()]
    claims.write_retrying(alloc_db.write, requests)
    return responses.empty_response(204)


@blueprint.route('/allocations/<consumer_uuid>', methods=['DELETE'])
@declaration.handler("Delete a consumer's allocations", {204: None})
def delete_allocations(consumer_uuid: str) -> flask.Response:
    context.authorize(policies.ALLOC_DELETE)
    context.write(alloc_db.delete_for_consumer, consumer_uuid)
    return responses.empty_response(204)


@blueprint.route('/resource_providers/<uuid>/allocations', methods=['GET'])
@declaration.handler(
        'Allocations against a provider', {200: schema.PROVIDER_ALLOCATIONS})
def list_provider_allocations(uuid: str) -> flask.Response:
    context.authorize(policies.RP_ALLOC_LIST)
    provider, rows = context.read_of_provider(
        uuid, alloc_db.for_provider,
        "Resource provider '%(uuid)s' not found: %(error)s")
    fields = microversion.by_version(_PROVIDER_CONSUMER_FIELDS)
    allocations: dict[str, dict[str, Any]] = {}
    for row in rows:
        allocation = allocations.get(row['consumer_uuid'])
        if allocation is None:
            allocation = allocations[row['consumer_uuid']] = {
                'resources': {}}
            allocation.update((field, row[field]) for field in fields)
        allocation['resources'][row['resource_class']] = row['used']
    return responses.json_response(
        {'allocations': allocations,
         'resource_provider_generation': provider['generation']},
        last_modified=responses.last_modified_of(rows))
