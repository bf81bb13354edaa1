"""A TCP proxy in front of a database server that fails the answer to a
COMMIT: the network going silent, or the connection dropping, at the
worst moment, after the server committed and before the client heard so.

``CommitFaultProxy(host, port)`` listens on 127.0.0.1 (``.port``). After
``stall_commits(seconds)``, the first answer that follows a client's
COMMIT on each connection is held back that long; after
``drop_commits()``, the connection is closed instead of answering;
after ``stall_statements(text, seconds)``, the answer to any statement
containing ``text`` is held back. Importable from any test module:
tests/ is on sys.path.
"""
import socket
import threading
import time

_CHUNK = 65536
# The answer to a COMMIT is dropped: the connection closes instead.
DROP = -1.0


def _is_commit(data):
    """The statement COMMIT (not READ COMMITTED): MySQL's packet ends
    with it, PostgreSQL's with it and a NUL."""
    return data.rstrip(b'\x00').upper().endswith(b'COMMIT')


class CommitFaultProxy:

    def __init__(self, host, port):
        self.target = (host, port)
        self._fault = None
        self._listener = socket.create_server(('127.0.0.1', 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def stall_commits(self, seconds):
        self._fault = (_is_commit, seconds)

    def drop_commits(self):
        self._fault = (_is_commit, DROP)

    def stall_statements(self, text, seconds):
        self._fault = (lambda data: text in data, seconds)

    def close(self):
        self._closed = True
        self._listener.close()

    def _accept(self):
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            committing = threading.Event()
            threading.Thread(target=self._pump, daemon=True, args=(
                client, server, committing, True)).start()
            threading.Thread(target=self._pump, daemon=True, args=(
                server, client, committing, False)).start()

    def _pump(self, source, sink, committing, from_client):
        try:
            while True:
                data = source.recv(_CHUNK)
                if not data:
                    break
                fault = self._fault
                if from_client:
                    if fault is not None and fault[0](data):
                        committing.set()
                elif committing.is_set():
                    committing.clear()
                    if fault[1] == DROP:
                        break
                    time.sleep(fault[1])
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            # Each socket is the source of one pump: closed once.
            source.close()
