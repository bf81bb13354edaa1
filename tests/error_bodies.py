"""Error answers byte for byte: upstream's, recorded, against ours.

``SETUP`` makes a small state (fixed uuids, so that error texts that
name them are the same on every run); each of ``PROBES`` then meets an
error on one route, at a microversion before error codes (1.23) and
after where the shape differs, and in each format webob renders
(JSON, plain text, HTML, by Accept). Left out: a POST of an inventory
that exists, whose detail upstream words with the database's own error
(the SQL statement, with the time it ran). ``UPSTREAM_RECORD`` holds upstream
16.0.0's answers to them (status, Content-Type, body), request ids
replaced by ``REQUEST_ID`` (``normalized``);
tests/integration/test_error_bodies_upstream.py checks the record
against upstream running (and rewrites it when asked to), and
tests/api/test_error_bodies.py compares ours with it.

Importable from any test module: tests/ is on sys.path.
"""
import json
import pathlib
import re

UPSTREAM_RECORD = pathlib.Path(__file__).parent / 'upstream_error_bodies.json'
REQUEST_ID = 'req-00000000-0000-0000-0000-000000000000'
_REQUEST_IDS = re.compile(
    rb'req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}')

PROVIDER = 'a0000000-0000-4000-8000-00000000000a'
CHILD = 'b0000000-0000-4000-8000-00000000000b'
CONSUMER = 'c0000000-0000-4000-8000-00000000000c'
MISSING = 'f0000000-0000-4000-8000-00000000000f'
RP = '/resource_providers/' + PROVIDER
# A new consumer for each probe that would make one (upstream leaves a
# consumer behind when its allocations are refused).
NEW_CONSUMERS = ['e0000000-0000-4000-8000-%012d' % n for n in range(10)]
SERVICE = {'X-Roles': 'admin,service'}
JSON_BODY = {'Content-Type': 'application/json'}


def _allocation(resources, provider=PROVIDER, generation=None):
    return {'allocations': {provider: {'resources': resources}},
            'project_id': 'project', 'user_id': 'user',
            'consumer_generation': generation, 'consumer_type': 'INSTANCE'}


