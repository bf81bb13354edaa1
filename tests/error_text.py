"""Reading Placement error responses in tests."""


def detail(response):
    """The first error's detail text, trailing blanks removed."""
    return response.json['errors'][0]['detail'].rstrip()


def reason(response):
    """The first error's own message: its detail without the status's
    standard explanation in front.
    """
    return detail(response).split('\n\n', 1)[-1].strip()
