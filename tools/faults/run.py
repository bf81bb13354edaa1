#!/usr/bin/env python3
"""A fault run: the service's ledger under database faults.

    python tools/faults/run.py --topology TOPOLOGY --faults KIND[,KIND...]
        --rounds N --out RUN_DIR [--setting async] [--hold 20]
        [--service-venv VENV] [--clients 8] [--api-servers 2 --workers 3]

TOPOLOGY: galera-single-writer (HAProxy sends everything to node 1, the
others are backups), galera-every-node (round robin over the 3 nodes),
patroni-haproxy (Patroni + etcd, HAProxy to the leader), patroni-multihost
(a libpq multi-host URL with target_session_attrs=read-write). ``--setting
async``: Patroni without a synchronous standby. Faults (faults.py): kill,
freeze, partition (of the node the service writes to), api-kill.

The run starts the topology under a temporary directory, creates the
database ``placement_faults`` and syncs it with the service venv's
placement-manage, starts the API servers (gunicorn, 127.0.0.1), seeds
providers, then runs the client threads and the sampler while it injects
``--rounds`` rounds of each fault, one at a time, waiting after each until
the topology is healthy again. Then it stops the workload, reads the final
state, writes RUN_DIR (history.jsonl, samples.jsonl, faults.jsonl,
final.json, run.json), runs the checker on it and prints its report.
Everything it started is stopped on any exit (Ctrl-C included).

Exit status: 0 without violations, 1 with, 2 when the run itself failed.
Runs as root (network namespaces). VENV defaults to the venv of the
running interpreter (this project); upstream openstack-placement's venv
works too (its gunicorn serves the same WSGI module).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from types import FrameType
from typing import Any

from api_servers import ApiServer
import client
import database
import faults
from faults import log
from records import Clock
from records import JsonLines
from records import write_json
import topology as topologies
import workload

DATABASE = 'placement_faults'
REPO = pathlib.Path(__file__).resolve().parents[2]
DEFAULTS = {
    # port base, namespace prefix, network
    'galera': (14500, 'fltg', '10.236.1'),
    'patroni': (14600, 'fltp', '10.236.2'),
}
RUN_FILES = ('history.jsonl', 'samples.jsonl', 'faults.jsonl', 'final.json',
             'run.json', 'report.txt')


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--topology', required=True,
                        choices=topologies.TOPOLOGIES)
    parser.add_argument('--setting', default='default',
                        choices=['default', 'async'],
                        help='async: Patroni without a synchronous standby')
    parser.add_argument('--faults', default='kill,freeze,partition,api-kill',
                        help='comma-separated: %s' % ','.join(faults.KINDS))
    parser.add_argument('--rounds', type=int, default=1)
    parser.add_argument('--hold', type=float, default=20.0,
                        help='seconds a node stays frozen or cut off')
    parser.add_argument('--settle', type=float, default=5.0,
                        help='seconds of workload before the first fault, '
                        'between faults and after the last')
    parser.add_argument('--out', required=True, type=pathlib.Path)
    parser.add_argument('--service-venv', type=pathlib.Path,
                        default=pathlib.Path(sys.prefix))
    parser.add_argument('--clients', type=int, default=8)
    parser.add_argument('--api-servers', type=int, default=2)
    parser.add_argument('--workers', type=int, default=3)
    parser.add_argument('--request-timeout', type=float, default=30.0)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--port-base', type=int,
                        help='of the database topology (galera 14500, '
                        'patroni 14600)')
    parser.add_argument('--api-port-base', type=int, default=14700,
                        help='API server N listens on base+N')
    parser.add_argument('--netns-prefix',
                        help='namespace names (galera fltg, patroni fltp)')
    parser.add_argument('--network', help='the nodes\' /24 (galera '
                        '10.236.1, patroni 10.236.2)')
    parser.add_argument('--keep', action='store_true',
                        help='keep the temporary directory (logs, data)')
    args = parser.parse_args(argv)
    args.fault_list = [kind.strip() for kind in args.faults.split(',')
                       if kind.strip()]
    for kind in args.fault_list:
        if kind not in faults.KINDS:
            parser.error('unknown fault %s (%s)' % (kind,
                                                    ', '.join(faults.KINDS)))
    family = args.topology.split('-')[0]
    if args.setting == 'async' and family != 'patroni':
        parser.error('--setting async is for the Patroni topologies')
    base, prefix, network = DEFAULTS[family]
    args.port_base = args.port_base or base
    args.netns_prefix = args.netns_prefix or prefix
    args.network = args.network or network
    if args.api_servers < 1 or args.clients < 1 or args.rounds < 0:
        parser.error('--api-servers, --clients need at least 1, --rounds 0')
    return args


def which_service(venv: pathlib.Path, workdir: pathlib.Path) -> str:
    """"this" when the venv's placement package is this checkout's,
    "upstream" otherwise."""
    result = subprocess.run(
        [str(venv / 'bin' / 'python'), '-c',
         'import placement; print(placement.__file__)'],
        capture_output=True, text=True, cwd=workdir, check=True)
    location = pathlib.Path(result.stdout.strip()).resolve()
    return 'this' if REPO in location.parents else 'upstream'


def write_config(config_dir: pathlib.Path, url: str) -> pathlib.Path:
    config_dir.mkdir(parents=True, exist_ok=True)
    path = config_dir / 'placement.conf'
    path.write_text('[api]\nauth_strategy = noauth2\n\n'
                    '[placement_database]\nconnection = %s\n' % url)
    return path


def db_sync(venv: pathlib.Path, config: pathlib.Path,
            workdir: pathlib.Path) -> None:
    result = subprocess.run(
        [str(venv / 'bin' / 'placement-manage'), '--config-file',
         str(config), 'db', 'sync'],
        capture_output=True, text=True, cwd=workdir, check=False,
        env=dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(config.parent)))
    if result.returncode != 0:
        raise RuntimeError('placement-manage db sync failed:\n%s%s'
                           % (result.stdout, result.stderr))


def usages_through_api(url: str, providers: list[str]) -> dict[str, Any]:
    usages = {}
    for rp in providers:
        for _ in range(30):
            answer = client.call(url, 'GET',
                                 '/resource_providers/%s/usages' % rp)
            if answer.outcome == 'ok':
                usages[rp] = {rc: int(amount) for rc, amount
                              in answer.body['usages'].items()}
                break
            time.sleep(1)
        else:
            raise RuntimeError('GET usages of %s keeps failing: %s %s'
                               % (rp, answer.status, answer.error))
    return usages


def run_checker(out: pathlib.Path) -> int | None:
    """Print the checker's report; the number of violations it found
    (None when there is no checker)."""
    try:
        import checker
    except ImportError:
        log('no checker (tools/faults/checker.py): run directory written '
            'but not checked')
        return None
    report = checker.check(checker.load_run(str(out)))
    text = checker.format_report(report)
    (out / 'report.txt').write_text(text + '\n')
    print(text)
    return len(report.violations)


def summary_line(out: pathlib.Path, fault_records: list[dict[str, Any]],
                 violations: int | None) -> str:
    outcomes: dict[str, int] = {}
    total = 0
    with open(out / 'history.jsonl') as history:
        for line in history:
            total += 1
            outcome = json.loads(line)['outcome']
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    recovered = [f['recovered'] - f['ended'] for f in fault_records
                 if f['recovered'] is not None]
    return ('%d ops (%s), %d faults, slowest recovery %s, %s' % (
        total, ', '.join('%s %d' % item for item in sorted(outcomes.items())),
        len(fault_records),
        '%.1f s' % max(recovered) if recovered else '-',
        'not checked' if violations is None else
        '%d violations' % violations if violations else 'no violations'))


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out: pathlib.Path = args.out.resolve()
        self.workdir = pathlib.Path(tempfile.mkdtemp(prefix='faults-'))
        # PostgreSQL runs as the postgres user, under this directory.
        self.workdir.chmod(0o755)
        self.topology = topologies.make(
            args.topology, self.workdir, args.port_base, args.netns_prefix,
            args.network, args.setting)
        self.servers = [
            ApiServer('api%d' % n, args.service_venv.resolve(),
                      self.workdir / 'etc', args.api_port_base + n,
                      args.workers, self.workdir / 'api')
            for n in range(1, args.api_servers + 1)]
        self.files: list[JsonLines] = []
        self.workload: workload.Workload | None = None
        self.sampler: database.Sampler | None = None
        self.info: dict[str, Any] = {}

    def execute(self) -> int:
        args = self.args
        self.out.mkdir(parents=True, exist_ok=True)
        for name in RUN_FILES:
            (self.out / name).unlink(missing_ok=True)
        clock = Clock()
        began = datetime.datetime.now(datetime.timezone.utc)
        service = which_service(args.service_venv.resolve(), self.workdir)
        self.info = {
            'topology': args.topology, 'setting': args.setting,
            'service': service, 'rounds': args.rounds,
            'faults': args.fault_list, 'began': began.isoformat(),
            'hold': args.hold, 'settle': args.settle,
            'clients': args.clients, 'api_servers': args.api_servers,
            'workers': args.workers,
            'request_timeout': args.request_timeout, 'seed': args.seed,
            'service_venv': str(args.service_venv),
        }
        log('starting %s under %s' % (args.topology, self.workdir))
        self.topology.start()
        self.topology.wait_writable()
        if any(kind in faults.NODE_FAULTS for kind in args.fault_list):
            self.topology.check_namespaces()
        url = database.with_database(self.topology.server_url, DATABASE)
        self.info['database_url'] = url
        database.create_database(self.topology.server_url, DATABASE)
        config = write_config(self.workdir / 'etc', url)
        db_sync(args.service_venv.resolve(), config, self.workdir)
        log('starting %d API servers (%s service)' % (len(self.servers),
                                                       service))
        for server in self.servers:
            server.start()
        providers = workload.seed(self.servers[0].url)
        self.info['providers'] = providers

        history = self.open('history.jsonl')
        samples = self.open('samples.jsonl')
        fault_log = self.open('faults.jsonl')
        self.sampler = database.Sampler(url, samples, clock)
        self.workload = workload.Workload(
            {server.name: server.url for server in self.servers}, providers,
            args.clients, history, clock, args.request_timeout, args.seed)
        injector = faults.Injector(self.topology, self.servers, clock,
                                   fault_log, args.hold)
        self.sampler.start()
        self.workload.start()
        log('workload running: %d clients' % args.clients)
        time.sleep(args.settle)
        records = []
        aborted = None
        for round_index in range(args.rounds):
            for kind in args.fault_list:
                log('round %d/%d: %s' % (round_index + 1, args.rounds, kind))
                record = injector.inject(kind)
                records.append(record)
                if record['recovered'] is None:
                    aborted = '%s of %s did not recover' % (
                        kind, record['target'])
                    break
                time.sleep(args.settle)
            if aborted:
                break
        log('stopping the workload')
        stuck = self.workload.stop()
        self.sampler.stop()
        if injector.wait_recovered() is None:
            aborted = aborted or 'the topology was not healthy at the end'
        log('reading the final state')
        final = database.read_final(url)
        final['usage_api'] = usages_through_api(self.servers[0].url,
                                                providers)
        write_json(self.out / 'final.json', final)
        self.info.update({
            'ended': clock.now(), 'aborted': aborted,
            'stuck_clients': stuck, 'client_errors': self.workload.errors,
            'samples_taken': self.sampler.taken,
            'samples_skipped': self.sampler.skipped,
        })
        write_json(self.out / 'run.json', self.info)
        for handle in self.files:
            handle.close()
        violations = run_checker(self.out)
        print('%s %s: %s' % (args.topology, args.setting, summary_line(
            self.out, records, violations)))
        if violations:
            return 1
        if aborted or stuck or self.workload.errors:
            log('run incomplete: %s' % (aborted or 'clients %s'
                                        % (stuck or self.workload.errors)))
            return 2
        return 0

    def open(self, name: str) -> JsonLines:
        handle = JsonLines(self.out / name)
        self.files.append(handle)
        return handle

    def cleanup(self, failed: bool) -> None:
        """Stop everything this run started, whatever happened; keep the
        temporary directory (data, logs) if asked, or if the run failed or
        found violations."""
        if self.workload is not None:
            self.workload.stop(timeout=5)
        if self.sampler is not None:
            self.sampler.stop()
        for server in self.servers:
            try:
                server.stop()
            except Exception as exc:  # go on with the rest
                log('stopping %s: %r' % (server.name, exc))
        try:
            self.topology.stop()
        except Exception as exc:
            log('stopping the topology: %r' % exc)
        # The service's logs explain its errors: they go with the run.
        if self.out.is_dir():
            logs = self.out / 'logs'
            logs.mkdir(exist_ok=True)
            for path in [self.topology.log_path] + [
                    server.log_path for server in self.servers]:
                if path.exists():
                    shutil.copy(path, logs / path.name)
        if self.args.keep or failed:
            log('kept %s (logs, data)' % self.workdir)
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupted)
    run = Run(args)
    failed = True
    try:
        status = run.execute()
        failed = status != 0
        return status
    except KeyboardInterrupt:
        log('interrupted')
        return 2
    except Exception as exc:
        log('run failed: %s' % exc)
        return 2
    finally:
        # Ignore a second Ctrl-C: leaving servers behind is worse.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        run.cleanup(failed)


if __name__ == '__main__':
    sys.exit(main())
