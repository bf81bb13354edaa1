"""Property-based fuzzing of every JSON request body and of the query
strings of the searching GETs, on every backend.

Each test seeds a small cloud (a compute node with a NUMA child, a sharing
provider in the node's aggregate, a custom class and trait, a consumer
with allocations), then sends, per endpoint, a fixed corpus of hostile
requests built from a canonical valid one (every leaf and key replaced in
turn, raw hostile documents) and hypothesis-generated ones (schema-valid
bodies with hostile leaves, structurally mutated bodies, raw JSON
fragments). Every response is checked for:

- no 5xx (reported with the exception the server logged);
- no traceback or Python/driver internals in the body;
- a 4xx body that is Placement's JSON error document;
- a write refused with a 4xx leaving the database exactly as it was;
- an inventory with min_unit > max_unit refused (400), never stored.

Failures are collected per endpoint, deduplicated by probable cause (for
a 5xx: the exception and the placement function it left), the smallest
request kept for each, and reported together at the end.

Every request starts from the seeded rows: the database is snapshotted
(every row of every table) once seeded and after each write; a write that
changed anything is undone row by row, so the snapshot before the next
request is the seeded one again, and path parameters and generations in
bodies stay valid.

    tools/test.sh tests/api/test_fuzz.py
    PLACEMENT_TEST_BACKENDS=sqlite tools/test.sh tests/api/test_fuzz.py
    PLACEMENT_FUZZ_EXAMPLES=500 ...   (more generated examples per endpoint)
"""
import copy
import dataclasses
import http
import json
import logging
import os
import re
import traceback
import urllib.parse
import uuid as uuidlib

import hypothesis
from hypothesis import strategies as st
import pytest
import sqlalchemy as sa

from placement.candidates import survey_cache
from placement.db import backends
from placement.db import standard_sync
from placement.db import tables

import api_cloud
import sql_rows

JSON = 'application/json'
# Generated requests per endpoint, on top of the fixed corpus.
EXAMPLES = int(os.environ.get('PLACEMENT_FUZZ_EXAMPLES', '60'))
SETTINGS = hypothesis.settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
    suppress_health_check=list(hypothesis.HealthCheck))
REQUEST_ID = re.compile(r'^req-[a-f0-9-]{36}$')
# From this microversion error documents carry a code.
CODE_VERSION = (1, 23)
WRITES = ('PUT', 'POST', 'PATCH', 'DELETE')
# Answered in front of the API pipeline
# (placement.api.operations.extensions): no
# microversion, no request id.
EXTENSIONS = ('/x-openapi.json', '/healthcheck')
# The admin token is a service's too: POST /reshaper is for services only.
ROLES = {'X-Roles': 'admin,service'}

# What must never reach a client: tracebacks, exception class names,
# driver and library names (unless the request itself carried them).
LEAKS = [re.compile(p) for p in (
    r'Traceback', r'File "', r'line \d+, in ', r'site-packages',
    r'\b(?:[A-Z][a-z0-9]+)+(?:Error|Exception|Warning)\b',
    r'(?i)sqlalchemy', r'(?i)pymysql', r'(?i)psycopg', r'(?i)sqlite3',
    r'Background on this error', r'<class ', r' object at 0x',
    r'(?i)\bbuiltins\b')]


# -- JSON text the standard library will not write ----------------------------

