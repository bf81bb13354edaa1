"""Reading many narrow rows from MySQL and MariaDB as a few packed ones.

PyMySQL decodes every field of every row in Python: about 14 us per row
of the candidate engine's inventory reads, most of such a request's time.
So through PyMySQL ``rows`` asks the server to join the fields of up to
``ROWS_PER_PACK`` rows into one comma-separated string (CONCAT_WS within a row,
GROUP_CONCAT across rows), and splits and converts the strings a column
at a time with Python's C built-ins. Drivers that decode in C
(mysqlclient, psycopg2, sqlite3) run the statement as it is: for them
packing costs more than it saves.

Columns travel as they print when that holds no comma (integers, floats,
uuids, class and trait names), other strings in hexadecimal (``kinds``
tells which). A pack is checked against the
row count it comes with, so one cut short by ``group_concat_max_len``
(1 MiB by default; a pack stays far below it) is never taken for data:
the statement is then read unpacked.
"""
import dataclasses
import datetime
import functools
import logging
from typing import Any
from typing import Callable
from typing import Sequence

import sqlalchemy as sa

LOG = logging.getLogger(__name__)

# The drivers whose rows are worth packing: they decode in Python.
PACKING_DRIVERS = frozenset({('mysql', 'pymysql'), ('mariadb', 'pymysql')})

ROWS_PER_PACK = 1000


@dataclasses.dataclass(frozen=True)
class Kind:
    """How a column travels in a pack: ``sql`` wraps it there (None: as
    it is), ``nullable`` turns NULL into an empty field, and ``decode``
    turns a column's fields back into values."""
    decode: Callable[[list[str]], list[Any]]
    sql: Callable[[Any], Any] | None = None
    nullable: bool = False


def _optional(convert):
    def decode(tokens):
        return [convert(token) if token else None for token in tokens]
    return decode


def _from_hex(tokens):
    return [bytes.fromhex(token).decode() for token in tokens]


INT = Kind(lambda tokens: list(map(int, tokens)))
OPTIONAL_INT = Kind(_optional(int), nullable=True)
FLOAT = Kind(lambda tokens: list(map(float, tokens)))
# A string that holds no comma and is never empty (a uuid, a class or
# trait name).
TEXT = Kind(lambda tokens: tokens)
OPTIONAL_TEXT = Kind(_optional(str), nullable=True)
# Any string (a provider's name): it travels in hexadecimal.
ANY_TEXT = Kind(_from_hex, sql=sa.func.hex)
# DATETIME (no fractional seconds), as PyMySQL gives it: naive.
OPTIONAL_DATETIME = Kind(_optional(datetime.datetime.fromisoformat),
                         nullable=True)


class Truncated(Exception):
    """A pack held fewer fields than its rows have."""


def rows(conn: sa.Connection, statement: sa.Select, kinds: Sequence[Kind],
         params: dict[str, Any] | None = None,
         ordered: bool = False) -> Sequence[Sequence[Any]]:
    """The rows of ``statement``, one kind of ``kinds`` per column: packed
    through PyMySQL (as tuples), else as the driver gives them. Packed
    rows come in no particular order unless ``ordered``: then sorted, as
    the statement's ORDER BY of its leading columns would. ``statement``
    should be built once (cached), as its packed form is cached by
    identity.
    """
    if (conn.dialect.name, conn.dialect.driver) not in PACKING_DRIVERS:
        return conn.execute(statement, params).all()
    try:
        found = _unpack(conn.execute(_packed(statement, tuple(kinds)),
                                     params), kinds)
    except Truncated:
        LOG.warning('A packed read was cut short; reading it unpacked')
        return conn.execute(statement, params).all()
    if ordered:
        found.sort()
    return found


def _unpack(packs, kinds):
    width = len(kinds)
    expected = 0
    tokens: list[str] = []
    for count, text in packs:
        if isinstance(text, bytes):
            text = text.decode()
        expected += count
        tokens += text.split(',')
    if len(tokens) != expected * width:
        raise Truncated()
    if not expected:
        return []
    columns = [kind.decode(tokens[i::width])
               for i, kind in enumerate(kinds)]
    return list(zip(*columns))


@functools.lru_cache(maxsize=256)
def _packed(statement, kinds):
    """``statement`` read as (row count, fields of those rows) per pack of
    ROWS_PER_PACK rows. A NULL becomes an empty field (CONCAT_WS would
    skip it)."""
    inner = statement.subquery('unpacked')
    fields = []
    for column, kind in zip(inner.c, kinds):
        if kind.sql is not None:
            column = kind.sql(column)
        fields.append(sa.func.coalesce(column, '') if kind.nullable
                      else column)
    numbered = sa.select(
        *fields,
        ((sa.func.row_number().over() - 1) // ROWS_PER_PACK).label('pack'),
    ).subquery('numbered')
    columns = list(numbered.c)[:len(kinds)]
    return (sa.select(sa.func.count(),
                      sa.func.group_concat(sa.func.concat_ws(',', *columns)))
            .group_by(numbered.c.pack))
