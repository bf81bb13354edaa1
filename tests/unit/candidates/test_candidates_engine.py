"""The in-memory engine on hand-made universes: no database, no HTTP."""
import pytest

from placement.candidates import engine
from placement.candidates import narrowing as planner
from placement.candidates import sql

VCPU, MEM, DISK, VF = 1, 2, 3, 4
SHARES, SSD, FOO = 10, 11, 12
AGG_A, AGG_B = 100, 101


class World:
    """A universe built provider by provider."""

    def __init__(self):
        self.universe = engine.Universe()
        self.parents = {}

    def provider(self, ident, parent=None, inventory=None, traits=(),
                 aggregates=(), used=None):
        root = ident if parent is None else self.root(parent)
        self.parents[ident] = parent
        self.universe.root[ident] = root
        self.universe.add_parent(ident, parent)
        for rc, total in (inventory or {}).items():
            fields = total if isinstance(total, dict) else {'total': total}
            self.universe.add_inventories([sql.Inventory(
                provider=ident, rc=rc, root=root, parent=parent,
                total=fields['total'], reserved=fields.get('reserved', 0),
                ratio=fields.get('ratio', 1.0),
                sql_ratio=fields.get('ratio', 1.0),
                min_unit=fields.get('min_unit', 1),
                max_unit=fields.get('max_unit', fields['total']),
                step_size=fields.get('step_size', 1),
                used=(used or {}).get(rc, 0))])
        for trait in traits:
            self.universe.add_traits([(ident, trait, root)])
        for aggregate in aggregates:
            self.universe.add_aggregate(ident, aggregate, root)
        if SHARES in traits:
            self.universe.mark_sharing(SHARES)
        return ident

    def root(self, ident):
        while self.parents.get(ident) is not None:
            ident = self.parents[ident]
        return ident

    def share(self):
        """Sharing providers serve every tree with a provider in one of
        their aggregates (what sql.sharing_anchors computes).
        """
        universe = self.universe
        for sharer in universe.sharing:
            mine = universe.aggregates.get(sharer, set())
            for provider, aggregates in universe.aggregates.items():
                if aggregates & mine:
                    universe.add_share_anchor(sharer,
                                              universe.root[provider])

    def plan(self, *needs, anchor_ok=lambda root: True, **kwargs):
        self.share()
        return engine.Plan(self.universe, list(needs), anchor_ok, **kwargs)


def need(suffix='', resources=(), **kwargs):
    return engine.Need(suffix=suffix, resources=tuple(resources), **kwargs)


def candidates(plan, **kwargs):
    shape = plan.shaper()
    return [shape(chosen)[0] for _anchor, chosen in plan.candidates(**kwargs)]


@pytest.fixture
def world():
    return World()


