"""Consumers, and the projects, users and consumer types they point at.

Projects, users and consumer types are created on first use. A consumer
row lives as long as it has allocations (except, as upstream, a new
consumer whose first request asked for none: it stays, at generation 0).
Its generation guards concurrent rewrites of its allocations like a
provider's generation guards its inventory.
"""
from collections.abc import Collection
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from placement import exception
from placement.db import rows
from placement.db import tables

_CONSUMER = tables.consumers
_PROJECT = tables.projects
_USER = tables.users
_TYPE = tables.consumer_types

# What GET /allocations shows for a consumer written before 1.38.
UNKNOWN_TYPE = 'unknown'


class GenerationConflict(exception.PlacementError):
    """The client's consumer generation is not the stored one."""

    # Either generation is shown as given (a missing one as "null").
    def __init__(self, expected: object, given: object) -> None:
        expected = 'null' if expected is None else expected
        super().__init__('consumer generation conflict - expected %s but '
                         'got %s' % (expected, given))


class ConcurrentUpdate(exception.ConcurrentUpdate):
    """Someone else rewrote or removed the consumer since we read it."""

    def __init__(self) -> None:
        super().__init__(exception.DATA_CHANGED)


def get_many(conn: sa.Connection,
             uuids: Collection[str]) -> dict[str, dict[str, Any]]:
    """{uuid: consumer} for those of ``uuids`` that exist.

    A consumer is a dict: id, uuid, generation, and the internal ids
    project_id, user_id and consumer_type_id.
    """
    if not uuids:
        return {}
    found = rows.dicts(conn.execute(
        sa.select(_CONSUMER.c.id, _CONSUMER.c.uuid, _CONSUMER.c.generation,
                  _CONSUMER.c.project_id, _CONSUMER.c.user_id,
                  _CONSUMER.c.consumer_type_id)
        .where(_CONSUMER.c.uuid.in_(set(uuids)))))
    return {row['uuid']: row for row in found}


def check_generation(consumer: Mapping[str, Any] | None,
                     given: object) -> None:
    """Raise GenerationConflict unless ``given`` is the consumer's
    generation (None for a consumer that does not exist yet).
    """
    expected = None if consumer is None else consumer['generation']
    if expected != given:
        raise GenerationConflict(expected, given)


def ensure_project(conn: sa.Connection, external_id: str) -> int:
    return _ensure(conn, _PROJECT, _PROJECT.c.external_id, external_id)


def ensure_user(conn: sa.Connection, external_id: str) -> int:
    return _ensure(conn, _USER, _USER.c.external_id, external_id)


def ensure_type(conn: sa.Connection, name: str) -> int:
    return _ensure(conn, _TYPE, _TYPE.c.name, name)


def _ensure(conn: sa.Connection, table: sa.Table, column: sa.Column[Any],
            value: str) -> int:
    """Id of the row whose unique ``column`` is ``value``, inserted if
    missing. A savepoint absorbs losing the insert race to a concurrent
    request, whose committed row the next SELECT then sees.
    """
    query = sa.select(table.c.id).where(column == value)
    found = conn.execute(query).scalar()
    if found is not None:
        return found
    try:
        with conn.begin_nested():
            inserted = conn.execute(
                table.insert().values({column.name: value}))
        # SQLAlchemy's stubs make inserted_primary_key Optional; a
        # single-row insert() always has it.
        return inserted.inserted_primary_key[0]  # type: ignore[index]
    except sa.exc.IntegrityError:
        return conn.execute(query).scalar_one()


def create(conn: sa.Connection, uuid: str, project_id: int, user_id: int,
           consumer_type_id: int | None, generation: int) -> None:
    """Insert a consumer; ConcurrentUpdate if another request just did
    (the whole transaction is then retried and finds it).
    """
    try:
        conn.execute(_CONSUMER.insert().values(
            uuid=uuid, project_id=project_id, user_id=user_id,
            consumer_type_id=consumer_type_id, generation=generation))
    except sa.exc.IntegrityError:
        raise ConcurrentUpdate() from None


def set_owner(conn: sa.Connection, consumer: Mapping[str, Any],
              project_id: int, user_id: int,
              consumer_type_id: int | None) -> None:
    """Record a new project, user or type; the generation stays as is."""
    wanted = {'project_id': project_id, 'user_id': user_id,
              'consumer_type_id': consumer_type_id}
    if all(consumer[key] == value for key, value in wanted.items()):
        return
    conn.execute(_CONSUMER.update()
                 .where(_CONSUMER.c.id == consumer['id']).values(wanted))


def increment_generation(conn: sa.Connection,
                         consumer: Mapping[str, Any]) -> None:
    """Bump the generation iff nobody changed it since ``consumer`` was
    read: the consumer-side twin of the provider generation guard.
    """
    result = conn.execute(
        _CONSUMER.update()
        .where(_CONSUMER.c.id == consumer['id'])
        .where(_CONSUMER.c.generation == consumer['generation'])
        .values(generation=consumer['generation'] + 1))
    if result.rowcount != 1:
        raise ConcurrentUpdate()


def delete(conn: sa.Connection, uuids: Collection[str]) -> None:
    if uuids:
        conn.execute(_CONSUMER.delete().where(_CONSUMER.c.uuid.in_(uuids)))

