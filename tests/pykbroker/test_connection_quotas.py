"""max.connections and max.connection.creation.rate, over real sockets against a real broker process
(max.connections.per.ip is in test_connection.py)."""

from __future__ import annotations

import socket
import time

import pytest

from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode
from wire.messages import ApiVersionsRequest


def _answers_within(client: RawClient, timeout: float) -> bool:
    client.send(ApiVersionsRequest(), 0)
    client.sock.settimeout(timeout)
    try:
        client.recv_frame()
        return True
    except TimeoutError:
        return False


def test_max_connections_holds_new_connections_until_one_closes(tmp_path):
    """As Kafka's Acceptor: at max.connections the next client waits in the backlog, served once a slot frees."""
    with BrokerProcess(tmp_path, overrides={"max.connections": "3"}) as b:
        open_ = [RawClient(b.bootstrap) for _ in range(3)]
        for c in open_:
            assert c.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        waiting = RawClient(b.bootstrap)  # the kernel completes the handshake; the broker does not accept yet
        assert not _answers_within(waiting, 1.0)
        open_.pop().close()
        waiting.sock.settimeout(10)
        waiting.recv_frame()  # the request sent while waiting is answered once accepted
        assert waiting.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        for c in [*open_, waiting]:
            c.close()
        assert b.alive
        assert "max.connections reached on listener PLAINTEXT" in b.log()


def test_listener_max_connections_applies_to_its_listener(tmp_path):
    """listener.name.X.max.connections: a per-listener limit below the broker-wide one."""
    with BrokerProcess(tmp_path, overrides={"listener.name.plaintext.max.connections": "1"}) as b:
        with RawClient(b.bootstrap) as first:
            assert first.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
            with RawClient(b.bootstrap) as second:
                assert not _answers_within(second, 1.0)
        assert b.alive


def test_max_connection_creation_rate_paces_accepts(tmp_path):
    """A burst of 40 connections against a rate of 10/s (2 windows of 1 s): Kafka's Rate lets the first ones
    in at once and throttles the rest, so the last is served only seconds later (without the limit: about
    0.1 s here). The throttle is a lower bound a loaded machine only lengthens, so no upper one is asserted."""
    with BrokerProcess(tmp_path, overrides={"quota.window.num": "2", "quota.window.size.seconds": "1",
                                            "max.connection.creation.rate": "10"}) as b:
        started = time.monotonic()
        clients = [RawClient(b.bootstrap, timeout=60) for _ in range(40)]
        for c in clients:
            assert c.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        paced = time.monotonic() - started
        for c in clients:
            c.close()
        assert b.alive
    assert paced > 2.0, paced


