"""The seeded dataset, and loading it into a server over the REST API
(bulk.py writes the same dataset straight into a database).

The same seed gives the same providers, UUIDs, inventories, traits,
aggregates and allocations, so both servers hold identical data.

Shape for N compute nodes:
* 80% plain compute nodes: VCPU, MEMORY_MB, DISK_GB on the root.
* 10% NUMA trees: DISK_GB on the root; two NUMA children with VCPU and
  MEMORY_MB; under each NUMA node one PF with SRIOV_NET_VF and a
  CUSTOM_PHYSNET_* trait.
* 10% shared-storage nodes: no local disk; groups of 25 share an aggregate
  with a sharing provider (DISK_GB, MISC_SHARES_VIA_AGGREGATE).
* Traits: HW_CPU_X86_AVX2 on half, CUSTOM_GOLD/SILVER/MAINTENANCE on some,
  CUSTOM_BENCH_RARE on the first 5 plain nodes whatever the size; OWNER_NOVA
  on every node and COMPUTE_STATUS_DISABLED on one in 50, as nova-compute
  sets them (Nova 2026.2's scheduler asks for both).
* Every node in one of 10 "availability zone" aggregates.
* Allocations fill about half of the memory (40-80% targets; 5% of nodes full),
  with 1-6 consumers per node.
* The bug-2070257 tree: a root with 8 children holding 1-6 units each of
  CUSTOM_BENCH_BUG, and nothing else.
* The bug-2126751 tree (a GPU or PCI host): a root with 8 children holding
  one unit each of CUSTOM_BENCH_WIDE, and nothing else.

The Ironic fleet (``fleet='ironic'``) is N root providers instead, each
with one unit of one CUSTOM_BAREMETAL_<flavour> class (see
_IronicGenerator).
"""
import random
import threading
import time
import uuid

from client import ConnectionFailed
from client import run_bounded

NAMESPACE = uuid.UUID('6f1d4a52-3c7e-4d59-9a53-2a8e4c1b7f10')
AZ_COUNT = 10
SHARING_GROUP_SIZE = 25
PROJECTS = 10
HARDWARE = ((16, 65536, 500), (32, 131072, 1000), (64, 262144, 1600))
# Large flavors: few consumers per node keep loading upstream fast enough.
FLAVORS = ((8, 16384, 80), (16, 32768, 160), (32, 65536, 320))
VCPU_RATIO = 4.0
MEMORY_RESERVED = 512
VF_PER_PF = 16
SHARED_DISK_GB = 100000
BUG_CLASS = 'CUSTOM_BENCH_BUG'
BUG_CHILDREN = 8
WIDE_CLASS = 'CUSTOM_BENCH_WIDE'
WIDE_CHILDREN = 8
CUSTOM_CLASSES = (BUG_CLASS, WIDE_CLASS)
# On the first RARE_TREES plain nodes at any size: a required trait whose
# answer does not grow with the cloud.
RARE_TRAIT = 'CUSTOM_BENCH_RARE'
RARE_TREES = 5
CUSTOM_TRAITS = ('CUSTOM_GOLD', 'CUSTOM_SILVER', 'CUSTOM_MAINTENANCE',
                 'CUSTOM_PHYSNET_A', 'CUSTOM_PHYSNET_B', 'CUSTOM_PHYSNET_C',
                 RARE_TRAIT)
# Standard traits (os-traits 3.9) that nova-compute puts on its nodes; no
# draw decides them, so the rest of the dataset is what it was without.
OWNER_TRAIT = 'OWNER_NOVA'
DISABLED_TRAIT = 'COMPUTE_STATUS_DISABLED'
DISABLED_EVERY = 50
# What Nova 2026.2's scheduler adds to every candidates request.
NOVA_TRAITS = '%s,!%s' % (OWNER_TRAIT, DISABLED_TRAIT)
NOVA_REQUIRED = 'required=' + NOVA_TRAITS
# The Ironic fleet: one custom class per flavour, with its share of nodes.
FLEETS = ('nova', 'ironic')
BAREMETAL_FLAVOURS = (('SMALL', 0.40), ('MEDIUM', 0.30), ('LARGE', 0.15),
                      ('GPU', 0.10), ('HIGHMEM', 0.05))
