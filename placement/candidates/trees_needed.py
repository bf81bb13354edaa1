"""How many trees a limited request needed to read last time, so that
its next run reads them in one batch instead of finding out batch by
batch (each batch costs a look for usable roots, which on a large cloud
is a statement of tens of milliseconds), and no more than those.

Only how much is read depends on it, never what is found: the trees are
still walked in root id order and the walk stops at the limit. Kept per
process, per database and request, for as many requests as
``_KEPT``; a cloud whose yield changes merely reads a batch more or
a few trees too many, once.
"""
import sqlalchemy as sa

from placement.candidates import request as model

# A first batch never grows beyond this many times the default.
MOST_TIMES_WANTED = 4
_KEPT = 1024

_needed: dict[tuple[str, str], int] = {}


def _key(conn: sa.Connection, request: model.Request) -> tuple[str, str]:
    return str(conn.engine.url), repr(request)


def recall(conn: sa.Connection, request: model.Request) -> int | None:
    """The trees ``request`` needed the last time it ran, if known."""
    return _needed.get(_key(conn, request))


def remember(conn: sa.Connection, request: model.Request,
             trees: int) -> None:
    """``request`` needed ``trees`` trees, in root id order, to make as
    many candidates as it wanted."""
    if len(_needed) >= _KEPT:
        _needed.clear()
    _needed[_key(conn, request)] = trees


def forget() -> None:
    _needed.clear()
