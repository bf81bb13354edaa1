# gunicorn settings for the placement API:
#
#   gunicorn -c /etc/placement/gunicorn.conf.py
#
# Command-line options override these (e.g. --bind 127.0.0.1:8778).
# placement keeps no state between requests and settles concurrent claims in
# the database, so several workers (and several hosts) may share a database.

import os

wsgi_app = 'placement.wsgi.api:application'
bind = ['0.0.0.0:8778']

# Worker processes, each with its own threads and database connections.
# Roughly 2 x CPU cores in all; threads overlap the time spent waiting on
# the database.
workers = 4
worker_class = 'gthread'
threads = 4

# Seconds a request may take before its worker is restarted: generous, for
# large allocation candidate queries.
timeout = 120
graceful_timeout = 30
keepalive = 5

# Where placement.conf is: $OS_PLACEMENT_CONFIG_DIR when gunicorn's
# environment sets it, else /etc/placement.
raw_env = ['OS_PLACEMENT_CONFIG_DIR=' + os.environ.get(
    'OS_PLACEMENT_CONFIG_DIR', '/etc/placement')]

# Each worker loads the application itself, after the fork: database
# connections are never shared between processes.
preload_app = False

# placement logs one line per request itself (logger placement.requestlog,
# with the request id); gunicorn's access log would repeat it.
accesslog = None
errorlog = '-'


def child_exit(server, worker):
    """Drop the metrics of a worker that exited (prometheus_client's
    multiprocess mode: PROMETHEUS_MULTIPROC_DIR, README "Metrics"), so
    that its pool gauges stop counting. Imported here, in the master, only
    once a worker has exited: after gunicorn has set raw_env."""
    from placement.api.operations import multiprocess
    multiprocess.child_exit(server, worker)
