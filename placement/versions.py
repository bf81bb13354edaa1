"""API microversions as the core sees them: (major, minor) tuples.

The HTTP layer (placement.api.pipeline.microversion) reads the request's
version from its header; everything else compares tuples and picks what applies
at a version from tables keyed by the version it starts at.
"""
from typing import Any

MIN_VERSION = (1, 0)
MAX_VERSION = (1, 39)
VERSIONS = ['%d.%d' % (MIN_VERSION[0], minor)
            for minor in range(MIN_VERSION[1], MAX_VERSION[1] + 1)]
LATEST = 'latest'


class UnknownVersion(ValueError):
    """Text that names none of the service's versions."""


def parse(text: str | tuple[int, int]) -> tuple[int, int]:
    """``'1.10'`` -> ``(1, 10)``; a tuple is returned as it is."""
    if isinstance(text, tuple):
        return text
    major, minor = text.split('.')
    return int(major), int(minor)


def from_text(text: str) -> tuple[int, int]:
    """The version a client names: ``'1.N'`` within the service's range,
    or ``latest``; UnknownVersion otherwise.
    """
    text = text.strip()
    if text == LATEST:
        return MAX_VERSION
    if text not in VERSIONS:
        raise UnknownVersion('%s is not a version from %s to %s'
                             % (text, VERSIONS[0], VERSIONS[-1]))
    return parse(text)


def pick(table: dict[str, Any] | dict[tuple[int, int], Any],
         version: tuple[int, int]) -> Any:
    """The value of ``table`` ({version it starts at: value}, keys as
    text or tuples) for ``version``: the one with the highest key not
    above it (None if every key is above it).
    """
    chosen, best = None, None
    for key, value in table.items():
        key = parse(key)
        if key <= version and (best is None or key > best):
            chosen, best = value, key
    return chosen
