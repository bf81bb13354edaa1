"""Our service behind keystonemiddleware, against a real Keystone.

Keystone (from .venv-keystone) and our service both run under gunicorn;
our service validates tokens with ``[api] auth_strategy = keystone`` and a
``[keystone_authtoken]`` section as a deployment would have it. Checks:
token validation (200/401), the policy defaults for the personas of legacy
and secure RBAC, and a clear 503 while Keystone is down.

The policy matrix runs against upstream as well, to check the expected
table itself, whenever tools/integration-venvs.sh has built
``.venv-upstream`` and always under CI=true (see
``wsgi_process.implementations``; ``PLACEMENT_COMPARE_UPSTREAM_VENV=off``
leaves upstream out).
"""
import pytest
import requests

import keystone_server
import wsgi_process

pytestmark = pytest.mark.integration

SERVICE_PASSWORD = 'placement-service-secret'
PASSWORD = 'user-secret'
OWN_PROJECT = 'project-a'
OTHER_PROJECT = 'project-b'
SERVICE_PROJECT = 'service'
VERSION = {'OpenStack-API-Version': 'placement 1.39'}

# persona -> (user, project roles, system roles, token scope project);
# a scope project of None means a system-scoped token.
PERSONAS = {
    'project-admin': ('proj-admin', [(OWN_PROJECT, 'admin')], [],
                      OWN_PROJECT),
    'project-member': ('proj-member', [(OWN_PROJECT, 'member')], [],
                       OWN_PROJECT),
    'project-reader': ('proj-reader', [(OWN_PROJECT, 'reader')], [],
                       OWN_PROJECT),
    # A service user with the service role only, as Nova's can be.
    'service': ('nova', [(SERVICE_PROJECT, 'service')], [],
                SERVICE_PROJECT),
    'system-admin': ('sys-admin', [], ['admin'], None),
}

# What upstream's policy defaults (placement/policies) grant, per request:
#   list     GET /resource_providers          rule:admin_or_service_api
#   create   POST /resource_providers         rule:admin_or_service_api
#   own      GET /usages?project_id=<own>     admin, a reader of that
#   other    GET /usages?project_id=<other>     project, or service
#   reshape  POST /reshaper (empty body)      rule:service_api; allowed, it
#                                             fails validation: 400
# Every rule is project scoped, and oslo.policy (6.x: no enforce_scope
# option any more) always refuses a token of another scope, so the
# system-scoped admin gets 403 in both modes. Secure RBAC
# (enforce_new_defaults, oslo.policy's default) keeps the rules as written;
# legacy also accepts the deprecated ``role:admin``, which only widens
# service_api: a project admin may reshape. Member and reader hold ``reader``
# (Keystone implies it from member).
REQUESTS = ('list', 'create', 'own', 'other', 'reshape')
SECURE_RBAC = {
    'project-admin': (200, 200, 200, 200, 403),
    'project-member': (403, 403, 200, 403, 403),
    'project-reader': (403, 403, 200, 403, 403),
    'service': (200, 200, 200, 200, 400),
    'system-admin': (403, 403, 403, 403, 403),
}
LEGACY = dict(SECURE_RBAC, **{'project-admin': (200, 200, 200, 200, 400)})
POLICY_MODES = {
    'secure-rbac': ({'enforce_new_defaults': 'true'}, SECURE_RBAC),
    'legacy': ({'enforce_new_defaults': 'false'}, LEGACY),
}


@pytest.fixture(scope='module')
def keystone(tmp_path_factory):
    server = keystone_server.Keystone(tmp_path_factory.mktemp('keystone'))
    server.setup()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope='module')
def identities(keystone):
    """Create the service user and the personas; return project ids."""
    admin = keystone.client()
    admin.user('placement', SERVICE_PASSWORD, project_roles=[
        (SERVICE_PROJECT, 'admin'), (SERVICE_PROJECT, 'service')])
    for user, project_roles, system_roles, _scope in PERSONAS.values():
        admin.user(user, PASSWORD, project_roles, system_roles)
    return {name: admin.project(name)
            for name in (OWN_PROJECT, OTHER_PROJECT, SERVICE_PROJECT)}


def token(keystone, persona):
    user, _project_roles, _system_roles, scope = PERSONAS[persona]
    return keystone.token(user, PASSWORD, project=scope, system=scope is None)


def authtoken_options(keystone_url):
    return {
        'www_authenticate_uri': keystone_url,
        'auth_url': keystone_url,
        'auth_type': 'password',
        'project_name': SERVICE_PROJECT,
        'project_domain_name': keystone_server.DOMAIN,
        'username': 'placement',
        'user_domain_name': keystone_server.DOMAIN,
        'password': SERVICE_PASSWORD,
        'region_name': keystone_server.REGION,
        'interface': 'public',
        # No memcached_servers: tokens are cached in the worker's memory.
    }


