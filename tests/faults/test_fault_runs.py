"""Short fault runs (tools/faults/run.py), one per topology: one round of
each fault with short holds, through two API servers; the checker must
find no violation.

Only with PLACEMENT_TEST_FAULT_RUNS=1 (each run takes a minute or two and
needs root and the Debian packages of tools/integration-deps.sh); then a
missing prerequisite skips loudly, or fails under CI=true.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import warnings

import pytest

from conftest import unavailable

RUN = pathlib.Path(__file__).resolve().parents[2] / 'tools' / 'faults' / (
    'run.py')
ENABLED = os.environ.get('PLACEMENT_TEST_FAULT_RUNS', '') == '1'
# Ports and names of their own, apart from a full run's defaults.
SETTINGS = {
    'galera': ['--port-base', '14540', '--netns-prefix', 'ftg',
               '--network', '10.236.21'],
    'patroni': ['--port-base', '14640', '--netns-prefix', 'ftp',
                '--network', '10.236.22'],
}
PROGRAMS = {
    'galera': ['/usr/sbin/mariadbd', '/usr/lib/galera/libgalera_smm.so',
               '/usr/sbin/haproxy', 'rsync'],
    'patroni': ['/usr/bin/patroni', '/usr/bin/etcd', '/usr/sbin/haproxy'],
}
RUN_TIMEOUT = 600


def _check_prerequisites(family):
    if os.geteuid() != 0:
        unavailable('fault runs need root (network namespaces): NOT run')
    if subprocess.run(['ip', 'netns', 'list'], capture_output=True,
                      check=False).returncode != 0:
        unavailable('`ip netns` does not work here: fault runs NOT run')
    missing = [program for program in PROGRAMS[family]
               if not (os.path.exists(program) or shutil.which(program))]
    if family == 'patroni' and not list(
            pathlib.Path('/usr/lib/postgresql').glob('*/bin/postgres')):
        missing.append('/usr/lib/postgresql/*/bin/postgres')
    if missing:
        unavailable('%s fault runs NOT run: missing %s '
                    '(tools/integration-deps.sh)' % (family,
                                                      ', '.join(missing)))


@pytest.mark.parametrize('topology', [
    'galera-single-writer', 'galera-every-node', 'patroni-haproxy',
    'patroni-multihost'])
def test_fault_run(topology, tmp_path):
    if not ENABLED:
        message = ('PLACEMENT_TEST_FAULT_RUNS=1 is not set: the fault run '
                   'of %s is NOT being run' % topology)
        warnings.warn(message, stacklevel=1)
        pytest.skip(message)
    family = topology.split('-')[0]
    _check_prerequisites(family)
    out = tmp_path / 'run'
    command = [
        sys.executable, str(RUN), '--topology', topology,
        '--faults', 'kill,freeze,partition,api-kill', '--rounds', '1',
        '--hold', '6', '--settle', '2', '--clients', '4',
        '--api-servers', '2', '--workers', '2', '--api-port-base', '14740',
        '--out', str(out)] + SETTINGS[family]
    result = subprocess.run(command, capture_output=True, text=True,
                            timeout=RUN_TIMEOUT, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, _server_errors(out) + output[-6000:]
    faults = [json.loads(line)
              for line in (out / 'faults.jsonl').read_text().splitlines()]
    assert sorted(fault['fault'] for fault in faults) == [
        'api-kill', 'freeze', 'kill', 'partition'], output[-3000:]
    assert all(fault['recovered'] is not None for fault in faults), faults
    assert 'no violations' in result.stdout, (
        _server_errors(out) + output[-6000:])
    history = (out / 'history.jsonl').read_text().splitlines()
    assert sum(json.loads(line)['outcome'] == 'ok' for line in history) > 50


def _server_errors(out, limit=4000):
    """The API servers' unexpected errors and their tracebacks, from the
    logs the run keeps: the report names a 500, the log says why."""
    excerpts = []
    for path in sorted((out / 'logs').glob('api*.log')):
        lines = path.read_text(errors='replace').splitlines()
        for index, line in enumerate(lines):
            if 'Unexpected error' in line:
                excerpts.append('%s: %s' % (path.name, '\n'.join(
                    lines[index:index + 40])))
    text = '\n'.join(excerpts)
    return (text[:limit] + '\n...\n') if text else ''