class Raw:
    """A JSON fragment written verbatim (NaN, 1e400, deep nesting)."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return 'Raw(%s)' % _short(self.text, 40)

    def __eq__(self, other):
        return isinstance(other, Raw) and other.text == self.text

    def __hash__(self):
        return hash(self.text)


class Pairs:
    """A JSON object written with these (key, value) pairs: keys may repeat."""

    def __init__(self, items):
        self.items = list(items)

    def __repr__(self):
        return 'Pairs(%r)' % (self.items,)


def dumps(value, ascii=True):
    """``value`` as JSON text. With ``ascii`` lone surrogates become \\uXXXX
    escapes; without, they stay raw (invalid UTF-8 once encoded).
    """
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, (dict, Pairs)):
        items = value.items if isinstance(value, Pairs) else value.items()
        return '{%s}' % ', '.join(
            '%s: %s' % (json.dumps(key, ensure_ascii=ascii),
                        dumps(item, ascii)) for key, item in items)
    if isinstance(value, (list, tuple)):
        return '[%s]' % ', '.join(dumps(item, ascii) for item in value)
    return json.dumps(value, ensure_ascii=ascii)


def encode(value, ascii=True):
    return dumps(value, ascii).encode('utf-8', 'surrogatepass')


_RUN = re.compile(r'(.{1,8}?)\1{7,}', re.DOTALL)


def _short(text, limit=160):
    """``text`` (bytes: UTF-8, other bytes shown as \\xNN) for a report:
    runs written ``<'[' x 5000>``, the middle of long ones cut out.
    """
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'backslashreplace')
    size = len(text)
    shown = _RUN.sub(lambda m: '<%r x %d>' % (
        m.group(1), len(m.group(0)) // len(m.group(1))), text)
    shown = ''.join(c if c.isprintable() else repr(c)[1:-1] for c in shown)
    if len(shown) > limit:
        shown = '%s...%s' % (shown[:limit - 40], shown[-30:])
    if '...' in shown or _RUN.search(text):
        shown += ' (%d chars)' % size
    return shown


# -- hostile values -----------------------------------------------------------

def deep_list(depth):
    return Raw('[' * depth + ']' * depth)


def deep_object(depth):
    return Raw('{"a": ' * depth + '1' + '}' * depth)


DEPTHS = (100, 500, 900, 5000)
DEEP = [deep_list(n) for n in DEPTHS] + [deep_object(n) for n in DEPTHS]
RAW_NUMBERS = [Raw(t) for t in (
    'NaN', 'Infinity', '-Infinity', '1e400', '-1e400', '-0', '1E2',
    '1.0e0', '0.1e-400', '9' * 5000)]
BIG_INTS = [2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 63 - 1, 2 ** 63, 2 ** 64,
            10 ** 30, -1, 0, -2 ** 31 - 1, -2 ** 63 - 1]
FLOATS = [1.5, 10.0, 0.5, -0.0, 1e308, 3.5e38, 3.40282e+38, 1e-300, 0.1]
SURROGATES = ['\ud800', '\udfff', 'a\ud800b', 'CUSTOM_\udfff',
              '\udfff\ud800', '\udbff\udfff']
STRINGS = [
    '', ' ', 'x' * 200, 'x' * 201, 'x' * 255, 'x' * 256, 'x' * 10000,
    'a\x00b', '\x00', '\U0001F680', 'rack \U0001F680', 'CUSTOM_\U0001F680',
    "'; DROP TABLE traits; --", "' OR '1'='1", '%', '_', '%_%', 'CUSTOM_%',
    'CUSTOM__', '\\', '"', '\u202e', '\ufeff', '\t\n\r', 'caf\u00e9',
    'I\u0307', 'custom_lower', 'VCPU', ' VCPU', 'VCPU ', 'in:', '!', '/',
    '?#&', '\x7f', '\u2028']
WRONG_TYPES = [None, True, False, [], {}, ['x'], {'a': 1}, 'x', 1, 1.5]
KEYS = ['', ' ', 'x' * 300, 'x' * 10000, 'a\x00', '%', '_', 'VCPU ', 'vcpu',
        'CUSTOM_%', '\U0001F680', "'", '\ufeff'] + SURROGATES
# Path segments where a uuid, class or consumer is expected.
SEGMENTS = ['not-a-uuid', '%ED%A0%80', '%FF', '%F0%9F%9A%80', 'x' * 300,
            'CUSTOM_%25', '00000000-0000-0000-0000-000000000000']
# Substituted for each leaf of a canonical body in turn: all of COMMON,
# then what suits the leaf's type (see _leaf_corpus).
LEAF_COMMON = (RAW_NUMBERS[:5] + [RAW_NUMBERS[-1]] + SURROGATES[:3]
               + [None, True, {}, [], deep_object(900), deep_list(5000)])
LEAF_STRINGS = ['', 'x' * 256, 'x' * 10000, 'a\x00b', '\U0001F680',
                "%_'\"; --"]
LEAF_NUMBERS = [2 ** 31, 2 ** 63, 10 ** 30, -1, 0, 1.5]
# Renamed to, for each key of a canonical body in turn.
KEY_CORPUS = ['\ud800', '\udfff', '', 'x' * 300, 'a\x00']
# Whole bodies, sent as they are.
RAW_BODIES = [
    b'', b' ', b'null', b'true', b'0', b'"x"', b'[]', b'{}', b'{', b'}',
    b'[', b'{"a": }', b'{"a": 1,}', b'[1,]', b"{'a': 1}", b'NaN',
    b'Infinity', b'-Infinity', b'1e400', b'{"a": NaN}', b'\xff\xfe\xfd',
    b'\xed\xa0\x80', b'"\xed\xa0\x80"', b'{"name": "\xc0\xaf"}',
    b'{"name": "caf\xe9"}', b'\xef\xbb\xbf{}', '{}'.encode('utf-16'),
    b'\x00', b'{"a": "\x00"}', b'{"a": "\\u0000"}', b'{}{}', b'{} x',
    b'/* c */ {}', b'"\\ud800"', b'["\\udfff"]', b'{"\\ud800": 1}',
    b'{"\\udfff": "\\ud800"}', b'[' * 5000, b'{"a":' * 5000,
    b'9' * 5000, b'"' + b'x' * 1000000 + b'"', b'[' + b'1,' * 100000 + b'1]',
] + [encode(value) for value in DEEP + [deep_list(50000)]]
CONTENT_TYPES = [JSON, 'application/json; charset=utf-8',
                 'APPLICATION/JSON', 'application/json; charset=latin-1',
                 'application/json;;', 'text/plain']
SAFE_TEXT = st.text(
    alphabet=st.characters(exclude_categories=['Cs'],
                           exclude_characters='\x00'),
    min_size=1, max_size=30)
UUIDS = st.uuids().map(str)
NEW_UUID = 'f0f0f0f0-0000-4000-8000-000000000001'
CLASSES = ['VCPU', 'MEMORY_MB', 'DISK_GB', 'CUSTOM_FUZZ', 'CUSTOM_ABSENT',
           'IPV4_ADDRESS']
TRAITS = ['CUSTOM_FUZZ', 'HW_CPU_X86_AVX2', 'MISC_SHARES_VIA_AGGREGATE',
          'CUSTOM_ABSENT', 'HW_CPU_X86_SSE']


def _uuid_variants(uuid):
    """Other spellings of ``uuid``, or nothing if it is none."""
    try:
        uuidlib.UUID(uuid)
    except ValueError:
        return []
    return [uuid.upper(), uuid.replace('-', ''), '{%s}' % uuid,
            'urn:uuid:' + uuid, uuid + ' ', ' ' + uuid, uuid[:-1],
            uuid + '0', uuid[:-1] + 'g', uuid[:8] + '\ud800' + uuid[9:],
            uuid + '\x00', '00000000-0000-0000-0000-000000000000']


# -- the seeded cloud ---------------------------------------------------------

class Seed:
    """What every request points at most of the time."""

    def __init__(self, api):
        assert api.put('/resource_classes/CUSTOM_FUZZ').status_code == 201
        cloud = api_cloud.Cloud(api)
        self.cn = cloud.provider('fuzz-cn', inventory={
            'VCPU': 8, 'MEMORY_MB': {'total': 4096, 'max_unit': 2048},
            'CUSTOM_FUZZ': 4},
            traits=['CUSTOM_FUZZ', 'HW_CPU_X86_AVX2'], aggregates=['agg'])
        self.numa = cloud.provider('fuzz-numa', parent='fuzz-cn',
                                   inventory={'VCPU': 4})
        self.ss = cloud.provider(
            'fuzz-ss', inventory={'DISK_GB': 100},
            traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=['agg'])
        self.vm = cloud.allocate('fuzz-vm', {
            'fuzz-cn': {'VCPU': 2, 'MEMORY_MB': 512, 'CUSTOM_FUZZ': 1},
            'fuzz-ss': {'DISK_GB': 10}})
        self.agg = cloud.uuids['agg']
        self.providers = [self.cn, self.numa, self.ss]
        self.generations = {cloud.uuids[name]: generation
                            for name, generation in cloud.generations.items()}
        self.vm_generation = api.get(
            '/allocations/' + self.vm).json['consumer_generation']
        self.uuid_variants = _uuid_variants(self.cn)
        self.names = ['FUZZ-CN', 'fuzz-cn ', 'Fuzz-Ss', 'fuzz-c\u0301n']

    def gen(self, uuid):
        return self.generations.get(uuid, 0)

    def path_text(self, path):
        """A document path for a report, seeded uuids by name."""
        names = {self.cn: '<cn>', self.numa: '<numa>', self.ss: '<ss>',
                 self.vm: '<vm>', self.agg: '<agg>', NEW_UUID: '<new>'}
        return ''.join(
            '[%r]' % step if isinstance(step, int) or not step.isprintable()
            or not step else '.' + names.get(step, step) for step in path)

    def hostile(self, kind):
        """The values a leaf of ``kind`` may be replaced with."""
        pools = {
            'text': STRINGS + SURROGATES + WRONG_TYPES + DEEP
            + RAW_NUMBERS[:5] + BIG_INTS[:3] + self.names,
            'int': BIG_INTS + FLOATS + RAW_NUMBERS + WRONG_TYPES + DEEP
            + ['1', ''],
            'number': FLOATS + RAW_NUMBERS + BIG_INTS + WRONG_TYPES + DEEP
            + ['1.0'],
            'uuid': self.uuid_variants + SURROGATES + STRINGS[:8]
            + WRONG_TYPES + DEEP,
            'key': KEYS + ['vcpu', 'VCPU\u0130', 'CUSTOM_\U0001F680'],
            'uuidkey': KEYS + [v for v in self.uuid_variants],
        }
        pool = st.sampled_from(pools[kind])
        if kind in ('text', 'key', 'uuidkey'):
            pool = st.one_of(pool, st.text(max_size=20))
        return pool


def _valid_leaf(_seed):
    return lambda strategy, kind: strategy


def _hostile_leaf(seed):
    """A leaf that is hostile one time in four."""
    def leaf(strategy, kind):
        return st.integers(0, 3).flatmap(
            lambda i: seed.hostile(kind) if i == 0 else strategy)
    return leaf


def _pick(values):
    return st.sampled_from(list(values))


def _target(*uuids):
    """A seeded uuid for the path, now and then something else."""
    return st.one_of(_pick(uuids), _pick(uuids), _pick(uuids), _pick(uuids),
                     UUIDS, _pick(SEGMENTS))


def _with_path(paths, body):
    """(path values, body) from a strategy of path values and a function
    of the path values giving a body strategy.
    """
    return paths.flatmap(
        lambda values: body(values).map(lambda doc: (values, doc)))


# -- bodies, per endpoint -----------------------------------------------------

def _names(seed):
    return st.one_of(_pick(['fuzz-new', 'fuzz-cn', 'fuzz-ss', 'x' * 200]),
                     SAFE_TEXT)


def _record(leaf):
    small = st.integers(1, 10)
    return st.fixed_dictionaries(
        {'total': leaf(st.integers(1, 1000), 'int')},
        optional={'reserved': leaf(st.integers(0, 10), 'int'),
                  'min_unit': leaf(small, 'int'),
                  'max_unit': leaf(small, 'int'),
                  'step_size': leaf(small, 'int'),
                  'allocation_ratio': leaf(st.floats(0.1, 16), 'number')})


def _resources(leaf):
    return st.dictionaries(leaf(_pick(CLASSES), 'key'),
                           leaf(st.integers(1, 4), 'int'),
                           min_size=1, max_size=3)


def _keyed_allocations(seed, leaf):
    allocation = st.fixed_dictionaries(
        {'resources': _resources(leaf)},
        optional={'generation': leaf(st.integers(0, 5), 'int')})
    return st.dictionaries(leaf(_pick(seed.providers), 'uuidkey'),
                           allocation, max_size=2)


def _consumer_1_38(seed, leaf, generation):
    return st.fixed_dictionaries({
        'allocations': _keyed_allocations(seed, leaf),
        'project_id': leaf(_pick(['project', 'other-project']), 'text'),
        'user_id': leaf(_pick(['user', 'other-user']), 'text'),
        'consumer_generation': leaf(st.just(generation), 'int'),
        'consumer_type': leaf(_pick(['INSTANCE', 'MIGRATION']), 'text'),
    }, optional={'mappings': st.dictionaries(
        leaf(_pick(['', '_A', 'x']), 'key'),
        st.lists(leaf(_pick(seed.providers), 'uuid'), min_size=1,
                 max_size=2), max_size=2)})


def _consumers(seed):
    """(consumer uuid, its generation): the seeded one, or a new one."""
    return st.one_of(st.just((seed.vm, seed.vm_generation)),
                     st.just((seed.vm, seed.vm_generation)),
                     UUIDS.map(lambda u: (u, None)),
                     _pick(SEGMENTS).map(lambda u: (u, None)))


def _provider_post(seed, leaf):
    return st.fixed_dictionaries(
        {'name': leaf(_names(seed), 'text')},
        optional={'uuid': leaf(UUIDS, 'uuid'),
                  'parent_provider_uuid': leaf(
                      st.one_of(_pick(seed.providers), st.none()), 'uuid')}
    ).map(lambda doc: ({}, doc))


def _provider_put(seed, leaf):
    return _with_path(
        _target(seed.numa, seed.cn, seed.ss).map(lambda u: {'uuid': u}),
        lambda _values: st.fixed_dictionaries(
            {'name': leaf(_names(seed), 'text')},
            optional={'parent_provider_uuid': leaf(
                st.one_of(_pick(seed.providers), st.none()), 'uuid')}))


def _inventories_put(seed, leaf):
    return _with_path(
        _target(*seed.providers).map(lambda u: {'uuid': u}),
        lambda values: st.fixed_dictionaries({
            'resource_provider_generation': leaf(
                st.just(seed.gen(values['uuid'])), 'int'),
            'inventories': st.dictionaries(
                leaf(_pick(CLASSES), 'key'), _record(leaf), max_size=3)}))


def _inventories_post(seed, leaf):
    return _with_path(
        _target(*seed.providers).map(lambda u: {'uuid': u}),
        lambda _values: st.tuples(
            _record(leaf), leaf(_pick(CLASSES), 'text')).map(
                lambda pair: dict(pair[0], resource_class=pair[1])))


def _inventory_put(seed, leaf):
    paths = st.tuples(
        _target(seed.cn, seed.cn, seed.ss),
        st.one_of(_pick(['VCPU', 'MEMORY_MB', 'CUSTOM_FUZZ', 'DISK_GB']),
                  _pick(['CUSTOM_ABSENT', 'vcpu'] + SEGMENTS))
    ).map(lambda pair: {'uuid': pair[0], 'rc': pair[1]})
    return _with_path(paths, lambda values: st.tuples(
        _record(leaf), leaf(st.just(seed.gen(values['uuid'])), 'int')).map(
            lambda pair: dict(pair[0], resource_provider_generation=pair[1])))


def _aggregate_uuids(seed, leaf):
    return st.lists(leaf(st.one_of(st.just(seed.agg), UUIDS), 'uuid'),
                    max_size=3)


def _aggregates_put(seed, leaf):
    return _with_path(
        _target(*seed.providers).map(lambda u: {'uuid': u}),
        lambda values: st.fixed_dictionaries({
            'aggregates': _aggregate_uuids(seed, leaf),
            'resource_provider_generation': leaf(
                st.just(seed.gen(values['uuid'])), 'int')}))


def _aggregates_put_1_1(seed, leaf):
    return _with_path(
        _target(*seed.providers).map(lambda u: {'uuid': u}),
        lambda _values: _aggregate_uuids(seed, leaf))


def _traits_put(seed, leaf):
    return _with_path(
        _target(*seed.providers).map(lambda u: {'uuid': u}),
        lambda values: st.fixed_dictionaries({
            'traits': st.lists(leaf(_pick(TRAITS), 'text'), max_size=3),
            'resource_provider_generation': leaf(
                st.just(seed.gen(values['uuid'])), 'int')}))


def _class_names():
    return st.one_of(_pick(['CUSTOM_FUZZ', 'CUSTOM_NEW', 'VCPU']),
                     st.from_regex(r'\ACUSTOM_[A-Z0-9_]{1,30}\Z'))


def _class_post(seed, leaf):
    return st.fixed_dictionaries(
        {'name': leaf(_class_names(), 'text')}).map(lambda doc: ({}, doc))


def _class_put_1_2(seed, leaf):
    paths = st.one_of(
        _pick(['CUSTOM_FUZZ', 'CUSTOM_FUZZ', 'VCPU', 'CUSTOM_ABSENT']),
        _pick(SEGMENTS)).map(lambda name: {'name': name})
    return _with_path(paths, lambda _values: st.fixed_dictionaries(
        {'name': leaf(_class_names(), 'text')}))


def _allocations_put(seed, leaf):
    return _consumers(seed).flatmap(lambda consumer: _consumer_1_38(
        seed, leaf, consumer[1]).map(
            lambda doc: ({'consumer_uuid': consumer[0]}, doc)))


def _allocations_put_1_12(seed, leaf):
    return _with_path(
        _consumers(seed).map(lambda c: {'consumer_uuid': c[0]}),
        lambda _values: st.fixed_dictionaries({
            'allocations': _keyed_allocations(seed, leaf),
            'project_id': leaf(_pick(['project', 'other']), 'text'),
            'user_id': leaf(_pick(['user', 'other']), 'text')}))


def _allocations_put_1_0(seed, leaf):
    allocation = st.fixed_dictionaries({
        'resource_provider': st.fixed_dictionaries(
            {'uuid': leaf(_pick(seed.providers), 'uuid')}),
        'resources': _resources(leaf)})
    return _with_path(
        _consumers(seed).map(lambda c: {'consumer_uuid': c[0]}),
        lambda _values: st.fixed_dictionaries({
            'allocations': st.lists(allocation, min_size=1, max_size=2)}))


def _many_consumers(seed, leaf, min_size):
    consumers = st.lists(
        st.one_of(st.just((seed.vm, seed.vm_generation)),
                  UUIDS.map(lambda u: (u, None))),
        min_size=min_size, max_size=2, unique_by=lambda c: c[0])
    return consumers.flatmap(lambda chosen: st.tuples(*[
        st.tuples(leaf(st.just(uuid), 'uuidkey'),
                  _consumer_1_38(seed, leaf, generation))
        for uuid, generation in chosen]).map(dict))


def _allocations_post(seed, leaf):
    return _many_consumers(seed, leaf, 1).map(lambda doc: ({}, doc))


def _reshaper_post(seed, leaf):
    providers = st.lists(_pick(seed.providers), min_size=1, max_size=2,
                         unique=True)
    inventories = providers.flatmap(lambda chosen: st.tuples(*[
        st.tuples(leaf(st.just(uuid), 'uuidkey'), st.fixed_dictionaries({
            'resource_provider_generation': leaf(
                st.just(seed.gen(uuid)), 'int'),
            'inventories': st.dictionaries(
                leaf(_pick(CLASSES), 'key'), _record(leaf), max_size=3)}))
        for uuid in chosen]).map(dict))
    return st.fixed_dictionaries({
        'inventories': inventories,
        'allocations': _many_consumers(seed, leaf, 0)}).map(
            lambda doc: ({}, doc))


# Canonical valid bodies: each must be accepted (a check of the seed and of
# the fuzzer's reach), then every leaf and key is replaced in turn.

def _consumer_doc(seed, allocations, generation):
    return {'allocations': allocations, 'project_id': 'project',
            'user_id': 'user', 'consumer_generation': generation,
            'consumer_type': 'INSTANCE'}


def _seeded_allocations(seed):
    return {seed.cn: {'resources': {'VCPU': 2, 'MEMORY_MB': 512,
                                    'CUSTOM_FUZZ': 1},
                      'generation': seed.gen(seed.cn)},
            seed.ss: {'resources': {'DISK_GB': 10}}}


def _full_record(total):
    return {'total': total, 'reserved': 1, 'min_unit': 1, 'max_unit': 4,
            'step_size': 1, 'allocation_ratio': 2.0}


CANONICAL = {
    'provider_post': lambda s: ({}, {
        'name': 'fuzz-new', 'uuid': NEW_UUID, 'parent_provider_uuid': s.cn}),
    'provider_put': lambda s: ({'uuid': s.numa}, {
        'name': 'fuzz-numa-renamed', 'parent_provider_uuid': s.cn}),
    'inventories_put': lambda s: ({'uuid': s.cn}, {
        'resource_provider_generation': s.gen(s.cn),
        'inventories': {'VCPU': _full_record(16),
                        'MEMORY_MB': {'total': 4096, 'max_unit': 2048},
                        'CUSTOM_FUZZ': {'total': 8}}}),
    'inventories_post': lambda s: ({'uuid': s.cn}, dict(
        _full_record(100), resource_class='DISK_GB')),
    'inventory_put': lambda s: ({'uuid': s.cn, 'rc': 'VCPU'}, dict(
        _full_record(16), resource_provider_generation=s.gen(s.cn))),
    'aggregates_put': lambda s: ({'uuid': s.ss}, {
        'aggregates': [s.agg, NEW_UUID],
        'resource_provider_generation': s.gen(s.ss)}),
    'aggregates_put_1_1': lambda s: ({'uuid': s.ss}, [s.agg, NEW_UUID]),
    'traits_put': lambda s: ({'uuid': s.cn}, {
        'traits': ['CUSTOM_FUZZ', 'HW_CPU_X86_SSE'],
        'resource_provider_generation': s.gen(s.cn)}),
    'class_post': lambda s: ({}, {'name': 'CUSTOM_FUZZ_NEW'}),
    'class_put_1_2': lambda s: ({'name': 'CUSTOM_FUZZ'},
                                {'name': 'CUSTOM_FUZZ_RENAMED'}),
    'allocations_put': lambda s: ({'consumer_uuid': s.vm}, dict(
        _consumer_doc(s, {s.cn: {'resources': {'VCPU': 1, 'MEMORY_MB': 256},
                                 'generation': s.gen(s.cn)},
                          s.ss: {'resources': {'DISK_GB': 5}}},
                      s.vm_generation),
        mappings={'': [s.cn, s.ss]})),
    'allocations_put_1_12': lambda s: ({'consumer_uuid': NEW_UUID}, {
        'allocations': {s.cn: {'resources': {'VCPU': 1},
                               'generation': s.gen(s.cn)}},
        'project_id': 'project', 'user_id': 'user'}),
    'allocations_put_1_0': lambda s: ({'consumer_uuid': NEW_UUID}, {
        'allocations': [{'resource_provider': {'uuid': s.cn},
                         'resources': {'VCPU': 1, 'MEMORY_MB': 64}}]}),
    'allocations_post': lambda s: ({}, {
        s.vm: dict(_consumer_doc(
            s, {s.cn: {'resources': {'VCPU': 1}, 'generation': s.gen(s.cn)}},
            s.vm_generation), mappings={'': [s.cn]}),
        NEW_UUID: _consumer_doc(s, {s.ss: {'resources': {'DISK_GB': 1}}},
                                None)}),
    'reshaper_post': lambda s: ({}, {
        'inventories': {
            s.cn: {'resource_provider_generation': s.gen(s.cn),
                   'inventories': {'VCPU': {'total': 8},
                                   'MEMORY_MB': {'total': 4096},
                                   'CUSTOM_FUZZ': {'total': 4}}},
            s.numa: {'resource_provider_generation': s.gen(s.numa),
                     'inventories': {'VCPU': _full_record(6)}}},
        'allocations': {s.vm: dict(
            _consumer_doc(s, _seeded_allocations(s), s.vm_generation),
            mappings={'': [s.cn, s.ss]})}}),
}


@dataclasses.dataclass
class BodyEndpoint:
    name: str
    method: str
    template: str
    version: str
    build: object
    inventory: bool = False

    @property
    def label(self):
        return '%s %s @%s' % (self.method, self.template, self.version)

    def canonical(self, seed):
        return CANONICAL[self.name](seed)


RP = '/resource_providers/{uuid}'
BODY_ENDPOINTS = [
    BodyEndpoint('provider_post', 'POST', '/resource_providers', '1.39',
                 _provider_post),
    BodyEndpoint('provider_put', 'PUT', RP, '1.39', _provider_put),
    BodyEndpoint('inventories_put', 'PUT', RP + '/inventories', '1.39',
                 _inventories_put, inventory=True),
    BodyEndpoint('inventories_post', 'POST', RP + '/inventories', '1.39',
                 _inventories_post, inventory=True),
    BodyEndpoint('inventory_put', 'PUT', RP + '/inventories/{rc}', '1.39',
                 _inventory_put, inventory=True),
    BodyEndpoint('aggregates_put', 'PUT', RP + '/aggregates', '1.39',
                 _aggregates_put),
    BodyEndpoint('aggregates_put_1_1', 'PUT', RP + '/aggregates', '1.1',
                 _aggregates_put_1_1),
    BodyEndpoint('traits_put', 'PUT', RP + '/traits', '1.39', _traits_put),
    BodyEndpoint('class_post', 'POST', '/resource_classes', '1.39',
                 _class_post),
    BodyEndpoint('class_put_1_2', 'PUT', '/resource_classes/{name}', '1.2',
                 _class_put_1_2),
    BodyEndpoint('allocations_put', 'PUT', '/allocations/{consumer_uuid}',
                 '1.39', _allocations_put),
    BodyEndpoint('allocations_put_1_12', 'PUT',
                 '/allocations/{consumer_uuid}', '1.12',
                 _allocations_put_1_12),
    BodyEndpoint('allocations_put_1_0', 'PUT',
                 '/allocations/{consumer_uuid}', '1.0', _allocations_put_1_0),
    BodyEndpoint('allocations_post', 'POST', '/allocations', '1.39',
                 _allocations_post),
    BodyEndpoint('reshaper_post', 'POST', '/reshaper', '1.39',
                 _reshaper_post, inventory=True),
]


def _fill(template, values):
    for name, value in values.items():
        template = template.replace('{%s}' % name, value)
    return template


# -- structural mutations -----------------------------------------------------

def _nodes(value, path=()):
    """Paths (tuples of keys and indexes) to every node of a document."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _nodes(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _nodes(item, path + (index,))


