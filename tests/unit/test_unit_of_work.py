"""Only the unit of work (placement.db.session) opens connections and
begins transactions, so that every read gets the replica fallback and
every write SQLite's write lock and the retry of transient errors.
"""
import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'placement'
SESSION = 'db/session.py'
# The other modules that open connections, and why: the replica's lag
# checks (db/replica.py, and the backends' ways of measuring lag) measure
# the servers themselves, so a check that fails must not count as a read
# nor fall back to the primary. Nothing else begins a transaction.
JUSTIFIED = {(module, 'connect'): 'a replica lag check' for module in (
    'db/replica.py', 'db/backends/mysql.py', 'db/backends/postgresql.py')}
# The service's start-up check that the database answers at all.
JUSTIFIED[('db/engine.py', 'connect')] = 'the start-up connection check'


def _opened():
    """(module path, 'begin' or 'connect', line) of each ``x.begin()`` and
    ``x.connect()`` in the package."""
    for path in sorted(PACKAGE.rglob('*.py')):
        module = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ('begin', 'connect')):
                yield module, node.func.attr, node.lineno


def test_only_the_session_opens_connections():
    wrong = ['placement/%s:%d: .%s()' % (module, line, method)
             for module, method, line in _opened()
             if module != SESSION and (module, method) not in JUSTIFIED]
    assert not wrong


def test_every_justified_exception_is_still_needed():
    opened = {(module, method) for module, method, _ in _opened()}
    assert set(JUSTIFIED) <= opened
    assert {(SESSION, 'begin'), (SESSION, 'connect')} <= opened
