"""The traits of a resource provider."""
from collections.abc import Collection
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from placement import exception
from placement.db import resource_provider as rp_db
from placement.db import rows
from placement.db import tables
from placement.db import trait as trait_db

_T = tables.traits
_RPT = tables.resource_provider_traits


# Built once (see resource_provider._BY_UUID).
_OF_PROVIDER = (
    sa.select(_T.c.name, _T.c.created_at, _T.c.updated_at)
    .select_from(_RPT.join(_T, _RPT.c.trait_id == _T.c.id))
    .where(_RPT.c.resource_provider_id == sa.bindparam('provider_id'))
    .order_by(_T.c.id))


def of_provider(conn: sa.Connection, provider_id: int) -> list[dict[str, Any]]:
    """The provider's traits (name and timestamps), by trait id."""
    return rows.dicts(conn.execute(_OF_PROVIDER, {'provider_id': provider_id}))


def replace(conn: sa.Connection, provider: Mapping[str, Any],
            names: Collection[str], expected_generation: int) -> int:
    """Make ``names`` the provider's whole set of traits.

    ``provider`` is a row of ``resource_provider.get_by_uuid``. The
    generation must be ``expected_generation``; it is bumped only if the
    set changes (as upstream does), and a replacement that changes
    nothing confirms it under a row lock. Returns the generation
    afterwards. Raises ConcurrentUpdate, or NotFound naming the unknown
    traits.
    """
    if provider['generation'] != expected_generation:
        raise exception.ConcurrentUpdate(rp_db.GENERATION_CONFLICT)
    wanted = trait_db.ids_by_name(conn, names)
    return _apply(conn, provider, set(wanted.values()), expected_generation)


def delete_all(conn: sa.Connection, provider: Mapping[str, Any]) -> int:
    """Remove every trait of the provider (bumping the generation if it had
    any). Returns the generation afterwards. Raises ConcurrentUpdate.
    """
    return _apply(conn, provider, set(), provider['generation'])


def _apply(conn: sa.Connection, provider: Mapping[str, Any], wanted: set[int],
           expected_generation: int) -> int:
    current = rp_db.linked_ids(conn, _RPT, _RPT.c.trait_id, provider['id'])
    if wanted == current:
        # Nothing to write; but the traits just read may be newer than
        # the generation the caller checked (another writer committed in
        # between): answer with it only if it still holds.
        rp_db.confirm_generation(conn, provider['id'], expected_generation)
        return expected_generation
    generation = rp_db.increment_generation(
        conn, provider['id'], expected_generation)
    rp_db.relink(conn, _RPT, _RPT.c.trait_id, provider['id'], current,
                 wanted)
    return generation