class TestSingleProvider:
    def test_every_class_from_one_provider(self, world):
        world.provider(1, inventory={VCPU: 4, MEM: 1024})
        world.provider(2, inventory={VCPU: 4})
        plan = world.plan(need('1', [(VCPU, 1), (MEM, 512)]))
        assert candidates(plan) == [{1: {VCPU: 1, MEM: 512}}]

    @pytest.mark.parametrize('fields, amount, fits', [
        ({'total': 4, 'reserved': 1}, 3, True),
        ({'total': 4, 'reserved': 1}, 4, False),
        ({'total': 4, 'ratio': 2.0, 'max_unit': 8}, 8, True),
        ({'total': 4, 'ratio': 2.0, 'max_unit': 8}, 9, False),
        ({'total': 8, 'max_unit': 2}, 3, False),
        ({'total': 8, 'min_unit': 2}, 1, False),
        ({'total': 8, 'step_size': 2}, 3, False),
        ({'total': 8, 'step_size': 2}, 4, True),
    ])
    def test_capacity_rules(self, world, fields, amount, fits):
        world.provider(1, inventory={VCPU: fields})
        plan = world.plan(need('1', [(VCPU, amount)]))
        assert bool(candidates(plan)) is fits

    @pytest.mark.parametrize('fields, amount, refused', [
        ({'total': 4, 'reserved': 1}, 3, []),
        ({'total': 4, 'reserved': 1}, 4, ['capacity']),
        ({'total': 8, 'max_unit': 2}, 3, ['max_unit']),
        ({'total': 8, 'min_unit': 2}, 1, ['min_unit']),
        ({'total': 8, 'step_size': 2}, 3, ['step_size']),
        ({'total': 2, 'step_size': 2, 'max_unit': 2}, 3,
         ['capacity', 'max_unit', 'step_size']),
    ])
    def test_refusals_name_what_fitting_checks(self, world, fields, amount,
                                               refused):
        world.provider(1, inventory={VCPU: fields})
        [inv] = world.universe.by_class[VCPU]
        assert engine.refusals(inv, amount) == refused
        assert bool(world.universe.fitting(VCPU, amount)) is not refused

    def test_usage_counts(self, world):
        world.provider(1, inventory={VCPU: 4}, used={VCPU: 3})
        assert candidates(world.plan(need('1', [(VCPU, 1)])))
        assert not candidates(world.plan(need('1', [(VCPU, 2)])))

    def test_traits_and_aggregates_of_the_provider_itself(self, world):
        world.provider(1, inventory={VCPU: 4}, traits=[SSD],
                       aggregates=[AGG_A])
        world.provider(2, inventory={VCPU: 4}, traits=[SSD, FOO])
        world.provider(3, parent=1, inventory={VCPU: 4})
        assert candidates(world.plan(need(
            '1', [(VCPU, 1)], required=(frozenset([SSD]),),
            forbidden=frozenset([FOO])))) == [{1: {VCPU: 1}}]
        # The root's aggregate does not extend to a suffixed group's child.
        assert candidates(world.plan(need(
            '1', [(VCPU, 1)], member_of=(frozenset([AGG_A]),)))) == [
                {1: {VCPU: 1}}]
        # Anchors come in root order: 3 is in 1's tree.
        assert candidates(world.plan(need(
            '1', [(VCPU, 1)], forbidden_aggs=frozenset([AGG_A])))) == [
                {3: {VCPU: 1}}, {2: {VCPU: 1}}]

    def test_any_of_traits(self, world):
        world.provider(1, inventory={VCPU: 4}, traits=[SSD])
        world.provider(2, inventory={VCPU: 4}, traits=[FOO])
        world.provider(3, inventory={VCPU: 4})
        plan = world.plan(need('1', [(VCPU, 1)],
                               required=(frozenset([SSD, FOO]),)))
        assert candidates(plan) == [{1: {VCPU: 1}}, {2: {VCPU: 1}}]

    def test_in_tree(self, world):
        world.provider(1, inventory={VCPU: 4})
        world.provider(2, parent=1, inventory={VCPU: 4})
        world.provider(3, inventory={VCPU: 4})
        plan = world.plan(need('1', [(VCPU, 1)], tree=1))
        assert candidates(plan) == [{1: {VCPU: 1}}, {2: {VCPU: 1}}]
        assert not candidates(world.plan(need('1', [(VCPU, 1)], lost=True)))

    def test_sharing_provider_serves_its_aggregates(self, world):
        world.provider(1, inventory={VCPU: 4}, aggregates=[AGG_A])
        world.provider(2, inventory={VCPU: 4})
        world.provider(9, inventory={DISK: 100}, traits=[SHARES],
                       aggregates=[AGG_A])
        plan = world.plan(need('1', [(VCPU, 1)]), need('2', [(DISK, 10)]),
                          isolate=True)
        assert [anchor for anchor, _ in plan.candidates()] == [1]
        assert candidates(plan) == [{1: {VCPU: 1}, 9: {DISK: 10}}]