def test_a_connection_storm_is_served_with_bounded_memory(tmp_path):
    """1,000 connections open at once (each sends one request), then all served; resident memory stays small."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1100:
        pytest.skip(f"at most {hard} open files allowed here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))  # the broker inherits it
    with BrokerProcess(tmp_path) as b:
        host, port = b.bootstrap.rsplit(":", 1)
        socks = [socket.create_connection((host, int(port)), timeout=30) for _ in range(1000)]
        try:
            clients = []
            for s in socks:
                c = RawClient.__new__(RawClient)
                c.sock, c.client_id, c._correlation_id = s, "storm", 0
                c.send(ApiVersionsRequest(), 0)
                clients.append(c)
            for c in clients:
                c.recv_frame()
            rss_mb = _rss_mb(b.proc.pid)
        finally:
            for s in socks:
                s.close()
        assert b.alive
        assert rss_mb < 250, rss_mb


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_the_inter_broker_listener_is_exempt_from_the_broker_wide_limit(tmp_path):
    """With two listeners, max.connections blocks the client listener but not the inter-broker one (Kafka's
    protected listener), so followers can always connect."""
    from pykbroker.testing import free_port

    client_port = free_port()
    overrides = {"listeners": f"PLAINTEXT://127.0.0.1:{{port}},CLIENT://127.0.0.1:{client_port}",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT",
                 "inter.broker.listener.name": "PLAINTEXT", "max.connections": "2"}
    broker = BrokerProcess(tmp_path)
    overrides["listeners"] = overrides["listeners"].format(port=broker.port)
    broker.overrides.update(overrides)
    with broker:
        clients = [RawClient(f"127.0.0.1:{client_port}") for _ in range(2)]
        for c in clients:
            assert c.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        with RawClient(f"127.0.0.1:{client_port}") as blocked:
            assert not _answers_within(blocked, 1.0)
            with RawClient(broker.bootstrap) as follower:  # the inter-broker listener
                assert follower.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        for c in clients:
            c.close()
        assert broker.alive


def _connect_from(bootstrap: str, source: str) -> RawClient:
    host, port = bootstrap.rsplit(":", 1)
    c = RawClient.__new__(RawClient)
    c.sock = socket.create_connection((host, int(port)), timeout=10, source_address=(source, 0))
    c.client_id, c._correlation_id = "ip-rate", 0
    return c


def _served(c: RawClient) -> bool:
    """Answered (True), or closed unanswered by the broker (False); a socket held past a minute fails the test
    (a throttled one is closed after at most one quota window)."""
    c.send(ApiVersionsRequest(), 0)
    c.sock.settimeout(60)
    try:
        c.recv_frame()
        return True
    except TimeoutError:
        raise AssertionError("neither answered nor closed within 60 s") from None
    except (ConnectionError, EOFError, OSError):
        return False


def _set_ip_rate(c: RawClient, ip: str | None, rate: float | None) -> None:
    from wire.messages import AlterClientQuotasRequest
    from wire.messages.alter_client_quotas_request import EntityData, EntryData, OpData

    r = c.request(AlterClientQuotasRequest(entries=[EntryData(
        entity=[EntityData(entity_type="ip", entity_name=ip)],
        ops=[OpData(key="connection_creation_rate", value=rate or 0.0, remove=rate is None)])]), 1)
    assert [e.error_code for e in r.entries] == [ErrorCode.NONE], [e.error_message for e in r.entries]


def test_an_ip_connection_creation_rate_quota_throttles_that_address_only(tmp_path):
    """KIP-612: with connection_creation_rate 1 on 127.0.0.1 (2 windows of 2 s, so the rate is measured over 2 s
    at least), a burst of 10 connections from it gets 2 served; the others are held unanswered and then closed,
    as Kafka's DelayedCloseSocket. Another address is served throughout; removing the quota lifts the throttle.
    The burst's accepts may spread over up to 3 s (a descheduled broker) and still see the rate over 1/s."""
    overrides = {"quota.window.num": "2", "quota.window.size.seconds": "2"}
    with BrokerProcess(tmp_path, overrides=overrides) as b:
        with _connect_from(b.bootstrap, "127.0.0.2") as admin:  # not counted in 127.0.0.1's rate
            _set_ip_rate(admin, "127.0.0.1", 1)
        burst = [_connect_from(b.bootstrap, "127.0.0.1") for _ in range(10)]
        others = [_connect_from(b.bootstrap, "127.0.0.2") for _ in range(10)]
        assert all(_served(c) for c in others)
        served = [_served(c) for c in burst]  # a held socket is closed, not kept (_served waits up to a minute)
        assert served.count(True) == 2, served
        for c in burst + others:
            c.sock.close()
        with _connect_from(b.bootstrap, "127.0.0.2") as admin:
            _set_ip_rate(admin, "127.0.0.1", None)
        assert all(_served(_connect_from(b.bootstrap, "127.0.0.1")) for _ in range(10))
        assert b.alive


def _closed_by_broker(c: RawClient, timeout: float = 10.0) -> bool:
    """The broker closed ``c`` (EOF) within ``timeout``, without ``c`` sending anything."""
    c.sock.settimeout(timeout)
    try:
        return c.sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def test_the_inter_broker_listener_going_over_max_connections_closes_another_listeners_lru_connection(tmp_path):
    """Kafka's closeExcessConnections: when the inter-broker listener takes the broker past max.connections, the
    least recently used connection of another listener is closed; the others keep being served."""
    from pykbroker.testing import free_port

    client_port = free_port()
    broker = BrokerProcess(tmp_path)
    broker.overrides.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{broker.port},CLIENT://127.0.0.1:{client_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT", "max.connections": "2"})
    with broker:
        oldest, recent = RawClient(f"127.0.0.1:{client_port}"), RawClient(f"127.0.0.1:{client_port}")
        assert oldest.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        time.sleep(0.05)
        assert recent.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        with RawClient(broker.bootstrap) as follower:
            assert follower.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
            assert _closed_by_broker(oldest)
            assert recent.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
            assert follower.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        oldest.close()
        recent.close()
        assert "closing the least recently used connection from 127.0.0.1" in broker.log()


def test_lowering_max_connections_closes_the_least_recently_used_connections(tmp_path):
    """A dynamic max.connections below the open count closes the excess, least recently used first (Kafka's
    processors check maxConnectionsExceeded on every poll)."""
    from wire.messages import IncrementalAlterConfigsRequest
    from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource

    with BrokerProcess(tmp_path) as b:
        clients = [RawClient(b.bootstrap) for _ in range(3)]
        for c in clients:
            assert c.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
            time.sleep(0.05)
        with RawClient(b.bootstrap) as admin:
            r = admin.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
                resource_type=4, resource_name="", configs=[AlterableConfig(
                    name="max.connections", config_operation=0, value="2")])]), 1)
            assert [x.error_code for x in r.responses] == [ErrorCode.NONE]
            # Four open, two allowed: the two least recently used client connections go, the admin stays.
            assert _closed_by_broker(clients[0]) and _closed_by_broker(clients[1])
            assert clients[2].request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
            assert admin.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        for c in clients:
            c.close()
        assert b.alive
