"""tools/run-dev.sh, run in a copy of the tools with a stub venv: it says
nothing about MySQL client headers while the database is SQLite.
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


@pytest.fixture
def checkout(tmp_path):
    """A checkout with the dev tools and a venv installed as ensure_venv
    leaves it, whose commands log their arguments; no pkg-config."""
    tools = tmp_path / 'tools'
    tools.mkdir()
    for name in ('run-dev.sh', 'venv.sh'):
        shutil.copy(ROOT / 'tools' / name, tools / name)
    (tmp_path / 'pyproject.toml').write_text('[project]\nname = "stub"\n')
    bin_dir = tmp_path / '.venv' / 'bin'
    bin_dir.mkdir(parents=True)
    for name in ('python', 'placement-manage', 'placement-api'):
        _executable(bin_dir / name,
                    'echo "%s $*" >> "%s"\n' % (name, tmp_path / 'calls'))
    checksum = subprocess.run(
        'cksum < pyproject.toml', shell=True, cwd=tmp_path, check=True,
        capture_output=True, text=True).stdout.strip()
    (tmp_path / '.venv' / '.placement-installed').write_text(
        '%s test,lint\n' % checksum)
    # pkg-config that finds no client headers.
    stubs = tmp_path / 'stubs'
    stubs.mkdir()
    _executable(stubs / 'pkg-config', 'exit 1\n')
    return tmp_path


def _run_dev(checkout):
    env = dict(os.environ, PATH='%s:%s' % (checkout / 'stubs',
                                           os.environ['PATH']))
    for name in ('VENV', 'SQLITE_ONLY'):
        env.pop(name, None)
    return subprocess.run(
        ['bash', str(checkout / 'tools' / 'run-dev.sh'), '--port', '9999'],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=60, check=True)


def test_sqlite_says_nothing_of_client_headers(checkout):
    result = _run_dev(checkout)
    assert HEADERS_NOTE not in result.stderr
    assert 'TRUSTS ANYONE' in result.stderr
    config = checkout / '.dev' / 'placement.conf'
    assert 'connection = sqlite:///' in config.read_text()
    calls = (checkout / 'calls').read_text().splitlines()
    assert calls == [
        'placement-manage --config-file %s db sync' % config,
        'placement-api --host 127.0.0.1 --port 8778 --port 9999 -- '
        '--config-file %s' % config,
    ]


def test_other_database_mentions_missing_headers(checkout):
    (checkout / '.dev').mkdir()
    (checkout / '.dev' / 'placement.conf').write_text(
        '[placement_database]\n'
        'connection = mysql+pymysql://root@127.0.0.1/placement\n')
    assert HEADERS_NOTE in _run_dev(checkout).stderr