class TestSpread:
    """The unsuffixed group: any providers of one tree, plus sharing."""

    def test_classes_from_different_providers_of_a_tree(self, world):
        world.provider(1, inventory={DISK: 100})
        world.provider(2, parent=1, inventory={VCPU: 4})
        world.provider(3, parent=1, inventory={VCPU: 4})
        plan = world.plan(need('', [(VCPU, 1), (DISK, 10)]))
        assert candidates(plan) == [
            {2: {VCPU: 1}, 1: {DISK: 10}}, {3: {VCPU: 1}, 1: {DISK: 10}}]
        _allocations, mappings = plan.shaper()(next(plan.candidates())[1])
        assert mappings == {'': [2, 1]}

    def test_sharing_provider_completes_a_tree(self, world):
        world.provider(1, inventory={VCPU: 4}, aggregates=[AGG_A])
        world.provider(2, inventory={VCPU: 4, DISK: 10})
        world.provider(9, inventory={DISK: 100}, traits=[SHARES],
                       aggregates=[AGG_A])
        plan = world.plan(need('', [(VCPU, 1), (DISK, 10)]))
        assert candidates(plan) == [
            {1: {VCPU: 1}, 9: {DISK: 10}}, {2: {VCPU: 1, DISK: 10}}]

    def test_required_traits_are_collective(self, world):
        world.provider(1, inventory={DISK: 100}, traits=[SSD])
        world.provider(2, parent=1, inventory={VCPU: 4}, traits=[FOO])
        world.provider(3, inventory={VCPU: 4, DISK: 100}, traits=[FOO])
        plan = world.plan(need('', [(VCPU, 1), (DISK, 10)], required=(
            frozenset([SSD]), frozenset([FOO]))))
        assert candidates(plan) == [{2: {VCPU: 1}, 1: {DISK: 10}}]

    def test_forbidden_trait_rules_out_a_provider(self, world):
        world.provider(1, inventory={DISK: 100}, traits=[SSD])
        world.provider(2, parent=1, inventory={VCPU: 4, DISK: 100})
        plan = world.plan(need('', [(VCPU, 1), (DISK, 10)],
                               forbidden=frozenset([SSD])))
        assert candidates(plan) == [{2: {VCPU: 1, DISK: 10}}]

    def test_root_aggregate_spans_the_tree(self, world):
        world.provider(1, aggregates=[AGG_A])
        world.provider(2, parent=1, inventory={VCPU: 4})
        world.provider(3, inventory={VCPU: 4})
        world.provider(4, parent=3, inventory={VCPU: 4}, aggregates=[AGG_A])
        world.provider(5, parent=3, inventory={VCPU: 4})
        plan = world.plan(need('', [(VCPU, 1)],
                               member_of=(frozenset([AGG_A]),)))
        assert candidates(plan) == [{2: {VCPU: 1}}, {4: {VCPU: 1}}]

    def test_sharing_not_used_with_in_tree(self, world):
        world.provider(1, inventory={VCPU: 4}, aggregates=[AGG_A])
        world.provider(9, inventory={DISK: 100}, traits=[SHARES],
                       aggregates=[AGG_A])
        plan = world.plan(need('', [(VCPU, 1), (DISK, 1)], tree=1))
        assert candidates(plan) == []


