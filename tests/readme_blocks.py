"""README.md's fenced blocks, each with the comment before it that says
how a test runs or checks it: ``<!-- test: KIND [ARGUMENT] -->``.

Kinds (tests/unit/test_readme.py checks that every block has one):

- ``run STEP``: tests/integration/test_readme_operator_path.py runs it
  (STEP is one of ``RUN_STEPS``);
- ``config``: a placement.conf fragment, checked by oslo-config-validator
  with the namespaces of the README's own validator command;
- ``nova.conf``: nova's ``[placement]`` section, checked against
  keystoneauth's options;
- ``log-line``: the request log line, matched against a real one;
- ``excerpt PATH``: every line of it is in the file PATH;
- ``haproxy``: a ``listen`` section HAProxy's own check accepts;
- ``yaml``: YAML that parses;
- ``by PATH``: what the test file PATH runs.
"""
import dataclasses
import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[1]
README = REPO / 'README.md'
KINDS = ('run', 'config', 'nova.conf', 'log-line', 'excerpt', 'haproxy',
         'yaml', 'by')
# The blocks test_readme_operator_path.py runs, in the operator's order.
RUN_STEPS = ('install', 'mariadb-sql', 'postgresql-sql', 'placement.conf',
             'validate', 'policy.yaml', 'db-sync', 'keystone', 'gunicorn',
             'verify', 'take-over', 'utf8mb4-convert', 'quick-start',
             'quick-start-curl',
             'quick-start-openstack', 'dev-curl')
_MARKER = re.compile(r'^\s*<!-- test: (\S+)(?: (.+?))? -->$')
_FENCE = re.compile(r'^(\s*)```(\S*)$')
_HEADING = re.compile(r'^(#{1,6}) (.+)$')


@dataclasses.dataclass
class Block:
    kind: str | None
    argument: str | None
    language: str
    text: str
    line: int

    def __str__(self):
        return 'README.md line %d (%s %s)' % (
            self.line, self.kind, self.argument or '')


def text():
    return README.read_text()


def blocks(readme=None):
    """Every fenced block, with the marker on the line before it (kind
    None without)."""
    lines = (readme if readme is not None else text()).split('\n')
    found = []
    index = 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if not fence:
            index += 1
            continue
        indent = len(fence.group(1))
        marker = _MARKER.match(lines[index - 1]) if index else None
        body = []
        index += 1
        while not lines[index].strip() == '```':
            body.append(lines[index][indent:])
            index += 1
        found.append(Block(
            marker and marker.group(1), marker and marker.group(2),
            fence.group(2), '\n'.join(body) + '\n', index - len(body)))
        index += 1
    return found


def marked(kind, argument=None, readme=None):
    """The blocks marked ``kind`` (and ``argument``, when given)."""
    return [block for block in blocks(readme) if block.kind == kind and (
        argument is None or block.argument == argument)]


def step(name, readme=None):
    """The one block marked ``run NAME``."""
    found = marked('run', name, readme)
    assert len(found) == 1, 'README.md: %d blocks for run %s' % (
        len(found), name)
    return found[0]


def slug(title):
    """The anchor GitHub gives a heading."""
    title = re.sub(r'[^\w\- ]', '', title.strip().lower())
    return title.replace(' ', '-')


def headings(readme=None):
    """(level, title) of every heading outside fenced blocks."""
    found = []
    fenced = False
    for line in (readme if readme is not None else text()).split('\n'):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        heading = _HEADING.match(line)
        if heading and not fenced:
            found.append((len(heading.group(1)), heading.group(2)))
    return found
