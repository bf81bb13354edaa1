"""GET /x-capacity (an extension): the capacity page, served as a static
asset without a token; what it shows is tested in a real browser
(tests/integration/test_capacity_browser.py).
"""
import re

import pytest

pytestmark = pytest.mark.sqlite_only

PATH = '/x-capacity'


@pytest.mark.parametrize('auth_strategy', ['noauth2', 'keystone'])
def test_served_without_token_to_any_strategy(api_factory, auth_strategy):
    api = api_factory(api={'auth_strategy': auth_strategy})
    response = api.get(PATH, token=None, version=None)
    assert response.status_code == 200, response.text
    assert response.headers['Content-Type'] == 'text/html; charset=utf-8'
    assert response.headers['Cache-Control'] == 'no-cache'
    # The page knows how to ask for a token, nothing else of the service.
    assert ('<html lang="en" data-auth="%s">' % auth_strategy
            ) in response.text
    assert not re.search(r'@[A-Z_]+@', response.text)


def test_holds_no_data(api):
    api.post('/resource_providers', json={'name': 'compute-secret-1'})
    text = api.get(PATH, token=None, version=None).text
    assert 'compute-secret-1' not in text


def test_fetches_nothing_from_elsewhere(api):
    response = api.get(PATH, token=None, version=None)
    policy = response.headers['Content-Security-Policy']
    assert "default-src 'none'" in policy
    assert "connect-src 'self'" in policy
    # No URL with a scheme or a protocol-relative one, no external link.
    assert not re.search(r'(?:src|href)\s*=\s*["\']?(?:[a-z]+:)?//',
                         response.text, re.I)
    assert not re.search(r'https?://', response.text)
    assert '@import' not in response.text


def test_behind_a_prefix(api_factory):
    api = api_factory(prefix='/placement')
    response = api.get(PATH, token=None, version=None)
    assert response.status_code == 200
    # It asks relative to itself: under the prefix too.
    assert '"x-capacity/flavours?"' in response.text


def test_head_and_other_methods(api):
    head = api.request('HEAD', PATH, token=None, version=None)
    assert head.status_code == 200
    assert head.data == b''
    post = api.post(PATH, token=None, version=None)
    assert post.status_code == 405
    assert post.headers['Allow'] == 'GET, HEAD'
    assert post.json['errors'][0]['status'] == 405
