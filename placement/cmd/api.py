"""``placement-api``: serve the API from a single process, for development.

    placement-api [--host 127.0.0.1] [--port 8778] [-- --config-file FILE]

Options after ``--`` go to the configuration parser, so ``--config-file``
and ``--config-dir`` work as for the other commands; without them the
configuration comes from ``$OS_PLACEMENT_CONFIG_DIR`` or oslo.config's
standard locations, as for ``placement.wsgi.api``. Use a real WSGI server
(e.g. gunicorn with ``placement.wsgi.api:application``) in production.

Each request is logged once, by the service's own request log
(``placement.requestlog``): werkzeug's access line, which repeated it with
terminal colour codes, is left out; werkzeug still logs malformed requests
and errors. oslo.log's ``log_color`` only applies when the log goes to a
terminal, so that a log redirected to a file holds no escape sequences.
"""
import argparse
from collections.abc import Sequence
import sys

from werkzeug import serving

from placement import conf as placement_conf
from placement import operator_errors
from placement.api import service

DEFAULT_HOST = '127.0.0.1'
DEFAULT_PORT = 8778


def _parse(argv):
    parser = argparse.ArgumentParser(
        prog='placement-api',
        description='Serve the placement API with a development server.',
        usage='%(prog)s [-h] [--host IP] [--port PORT] '
              '[-- --config-file FILE ...]')
    parser.add_argument('--host', '-b', default=DEFAULT_HOST,
                        help='address to listen on (default: %(default)s)')
    parser.add_argument('--port', '-p', type=int, default=DEFAULT_PORT,
                        help='TCP port to listen on (default: %(default)s)')
    parser.add_argument('config_args', nargs=argparse.REMAINDER,
                        help='after "--": configuration options such as '
                             '--config-file')
    args = parser.parse_args(argv)
    if args.config_args and args.config_args[0] == '--':
        args.config_args = args.config_args[1:]
    elif args.config_args:
        parser.error('unrecognized arguments: %s'
                     % ' '.join(args.config_args))
    return args


class RequestHandler(serving.WSGIRequestHandler):
    """werkzeug's handler without its access line: the request log of the
    application has one line per request already."""

    def log_request(self, code: int | str = '-',
                    size: int | str = '-') -> None:
        pass


def _no_colour_unless_terminal(conf):
    """Turn ``log_color`` off when oslo.log's stream (stderr with
    ``use_stderr``, stdout otherwise) is no terminal; a log file never has
    colour."""
    stream = sys.stderr if conf.use_stderr else sys.stdout
    if conf.log_color and not stream.isatty():
        conf.set_override('log_color', False)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    try:
        conf = placement_conf.load_config(argv=args.config_args)
    except Exception as exc:
        if not operator_errors.report(
                'placement-api', exc,
                operator_errors.debug_asked(args.config_args)):
            raise
        return 1
    _no_colour_unless_terminal(conf)
    try:
        application = service.build_application(conf)
    except service.StartupError:
        # Its line is logged (CRITICAL).
        return 1
    server = serving.make_server(args.host, args.port, application,
                                 threaded=True,
                                 request_handler=RequestHandler)
    print('placement-api (development server, not for production) '
          'listening on http://%s:%d/' % (args.host, server.server_port),
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