def _get(doc, path):
    for step in path:
        doc = doc[step]
    return doc


def _set(doc, path, value):
    """A copy of ``doc`` with the node at ``path`` replaced (or removed,
    when ``value`` is _DROP).
    """
    if not path:
        return value
    doc = copy.deepcopy(doc)
    parent = _get(doc, path[:-1])
    if value is _DROP:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


_DROP = object()


def _rename(doc, path, new_key):
    """A copy of ``doc`` whose key at ``path`` is ``new_key`` (in place)."""
    parent = _get(doc, path[:-1])
    renamed = {(new_key if key == path[-1] else key): value
               for key, value in parent.items()}
    return _set(doc, path[:-1], renamed)


def _duplicate(doc, path, value, first):
    """``doc`` with the key at ``path`` repeated in its object, the extra
    occurrence (``value``) first or last: parsers keep the last one.
    """
    items = list(_get(doc, path[:-1]).items())
    extra = [(path[-1], value)]
    return _set(doc, path[:-1], Pairs(extra + items if first
                                      else items + extra))


MUTATIONS = ('replace', 'drop', 'add', 'rename', 'duplicate', 'wrap',
             'unwrap', 'replace')


def _mutate(doc, steps):
    """Apply ``steps`` (index, operation, value, key) in turn; an
    operation that does not apply to the node chosen changes nothing.
    """
    for index, operation, value, key in steps:
        if isinstance(doc, (Raw, Pairs)):
            break
        nodes = list(_nodes(doc))
        path = nodes[index % len(nodes)]
        node = _get(doc, path)
        parent = _get(doc, path[:-1]) if path else None
        if operation == 'replace':
            doc = _set(doc, path, value)
        elif operation == 'drop' and path:
            doc = _set(doc, path, _DROP)
        elif operation == 'add' and isinstance(node, dict):
            doc = _set(doc, path, dict(node, **{key: value}))
        elif operation == 'add' and isinstance(node, list):
            doc = _set(doc, path, node + [value])
        elif operation == 'rename' and isinstance(parent, dict):
            doc = _rename(doc, path, key)
        elif operation == 'duplicate' and isinstance(parent, dict):
            doc = _duplicate(doc, path, value, first=index % 2 == 0)
        elif operation == 'wrap':
            doc = _set(doc, path, [node])
        elif operation == 'unwrap' and isinstance(node, dict):
            doc = _set(doc, path, list(node.values()))
        elif operation == 'unwrap' and isinstance(node, list):
            doc = _set(doc, path, node[0] if node else {})
    return doc


