"""Reading Placement error responses in tests."""


def detail(response):
    """The first error's detail text, trailing blanks removed."""
    return response.json['errors'][0]['detail'].rstrip()
