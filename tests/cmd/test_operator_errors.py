"""Ordinary mistakes cost one line on stderr, saying what is wrong and what
to do, in every command: no traceback (unless --debug asks for it), the
exit status of upstream's commands (placement-manage 1, its extensions
2, placement-status 2: a failure), and never a password."""
import importlib.util
import subprocess
import sys

import pytest
import sqlalchemy as sa

from placement.cmd import manage
from placement.cmd import status

import gunicorn_server

# Every placement-manage command, with its exit status for a mistake.
MANAGE_COMMANDS = [
    (['db', 'sync'], 1),
    (['db', 'version'], 1),
    (['db', 'stamp', 'head'], 1),
    (['db', 'online_data_migrations'], 1),
    (['candidates', 'explain', 'resources=VCPU:1'], 2),
    (['audit'], 2),
]
COMMAND_IDS = [' '.join(argv[:2]) for argv, _ in MANAGE_COMMANDS]


def _conf(tmp_path, url, extra=''):
    path = tmp_path / 'placement.conf'
    path.write_text('[placement_database]\nconnection = %s\nmax_retries = 0\n'
                    '%s' % (url, extra))
    return str(path)


def _one_line(text, prog):
    """The one line ``text`` (a command's stderr) holds, checked for a
    traceback and the command's name."""
    assert 'Traceback' not in text
    lines = text.splitlines()
    assert len(lines) == 1, text
    assert lines[0].startswith(prog + ': '), text
    return lines[0]


def _manage(argv, capsys):
    code = manage.main(argv)
    return code, _one_line(capsys.readouterr().err, 'placement-manage')


def _status(conf, capsys):
    code = status.main(['--config-file', conf, 'upgrade', 'check'])
    captured = capsys.readouterr()
    # The table of results is not printed: there were none.
    assert captured.out == ''
    return code, _one_line(captured.err, 'placement-status')


DEAD_SQLITE = 'sqlite:////nonexistent-directory/placement.db'


def _dead_url(backend):
    port = gunicorn_server.free_port()
    return {
        'sqlite': DEAD_SQLITE,
        'mysql': 'mysql+pymysql://root@127.0.0.1:%d/placement' % port,
        'postgresql': 'postgresql://postgres@127.0.0.1:%d/placement' % port,
    }[backend.name]


def _on_server(backend, **parts):
    return sa.engine.make_url(backend.url).set(**parts).render_as_string(
        hide_password=False)


@pytest.mark.parametrize('argv, exit_status', MANAGE_COMMANDS,
                         ids=COMMAND_IDS)
def test_unreachable_database(backend, tmp_path, capsys, argv, exit_status):
    conf = _conf(tmp_path, _dead_url(backend))
    code, line = _manage(['--config-file', conf, *argv], capsys)
    assert code == exit_status
    if backend.name == 'sqlite':
        assert line.startswith('placement-manage: cannot open the database '
                               'file of sqlite:////nonexistent-directory/')
        assert line.endswith('check that its directory exists and that '
                             'this user may write there')
    else:
        assert line.startswith(
            'placement-manage: cannot connect to the database at ')
        assert line.endswith('check that its server runs and '
                             '[placement_database] connection')
    code, status_line = _status(conf, capsys)
    assert code == 2
    assert status_line == line.replace('placement-manage', 'placement-status')


@pytest.mark.backends('mysql', 'postgresql')
@pytest.mark.parametrize('argv, exit_status', MANAGE_COMMANDS[:2],
                         ids=COMMAND_IDS[:2])
def test_unknown_database(backend, tmp_path, capsys, argv, exit_status):
    url = _on_server(backend, database='ptest_no_such_database')
    conf = _conf(tmp_path, url)
    code, line = _manage(['--config-file', conf, *argv], capsys)
    assert code == exit_status
    assert line.startswith('placement-manage: the database at ')
    assert '/ptest_no_such_database' in line
    assert ' does not exist (' in line
    assert line.endswith('create it, or correct [placement_database] '
                         'connection')
    assert _status(conf, capsys)[0] == 2


@pytest.mark.backends('mysql', 'postgresql')
@pytest.mark.parametrize('argv, exit_status', MANAGE_COMMANDS[:2],
                         ids=COMMAND_IDS[:2])
def test_a_user_the_server_refuses(backend, tmp_path, capsys, argv,
                                   exit_status):
    """An unknown MariaDB user, a PostgreSQL role that does not exist:
    named, its password not."""
    url = _on_server(backend, username='ptest_nobody', password='s3cret')
    conf = _conf(tmp_path, url)
    code, line = _manage(['--config-file', conf, *argv], capsys)
    assert code == exit_status
    assert line.startswith('placement-manage: the database server refused '
                           'the user of ')
    assert '://ptest_nobody:***@' in line
    assert 's3cret' not in line
    assert line.endswith("check the user and password in "
                         "[placement_database] connection and the user's "
                         "privileges")
    code, status_line = _status(conf, capsys)
    assert code == 2
    assert 's3cret' not in status_line


