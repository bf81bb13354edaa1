"""Reading many narrow rows from MySQL and MariaDB as one packed row.

PyMySQL decodes every field of every row in Python: about 14 us per row
of the candidate engine's inventory reads, most of such a request's time.
So through PyMySQL ``rows`` asks the server to join the fields of every
row into one comma-separated string (CONCAT_WS within a row,
GROUP_CONCAT across rows), and splits and converts the string a column
at a time with Python's C built-ins, or, when every column is a number,
reads it as one JSON array. Drivers that decode in C
(mysqlclient, psycopg2, sqlite3) run the statement as it is: for them
packing costs more than it saves.

Columns travel as they print when that holds no comma (integers, floats,
uuids, class and trait names), other strings in hexadecimal (``kinds``
tells which): a pack is ASCII. The server cuts a GROUP_CONCAT at
``group_concat_max_len`` and at ``max_allowed_packet``; sessions raise
the first (placement.db.backends.mysql), and each pack comes with its
row count and the limit in force, so one cut short is never taken for
data. A read too large for one pack (``max_allowed_packet`` is 16 MiB
by default on MariaDB) is read again in packs of ``ROWS_PER_PACK`` rows,
numbered by a window function, and so is that statement from then on; a
pack of those cut short too means the statement is read unpacked.
"""
import dataclasses
import datetime
import functools
import logging
from typing import Any
from typing import Callable
from typing import Sequence
import weakref

import orjson
import sqlalchemy as sa

from placement.db import backends

LOG = logging.getLogger(__name__)

# Rows per pack of a read too large for one.
ROWS_PER_PACK = 1000
# The statements whose one pack was cut short once: read in packs of
# ROWS_PER_PACK from then on.
_TOO_LARGE: 'weakref.WeakSet[sa.Select]' = weakref.WeakSet()


@dataclasses.dataclass(frozen=True)
class Kind:
    """How a column travels in a pack: ``sql`` wraps it there (None: as
    it is), a NULL travels as the field ``null`` (None: the column is
    never NULL), and ``decode`` turns a column's fields back into values.
    A pack whose columns all have ``from_json`` is read as one JSON array
    of numbers (and nulls) instead, by orjson, several times faster than
    splitting it; ``from_json`` turns a column's JSON values into its
    values."""
    decode: Callable[[list[str]], list[Any]]
    sql: Callable[[Any], Any] | None = None
    null: str | None = None
    from_json: Callable[[list[Any]], list[Any]] | None = None


def _optional(convert, null=''):
    def decode(tokens):
        return [None if token == null else convert(token)
                for token in tokens]
    return decode


def _from_hex(tokens):
    return [bytes.fromhex(token).decode() for token in tokens]


def _same(values):
    return values


def _ints(tokens):
    return list(map(int, tokens))


def _floats(values):
    # JSON reads a whole ratio (16) as an int.
    return list(map(float, values))


INT = Kind(_ints, from_json=_same)
OPTIONAL_INT = Kind(_optional(int, 'null'), null='null', from_json=_same)
FLOAT = Kind(_floats, from_json=_floats)
# A string that holds no comma and is never empty (a uuid, a class or
# trait name).
TEXT = Kind(_same)
OPTIONAL_TEXT = Kind(_optional(str), null='')
# Any string (a provider's name): it travels in hexadecimal.
ANY_TEXT = Kind(_from_hex, sql=sa.func.hex)
# DATETIME (no fractional seconds), as PyMySQL gives it: naive.
OPTIONAL_DATETIME = Kind(_optional(datetime.datetime.fromisoformat),
                         null='')


def packing(dialect: sa.engine.Dialect) -> bool:
    """True if reads through ``dialect`` come packed."""
    return backends.of(dialect).packs(dialect)


class Truncated(Exception):
    """A pack reached the server's limit, or held fewer fields than its
    rows have."""


def rows(conn: sa.Connection, statement: sa.Select, kinds: Sequence[Kind],
         params: dict[str, Any] | None = None,
         ordered: bool = False) -> Sequence[Sequence[Any]]:
    """The rows of ``statement``, one kind of ``kinds`` per column: packed
    through PyMySQL (as tuples), else as the driver gives them. Packed
    rows come in no particular order unless ``ordered``: then sorted, as
    the statement's ORDER BY of its leading columns would. ``statement``
    should be built once (cached), as its packed forms are cached by
    identity.
    """
    if not packing(conn.dialect):
        return conn.execute(statement, params).all()
    kinds = tuple(kinds)
    found = None
    if statement not in _TOO_LARGE:
        try:
            found = _unpack(conn.execute(_packed(statement, kinds, None),
                                         params), kinds)
        except Truncated:
            _TOO_LARGE.add(statement)
    if found is None:
        try:
            found = _unpack(conn.execute(
                _packed(statement, kinds, ROWS_PER_PACK), params), kinds)
        except Truncated:
            LOG.warning('A packed read was cut short; reading it unpacked')
            return conn.execute(statement, params).all()
    if ordered:
        found.sort()
    return found


def _unpack(packs, kinds):
    width = len(kinds)
    expected = 0
    texts = []
    for count, text, limit in packs:
        if not count:
            continue
        if isinstance(text, bytes):
            text = text.decode()
        if len(text) >= limit:
            raise Truncated()
        expected += count
        texts.append(text)
    if not expected:
        return []
    if all(kind.from_json is not None for kind in kinds):
        try:
            fields = orjson.loads('[%s]' % ','.join(texts))
        except orjson.JSONDecodeError:
            raise Truncated() from None
        decoders = [kind.from_json for kind in kinds]
    else:
        fields = ','.join(texts).split(',')
        decoders = [kind.decode for kind in kinds]
    if len(fields) != expected * width:
        raise Truncated()
    columns = [decode(fields[i::width])
               for i, decode in enumerate(decoders)]
    return list(zip(*columns))


# The longest pack the session can be sent: one of that length may have
# been cut.
_PACK_LIMIT = sa.func.least(sa.literal_column('@@group_concat_max_len'),
                            sa.literal_column('@@max_allowed_packet'))


@functools.lru_cache(maxsize=256)
def _packed(statement, kinds, rows_per_pack):
    """``statement`` read as (row count, fields of those rows, the limit
    of a pack's length): one pack, or packs of ``rows_per_pack`` rows.
    A NULL becomes its kind's ``null`` field (CONCAT_WS would skip it)."""
    inner = statement.subquery('unpacked')
    fields = []
    for column, kind in zip(inner.c, kinds):
        if kind.sql is not None:
            column = kind.sql(column)
        fields.append(column if kind.null is None
                      else sa.func.coalesce(column, kind.null))
    columns: Sequence[Any] = fields
    if rows_per_pack is not None:
        pack = (sa.func.row_number().over() - 1) // rows_per_pack
        numbered = sa.select(*fields, pack.label('pack')).subquery('numbered')
        columns = list(numbered.c)[:len(kinds)]
    query = sa.select(sa.func.count(),
                      sa.func.group_concat(sa.func.concat_ws(',', *columns)),
                      _PACK_LIMIT)
    if rows_per_pack is None:
        return query
    return query.group_by(numbered.c.pack)
