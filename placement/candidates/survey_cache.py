"""The survey's counts, kept a while per database and question.

A survey's counts (placement.candidates.narrowing) change slowly and only
steer how much is read, never what is found: they are reused for a
while, per database and question, in this process.
"""
import time
from typing import Any
from typing import Callable

import sqlalchemy as sa

SURVEY_SECONDS = 30
_SURVEYS_KEPT = 1024
_recent_surveys: dict[tuple[str, Any], tuple[float, Any]] = {}


def forget_surveys() -> None:
    """Forget every count kept (a test's database is new)."""
    _recent_surveys.clear()


def recently_counted(conn: sa.Connection, question: Any,
                     count: Callable[[], Any]) -> Any:
    """``count()``, or what it gave for ``question`` on this database
    less than SURVEY_SECONDS ago."""
    key = (str(conn.engine.url), question)
    now = time.monotonic()
    counted = _recent_surveys.get(key)
    if counted is None or now - counted[0] > SURVEY_SECONDS:
        if len(_recent_surveys) >= _SURVEYS_KEPT:
            _recent_surveys.clear()
        counted = _recent_surveys[key] = now, count()
    return counted[1]
