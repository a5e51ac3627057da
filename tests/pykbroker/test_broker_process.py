"""BrokerProcess: the port free_port() picked may be taken by another socket before the broker binds it (the
console's SCRAM test lost such a race in a fresh-clone run, before free_port() reserved its ports; a server that
binds that very port with SO_REUSEADDR still can); the first start then moves to another free port, while a port
the caller gave stays and its loss is reported at once. A stopped broker's port is held for its restart, and a
restart whose port another server took fails instead of taking that server's answers for its own."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from pykbroker.testing import BrokerProcess, RawClient
from tests.pykbroker.port_helpers import foreign_server, hold_port
from wire import ErrorCode
from wire.messages import ApiVersionsRequest


def test_a_first_start_whose_free_port_was_taken_meanwhile_starts_on_another(tmp_path):
    b = BrokerProcess(tmp_path / "b")
    taken = b.port
    with hold_port(taken), b:
        assert b.port != taken
        with RawClient(b.bootstrap) as c:
            assert c.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        assert f"127.0.0.1:{taken} is already in use" in b.log()


def test_a_given_port_taken_fails_the_start_as_soon_as_the_broker_exits(tmp_path):
    with hold_port(0) as held:
        port = held.getsockname()[1]
        b = BrokerProcess(tmp_path / "b", port=port)
        started = time.monotonic()
        with pytest.raises(RuntimeError, match=f"127.0.0.1:{port} is already in use"):
            b.start(timeout=60)
    assert time.monotonic() - started < 50  # the broker's exit ends the wait, not the timeout
    assert b.port == port and not b.alive


def test_a_stopped_brokers_port_is_held_for_its_restart(tmp_path):
    with BrokerProcess(tmp_path / "b") as b:
        b.stop()
        with pytest.raises(OSError), socket.socket() as s:  # as another process's bind(0) or connect(): refused
            s.bind(("127.0.0.1", b.port))
        b.start()
        with RawClient(b.bootstrap) as c:
            assert c.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE


def test_a_restart_whose_port_another_server_took_fails_instead_of_using_that_server(tmp_path):
    """Another server that answers ApiVersions on the port (it bound it while the broker was down) is not this
    broker: the restart must fail, not hand the test a foreign broker (with other topics and groups)."""
    b = BrokerProcess(tmp_path / "b").start()
    try:
        b.kill()
        with foreign_server(b.port, lambda request: struct.pack(">ii", 4, 0)):
            with pytest.raises(RuntimeError, match=f"127.0.0.1:{b.port} is already in use"):
                b.start()
        assert not b.alive
    finally:
        b.close()


def test_listeners_on_port_0_are_read_back_and_bound_again_by_a_restart(tmp_path):
    """No port is picked before the broker binds it: every listener binds port 0, BrokerProcess reads the ports
    from the broker's log, and a restart binds the same ones (clients know them)."""
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"}
    with BrokerProcess(tmp_path / "b", port=0, overrides=overrides) as b:
        addresses = (b.bootstrap, b.address("PLAINTEXT"), b.address("OTHER"))
        assert b.port != 0 and addresses[0] == addresses[1] != addresses[2]
        b.restart()
        assert (b.bootstrap, b.address("PLAINTEXT"), b.address("OTHER")) == addresses
        for address in addresses[1:]:
            with RawClient(address) as c:
                assert c.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
