"""The causes explain finds, on hand-made scenes: no database, no words."""
import urllib.parse

from placement import querylang
from placement.candidates import engine
from placement.candidates import names as naming
from placement.candidates import settings
from placement.candidates import sql
from placement.candidates.explain import causes
from placement.candidates.explain import finding

CLASSES = {'VCPU': 1, 'MEMORY_MB': 2, 'DISK_GB': 3}
TRAITS = {naming.SHARING_TRAIT: 10, 'HW_CPU_X86_AVX2': 11}
AGGREGATES = {'agg-a': 100, 'agg-b': 101}


class Cloud:
    """Providers written straight into a universe and their rows; a
    provider's id is its position, its uuid 'uuid-<name>'.
    """

    def __init__(self):
        self.universe = engine.Universe()
        self.rows = []
        self.ids = {}

    def provider(self, name, parent=None, inventory=None, traits=(),
                 aggregates=(), used=None):
        ident = len(self.rows) + 1
        root = self.ids[parent] if parent else ident
        root_row = self.rows[root - 1] if parent else None
        self.ids[name] = ident
        self.rows.append({
            'id': ident, 'uuid': 'uuid-' + name, 'name': name,
            'root_provider_id': root,
            'root_provider_uuid': (root_row or {'uuid': 'uuid-' + name})[
                'uuid']})
        self.universe.root[ident] = root
        self.universe.add_parent(ident, self.ids.get(parent))
        for rc, fields in (inventory or {}).items():
            fields = fields if isinstance(fields, dict) else {'total': fields}
            total = fields['total']
            self.universe.add_inventories([sql.Inventory(
                provider=ident, rc=CLASSES[rc], root=root,
                parent=self.ids.get(parent), total=total,
                reserved=fields.get('reserved', 0), ratio=1.0, sql_ratio=1.0,
                min_unit=fields.get('min_unit', 1),
                max_unit=fields.get('max_unit', total),
                step_size=fields.get('step_size', 1),
                used=(used or {}).get(rc, 0))])
        for trait in traits:
            self.universe.add_traits([(ident, TRAITS[trait], root)])
        for aggregate in aggregates:
            self.universe.add_aggregate(ident, AGGREGATES[aggregate], root)

    def find(self, query, **configured):
        """The Findings of ``query`` (a query string at 1.39)."""
        universe = self.universe
        universe.mark_sharing(TRAITS[naming.SHARING_TRAIT])
        for sharer in universe.sharing:
            mine = universe.aggregates[sharer]
            for provider, aggregates in list(universe.aggregates.items()):
                if aggregates & mine:
                    universe.add_share_anchor(sharer, universe.root[provider])
        request = querylang.parse(urllib.parse.parse_qsl(query), (1, 39))
        names = sql.Names(CLASSES, TRAITS, AGGREGATES, {})
        memberships = [(provider, aggregate) for provider, aggregates
                       in universe.aggregates.items()
                       for aggregate in aggregates]
        return finding.find(finding.Scene(
            request=request, settings=settings.Settings(**configured),
            names=names,
            needs=[naming.group_need(group, names)
                   for group in request.groups],
            universe=universe, providers=self.rows,
            memberships=lambda: memberships,
            load_ancestry=lambda plan: None))


def causes_of(findings, name):
    [provider] = [p for p in findings.providers if p.name == name]
    return provider.causes


def one_host_causes(query):
    """The causes of ``query`` on a cloud of one host with 4 VCPU."""
    cloud = Cloud()
    cloud.provider('host', inventory={'VCPU': 4})
    return causes_of(cloud.find(query), 'host')


