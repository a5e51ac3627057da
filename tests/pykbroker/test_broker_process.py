"""BrokerProcess: the port free_port() picked may be taken by another socket before the broker binds it (the
console's SCRAM test lost such a race in a fresh-clone run, before free_port() reserved its ports; a server that
binds that very port with SO_REUSEADDR still can); the first start then moves to another free port, while a port
the caller gave stays and its loss is reported at once."""

from __future__ import annotations

import socket
import time

import pytest

from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode
from wire.messages import ApiVersionsRequest


def _hold(port: int) -> socket.socket:
    """A listening socket on ``port``, as another process that got it first (SO_REUSEADDR: as a server binding
    it, which free_port()'s reservation lets through)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen()
    return s


def test_a_first_start_whose_free_port_was_taken_meanwhile_starts_on_another(tmp_path):
    b = BrokerProcess(tmp_path / "b")
    taken = b.port
    with _hold(taken), b:
        assert b.port != taken
        with RawClient(b.bootstrap) as c:
            assert c.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        assert f"127.0.0.1:{taken} is already in use" in b.log()


def test_a_given_port_taken_fails_the_start_as_soon_as_the_broker_exits(tmp_path):
    with _hold(0) as held:
        port = held.getsockname()[1]
        b = BrokerProcess(tmp_path / "b", port=port)
        started = time.monotonic()
        with pytest.raises(RuntimeError, match=f"127.0.0.1:{port} is already in use"):
            b.start(timeout=60)
    assert time.monotonic() - started < 50  # the broker's exit ends the wait, not the timeout
    assert b.port == port and not b.alive
