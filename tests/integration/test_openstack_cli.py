"""The real ``openstack`` CLI (python-openstackclient + osc-placement, from
.venv-osc) against our service under gunicorn.

Each microversion of a representative set (every version where osc-placement
changes what it sends or accepts, plus ``1``, the client's negotiation) runs
the commands that exist at that version through a provider's life:
providers with a child, inventories, resource classes, traits, aggregates,
allocations, allocation candidates and usages. Commands are sent with
``--os-auth-type admin_token --os-token admin`` (noauth2's admin) and
``--os-endpoint``. Most go through ``openstack_cli_runner.py``, one process
running ``openstackclient.shell.main`` per command (an ``openstack`` start
costs seconds); ``test_openstack_script_matches_runner`` checks the real
script gives the same answers. It all runs against upstream as well when
``.venv-upstream`` is built and under CI=true (see
``wsgi_process.implementations``).
"""
import json
import pathlib
import subprocess
import uuid

import pytest

import wsgi_process

pytestmark = pytest.mark.integration

VENV = '.venv-osc'
RUNNER = pathlib.Path(__file__).with_name(
    'openstack_cli_runner.py')
# osc-placement's ``1`` negotiates the highest version it supports without
# a gap (MAX_VERSION_NO_GAP) that the server offers.
NEGOTIATED = '1.29'
VERSIONS = ['1.0', '1.1', '1.2', '1.3', '1.4', '1.5', '1.6', '1.7', '1.8',
            '1.9', '1.10', '1.12', '1.14', '1.16', '1.17', '1.18', '1.19',
            '1.21', '1.22', '1.25', '1.28', '1.29', '1.38', '1.39', '1']
NOT_SUPPORTED = 'Operation or argument is not supported with version'


def parse_version(text):
    major, minor = (NEGOTIATED if text == '1' else text).split('.')
    return int(major), int(minor)


@pytest.fixture(scope='module', params=wsgi_process.implementations())
def placement(request, tmp_path_factory):
    with wsgi_process.placement_server(
            tmp_path_factory.mktemp('placement-osc'),
            implementation=request.param) as server:
        yield server


