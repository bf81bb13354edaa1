"""Databases and gunicorn servers for one benchmark run.

Every process started here is recorded so that ``stop_all`` can end it on
any exit path (normal end, error, Ctrl-C, SIGTERM). Servers run in their own
session, so a kill of the process group reaches the gunicorn workers too.
"""
import os
import shutil
import signal
import sqlite3
import subprocess
import threading
import time

from client import Client

BACKENDS = ('sqlite', 'mysql', 'postgresql')
# SQLAlchemy's names of the MySQL drivers: PyMySQL, mysqlclient.
MYSQL_DRIVERS = ('pymysql', 'mysqldb')
_STARTED = []
_STARTED_LOCK = threading.Lock()

_CREATE_MYSQL = '''
import sys, pymysql
conn = pymysql.connect(host="127.0.0.1", port=3306, user="root")
with conn.cursor() as cur:
    if sys.argv[2] == "end-sessions":
        cur.execute("SELECT id FROM information_schema.processlist "
                    "WHERE db = %s AND id <> CONNECTION_ID()", (sys.argv[1],))
        for (session,) in cur.fetchall():
            try:
                cur.execute("KILL %d" % session)
            except pymysql.MySQLError:
                pass  # ended meanwhile
    else:
        cur.execute("DROP DATABASE IF EXISTS `%s`" % sys.argv[1])
    if sys.argv[2] == "create":
        cur.execute("CREATE DATABASE `%s` CHARACTER SET utf8mb4" % sys.argv[1])
conn.close()
'''
_CREATE_POSTGRESQL = '''
import sys, psycopg2
# ANALYZE runs in the database itself, the rest from the maintenance one.
conn = psycopg2.connect(host="127.0.0.1", port=int(sys.argv[3]),
                        user="postgres", dbname=sys.argv[1]
                        if sys.argv[2] == "analyze" else "postgres")
conn.autocommit = True
with conn.cursor() as cur:
    if sys.argv[2] == "end-sessions":
        cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = %s AND pid <> pg_backend_pid()",
                    (sys.argv[1],))
    elif sys.argv[2] == "analyze":
        cur.execute("ANALYZE")
    else:
        cur.execute('DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % sys.argv[1])
    if sys.argv[2] == "create":
        # An optional fourth argument names a database to copy.
        template = ' TEMPLATE "%s"' % sys.argv[4] if sys.argv[4:] else ''
        cur.execute('CREATE DATABASE "%s"%s' % (sys.argv[1], template))
conn.close()
'''


_COPY_MYSQL = '''
import sys, pymysql
source, target = sys.argv[1], sys.argv[2]
conn = pymysql.connect(host="127.0.0.1", port=3306, user="root")
with conn.cursor() as cur:
    cur.execute("SET FOREIGN_KEY_CHECKS = 0")
    # Row id 0 (VCPU) must stay 0, not take the next auto-increment value.
    cur.execute("SET SESSION sql_mode = "
                "CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')")
    cur.execute("SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = %s", (source,))
    for (table,) in cur.fetchall():
        cur.execute("CREATE TABLE `%s`.`%s` LIKE `%s`.`%s`"
                    % (target, table, source, table))
        cur.execute("INSERT INTO `%s`.`%s` SELECT * FROM `%s`.`%s`"
                    % (target, table, source, table))
conn.commit()
conn.close()
'''


