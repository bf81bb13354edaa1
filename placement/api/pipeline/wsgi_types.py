"""The WSGI protocol's types (PEP 3333), for the middleware's signatures."""
from collections.abc import Iterable
from wsgiref.types import StartResponse
from wsgiref.types import WSGIApplication
from wsgiref.types import WSGIEnvironment

# What a WSGI application returns.
Body = Iterable[bytes]

__all__ = ['Body', 'StartResponse', 'WSGIApplication', 'WSGIEnvironment']
