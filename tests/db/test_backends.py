"""placement.db.backends: one lookup finds each kind of database's
backend, and nothing else in placement tests which kind it talks to.
"""
import pathlib
import re

import pytest
import sqlalchemy as sa

from placement.db import backends
from placement.db.backends import mysql
from placement.db.backends import postgresql
from placement.db.backends import sqlite

PACKAGE = pathlib.Path(backends.__file__).resolve().parents[2]
# What testing the kind of database looks like.
DIALECT_TEST = re.compile(
    r'dialect\.name|\.is_mariadb|\bin\s+[\w.]*MYSQL_BACKENDS'
    r'|get_backend_name\(\)\s*(==|!=|in\b|not\b)')


@pytest.mark.parametrize('url, module', [
    ('sqlite://', sqlite),
    ('mysql+pymysql://u@db/placement', mysql),
    ('mysql+mysqldb://u@db/placement', mysql),
    ('mariadb+pymysql://u@db/placement', mysql),
    ('postgresql+psycopg2://u@db/placement', postgresql),
])
def test_each_dialect_has_its_backend(url, module):
    parsed = sa.engine.make_url(url)
    dialect = parsed.get_dialect()()
    assert backends.of(dialect) is module.BACKEND
    assert backends.of(parsed) is module.BACKEND


def test_a_connection_and_its_engine_have_its_backend(conn):
    assert backends.of(conn) is backends.of(conn.engine)
    assert backends.of(conn) is backends.of(conn.dialect)


def test_an_unsupported_database_has_no_backend():
    with pytest.raises(backends.UnsupportedBackend):
        backends.of(sa.engine.make_url('oracle://u@db/placement'))


def _outside_backends():
    for path in sorted(PACKAGE.joinpath('placement').rglob('*.py')):
        if 'backends' not in path.relative_to(PACKAGE).parts:
            yield path


def test_only_the_backends_test_the_kind_of_database():
    found = []
    for path in _outside_backends():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split('#')[0]
            if DIALECT_TEST.search(code):
                found.append('%s:%d: %s' % (
                    path.relative_to(PACKAGE), number, line.strip()))
    assert not found, '\n'.join(found)