def _mutations(seed):
    anything = st.one_of(*(seed.hostile(kind) for kind in (
        'text', 'int', 'number', 'uuid')))
    return st.lists(st.tuples(
        st.integers(0, 10 ** 6), _pick(MUTATIONS), anything,
        st.one_of(seed.hostile('key'), _pick(['extra', 'total', 'name']))),
        min_size=1, max_size=3)


# -- requests, responses and what is wrong with them --------------------------

@dataclasses.dataclass
class Request:
    method: str
    path: str
    version: str
    body: bytes = None
    content_type: str = JSON
    query: str = ''
    # The document before encoding, when there is one.
    document: object = None
    # Sent as PATH_INFO as it is (latin-1 text standing for raw bytes).
    path_info: str = None
    # How it differs from the endpoint's canonical request, if it does.
    note: str = None

    def size(self):
        return len(self.path) + len(self.query) + len(self.body or b'')

    def show(self):
        line = '%s %s' % (self.method, _short(self.path, 100)
                          if self.path_info is None
                          else 'raw bytes ' + repr(self.path_info.encode(
                              'latin-1'))[2:-1])
        if self.query:
            # Bytes as sent, beyond ASCII shown as \xNN unless UTF-8.
            line += '?' + _short(self.query.encode('latin-1'), 300)
        line += '  (OpenStack-API-Version: placement %s)' % self.version
        if self.body is not None:
            line += '\n      body'
            if self.content_type != JSON:
                line += ' [Content-Type: %s]' % self.content_type
            line += ': ' + _short(self.body, 300)
        if self.note:
            line += '\n      (%s)' % self.note
        return line


