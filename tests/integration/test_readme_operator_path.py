"""The README's operator path, run from the README's own blocks (those
marked ``<!-- test: run STEP -->``, tests/readme_blocks.py).

Into a temporary folder standing for the machine (``/opt/placement`` and
``/etc/placement`` there, and a copy of the checkout for
``/path/to/this/checkout``): install into a fresh venv (which must hold
the runtime requirements alone), then on MariaDB and on PostgreSQL create
the database and its user with the README's SQL (a random name for both,
dropped afterwards), write its ``placement.conf`` and ``policy.yaml``
(which must let its role list the providers), check the file with its
validator command, ``db sync``, register the
service in a real Keystone with its ``openstack`` commands, start the
gunicorn sample as it says, and run its verify commands (``placement-status
upgrade check``, curl, the openstack CLI through the catalog); the request
log line it shows must match the real one. Its take-over commands adopt
a database upstream 16.0.0's ``db sync`` made. Then the quick start (the
development server, its curl and openstack commands and the operator
extensions' curl examples), the utf8mb4 conversion on MariaDB, and the
HAProxy sections through HAProxy's own check.

The substitutions are the README's placeholders only: ``controller``
becomes 127.0.0.1 (the test servers' port), ``PLACEMENT_DBPASS`` and
``PLACEMENT_PASS`` random passwords, the database and user ``placement``
a random name, and the port 8778 a free one; the test Keystone has public
endpoints only, so ``placement.conf`` gets the README's Troubleshooting
block for that. Without Keystone, the openstack CLI, MariaDB, PostgreSQL,
the mysql client or HAProxy the parts needing them skip loudly (and fail
under CI=true).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid

import pytest
import requests
import sqlalchemy as sa

from conftest import SERVERS
from conftest import _ServerUnreachable
from conftest import admin_engine
from conftest import selected_backends
from conftest import unavailable
import integration_venvs
import keystone_server
import readme_blocks
import wsgi_process

pytestmark = pytest.mark.integration

REPO = readme_blocks.REPO
SQL_STEPS = {'mysql': 'mariadb-sql', 'postgresql': 'postgresql-sql'}
# What the test and lint extras bring; none of it belongs in a runtime venv.
DEVELOPMENT_ONLY = ('pytest', 'mypy', 'ruff', 'schemathesis', 'hypothesis',
                    'grafanalib', 'pre-commit')
START_TIMEOUT = 120
# What differs from one request log line to the next: the README's values
# and what any value looks like.
LOG_LINE_VARIABLES = (
    ('2026-12-07 21:28:09.856', r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}'),
    ('13390', r'\d+'),
    ('req-d0322637-4f4d-47f1-8c62-c231ea8b1d2c', r'req-[0-9a-f-]{36}'),
    # User, project, domain, system scope, user and project domains.
    ('admin admin - - - -', r'\S+ \S+ \S+ \S+ \S+ \S+'),
    ('10.0.0.5', r'[0-9.]+'),
)


class Machine:
    """Where the README's paths are, in a temporary folder."""

    def __init__(self, root):
        self.root = root
        self.checkout = root / 'checkout'
        self.opt = root / 'opt' / 'placement'
        self.etc = root / 'etc' / 'placement'

    @property
    def venv(self):
        return self.opt / 'venv'

    def paths(self, text):
        return (text.replace('/opt/placement', str(self.opt))
                .replace('/etc/placement', str(self.etc))
                .replace('/path/to/this/checkout', str(self.checkout)))

    def with_etc(self, etc):
        machine = Machine(self.root)
        machine.etc = etc
        etc.mkdir(parents=True)
        return machine


def _bash(script, cwd, env=None, timeout=900):
    """Run ``script`` as bash does with -e; return its stdout."""
    result = subprocess.run(
        ['bash', '-euo', 'pipefail', '-c', script], cwd=cwd, env=env,
        capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL)
    assert result.returncode == 0, '%s\nexit %d:\n%s\n%s' % (
        script, result.returncode, result.stdout[-3000:],
        result.stderr[-3000:])
    return result.stdout


def _copy_checkout(target):
    files = subprocess.run(
        ['git', 'ls-files', '-z', '--cached', '--others',
         '--exclude-standard'], cwd=REPO, check=True, capture_output=True,
        text=True).stdout.split('\0')
    for name in filter(None, files):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


@pytest.fixture(scope='module')
def machine(tmp_path_factory):
    """The README's install step done: a fresh venv from a copy of the
    checkout, holding the runtime requirements alone."""
    machine = Machine(tmp_path_factory.mktemp('machine'))
    machine.checkout.mkdir()
    _copy_checkout(machine.checkout)
    _bash(machine.paths(readme_blocks.step('install').text),
          machine.checkout)
    installed = json.loads(_bash(
        '%s -m pip list --format=json' % (machine.venv / 'bin' / 'python'),
        machine.root))
    names = {package['name'].lower() for package in installed}
    assert 'placement-fast' in names
    assert names & set(DEVELOPMENT_ONLY) == set()
    return machine


