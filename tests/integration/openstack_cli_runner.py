"""Run ``openstack`` commands in one process; executed by .venv-osc's python.

Each line on stdin is a JSON list of arguments, exactly as they would follow
``openstack`` on a command line; each answer on stdout is one JSON line
``{"rc": ..., "stdout": ..., "stderr": ...}``. The command goes through the
same ``openstackclient.shell.main`` as the ``openstack`` script; only the
interpreter start and imports (seconds per command) are shared, and the
per-process client cache is emptied between commands.
"""
import contextlib
import io
import json
import logging
import sys

from openstackclient import shell
from openstackclient.common import clientmanager


def forget_clients():
    """Drop the plugins' clients, which osc caches on the ClientManager
    class: a client built for one command's microversion would serve the
    next command.
    """
    for owner in clientmanager.ClientManager.__mro__:
        for attribute in vars(owner).values():
            if isinstance(attribute, clientmanager.clientmanager.ClientCache):
                attribute._handle = None


def run(argv):
    forget_clients()
    out, err = io.StringIO(), io.StringIO()
    # The shell attaches its log handlers to the root logger on every run.
    logging.getLogger().handlers.clear()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = shell.main(argv)
        except SystemExit as exc:  # argparse errors and --help
            rc = exc.code if isinstance(exc.code, int) else 1
    return {'rc': rc, 'stdout': out.getvalue(), 'stderr': err.getvalue()}


def main():
    sys.argv[0] = 'openstack'  # as usage messages name the program
    answers = sys.stdout
    for line in sys.stdin:
        answers.write(json.dumps(run(json.loads(line))) + '\n')
        answers.flush()


if __name__ == '__main__':
    main()
