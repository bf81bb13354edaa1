"""Where the processes of one server keep their metrics, and the gunicorn
hook that forgets a dead worker's.

Apart from the metrics module on purpose: gunicorn's master imports this
for its ``child_exit`` hook, and a master that imported the metrics
themselves would hand their values, bound to its own pid, to every worker
it forks afterwards.
"""
import os
from typing import Any

from prometheus_client import multiprocess

DIRECTORY_ENV = 'PROMETHEUS_MULTIPROC_DIR'


def directory() -> str | None:
    """The multiprocess directory, None in single-process mode."""
    return os.environ.get(DIRECTORY_ENV) or None


def child_exit(_server: Any, worker: Any) -> None:
    """gunicorn ``child_exit`` hook: forget a dead worker's gauges."""
    if directory():
        multiprocess.mark_process_dead(worker.pid)