@pytest.fixture(scope='module')
def keystone(tmp_path_factory):
    server = keystone_server.Keystone(
        tmp_path_factory.mktemp('keystone')).setup().start()
    yield server
    server.stop()


@pytest.fixture(scope='module')
def openstack_bin():
    return wsgi_process.integration_venv('.venv-osc', 'openstack').parent


def _admin_env(keystone, openstack_bin):
    """An administrator's credentials, as an admin-openrc gives them."""
    return dict(
        os.environ, PATH='%s:%s' % (openstack_bin, os.environ['PATH']),
        OS_AUTH_URL=keystone.url, OS_USERNAME='admin',
        OS_PASSWORD=keystone_server.ADMIN_PASSWORD, OS_PROJECT_NAME='admin',
        OS_USER_DOMAIN_NAME=keystone_server.DOMAIN,
        OS_PROJECT_DOMAIN_NAME=keystone_server.DOMAIN,
        OS_IDENTITY_API_VERSION='3', OS_REGION_NAME=keystone_server.REGION)


@pytest.fixture(scope='module')
def registered(machine, keystone, openstack_bin):
    """The README's Keystone step: (placement's port in the catalog, the
    placement user's password)."""
    port = wsgi_process.free_port()
    password = uuid.uuid4().hex
    script = (readme_blocks.step('keystone').text
              .replace('controller:8778', '127.0.0.1:%d' % port)
              .replace('PLACEMENT_PASS', password))
    _bash(script, machine.root, env=_admin_env(keystone, openstack_bin))
    return port, password


def _server_admin(server):
    if server not in selected_backends():
        pytest.skip('PLACEMENT_TEST_BACKENDS leaves out %s' % server)
    try:
        return admin_engine(server)
    except _ServerUnreachable as exc:
        unavailable(str(exc))


def _execute(admin, sql):
    """Run the statements of ``sql`` as a client would: no parameters,
    so that a '%' is a '%'."""
    with admin.connect() as conn:
        cursor = conn.connection.dbapi_connection.cursor()
        for statement in sql.split(';'):
            if statement.strip():
                cursor.execute(statement)
        cursor.close()


def _drop(admin, server, name):
    if server == 'postgresql':
        _execute(admin, 'DROP DATABASE IF EXISTS %s WITH (FORCE); '
                 'DROP ROLE IF EXISTS %s' % (name, name))
    else:
        _execute(admin, "DROP DATABASE IF EXISTS %s; "
                 "DROP USER IF EXISTS '%s'@'localhost'; "
                 "DROP USER IF EXISTS '%s'@'%%'" % (name, name, name))
    admin.dispose()


def _placement_conf(server, name, password, keystone, keystone_password):
    """The README's placement.conf for ``server``, its placeholders
    filled in."""
    text = readme_blocks.step('placement.conf').text
    if server == 'postgresql':
        postgresql = re.search(r'^# PostgreSQL: (connection = .*)$', text,
                               re.M).group(1)
        text = re.sub(r'^connection = .*$', postgresql, text, flags=re.M)
    url = sa.engine.make_url(SERVERS[server])
    host = '%s:%d' % (url.host, url.port) if url.port else url.host
    text = re.sub(r'^(connection = [\w+]+://)placement:PLACEMENT_DBPASS@'
                  r'controller/placement$',
                  r'\g<1>%s:%s@%s/%s' % (name, password, host, name), text,
                  flags=re.M)
    assert name in text
    if keystone:
        text = text.replace('http://controller:5000/', keystone.url[:-3])
    text = text.replace('PLACEMENT_PASS', keystone_password)
    # The test Keystone publishes public endpoints only.
    (public,) = [block.text for block in readme_blocks.marked('config')
                 if 'interface = public' in block.text]
    return text + '\n' + public