class OpenStackCLI:
    """The ``openstack`` commands of one microversion against ``url``."""

    def __init__(self, python, url):
        self.global_args = ['--os-auth-type', 'admin_token',
                            '--os-endpoint', url, '--os-token', 'admin']
        self.process = subprocess.Popen(
            [str(python), str(RUNNER)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
        self.version = None

    def run(self, *args, rc=0):
        """Run ``openstack ARGS``; check its exit code; return its stdout."""
        argv = self.global_args + [
            '--os-placement-api-version', self.version] + list(args)
        self.process.stdin.write(json.dumps(argv) + '\n')
        self.process.stdin.flush()
        result = json.loads(self.process.stdout.readline())
        assert result['rc'] == rc, (
            'openstack %s: exit %s\n%s' % (
                ' '.join(argv), result['rc'], result['stderr']))
        return result['stdout'] if rc == 0 else result['stderr']

    def json(self, *args):
        return json.loads(self.run(*args, '-f', 'json'))

    def refused(self, *args):
        """The client itself refuses ``args`` at this microversion."""
        assert NOT_SUPPORTED in self.run(*args, rc=1)

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=60)


@pytest.fixture(scope='module')
def runner(placement):
    python = wsgi_process.integration_venv(VENV, 'python')
    cli = OpenStackCLI(python, placement.url)
    yield cli
    cli.close()


@pytest.fixture
def cli(runner, version):
    runner.version = version
    return runner


def column(rows, name):
    return sorted(row[name] for row in rows)


@pytest.mark.parametrize('version', VERSIONS)
def test_provider_life(cli, version):
    at = parse_version(version).__ge__
    tag = 'osc-%s' % version.replace('.', '-')
    nested = at((1, 14))

    root = cli.json('resource', 'provider', 'create', tag)
    assert root['name'] == tag and root['generation'] == 0
    if nested:
        assert root['root_provider_uuid'] == root['uuid']
        assert root['parent_provider_uuid'] is None
        child = cli.json('resource', 'provider', 'create', tag + '-pf',
                         '--parent-provider', root['uuid'])
        assert child['parent_provider_uuid'] == root['uuid']
        assert child['root_provider_uuid'] == root['uuid']
        tree = cli.json('resource', 'provider', 'list',
                        '--in-tree', root['uuid'])
        assert column(tree, 'uuid') == sorted([root['uuid'], child['uuid']])
    else:
        assert 'root_provider_uuid' not in root
        cli.refused('resource', 'provider', 'create', tag + '-pf',
                    '--parent-provider', root['uuid'])
    rp = root['uuid']

    listed = cli.json('resource', 'provider', 'list', '--name', tag)
    assert column(listed, 'uuid') == [rp]
    renamed = cli.json('resource', 'provider', 'set', rp,
                       '--name', tag + '-node')
    assert renamed['name'] == tag + '-node'
    assert renamed['generation'] == root['generation']
    assert cli.json('resource', 'provider', 'show', rp)['name'] == (
        tag + '-node')
    if nested:
        kept = cli.json('resource', 'provider', 'set', child['uuid'],
                        '--name', tag + '-pf0', '--parent-provider', rp)
        assert kept['parent_provider_uuid'] == rp

    inventories(cli, rp, at)
    if nested:
        cli.json('resource', 'provider', 'inventory', 'set', child['uuid'],
                 '--resource', 'SRIOV_NET_VF=8')
    resource_classes(cli, tag, at)
    traits(cli, tag, rp, at)
    aggregates = provider_aggregates(cli, rp, at)

    consumer = str(uuid.uuid4())
    allocations(cli, consumer, rp, child['uuid'] if nested else None, at)
    candidates(cli, rp, child['uuid'] if nested else None, aggregates, at)

    cli.run('resource', 'provider', 'allocation', 'delete', consumer)
    assert cli.json('resource', 'provider', 'allocation', 'show',
                    consumer) == []
    if at((1, 5)):
        cli.run('resource', 'provider', 'inventory', 'delete', rp)
        assert cli.json('resource', 'provider', 'inventory', 'list', rp) == []
    else:
        cli.run('resource', 'provider', 'inventory', 'delete', rp,
                rc=2)  # --resource-class is required before 1.5
    if nested:
        refusal = cli.run('resource', 'provider', 'delete', rp, rc=1)
        assert 'HTTP 409' in refusal
        cli.run('resource', 'provider', 'delete', child['uuid'])
    cli.run('resource', 'provider', 'delete', rp)
    assert 'HTTP 404' in cli.run('resource', 'provider', 'show', rp, rc=1)


def inventories(cli, rp, at):
    rows = cli.json('resource', 'provider', 'inventory', 'set', rp,
                    '--resource', 'VCPU=8',
                    '--resource', 'VCPU:allocation_ratio=2.0',
                    '--resource', 'MEMORY_MB=4096',
                    '--resource', 'MEMORY_MB:max_unit=2048',
                    '--resource', 'DISK_GB=100')
    by_class = {row['resource_class']: row for row in rows}
    assert sorted(by_class) == ['DISK_GB', 'MEMORY_MB', 'VCPU']
    assert by_class['VCPU']['allocation_ratio'] == 2.0
    assert by_class['MEMORY_MB']['max_unit'] == 2048
    vcpu = cli.json('resource', 'provider', 'inventory', 'class', 'set',
                    rp, 'VCPU', '--total', '16', '--allocation_ratio', '2.0')
    assert vcpu['total'] == 16
    shown = cli.json('resource', 'provider', 'inventory', 'show', rp, 'VCPU')
    assert (shown['total'], shown['used']) == (16, 0)
    cli.run('resource', 'provider', 'inventory', 'delete', rp,
            '--resource-class', 'DISK_GB')
    listed = cli.json('resource', 'provider', 'inventory', 'list', rp)
    assert column(listed, 'resource_class') == ['MEMORY_MB', 'VCPU']
    amended = cli.json('resource', 'provider', 'inventory', 'set', rp,
                       '--amend', '--resource', 'DISK_GB=50')
    assert column(amended, 'resource_class') == [
        'DISK_GB', 'MEMORY_MB', 'VCPU']
    having = ['resource', 'provider', 'list', '--resource', 'VCPU=16']
    if at((1, 4)):
        assert rp in column(cli.json(*having), 'uuid')
    else:
        cli.refused(*having)


def resource_classes(cli, tag, at):
    name = 'CUSTOM_' + tag.upper().replace('-', '_')
    if not at((1, 2)):
        cli.refused('resource', 'class', 'list')
        return
    cli.run('resource', 'class', 'create', name)
    assert name in column(cli.json('resource', 'class', 'list'), 'name')
    assert cli.json('resource', 'class', 'show', name) == {'name': name}
    if at((1, 7)):
        cli.run('resource', 'class', 'set', name + '_B')
        cli.run('resource', 'class', 'set', name + '_B')  # idempotent
        cli.run('resource', 'class', 'delete', name + '_B')
    else:
        cli.refused('resource', 'class', 'set', name + '_B')
    cli.run('resource', 'class', 'delete', name)
    assert 'HTTP 404' in cli.run('resource', 'class', 'show', name, rc=1)


def traits(cli, tag, rp, at):
    if not at((1, 6)):
        cli.refused('trait', 'list')
        return
    name = 'CUSTOM_' + tag.upper().replace('-', '_')
    cli.run('trait', 'create', name)
    listed = cli.json('trait', 'list', '--name', 'startswith:' + name)
    assert column(listed, 'name') == [name]
    assert cli.json('trait', 'show', name) == {'name': name}
    rows = cli.json('resource', 'provider', 'trait', 'set', rp,
                    '--trait', name, '--trait', 'HW_CPU_X86_AVX2')
    assert column(rows, 'name') == sorted([name, 'HW_CPU_X86_AVX2'])
    assert column(cli.json('resource', 'provider', 'trait', 'list', rp),
                  'name') == sorted([name, 'HW_CPU_X86_AVX2'])
    # In use by a provider: the server refuses the deletion.
    assert 'HTTP 409' in cli.run('trait', 'delete', name, rc=1)
    cli.run('resource', 'provider', 'trait', 'delete', rp)
    assert cli.json('resource', 'provider', 'trait', 'list', rp) == []
    cli.run('trait', 'delete', name)
    cli.json('resource', 'provider', 'trait', 'set', rp,
             '--trait', 'HW_CPU_X86_AVX2')
    if at((1, 18)):
        with_trait = cli.json('resource', 'provider', 'list',
                              '--required', 'HW_CPU_X86_AVX2')
        assert rp in column(with_trait, 'uuid')
        if at((1, 39)):  # a comma makes an any-of list
            any_of = cli.json('resource', 'provider', 'list', '--required',
                              'HW_CPU_X86_SSE42,HW_CPU_X86_AVX2')
            assert rp in column(any_of, 'uuid')
    else:
        cli.refused('resource', 'provider', 'list',
                    '--required', 'HW_CPU_X86_AVX2')


def provider_aggregates(cli, rp, at):
    if not at((1, 1)):
        cli.refused('resource', 'provider', 'aggregate', 'list', rp)
        return []
    wanted = sorted(str(uuid.uuid4()) for _ in range(2))
    args = ['resource', 'provider', 'aggregate', 'set', rp,
            '--aggregate', wanted[0], '--aggregate', wanted[1]]
    if at((1, 19)):
        generation = cli.json('resource', 'provider', 'show', rp)[
            'generation']
        assert 'A generation must be specified' in cli.run(*args, rc=1)
        stale = cli.run(*args, '--generation', str(generation + 1), rc=1)
        assert 'HTTP 409' in stale
        args += ['--generation', str(generation)]
    assert column(cli.json(*args), 'uuid') == wanted
    assert column(cli.json('resource', 'provider', 'aggregate', 'list', rp),
                  'uuid') == wanted
    if at((1, 3)):
        members = cli.json('resource', 'provider', 'list',
                           '--aggregate-uuid', wanted[0])
        assert column(members, 'uuid') == [rp]
    return wanted


def allocations(cli, consumer, rp, child, at):
    project, user = uuid.uuid4().hex, uuid.uuid4().hex
    args = ['resource', 'provider', 'allocation', 'set', consumer,
            '--allocation', 'rp=%s,VCPU=2,MEMORY_MB=512' % rp]
    if child:
        args += ['--allocation', 'rp=%s,SRIOV_NET_VF=1' % child]
    if at((1, 8)):
        args += ['--project-id', project, '--user-id', user]
    if at((1, 38)):
        args += ['--consumer-type', 'INSTANCE']
    rows = cli.json(*args)
    by_provider = {row['resource_provider']: row for row in rows}
    assert by_provider[rp]['resources'] == {'VCPU': 2, 'MEMORY_MB': 512}
    if child:
        assert by_provider[child]['resources'] == {'SRIOV_NET_VF': 1}
    if at((1, 12)):
        assert by_provider[rp]['project_id'] == project
    if at((1, 38)):
        assert by_provider[rp]['consumer_type'] == 'INSTANCE'
    shown = cli.json('resource', 'provider', 'allocation', 'show', consumer)
    assert column(shown, 'resource_provider') == sorted(by_provider)

    if at((1, 12)):
        left = cli.json('resource', 'provider', 'allocation', 'unset',
                        consumer, '--provider', rp,
                        '--resource-class', 'MEMORY_MB')
        remaining = {row['resource_provider']: row['resources']
                     for row in left}
        assert remaining[rp] == {'VCPU': 2}
    else:
        cli.refused('resource', 'provider', 'allocation', 'unset', consumer,
                    '--provider', rp)

    usages = cli.json('resource', 'provider', 'usage', 'show', rp)
    assert {row['resource_class']: row['usage'] for row in usages}[
        'VCPU'] == 2
    shown_rp = cli.json('resource', 'provider', 'show', rp, '--allocations')
    assert consumer in shown_rp['allocations']
    if at((1, 9)):
        totals = cli.json('resource', 'usage', 'show', project,
                          '--user-id', user)
        by_key = {row['resource_class']: row['usage'] for row in totals}
        if at((1, 38)):
            # Usages come per consumer type; the client shows them as is.
            assert by_key['INSTANCE']['VCPU'] == 2
            assert by_key['INSTANCE']['consumer_count'] == 1
        else:
            assert by_key['VCPU'] == 2
    else:
        cli.refused('resource', 'usage', 'show', project)


def candidates(cli, rp, child, aggregates, at):
    if not at((1, 10)):
        cli.refused('allocation', 'candidate', 'list', '--resource', 'VCPU=1')
        return
    rows = cli.json('allocation', 'candidate', 'list', '--resource',
                    'VCPU=1', '--resource', 'MEMORY_MB=256')
    assert rp in column(rows, 'resource provider')
    limited = ['allocation', 'candidate', 'list', '--resource', 'VCPU=1',
               '--limit', '1']
    if at((1, 16)):
        assert column(cli.json(*limited), '#') == [1]
    else:
        cli.refused(*limited)
    if at((1, 17)):
        required = cli.json('allocation', 'candidate', 'list', '--resource',
                            'VCPU=1', '--required', 'HW_CPU_X86_AVX2')
        assert rp in column(required, 'resource provider')
        assert 'HW_CPU_X86_AVX2' in required[0]['traits']
    if at((1, 21)):
        members = cli.json('allocation', 'candidate', 'list', '--resource',
                           'VCPU=1', '--member-of', aggregates[0])
        assert column(members, 'resource provider') == [rp]
    if at((1, 22)):
        forbidden = cli.json('allocation', 'candidate', 'list', '--resource',
                             'VCPU=1', '--forbidden', 'HW_CPU_X86_AVX2')
        assert rp not in column(forbidden, 'resource provider')
    if at((1, 25)):
        groups = cli.json('allocation', 'candidate', 'list',
                          '--group', '1', '--resource', 'VCPU=1',
                          '--group', '2', '--resource', 'SRIOV_NET_VF=1',
                          '--group-policy', 'isolate')
        # Candidates span provider trees from 1.29 on; before, a request
        # that only a tree can satisfy has none.
        # (Other tests' providers may be candidates too: look at ours.)
        expected = sorted([rp, child]) if at((1, 29)) else []
        assert [p for p in column(groups, 'resource provider')
                if p in (rp, child)] == expected
    if at((1, 39)):
        any_of = cli.json('allocation', 'candidate', 'list', '--resource',
                          'VCPU=1', '--required',
                          'HW_CPU_X86_AVX2,HW_CPU_X86_SSE42')
        assert rp in column(any_of, 'resource provider')


def test_openstack_script_matches_runner(placement, runner):
    """The ``openstack`` script answers as the in-process runner does."""
    openstack = wsgi_process.integration_venv(VENV, 'openstack')
    rp = str(uuid.uuid4())
    runner.version = '1.39'
    runner.run('resource', 'provider', 'create', 'script-check',
               '--uuid', rp)
    for version, args in [
            ('1.39', ['resource', 'provider', 'show', rp, '-f', 'json']),
            ('1.39', ['resource', 'class', 'show', 'VCPU', '-f', 'json']),
            ('1.0', ['resource', 'class', 'list', '-f', 'json'])]:
        script = subprocess.run(
            [str(openstack)] + runner.global_args
            + ['--os-placement-api-version', version] + args,
            capture_output=True, text=True, timeout=120)
        runner.version = version
        ok = script.returncode == 0
        expected = runner.run(*args, rc=script.returncode)
        assert (script.stdout if ok else script.stderr) == expected
    runner.run('resource', 'provider', 'delete', rp)