class TestCombining:
    def test_amounts_of_groups_add_up(self, world):
        world.provider(1, inventory={VCPU: 4})
        plan = world.plan(need('', [(VCPU, 1)]), need('1', [(VCPU, 2)]))
        assert candidates(plan) == [{1: {VCPU: 3}}]
        plan = world.plan(need('', [(VCPU, 2)]), need('1', [(VCPU, 3)]))
        assert candidates(plan) == []

    def test_combined_amount_within_max_unit(self, world):
        world.provider(1, inventory={VCPU: {'total': 8, 'max_unit': 2}})
        plan = world.plan(need('1', [(VCPU, 2)]), need('2', [(VCPU, 1)]))
        assert candidates(plan) == []

    def test_isolate(self, world):
        world.provider(1)
        world.provider(2, parent=1, inventory={VF: 4})
        world.provider(3, parent=1, inventory={VF: 4})
        groups = (need('1', [(VF, 1)]), need('2', [(VF, 1)]))
        assert len(candidates(world.plan(*groups))) == 4
        isolated = world.plan(*groups, isolate=True)
        assert candidates(isolated) == [
            {2: {VF: 1}, 3: {VF: 1}}, {3: {VF: 1}, 2: {VF: 1}}]

    def test_hopeless_options_are_told_without_walking(self, world):
        # A flat host offers its one provider to two isolated groups; a
        # NUMA host has two; a flat host lacks the unsuffixed group's
        # trait that the other holds.
        world.provider(1, inventory={VCPU: 8, DISK: 100})
        world.provider(2, inventory={DISK: 100})
        world.provider(3, parent=2, inventory={VCPU: 8})
        world.provider(4, parent=2, inventory={VCPU: 8})
        world.provider(5, inventory={VCPU: 8, DISK: 100}, traits=[FOO])
        isolated = world.plan(need('', [(DISK, 10)]), need('1', [(VCPU, 1)]),
                              need('2', [(VCPU, 1)]), isolate=True)
        walk = isolated.walker()
        hopeless = {anchor: walk.hopeless(walk.options_at(anchor))
                    for anchor in isolated.anchors}
        assert hopeless == {1: True, 2: False, 5: True}
        assert {anchor for anchor, _chosen in isolated.candidates()} == {2}
        traits = world.plan(need('', [(VCPU, 1), (DISK, 10)],
                                 required=(frozenset([FOO]),)))
        walk = traits.walker()
        assert {anchor: walk.hopeless(walk.options_at(anchor))
                for anchor in traits.anchors} == {1: True, 2: True, 5: False}
        assert {anchor for anchor, _chosen in traits.candidates()} == {5}

    def test_same_subtree(self, world):
        world.provider(1)
        numa = [world.provider(10 + i, parent=1, inventory={VCPU: 4})
                for i in range(2)]
        for i, parent in enumerate(numa):
            world.provider(20 + i, parent=parent, inventory={VF: 4},
                           traits=[FOO])
        groups = (need('_C', [(VCPU, 1)]), need('_N', [(VF, 1)]))
        assert len(candidates(world.plan(*groups))) == 4
        plan = world.plan(*groups, same_subtrees=[{'_C', '_N'}])
        assert candidates(plan) == [
            {10: {VCPU: 1}, 20: {VF: 1}}, {11: {VCPU: 1}, 21: {VF: 1}}]

    def test_resourceless_group_pins_an_ancestor(self, world):
        world.provider(1)
        world.provider(2, parent=1, traits=[SSD])
        world.provider(3, parent=2, inventory={VF: 4})
        world.provider(4, parent=1, inventory={VF: 4})
        plan = world.plan(need('_P', [(VF, 1)]),
                          need('_N', required=(frozenset([SSD]),)),
                          same_subtrees=[{'_P', '_N'}])
        [(_anchor, chosen)] = list(plan.candidates())
        assert plan.shaper()(chosen) == ({3: {VF: 1}}, {'_P': [3], '_N': [2]})

    def test_one_provider_per_tree_before_nesting(self, world):
        world.provider(1, inventory={DISK: 100})
        world.provider(2, parent=1, inventory={VCPU: 4})
        world.provider(3, inventory={VCPU: 4, DISK: 100})
        plan = world.plan(need('', [(VCPU, 1), (DISK, 10)]), nested=False)
        assert candidates(plan) == [{3: {VCPU: 1, DISK: 10}}]

    def test_root_filter(self, world):
        world.provider(1, inventory={VCPU: 4})
        world.provider(2, inventory={VCPU: 4})
        plan = world.plan(need('', [(VCPU, 1)]), anchor_ok=lambda r: r == 2)
        assert candidates(plan) == [{2: {VCPU: 1}}]

    def test_sharing_only_candidate_comes_once(self, world):
        for root in (1, 2):
            world.provider(root, inventory={VCPU: 4}, aggregates=[AGG_A])
        world.provider(9, inventory={DISK: 100}, traits=[SHARES],
                       aggregates=[AGG_A])
        plan = world.plan(need('1', [(DISK, 10)]))
        assert candidates(plan) == [{9: {DISK: 10}}]
        assert len(candidates(world.plan(
            need('1', [(DISK, 10)]), need('2', [(VCPU, 1)])))) == 2


class TestOrder:
    @pytest.fixture
    def two_wide_trees(self, world):
        for root in (1, 2):
            world.provider(root)
            for child in range(3):
                world.provider(root * 10 + child, parent=root,
                               inventory={VF: 1})
        return world.plan(need('', [(VF, 1)]))

    def test_depth_first_exhausts_an_anchor_first(self, two_wide_trees):
        anchors = [a for a, _ in two_wide_trees.candidates()]
        assert anchors == [1, 1, 1, 2, 2, 2]

    def test_breadth_first_alternates(self, two_wide_trees):
        anchors = [a for a, _ in two_wide_trees.candidates(
            breadth_first=True)]
        assert anchors == [1, 2, 1, 2, 1, 2]

    def test_lazy(self, world):
        world.provider(1)
        for child in range(30):
            world.provider(100 + child, parent=1, inventory={VF: 1})
        plan = world.plan(*(need(str(i), [(VF, 1)]) for i in range(1, 6)),
                          isolate=True)
        stream = plan.candidates()
        first = next(stream)
        assert first == (1, (100, 101, 102, 103, 104))

    def test_most_room_first(self, world):
        """Candidates leaving the larger share of capacity come first,
        summed over what they take; a sharing provider every candidate
        uses does not hide the difference; ties keep their order.
        """
        world.provider(9, inventory={DISK: 100}, traits=[SHARES],
                       aggregates=[AGG_A], used={DISK: 90})
        for root, used in ((1, {VCPU: 3, MEM: 0}), (2, {VCPU: 0, MEM: 0}),
                           (3, {VCPU: 1, MEM: 1}), (4, {VCPU: 0, MEM: 0})):
            world.provider(root, inventory={VCPU: 4, MEM: 4},
                           aggregates=[AGG_A], used=used)
        plan = world.plan(need('', [(VCPU, 1), (MEM, 1), (DISK, 5)]))
        chosen = list(plan.candidates())
        assert [anchor for anchor, _ in chosen] == [1, 2, 3, 4]
        assert [anchor for anchor, _ in plan.most_room_first(chosen)] == [
            2, 4, 3, 1]