def _start(command, cwd, log_path, env, url):
    """Run the server ``command`` (bash) until /healthcheck answers."""
    with open(log_path, 'ab') as log:
        process = subprocess.Popen(
            ['bash', '-c', command], cwd=cwd, env=env, stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail('%s exited with %s:\n%s' % (
                command, process.returncode, log_path.read_text()[-4000:]))
        try:
            if requests.get(url + '/healthcheck', timeout=10).ok:
                return process
        except (requests.ConnectionError, requests.Timeout):
            # Not listening yet, or no worker has loaded the application.
            pass
        time.sleep(0.3)
    _stop(process)
    pytest.fail('%s did not serve within %ss:\n%s' % (
        command, START_TIMEOUT, log_path.read_text()[-4000:]))


def _stop(process):
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _log_line_pattern():
    """The README's request log line, its times, ids and address
    generalised."""
    (block,) = readme_blocks.marked('log-line')
    pattern = re.escape(block.text.strip())
    for example, general in LOG_LINE_VARIABLES:
        assert re.escape(example) in pattern, example
        pattern = pattern.replace(re.escape(example), general)
    return re.compile(pattern)


def _policy_file_applies(keystone, url):
    """The README's policy.yaml, beside placement.conf, lets a
    ``monitoring`` role list the providers, and nothing else."""
    name = 'monitor-' + uuid.uuid4().hex[:8]
    keystone.client().user(name, name, project_roles=[
        ('service', 'monitoring')])
    headers = {'X-Auth-Token': keystone.token(name, name, project='service'),
               'OpenStack-API-Version': 'placement latest'}
    for path, status in (('/resource_providers', 200),
                         ('/resource_classes', 403)):
        response = requests.get(url + path, headers=headers, timeout=60)
        assert response.status_code == status, (path, response.text)


@pytest.mark.parametrize('server', sorted(SQL_STEPS))
def test_operator_path(server, machine, keystone, openstack_bin, registered,
                       tmp_path):
    admin = _server_admin(server)
    port, keystone_password = registered
    name = 'ptest_' + uuid.uuid4().hex[:12]
    password = uuid.uuid4().hex
    sql = readme_blocks.step(SQL_STEPS[server]).text
    sql = re.sub(r'\bplacement\b', name, sql).replace(
        'PLACEMENT_DBPASS', password)
    try:
        _execute(admin, sql)
        _run_the_service(machine.with_etc(tmp_path / 'etc' / 'placement'),
                         server, name, password, keystone, openstack_bin,
                         port, keystone_password, tmp_path)
    finally:
        _drop(admin, server, name)


def _run_the_service(machine, server, name, password, keystone,
                     openstack_bin, port, keystone_password, tmp_path):
    (machine.etc / 'placement.conf').write_text(_placement_conf(
        server, name, password, keystone, keystone_password))
    (machine.etc / 'policy.yaml').write_text(
        readme_blocks.step('policy.yaml').text)
    for step in ('validate', 'db-sync'):
        _bash(machine.paths(readme_blocks.step(step).text), machine.checkout)

    *setup, serve = machine.paths(
        readme_blocks.step('gunicorn').text).strip().splitlines()
    _bash('\n'.join(setup), machine.checkout)
    url = 'http://127.0.0.1:%d' % port
    log_path = tmp_path / 'gunicorn.log'
    # gunicorn keeps its control socket in XDG_RUNTIME_DIR.
    process = _start('%s --bind 127.0.0.1:%d' % (serve, port), tmp_path,
                     log_path, dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path)),
                     url)
    try:
        verify = (machine.paths(readme_blocks.step('verify').text)
                  .replace('controller:8778', '127.0.0.1:%d' % port))
        output = _bash(verify, tmp_path,
                       env=_admin_env(keystone, openstack_bin))
        assert 'Result: Success' in output and 'Failure' not in output
        root, health = [json.loads(line) for line in output.splitlines()
                        if line.startswith('{')]
        assert root['versions'][0]['max_version'] == '1.39'
        assert health == {'status': 'ok', 'database': 'ok'}
        assert re.search(r'\| VCPU +\|', output)

        _policy_file_applies(keystone, url)
        token = keystone.token('admin', keystone_server.ADMIN_PASSWORD,
                               project='admin')
        response = requests.get(
            url + '/traits?name=in:HW_CPU_X86_AVX', timeout=60, headers={
                'X-Auth-Token': token,
                'OpenStack-API-Version': 'placement latest'})
        assert response.status_code == 200
    finally:
        _stop(process)
    logged = [line for line in log_path.read_text().splitlines()
              if '"GET /traits?name=in:HW_CPU_X86_AVX"' in line]
    assert logged and _log_line_pattern().fullmatch(logged[-1]), logged


@pytest.mark.parametrize('server', sorted(SQL_STEPS))
def test_take_over_an_upstream_database(server, machine, tmp_path):
    """Upstream 16.0.0's db sync makes the database; the README's
    take-over commands, run with this service's venv first on PATH,
    adopt it."""
    admin = _server_admin(server)
    upstream = integration_venvs.upstream() / 'bin'
    name = 'ptest_' + uuid.uuid4().hex[:12]
    password = uuid.uuid4().hex
    sql = readme_blocks.step(SQL_STEPS[server]).text
    machine = machine.with_etc(tmp_path / 'etc' / 'placement')
    conf = machine.etc / 'placement.conf'
    try:
        _execute(admin, re.sub(r'\bplacement\b', name, sql).replace(
            'PLACEMENT_DBPASS', password))
        conf.write_text(_placement_conf(server, name, password, None, ''))
        _bash('%s --config-file %s db sync' % (
            upstream / 'placement-manage', conf), tmp_path)
        output = _bash(
            machine.paths(readme_blocks.step('take-over').text), tmp_path,
            env=dict(os.environ, PATH='%s:%s' % (
                machine.venv / 'bin', os.environ['PATH'])))
        assert 'Result: Success' in output and 'Failure' not in output
    finally:
        _drop(admin, server, name)


