"""keystone auth_strategy failures answer in Placement's error format."""
from keystoneauth1 import exceptions as ksa_exceptions
from keystonemiddleware import auth_token
import pytest

import error_text

pytestmark = pytest.mark.sqlite_only


def test_keystone_without_a_usable_endpoint_is_a_503(api_factory,
                                                     monkeypatch):
    def no_endpoint(self, request):
        raise ksa_exceptions.EndpointNotFound('no public identity endpoint')

    monkeypatch.setattr(auth_token.AuthProtocol, 'process_request',
                        no_endpoint)
    api = api_factory(api={'auth_strategy': 'keystone'})
    response = api.get('/resource_providers', token='some-token')
    assert response.status_code == 503
    detail = error_text.raw_detail(response)
    assert 'The identity service is unavailable' in detail
    assert 'no public identity endpoint' in detail


def test_keystone_leaves_the_version_document_open(api_factory):
    api = api_factory(api={'auth_strategy': 'keystone'})
    assert api.get('/', token=None).status_code == 200