def body_request(endpoint, values, doc, ascii=True, content_type=JSON):
    return Request(endpoint.method, _fill(endpoint.template, values),
                   endpoint.version, body=encode(doc, ascii),
                   content_type=content_type, document=doc)


def raw_request(endpoint, values, body):
    return Request(endpoint.method, _fill(endpoint.template, values),
                   endpoint.version, body=body)


class _ServerLog(logging.Handler):
    """The errors the application logs (with their exceptions)."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def _logged_cause(records):
    """The cause of the first exception logged (see _exception_cause)."""
    for record in records:
        if record.exc_info and record.exc_info[1] is not None:
            return _exception_cause(record.exc_info[1])
    if records:
        return 'logged error', _short(records[0].getMessage(), 200)
    return 'nothing logged', 'nothing logged'


def _exception_cause(exc):
    """(key, text): the exception's class and the innermost placement
    function it left, then with its message and where it was raised.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if '/placement/' in f.filename
            and '/tests/' not in f.filename]
    where = ''
    if ours:
        frame = ours[-1]
        where = ' at %s:%s in %s()' % (
            frame.filename[frame.filename.rindex('/placement/') + 1:],
            frame.lineno, frame.name)
    if frames and (not ours or frames[-1] is not ours[-1]):
        last = frames[-1]
        where += ' (raised in %s:%s %s())' % (
            '/'.join(last.filename.rsplit('/', 2)[-2:]), last.lineno,
            last.name)
    message = _short(str(exc), 120)
    # Same exception from the same placement function: same cause,
    # whatever the backend's driver or the line.
    key = type(exc).__name__
    if ours:
        key += ' in %s %s()' % (
            ours[-1].filename[ours[-1].filename.rindex('/placement/') + 1:],
            ours[-1].name)
    return key, '%s: %s%s' % (type(exc).__name__, message, where)


def _declared_version(response):
    """The microversion a response says it answers with, or None."""
    header = response.headers.get('OpenStack-API-Version', '')
    match = re.match(r'^placement (\d+)\.(\d+)$', header)
    return match and (int(match.group(1)), int(match.group(2)))


def _error_document_problem(response, in_pipeline=True):
    """Why a 4xx body is not Placement's error document (with a code
    from the 1.23 the response declares), or None. Extensions answer in
    front of the request id middleware (``in_pipeline`` False): their
    errors have no request_id, as upstream's formatter leaves it out of
    an error that has none.
    """
    if response.headers.get('Content-Type') != JSON:
        return 'Content-Type is %r' % response.headers.get('Content-Type')
    try:
        document = json.loads(response.get_data())
    except ValueError:
        return 'body is not JSON'
    if not isinstance(document, dict) or set(document) != {'errors'}:
        return 'top level is not {"errors": [...]}'
    errors = document['errors']
    if not isinstance(errors, list) or len(errors) != 1:
        return '"errors" is not a list of one error'
    error = errors[0]
    expected = {'status', 'title', 'detail'}
    if in_pipeline:
        expected.add('request_id')
    declared = _declared_version(response)
    if declared and declared >= CODE_VERSION:
        expected.add('code')
    if not isinstance(error, dict) or set(error) != expected:
        return 'error keys are %s, not %s' % (
            sorted(error) if isinstance(error, dict) else error,
            sorted(expected))
    if error['status'] != response.status_code:
        return 'error status %r differs from %d' % (
            error['status'], response.status_code)
    if error['title'] != http.HTTPStatus(response.status_code).phrase:
        return 'title %r' % error['title']
    if not isinstance(error['detail'], str):
        return 'detail is not a string'
    if 'code' in expected and not (
            isinstance(error['code'], str)
            and error['code'].startswith('placement.')):
        return 'code %r' % error['code']
    if not in_pipeline:
        return None
    if not (isinstance(error['request_id'], str)
            and REQUEST_ID.match(error['request_id'])
            and error['request_id']
            == response.headers.get('X-Openstack-Request-Id')):
        return 'request_id %r' % error['request_id']
    return None


def _detail(response):
    try:
        return _short(json.loads(response.get_data())['errors'][0][
            'detail'].split('\n\n', 1)[-1].strip(), 300)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return _short(response.get_data(), 300)


NOT_JSON = ('NaN', 'Infinity', '-Infinity')


def _not_json(document):
    """Whether a NaN or Infinity literal (not JSON) is in the document."""
    if isinstance(document, Raw):
        return document.text in NOT_JSON
    if isinstance(document, (dict, Pairs)):
        items = document.items if isinstance(document, Pairs) else (
            document.items())
        return any(_not_json(value) for _key, value in items)
    if isinstance(document, list):
        return any(_not_json(value) for value in document)
    return False


def _inverted_units(document):
    """Whether some inventory record has integers min_unit > max_unit."""
    for path in _nodes(document):
        node = _get(document, path)
        if isinstance(node, dict):
            low, high = node.get('min_unit'), node.get('max_unit')
            if (type(low) is int and type(high) is int  # noqa: E721
                    and 'total' in node and low > high):
                return True
    return False


# -- database snapshots -------------------------------------------------------

def _keyed(table, rows):
    columns = [table.columns.keys().index(c.name)
               for c in table.primary_key.columns]
    return {tuple(row[i] for i in columns): row for row in rows}


def _describe_changes(before, after):
    changes = []
    for name in before:
        if before[name] == after[name]:
            continue
        table = tables.metadata.tables[name]
        old, new = _keyed(table, before[name]), _keyed(table, after[name])
        added = [new[k] for k in new if k not in old]
        removed = [old[k] for k in old if k not in new]
        changed = [(old[k], new[k]) for k in new
                   if k in old and old[k] != new[k]]
        parts = []
        if added:
            parts.append('+%d e.g. %s' % (len(added), _short(
                repr(tuple(added[0])), 120)))
        if removed:
            parts.append('-%d e.g. %s' % (len(removed), _short(
                repr(tuple(removed[0])), 120)))
        if changed:
            parts.append('~%d e.g. %s -> %s' % (
                len(changed), _short(repr(tuple(changed[0][0])), 100),
                _short(repr(tuple(changed[0][1])), 100)))
        changes.append('%s: %s' % (name, '; '.join(parts)))
    return changes