def test_quick_start(machine, tmp_path):
    """tools/run-dev.sh on a port of its own, with the installed runtime
    venv as its .venv-run, then the README's requests to it."""
    port = wsgi_process.free_port()
    at_port = 'localhost:%d' % port
    checksum = _bash('cksum < pyproject.toml', machine.checkout).strip()
    # run-dev.sh takes the venv as installed: no editable install over it.
    (machine.venv / '.placement-installed').write_text(checksum + ' \n')
    env = dict(os.environ, RUN_VENV=str(machine.venv))
    log_path = tmp_path / 'run-dev.log'
    command = readme_blocks.step('quick-start').text.replace(
        '8778', str(port))
    process = _start(command, machine.checkout, log_path, env,
                     'http://127.0.0.1:%d' % port)
    try:
        assert '%s/resource_classes' % at_port in log_path.read_text()
        classes = json.loads(_bash(
            readme_blocks.step('quick-start-curl').text.replace(
                'localhost:8778', at_port), tmp_path))
        assert {'name': 'VCPU', 'links': [{
            'rel': 'self', 'href': '/resource_classes/VCPU'}]} in classes[
                'resource_classes']
        outputs = [_bash(block.text.replace('localhost:8778', at_port),
                         tmp_path)
                   for block in readme_blocks.marked('run', 'dev-curl')]
        explained, health, _openapi = outputs
        assert json.loads(explained)['summary']
        assert json.loads(health)['status'] == 'ok'
        document = json.loads((tmp_path / 'placement-1.20.json').read_text())
        assert document['info']['version'] == '1.20'

        openstack = wsgi_process.integration_venv('.venv-osc', 'openstack')
        _bash(readme_blocks.step('quick-start-openstack').text.replace(
            '127.0.0.1:8778', '127.0.0.1:%d' % port),
            tmp_path, env=dict(os.environ, PATH='%s:%s' % (
                openstack.parent, os.environ['PATH'])))
    finally:
        _stop(process)


def test_utf8mb4_conversion(tmp_path):
    """The Troubleshooting commands convert a utf8mb3 database."""
    admin = _server_admin('mysql')
    client = shutil.which('mysql')
    if not client:
        unavailable('no mysql client: the README\'s utf8mb4 conversion is '
                    'NOT being run')
    url = sa.engine.make_url(SERVERS['mysql'])
    name = 'ptest_' + uuid.uuid4().hex[:12]
    try:
        _execute(admin, 'CREATE DATABASE %s CHARACTER SET utf8mb3; '
                 'CREATE TABLE %s.traits (name VARCHAR(255)) '
                 'CHARACTER SET utf8mb3' % (name, name))
        connect = 'mysql -h %s -P %d -u %s' % (
            url.host, url.port or 3306, url.username)
        if url.password:
            connect += " -p'%s'" % url.password
        script = re.sub(r'\bplacement\b', name, re.sub(
            r'\bmysql\b', connect,
            readme_blocks.step('utf8mb4-convert').text))
        _bash(script, tmp_path)
        with admin.connect() as conn:
            collations = conn.exec_driver_sql(
                "SELECT table_collation FROM information_schema.tables "
                "WHERE table_schema = '%s'" % name).scalars().all()
            charset = conn.exec_driver_sql(
                "SELECT default_character_set_name FROM "
                "information_schema.schemata WHERE schema_name = '%s'"
                % name).scalar()
        assert collations and all(c.startswith('utf8mb4') for c in collations)
        assert charset == 'utf8mb4'
    finally:
        _drop(admin, 'mysql', name)


def test_haproxy_sections_pass_haproxys_check(tmp_path):
    haproxy = shutil.which('haproxy', path=os.environ['PATH'] + ':/usr/sbin')
    if not haproxy:
        unavailable('HAProxy is not installed (tools/integration-deps.sh): '
                    'the README\'s HAProxy sections are NOT being checked')
    for block in readme_blocks.marked('haproxy'):
        config = tmp_path / 'haproxy.cfg'
        config.write_text('defaults\n    mode tcp\n    timeout connect 1s\n'
                          '    timeout client 1s\n    timeout server 1s\n\n'
                          + block.text)
        result = subprocess.run([haproxy, '-c', '-f', config],
                                capture_output=True, text=True)
        assert result.returncode == 0, '%s:\n%s' % (block, result.stdout
                                                    + result.stderr)
