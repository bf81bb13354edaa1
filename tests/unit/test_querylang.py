"""The query-string parsers, against messages observed on upstream."""
import pytest

from placement import exception
from placement import querylang as query
from placement.candidates import request

U1 = '11111111-2222-3333-4444-555555555555'
U2 = '11111111-2222-3333-4444-666666666666'
V1_18, V1_22, V1_23, V1_24, V1_32, V1_38, V1_39 = (
    (1, 18), (1, 22), (1, 23), (1, 24), (1, 32), (1, 38), (1, 39))

_RESOURCES_FORM = (
    'Badly formed resources parameter. Expected resources query string '
    'parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: ')


def _detail(fn, *args, **kwargs):
    with pytest.raises(exception.BadInput) as info:
        fn(*args, **kwargs)
    return str(info.value)


class TestResources:
    def test_amounts(self):
        assert query.resources('VCPU:2,MEMORY_MB:1024') == {
            'VCPU': 2, 'MEMORY_MB': 1024}

    def test_repeated_class_keeps_last(self):
        assert query.resources('VCPU:1,VCPU:2') == {'VCPU': 2}

    def test_int_syntax_is_pythons(self):
        assert query.resources('VCPU: 1,DISK_GB:+3') == {
            'VCPU': 1, 'DISK_GB': 3}

    @pytest.mark.parametrize('value, got', [
        ('', 'empty string.'),
        ('  ', 'empty string.'),
        ('VCPU', 'VCPU.'),
        ('VCPU:1,,', '.'),
        ('VCPU:1:2', 'VCPU:1:2.'),
    ])
    def test_badly_formed(self, value, got):
        assert _detail(query.resources, value) == _RESOURCES_FORM + got

    @pytest.mark.parametrize('amount', ['x', '1.5', ''])
    def test_not_an_integer(self, amount):
        assert _detail(query.resources, 'VCPU:' + amount) == (
            'Requested resource VCPU expected positive integer amount. '
            'Got: %s.' % amount)

    @pytest.mark.parametrize('amount, shown', [('0', '0'), ('-01', '-1')])
    def test_not_positive(self, amount, shown):
        assert _detail(query.resources, 'VCPU:' + amount) == (
            'Requested resource VCPU requires amount >= 1. Got: %s.' % shown)


_PLAIN_FORM = ("Invalid query string parameters: Expected 'required' "
               "parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC.")
_FORBIDDEN_FORM = ("Invalid query string parameters: Expected 'required' "
                   "parameter value of the form: "
                   "HW_CPU_X86_VMX,!CUSTOM_MAGIC.")
_ANY_FORM = ("Invalid query string parameters: Expected 'required' "
             "parameter value of the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC.")


class TestTraits:
    def test_plain_list_is_all_of(self):
        groups, forbidden = query.traits(' A , B')
        assert sorted(groups, key=sorted) == [{'A'}, {'B'}]
        assert forbidden == set()

    def test_forbidden(self):
        groups, forbidden = query.traits('A,!B,!!C', allow_forbidden=True)
        assert groups == [{'A'}]
        assert forbidden == {'B', 'C'}

    def test_same_trait_required_and_forbidden_is_accepted(self):
        assert query.traits('A,!A', allow_forbidden=True) == (
            [{'A'}], {'A'})

    def test_forbidden_not_allowed(self):
        assert _detail(query.traits, '!A') == _PLAIN_FORM + ' Got: !A'
        assert _detail(query.traits, ' !A') == _PLAIN_FORM + ' Got:  !A'

    @pytest.mark.parametrize('value', ['', ' ', ',', 'A,', '!', '! ', '!A,'])
    def test_empty_trait(self, value):
        assert _detail(query.traits, value) == (
            _PLAIN_FORM + ' Got an empty trait in: ' + value)
        assert _detail(query.traits, value, allow_forbidden=True) == (
            _FORBIDDEN_FORM + ' Got an empty trait in: ' + value)

    def test_name_after_bang_is_not_stripped(self):
        assert query.traits('! A', allow_forbidden=True) == ([], {' A'})

    def test_any_of(self):
        assert query.traits('in: A,B', allow_any=True) == (
            [{'A', 'B'}], set())

    def test_any_of_only_with_flag(self):
        assert _detail(query.traits, 'in:A', allow_forbidden=True) == (
            "Invalid query string parameters: The format "
            "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since "
            "microversion 1.39. Got: in:A")

    def test_in_prefix_must_be_first(self):
        assert query.traits(' in:A', allow_any=True) == ([{'in:A'}], set())

    @pytest.mark.parametrize('value', ['in:', 'in:A,', 'in:!A,', 'in:A, '])
    def test_any_of_empty_trait(self, value):
        assert _detail(query.traits, value, allow_any=True) == (
            _ANY_FORM + ' Got an empty trait in: ' + value)

    @pytest.mark.parametrize('value', ['in:!', 'in:A,!B'])
    def test_any_of_forbidden(self, value):
        assert _detail(query.traits, value, True, True) == (
            "Invalid query string parameters: The format "
            "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support forbidden "
            "traits. Got: " + value)


