"""Helpers shared by the tests of pykbroker.testing's ports: another process's socket on a test server's port."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator


def hold_port(port: int) -> socket.socket:
    """A listening socket on ``port`` (0: any), as another process that got it first (SO_REUSEADDR: as a server
    binding it, which free_port()'s reservation lets through)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen()
    return s


@contextlib.contextmanager
def foreign_server(port: int, answer: Callable[[bytes], bytes]) -> Iterator[None]:
    """Another server on ``port``: each connection's first bytes get ``answer(them)``, then the connection closes
    (enough to answer a readiness probe: an ApiVersions request, a ZooKeeper four-letter word)."""
    with hold_port(port) as listener:
        listener.settimeout(0.1)
        stop = threading.Event()

        def serve() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                with conn:
                    conn.settimeout(5)
                    try:
                        conn.sendall(answer(conn.recv(4096)))
                    except OSError:
                        pass

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
