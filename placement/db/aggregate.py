"""Aggregates a resource provider belongs to.

Aggregates have no API of their own: a row in placement_aggregates exists
for every uuid some provider was ever associated with.
"""
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
import uuid as uuid_lib

import sqlalchemy as sa

from placement.db import resource_provider as rp_db
from placement.db import rows
from placement.db import tables

_AGG = tables.placement_aggregates
_RPA = tables.resource_provider_aggregates


# Built once (see resource_provider._BY_UUID).
_OF_PROVIDER = (
    sa.select(_AGG.c.uuid, _RPA.c.created_at, _RPA.c.updated_at)
    .select_from(_RPA.join(_AGG, _RPA.c.aggregate_id == _AGG.c.id))
    .where(_RPA.c.resource_provider_id == sa.bindparam('provider_id'))
    .order_by(_AGG.c.id))


def of_provider(conn: sa.Connection, provider_id: int) -> list[dict[str, Any]]:
    """The provider's aggregates (uuid and timestamps of the link), oldest
    aggregate first.
    """
    return rows.dicts(conn.execute(_OF_PROVIDER, {'provider_id': provider_id}))


def replace(conn: sa.Connection, provider: Mapping[str, Any],
            uuids: Iterable[str], expected_generation: int | None = None
            ) -> tuple[int, list[str]]:
    """Make ``uuids`` the provider's whole set of aggregates.

    With ``expected_generation`` (microversion 1.19+) the provider's
    generation is checked and bumped, even when nothing changes; without
    it the generation is left alone. Returns ``(generation, uuids)``:
    the generation afterwards and the uuids as stored. Raises
    ConcurrentUpdate.
    """
    uuids = [_storable(uuid) for uuid in uuids]
    generation = provider['generation']
    if expected_generation is not None:
        generation = rp_db.increment_generation(
            conn, provider['id'], expected_generation)
    wanted = _ensure_aggregates(conn, uuids)
    current = rp_db.linked_ids(conn, _RPA, _RPA.c.aggregate_id,
                               provider['id'])
    rp_db.relink(conn, _RPA, _RPA.c.aggregate_id, provider['id'], current,
                 wanted)
    return generation, uuids


def _storable(uuid: str) -> str:
    """The uuid as given, or in canonical form if that spelling ("{...}",
    "urn:uuid:...") would not fit the column.
    """
    if len(uuid) <= _AGG.c.uuid.type.length:
        return uuid
    return str(uuid_lib.UUID(uuid))


def _ensure_aggregates(conn: sa.Connection, uuids: Sequence[str]) -> set[int]:
    """Ids of the aggregates with these uuids, creating missing ones in the
    order given (which is the order GET lists them in).
    """
    if not uuids:
        return set()
    known = _ids(conn, uuids)
    for uuid in [uuid for uuid in uuids if uuid not in known]:
        try:
            with conn.begin_nested():
                conn.execute(_AGG.insert().values(uuid=uuid))
        except sa.exc.IntegrityError:
            # Created by a concurrent request since we looked.
            pass
    return set(_ids(conn, uuids).values())


def _ids(conn: sa.Connection, uuids: Iterable[str]) -> dict[str, int]:
    return dict(conn.execute(
        sa.select(_AGG.c.uuid, _AGG.c.id)
        .where(_AGG.c.uuid.in_(sorted(uuids)))).all())
