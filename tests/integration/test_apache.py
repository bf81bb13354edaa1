"""The service under a real Apache httpd and mod_wsgi, configured by the
shipped etc/apache2/placement-api.conf (4 daemon processes x 4 threads,
mounted at /placement) as the README's commands install it, on every
database backend.

Apache runs in the foreground on a free port with its own ServerRoot,
PidFile and ErrorLog in a temporary folder; the mod_wsgi module is the one
built for this Python by `pip install mod_wsgi` (tools/integration-deps.sh
installs it and Apache). Through /placement: links carry the prefix,
32 clients race for the last units of one provider without over-allocating,
and the request log reaches Apache's error log, from several processes;
200 slow clients (tests/integration/test_front_ends.py's) do not stop it,
alone or behind the HAProxy sample; no request whose body did not all
arrive is carried out (tests/cut_requests.py).

mod_wsgi refuses to run daemon processes as root, so when the tests run as
root Apache is started as www-data; it is given CAP_DAC_READ_SEARCH so that
it can read the Python, venv and checkout wherever they are (CI's may be
under /root), and its folder (with the SQLite database) belongs to it.
"""
import os
import pathlib
import pwd
import re
import shutil
import subprocess
import sys
import time
import urllib.parse

import pytest
import test_front_ends as front_ends

from placement.db import engine as db_engine
from placement.db import migration
import placement.wsgi

from conftest import make_conf
from conftest import unavailable
import cut_requests
import live_server
import readme_blocks
import wsgi_process

pytestmark = pytest.mark.integration

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_CONFIG = REPO / 'etc' / 'apache2' / 'placement-api.conf'
# Debian's account for Apache, used when the tests run as root.
APACHE_USER = 'www-data'
INSTALL_HINT = 'run tools/integration-deps.sh'


def _apache_binary():
    for name in ('apache2', 'httpd'):
        found = shutil.which(name, path=os.environ.get('PATH', '') +
                             ':/usr/sbin:/usr/local/sbin')
        if found:
            return found
    unavailable('Apache httpd is not installed (%s): the Apache tests are '
                'NOT being run' % INSTALL_HINT)


def _query(command):
    try:
        return subprocess.run(command, check=True, capture_output=True,
                              text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        unavailable('%s failed (%s): the Apache tests are NOT being run: %s'
                    % (command[0], INSTALL_HINT, exc))


@pytest.fixture(scope='module')
def httpd():
    """The Apache binary and the config lines that load its modules."""
    binary = _apache_binary()
    modules = pathlib.Path(_query(['apxs', '-q', 'LIBEXECDIR']))
    express = pathlib.Path(sys.executable).parent / 'mod_wsgi-express'
    if not express.exists():
        unavailable('mod_wsgi is not installed in %s (%s): the Apache tests '
                    'are NOT being run' % (sys.prefix, INSTALL_HINT))
    loads = ['LoadModule %s_module "%s"' % (name, modules / ('mod_%s.so'
                                                             % name))
             for name in ('mpm_event', 'authz_core')]
    loads.append(_query([str(express), 'module-config']))
    return binary, '\n'.join(loads)


def _run_as():
    """(command prefix, pwd entry of the account) for running Apache."""
    if os.geteuid() != 0:
        return [], pwd.getpwuid(os.geteuid())
    setpriv = shutil.which('setpriv')
    try:
        user = pwd.getpwnam(APACHE_USER)
    except KeyError:
        user = None
    if not setpriv or not user:
        unavailable('running Apache as %s needs that user and setpriv: the '
                    'Apache tests are NOT being run' % APACHE_USER)
    prefix = [setpriv, '--reuid', str(user.pw_uid), '--regid',
              str(user.pw_gid), '--clear-groups',
              '--inh-caps', '+dac_read_search',
              '--ambient-caps', '+dac_read_search']
    return prefix, user


def _database_url(backend, folder):
    """The backend's database; on SQLite a file of Apache's own, as the
    daemons must write it and its folder (WAL files).
    """
    if backend.name != 'sqlite':
        return backend.url
    url = 'sqlite:///%s' % (folder / 'placement.db')
    engine = db_engine.create_engine(make_conf(url))
    migration.upgrade(engine)
    engine.dispose()
    return url


def _readme_conf(folder):
    """The sample with PLACEMENT_WSGI_DIR defined first, made by the
    README's commands (those of its Apache block that write the file)."""
    conf = folder / 'placement-api.conf'
    (block,) = readme_blocks.marked('by', 'tests/integration/test_apache.py')
    commands = [line for line in block.text.replace('\\\n', '').splitlines()
                if line.startswith(('WSGI_DIR=', '{ echo'))]
    assert len(commands) == 2
    script = '\n'.join(commands).replace(
        '/opt/placement/venv', sys.prefix).replace(
            '/etc/apache2/conf-available/placement-api.conf', str(conf))
    subprocess.run(['bash', '-euo', 'pipefail', '-c', script], cwd=REPO,
                   check=True)
    assert conf.read_text().startswith(
        'Define PLACEMENT_WSGI_DIR %s\n' % pathlib.Path(
            placement.wsgi.__file__).parent)
    return conf


def _chown_tree(folder, user):
    for path in [folder, *folder.rglob('*')]:
        os.chown(path, user.pw_uid, user.pw_gid)


@pytest.fixture
def apache(httpd, backend, tmp_path):
    """Apache serving the sample: (client, error log, database URL)."""
    binary, module_lines = httpd
    prefix, user = _run_as()
    root = tmp_path / 'apache'
    (root / 'run').mkdir(parents=True)
    port = wsgi_process.free_port()
    database_url = _database_url(backend, root)
    wsgi_process.write_config(root / 'placement.conf', {
        'api': {'auth_strategy': 'noauth2'},
        'placement_database': {'connection': database_url},
    })
    (root / 'httpd.conf').write_text('\n'.join([
        'ServerRoot "%s"' % root,
        'ServerName 127.0.0.1',
        'Listen 127.0.0.1:%d' % port,
        'PidFile "%s"' % (root / 'httpd.pid'),
        'ErrorLog "%s"' % (root / 'error.log'),
        'DefaultRuntimeDir "%s"' % (root / 'run'),
        module_lines,
        'WSGISocketPrefix "%s"' % (root / 'run' / 'wsgi'),
        'Define PLACEMENT_VENV "%s"' % sys.prefix,
        'Define PLACEMENT_USER %s' % user.pw_name,
        'Define PLACEMENT_GROUP #%d' % user.pw_gid,
        'Include "%s"' % _readme_conf(root),
        '',
    ]))
    if prefix:
        _chown_tree(root, user)
    client = live_server.Client('http://127.0.0.1:%d/placement' % port)
    with live_server.running(
            prefix + [binary, '-f', root / 'httpd.conf', '-DFOREGROUND'],
            client, root / 'console.log',
            env=dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(root))):
        yield client, root / 'error.log', database_url



