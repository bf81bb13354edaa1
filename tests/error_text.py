"""Reading Placement error responses in tests.

The functions take a response of the test client (``.json``, ``.headers``)
and read its first error:

- ``raw_detail``: the detail exactly as sent: the status's standard
  explanation, a blank line, the message and webob's two trailing blanks;
- ``detail``: the same without the trailing blanks;
- ``reason``: the message alone, without the standard explanation;
- ``code``: the error's code, or None when it has none;
- ``error``: the whole error, once it is checked that the response is a
  JSON error document with exactly one error.
"""


def error(response):
    """The single error of a JSON error document."""
    assert response.headers['Content-Type'] == 'application/json'
    errors = response.json['errors']
    assert len(errors) == 1
    return errors[0]


def raw_detail(response):
    """The first error's detail text as sent."""
    return response.json['errors'][0]['detail']


def detail(response):
    """The first error's detail text, trailing blanks removed."""
    return raw_detail(response).rstrip()


def reason(response):
    """The first error's own message: its detail without the status's
    standard explanation in front.
    """
    return detail(response).split('\n\n', 1)[-1].strip()


def code(response):
    """The first error's code, None if it has none."""
    return response.json['errors'][0].get('code')