@pytest.fixture(scope='module')
def placement_servers(tmp_path_factory, keystone, identities):
    """``get(policy_mode, implementation='ours', keystone_url=None)``: a
    running service against Keystone, started once per combination.
    """
    running = {}

    def get(policy_mode, implementation='ours', keystone_url=None):
        key = (policy_mode, implementation, keystone_url)
        if key not in running:
            server = wsgi_process.placement_server(
                tmp_path_factory.mktemp('placement'), {
                    'api': {'auth_strategy': 'keystone'},
                    'keystone_authtoken': authtoken_options(
                        keystone_url or keystone.url),
                    'oslo_policy': POLICY_MODES[policy_mode][0],
                }, implementation)
            running[key] = server.start()
        return running[key]

    yield get
    for server in running.values():
        server.stop()


def call(server, method, path, token=None, **kwargs):
    headers = dict(VERSION)
    if token is not None:
        headers['X-Auth-Token'] = token
    return requests.request(method, server.url + path, headers=headers,
                            timeout=60, **kwargs)


def test_valid_token_is_accepted(keystone, placement_servers):
    server = placement_servers('secure-rbac')
    response = call(server, 'GET', '/resource_providers',
                    token=token(keystone, 'project-admin'))
    assert response.status_code == 200, response.text
    assert response.json() == {'resource_providers': []}
    # The version document stays open to clients without a token.
    assert requests.get(server.url + '/', timeout=60).status_code == 200


@pytest.mark.parametrize('sent_token', [None, 'not-a-keystone-token'])
def test_missing_or_bogus_token_is_rejected(keystone, placement_servers,
                                            sent_token):
    response = call(placement_servers('secure-rbac'), 'GET',
                    '/resource_providers', token=sent_token)
    assert response.status_code == 401
    assert response.headers['Content-Type'].startswith('application/json')
    assert response.json()['error']['code'] == 401
    assert response.headers['WWW-Authenticate'] == (
        'Keystone uri="%s"' % keystone.url)


@pytest.mark.parametrize('implementation', wsgi_process.implementations())
@pytest.mark.parametrize('policy_mode', sorted(POLICY_MODES))
def test_policy_defaults(keystone, identities, placement_servers,
                         policy_mode, implementation):
    server = placement_servers(policy_mode, implementation)
    expected = POLICY_MODES[policy_mode][1]
    seen = {}
    for persona in PERSONAS:
        sent = token(keystone, persona)
        own = identities[PERSONAS[persona][3] or OWN_PROJECT]
        responses = (
            call(server, 'GET', '/resource_providers', token=sent),
            call(server, 'POST', '/resource_providers', token=sent,
                 json={'name': 'rp-%s-%s' % (policy_mode, persona)}),
            call(server, 'GET', '/usages', token=sent,
                 params={'project_id': own}),
            call(server, 'GET', '/usages', token=sent,
                 params={'project_id': identities[OTHER_PROJECT]}),
            call(server, 'POST', '/reshaper', token=sent, json={}),
        )
        seen[persona] = tuple(r.status_code for r in responses)
        for response in responses:
            if response.status_code == 403:
                assert response.json()['errors'][0]['status'] == 403
    assert seen == expected, 'statuses of %s' % (REQUESTS,)


def test_keystone_outage_is_a_json_503(keystone, placement_servers):
    server = placement_servers('secure-rbac')
    assert call(server, 'GET', '/resource_providers',
                token=token(keystone, 'service')).status_code == 200
    # A token the service has not validated (and so not cached) yet.
    fresh = token(keystone, 'project-admin')
    with keystone.down():
        response = call(server, 'GET', '/resource_providers', token=fresh)
        assert_placement_503(response)
    assert call(server, 'GET', '/resource_providers',
                token=fresh).status_code == 200


def test_unreachable_keystone_at_startup_is_a_json_503(keystone,
                                                       placement_servers):
    dead_url = 'http://127.0.0.1:%d/v3' % wsgi_process.free_port()
    server = placement_servers('secure-rbac', keystone_url=dead_url)
    response = call(server, 'GET', '/resource_providers',
                    token=token(keystone, 'project-admin'))
    assert_placement_503(response)


def assert_placement_503(response):
    assert response.status_code == 503, response.text
    assert response.headers['Content-Type'].startswith('application/json')
    error, = response.json()['errors']
    assert error['status'] == 503
    assert error['title'] == 'Service Unavailable'
    assert 'The Keystone service is temporarily unavailable.' in (
        error['detail'])
    assert error['request_id'].startswith('req-')
