"""/allocations/{consumer_uuid}: show, replace, delete a consumer's
allocations; /allocations (1.13): replace those of many consumers at once;
/resource_providers/{uuid}/allocations: what a provider has given out.
"""
import contextlib
import logging
import uuid as uuidlib

import flask
from oslo_utils import uuidutils

from placement.api import errors
from placement.api import metrics
from placement.api import microversion
from placement.api import wsgi
from placement.db import allocation as alloc_db
from placement.db import consumer as consumer_db
from placement.db import engine as db_engine
from placement.db import resource_provider as rp_db
from placement import exception
from placement.policies import allocation as policies
from placement.schemas import allocation as schema

LOG = logging.getLogger(__name__)

blueprint = flask.Blueprint('allocations', __name__)

# What GET /allocations/{uuid} tells about the consumer, by version.
_CONSUMER_FIELDS = {
    '1.0': (),
    '1.12': ('project_id', 'user_id'),
    '1.28': ('project_id', 'user_id', 'consumer_generation'),
    '1.38': ('project_id', 'user_id', 'consumer_generation',
             'consumer_type'),
}
# What GET /resource_providers/{uuid}/allocations tells about each
# consumer, by version.
_PROVIDER_CONSUMER_FIELDS = {
    '1.0': (),
    '1.28': ('consumer_generation',),
}

# The reason given when retries ran out on a provider that kept changing.
PROVIDER_CHANGED = ('Another thread concurrently updated the resource '
                    'provider data. Please retry your update')


def write_retrying(fn, *args):
    """``wsgi.write(fn, ...)`` for allocation writes, which queue for the
    providers they allocate from instead of failing when others write
    them. What is left (a consumer changed under the request, deadlocks,
    Galera certification failures) is re-run from scratch (fresh reads),
    up to ``[placement] allocation_conflict_retry_count`` attempts in
    all; then the last error is raised.
    """
    attempts = max(1, wsgi.conf().placement.allocation_conflict_retry_count)

    def retried(_exc):
        metrics.ALLOCATION_CONFLICTS.inc()
        metrics.ALLOCATION_RETRIES.inc()

    try:
        return wsgi.write(fn, *args, attempts=attempts,
                          retry_also=exception.ConcurrentUpdate,
                          on_retry=retried)
    except exception.ConcurrentUpdate:
        _gave_up(attempts)
        raise
    except Exception as exc:
        if not db_engine.is_conflict(exc):
            raise
        _gave_up(attempts)
        raise exception.ConcurrentUpdate(PROVIDER_CHANGED) from exc


def _gave_up(attempts):
    metrics.ALLOCATION_CONFLICTS.inc()
    LOG.warning('Exceeded retry limit of %d on allocations write', attempts)


def changed_reason(exc):
    """Upstream's words for a write that lost a race (ConcurrentUpdate)."""
    if isinstance(exc, consumer_db.ConcurrentUpdate):
        return str(exc)
    return PROVIDER_CHANGED


@contextlib.contextmanager
def write_errors(unknown_class, changed):
    """Turn the data-layer failures of an allocation write into upstream's
    responses. ``unknown_class`` and ``changed`` word (with one %s: the
    reason) the 400 for an unknown resource class and the 409 for a lost
    race, which differ between handlers.
    """
    try:
        yield
    except consumer_db.GenerationConflict as exc:
        raise errors.Conflict(str(exc), code=errors.CONCURRENT_UPDATE)
    except alloc_db.UnknownProvider as exc:
        raise errors.BadRequest(str(exc))
    except exception.NotFound as exc:
        raise errors.BadRequest(unknown_class % exc)
    except exception.Invalid as exc:
        raise errors.Conflict('Unable to allocate inventory: %s' % exc)
    except exception.ConcurrentUpdate as exc:
        raise errors.Conflict(changed % changed_reason(exc),
                              code=errors.CONCURRENT_UPDATE)


def consumer_request(consumer_uuid, body, resources):
    """A body's consumer fields as an allocation.ConsumerRequest.

    Fields a version's schema does not allow are simply absent: before
    1.8 the consumer is recorded with the configured placeholder project
    and user, before 1.28 its generation is not checked, before 1.38 its
    type is left as it is.
    """
    conf = wsgi.conf().placement
    return alloc_db.ConsumerRequest(
        uuid=consumer_uuid, resources=resources,
        project=body.get('project_id', conf.incomplete_consumer_project_id),
        user=body.get('user_id', conf.incomplete_consumer_user_id),
        consumer_type=body.get('consumer_type'),
        generation=body.get('consumer_generation', alloc_db.UNCHECKED))