def test_sample_says_how_many_names_it_defines():
    """The header asks for as many names as the sample takes, and the
    WSGI folder has no default tied to one Python version."""
    text = SAMPLE_CONFIG.read_text()
    names = re.findall(r'^<IfDefine !(PLACEMENT_\w+)>', text, re.M)
    assert names == ['PLACEMENT_VENV', 'PLACEMENT_WSGI_DIR',
                     'PLACEMENT_USER', 'PLACEMENT_GROUP']
    assert 'Set the four names below' in text
    assert not re.search(r'python\d', text)


def test_sample_without_the_wsgi_folder_is_refused(httpd, tmp_path):
    """Apache's syntax check stops at the sample's Error line, naming
    what to define."""
    binary, module_lines = httpd
    (tmp_path / 'httpd.conf').write_text('\n'.join([
        'ServerRoot "%s"' % tmp_path, 'ServerName 127.0.0.1',
        'Listen 127.0.0.1:%d' % wsgi_process.free_port(),
        'DefaultRuntimeDir "%s"' % tmp_path, module_lines,
        'Include "%s"' % SAMPLE_CONFIG, '']))
    result = subprocess.run([binary, '-t', '-f', tmp_path / 'httpd.conf'],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert 'Define PLACEMENT_WSGI_DIR' in result.stderr

def test_serves_under_apache(apache):
    client, error_log, _database_url = apache
    live_server.check_links_carry_prefix(client)
    live_server.claim_races_in_log(error_log, client)


@pytest.mark.sqlite_only
def test_behind_the_haproxy_sample_slow_clients_do_not_stop_apache(
        apache, tmp_path):
    """Apache alone gives each slow client one of its worker threads and,
    for a slow body, a mod_wsgi daemon thread (16 in the sample) until
    mod_reqtimeout ends it: behind the HAProxy sample (health check at
    the mount prefix), which passes on only whole requests, 200 slow
    clients leave normal requests answered at once."""
    client, _error_log, _database_url = apache
    parts = urllib.parse.urlsplit(client.url)
    sample = front_ends.SAMPLE_CONFIG.read_text().replace(
        'uri /healthcheck ', 'uri %s/healthcheck ' % parts.path)
    with front_ends._haproxy(tmp_path, parts.port, sample=sample) as port:
        url = 'http://127.0.0.1:%d%s' % (port, parts.path)
        front_ends.wait_until_up(url + '/')
        with front_ends.SlowClients(port, front_ends.SLOW_CLIENTS):
            time.sleep(front_ends.DRIP)
            times, statuses = front_ends._normal_requests(url)
    assert set(statuses) == {200}, statuses
    assert front_ends._p99(times) < 1.0, sorted(times)[-10:]


@pytest.mark.sqlite_only
def test_slow_clients_do_not_stop_apache_while_it_has_threads(apache):
    """Apache alone, with the event MPM's built-in limits (up to 400
    worker threads), reads each slow request in a worker thread of its
    own and passes mod_wsgi only whole ones: 200 slow clients leave
    normal requests answered at once."""
    client, _error_log, _database_url = apache
    port = urllib.parse.urlsplit(client.url).port
    with front_ends.SlowClients(port, front_ends.SLOW_CLIENTS):
        time.sleep(front_ends.DRIP)
        times, statuses = front_ends._normal_requests(client.url)
    assert set(statuses) == {200}, statuses
    assert front_ends._p99(times) < 1.0, sorted(times)[-10:]


def test_no_request_is_carried_out_before_its_body_arrived(apache):
    """The service refuses a body shorter than announced with its 400,
    but mod_wsgi's part in Apache, which passes the body on to the
    daemon process, answers for it: with Apache's own 500 page, after
    logging the body's read error (WSGI0126). A chunked body is refused
    by mod_wsgi before it reaches the service (411: the sample does not
    enable chunked requests)."""
    client, error_log, database_url = apache
    parts = urllib.parse.urlsplit(client.url)
    cut_requests.check_every_route(
        parts.port, client, database_url, error_log, prefix=parts.path,
        own_answers={'short': (_apache_page(500), True),
                     'chunked': (_apache_page(411), False)})
    assert 'WSGI0126: Request data read error' in error_log.read_text()


def _apache_page(status):
    def check(answer):
        assert answer.status == status, (answer.status, answer.body)
        assert answer.headers['content-type'].startswith('text/html')
    return check
