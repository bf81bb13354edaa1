"""placement-manage: database administration."""
import sys

from oslo_config import cfg

from placement import conf as placement_conf
from placement.cmd import operator_commands
from placement.db import engine as db_engine
from placement.db import migration
from placement.db import online_migrations
from placement.db import session

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


def _online_data_migrations(conf, database):
    results = database.write(_migrate_online, conf)
    for name, count in results:
        print('%s: %d row(s) migrated' % (name, count))
    return 0


def _migrate_online(connection, conf):
    """Each online data migration's name and the rows it migrated."""
    batch = conf.command.max_count
    incomplete = conf.placement
    return [
        ('set_root_provider_ids',
         online_migrations.set_root_provider_ids(connection, batch)),
        ('create_incomplete_consumers',
         online_migrations.create_incomplete_consumers(
             connection, incomplete.incomplete_consumer_project_id,
             incomplete.incomplete_consumer_user_id, batch)),
    ]


def _add_db_commands(subparsers):
    db = subparsers.add_parser('db', help='Database commands')
    commands = db.add_subparsers(title='subcommands', dest='db_command')
    sync = commands.add_parser(
        'sync', help='Upgrade the database schema to the latest version.')
    sync.set_defaults(func=_sync)
    version = commands.add_parser(
        'version', help='Print the current database schema version.')
    version.set_defaults(func=_version)
    stamp = commands.add_parser(
        'stamp', help='Record a schema version without migrating.')
    stamp.add_argument('version', help='The revision to record.')
    stamp.set_defaults(func=_stamp)
    online = commands.add_parser(
        'online_data_migrations', help='Run online data migrations.')
    online.add_argument('--max-count', type=int, default=None)
    online.set_defaults(func=_online_data_migrations)


def _add_commands(subparsers):
    _add_db_commands(subparsers)
    operator_commands.add_commands(subparsers)


def main(argv: list[str] | None = None) -> int:
    command = cfg.SubCommandOpt('command', title='Command',
                                handler=_add_commands)
    conf = placement_conf.load_config(
        sys.argv[1:] if argv is None else argv, cli_opts=[command],
        prog=PROG)
    func = getattr(conf.command, 'func', None)
    if func is None:
        print('usage: %s db {sync,version,stamp,'
              'online_data_migrations} | candidates explain | audit' % PROG,
              file=sys.stderr)
        return 2
    try:
        engine = db_engine.create_engine(conf, bounded=False)
    except db_engine.DatabaseConfigError as exc:
        print('%s: %s' % (PROG, exc), file=sys.stderr)
        return 1
    try:
        return func(conf, session.Database(engine))
    except db_engine.UnusableServer as exc:
        # Refused on connecting, before anything was written.
        print('placement-manage: %s' % exc, file=sys.stderr)
        return 1
    finally:
        engine.dispose()


if __name__ == '__main__':
    sys.exit(main())
