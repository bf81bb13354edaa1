"""The replica mode's PostgreSQL pair, and what it says about its work.

A private primary with a streaming hot standby, started with
tools/pg-replica.sh under the run's work directory on ports of its own (the
system cluster on 5432 is not touched) and stopped at the end. Both bench
databases live on the primary; the standby replicates them.

What each server did for one database is read from ``pg_stat_database``
(transactions, rows returned and fetched) and from ``/proc`` (CPU time of
the postmaster and its children). PostgreSQL 15 keeps a backend's counts
in the backend until it flushes them: at the end of a transaction at most
once a second while it is busy, ten seconds after it went idle, and when
it exits. Counts are therefore read once the server under test has
stopped and its sessions, on both servers, have ended.
"""
import json
import os
import subprocess
import time

import environments
import servers

SCRIPT = os.path.join(environments.REPO, 'tools', 'pg-replica.sh')
ROLES = ('primary', 'standby')

_STATS = '''
import json, sys, psycopg2
name, ports = sys.argv[1], dict(zip(("primary", "standby"),
                                    map(int, sys.argv[2:4])))
found = {}
for role, port in ports.items():
    conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres",
                            dbname="postgres")
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(
            "SELECT d.xact_commit + d.xact_rollback, d.tup_returned, "
            "d.tup_fetched, (SELECT count(*) FROM pg_stat_activity a "
            "WHERE a.datname = d.datname) FROM pg_stat_database d "
            "WHERE d.datname = %s", (name,))
        row = cur.fetchone()
    conn.close()
    found[role] = None if row is None else dict(zip(
        ("xacts", "tup_returned", "tup_fetched", "sessions"), row))
print(json.dumps(found))
'''

_REPLAYED = '''
import json, sys, time, psycopg2
primary, standby = int(sys.argv[1]), int(sys.argv[2])
timeout, names = float(sys.argv[3]), sys.argv[4:]

def connect(port):
    conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres",
                            dbname="postgres")
    conn.autocommit = True
    return conn

with connect(primary) as conn, conn.cursor() as cur:
    cur.execute("CHECKPOINT")
    cur.execute("SELECT pg_current_wal_lsn()::text")
    target = cur.fetchone()[0]
started = time.monotonic()
conn = connect(standby)
with conn.cursor() as cur:
    while True:
        cur.execute(
            "SELECT pg_is_in_recovery(), "
            "pg_wal_lsn_diff(pg_last_wal_replay_lsn(), %s::pg_lsn), "
            "(SELECT status FROM pg_stat_wal_receiver), "
            "(SELECT count(*) FROM pg_database WHERE datname = ANY(%s))",
            (target, names))
        recovery, behind, receiver, databases = cur.fetchone()
        if not recovery:
            sys.exit("the standby is not in recovery")
        if behind is not None and behind >= 0 and databases == len(names):
            break
        if time.monotonic() - started > timeout:
            sys.exit("the standby did not replay up to %s in %gs (receiver "
                     "%s, %s bytes behind)" % (target, timeout, receiver,
                                               behind))
        time.sleep(0.2)
    cur.execute("CHECKPOINT")
    cur.execute("SELECT min_recovery_end_lsn::text FROM pg_control_recovery()")
    min_recovery = cur.fetchone()[0]
conn.close()
print(json.dumps({"lsn": target, "receiver": receiver,
                  "min_recovery": min_recovery,
                  "seconds": time.monotonic() - started}))
'''


