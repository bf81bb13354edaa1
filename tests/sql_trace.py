"""The SQL a connection or engine executes, for tests that check which
statements a read sends.

Importable from any test module: tests/ is on sys.path (it holds the
top-level conftest.py).
"""
import contextlib

import sqlalchemy as sa


@contextlib.contextmanager
def executed(target):
    """A list that gets the text of every statement ``target`` (an
    Engine or Connection) executes inside the block."""
    texts = []

    def record(_conn, _cursor, statement, *_args):
        texts.append(statement)
    sa.event.listen(target, 'before_cursor_execute', record)
    try:
        yield texts
    finally:
        sa.event.remove(target, 'before_cursor_execute', record)
