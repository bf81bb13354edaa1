"""A TCP proxy in front of a database server that can hold back the
server's answer to a COMMIT: the network going silent at the worst
moment, after the server committed and before the client heard so.

``StallingProxy(host, port, stall)`` listens on 127.0.0.1 (``.port``);
after ``stall_commits()``, the first answer that follows a client's
COMMIT on each connection is held back ``stall`` seconds. Importable
from any test module: tests/ is on sys.path.
"""
import socket
import threading
import time

_CHUNK = 65536


class StallingProxy:

    def __init__(self, host, port, stall):
        self.target = (host, port)
        self.stall = stall
        self._stalling = threading.Event()
        self._listener = socket.create_server(('127.0.0.1', 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def stall_commits(self):
        self._stalling.set()

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
                if from_client:
                    # The statement COMMIT (not READ COMMITTED): MySQL's
                    # packet ends with it, PostgreSQL's with it and a NUL.
                    if self._stalling.is_set() and data.rstrip(
                            b'\x00').upper().endswith(b'COMMIT'):
                        committing.set()
                elif committing.is_set():
                    committing.clear()
                    time.sleep(self.stall)
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
