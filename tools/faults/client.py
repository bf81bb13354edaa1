"""One HTTP request to the service, classified as the history records it.

Every request opens a connection of its own: with a kept-alive connection
a request on a socket the server has just dropped could not be told apart
from one it received, and "nothing was sent" must mean exactly that.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import requests
import urllib3

MICROVERSION = '1.39'
HEADERS = {
    'x-auth-token': 'admin',
    'openstack-api-version': 'placement ' + MICROVERSION,
    'accept': 'application/json',
    'connection': 'close',
}
CONNECT_TIMEOUT = 5.0


@dataclasses.dataclass
class Answer:
    """``outcome``: ok (2xx), fail (4xx, or nothing was sent), unknown
    (5xx, a timeout or a connection dropped after sending)."""
    outcome: str
    status: int | None
    error: str | None
    body: Any = None


def _error_code(response: requests.Response) -> str | None:
    try:
        errors = response.json().get('errors') or []
    except (ValueError, AttributeError):
        return None
    if not errors or not isinstance(errors[0], dict):
        return None
    first = errors[0]
    return first.get('code') or first.get('title')


def _nothing_sent(exc: requests.ConnectionError) -> bool:
    """Whether the connection failed before the request went out
    (refused, unreachable, connect timeout)."""
    if isinstance(exc, requests.ConnectTimeout):
        return True
    reason = exc.args[0] if exc.args else None
    if isinstance(reason, urllib3.exceptions.MaxRetryError):
        reason = reason.reason
    return isinstance(reason, (urllib3.exceptions.NewConnectionError,
                               urllib3.exceptions.ConnectTimeoutError))


def _short(exc: BaseException) -> str:
    """The innermost cause, briefly: "ConnectionRefusedError",
    "ReadTimeout", "RemoteDisconnected: Remote end closed ..."."""
    if isinstance(exc, requests.ReadTimeout):
        return 'ReadTimeout'
    cause: BaseException = exc
    while True:
        inner: BaseException | None = (cause.reason if isinstance(
            cause, urllib3.exceptions.MaxRetryError) else None)
        if inner is None and cause.args and isinstance(cause.args[-1],
                                                       BaseException):
            inner = cause.args[-1]
        if inner is None:
            inner = cause.__cause__ or cause.__context__
        if inner is None or inner is cause:
            break
        cause = inner
    if isinstance(cause, urllib3.exceptions.NewConnectionError):
        text = str(cause).rsplit(': ', 1)[-1]
    else:
        text = str(cause)
    return ('%s: %s' % (type(cause).__name__, text))[:200]


def call(base_url: str, method: str, path: str, body: Any = None,
         timeout: float = 30.0) -> Answer:
    session = requests.Session()
    # Straight to the server: no proxy from the environment.
    session.trust_env = False
    try:
        response = session.request(
            method, base_url + path, json=body, headers=HEADERS,
            timeout=(CONNECT_TIMEOUT, timeout))
    except requests.ConnectionError as exc:
        if _nothing_sent(exc):
            return Answer('fail', None, _short(exc))
        return Answer('unknown', None, _short(exc))
    except requests.RequestException as exc:
        # ReadTimeout and whatever else happens after sending.
        return Answer('unknown', None, _short(exc))
    finally:
        session.close()
    status = response.status_code
    parsed: Any = None
    if response.content:
        try:
            parsed = response.json()
        except ValueError:
            parsed = None
    if 200 <= status < 300:
        return Answer('ok', status, None, parsed)
    outcome = 'fail' if 400 <= status < 500 else 'unknown'
    return Answer(outcome, status, _error_code(response), parsed)
