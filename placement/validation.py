"""JSON-schema validation of request bodies and query strings, reported
with upstream's messages (``exception.BadInput``).
"""
import itertools
from typing import Any
from typing import Iterable

import jsonschema
from oslo_utils import uuidutils

from placement import exception

# As upstream, request bodies check "uuid" like oslo's is_uuid_like (dashes
# optional, braces or "urn:uuid:" allowed) while query strings keep
# jsonschema's stricter check.
QUERY_FORMATS = jsonschema.FormatChecker()
BODY_FORMATS = jsonschema.FormatChecker()
BODY_PREFIX = 'JSON does not validate'
QUERY_PREFIX = 'Invalid query string parameters'

_VALIDATORS: dict[tuple[int, int], Any] = {}
# A message quotes at most this much of the client's value (jsonschema
# quotes it whole, twice).
MAX_QUOTED = 128
# The errors weighed to pick the one reported. Each costs jsonschema some
# 20 microseconds: weighing all of a body of a million wrong items (2 MiB
# of them) took 23 s. Upstream weighs them all: a body with more errors
# than this may be reported by another of its errors.
MAX_WEIGHED = 100


@BODY_FORMATS.checks('uuid')
def _is_uuid_like(instance):
    return not isinstance(instance, str) or uuidutils.is_uuid_like(instance)


def check(data: Any, schema: dict[str, Any], prefix: str = BODY_PREFIX,
          formats: jsonschema.FormatChecker = BODY_FORMATS) -> None:
    """Raise BadInput with the most relevant error, as jsonschema.validate
    (upstream) reports it, unless ``data`` is valid.
    """
    error = jsonschema.exceptions.best_match(itertools.islice(
        _validator(schema, formats).iter_errors(data), MAX_WEIGHED))
    if error is not None:
        _shorten(error)
        raise exception.BadInput('%s: %s' % (prefix, error))


class _Quoted:
    """What a shortened value prints as (pformat uses its repr)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _shorten(error: jsonschema.exceptions.ValidationError) -> None:
    """Make ``error`` quote only the start of a long value."""
    text = repr(error.instance)
    if len(text) <= MAX_QUOTED:
        return
    short = text[:MAX_QUOTED] + '...'
    error.message = error.message.replace(text, short)
    error.instance = _Quoted(short)


def check_query(pairs: Iterable[tuple[str, str]],
                schema: dict[str, Any]) -> dict[str, str]:
    """The query string's (key, value) ``pairs`` as a dict in which a
    repeated key keeps its last value (as upstream's schemas see them),
    checked against ``schema``.
    """
    params = dict(pairs)
    check(params, schema, QUERY_PREFIX, QUERY_FORMATS)
    return params


def _validator(schema, formats):
    key = (id(schema), id(formats))
    validator = _VALIDATORS.get(key)
    if validator is None:
        # The draft jsonschema.validate picks (upstream's choice): it decides
        # e.g. whether 10.0 is an integer.
        validator_class = jsonschema.validators.validator_for(schema)
        validator = validator_class(schema, format_checker=formats)
        _VALIDATORS[key] = validator
    return validator
