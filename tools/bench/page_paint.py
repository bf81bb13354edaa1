#!/usr/bin/env python3
"""First paint of the capacity page (GET /x-capacity) in headless Chromium.

The seeded dataset of N nodes (bulk.py) on SQLite, ten named flavours
([capacity] flavours_file: plain, NUMA with a VF, required traits), ours
under gunicorn; Debian's chromium, driven by Selenium through
chromedriver (tools/integration-deps.sh installs both; Selenium is in
the test extra), opens the page several times, each in a blank tab.

    tools/bench/page_paint.py --nodes 10000 [--runs 5] [--workers 2]

Prints, per run: the browser's first contentful paint (the page without
data) and ``capacity-painted``, the page's own performance mark set
after the frame that draws the numbers of GET /x-capacity/flavours, both
in milliseconds from navigation start; and the answer's time and size
asked alone, for comparison.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import environments  # noqa: E402
import run as bench_run  # noqa: E402
import servers  # noqa: E402

CHROMIUM = '/usr/bin/chromium'
CHROMEDRIVER = '/usr/bin/chromedriver'
# Ten flavours as a Nova cloud names them, over the dataset's classes
# and traits (dataset.py).
FLAVOURS = (
    ('m1.tiny', 'resources=VCPU:1,MEMORY_MB:512,DISK_GB:1'),
    ('m1.small', 'resources=VCPU:1,MEMORY_MB:2048,DISK_GB:20'),
    ('m1.medium', 'resources=VCPU:2,MEMORY_MB:4096,DISK_GB:40'),
    ('m1.large', 'resources=VCPU:4,MEMORY_MB:8192,DISK_GB:80'),
    ('m1.xlarge', 'resources=VCPU:8,MEMORY_MB:16384,DISK_GB:160'),
    ('c1.large', 'resources=VCPU:16,MEMORY_MB:16384,DISK_GB:80'),
    ('r1.large', 'resources=VCPU:4,MEMORY_MB:65536,DISK_GB:80'),
    ('g1.avx2', 'resources=VCPU:4,MEMORY_MB:8192,DISK_GB:40'
                '&required=HW_CPU_X86_AVX2'),
    ('s1.gold', 'resources=VCPU:2,MEMORY_MB:4096,DISK_GB:40'
                '&required=CUSTOM_GOLD'),
    ('n1.numa', 'resources=VCPU:2,MEMORY_MB:4096'
                '&resources1=SRIOV_NET_VF:1&group_policy=none'),
)
PAINTED = ('var e = performance.getEntriesByName(arguments[0]);'
           'return e.length ? e[0].startTime : null')


def browser(width, height):
    from selenium import webdriver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ('--headless=new', '--no-sandbox', '--disable-gpu',
                     '--disable-dev-shm-usage',
                     '--window-size=%d,%d' % (width, height)):
        options.add_argument(argument)
    return webdriver.Chrome(
        service=webdriver.ChromeService(executable_path=CHROMEDRIVER),
        options=options)


def paint(driver, url, timeout):
    """(first contentful paint, capacity-painted) in ms, or None each."""
    driver.get('about:blank')
    driver.get(url)
    deadline = time.monotonic() + timeout
    painted = None
    while painted is None and time.monotonic() < deadline:
        painted = driver.execute_script(PAINTED, 'capacity-painted')
        if painted is None:
            time.sleep(0.02)
    return driver.execute_script(PAINTED, 'first-contentful-paint'), painted


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, default=10000)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--port', type=int, default=18991)
    parser.add_argument('--timeout', type=float, default=120)
    args = parser.parse_args()
    env = environments.ours()
    with tempfile.TemporaryDirectory(prefix='page-paint-') as workdir:
        flavours = os.path.join(workdir, 'flavours')
        with open(flavours, 'w') as out:
            out.writelines('%s %s\n' % flavour for flavour in FLAVOURS)
        database = servers.Database('sqlite', 'paint', workdir, env)
        server = servers.Server(env, database, args.port, workdir)
        server.configure(options={'capacity': {'flavours_file': flavours}})
        database.create()
        server.sync_db()
        loaded = bench_run.bulk_load(env, database, args.nodes, args.seed)
        print('%d nodes (%d providers) loaded in %.1f s'
              % (args.nodes, loaded['providers'], loaded['seconds']))
        server.start(workers=args.workers)
        driver = browser(1280, 1400)
        try:
            answer = server.client.get(
                '/x-capacity/flavours?hosts=0', timeout=args.timeout)
            print('GET /x-capacity/flavours?hosts=0 alone: %s, %.2f s, '
                  '%d bytes' % (answer.status, answer.seconds,
                                len(answer.body)))
            url = 'http://127.0.0.1:%d/x-capacity' % args.port
            painted = []
            for number in range(args.runs):
                first, shown = paint(driver, url, args.timeout)
                print('run %d: first contentful paint %s ms, numbers '
                      'painted %s ms' % (number, _ms(first), _ms(shown)))
                if shown is not None:
                    painted.append(shown)
            if painted:
                print('numbers painted: median %.0f ms over %d runs'
                      % (statistics.median(painted), len(painted)))
        finally:
            driver.quit()
            server.stop()
            servers.stop_all()
            database.drop()


def _ms(value):
    return '-' if value is None else '%.0f' % value


if __name__ == '__main__':
    main()
