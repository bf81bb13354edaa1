"""The databases requests use: the primary ([placement_database]
connection) for every write and most reads, and a replica
(``slave_connection``), when one is configured, for the requests that
``replica_routes`` declares (see placement.conf: their answers are
advice, which a claim checked on the primary confirms or refuses).
"""
import re
import threading

from placement.db import engine as db_engine
from placement.db import replica as replica_db
from placement.db import standard_sync

# Placeholders as the API reference writes them ({uuid}) and as Flask
# rules do (<uuid>), so that both spell one route the same way.
_PLACEHOLDER = re.compile(r'\{[^}]*\}|<[^>]*>')


class Database:
    """The primary ``engine``, handed out once standard classes and traits
    exist, and the optional ``replica`` (a placement.db.replica.Replica)
    for the Flask rules in ``replica_rules``.

    The sync is lazy so that the service starts, and answers 503, while
    the database is away.
    """

    def __init__(self, engine, replica=None, replica_rules=frozenset()):
        self._engine = engine
        self.replica = replica
        self.replica_rules = frozenset(replica_rules)
        self._synced = False
        self._lock = threading.Lock()

    @classmethod
    def from_conf(cls, conf, engine, url_map, on_replica_check=None):
        """The databases ``conf`` describes, ``engine`` being the primary's;
        ValueError if replica_routes names a request the API does not have
        (``url_map``) or one that is not a GET."""
        opts = conf.placement_database
        rules = replica_rules(opts.replica_routes, url_map)
        replica = None
        if opts.slave_connection and rules:
            replica = replica_db.Replica(
                db_engine.create_engine(conf, option='slave_connection'),
                primary=engine, max_lag=opts.replica_max_lag,
                interval=opts.replica_check_interval,
                on_check=on_replica_check)
        return cls(engine, replica, rules)

    @property
    def engine(self):
        self.sync()
        return self._engine

    def sync(self):
        """Write the standard classes and traits, once per process. If
        that wrote any, no earlier replica check is trusted (the health
        check may have made one): the replica lacks them until it has
        replicated the write."""
        if self._synced:
            return
        with self._lock:
            if not self._synced:
                added = db_engine.retry_on_transient(self._sync)
                self._synced = True
                if added and self.replica is not None:
                    self.replica.expire()

    def replica_for(self, rule):
        """The replica, if the request of Flask rule ``rule`` may read from
        it now; else None (read from ``engine``). The primary is synced
        first: a replica of a new database lacks the standard classes and
        traits until it has replicated them."""
        if self.replica is None or rule not in self.replica_rules:
            return None
        self.sync()
        return self.replica if self.replica.usable() else None

    def _sync(self):
        with self._engine.begin() as connection:
            db_engine.claim_write_lock(connection)
            return standard_sync.sync_standard(connection)


def replica_rules(routes, url_map):
    """The Flask rules (as url_map spells them) of ``routes``, entries of
    [placement_database] replica_routes such as ``GET /traits``."""
    by_template = {}
    for rule in url_map.iter_rules():
        if 'GET' in (rule.methods or ()):
            by_template[_template(rule.rule)] = rule.rule
    rules = set()
    for route in routes:
        method, _, path = route.strip().partition(' ')
        path = path.strip()
        if method.upper() != 'GET':
            raise ValueError(
                '[placement_database] replica_routes: %r: only GET '
                'requests can read from a replica' % route)
        try:
            rules.add(by_template[_template(path)])
        except KeyError:
            raise ValueError(
                '[placement_database] replica_routes: %r is not a request '
                'of the Placement API' % route) from None
    return rules


def _template(path):
    return _PLACEHOLDER.sub('{}', path.rstrip('/') or '/')

