"""The run's clock and its JSON-lines files, shared by every thread."""
from __future__ import annotations

import json
import pathlib
import threading
import time
from typing import Any


class Clock:
    """Seconds since the run began (time.monotonic), as the run directory
    records every time."""

    def __init__(self) -> None:
        self.origin = time.monotonic()

    def now(self) -> float:
        return round(time.monotonic() - self.origin, 4)


class JsonLines:
    """An append-only JSON-lines file; each line is flushed as written so
    that a run cut short still leaves what happened until then."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._file = open(path, 'a', encoding='utf-8')

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True) + '\n'
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def write_json(path: pathlib.Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=1, sort_keys=True) + '\n',
                    encoding='utf-8')
