"""The fault-injecting proxy on real loopback sockets: bytes flow, a cut holds them one way or both, a heal
delivers them intact, and a connection is told apart by the process that opened it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest

from chaos.network import CLIENT, Network
from tests.chaos.helpers import wait_until


@pytest.fixture
def echo():
    """An echo server; ``received`` collects what it was sent."""
    server = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def serve(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                received.append(data)
                conn.sendall(data)

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1], received
    server.close()


@pytest.fixture
def network():
    with Network() as net:
        yield net


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, "closed"
        out += chunk
    return out


def test_bytes_flow_until_a_cut_and_resume_intact_at_the_heal(echo, network):
    port, _ = echo
    proxy = network.proxy("echo", port, source="a")
    with socket.create_connection(("127.0.0.1", proxy), timeout=5) as s:
        s.sendall(b"one")
        assert recv_exactly(s, 3) == b"one"
        network.cut("a", "echo", both=True)
        s.sendall(b"two")
        s.settimeout(0.5)
        with pytest.raises(TimeoutError):
            s.recv(10)
        network.heal()
        s.settimeout(5)
        assert recv_exactly(s, 3) == b"two"
    assert network.accepted == [("a", "echo")]


def test_a_one_way_cut_delivers_requests_but_holds_answers(echo, network):
    port, received = echo
    proxy = network.proxy("echo", port, source="a")
    with socket.create_connection(("127.0.0.1", proxy), timeout=5) as s:
        network.cut("echo", "a")
        s.sendall(b"ping")
        # it gets there (in the proxy process' own time: on a loaded machine not always within the half second the
        # test once gave it); only the answer, sent back at once, is held
        wait_until(lambda: b"".join(received) == b"ping", 30, "the request never reached the upstream")
        s.settimeout(0.5)
        with pytest.raises(TimeoutError):
            s.recv(10)
        network.heal()
        s.settimeout(5)
        assert recv_exactly(s, 4) == b"ping"


def test_a_connection_opened_during_a_cut_is_held_until_the_heal(echo, network):
    port, _ = echo
    proxy = network.proxy("echo", port, source="a")
    network.cut("a", "echo")
    with socket.create_connection(("127.0.0.1", proxy), timeout=5) as s:
        s.sendall(b"late")
        s.settimeout(0.5)
        with pytest.raises(TimeoutError):
            s.recv(10)
        network.heal()
        s.settimeout(5)
        assert recv_exactly(s, 4) == b"late"


def test_the_source_is_the_process_owning_the_connecting_socket(echo, network):
    port, _ = echo
    proxy = network.proxy("echo", port, owners={os.getpid(): "me"})
    with socket.create_connection(("127.0.0.1", proxy), timeout=5) as s:
        s.sendall(b"x")
        assert recv_exactly(s, 1) == b"x"
    other = subprocess.Popen([sys.executable, "-c", "import socket,sys\n"
                              "s=socket.create_connection(('127.0.0.1',int(sys.argv[1])));s.sendall(b'y');"
                              "assert s.recv(1)==b'y'", str(proxy)])
    assert other.wait(30) == 0
    assert network.accepted == [("me", "echo"), (CLIENT, "echo")]


def test_an_upstream_that_is_down_closes_the_connection(network):
    with socket.create_server(("127.0.0.1", 0)) as gone:
        port = gone.getsockname()[1]
    proxy = network.proxy("echo", port, source="a")
    with socket.create_connection(("127.0.0.1", proxy), timeout=5) as s:
        assert s.recv(10) == b""


def test_a_pykbroker_under_the_root_is_named_by_the_node_id_in_its_properties_file(tmp_path):
    from chaos.network import candidates
    from pykbroker.testing import BrokerProcess

    with BrokerProcess(tmp_path / "root" / "b7", overrides={"node.id": "7"}) as broker:
        assert candidates(str(tmp_path / "root")) == {broker.proc.pid: "broker-7"}