class Database:
    """A fresh, empty database of the chosen backend, on the system server
    or, for PostgreSQL, on the one listening on ``port`` (the private
    primary of the replica mode). The server reaches a MySQL database
    through ``mysql_driver``."""

    def __init__(self, backend, name, workdir, env, port=None,
                 mysql_driver='pymysql'):
        if backend not in BACKENDS:
            raise ValueError('unknown backend %s' % backend)
        if port and backend != 'postgresql':
            raise ValueError('only PostgreSQL databases can be elsewhere')
        if mysql_driver not in MYSQL_DRIVERS:
            raise ValueError('unknown MySQL driver %s' % mysql_driver)
        self.backend = backend
        self.name = name
        self.env = env
        self.mysql_driver = mysql_driver
        self.port = port or (3306 if backend == 'mysql' else 5432)
        self.sqlite_path = os.path.join(workdir, name + '.db')

    @property
    def url(self):
        return self.url_at(self.port)

    def url_at(self, port):
        """The URL of this database on the server at ``port`` (e.g. the
        standby that replicates it)."""
        if self.backend == 'sqlite':
            return 'sqlite:///' + self.sqlite_path
        if self.backend == 'mysql':
            return ('mysql+%s://root@127.0.0.1:%d/%s?charset=utf8mb4'
                    % (self.mysql_driver, port, self.name))
        return 'postgresql+psycopg2://postgres@127.0.0.1:%d/%s' % (
            port, self.name)

    def _server_side(self, action, *extra):
        if self.backend == 'mysql':
            self.env.run_python(_CREATE_MYSQL, self.name, action)
        else:
            self.env.run_python(_CREATE_POSTGRESQL, self.name, action,
                                str(self.port), *extra)

    def create(self):
        self.drop()
        if self.backend != 'sqlite':
            self._server_side('create')

    def copy_from(self, source):
        """Make this database a copy of ``source`` (no server may be
        using ``source``)."""
        if self.backend == 'sqlite':
            self.drop()
            with sqlite3.connect(source.sqlite_path) as src, \
                    sqlite3.connect(self.sqlite_path) as dst:
                src.backup(dst)
        elif self.backend == 'mysql':
            self.create()
            self.env.run_python(_COPY_MYSQL, source.name, self.name)
        else:
            self._server_side('create', source.name)

    def analyze(self):
        """Gather PostgreSQL's planner statistics now. Autovacuum would
        do so a minute or more after a load, in the middle of the
        measurements, and never in a ``copy_from`` copy: it starts with
        no statistics and no changes to trigger them, so its plans are
        the ones of empty tables (upstream's limit=1000 GET at 1,000
        nodes took 433 ms there, 181 ms once analyzed)."""
        if self.backend == 'postgresql':
            self._server_side('analyze')

    def end_sessions(self):
        """End every connection to the database, with the statement it
        runs: a stopped server's queries would otherwise run on.
        """
        if self.backend != 'sqlite':
            self._server_side('end-sessions')

    def drop(self):
        if self.backend == 'sqlite':
            for suffix in ('', '-wal', '-shm', '-journal'):
                if os.path.exists(self.sqlite_path + suffix):
                    os.unlink(self.sqlite_path + suffix)
        else:
            self._server_side('drop')


def cpu_list(cpus):
    """``cpus`` as taskset and people read them: 0,1."""
    return ','.join(str(cpu) for cpu in sorted(cpus))


def children(pid):
    """PIDs whose parent is ``pid`` (the gunicorn workers of a master)."""
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as stat:
                fields = stat.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


_TICKS = os.sysconf('SC_CLK_TCK')


def _cpu_ticks(pid):
    """utime + stime of ``pid``, and cutime + cstime (its reaped children),
    in clock ticks; 0 when it is gone."""
    try:
        with open('/proc/%d/stat' % pid) as stat:
            fields = stat.read().rsplit(')', 1)[1].split()
    except OSError:
        return 0, 0
    return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def tree_cpu_seconds(pid):
    """CPU seconds used so far by ``pid`` and its process tree: its own
    time, its live children's and that of the children it has reaped."""
    own, reaped = _cpu_ticks(pid)
    live = sum(_cpu_ticks(child)[0] for child in children(pid))
    return (own + reaped + live) / _TICKS


def _memory_kb(pid):
    """(VmRSS, VmHWM) of a process in kB, or None when it is gone."""
    values = {}
    try:
        with open('/proc/%d/status' % pid) as status:
            for line in status:
                if line.startswith(('VmRSS:', 'VmHWM:')):
                    key, amount = line.split()[:2]
                    values[key] = int(amount)
    except OSError:
        return None
    return values.get('VmRSS:', 0), values.get('VmHWM:', 0)