def test_each_provider_says_what_it_lacks():
    cloud = Cloud()
    cloud.provider('full', inventory={'VCPU': 4}, used={'VCPU': 4})
    cloud.provider('plain', inventory={'VCPU': 4})
    cloud.provider('coarse', inventory={'VCPU': {'total': 8, 'step_size': 2}},
                   traits=['HW_CPU_X86_AVX2'])
    findings = cloud.find('resources=VCPU:1&required=HW_CPU_X86_AVX2')
    assert (findings.found, findings.returned) == (0, 0)
    assert (findings.trees, findings.excluded_trees) == (3, 3)
    assert findings.request_causes == []
    assert causes_of(findings, 'full') == [
        causes.Capacity(group='', resource_class='VCPU', requested=1,
                        free=0, total=4, reserved=0, ratio=1.0, used=4),
        causes.MissingTrait(group='', traits=('HW_CPU_X86_AVX2',))]
    assert causes_of(findings, 'plain') == [
        causes.MissingTrait(group='', traits=('HW_CPU_X86_AVX2',))]
    assert causes_of(findings, 'coarse') == [causes.UnitLimit(
        group='', resource_class='VCPU', requested=1,
        limit_kind='step_size', limit=2)]


def test_a_child_without_the_class_leaves_the_root_to_explain():
    cloud = Cloud()
    cloud.provider('host', inventory={'VCPU': 4})
    cloud.provider('numa', parent='host', inventory={'VCPU': 4})
    findings = cloud.find('resources=VCPU:1,DISK_GB:10')
    assert [p.excluded for p in findings.providers] == [True, True]
    assert causes_of(findings, 'numa') == []
    assert causes_of(findings, 'host') == [causes.NoInventoryInTree(
        group='', classes=('DISK_GB',), from_sharing=True)]


def test_sharing_providers_out_of_reach_are_named():
    cloud = Cloud()
    cloud.provider('host', inventory={'VCPU': 4}, aggregates=['agg-a'])
    cloud.provider('pool', inventory={'DISK_GB': 100}, aggregates=['agg-a'])
    cloud.provider('nas', inventory={'DISK_GB': 100},
                   traits=[naming.SHARING_TRAIT], aggregates=['agg-b'])
    findings = cloud.find('resources=VCPU:1,DISK_GB:10')
    assert causes_of(findings, 'host') == [causes.NoInventoryInTree(
        group='', classes=('DISK_GB',), from_sharing=True,
        unreached=(causes.Provider(name='nas', uuid='uuid-nas'),),
        pools=(causes.Provider(name='pool', uuid='uuid-pool'),))]
    assert causes_of(findings, 'nas') == [causes.SharingRoot()]


def test_isolation_is_the_culprit():
    assert one_host_causes('resources1=VCPU:1&resources2=VCPU:1'
                          '&group_policy=isolate') == [
        causes.CrossGroup(constraint='group_policy')]


def test_groups_together_want_more_than_is_free():
    assert one_host_causes('resources1=VCPU:3&resources2=VCPU:3'
                          '&group_policy=none') == [causes.CombinedShortfall(
        resource_class='VCPU', requested=6, free=4)]


def test_limit_and_ceiling_are_request_wide():
    cloud = Cloud()
    for name in ('a', 'b', 'c'):
        cloud.provider(name, inventory={'VCPU': 4})
    findings = cloud.find('resources=VCPU:1&limit=1')
    assert (findings.found, findings.found_complete, findings.returned) == (
        3, True, 1)
    assert findings.request_causes == [
        causes.LimitCut(limit=1, found=3, found_complete=True)]
    assert all(not p.causes and not p.excluded for p in findings.providers)
    findings = cloud.find('resources=VCPU:1', max_candidates=2)
    assert findings.request_causes == [
        causes.CandidateCeiling(max_candidates=2, ceiling=2)]


def test_root_required_is_stated_on_the_root():
    found = one_host_causes('resources=VCPU:1&root_required=HW_CPU_X86_AVX2')
    assert found == [causes.RootTrait(trait='HW_CPU_X86_AVX2')]


def test_resourceless_group_names_its_selector():
    found = one_host_causes('resources_A=VCPU:1&required_B=HW_CPU_X86_AVX2'
                            '&same_subtree=_A,_B&group_policy=none')
    assert found == [causes.NothingSelects(
        group='_B', by='trait', names=('HW_CPU_X86_AVX2',))]