class TestVettingOneGroup:
    def test_traits_of_the_unsuffixed_group(self, world):
        world.provider(1, inventory={VCPU: 4})
        plan = world.plan(need('', [(VCPU, 1)],
                               required=(frozenset([SSD]),)), combined=False)
        assert not plan.group_has_options(0)
        plan = world.plan(need('', [(VCPU, 1)]), combined=False)
        assert plan.group_has_options(0)


class TestMatching:
    def test_among(self, world):
        world.provider(1, traits=[SSD])
        world.provider(2, traits=[FOO])
        world.provider(3)
        bare = need('')
        assert engine.matching(world.universe, bare) == set()
        assert engine.matching(world.universe, bare, among=[1, 2, 3]) == {
            1, 2, 3}
        assert engine.matching(world.universe, need(
            '', forbidden=frozenset([FOO])), among=[1, 2, 3]) == {1, 3}


def test_roots_are_found_from_the_rarest_condition_first():
    """A batch's roots are found among the trees meeting the rarest of
    the conditions the survey counted, read first; the others are looked
    up tree by tree for those, and so is the rarest when so common that
    the trees looked at cost less than its rows.
    """
    narrowing = planner.Narrowing(
        {1: 1, 2: 10}, member_of=frozenset({7}),
        required=(frozenset({1}), frozenset({2, 3})),
        scarce=frozenset({2}), trees=100_000, able={1: 100_000, 2: 30_000},
        holders=(50_000, 60_000), members=20_000)
    shape = narrowing.roots_shape(1501)
    assert shape.order == ('member_of', 'rc_1', 'required_0', 'required_1')
    assert shape.probed == ('member_of', 'rc_1', 'required_0', 'required_1')
    shape = narrowing.roots_shape(10_000)
    assert shape.probed == ('rc_1', 'required_0', 'required_1')
    rare = planner.Narrowing({1: 1}, required=(frozenset({1}), frozenset({2})),
                         trees=1000, holders=(900, 5))
    shape = rare.roots_shape(1501)
    assert (shape.order, shape.probed) == (
        ('required_1', 'required_0'), ('required_0',))
    assert planner.Narrowing({1: 1}).roots_shape(1501).order == ()


def test_conditions_no_sharing_provider_meets_are_known():
    """Once the sharing providers' rows and traits are known, a tree's
    conditions they cannot help it meet are checked on the tree alone.
    """
    narrowing = planner.Narrowing(
        {1: 1, 2: 10}, sharing_trait=9,
        required=(frozenset({5}), frozenset({6, 7})))
    disk = sql.Inventory(100, 2, 100, None, 500, 0, 1.0, 1.0, 1, 500, 1, 0)
    narrowing.learn_sharing([disk], [{7}, set()])
    assert narrowing.unshared == {'rc_0', 'required_0'}
    assert narrowing.shape().unshared == ('rc_0', 'required_0')


def _inventory(total, used=0, ratio=1.0, sql_ratio=None, reserved=0):
    return sql.Inventory(1, VCPU, 1, None, total, reserved, ratio,
                         ratio if sql_ratio is None else sql_ratio, 1,
                         total, 1, used)