def _restore(engine, wanted, current):
    """Put the rows of ``wanted`` back, row by row."""
    with engine.begin() as conn:
        mysql = backends.of(conn) is backends.mysql.BACKEND
        if mysql:
            conn.exec_driver_sql('SET SESSION FOREIGN_KEY_CHECKS = 0')
        try:
            work = []
            for table in tables.metadata.sorted_tables:
                if wanted[table.name] == current[table.name]:
                    continue
                old = _keyed(table, wanted[table.name])
                new = _keyed(table, current[table.name])
                work.append((table, old, new))
            pk = lambda table, key: sa.and_(*(  # noqa: E731
                column == value for column, value in zip(
                    table.primary_key.columns, key)))
            names = lambda table: table.columns.keys()  # noqa: E731
            for table, old, new in work:
                for key in old:
                    if key in new and new[key] != old[key]:
                        conn.execute(table.update().where(pk(table, key))
                                     .values(dict(zip(names(table),
                                                      old[key]))))
            for table, old, new in reversed(work):
                for key in sorted(new, reverse=True):
                    if key not in old:
                        conn.execute(table.delete().where(pk(table, key)))
            for table, old, new in work:
                rows = [dict(zip(names(table), old[key]))
                        for key in sorted(old) if key not in new]
                if rows:
                    conn.execute(table.insert(), rows)
        finally:
            if mysql:
                conn.exec_driver_sql('SET SESSION FOREIGN_KEY_CHECKS = 1')
        standard_sync.sync_standard(conn)
    survey_cache.forget_surveys()


# -- the fuzzer ---------------------------------------------------------------

class Fuzzer:
    """Sends requests, checks each response, keeps one (the smallest)
    request per endpoint and probable cause.
    """

    def __init__(self, api, backend):
        self.api = api
        self.backend = backend
        self.seed = Seed(api)
        self.baseline = sql_rows.every_row(backend.engine)
        # (endpoint, cause) -> [size, request, text, count]
        self.failures = {}
        self.sent = 0

    def send(self, endpoint, request):
        log = _ServerLog()
        logger = logging.getLogger('placement')
        logger.addHandler(log)
        # Reported once per cause below, not once per request by pytest.
        logger.propagate = False
        try:
            headers = dict(ROLES)
            kwargs = {}
            if request.body is not None:
                headers['Content-Type'] = request.content_type
                kwargs['data'] = request.body
            environ = kwargs['environ_overrides'] = {}
            if request.query:
                environ['QUERY_STRING'] = request.query
            if request.path_info is not None:
                environ['PATH_INFO'] = request.path_info
            try:
                response = self.api.request(
                    request.method, request.path, version=request.version,
                    headers=headers, **kwargs)
            except Exception as exc:
                # Out of the whole WSGI pipeline: the server's own page.
                cause, text = _exception_cause(exc)
                self.fail(endpoint.label, 'escaped the application: '
                          + cause, request, None, '\n      ' + text)
                return None
            finally:
                self.sent += 1
        finally:
            logger.removeHandler(log)
            logger.propagate = True
        self._check(endpoint.label, request, response, log.records,
                    endpoint.inventory)
        return response

    def fail(self, label, cause, request, response, extra=''):
        answer = 'no response' if response is None else '%d %s' % (
            response.status_code, _detail(response))
        text = '%s\n      -> %s%s' % (request.show(), answer, extra)
        key = (label, cause)
        kept = self.failures.get(key)
        if kept is None or request.size() < kept[0]:
            count = kept[3] if kept else 0
            self.failures[key] = [request.size(), request, text, count]
        self.failures[key][3] += 1

    def _check(self, label, request, response, records, inventory):
        status = response.status_code
        if status >= 500:
            cause, logged = _logged_cause(records)
            self.fail(label, '%d %s' % (status, cause), request, response,
                      '\n      server log: ' + logged)
        text = response.get_data().decode('utf-8', 'replace')
        sent = '%s %s %s %s' % (
            request.path, request.path_info, request.query,
            (request.body or b'').decode('utf-8', 'replace'))
        for leak in LEAKS:
            found = leak.search(text)
            if found and not leak.search(sent):
                self.fail(label, 'leak %r in a %d body' % (
                    found.group(0), status), request, response)
        in_pipeline = not request.path.startswith(EXTENSIONS)
        if in_pipeline and (response.headers.get('OpenStack-API-Version')
                            != 'placement ' + request.version):
            self.fail(label, 'a %d declares microversion %r' % (
                status, response.headers.get('OpenStack-API-Version')),
                request, response)
        if 400 <= status < 500:
            problem = _error_document_problem(response, in_pipeline)
            if problem:
                self.fail(label, 'bad %d error document: %s' % (
                    status, re.sub(r"'[^']*'", "'...'", problem)),
                    request, response)
        if (status < 300 and request.document is not None
                and _not_json(request.document)):
            self.fail(label, 'NaN/Infinity (not JSON) accepted (%d)'
                      % status, request, response)
        if (inventory and status < 300 and request.document is not None
                and _inverted_units(request.document)):
            self.fail(label, 'min_unit > max_unit accepted (%d)' % status,
                      request, response)
        if request.method in WRITES:
            self._check_database(label, request, response)

    def _check_database(self, label, request, response):
        after = sql_rows.every_row(self.backend.engine)
        if after == self.baseline:
            return
        if 400 <= response.status_code < 500:
            changes = _describe_changes(self.baseline, after)
            self.fail(label, 'half-written on %d (%s)' % (
                response.status_code, ', '.join(
                    c.split(':')[0] for c in changes)),
                request, response,
                '\n      changed: ' + '\n               '.join(changes))
        _restore(self.backend.engine, self.baseline, after)
        restored = sql_rows.every_row(self.backend.engine)
        assert restored == self.baseline, _describe_changes(
            self.baseline, restored)

    def report(self):
        by_label = {}
        for (label, cause), (_size, _request, text, count) in sorted(
                self.failures.items()):
            by_label.setdefault(label, []).append(
                '  [%s] (%d request%s)\n      %s' % (
                    cause, count, 's' if count > 1 else '', text))
        lines = ['%d distinct failure(s) on %s in %d requests:' % (
            len(self.failures), self.backend.name, self.sent)]
        for label, found in by_label.items():
            lines.append('\n%s' % label)
            lines.extend(found)
        return '\n'.join(lines)


def _run(strategy, send):
    """``send`` every example hypothesis draws from ``strategy``."""
    @SETTINGS
    @hypothesis.given(example=strategy)
    def run(example):
        send(example)
    run()


# -- JSON bodies --------------------------------------------------------------

def _corpus(endpoint, seed):
    """The fixed requests: the canonical body, each of its leaves and keys
    replaced in turn, inverted units, and every raw body.
    """
    values, doc = endpoint.canonical(seed)
    yield 'canonical', body_request(endpoint, values, doc)

    def changed(note, new_doc, **kwargs):
        request = body_request(endpoint, values, new_doc, **kwargs)
        request.note = 'canonical body, ' + note
        return request

    for path in list(_nodes(doc))[1:]:
        where = seed.path_text(path)
        for value in _leaf_corpus(_get(doc, path)):
            yield None, changed('%s = %s' % (where, _shown_value(value)),
                                _set(doc, path, value))
        if isinstance(path[-1], str):
            for key in KEY_CORPUS + _uuid_variants(path[-1])[:4]:
                yield None, changed('key %s renamed %s' % (
                    where, _shown_value(key)), _rename(doc, path, key))
            for first in (True, False):
                yield None, changed('key %s repeated %s with "\\ud800"' % (
                    where, 'before' if first else 'after'),
                    _duplicate(doc, path, '\ud800', first))
        node = _get(doc, path)
        if isinstance(node, str):
            yield None, changed(
                '%s + lone surrogate as raw (invalid UTF-8) bytes' % where,
                _set(doc, path, node + '\ud800'), ascii=False)
    if endpoint.inventory:
        inverted = INVERTED.get(endpoint.name)
        inverted = inverted(seed) if inverted else (values, _invert(doc))
        yield 'inverted', body_request(endpoint, *inverted)
    for name in values:
        # A segment of raw bytes, not UTF-8, as a server may pass it on.
        request = body_request(endpoint, dict(values, **{name: 'X'}), doc)
        request.path_info = _fill(endpoint.template, dict(
            values, **{name: '\xff\xed\xa0\x80'}))
        yield None, request
    for content_type in CONTENT_TYPES[1:]:
        yield None, body_request(endpoint, values, doc,
                                 content_type=content_type)
    for body in RAW_BODIES:
        yield None, raw_request(endpoint, values, body)


