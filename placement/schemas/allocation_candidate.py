"""The GET /allocation_candidates query string, per microversion, and its
response (and that of its explanation, GET /x-explain/...).

Each version's query document extends the previous one the way
upstream's do, so that validation messages (which print the schema) read
the same.
"""
import copy
from typing import Any

from placement import versions
from placement.schemas import response

# The keys of a request group; from 1.25 they take a suffix naming it:
# numbers before 1.33, then short words.
GROUP_KEYS = ('resources', 'required', 'member_of', 'in_tree')
NUMBERED_SUFFIX = r'[1-9][0-9]*'
WORD_SUFFIX = r'[a-zA-Z0-9_-]{1,64}'
LIMIT_PATTERN = '^[1-9][0-9]*$'

_TEXT = {'type': ['string']}
_PATTERN = '^%s(%s)?$'


def _group_keys(suffix, kinds):
    return {(_PATTERN % (kind, suffix)): {'type': 'string'} for kind in kinds}


GET_1_10: dict[str, Any] = {
    'type': 'object',
    'properties': {
        'resources': {'type': 'string'},
    },
    'required': ['resources'],
    'additionalProperties': False,
}

GET_1_16 = copy.deepcopy(GET_1_10)
GET_1_16['properties']['limit'] = {
    # Query values are strings; an integer would be accepted too.
    'type': ['integer', 'string'],
    'pattern': LIMIT_PATTERN,
    'minimum': 1,
    'minLength': 1,
}

GET_1_17 = copy.deepcopy(GET_1_16)
GET_1_17['properties']['required'] = dict(_TEXT)

GET_1_21 = copy.deepcopy(GET_1_17)
GET_1_21['properties']['member_of'] = dict(_TEXT)

# Granular groups: resources, required and member_of take a suffix.
GET_1_25 = copy.deepcopy(GET_1_21)
for _key in ('resources', 'required', 'member_of'):
    del GET_1_25['properties'][_key]
del GET_1_25['required']
GET_1_25['patternProperties'] = _group_keys(
    NUMBERED_SUFFIX, ('resources', 'required', 'member_of'))
GET_1_25['properties']['group_policy'] = {
    'type': 'string',
    'enum': ['none', 'isolate'],
}

GET_1_31 = copy.deepcopy(GET_1_25)
GET_1_31['patternProperties'].update(
    _group_keys(NUMBERED_SUFFIX, ('in_tree',)))

GET_1_33 = copy.deepcopy(GET_1_31)
GET_1_33['patternProperties'] = _group_keys(
    WORD_SUFFIX, GROUP_KEYS)

GET_1_35 = copy.deepcopy(GET_1_33)
GET_1_35['properties']['root_required'] = dict(_TEXT)

GET_1_36 = copy.deepcopy(GET_1_35)
GET_1_36['properties']['same_subtree'] = dict(_TEXT)

GET = {
    versions.ALLOCATION_CANDIDATES: GET_1_10,
    versions.CANDIDATES_LIMIT: GET_1_16,
    versions.CANDIDATE_TRAITS: GET_1_17,
    versions.CANDIDATES_MEMBER_OF: GET_1_21,
    versions.GRANULAR_GROUPS: GET_1_25,
    versions.CANDIDATES_IN_TREE: GET_1_31,
    versions.WORD_SUFFIXES: GET_1_33,
    versions.ROOT_REQUIRED: GET_1_35,
    versions.SAME_SUBTREE: GET_1_36,
}

ALLOCATION_CANDIDATES = response.Body('AllocationCandidates', {
    'type': 'object',
    'required': ['allocation_requests', 'provider_summaries'],
    'properties': {
        'allocation_requests': {'type': 'array',
                                'items': {'type': 'object'}},
        'provider_summaries': {'type': 'object'},
    },
})
EXPLANATION = response.Body('Explanation', {
    'type': 'object',
    'description': 'See GET /x-explain/allocation_candidates in the '
                   'README.',
})
