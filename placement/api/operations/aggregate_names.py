"""[metrics] aggregate_names_file: what Placement does not hold of an
aggregate, its name and Nova's metadata that os-capacity reads, for the
labels of the capacity series.

One aggregate a line, words split as a shell does (quote a name with
spaces), ``#`` starts a comment::

    # uuid                               name        metadata...
    6f2c1d0e-8d4b-4c55-9a43-1b1f0c7a0e11 rack1       availability_zone=az1
    0b8e7f3a-2d6c-4e9a-8f41-5c3d2e1a9b22 "gold hosts" filter_tenant_id=8c1f

``availability_zone=ZONE`` makes ZONE the ``az_aggregate`` label of its
hosts; a ``filter_tenant_id*=`` key (Nova's project isolation) makes the
name their ``project_aggregate`` label (``multiple`` for a host in
several such aggregates), as os-capacity labels them. The file is read
again when it changes; a bad file stops the service from starting, and
a bad change is logged and the last good one kept.
"""
import dataclasses
import logging
import os
import shlex
import uuid

LOG = logging.getLogger(__name__)

_AVAILABILITY_ZONE = 'availability_zone'
_PROJECT_FILTER = 'filter_tenant_id'
# os-capacity's label value for a host in several project aggregates.
MULTIPLE = 'multiple'


@dataclasses.dataclass(frozen=True)
class Aggregate:
    name: str
    availability_zone: str = ''
    project_filter: bool = False


def parse(text: str, source: str) -> dict[str, Aggregate]:
    """{aggregate uuid: Aggregate}; ValueError naming ``source`` and the
    line for a line that is not ``uuid name [key=value ...]``."""
    aggregates = {}
    for number, line in enumerate(text.splitlines(), 1):
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise ValueError('%s line %d: %s' % (source, number, exc))
        if not words:
            continue
        if len(words) < 2:
            raise ValueError('%s line %d: expected "uuid name [key=value '
                             '...]"' % (source, number))
        try:
            key = str(uuid.UUID(words[0]))
        except ValueError:
            raise ValueError('%s line %d: %r is not a uuid'
                             % (source, number, words[0]))
        zone, project_filter = '', False
        for word in words[2:]:
            name, sep, value = word.partition('=')
            if not sep:
                raise ValueError('%s line %d: %r is not key=value'
                                 % (source, number, word))
            if name == _AVAILABILITY_ZONE:
                zone = value
            elif name.startswith(_PROJECT_FILTER):
                project_filter = True
        if key in aggregates:
            raise ValueError('%s line %d: aggregate %s named twice'
                             % (source, number, key))
        aggregates[key] = Aggregate(words[1], zone, project_filter)
    return aggregates


class NamesFile:
    """The file at ``path`` (None: no names), read at creation and again
    whenever its modification time or size changes."""

    def __init__(self, path: str | None) -> None:
        self._path = path
        self._aggregates: dict[str, Aggregate] = {}
        self._stamp: tuple[int, int] | None = None
        if path is not None:
            self._stamp = self._stat(path)
            self._aggregates = self._read(path)

    @staticmethod
    def _stat(path: str) -> tuple[int, int]:
        stat = os.stat(path)
        return stat.st_mtime_ns, stat.st_size

    @staticmethod
    def _read(path: str) -> dict[str, Aggregate]:
        with open(path, encoding='utf-8') as names:
            return parse(names.read(), path)

    def aggregates(self) -> dict[str, Aggregate]:
        """{uuid: Aggregate}, the file read again if it changed."""
        if self._path is None:
            return self._aggregates
        try:
            stamp = self._stat(self._path)
            if stamp != self._stamp:
                self._stamp = stamp
                self._aggregates = self._read(self._path)
        except (OSError, ValueError) as exc:
            LOG.warning('[metrics] aggregate_names_file: keeping the names '
                        'read before: %s', exc)
        return self._aggregates

    def name(self, aggregate_uuid: str) -> str:
        """The aggregate's name, else its uuid."""
        aggregate = self.aggregates().get(aggregate_uuid)
        return aggregate.name if aggregate else aggregate_uuid
