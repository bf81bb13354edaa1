"""The one line an operator reads for an ordinary mistake: what is wrong
and what to do about it, for placement-manage, placement-status and the
service's start alike.

Ordinary mistakes are those of set-up, not of code: a configuration or
policy file that is missing or broken, a database URL that is wrong or
names a driver that is not installed, a database server that does not
answer, refuses the user or lacks the database, a schema older or newer
than the code. Commands print the line after their name and exit with
their error status; the service logs it as CRITICAL and does not start.
Anything else is a bug, whose traceback is what helps: ``one_line``
answers None for it. With --debug the commands show the traceback of a
mistake too.
"""
import sys
import traceback

from oslo_config import cfg
import sqlalchemy as sa

from placement import policy
from placement.db import engine as db_engine
from placement.db import migration

# Mistakes whose own message is the line.
_SELF_EXPLAINED = db_engine.CANNOT_START + (
    migration.SchemaMismatch, migration.LeftoverTables,
    policy.PolicyFileError)


def one_line(exc: BaseException,
             url: sa.engine.URL | None = None) -> str | None:
    """The line for ``exc`` if it is an ordinary mistake, else None.
    ``url``: the database the failed work connected to, named in the
    line when it could not (its password never shown)."""
    if isinstance(exc, _SELF_EXPLAINED):
        return str(exc)
    if isinstance(exc, cfg.ConfigFilesNotFoundError):
        return ('configuration file not found: %s: check --config-file, '
                '--config-dir or $OS_PLACEMENT_CONFIG_DIR'
                % ', '.join(exc.config_files))
    if isinstance(exc, cfg.ConfigFilesPermissionDeniedError):
        return ('cannot read the configuration file %s: check that this '
                'user may read it' % ', '.join(exc.config_files))
    if isinstance(exc, cfg.ConfigFileParseError):
        return 'cannot parse the configuration file %s: %s' % (
            exc.config_file, exc.msg)
    if isinstance(exc, OSError) and exc.filename:
        # A file named in the configuration or on the command line that
        # cannot be read (a directory; as root, no permission error).
        return 'cannot read %s (%s): check the path and that this user ' \
            'may read it' % (exc.filename, exc.strerror)
    if isinstance(exc, cfg.ConfigFileValueError):
        return 'invalid value in the configuration: %s' % ' '.join(
            str(exc).split())
    if isinstance(exc, sa.exc.DBAPIError):
        line = None
        if url is not None:
            line = db_engine.connect_failure_line(exc, url)
        if line is None and db_engine.is_schema_mismatch(exc):
            line = ('the database lacks a table or column this release '
                    'uses (%s): run "placement-status upgrade check" to '
                    'see why' % _reason(exc))
        if line is None and (db_engine.is_unreachable(exc)
                             or db_engine.is_transient(exc)):
            line = 'the database failed the work (%s): try again' % (
                _reason(exc))
        return line
    return None


def report(prog: str, exc: BaseException, debug: bool,
           url: sa.engine.URL | None = None) -> bool:
    """Print ``prog: line`` on stderr for an ordinary mistake (with
    ``debug``, after its traceback) and return True; False for anything
    else, which the caller raises again."""
    line = one_line(exc, url)
    if line is None:
        return False
    if debug:
        traceback.print_exception(exc)
    print('%s: %s' % (prog, line), file=sys.stderr)
    return True


def debug_asked(argv: list[str]) -> bool:
    """Whether the command line asks for --debug (oslo.log's option),
    for a mistake met before it was parsed."""
    return any(arg in ('--debug', '-d') for arg in argv)


def _reason(exc: sa.exc.DBAPIError) -> str:
    return ' '.join(str(exc.orig).split())