class Server:
    """One placement implementation served by gunicorn on a loopback port."""

    def __init__(self, env, database, port, workdir, max_candidates=None):
        self.env = env
        self.label = env.label
        self.database = database
        self.port = port
        self.dir = os.path.join(workdir, env.label)
        self.client = Client(port)
        self.proc = None
        self.workers = 0
        self.max_candidates = max_candidates
        # CPUs the server's processes may run on (None: any).
        self.cpus = None
        os.makedirs(self.dir, exist_ok=True)
        self.configure()

    def configure(self, slave_connection=None, metrics=False, options=None):
        """(Re)write placement.conf; the next ``start`` reads it.

        ``slave_connection``: [placement_database] slave_connection (ours
        reads the replica_routes requests from it, upstream ignores it);
        ``metrics``: ours' [metrics] endpoint, every worker's numbers
        collected in a multiprocess directory emptied by each start;
        ``options``: {section: {name: value}} of any further options,
        set over the ones above (e.g. one of upstream's workarounds).
        """
        self.metrics = metrics
        sections = {'api': {'auth_strategy': 'noauth2'},
                    'placement_database': {'connection': self.database.url}}
        if slave_connection:
            sections['placement_database']['slave_connection'] = (
                slave_connection)
        if self.max_candidates is not None:
            sections['placement'] = {
                'max_allocation_candidates': self.max_candidates}
        if metrics:
            sections['metrics'] = {'enabled': True}
        for section, values in (options or {}).items():
            sections.setdefault(section, {}).update(values)
        with open(os.path.join(self.dir, 'placement.conf'), 'w') as conf:
            for section, values in sections.items():
                conf.write('[%s]\n' % section)
                conf.writelines('%s = %s\n' % option
                                for option in values.items())

    @property
    def _metrics_dir(self):
        return os.path.join(self.dir, 'metrics')

    @property
    def _environ(self):
        env = dict(os.environ)
        env['OS_PLACEMENT_CONFIG_DIR'] = self.dir
        env['XDG_RUNTIME_DIR'] = self.dir
        env.pop('PROMETHEUS_MULTIPROC_DIR', None)
        if self.metrics:
            env['PROMETHEUS_MULTIPROC_DIR'] = self._metrics_dir
        return env

    def sync_db(self):
        subprocess.run(
            [self.env.script('placement-manage'), '--config-file',
             os.path.join(self.dir, 'placement.conf'), 'db', 'sync'],
            check=True, env=self._environ, capture_output=True, cwd=self.dir)

    def start(self, workers):
        self.stop()
        if self.metrics:
            shutil.rmtree(self._metrics_dir, ignore_errors=True)
            os.makedirs(self._metrics_dir)
        log = open(os.path.join(self.dir, 'server.log'), 'ab')
        cmd = [self.env.script('gunicorn'), '-b', '127.0.0.1:%d' % self.port,
               '-w', str(workers), '--timeout', '900',
               '--graceful-timeout', '5', 'placement.wsgi.api:application']
        if self.cpus is not None:
            cmd = ['taskset', '--cpu-list', cpu_list(self.cpus)] + cmd
        with _STARTED_LOCK:
            self.proc = subprocess.Popen(
                cmd, env=self._environ, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
                cwd=self.dir)  # gunicorn puts its cwd first on sys.path
            _STARTED.append(self.proc)
        log.close()
        self.workers = workers
        self.client.wait_ready(proc=self.proc)
        # Every worker imports the app on start; wait until all are up so
        # the first timed requests do not race worker boot.
        deadline = time.monotonic() + 30
        while (len(children(self.proc.pid)) < workers
               and time.monotonic() < deadline):
            time.sleep(0.1)

    def stop(self):
        if self.proc is not None:
            _terminate(self.proc)
            self.proc = None
            self.database.end_sessions()

    def cpu_seconds(self):
        """CPU seconds used so far by the master and its workers."""
        return 0.0 if self.proc is None else tree_cpu_seconds(self.proc.pid)

    def memory(self):
        """{pid: (rss_kb, hwm_kb)} of the master and its workers."""
        if self.proc is None:
            return {}
        pids = [self.proc.pid] + children(self.proc.pid)
        found = {}
        for pid in pids:
            usage = _memory_kb(pid)
            if usage is not None:
                found[pid] = usage
        return found

    def log_size(self):
        try:
            return os.path.getsize(os.path.join(self.dir, 'server.log'))
        except OSError:
            return 0

    def log_since(self, offset):
        """What the server logged after ``offset`` (a ``log_size``)."""
        try:
            with open(os.path.join(self.dir, 'server.log'), 'rb') as log:
                log.seek(offset)
                return log.read().decode(errors='replace')
        except OSError:
            return ''

    def log_tail(self, lines=20):
        try:
            with open(os.path.join(self.dir, 'server.log'), 'rb') as log:
                data = log.read()[-20000:].decode(errors='replace')
        except OSError:
            return ''
        return '\n'.join(data.splitlines()[-lines:])


def _terminate(proc):
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(10)
    with _STARTED_LOCK:
        if proc in _STARTED:
            _STARTED.remove(proc)


def stop_all():
    """End every server this process started (and only those)."""
    with _STARTED_LOCK:
        procs = list(_STARTED)
    for proc in procs:
        _terminate(proc)


class MemoryMonitor:
    """Samples the servers' memory while a phase runs.

    VmHWM already holds each live process' peak; sampling also catches
    workers that gunicorn replaced (timeout, crash) before the phase ended,
    and can kill a server whose worker grows past ``limit_kb`` so that a
    combinatorial explosion cannot take the shared machine down.
    """

    def __init__(self, servers, limit_kb=None, interval=0.25):
        self.servers = servers
        self.limit_kb = limit_kb
        self.interval = interval
        self.peak_kb = {s.label: 0 for s in servers}
        self.killed = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        for server in self.servers:
            for rss, hwm in server.memory().values():
                self.peak_kb[server.label] = max(
                    self.peak_kb[server.label], hwm, rss)
                if self.limit_kb and rss > self.limit_kb:
                    self.killed.add(server.label)
                    server.stop()
                    break

    def _run(self):
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self):
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()
