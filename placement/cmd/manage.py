"""placement-manage: database administration."""
import logging
import sys

from oslo_config import cfg
import prettytable

from placement import conf as placement_conf
from placement import operator_errors
from placement.cmd import operator_commands
from placement.db import engine as db_engine
from placement.db import migration
from placement.db import online_migrations
from placement.db import session

LOG = logging.getLogger(__name__)
PROG = 'placement-manage'


def _sync(conf, database):
    migration.upgrade(database.engine)
    return 0


def _version(conf, database):
    print(migration.current_revision(database.engine))
    return 0


def _stamp(conf, database):
    migration.stamp(database.engine, conf.command.version)
    return 0


# Without --max-count, batches of this many records run until one
# migrates nothing.
BATCH_SIZE = 50
# Exit statuses of db online_data_migrations, as upstream's.
MIGRATED_SOME, FAILED, BAD_MAX_COUNT = 1, 2, 127


def _root_provider_ids(connection, conf, count):
    return online_migrations.set_root_provider_ids(connection, count)


def _incomplete_consumers(connection, conf, count):
    return online_migrations.create_incomplete_consumers(
        connection, conf.placement.incomplete_consumer_project_id,
        conf.placement.incomplete_consumer_user_id, count)


# Each online data migration's name and its function, which fixes at most
# ``count`` records and says how many it fixed.
ONLINE_MIGRATIONS = (
    ('set_root_provider_ids', _root_provider_ids),
    ('create_incomplete_consumers', _incomplete_consumers),
)


def _online_data_migrations(conf, database):
    """Run the migrations in batches and print what each found and fixed.

    Exit status: 0 when nothing is left to migrate (or nothing could be),
    1 when --max-count was given and its batch migrated something (run
    again until 0), 2 when a migration failed and the last batch
    migrated nothing, 127 for a --max-count that is not a positive
    integer.
    """
    max_count = conf.command.max_count
    limited = max_count is not None
    if limited:
        try:
            max_count = int(max_count)
        except ValueError:
            max_count = 0
        if max_count < 1:
            print('Must supply a positive value for max_count')
            return BAD_MAX_COUNT
    else:
        max_count = BATCH_SIZE
        print('Running batches of %d until complete' % max_count)
    totals: dict[str, int] = {}
    while True:
        batch, failed = _migration_batch(conf, database, max_count)
        for name, done in batch.items():
            totals[name] = totals.get(name, 0) + done
        migrated = sum(batch.values())
        if limited or not migrated:
            break
    table = prettytable.PrettyTable(['Migration', 'Total Found', 'Completed'])
    for name, done in totals.items():
        # A migration fixes every record it finds: found is completed.
        table.add_row([name, done, done])
    print(table)
    # A failure counts unless a limited run still made progress: what it
    # migrated may be what the failed migration waits for.
    if failed and not (limited and migrated):
        print('Some migrations failed unexpectedly. Check log for details.')
        return FAILED
    return MIGRATED_SOME if migrated else 0


def _migration_batch(conf, database, max_count):
    """One batch: the migrations in turn, each in its own transaction,
    until ``max_count`` records are migrated. Returns ({name: records
    migrated} of those that ran, whether any failed)."""
    results = {}
    failed = False
    migrated = 0
    for name, migrate in ONLINE_MIGRATIONS:
        try:
            done = database.write(migrate, conf, max_count - migrated)
        except Exception:
            print('Error attempting to run %s' % name)
            LOG.exception('Online data migration %s failed', name)
            failed = True
            done = 0
        if done:
            print('%d rows matched query %s, %d migrated'
                  % (done, name, done))
        results[name] = done
        migrated += done
        if migrated >= max_count:
            break
    return results, failed


def _add_db_commands(subparsers):
    db = subparsers.add_parser('db', help='Database commands')
    commands = db.add_subparsers(title='subcommands', dest='db_command')
    # They work on a schema of any revision (the others need this
    # release's: placement.db.migration.check_schema).
    sync = commands.add_parser(
        'sync', help='Upgrade the database schema to the latest version.')
    sync.set_defaults(func=_sync, needs_schema=False)
    version = commands.add_parser(
        'version', help='Print the current database schema version.')
    version.set_defaults(func=_version, needs_schema=False)
    stamp = commands.add_parser(
        'stamp', help='Record a schema version without migrating.')
    stamp.add_argument('version', help='The revision to record.')
    stamp.set_defaults(func=_stamp, needs_schema=False)
    online = commands.add_parser(
        'online_data_migrations', help='Run the online data migrations.',
        description='Run the online data migrations: fix, in batches, '
                    'records that data written by old releases left '
                    'incomplete.')
    online.add_argument(
        '--max-count', metavar='<number>', default=None,
        help='Maximum number of records to migrate in this run (default: '
             'all of them, in batches of %d).' % BATCH_SIZE)
    online.set_defaults(func=_online_data_migrations)


def _add_commands(subparsers):
    _add_db_commands(subparsers)
    operator_commands.add_commands(subparsers)


# Exit status of a command that met an ordinary mistake
# (placement.operator_errors), as upstream's; the extensions say theirs.
ERROR = 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = cfg.SubCommandOpt('command', title='Command',
                                handler=_add_commands)
    try:
        conf = placement_conf.load_config(argv, cli_opts=[command],
                                          prog=PROG)
    except Exception as exc:
        if not operator_errors.report(
                PROG, exc, operator_errors.debug_asked(argv)):
            raise
        return ERROR
    placement_conf.warn_unknown_options(conf, PROG)
    func = getattr(conf.command, 'func', None)
    if func is None:
        print('usage: %s db {sync,version,stamp,'
              'online_data_migrations} | candidates explain | audit' % PROG,
              file=sys.stderr)
        return 2
    url = None
    try:
        engine = db_engine.create_engine(conf, bounded=False)
        url = engine.url
        try:
            if getattr(conf.command, 'needs_schema', True):
                migration.check_schema(engine)
            return func(conf, session.Database(engine))
        finally:
            engine.dispose()
    except Exception as exc:
        if not operator_errors.report(PROG, exc, conf.debug, url):
            raise
        return getattr(conf.command, 'error_status', ERROR)


if __name__ == '__main__':
    sys.exit(main())
