#!/usr/bin/env python3
"""Peak worker memory and time of one huge allocation candidates answer.

One tree (a root and a few children, each with a large inventory of one
class) asked for with N granular groups of one unit each,
``group_policy=none`` and no ``limit``: the number of candidates grows
as children**N. For each N a fresh server (one sync worker, on SQLite)
answers the request once, and the worker's peak resident memory
(VmHWM) is read before it is stopped.

    tools/bench/answer_memory.py --groups 4 6 8 10 12 [--upstream]
    tools/bench/answer_memory.py --groups 12 \
        --option placement.max_returned_allocation_candidates=0

Prints one line per implementation and N: status, candidates, body
size, seconds and peak RSS.
"""
import argparse
import os
import sys
import tempfile
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import client as bench_client  # noqa: E402
import environments  # noqa: E402
import servers  # noqa: E402

CLASS = 'CUSTOM_WIDGET'


def build_tree(client, children):
    """A root and ``children`` children, each child 100,000 widgets."""
    client.expect('PUT', '/resource_classes/' + CLASS)
    root = str(uuid.uuid4())
    client.expect('POST', '/resource_providers',
                  {'name': 'root', 'uuid': root})
    for index in range(children):
        child = str(uuid.uuid4())
        client.expect('POST', '/resource_providers', {
            'name': 'child%d' % index, 'uuid': child,
            'parent_provider_uuid': root})
        client.expect('PUT', '/resource_providers/%s/inventories' % child, {
            'resource_provider_generation': 0,
            'inventories': {CLASS: {'total': 100000}}})


def query(groups):
    parts = ['resources%d=%s:1' % (n, CLASS) for n in range(1, groups + 1)]
    return '/allocation_candidates?' + '&'.join(
        parts + ['group_policy=none'])


def measure(env, groups, children, port, workdir, options, timeout):
    database = servers.Database('sqlite', 'answer%d' % groups, workdir, env)
    server = servers.Server(env, database, port, workdir)
    server.configure(options=options)
    database.create()
    server.sync_db()
    server.start(workers=1)
    try:
        build_tree(server.client, children)
        worker = servers.children(server.proc.pid)[0]
        try:
            resp = server.client.get(query(groups), timeout=timeout)
        except bench_client.ConnectionFailed as exc:
            return 'failed: %s' % exc, None, 0, 0.0, _peak_mb(worker)
        count = None
        if resp.status == 200:
            count = len(resp.json()['allocation_requests'])
        return resp.status, count, len(resp.body), resp.seconds, _peak_mb(
            worker)
    finally:
        server.stop()
        database.drop()


def _peak_mb(pid):
    usage = servers._memory_kb(pid)
    return None if usage is None else usage[1] // 1024


def parse_options(pairs):
    options = {}
    for pair in pairs:
        name, _, value = pair.partition('=')
        section, _, option = name.rpartition('.')
        options.setdefault(section or 'placement', {})[option] = value
    return options


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--groups', type=int, nargs='+',
                        default=[4, 6, 8, 10])
    parser.add_argument('--children', type=int, default=3)
    parser.add_argument('--upstream', action='store_true',
                        help='measure upstream 16.0.0 too')
    parser.add_argument('--upstream-venv')
    parser.add_argument('--option', action='append', default=[],
                        help='SECTION.NAME=VALUE for our server')
    parser.add_argument('--timeout', type=float, default=300)
    parser.add_argument('--port', type=int, default=18990)
    args = parser.parse_args()
    envs = [(environments.ours(), parse_options(args.option))]
    if args.upstream:
        envs.append((environments.upstream(args.upstream_venv), {}))
    print('%-8s %6s %8s %10s %12s %8s %10s' % (
        'impl', 'groups', 'status', 'candidates', 'body bytes', 'seconds',
        'peak MB'))
    with tempfile.TemporaryDirectory(prefix='answer-memory-') as workdir:
        try:
            for groups in args.groups:
                for env, options in envs:
                    status, count, size, seconds, peak = measure(
                        env, groups, args.children, args.port,
                        os.path.join(workdir, env.label), options,
                        args.timeout)
                    print('%-8s %6d %8s %10s %12d %8.2f %10s' % (
                        env.label, groups, status,
                        '-' if count is None else count, size, seconds,
                        '-' if peak is None else peak), flush=True)
        finally:
            servers.stop_all()


if __name__ == '__main__':
    main()