def _shown_value(value):
    return _short(value.text if isinstance(value, Raw) else repr(value), 60)


# Inverted units alone: the seeded allocations (2 VCPU) would break a
# min_unit of 3 on the compute node.
INVERTED = {
    'reshaper_post': lambda s: ({}, {
        'inventories': {s.numa: {
            'resource_provider_generation': s.gen(s.numa),
            'inventories': {'VCPU': {'total': 6, 'min_unit': 3,
                                     'max_unit': 2}}}},
        'allocations': {}}),
}


def _leaf_corpus(node):
    values = list(LEAF_COMMON)
    if isinstance(node, str):
        values += LEAF_STRINGS + [2 ** 63]
        # What a collation or a canonical form might equate with it.
        values += [node.upper(), node.lower(), node + ' ', ' ' + node,
                   node + '\u0301']
        values += _uuid_variants(node)
    elif type(node) in (int, float):  # noqa: E721
        values += LEAF_NUMBERS + ['x' * 10000, str(node)]
    else:
        values += LEAF_STRINGS + LEAF_NUMBERS
    unique = []
    for value in values:
        if value != node and value not in unique:
            unique.append(value)
    return unique


def _invert(doc):
    """``doc`` with min_unit 3 > max_unit 2 in every inventory record."""
    for path in list(_nodes(doc)):
        node = _get(doc, path)
        if isinstance(node, dict) and 'total' in node:
            doc = _set(doc, path, dict(node, min_unit=3, max_unit=2,
                                       reserved=0))
    return doc


def _generated(endpoint, seed):
    valid = endpoint.build(seed, _valid_leaf(seed))
    hostile = endpoint.build(seed, _hostile_leaf(seed))
    canonical = st.just(endpoint.canonical(seed))
    mutated = st.tuples(st.one_of(valid, canonical), _mutations(seed)).map(
        lambda pair: (pair[0][0], _mutate(pair[0][1], pair[1])))
    documents = st.one_of(valid, hostile, hostile, mutated, mutated)
    encoded = st.tuples(documents, st.integers(0, 7)).map(
        lambda pair: body_request(endpoint, pair[0][0], pair[0][1],
                                  ascii=pair[1] != 0))
    raw = st.tuples(valid, _pick(RAW_BODIES)).map(
        lambda pair: raw_request(endpoint, pair[0][0], pair[1]))
    return st.one_of(encoded, encoded, encoded, encoded, raw)


def test_json_bodies(api, backend):
    """Every JSON write endpoint: hostile bodies get a 2xx or a clean 4xx
    that wrote nothing.
    """
    fuzzer = Fuzzer(api, backend)
    refused = []
    for endpoint in BODY_ENDPOINTS:
        for kind, request in _corpus(endpoint, fuzzer.seed):
            response = fuzzer.send(endpoint, request)
            if response is None:
                continue
            if kind == 'canonical' and response.status_code >= 300:
                refused.append('%s: canonical body refused: %s\n    -> %d %s'
                               % (endpoint.label, request.show(),
                                  response.status_code, _detail(response)))
            if kind == 'inverted' and response.status_code >= 300 and (
                    response.status_code != 400):
                # (A 2xx is reported by the response checks.)
                fuzzer.fail(endpoint.label, 'min_unit > max_unit got %d, '
                            'not 400' % response.status_code, request,
                            response)
        _run(_generated(endpoint, fuzzer.seed),
             lambda request, endpoint=endpoint: fuzzer.send(endpoint,
                                                            request))
    if refused or fuzzer.failures:
        pytest.fail('\n'.join(refused + [fuzzer.report()]), pytrace=False)


# -- query strings ------------------------------------------------------------

QUERY_FRAGMENTS = [
    '%ED%A0%80', '%ED%BF%BF', 'CUSTOM_%ED%A0%80', '%F0%9F%9A%80', '%FF',
    '%C0%AF', '%', '%Z', '%ZZ', '%0', '%00', 'a%00b', '+', '%2B', '',
    '9' * 30, '2147483648', '9223372036854775808', '-1', '0', '1e400',
    'NaN', 'inf', 'x' * 10000, '%27%3B--', '%25', '%_', '_', ',', ':', '!',
    'in:', '!in:', '\xff', '\xed\xa0\x80', '%2C%2C', 'in:%ED%A0%80',
    '!%ED%A0%80', '%20', ' ', '%E2%80%AE', '%EF%BB%BF', '&', '=', '==',
    ';', '#']


def _quote(text):
    return urllib.parse.quote(text.encode('utf-8', 'surrogatepass'),
                              safe=':,!_')


@dataclasses.dataclass
class QueryEndpoint:
    path: str
    version: str
    canonical: object      # seed -> [(key, encoded value)]
    values: object         # seed -> {key: [encoded valid values]}
    extra_keys: tuple = ()
    inventory = False

    @property
    def label(self):
        return 'GET %s @%s' % (self.path, self.version)


def _rp_values(s):
    return {
        'name': ['fuzz-cn', 'fuzz-ss', '', 'x' * 300],
        'uuid': [s.cn, s.ss, s.cn.upper(), s.cn.replace('-', '')],
        'member_of': [s.agg, 'in:%s,%s' % (s.agg, NEW_UUID), '!' + s.agg,
                      '!in:' + s.agg],
        'resources': ['VCPU:1', 'VCPU:1,DISK_GB:5', 'CUSTOM_FUZZ:1',
                      'VCPU:0', 'VCPU:-1', 'VCPU', 'VCPU:1:2', ':1', 'VCPU:'],
        'in_tree': [s.cn, s.numa, NEW_UUID],
        'required': ['CUSTOM_FUZZ', '!CUSTOM_FUZZ',
                     'in:CUSTOM_FUZZ,HW_CPU_X86_AVX2',
                     'CUSTOM_FUZZ,!HW_CPU_X86_SSE', 'CUSTOM_ABSENT', ',', '!'],
    }


def _candidate_values(s):
    values = _rp_values(s)
    values.update({
        'limit': ['1', '5', '0', '-1', '1.5', '9' * 30],
        'group_policy': ['none', 'isolate', 'NONE', ''],
        'same_subtree': ['_A,_B', '_A', '_A,_UNKNOWN', '', ','],
        'root_required': ['CUSTOM_FUZZ', '!HW_CPU_X86_SSE',
                          'in:CUSTOM_FUZZ', '!'],
    })
    return values


def _trait_values(_s):
    return {'name': ['in:CUSTOM_FUZZ,HW_CPU_X86_AVX2', 'startswith:CUSTOM_',
                     'startswith:', 'in:', 'CUSTOM_FUZZ', 'in:,,'],
            'associated': ['true', 'false', 'TRUE', 'yes', '']}


def _usage_values(_s):
    return {'project_id': ['project', 'other', ''],
            'user_id': ['user', 'x' * 256, ''],
            'consumer_type': ['INSTANCE', 'all', 'unknown', 'ALL', 'all_x',
                              'lower']}


def _candidate_query(s):
    return [('resources', 'VCPU:1,DISK_GB:5'),
            ('required', 'CUSTOM_FUZZ'), ('member_of', s.agg),
            ('in_tree', s.cn), ('limit', '5'), ('group_policy', 'none'),
            ('resources_A', 'MEMORY_MB:64'),
            ('required_A', 'HW_CPU_X86_AVX2'),
            ('member_of_A', 'in:' + s.agg), ('in_tree_A', s.cn),
            ('same_subtree', '_A'), ('root_required', '!HW_CPU_X86_SSE')]


