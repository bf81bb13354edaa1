"""Parsing GET /allocation_candidates query strings into a Request, with
the messages (and their precedence) observed on upstream.
"""
import collections
import urllib.parse

import pytest

from placement import exception
from placement import querylang

AGG1 = '11111111-2222-3333-4444-555555555555'
AGG2 = '11111111-2222-3333-4444-666666666666'
LATEST = (1, 39)


Refusal = collections.namedtuple('Refusal', 'detail code')


def parse(query, version=LATEST):
    return querylang.parse(
        urllib.parse.parse_qsl(query, keep_blank_values=True), version)


def error(query, version=LATEST):
    with pytest.raises(exception.BadInput) as info:
        parse(query, version)
    return Refusal(str(info.value), info.value.code)


class TestGroups:
    def test_unsuffixed_group(self):
        parsed = parse('resources=VCPU:1,MEMORY_MB:512&required=A,!B'
                       '&member_of=in:%s,%s&member_of=!%s'
                       % (AGG1, AGG2, AGG1))
        [group] = parsed.groups
        assert group.suffix == '' and not group.single_provider
        assert group.resources == {'VCPU': 1, 'MEMORY_MB': 512}
        assert group.required == [frozenset(['A'])]
        assert group.forbidden == {'B'}
        assert group.member_of == [{AGG1, AGG2}]
        assert group.forbidden_aggs == {AGG1}

    def test_groups_in_order_of_first_appearance(self):
        parsed = parse('required_B=X&resources_A=VCPU:1&resources_B=DISK_GB:1'
                       '&resources=MEMORY_MB:1&group_policy=none')
        assert [g.suffix for g in parsed.groups] == ['_B', '_A', '']
        assert parsed.groups[0].single_provider

    def test_numbered_suffixes_before_1_33(self):
        parsed = parse('resources1=VCPU:1&resources22=VCPU:1'
                       '&group_policy=none', (1, 25))
        assert [g.suffix for g in parsed.groups] == ['1', '22']
        assert error('resources1=VCPU:1&resources_x=VCPU:1', (1, 25)).detail \
            .startswith("Invalid query string parameters: 'resources_x' does "
                        "not match any of the regexes")

    def test_in_tree_is_stripped(self):
        parsed = parse('resources=VCPU:1&in_tree=%20' + AGG1)
        assert parsed.groups[0].in_tree == AGG1

    def test_any_of_required_repeats_from_1_39(self):
        parsed = parse('resources=VCPU:1&required=A&required=in:B,C')
        assert parsed.groups[0].required == [
            frozenset(['A']), frozenset(['B', 'C'])]
        parsed = parse('resources=VCPU:1&required=A&required=B', (1, 38))
        assert parsed.groups[0].required == [frozenset(['B'])]


class TestRequestWide:
    def test_first_limit_and_group_policy_count(self):
        parsed = parse('resources=VCPU:1&limit=10&limit=1'
                       '&group_policy=isolate&group_policy=none')
        assert parsed.limit == 10
        assert parsed.isolate

    def test_limit_must_be_a_number(self):
        assert 'does not match' in error(
            'resources=VCPU:1&limit=x&limit=1').detail

    def test_root_required(self):
        parsed = parse('resources=VCPU:1&root_required=A,!B')
        assert parsed.root_required == {'A'}
        assert parsed.root_forbidden == {'B'}

    def test_root_required_once(self):
        exc = error('resources=VCPU:1&root_required=A&root_required=B')
        assert exc.code == exception.ILLEGAL_DUPLICATE_QUERYPARAM

    def test_root_required_conflict(self):
        exc = error('resources=VCPU:1&root_required=A,!A')
        assert exc.detail == ('Conflicting required and forbidden traits '
                              'found in root_required: A')
        assert exc.code == exception.QUERYPARAM_BAD_VALUE

    def test_root_required_has_no_any_of(self):
        assert 'only supported since microversion 1.39' in error(
            'resources=VCPU:1&root_required=in:A,B').detail

    def test_same_subtree(self):
        parsed = parse('resources_A=VCPU:1&resources_B=VF:1'
                       '&same_subtree=_A,_B,_A&group_policy=none')
        assert parsed.same_subtrees == [{'_A', '_B'}]
        exc = error('resources_A=VCPU:1&same_subtree=_A,,')
        assert exc.detail == ('Empty string (unsuffixed group) can not be '
                              'specified in `same_subtree` ')

    @pytest.mark.parametrize('version, nested, every_class', [
        ((1, 26), False, False),
        ((1, 27), False, True),
        ((1, 29), True, True),
    ])
    def test_version_semantics(self, version, nested, every_class):
        parsed = parse('resources=VCPU:1', version)
        assert parsed.nested is nested
        assert parsed.every_class is every_class


class TestChecks:
    def test_group_policy_needed_with_two_suffixed_groups(self):
        assert error('resources1=VCPU:1&resources2=VCPU:1').detail == (
            'The "group_policy" parameter is required when specifying '
            'more than one "resources{N}" parameter.')

    def test_orphans_before_1_36(self):
        version = (1, 35)
        assert error('required=A&required1=B', version).detail.endswith(
            'orphaned traits keys: required, required1')
        assert error('resources=VCPU:1&member_of1=' + AGG1,
                     version).detail.endswith(
            'orphaned member_of keys: member_of1')
        assert error('resources=VCPU:1&in_tree1=' + AGG1,
                     version).detail == (
            'All request groups must specify resources.')
        assert error('group_policy=none', version).detail == (
            'At least one request group (`resources` or `resources{$S}`) '
            'is required.')

    def test_resourceless_groups_from_1_36(self):
        exc = error('member_of1=' + AGG1)
        assert exc.code == exception.QUERYPARAM_MISSING_VALUE
        exc = error('resources1=VCPU:1&required2=A&group_policy=none')
        assert exc.detail == (
            'Resourceless suffixed group request should be specified in '
            "`same_subtree` query param: bad group(s) - ['2'].")
        exc = error('resources1=VCPU:1&same_subtree=1,3')
        assert exc.detail == (
            'Real suffixes should be specified in `same_subtree`: '
            "['3'] not found in ['1'].")
        parsed = parse('resources1=VCPU:1&required2=A&same_subtree=1,2'
                       '&group_policy=none')
        assert parsed.groups[1].resources == {}

    def test_conflicting_traits(self):
        assert error('resources=VCPU:1&required=A,!A'
                     '&resources1=VCPU:1&required1=in:B,C'
                     '&required1=!B,!C').detail == (
            'Conflicting required and forbidden traits found in the '
            'following traits keys: required1: (B, C), required: (A)')

    def test_first_bad_key_is_reported(self):
        assert 'Badly formed resources' in error(
            'resources=bad&required=,,').detail
        assert "Expected 'required'" in error(
            'required=,,&resources=bad').detail

    def test_in_tree_must_be_a_uuid(self):
        assert error('resources=VCPU:1&in_tree=nope').detail == (
            "Invalid query string parameters: Expected 'in_tree' parameter "
            "to be a format of uuid. Got: nope")