@pytest.mark.parametrize('inventory, amount, largest, expected', [
    # (16 - 2) x 2.0 = 28 usable, 5 used: 23 left.
    (_inventory(16, used=5, ratio=2.0, reserved=2), 4, None, 5),
    (_inventory(16, used=5, ratio=2.0, reserved=2), 23, None, 1),
    (_inventory(16, used=30, ratio=2.0, reserved=2), 1, None, 0),
    # MySQL's single precision: 10 x 0.7 is 7 for the write, 6.99... in
    # SQL, so one slot of 1 fits six times; two slots of 1 (2 a time)
    # fit while each unit fits by SQL and both by the write: 3 times.
    (_inventory(10, ratio=0.7, sql_ratio=0.699999988079071), 1, None, 6),
    (_inventory(10, ratio=0.7, sql_ratio=0.699999988079071), 2, 1, 3),
    (_inventory(10, used=4, ratio=0.7, sql_ratio=0.699999988079071),
     2, 1, 1),
])
def test_times(inventory, amount, largest, expected):
    """How often an inventory still takes an amount, as the checks of
    options (each slot's amount) and walks (the slots' sum) say."""
    assert engine.times(inventory, amount, largest) == expected


def test_fits_and_scratch():
    """A candidate made earlier still fits a scratch copy's usage until
    what was taken there leaves no room; the universe is unchanged."""
    world = World()
    world.provider(1, inventory={VCPU: 4, MEM: 100})
    plan = engine.Plan(world.universe, [engine.Need(
        '', resources=((VCPU, 2), (MEM, 10)))], lambda root: True)
    [(anchor, chosen)] = list(plan.candidates())
    scratch = world.universe.scratch([1])
    assert plan.fits(chosen, scratch)
    scratch.take(1, VCPU, 2)
    assert plan.fits(chosen, scratch)
    scratch.take(1, VCPU, 2)
    assert not plan.fits(chosen, scratch)
    assert plan.fits(chosen)
    assert world.universe.spare(VCPU) == {1: 4}
    assert scratch.spare(VCPU) == {1: 0}


def test_parted_universes_make_options_of_their_own_trees():
    """Each part's options are made of its trees' rows only, the traits
    and rows still those of the whole universe."""
    world = World()
    world.provider(1, inventory={VCPU: 4, MEM: 100}, traits=[SSD])
    world.provider(2, inventory={VCPU: 4, MEM: 100})
    world.provider(3, parent=2, inventory={VCPU: 4})
    inside, outside = world.universe.parted({1}, [VCPU, MEM])
    group = need('', [(VCPU, 1), (MEM, 10)])
    assert engine.matching(inside, group) == {1}
    assert engine.matching(outside, group) == {2}
    assert engine.matching(inside, need(
        '', [(VCPU, 1)], required=(frozenset([SSD]),))) == {1}
    assert not engine.matching(outside, need(
        '', [(VCPU, 1)], required=(frozenset([SSD]),)))
    plan = engine.Plan(outside, [group], lambda root: True)
    assert plan.anchors == [2]
    assert inside.inventory is world.universe.inventory


@pytest.mark.parametrize('amount, refusing', [
    (1, {2, 3}), (2, {3}), (3, {2, 3}), (4, {3}), (6, {1, 2, 3})])
def test_unit_refusing(amount, refusing):
    """Which rows refuse an amount by their units and step size, as
    fitting checks them, whatever their usage."""
    world = World()
    world.provider(1, inventory={VCPU: 4}, used={VCPU: 4})
    world.provider(2, inventory={VCPU: {'total': 8, 'min_unit': 2,
                                        'max_unit': 4, 'step_size': 2}})
    world.provider(3, inventory={VCPU: {'total': 8, 'step_size': 0}})
    assert world.universe.unit_refusing(VCPU, amount) == refusing
    fitting = {inv.provider for inv in world.universe.fitting(VCPU, amount)}
    assert not fitting & refusing


def test_alike_groups_options_made_once():
    """Groups alike but for their suffix have the same options, each
    slot its own dict of them."""
    world = World()
    for node in (2, 3):
        world.provider(node, parent=world.provider(1) if node == 2 else 1,
                       inventory={VCPU: 4})
    needs = [engine.Need(suffix, resources=((VCPU, 1),))
             for suffix in ('1', '2')]
    plan = engine.Plan(world.universe, needs, lambda root: True,
                       isolate=True)
    assert plan.options[0] == plan.options[1] == {1: [2, 3]}
    assert plan.options[0] is not plan.options[1]
    assert sorted(chosen for _anchor, chosen in plan.candidates()) == [
        (2, 3), (3, 2)]