class Pair:
    """tools/pg-replica.sh's primary and standby in ``directory``, on ports
    ``port_base`` + 1 and + 2; ``env`` runs the psycopg2 snippets."""

    def __init__(self, directory, port_base, env):
        self.dir = directory
        self.port = {'primary': port_base + 1, 'standby': port_base + 2}
        self.env = env
        self.started = False

    def _script(self, command):
        environ = dict(os.environ, PG_REPLICA_PORT_BASE=str(
            self.port['primary'] - 1))
        for name in ('PG_REPLICA_PRIMARY_PORT', 'PG_REPLICA_STANDBY_PORT'):
            environ.pop(name, None)
        done = subprocess.run([SCRIPT, command, self.dir], env=environ,
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError('pg-replica.sh %s failed (%d):\n%s' % (
                command, done.returncode, done.stderr[-3000:]))
        return done.stdout

    def start(self):
        # The servers run as the postgres user: it must reach the directory
        # through the work directory, which mkdtemp made private.
        os.chmod(os.path.dirname(self.dir), 0o711)
        self.started = True
        self._script('start')

    def pin(self, cpus):
        """Keep both servers' processes on ``cpus``; the backends they
        start later inherit it from their postmaster."""
        for role in ROLES:
            postmaster = self.postmaster(role)
            for pid in [postmaster] + servers.children(postmaster):
                os.sched_setaffinity(pid, cpus)

    def stop(self):
        if self.started:
            self.started = False
            self._script('stop')

    def status(self):
        return subprocess.run([SCRIPT, 'status', self.dir],
                              capture_output=True, text=True).stdout.strip()

    def wait_replayed(self, names, timeout=300):
        """Wait until the standby has replayed everything the primary wrote
        so far, ``names`` (databases) included, through a checkpoint that
        the standby then makes its restartpoint; what it waited, as a dict.

        A standby sets a tuple's hint bits only once its minimum recovery
        point has passed the tuple's commit; until then every read of the
        tuple asks the commit log again. The restartpoint moves that point
        past the load, as a standby that has run for one checkpoint_timeout
        since the rows were written has it. Without it a standby read the
        freshly loaded rows at 2-4% more CPU than the primary did."""
        out = self.env.run_python(
            _REPLAYED, str(self.port['primary']), str(self.port['standby']),
            str(timeout), *names)
        return json.loads(out)

    def stats(self, name):
        """{role: {xacts, tup_returned, tup_fetched, sessions}} of database
        ``name`` on each server."""
        return json.loads(self.env.run_python(
            _STATS, name, str(self.port['primary']),
            str(self.port['standby'])))

    def settled_stats(self, name, timeout=30):
        """``stats`` once no session of ``name`` is left on either server,
        so that every backend has flushed its counts by exiting."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.stats(name)
            if (all(found[role]['sessions'] == 0 for role in ROLES)
                    or time.monotonic() > deadline):
                return found
            time.sleep(0.3)

    def postmaster(self, role):
        with open(os.path.join(self.dir, role, 'postmaster.pid')) as pidfile:
            return int(pidfile.readline())

    def cpu_seconds(self):
        """{role: CPU seconds used so far by the postmaster and its process
        tree}: its own time, its live children's (backends, WAL sender or
        receiver, startup, checkpointer, ...) and that of the children it
        has reaped (backends that ended)."""
        return {role: servers.tree_cpu_seconds(self.postmaster(role))
                for role in ROLES}


def delta(before, after, key):
    """{role: after - before} of one ``stats`` counter."""
    return {role: after[role][key] - before[role][key] for role in ROLES}


class Config:
    """One measured configuration: ``server`` without or with its
    slave_connection pointing at the standby."""

    def __init__(self, server, standby):
        self.server = server
        self.standby = standby
        if not standby:
            self.name = '%s, primary only' % server.label
        elif server.label == 'upstream':
            self.name = 'upstream, slave_connection = standby'
        else:
            self.name = '%s, primary + standby' % server.label


class Window:
    """One timed run of ``config`` with ``clients`` concurrent clients:
    ``stats`` (a workload.ReadStats), and per role the work of its
    database: ``xacts``, ``rows`` (returned + fetched), ``cpu`` seconds;
    ``service_cpu``: seconds of the placement server's processes over the
    timed reads; ``reads``: ours' placement_database_reads_total by server."""

    def __init__(self, config, clients, stats):
        self.config = config
        self.clients = clients
        self.stats = stats
        self.xacts = dict.fromkeys(ROLES, 0)
        self.rows = dict.fromkeys(ROLES, 0)
        self.cpu = dict.fromkeys(ROLES, 0.0)
        self.service_cpu = 0.0
        self.reads = None
        self.candidates = None
        self.notes = []

    def settle(self, before, after):
        self.xacts = delta(before, after, 'xacts')
        returned = delta(before, after, 'tup_returned')
        fetched = delta(before, after, 'tup_fetched')
        self.rows = {role: returned[role] + fetched[role] for role in ROLES}


def database_reads(text):
    """{server: count} of placement_database_reads_total in a scrape."""
    found = {}
    for line in text.splitlines():
        if line.startswith('placement_database_reads_total{'):
            labels, _, value = line.rpartition(' ')
            server = labels.split('server="', 1)[1].split('"', 1)[0]
            found[server] = found.get(server, 0) + int(float(value))
    return found


# What the service logs when the replica stops being read, or worse.
LOG_SIGNS = ('Replica not usable', 'Read from the replica failed',
             'Traceback')


def log_signs(text):
    """Notes on the LOG_SIGNS in a server's log: how often each came, and
    the rest of the first line that had it (the reason)."""
    notes = []
    for sign in LOG_SIGNS:
        count = text.count(sign)
        if count:
            start = text.index(sign)
            end = text.find('\n', start)
            first = text[start + len(sign):end if end >= 0 else None]
            notes.append('%s x%d (first:%s)' % (sign, count, first[:160]))
    return notes
