"""placement.validation: schema errors quote only the start of a long
value."""
import pytest

from placement import exception
from placement import validation


def test_a_long_value_is_quoted_by_its_start_only():
    schema = {'type': 'object',
              'properties': {'name': {'type': 'string', 'maxLength': 10},
                             'list': {'type': 'array', 'maxItems': 2}}}
    for document in ({'name': 'x' * 100_000}, {'list': list(range(50_000))}):
        with pytest.raises(exception.BadInput) as caught:
            validation.check(document, schema)
        text = str(caught.value)
        assert text.startswith('JSON does not validate: ')
        assert '... is too long' in text
        assert len(text) < 2 * validation.MAX_QUOTED + 400


def test_a_short_value_is_quoted_whole():
    with pytest.raises(exception.BadInput) as caught:
        validation.check({'name': 'abcdefghijkl'},
                         {'type': 'object', 'properties': {
                             'name': {'type': 'string', 'maxLength': 10}}})
    assert str(caught.value).startswith(
        "JSON does not validate: 'abcdefghijkl' is too long")
