"""Keep the standard resource classes and traits present in the database.

Standard resource class ids are their index in os_resource_classes.STANDARDS
(ids other services have relied on since they were hard-coded); custom
resource classes are numbered from CUSTOM_RC_START upwards.
"""

import logging

import os_resource_classes
import os_traits
import sqlalchemy as sa

from placement.db import backends
from placement.db import tables

LOG = logging.getLogger(__name__)

CUSTOM_RC_START = 10000

# Concurrent syncs can each lose a duplicate-key race at most once per
# missing row set; a few rounds are plenty.
_MAX_ROUNDS = 3


def sync_standard(connection: sa.Connection) -> int:
    """Insert any missing standard resource classes and traits; return how
    many rows this call inserted.

    Idempotent and safe to run from several processes at once. Costs one
    SELECT per table when nothing is missing. The caller owns the transaction.
    """
    return (_sync(connection, tables.resource_classes,
                  _missing_resource_classes)
            + _sync(connection, tables.traits, _missing_traits))


def _missing_resource_classes(existing):
    return [{'id': i, 'name': name}
            for i, name in enumerate(os_resource_classes.STANDARDS)
            if name not in existing]


def _missing_traits(existing):
    return [{'name': name} for name in sorted(os_traits.get_traits())
            if name not in existing]


def _sync(connection, table, missing_rows):
    backend = backends.of(connection)
    for _ in range(_MAX_ROUNDS):
        existing = set(connection.scalars(sa.select(table.c.name)))
        rows = missing_rows(existing)
        if not rows:
            return 0
        try:
            # A savepoint keeps the caller's transaction usable if another
            # process inserted the same rows first (PostgreSQL aborts the
            # whole transaction on error otherwise).
            with connection.begin_nested(), \
                    backend.explicit_zero_ids(connection):
                connection.execute(table.insert(), rows)
            LOG.info('Added %d standard %s', len(rows), table.name)
            return len(rows)
        except sa.exc.IntegrityError:
            LOG.debug('Standard %s inserted concurrently; re-checking',
                      table.name)
    raise RuntimeError(f'could not synchronise standard {table.name}')
