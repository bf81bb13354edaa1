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


def test_a_body_of_countless_errors_is_refused_after_weighing_a_few(
        monkeypatch):
    """A million wrong items make a million errors: only the first
    MAX_WEIGHED are made and weighed."""
    made = []
    real = validation._validator

    class Counting:
        def __init__(self, validator):
            self.validator = validator

        def iter_errors(self, data):
            for error in self.validator.iter_errors(data):
                made.append(error)
                yield error

    monkeypatch.setattr(validation, '_validator',
                        lambda *args: Counting(real(*args)))
    schema = {'type': 'object', 'properties': {
        'traits': {'type': 'array', 'items': {'type': 'string'}}}}
    with pytest.raises(exception.BadInput) as caught:
        validation.check({'traits': [1] * 1000000}, schema)
    assert "1 is not of type 'string'" in str(caught.value)
    assert len(made) == validation.MAX_WEIGHED