def keyed_resources(allocations):
    """{provider uuid: resources} of a 1.12+ allocations object."""
    return {provider_uuid: allocation['resources']
            for provider_uuid, allocation in allocations.items()}


def _listed_resources(allocations):
    """{provider uuid: resources} of a 1.0-1.11 allocations list."""
    return {allocation['resource_provider']['uuid']: allocation['resources']
            for allocation in allocations}


@blueprint.route('/allocations/<consumer_uuid>', methods=['GET'])
@wsgi.handler()
def show_allocations(consumer_uuid):
    wsgi.authorize(policies.ALLOC_LIST)
    rows, consumer = wsgi.read(alloc_db.for_consumer, consumer_uuid)
    allocations = {}
    for row in rows:
        allocation = allocations.setdefault(row['provider_uuid'], {
            'resources': {}, 'generation': row['provider_generation']})
        allocation['resources'][row['resource_class']] = row['used']
    body = {'allocations': allocations}
    if consumer is not None:
        for field in microversion.by_version(_CONSUMER_FIELDS):
            body[field] = consumer[field]
    return wsgi.json_response(
        body, last_modified=wsgi.last_modified_of(rows))


@blueprint.route('/allocations/<consumer_uuid>', methods=['PUT'])
@wsgi.handler(content=True)
def set_allocations(consumer_uuid):
    wsgi.authorize(policies.ALLOC_UPDATE)
    if not uuidutils.is_uuid_like(consumer_uuid):
        raise errors.BadRequest('Malformed consumer_uuid: %s' % consumer_uuid)
    consumer_uuid = str(uuidlib.UUID(consumer_uuid))
    body = wsgi.json_body(microversion.by_version(schema.PUT))
    resources = microversion.by_version(
        {'1.0': _listed_resources, '1.12': keyed_resources}
    )(body['allocations'])
    with write_errors(
            'Unable to allocate inventory for consumer %s: %%s'
            % consumer_uuid,
            'Inventory and/or allocations changed while attempting to '
            'allocate: %s'):
        write_retrying(alloc_db.write,
                       [consumer_request(consumer_uuid, body, resources)])
    return wsgi.empty_response(204)


@blueprint.route('/allocations', methods=['POST'])
@wsgi.handler(min_version='1.13', content=True)
def set_many_allocations():
    wsgi.authorize(policies.ALLOC_MANAGE)
    body = wsgi.json_body(microversion.by_version(schema.POST))
    requests = [consumer_request(consumer_uuid, entry,
                                 keyed_resources(entry['allocations']))
                for consumer_uuid, entry in body.items()]
    with write_errors('Unable to allocate inventory %s',
                      'Inventory and/or allocations changed while '
                      'attempting to allocate: %s'):
        write_retrying(alloc_db.write, requests)
    return wsgi.empty_response(204)


@blueprint.route('/allocations/<consumer_uuid>', methods=['DELETE'])
@wsgi.handler()
def delete_allocations(consumer_uuid):
    wsgi.authorize(policies.ALLOC_DELETE)
    try:
        wsgi.write(alloc_db.delete_for_consumer, consumer_uuid)
    except exception.NotFound as exc:
        raise errors.NotFound(str(exc))
    return wsgi.empty_response(204)


def _provider_allocations(conn, provider_uuid):
    provider = rp_db.get_by_uuid(conn, provider_uuid)
    return provider, alloc_db.for_provider(conn, provider['id'])


@blueprint.route('/resource_providers/<uuid>/allocations', methods=['GET'])
@wsgi.handler()
def list_provider_allocations(uuid):
    wsgi.authorize(policies.RP_ALLOC_LIST)
    try:
        provider, rows = wsgi.read(_provider_allocations, uuid)
    except exception.NotFound as exc:
        raise errors.NotFound(
            "Resource provider '%s' not found: %s" % (uuid, exc))
    fields = microversion.by_version(_PROVIDER_CONSUMER_FIELDS)
    allocations = {}
    for row in rows:
        allocation = allocations.get(row['consumer_uuid'])
        if allocation is None:
            allocation = allocations[row['consumer_uuid']] = {
                'resources': {}}
            allocation.update((field, row[field]) for field in fields)
        allocation['resources'][row['resource_class']] = row['used']
    return wsgi.json_response(
        {'allocations': allocations,
         'resource_provider_generation': provider['generation']},
        last_modified=wsgi.last_modified_of(rows))