@pytest.mark.sqlite_only
@pytest.mark.parametrize('url, said', [
    ('oracle://u:p@host/db', 'placement-manage: invalid [placement_database] '
     'connection URL: no backend for oracle databases'),
    ('postgresql+nosuchdriver://u:p@host/db',
     'placement-manage: invalid [placement_database] connection URL: '),
    ('', 'placement-manage: [placement_database] connection is not set'),
])
def test_an_unsupported_url(tmp_path, capsys, url, said):
    conf = _conf(tmp_path, url)
    for argv, exit_status in MANAGE_COMMANDS:
        code, line = _manage(['--config-file', conf, *argv], capsys)
        assert code == exit_status
        assert line.startswith(said)
    assert _status(conf, capsys)[0] == 2


@pytest.mark.sqlite_only
def test_a_driver_that_is_not_installed(tmp_path, capsys):
    if importlib.util.find_spec('pg8000') is not None:
        pytest.skip('pg8000 is installed: this test needs a driver that '
                    'is not')
    conf = _conf(tmp_path, 'postgresql+pg8000://u:p@host/db')
    code, line = _manage(['--config-file', conf, 'db', 'sync'], capsys)
    assert code == 1
    assert line.startswith('placement-manage: the driver of '
                           '[placement_database] connection '
                           '(postgresql+pg8000) is not installed (')
    assert line.endswith('install it, or name one that is')


@pytest.mark.sqlite_only
def test_a_missing_configuration_file(tmp_path, capsys):
    missing = str(tmp_path / 'nowhere.conf')
    for argv, _status_code in MANAGE_COMMANDS:
        code, line = _manage(['--config-file', missing, *argv], capsys)
        assert code == 1
        assert line == ('placement-manage: configuration file not found: '
                        '%s: check --config-file, --config-dir or '
                        '$OS_PLACEMENT_CONFIG_DIR' % missing)
    code, line = _status(missing, capsys)
    assert code == 2
    assert line.startswith('placement-status: configuration file not found')


@pytest.mark.sqlite_only
def test_a_configuration_file_that_cannot_be_read(tmp_path, capsys):
    """A directory where the file should be (a file this user may not
    read is oslo.config's permission error, worded alike)."""
    unreadable = tmp_path / 'placement.conf'
    unreadable.mkdir()
    code, line = _manage(['--config-file', str(unreadable), 'db', 'sync'],
                         capsys)
    assert code == 1
    assert line == ('placement-manage: cannot read %s (Is a directory): '
                    'check the path and that this user may read it'
                    % unreadable)
    assert _status(str(unreadable), capsys)[0] == 2


@pytest.mark.sqlite_only
def test_a_configuration_file_that_does_not_parse(tmp_path, capsys):
    conf = tmp_path / 'placement.conf'
    conf.write_text('[placement_database\nconnection = sqlite://\n')
    code, line = _manage(['--config-file', str(conf), 'db', 'sync'], capsys)
    assert code == 1
    assert line.startswith('placement-manage: cannot parse the '
                           'configuration file %s: ' % conf)
    assert _status(str(conf), capsys)[0] == 2


@pytest.mark.sqlite_only
def test_an_invalid_value(tmp_path, capsys):
    conf = _conf(tmp_path, 'sqlite://', '[placement]\n'
                 'incomplete_consumer_project_id = x\n'
                 '[placement_database]\nsqlite_synchronous = maybe\n')
    code, line = _manage(['--config-file', conf, 'db', 'version'], capsys)
    assert code == 1
    assert line.startswith('placement-manage: invalid value in the '
                           'configuration: ')
    assert 'sqlite_synchronous' in line


@pytest.mark.sqlite_only
def test_placement_status_without_any_configuration(tmp_path):
    """Run as an operator would, with no configuration to be found."""
    result = subprocess.run(
        [sys.executable, '-c', 'import sys; from placement.cmd import '
         'status; sys.exit(status.main())', 'upgrade', 'check'],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env={'PATH': '/usr/bin:/bin', 'HOME': str(tmp_path)})
    assert result.returncode == 2, result.stderr
    assert result.stdout == ''
    assert result.stderr == ('placement-status: [placement_database] '
                             'connection is not set\n')


@pytest.mark.sqlite_only
def test_debug_shows_the_traceback(tmp_path, capsys):
    conf = _conf(tmp_path, DEAD_SQLITE)
    assert manage.main(['--config-file', conf, '--debug', 'db',
                        'sync']) == 1
    err = capsys.readouterr().err
    assert 'Traceback' in err
    assert err.splitlines()[-1].startswith(
        'placement-manage: cannot open the database file')
    assert status.main(['--config-file', conf, '--debug', 'upgrade',
                        'check']) == 2
    err = capsys.readouterr().err
    assert 'Traceback' in err
    missing = str(tmp_path / 'nowhere.conf')
    assert manage.main(['--config-file', missing, '--debug', 'db',
                        'sync']) == 1
    assert 'Traceback' in capsys.readouterr().err


@pytest.mark.sqlite_only
def test_a_real_bug_still_shows_its_traceback(tmp_path, monkeypatch):
    """placement-status: 255 and the traceback, as oslo.upgradecheck's,
    for an error that is no ordinary mistake."""
    conf = _conf(tmp_path, 'sqlite:///%s' % (tmp_path / 'p.db'))
    assert manage.main(['--config-file', conf, 'db', 'sync']) == 0

    def broken(_self):
        raise KeyError('a bug')

    monkeypatch.setattr(status.Checks, '_upgrade_checks', (
        ('Broken', broken),))
    assert status.main(['--config-file', conf, 'upgrade', 'check']) == 255