SUFFIXED = ('resources', 'required', 'member_of', 'in_tree')
QUERY_ENDPOINTS = [
    QueryEndpoint('/resource_providers', '1.39', lambda s: [
        ('name', 'fuzz-cn'), ('uuid', s.cn), ('member_of', 'in:' + s.agg),
        ('resources', 'VCPU:1'), ('in_tree', s.cn),
        ('required', 'CUSTOM_FUZZ')], _rp_values),
    QueryEndpoint('/allocation_candidates', '1.39', _candidate_query,
                  _candidate_values, extra_keys=tuple(
                      key + suffix for key in SUFFIXED
                      for suffix in ('1', '_A', '_B', '_', '_' + 'A' * 65,
                                     '_a', '%ED%A0%80', '\xff'))),
    QueryEndpoint('/allocation_candidates', '1.17', lambda s: [
        ('resources', 'VCPU:1'), ('required', 'CUSTOM_FUZZ'),
        ('limit', '1')], _candidate_values, extra_keys=('resources1',)),
    QueryEndpoint('/x-explain/allocation_candidates', '1.39',
                  _candidate_query, _candidate_values),
    QueryEndpoint('/x-capacity/allocation_candidates', '1.39',
                  _candidate_query, _candidate_values),
    QueryEndpoint('/x-openapi.json', '1.39', lambda s: [
        ('microversion', '1.39')], lambda s: {
            'microversion': ['1.0', '1.39', 'latest', '1.40', '']}),
    QueryEndpoint('/traits', '1.39', lambda s: [
        ('name', 'in:CUSTOM_FUZZ,HW_CPU_X86_AVX2'), ('associated', 'true')],
        _trait_values),
    QueryEndpoint('/usages', '1.39', lambda s: [
        ('project_id', 'project'), ('user_id', 'user'),
        ('consumer_type', 'INSTANCE')], _usage_values),
    QueryEndpoint('/usages', '1.9', lambda s: [
        ('project_id', 'project'), ('user_id', 'user')], _usage_values),
]


def _query_text(pairs):
    return '&'.join(key if value is None else '%s=%s' % (key, value)
                    for key, value in pairs)


def query_request(endpoint, pairs):
    return Request('GET', endpoint.path, endpoint.version,
                   query=_query_text(pairs))


def _query_corpus(endpoint, seed):
    pairs = [(k, _quote(v)) for k, v in endpoint.canonical(seed)]
    yield 'canonical', query_request(endpoint, pairs)
    for index, (key, value) in enumerate(pairs):
        for fragment in QUERY_FRAGMENTS:
            for new in (fragment, value + fragment):
                changed = list(pairs)
                changed[index] = (key, new)
                yield None, query_request(endpoint, changed)
        for fragment in ('%ED%A0%80', '%FF', '%00', '', 'x' * 300):
            changed = list(pairs)
            changed[index] = (key + fragment, value)
            yield None, query_request(endpoint, changed)
        # Repeated, bare, alone.
        yield None, query_request(endpoint, pairs + [(key, value)])
        yield None, query_request(endpoint, pairs + [(key, '%ED%A0%80')])
        yield None, query_request(endpoint, [(key, None)])
        yield None, query_request(endpoint, [(key, value)] * 50)
    yield None, query_request(endpoint, [('', 'x'), ('', None), ('&', '&')])
    yield None, query_request(endpoint, pairs * 100)


def _query_generated(endpoint, seed):
    values = endpoint.values(seed)
    keys = list(values) + list(endpoint.extra_keys) + ['x', '']

    def value_for(key):
        base = key.rstrip('1').split('_A')[0].split('_B')[0]
        valid = _pick([_quote(v) for v in values.get(base, ['x'])])
        fragment = _pick(QUERY_FRAGMENTS)
        return st.one_of(
            valid, valid, fragment,
            st.tuples(valid, fragment).map(''.join),
            st.tuples(fragment, valid).map(''.join),
            st.lists(valid, min_size=2, max_size=3).map(','.join),
            st.text(max_size=20).map(_quote),
            st.lists(_pick(SURROGATES + STRINGS[:12])).map(
                lambda parts: _quote(''.join(parts))),
            st.none())
    pair = _pick(keys).flatmap(
        lambda key: st.tuples(st.just(key), value_for(key)))
    return st.lists(pair, max_size=6).map(
        lambda pairs: query_request(endpoint, pairs))


def test_query_strings(api, backend):
    """The searching GETs: hostile query strings, sent raw, get a 200 or a
    clean 4xx.
    """
    fuzzer = Fuzzer(api, backend)
    refused = []
    for endpoint in QUERY_ENDPOINTS:
        for kind, request in _query_corpus(endpoint, fuzzer.seed):
            response = fuzzer.send(endpoint, request)
            if (kind == 'canonical' and response is not None
                    and response.status_code != 200):
                refused.append('%s: canonical query refused: %s\n    -> %d %s'
                               % (endpoint.label, request.show(),
                                  response.status_code, _detail(response)))
        _run(_query_generated(endpoint, fuzzer.seed),
             lambda request, endpoint=endpoint: fuzzer.send(endpoint,
                                                            request))
    if refused or fuzzer.failures:
        pytest.fail('\n'.join(refused + [fuzzer.report()]), pytrace=False)


# -- the checks themselves ---------------------------------------------------

class _Stub:
    """A client answering with canned responses, after ``effect``."""

    def __init__(self, response, effect=None):
        self.response = response
        self.effect = effect

    def request(self, *args, **kwargs):
        if self.effect:
            self.effect()
        if isinstance(self.response, Exception):
            raise self.response
        return self.response


@pytest.mark.sqlite_only
def test_checks_catch_what_they_are_for(api, backend):
    """Each check reports what it is for (with canned responses), and a
    half-written row is undone.
    """
    fuzzer = Fuzzer(api, backend)
    endpoint = BODY_ENDPOINTS[2]
    clean_400 = api.post('/resource_classes', json={})
    leaky_400 = api.post('/resource_classes', json={})
    leaky_400.set_data(b'Traceback (most recent call last):\n  File "x.py"')
    leaky_400.headers['Content-Type'] = 'text/plain'
    request = body_request(endpoint, {'uuid': fuzzer.seed.cn}, {})

    def half_write():
        with backend.engine.begin() as conn:
            conn.execute(tables.traits.insert().values(name='CUSTOM_HALF'))

    def crash():
        try:
            raise RecursionError('deep')
        except RecursionError:
            logging.getLogger('placement.api.app').exception('Unexpected')

    crashed = api.post('/resource_classes', json={})
    crashed.status_code = 500
    accepted = api.get('/resource_providers')
    for response, effect in ((clean_400, None), (leaky_400, None),
                             (clean_400, half_write), (crashed, crash),
                             (KeyError('k'), None), (accepted, None)):
        fuzzer.api = _Stub(response, effect)
        fuzzer.send(endpoint, request)
    fuzzer.send(endpoint, body_request(
        endpoint, {'uuid': fuzzer.seed.cn}, _invert(
            endpoint.canonical(fuzzer.seed)[1])))
    fuzzer.send(endpoint, body_request(
        endpoint, {'uuid': fuzzer.seed.cn}, {'a': [Raw('-Infinity')]}))
    causes = sorted(cause for _label, cause in fuzzer.failures)
    # (The exception left no placement function: the test raised it.)
    assert causes == [
        '500 RecursionError',
        'NaN/Infinity (not JSON) accepted (200)',
        "bad 400 error document: Content-Type is '...'",
        'escaped the application: KeyError',
        'half-written on 400 (traits)',
        "leak 'File \"' in a 400 body",
        "leak 'Traceback' in a 400 body",
        'min_unit > max_unit accepted (200)',
    ], fuzzer.report()
    assert 'RecursionError: deep' in fuzzer.report()
    assert 'traits: +1' in fuzzer.report()
    # The half-written row was taken out again.
    assert sql_rows.every_row(backend.engine) == fuzzer.baseline