BAREMETAL_CLASSES = tuple('CUSTOM_BAREMETAL_' + flavour
                          for flavour, _ in BAREMETAL_FLAVOURS)
# The most common flavour is timed; the rarest is raced for.
BAREMETAL_COMMON = BAREMETAL_CLASSES[0]
BAREMETAL_RACED = BAREMETAL_CLASSES[-1]
RACE_FREE = 20          # nodes of the raced flavour left free
IRONIC_ALLOCATED = 0.6  # share of the other nodes already deployed
IRONIC_TRAIT = 'CUSTOM_RAID'
IRONIC_GROUPS = 5       # aggregates (conductor groups) of 70% of the nodes
CONSUMER_TYPE = 'INSTANCE'
ALLOCATION_BATCH = 50


def uid(name):
    return str(uuid.uuid5(NAMESPACE, name))


def custom_names(fleet):
    """(resource classes, traits) a fleet's loader creates first."""
    if fleet == 'ironic':
        return BAREMETAL_CLASSES, (IRONIC_TRAIT,)
    return CUSTOM_CLASSES, CUSTOM_TRAITS


def az_aggregate(index):
    return uid('az-%d' % index)


def sharing_aggregate(index):
    return uid('sharing-agg-%d' % index)


def project_id(index):
    return uid('project-%d' % index)


def user_id(index):
    return uid('user-%d' % index)


def _inventory(total, ratio=1.0, reserved=0, max_unit=None):
    return {'total': total, 'reserved': reserved, 'min_unit': 1,
            'max_unit': max_unit or total, 'step_size': 1,
            'allocation_ratio': ratio}


def capacity(inv):
    return int((inv['total'] - inv['reserved']) * inv['allocation_ratio'])


class Provider:
    __slots__ = ('uuid', 'name', 'parent', 'inventories', 'traits',
                 'aggregates')

    def __init__(self, name, parent=None, inventories=None, traits=(),
                 aggregates=()):
        self.uuid = uid(name)
        self.name = name
        self.parent = parent
        self.inventories = inventories or {}
        self.traits = sorted(traits)
        self.aggregates = sorted(aggregates)


def generate(nodes, seed=1, fleet='nova'):
    """The dataset in load order, one (tree, its consumers) at a time.

    A tree is a list of Provider, parents first; a consumer is (uuid,
    project, user, {rp: {rc: amount}}). Sharing providers come first, as
    one-provider trees without consumers: the consumers of the nodes that
    share their disk follow with those nodes.
    """
    generator = _IronicGenerator if fleet == 'ironic' else _Generator
    return iter(generator(nodes, seed))


