"""Data fixes an upstream database may need before its schema upgrade.

Two upstream revisions refuse to run while old data lacks what newer code
relies on: providers without a root, and allocations whose consumer has no
row. ``placement-manage db online_data_migrations`` repairs both.
"""
import sqlalchemy as sa

from placement.db import consumer as consumer_db
from placement.db import tables

_RP = tables.resource_providers


def set_root_provider_ids(conn: sa.Connection,
                          batch_size: int | None = None) -> int:
    """A provider without a root predates nesting: it is its own root."""
    query = sa.select(_RP.c.id).where(_RP.c.root_provider_id.is_(None))
    if batch_size:
        query = query.limit(batch_size)
    ids = [row.id for row in conn.execute(query)]
    if ids:
        conn.execute(_RP.update().where(_RP.c.id.in_(ids))
                     .values(root_provider_id=_RP.c.id))
    return len(ids)


def create_incomplete_consumers(conn: sa.Connection, project_external_id: str,
                                user_external_id: str,
                                batch_size: int | None = None) -> int:
    """Give consumers known only from allocations a row, owned by the
    configured placeholder project and user, as upstream does.
    """
    alloc = tables.allocations
    missing = (sa.select(alloc.c.consumer_id).distinct()
               .where(alloc.c.consumer_id.not_in(
                   sa.select(tables.consumers.c.uuid))))
    if batch_size:
        missing = missing.limit(batch_size)
    uuids = [row.consumer_id for row in conn.execute(missing)]
    if uuids:
        project_id = consumer_db.ensure_project(conn, project_external_id)
        user_id = consumer_db.ensure_user(conn, user_external_id)
        conn.execute(tables.consumers.insert(), [
            {'uuid': uuid, 'project_id': project_id, 'user_id': user_id,
             'generation': 0} for uuid in uuids])
    return len(uuids)
