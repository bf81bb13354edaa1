"""Each kind of database in one place.

A module per backend (``sqlite``, ``mysql`` for MySQL and MariaDB,
``postgresql``) owns all that is special about it: engine and session
set-up, the classification of its driver's errors, how lists of ids
travel, packed reads, the write lock, replica lag, migration locking
and the variants of the candidate statements. The rest of the code asks
``of(...)`` for the backend instead of testing the dialect's name.
"""
from typing import Any

import sqlalchemy as sa

from placement.db.backends import mysql
from placement.db.backends import postgresql
from placement.db.backends import sqlite
from placement.db.backends.base import Backend
from placement.db.backends.base import ReplicaUnusable
from placement.db.backends.base import UnusableServer

__all__ = ['ALL', 'Backend', 'ReplicaUnusable', 'UnsupportedBackend',
           'UnusableServer', 'of', 'verdict']

# Every backend, in the order their verdicts on an error are asked for.
ALL: tuple[Backend, ...] = (mysql.BACKEND, postgresql.BACKEND,
                            sqlite.BACKEND)
_BY_NAME = {name: backend for backend in ALL for name in backend.names}


class UnsupportedBackend(LookupError):
    """No backend serves this kind of database."""


def of(bind: Any) -> Backend:
    """The backend of ``bind``: a connection, an engine, a dialect or a
    URL."""
    if isinstance(bind, sa.engine.URL):
        name = bind.get_backend_name()
    else:
        name = getattr(bind, 'dialect', bind).name
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnsupportedBackend(f'no backend for {name} databases') from None


def verdict(question: str, orig: BaseException | None) -> bool | None:
    """The answer to ``question`` (the name of one of Backend's questions
    about a driver's error, such as 'is_transient') about ``orig``, from
    the backend whose driver raised it; None if none can tell (or no
    driver raised anything)."""
    if orig is None:
        return None
    for backend in ALL:
        answer = getattr(backend, question)(orig)
        if answer is not None:
            return answer
    return None