# (method, path, version, body): each must succeed. The provider ends at
# generation 3.
SETUP = [
    ('POST', '/resource_providers', '1.39',
     {'name': 'cn', 'uuid': PROVIDER}),
    ('POST', '/resource_providers', '1.39',
     {'name': 'child', 'uuid': CHILD, 'parent_provider_uuid': PROVIDER}),
    ('PUT', RP + '/inventories', '1.39',
     {'resource_provider_generation': 0, 'inventories': {
         'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 2048}}}),
    ('PUT', '/traits/CUSTOM_USED', '1.39', None),
    ('PUT', RP + '/traits', '1.39',
     {'resource_provider_generation': 1, 'traits': ['CUSTOM_USED']}),
    ('POST', '/resource_classes', '1.39', {'name': 'CUSTOM_USED_RC'}),
    ('POST', '/resource_classes', '1.39', {'name': 'CUSTOM_OTHER'}),
    ('PUT', '/resource_providers/%s/inventories' % CHILD, '1.39',
     {'resource_provider_generation': 0, 'inventories': {
         'CUSTOM_USED_RC': {'total': 10}}}),
    ('PUT', '/allocations/' + CONSUMER, '1.39', {
        'allocations': {PROVIDER: {'resources': {'VCPU': 2}},
                        CHILD: {'resources': {'CUSTOM_USED_RC': 1}}},
        'project_id': 'project', 'user_id': 'user',
        'consumer_generation': None, 'consumer_type': 'INSTANCE'}),
]

# Microversions: before error codes, and the latest.
OLD, NEW = '1.22', '1.39'


def _both(name, method, path, body=None, headers=None, old=OLD, new=NEW):
    """The probe at a microversion before error codes and at one with."""
    return [(name + '@' + version, method, path, version, body,
             headers or {}) for version in (old, new)]


# (name, method, path, microversion or None, body (a dict is sent as
# JSON, text as it is), headers).
PROBES = [
    # The pipeline: microversions, routes, methods, media types, policy.
    ('version-too-high', 'GET', '/resource_providers', '1.99', None, {}),
    ('version-major', 'GET', '/resource_providers', '2.0', None, {}),
    ('version-garbage', 'GET', '/resource_providers', 'x.y', None, {}),
    *_both('unknown-route', 'GET', '/nothing'),
    *_both('method', 'PATCH', '/resource_providers'),
    *_both('media-type', 'POST', '/resource_providers', '{}',
           {'Content-Type': None}),
    *_both('malformed-json', 'POST', '/resource_providers', '{',
           JSON_BODY),
    *_both('schema', 'POST', '/resource_providers', {}),
    *_both('forbidden', 'GET', '/resource_providers',
           headers={'X-Auth-Token': 'user'}),
    ('not-yet-resource-classes', 'GET', '/resource_classes', '1.1', None,
     {}),
    ('not-yet-traits', 'GET', '/traits', '1.5', None, {}),
    ('not-yet-candidates', 'GET', '/allocation_candidates?resources=VCPU:1',
     '1.9', None, {}),
    ('not-yet-usages', 'GET', '/usages?project_id=p', '1.8', None, {}),
    ('not-yet-reshaper', 'POST', '/reshaper', '1.29', {}, SERVICE),
    # Resource providers.
    *_both('rp-missing', 'GET', '/resource_providers/' + MISSING),
    *_both('rp-query-unknown', 'GET', '/resource_providers?color=blue'),
    *_both('rp-query-bad-member-of', 'GET',
           '/resource_providers?member_of=in:nope', old='1.3'),
    *_both('rp-duplicate-name', 'POST', '/resource_providers',
           {'name': 'cn'}),
    *_both('rp-duplicate-uuid', 'POST', '/resource_providers',
           {'name': 'other', 'uuid': PROVIDER}),
    *_both('rp-rename-duplicate', 'PUT', '/resource_providers/' + CHILD,
           {'name': 'cn', 'parent_provider_uuid': PROVIDER}, old='1.14'),
    *_both('rp-parent-missing', 'POST', '/resource_providers',
           {'name': 'orphan', 'uuid': NEW_CONSUMERS[9],
      'parent_provider_uuid': MISSING}, old='1.14'),
    *_both('rp-delete-in-use', 'DELETE', '/resource_providers/' + CHILD),
    *_both('rp-delete-missing', 'DELETE', '/resource_providers/' + MISSING),
    # Inventories.
    *_both('inv-rp-missing', 'GET',
           '/resource_providers/%s/inventories' % MISSING),
    *_both('inv-generation', 'PUT', RP + '/inventories', {
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 8}}}),
    *_both('inv-unknown-class', 'PUT', RP + '/inventories', {
        'resource_provider_generation': 3,
        'inventories': {'CUSTOM_NOPE': {'total': 1}}}),
    *_both('inv-in-use', 'PUT', RP + '/inventories', {
        'resource_provider_generation': 3,
        'inventories': {'MEMORY_MB': {'total': 2048}}}),
    *_both('inv-schema', 'PUT', RP + '/inventories', {}),
    *_both('inv-one-missing', 'GET', RP + '/inventories/DISK_GB'),
    *_both('inv-one-generation', 'PUT', RP + '/inventories/VCPU',
           {'resource_provider_generation': 0, 'total': 8}),
    *_both('inv-one-delete-in-use', 'DELETE', RP + '/inventories/VCPU'),
    *_both('inv-all-delete-in-use', 'DELETE', RP + '/inventories',
           old='1.5'),
    # Usages.
    *_both('usages-rp-missing', 'GET',
           '/resource_providers/%s/usages' % MISSING),
    *_both('usages-no-project', 'GET', '/usages', old='1.9'),
    # Aggregates.
    *_both('agg-rp-missing', 'GET',
           '/resource_providers/%s/aggregates' % MISSING, old='1.1'),
    ('agg-generation@1.39', 'PUT', RP + '/aggregates', '1.39',
     {'resource_provider_generation': 0, 'aggregates': []}, {}),
    ('agg-schema@1.1', 'PUT', RP + '/aggregates', '1.1', {}, {}),
    # Traits.
    *_both('trait-missing', 'GET', '/traits/CUSTOM_MISSING', old='1.6'),
    *_both('trait-bad-name', 'PUT', '/traits/BAD', old='1.6'),
    *_both('trait-delete-standard', 'DELETE', '/traits/HW_CPU_X86_AVX',
           old='1.6'),
    *_both('trait-delete-in-use', 'DELETE', '/traits/CUSTOM_USED',
           old='1.6'),
    *_both('trait-delete-missing', 'DELETE', '/traits/CUSTOM_MISSING',
           old='1.6'),
    *_both('traits-query-bad', 'GET', '/traits?name=foo', old='1.6'),
    *_both('rp-traits-missing', 'GET',
           '/resource_providers/%s/traits' % MISSING, old='1.6'),
    *_both('rp-traits-generation', 'PUT', RP + '/traits',
           {'resource_provider_generation': 0, 'traits': []}, old='1.6'),
    *_both('rp-traits-unknown', 'PUT', RP + '/traits',
           {'resource_provider_generation': 3, 'traits': ['CUSTOM_NOPE']},
           old='1.6'),
    *_both('rp-traits-delete-missing', 'DELETE',
           '/resource_providers/%s/traits' % MISSING, old='1.6'),
    # Resource classes.
    *_both('rc-missing', 'GET', '/resource_classes/CUSTOM_MISSING',
           old='1.2'),
    *_both('rc-duplicate', 'POST', '/resource_classes',
           {'name': 'CUSTOM_USED_RC'}, old='1.2'),
    *_both('rc-bad-name', 'POST', '/resource_classes', {'name': 'BAD'},
           old='1.2'),
    ('rc-rename-duplicate@1.2', 'PUT', '/resource_classes/CUSTOM_OTHER',
     '1.2', {'name': 'CUSTOM_USED_RC'}, {}),
    ('rc-rename-standard@1.2', 'PUT', '/resource_classes/VCPU', '1.2',
     {'name': 'CUSTOM_X'}, {}),
    *_both('rc-delete-standard', 'DELETE', '/resource_classes/VCPU',
           old='1.2'),
    *_both('rc-delete-in-use', 'DELETE', '/resource_classes/CUSTOM_USED_RC',
           old='1.2'),
    *_both('rc-delete-missing', 'DELETE', '/resource_classes/CUSTOM_MISSING',
           old='1.2'),
    # Allocations.
    ('alloc-capacity@1.0', 'PUT', '/allocations/' + NEW_CONSUMERS[0], '1.0',
     {'allocations': [{'resource_provider': {'uuid': PROVIDER},
                       'resources': {'VCPU': 100}}]}, {}),
    ('alloc-capacity@1.39', 'PUT', '/allocations/' + NEW_CONSUMERS[1],
     '1.39', _allocation({'VCPU': 100}), {}),
    ('alloc-unknown-rp@1.39', 'PUT', '/allocations/' + NEW_CONSUMERS[2],
     '1.39', _allocation({'VCPU': 1}, provider=MISSING), {}),
    ('alloc-unknown-class@1.39', 'PUT', '/allocations/' + NEW_CONSUMERS[3],
     '1.39', _allocation({'CUSTOM_NOPE': 1}), {}),
    ('alloc-consumer-generation@1.39', 'PUT', '/allocations/' + CONSUMER,
     '1.39', _allocation({'VCPU': 1}), {}),
    *_both('alloc-schema', 'PUT', '/allocations/' + NEW_CONSUMERS[4], {}),
    ('alloc-post-capacity@1.39', 'POST', '/allocations', '1.39',
     {NEW_CONSUMERS[5]: _allocation({'VCPU': 100})}, {}),
    *_both('alloc-delete-missing', 'DELETE', '/allocations/' + MISSING),
    *_both('rp-allocations-missing', 'GET',
           '/resource_providers/%s/allocations' % MISSING),
    # Allocation candidates.
    *_both('ac-no-resources', 'GET', '/allocation_candidates',
           old='1.10'),
    *_both('ac-bad-resources', 'GET',
           '/allocation_candidates?resources=VCPU', old='1.10'),
    *_both('ac-unknown-class', 'GET',
           '/allocation_candidates?resources=CUSTOM_NOPE:1', old='1.10'),
    # The reshaper.
    ('reshaper-generation@1.39', 'POST', '/reshaper', '1.39',
     {'inventories': {PROVIDER: {'resource_provider_generation': 0,
                                 'inventories': {}}},
      'allocations': {}}, SERVICE),
    ('reshaper-schema@1.39', 'POST', '/reshaper', '1.39', {}, SERVICE),
    # Other formats than JSON, by Accept.
    *[(name + '-' + kind, method, path, version, body,
       {**headers, 'Accept': accept})
      for kind, accept in (('plain', 'text/plain'), ('html', 'text/html'))
      for name, method, path, version, body, headers in [
          ('rp-missing@1.39', 'GET', '/resource_providers/' + MISSING,
           '1.39', None, {}),
          ('rp-missing@1.22', 'GET', '/resource_providers/' + MISSING,
           '1.22', None, {}),
          ('rp-duplicate-name@1.39', 'POST', '/resource_providers', '1.39',
           {'name': 'cn'}, {}),
          ('schema@1.39', 'POST', '/resource_providers', '1.39', {}, {}),
          ('version-too-high', 'GET', '/resource_providers', '1.99', None,
           {}),
          ('method@1.39', 'PATCH', '/resource_providers', '1.39', None,
           {}),
      ]],
]


def request_parts(probe):
    """(method, path, headers, body bytes) of a probe, headers with
    the microversion, the token, Accept and the body's media type (a
    header of value None is left out)."""
    _name, method, path, version, body, extra = probe
    headers = {'X-Auth-Token': 'admin', 'Accept': 'application/json'}
    if version is not None:
        headers['OpenStack-API-Version'] = 'placement ' + version
    if body is not None and not isinstance(body, str):
        body = json.dumps(body)
        headers.update(JSON_BODY)
    elif body is not None:
        headers.update(JSON_BODY)
    headers.update(extra)
    headers = {key: value for key, value in headers.items()
               if value is not None}
    return method, path, headers, None if body is None else body.encode()


def normalized(body):
    """``body`` (bytes) with every request id replaced by REQUEST_ID."""
    return _REQUEST_IDS.sub(REQUEST_ID.encode(), body)


def answers(send):
    """{probe name: {status, content_type, body}}: each probe's answer,
    by ``send(method, path, headers, body) -> (status, content type,
    body bytes)``, once SETUP is made through it."""
    for method, path, version, body in SETUP:
        status, _type, text = send(
            *request_parts((None, method, path, version, body, {})))
        assert status < 300, (method, path, status, text)
    found = {}
    for probe in PROBES:
        status, content_type, body = send(*request_parts(probe))
        found[probe[0]] = {'status': status, 'content_type': content_type,
                           'body': normalized(body).decode()}
    return found


def load_record():
    return json.loads(UPSTREAM_RECORD.read_text())


def write_record(record):
    UPSTREAM_RECORD.write_text(
        json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False)
        + '\n')