class TestRequiredTraits:
    def test_before_1_39_last_value_counts(self):
        assert query.required_traits(['in:A', '!B', 'C'], V1_22) == (
            [{'C'}], set())

    def test_from_1_39_values_are_anded(self):
        groups, forbidden = query.required_traits(
            ['in:A,B', '!C', 'D'], V1_39)
        assert groups == [{'A', 'B'}, {'D'}]
        assert forbidden == {'C'}

    def test_forbidden_by_version(self):
        assert _detail(query.required_traits, ['!A'], V1_18) == (
            _PLAIN_FORM + ' Got: !A')
        assert query.required_traits(['!A'], V1_22) == ([], {'A'})

    def test_any_of_by_version(self):
        with pytest.raises(exception.BadInput):
            query.required_traits(['in:A'], V1_38)
        with pytest.raises(exception.BadInput):
            query.required_traits(['in:A'], V1_39, allow_any=False)

    def test_trait_names_keep_the_request_order(self):
        assert request.trait_names(*query.required_traits(
            ['in:A,B', '!C', 'D'], V1_39)) == ['A', 'B', 'D', 'C']
        assert request.trait_names(*query.required_traits(
            ['Z,!X,A'], V1_39)) == ['Z', 'A', 'X']


def _bad_uuid(got):
    return ("Invalid query string parameters: Expected 'member_of' "
            "parameter to contain valid UUID(s). Got: " + got)


class TestMemberOf:
    def test_single(self):
        assert query.member_of([U1], V1_23) == ([{U1}], set())

    def test_any_of(self):
        assert query.member_of(['in:%s,%s,%s' % (U1, U2, U1)], V1_23) == (
            [{U1, U2}], set())

    def test_uuid_without_dashes(self):
        compact = U1.replace('-', '')
        assert query.member_of([compact], V1_23) == ([{compact}], set())

    def test_repeated_needs_1_24(self):
        assert _detail(query.member_of, [U1, 'foo'], V1_23) == (
            'Multiple member_of parameters are not supported')
        assert query.member_of([U1, 'in:' + U2], V1_24) == (
            [{U1}, {U2}], set())

    def test_forbidden(self):
        assert query.member_of(['!' + U1, '!in:%s,%s' % (U1, U2), U2],
                               V1_32) == ([{U2}], {U1, U2})

    def test_forbidden_needs_1_32(self):
        for value in ('!' + U1, '!in:' + U1):
            assert _detail(query.member_of, [value], V1_24) == (
                'Forbidden member_of parameters are not supported in the '
                'specified microversion')

    @pytest.mark.parametrize('value, got', [
        ('foo', 'foo'), ('', ''), ('in:', ''), ('!', ''), ('!in:', ''),
        ('!foo', 'foo'), ('!!' + U1, '!' + U1), ('IN:' + U1, 'IN:' + U1),
        (' ' + U1, ' ' + U1), ('in:%s,!%s' % (U1, U2), '!' + U2),
        ('in:%s,' % U1, ''),
    ])
    def test_invalid_uuid(self, value, got):
        # Checked before the version allows `!`.
        assert _detail(query.member_of, [value], V1_23) == _bad_uuid(got)

    @pytest.mark.parametrize('value', ['foo,bar', '!%s,%s' % (U1, U2)])
    def test_list_needs_in(self, value):
        assert _detail(query.member_of, [value], V1_39) == (
            "Multiple values for 'member_of' must be prefixed with the "
            "'in:' or '!in:' keyword using the valid microversion. Got: "
            + value)


class TestProviderFilter:
    """GET /resource_providers' filters as the group the candidate engine
    matches single providers against.
    """

    def test_no_group_filter(self):
        assert query.provider_filter([('name', 'cn1')], V1_39) is None

    def test_every_filter(self):
        group = query.provider_filter([
            ('resources', 'VCPU:1'), ('resources', 'VCPU:2'),
            ('required', 'CUSTOM_A,!CUSTOM_B'), ('member_of', 'in:' + U1),
            ('in_tree', U2), ('uuid', U1)], V1_22)
        assert group == request.Group(
            resources={'VCPU': 2}, required=[frozenset(['CUSTOM_A'])],
            forbidden={'CUSTOM_B'}, member_of=[{U1}], in_tree=U2)

    def test_required_repeats_count_from_1_39(self):
        pairs = [('required', 'CUSTOM_A'), ('required', 'CUSTOM_B')]
        assert query.provider_filter(pairs, V1_38).required == [
            frozenset(['CUSTOM_B'])]
        pairs[1] = ('required', 'in:CUSTOM_B,C')
        assert query.provider_filter(pairs, V1_39).required == [
            frozenset(['CUSTOM_A']), frozenset(['CUSTOM_B', 'C'])]

    def test_member_of_is_reported_before_resources(self):
        pairs = [('resources', 'VCPU'), ('member_of', 'nope')]
        assert 'member_of' in _detail(query.provider_filter, pairs, V1_18)
