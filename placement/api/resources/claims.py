"""Writing allocations: what PUT and POST /allocations and POST /reshaper
share (the requests a body asks for, the retries, upstream's words for
what went wrong).
"""
import logging
from typing import Any
from typing import Callable
from typing import Mapping
from typing import TypeVar

from placement import exception
from placement.api.operations import metrics
from placement.api.pipeline import context
from placement.api.pipeline import errors
from placement.db import allocation as alloc_db
from placement.db import consumer as consumer_db
from placement.db import engine as db_engine

LOG = logging.getLogger(__name__)

T = TypeVar('T')

def write_retrying(fn: Callable[..., T], *args: Any) -> T:
    """``context.write(fn, ...)`` for allocation writes, which queue for the
    providers they allocate from instead of failing when others write
    them. What is left (a consumer changed under the request, deadlocks,
    Galera certification failures) is re-run from scratch (fresh reads),
    up to ``[placement] allocation_conflict_retry_count`` attempts in
    all; then the last error is raised.
    """
    attempts = max(1, context.conf().placement.allocation_conflict_retry_count)

    def retried(_exc):
        metrics.ALLOCATION_CONFLICTS.inc()
        metrics.ALLOCATION_RETRIES.inc()

    try:
        return context.write(fn, *args, attempts=attempts,
                             retry_also=exception.ConcurrentUpdate,
                             on_retry=retried)
    except exception.ConcurrentUpdate:
        _gave_up(attempts)
        raise
    except Exception as exc:
        if not db_engine.is_conflict(exc) or db_engine.is_out_of_time(exc):
            raise
        _gave_up(attempts)
        raise exception.ConcurrentUpdate(exception.PROVIDER_CHANGED) from exc


def _gave_up(attempts):
    metrics.ALLOCATION_CONFLICTS.inc()
    LOG.warning('Exceeded retry limit of %d on allocations write', attempts)


def write_errors(unknown_class: str, changed: str) -> errors.Wordings:
    """Upstream's words for the data-layer failures of an allocation write
    (the rest as the default: errors.register). ``unknown_class`` words
    (errors.As) the 400 for an unknown resource class; ``changed`` begins
    the 409 for a lost race, which goes on with the reason: a consumer's
    change, else the providers'.
    """
    return {
        consumer_db.GenerationConflict: errors.As(
            errors.Conflict, code=errors.CONCURRENT_UPDATE),
        alloc_db.UnknownProvider: errors.As(errors.BadRequest),
        exception.NotFound: errors.As(errors.BadRequest, unknown_class),
        exception.Invalid: errors.As(
            errors.Conflict, 'Unable to allocate inventory: {error}'),
        consumer_db.ConcurrentUpdate: errors.As(
            errors.Conflict, changed + '{error}', errors.CONCURRENT_UPDATE),
        exception.ConcurrentUpdate: errors.As(
            errors.Conflict, changed + exception.PROVIDER_CHANGED,
            errors.CONCURRENT_UPDATE),
    }


def consumer_request(consumer_uuid: str, body: Mapping[str, Any],
                     resources: dict[str, dict[str, int]],
                     ) -> alloc_db.ConsumerRequest:
    """A body's consumer fields as an allocation.ConsumerRequest.

    Fields a version's schema does not allow are simply absent: before
    1.8 the consumer is recorded with the configured placeholder project
    and user, before 1.28 its generation is not checked, before 1.38 its
    type is left as it is.
    """
    conf = context.conf().placement
    return alloc_db.ConsumerRequest(
        uuid=consumer_uuid, resources=resources,
        project=body.get('project_id', conf.incomplete_consumer_project_id),
        user=body.get('user_id', conf.incomplete_consumer_user_id),
        consumer_type=body.get('consumer_type'),
        generation=body.get('consumer_generation', alloc_db.UNCHECKED))


def keyed_resources(allocations: Mapping[str, Mapping[str, Any]],
                    ) -> dict[str, dict[str, int]]:
    """{provider uuid: resources} of a 1.12+ allocations object."""
    return {provider_uuid: allocation['resources']
            for provider_uuid, allocation in allocations.items()}
