"""tools/run-dev.sh, run in a copy of the tools with stub venvs: it
installs the runtime requirements alone (never the test or lint tools),
says nothing about MySQL client headers while the database is SQLite, and
its banner names the port the server listens on.
"""
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEADERS_NOTE = 'No MariaDB/MySQL client headers'


def _executable(path, text):
    path.write_text('#!/bin/sh\n' + text)
    path.chmod(0o755)


def _logging_commands(bin_dir, names, calls):
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        _executable(bin_dir / name, 'echo "%s $*" >> "%s"\n' % (name, calls))


@pytest.fixture
def checkout(tmp_path):
    """A checkout with the dev tools; no pkg-config; a python3 whose
    ``-m venv DIR`` makes a venv of commands that log their arguments."""
    tools = tmp_path / 'tools'
    tools.mkdir()
    for name in ('run-dev.sh', 'venv.sh'):
        shutil.copy(ROOT / 'tools' / name, tools / name)
    (tmp_path / 'pyproject.toml').write_text('[project]\nname = "stub"\n')
    calls = tmp_path / 'calls'
    stubs = tmp_path / 'stubs'
    stubs.mkdir()
    _executable(stubs / 'pkg-config', 'exit 1\n')
    logger = 'echo "$(basename "$0") $*" >> "%s"' % calls
    _executable(stubs / 'python3', '''
[ "$1 $2" = "-m venv" ] || exit 1
mkdir -p "$3/bin"
for name in python placement-manage placement-api; do
    printf '#!/bin/sh\\n%%s\\n' '%s' > "$3/bin/$name"
    chmod +x "$3/bin/$name"
done
''' % logger)
    return tmp_path


def _run_dev(checkout, *args):
    env = dict(os.environ, PATH='%s:%s' % (checkout / 'stubs',
                                           os.environ['PATH']))
    for name in ('VENV', 'RUN_VENV', 'SQLITE_ONLY', 'PYTHON'):
        env.pop(name, None)
    return subprocess.run(
        ['bash', str(checkout / 'tools' / 'run-dev.sh'), *args],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=60, check=True)


def _calls(checkout):
    return (checkout / 'calls').read_text().splitlines()


def test_installs_the_runtime_requirements_alone(checkout):
    _run_dev(checkout)
    assert _calls(checkout)[0] == 'python -m pip install --quiet -e .'
    assert not (checkout / '.venv').exists()
    # A second start installs nothing again.
    (checkout / 'calls').unlink()
    _run_dev(checkout)
    assert not any(call.startswith('python ') for call in _calls(checkout))


def test_sqlite_says_nothing_of_client_headers(checkout):
    result = _run_dev(checkout, '--port', '9999')
    assert HEADERS_NOTE not in result.stderr
    assert 'TRUSTS ANYONE' in result.stderr
    config = checkout / '.dev' / 'placement.conf'
    assert 'connection = sqlite:///' in config.read_text()
    assert _calls(checkout)[1:] == [
        'placement-manage --config-file %s db sync' % config,
        'placement-api --host 127.0.0.1 --port 8778 --port 9999 -- '
        '--config-file %s' % config,
    ]


@pytest.mark.parametrize('args, port', [
    ((), '8778'),
    (('--port', '9999'), '9999'),
    (('--port=9998',), '9998'),
    (('-p', '9997', '--host', '127.0.0.2'), '9997'),
    (('-p9996',), '9996'),
    (('--port', '9995', '--', '--port', '1'), '9995'),
])
def test_banner_names_the_port_it_listens_on(checkout, args, port):
    stderr = _run_dev(checkout, *args).stderr
    assert 'localhost:%s/resource_classes' % port in stderr


def test_other_database_mentions_missing_headers(checkout):
    (checkout / '.dev').mkdir()
    (checkout / '.dev' / 'placement.conf').write_text(
        '[placement_database]\n'
        'connection = mysql+pymysql://root@127.0.0.1/placement\n')
    assert HEADERS_NOTE in _run_dev(checkout).stderr
