"""placement-status upgrade check: is this database ready to upgrade?

Exit status as upstream's (oslo.upgradecheck): 0 success, 1 a warning,
2 a failure, 255 an error in the checks themselves (a bug: its
traceback is printed). An ordinary mistake (placement.operator_errors:
no configuration, a database that cannot be reached, a schema older or
newer than this release) is a failure: one line on stderr saying what
to do, status 2.
"""
import sys

from oslo_config import cfg
from oslo_upgradecheck import common_checks
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from placement import conf as placement_conf
from placement import operator_errors
from placement.db import engine as db_engine
from placement.db import migration
from placement.db import session
from placement.db import tables

PROG = 'placement-status'


class Checks(upgradecheck.UpgradeCommands):
    """The checks upstream's placement-status runs, on this schema."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self._database: session.Database | None = None

    def check(self) -> upgradecheck.Code:
        """The checks, on a database that has this release's schema; a
        failure in one line if it cannot be reached or has not."""
        placement_conf.warn_unknown_options(self.conf, PROG)
        url = None
        try:
            engine = db_engine.create_engine(self.conf, bounded=False)
            url = engine.url
            try:
                migration.check_schema(engine)
                self._database = session.Database(engine)
                return super().check()
            finally:
                self._database = None
                engine.dispose()
        except Exception as exc:
            if not operator_errors.report(PROG, exc, self.conf.debug, url):
                raise
            return upgradecheck.Code.FAILURE

    def _count(self, query):
        assert self._database is not None
        return self._database.read(_scalar, query)

    def _check_root_provider_ids(self):
        rps = tables.resource_providers
        missing = self._count(sa.select(sa.func.count()).select_from(rps)
                              .where(rps.c.root_provider_id.is_(None)))
        if missing:
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE,
                'There is at least one resource provider table record which '
                'misses its root provider id.')
        return upgradecheck.Result(upgradecheck.Code.SUCCESS)

    def _check_incomplete_consumers(self):
        allocations = tables.allocations
        consumers = tables.consumers
        missing = self._count(
            sa.select(sa.func.count(allocations.c.consumer_id.distinct()))
            .where(allocations.c.consumer_id.not_in(
                sa.select(consumers.c.uuid))))
        if missing:
            return upgradecheck.Result(
                upgradecheck.Code.WARNING,
                'There are %s incomplete consumers table records for '
                'existing allocations.' % missing)
        return upgradecheck.Result(upgradecheck.Code.SUCCESS)

    def _check_policy_json(self):
        return common_checks.check_policy_json(self, self.conf)

    _upgrade_checks = (
        ('Missing Root Provider IDs', _check_root_provider_ids),
        ('Incomplete Consumers', _check_incomplete_consumers),
        ('Policy File JSON to YAML Migration', _check_policy_json),
    )


def _scalar(connection, query):
    return connection.execute(query).scalar()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    try:
        return upgradecheck.main(
            conf, project='placement', upgrade_command=Checks(conf),
            argv=argv)
    except Exception as exc:
        # The configuration files, read before the checks.
        if not operator_errors.report(
                PROG, exc, operator_errors.debug_asked(argv)):
            raise
        return upgradecheck.Code.FAILURE


if __name__ == '__main__':
    sys.exit(main())