class _Generator:
    """Builds the trees from a seed. Only the usage of the tree being
    filled and of the sharing providers is kept, so that memory stays
    flat however many nodes are streamed."""

    def __init__(self, nodes, seed):
        self.nodes = nodes
        self.rng = random.Random(seed)
        self._ready = []       # (tree, consumers) built, not yet yielded
        self._usage = {}       # rp uuid -> rc -> used, while filling
        self._inventories = {}
        self._shares = set()   # sharing providers: filled by many nodes
        self._rare_left = RARE_TREES

    def __iter__(self):
        rng = self.rng
        order = list(range(self.nodes))
        rng.shuffle(order)
        tenth = max(1, self.nodes // 10)
        numa = set(order[:tenth])
        shared = sorted(order[tenth:2 * tenth])
        sharing = self._sharing_providers(
            (len(shared) + SHARING_GROUP_SIZE - 1) // SHARING_GROUP_SIZE)
        self._shares = {provider.uuid for provider in sharing}
        disk_from = {index: sharing[position // SHARING_GROUP_SIZE]
                     for position, index in enumerate(shared)}
        yield from self._take_ready()
        for index in range(self.nodes):
            self._compute_node(rng, index, index in numa,
                               disk_from.get(index))
            yield from self._take_ready()
        self._bug_tree(rng)
        self._wide_tree()
        yield from self._take_ready()

    def _take_ready(self):
        """Yield the trees built so far; forget their usage unless they
        share (later nodes still fill those)."""
        ready, self._ready = self._ready, []
        for tree, consumers in ready:
            for provider in tree:
                if provider.uuid not in self._shares:
                    del self._usage[provider.uuid]
                    del self._inventories[provider.uuid]
            yield tree, consumers

    def _add_tree(self, tree):
        """Queue ``tree``; return the list its consumers go into."""
        consumers = []
        self._ready.append((tree, consumers))
        for provider in tree:
            self._inventories[provider.uuid] = provider.inventories
            self._usage[provider.uuid] = {rc: 0
                                          for rc in provider.inventories}
        return consumers

    def _sharing_providers(self, groups):
        providers = []
        for group in range(groups):
            provider = Provider(
                'bench-sharing-%03d' % group,
                inventories={'DISK_GB': _inventory(SHARED_DISK_GB)},
                traits=['MISC_SHARES_VIA_AGGREGATE'],
                aggregates=[sharing_aggregate(group)])
            self._add_tree([provider])
            providers.append(provider)
        return providers

    def _compute_node(self, rng, index, numa, sharing_provider):
        """One node's tree, then its consumers. Without local disk when a
        sharing provider is given: its disk comes from there."""
        cpus, memory, disk = rng.choice(HARDWARE)
        traits = {'HW_CPU_X86_SSE42', OWNER_TRAIT}
        if index % DISABLED_EVERY == DISABLED_EVERY - 1:
            traits.add(DISABLED_TRAIT)
        if rng.random() < 0.5:
            traits.add('HW_CPU_X86_AVX2')
        for trait, share in (('CUSTOM_GOLD', 0.1), ('CUSTOM_SILVER', 0.2),
                             ('CUSTOM_MAINTENANCE', 0.05)):
            if rng.random() < share:
                traits.add(trait)
        if self._rare_left and not (numa or sharing_provider):
            traits.add(RARE_TRAIT)  # no draw: the rest stays as it was
            self._rare_left -= 1
        aggregates = [az_aggregate(index % AZ_COUNT)]
        name = 'bench-cn-%05d' % index
        if numa:
            tree = self._numa_tree(rng, name, cpus, memory, disk, traits,
                                   aggregates)
        else:
            inventories = {
                'VCPU': _inventory(cpus, VCPU_RATIO),
                'MEMORY_MB': _inventory(memory, reserved=MEMORY_RESERVED)}
            if sharing_provider:
                aggregates += sharing_provider.aggregates
            else:
                inventories['DISK_GB'] = _inventory(disk)
            tree = [Provider(name, inventories=inventories, traits=traits,
                             aggregates=aggregates)]
        consumers = self._add_tree(tree)
        self._fill(rng, index, tree, sharing_provider or tree[0], consumers)

    def _bug_tree(self, rng):
        root = Provider('bench-bug-root')
        self._add_tree([root] + [
            Provider('bench-bug-child-%d' % child, parent=root.uuid,
                     inventories={BUG_CLASS: _inventory(rng.randint(1, 6))})
            for child in range(BUG_CHILDREN)])

    def _wide_tree(self):
        """Its own class, so that no other query's answer changes."""
        root = Provider('bench-wide-root')
        self._add_tree([root] + [
            Provider('bench-wide-child-%d' % child, parent=root.uuid,
                     inventories={WIDE_CLASS: _inventory(1)})
            for child in range(WIDE_CHILDREN)])

    def _numa_tree(self, rng, name, cpus, memory, disk, traits, aggregates):
        root = Provider(name, inventories={'DISK_GB': _inventory(disk)},
                        traits=traits, aggregates=aggregates)
        tree = [root]
        for cell in range(2):
            numa = Provider(
                '%s-numa%d' % (name, cell), parent=root.uuid,
                inventories={
                    'VCPU': _inventory(cpus // 2, VCPU_RATIO),
                    'MEMORY_MB': _inventory(memory // 2,
                                            reserved=MEMORY_RESERVED // 2)},
                traits=['HW_NUMA_ROOT'])
            physnet = rng.choice(('CUSTOM_PHYSNET_A', 'CUSTOM_PHYSNET_B',
                                  'CUSTOM_PHYSNET_C'))
            pf = Provider('%s-numa%d-pf0' % (name, cell), parent=numa.uuid,
                          inventories={'SRIOV_NET_VF': _inventory(VF_PER_PF)},
                          traits=['HW_NIC_SRIOV', physnet])
            tree += [numa, pf]
        return tree

    def _fits(self, request):
        for rp, resources in request.items():
            for rc, amount in resources.items():
                inv = self._inventories[rp][rc]
                if self._usage[rp][rc] + amount > capacity(inv):
                    return False
        return True

    def _fill(self, rng, index, tree, disk_source, consumers):
        """Add consumers on this node until its memory target is reached."""
        target = 1.0 if rng.random() < 0.05 else rng.uniform(0.4, 0.8)
        # A NUMA tree is [root, numa0, pf0, numa1, pf1].
        memory_sources = [tree[1], tree[3]] if len(tree) > 1 else [tree[0]]
        memory_cap = sum(capacity(p.inventories['MEMORY_MB'])
                         for p in memory_sources)
        used = 0
        misses = 0
        serial = 0
        while misses < 3:
            cpus, memory, disk = rng.choice(FLAVORS)
            if used + memory > target * memory_cap:
                misses += 1
                continue
            cell = max(range(len(memory_sources)), key=lambda c: (
                capacity(memory_sources[c].inventories['MEMORY_MB'])
                - self._usage[memory_sources[c].uuid]['MEMORY_MB']))
            compute = memory_sources[cell]
            request = {compute.uuid: {'VCPU': cpus, 'MEMORY_MB': memory}}
            request.setdefault(disk_source.uuid, {})['DISK_GB'] = disk
            if len(tree) > 1 and rng.random() < 0.5:
                request[tree[2 + 2 * cell].uuid] = {'SRIOV_NET_VF': 1}
            if not self._fits(request):
                misses += 1
                continue
            for rp, resources in request.items():
                for rc, amount in resources.items():
                    self._usage[rp][rc] += amount
            used += memory
            owner = rng.randrange(PROJECTS)
            consumers.append((uid('consumer-%d-%d' % (index, serial)),
                              project_id(owner), user_id(owner), request))
            serial += 1


class _IronicGenerator(_Generator):
    """An Ironic fleet: N bare-metal nodes, each a root provider without
    children holding one unit (total and max_unit 1) of its flavour's
    class; OWNER_NOVA on all and COMPUTE_STATUS_DISABLED on one in 50,
    as the Ironic driver's nova-compute sets them; HW_CPU_X86_AVX2 on
    half and IRONIC_TRAIT on a quarter; 70% in one of IRONIC_GROUPS
    aggregates. IRONIC_ALLOCATED of the nodes are deployed, each by one
    consumer holding the whole unit as Nova does, except the first
    RACE_FREE nodes of the raced flavour: only those stay free of it."""

    def __iter__(self):
        rng = self.rng
        raced_free = RACE_FREE
        weights = [share for _, share in BAREMETAL_FLAVOURS]
        for index in range(self.nodes):
            resource_class = rng.choices(BAREMETAL_CLASSES, weights)[0]
            traits = {OWNER_TRAIT}
            if index % DISABLED_EVERY == DISABLED_EVERY - 1:
                traits.add(DISABLED_TRAIT)
            if rng.random() < 0.5:
                traits.add('HW_CPU_X86_AVX2')
            if rng.random() < 0.25:
                traits.add(IRONIC_TRAIT)
            aggregates = ([ironic_aggregate(rng.randrange(IRONIC_GROUPS))]
                          if rng.random() < 0.7 else [])
            node = Provider('bench-bm-%05d' % index, traits=traits,
                            inventories={resource_class: _inventory(1)},
                            aggregates=aggregates)
            consumers = self._add_tree([node])
            if resource_class == BAREMETAL_RACED:
                deployed = raced_free <= 0
                raced_free -= 1
            else:
                deployed = rng.random() < IRONIC_ALLOCATED
            if deployed:
                owner = rng.randrange(PROJECTS)
                consumers.append((uid('bm-consumer-%d' % index),
                                  project_id(owner), user_id(owner),
                                  {node.uuid: {resource_class: 1}}))
            yield from self._take_ready()


def ironic_aggregate(index):
    return uid('ironic-group-%d' % index)


class Dataset:
    """The generated trees and consumers, all held in memory."""

    def __init__(self, nodes, seed=1, fleet='nova'):
        self.nodes = nodes
        self.fleet = fleet
        self.trees = []        # list of lists of Provider, root first
        self.consumers = []    # (uuid, project, user, {rp: {rc: amount}})
        for tree, consumers in generate(nodes, seed, fleet):
            self.trees.append(tree)
            self.consumers += consumers

    @property
    def providers(self):
        for tree in self.trees:
            yield from tree

    def expected_usages(self):
        """{project_id: usage entry (see add_usage)} of the consumers."""
        return add_project_usages({}, self.consumers)


def add_project_usages(totals, consumers):
    """Add consumers to {project_id: usage entry}; return it."""
    for _, project, _, request in consumers:
        add_usage(totals.setdefault(project, {'consumer_count': 0}), request)
    return totals


def add_usage(usage, request):
    """Add one consumer's {rp: {rc: amount}} to a usage entry: the shape of
    one consumer type in GET /usages at 1.38+ ({consumer_count, rc: n})."""
    usage['consumer_count'] += 1
    for resources in request.values():
        for rc, amount in resources.items():
            usage[rc] = usage.get(rc, 0) + amount


def error_detail(resp):
    """The specific part of an error body's detail, shortened."""
    try:
        detail = resp.json()['errors'][0]['detail']
    except (ValueError, LookupError, TypeError):
        detail = resp.body.decode(errors='replace')
    return detail.split('\n\n')[-1].strip()[:100]


def usages_problems(client, project, expected):
    """Compare a project's GET /usages with an add_usage entry.

    Falls back to microversion 1.37 (no consumer types) when 1.39 fails, so
    one server error still leaves the totals checked.
    """
    path = '/usages?project_id=' + project
    resp = client.request('GET', path)
    if resp.status == 200:
        got = resp.json()['usages']
        want = {CONSUMER_TYPE: expected} if expected['consumer_count'] else {}
        if got == want:
            return []
        return ['usages of project %s: %s, expected %s' % (
            project, got, want)]
    problems = ['GET /usages at 1.39 -> %s %s' % (resp.status,
                                                  error_detail(resp))]
    resp = client.request('GET', path, version='1.37')
    if resp.status != 200:
        return problems + ['and at 1.37 -> %s' % resp.status]
    got = {rc: amount for rc, amount in resp.json()['usages'].items()
           if amount}
    want = {rc: amount for rc, amount in expected.items()
            if rc != 'consumer_count'}
    if got != want:
        problems.append('usages of project %s at 1.37: %s, expected %s' % (
            project, got, want))
    else:
        problems[0] += ' (totals match at 1.37)'
    return problems


def _with_retries(call, what, attempts=6):
    """Retry transient failures: 5xx (e.g. SQLite busy) and dropped sockets."""
    for attempt in range(attempts):
        try:
            resp = call()
        except ConnectionFailed:
            if attempt == attempts - 1:
                raise
        else:
            if resp.status < 500:
                return resp
            if attempt == attempts - 1:
                raise RuntimeError('%s -> %s %s' % (
                    what, resp.status, resp.body[:300]))
        time.sleep(0.1 * (attempt + 1))
    raise AssertionError('unreachable')


class Loader:
    """Writes a Dataset into one server with bounded concurrency."""

    def __init__(self, client, concurrency):
        self.client = client
        self.concurrency = concurrency
        self.requests = 0
        self._lock = threading.Lock()

    def _send(self, method, path, body=None, ok=(200, 201, 204)):
        with self._lock:
            self.requests += 1
        what = '%s %s' % (method, path)
        resp = _with_retries(
            lambda: self.client.request(method, path, body), what)
        if resp.status not in ok:
            raise RuntimeError('%s -> %s %s' % (what, resp.status,
                                                resp.body[:500]))
        return resp

    def _put_generational(self, provider, resource, key, value, generation):
        """PUT one generation-guarded sub-resource; refresh on 409."""
        path = '/resource_providers/%s/%s' % (provider.uuid, resource)
        for _ in range(5):
            resp = self._send('PUT', path, {
                'resource_provider_generation': generation, key: value},
                ok=(200, 409))
            if resp.status == 200:
                return resp.json()['resource_provider_generation']
            generation = self._send(
                'GET', '/resource_providers/' + provider.uuid
            ).json()['generation']
        raise RuntimeError('%s kept conflicting: %s' % (path, resp.body))

    def _load_tree(self, tree):
        generations = {}
        for provider in tree:
            body = {'name': provider.name, 'uuid': provider.uuid}
            if provider.parent:
                body['parent_provider_uuid'] = provider.parent
            resp = self._send('POST', '/resource_providers', body)
            generations[provider.uuid] = resp.json()['generation']
        for provider in tree:
            generation = generations[provider.uuid]
            if provider.inventories:
                generation = self._put_generational(
                    provider, 'inventories', 'inventories',
                    provider.inventories, generation)
            if provider.traits:
                generation = self._put_generational(
                    provider, 'traits', 'traits', provider.traits, generation)
            if provider.aggregates:
                self._put_generational(
                    provider, 'aggregates', 'aggregates',
                    provider.aggregates, generation)

    def _load_allocations(self, batch):
        body = {}
        for consumer, project, user, request in batch:
            body[consumer] = {
                'allocations': {rp: {'resources': resources}
                                for rp, resources in request.items()},
                'project_id': project, 'user_id': user,
                'consumer_generation': None,
                'consumer_type': CONSUMER_TYPE}
        for attempt in range(10):
            resp = self._send('POST', '/allocations', body, ok=(204, 409))
            if resp.status == 204:
                return
            time.sleep(0.05 * (attempt + 1))
        raise RuntimeError('POST /allocations kept conflicting: %s'
                           % resp.body[:500])

    def load(self, dataset):
        classes, traits = custom_names(dataset.fleet)
        for trait in traits:
            self._send('PUT', '/traits/' + trait)
        for resource_class in classes:
            self._send('PUT', '/resource_classes/' + resource_class)
        run_bounded(self._load_tree, dataset.trees, self.concurrency)
        consumers = dataset.consumers
        batches = [consumers[i:i + ALLOCATION_BATCH]
                   for i in range(0, len(consumers), ALLOCATION_BATCH)]
        run_bounded(self._load_allocations, batches, self.concurrency)


def verify(client, dataset):
    """Problems (strings) found comparing the server with the dataset."""
    return verify_totals(client, sum(len(tree) for tree in dataset.trees),
                         dataset.expected_usages())


def verify_totals(client, providers, usages):
    """Problems found comparing the server with a dataset's provider count
    and {project: usage entry} (see add_project_usages)."""
    problems = []
    listed = client.expect('GET', '/resource_providers').json()
    count = len(listed['resource_providers'])
    if count != providers:
        problems.append('%d providers listed, %d loaded' % (count, providers))
    for project, usage in sorted(usages.items()):
        problems += [problem for problem in
                     usages_problems(client, project, usage)
                     if problem not in problems]
    return problems
