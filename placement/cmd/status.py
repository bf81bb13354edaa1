"""placement-status upgrade check: is this database ready to upgrade?"""
import sys

from oslo_config import cfg
from oslo_upgradecheck import common_checks
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from placement import conf as placement_conf
from placement.db import engine as db_engine
from placement.db import session
from placement.db import tables


class Checks(upgradecheck.UpgradeCommands):
    """The checks upstream's placement-status runs, on this schema."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf

    def _count(self, query):
        engine = db_engine.create_engine(self.conf, bounded=False)
        try:
            return session.Database(engine).read(_scalar, query)
        finally:
            engine.dispose()

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
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    return upgradecheck.main(
        conf, project='placement', upgrade_command=Checks(conf),
        argv=sys.argv[1:] if argv is None else argv)


if __name__ == '__main__':
    sys.exit(main())
