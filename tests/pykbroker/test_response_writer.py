"""A client that does not read its responses: muted, its response held to a chunk in memory, closed after
connections.max.idle.ms without progress (as Kafka's idle expiry), while other clients are served."""

from __future__ import annotations

import socket
import time

from pykbroker.testing import BrokerProcess, RawClient
from tests.pykbroker.test_connection import _fetch_request, _produce_batches
from tests.pykbroker.test_connection_quotas import _rss_mb
from wire import ErrorCode, build_simple_batch
from wire.messages import ApiVersionsRequest


def test_a_client_that_never_reads_is_closed_and_does_not_hold_its_fetches_in_memory(tmp_path):
    topic = "hog"
    values = [bytes([i % 251]) * 4096 for i in range(4096)]  # 16 MiB
    batches = [build_simple_batch(values[i:i + 128], timestamp=1_700_000_000_000) for i in range(0, 4096, 128)]
    with BrokerProcess(tmp_path, overrides={"connections.max.idle.ms": "3000"}) as b:
        with RawClient(b.bootstrap) as c:
            c.wait_for_topics(topic, auto_create=True)
            _produce_batches(c, topic, batches)
        base = _rss_mb(b.proc.pid)
        hog = RawClient(b.bootstrap)
        hog.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        for _ in range(20):  # 20 fetches of 16 MiB each, never read
            hog.send(_fetch_request(topic, 32 << 20), 12)
        started = time.monotonic()
        latencies = []
        with RawClient(b.bootstrap) as other:
            while time.monotonic() - started < 2.5:  # the others are served meanwhile
                t = time.perf_counter()
                assert other.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
                latencies.append(time.perf_counter() - t)
                time.sleep(0.01)
            held = _rss_mb(b.proc.pid) - base
        assert _drained_to_close(hog, timeout=10)
        closed_after = time.monotonic() - started
        hog.close()
        assert b.alive
    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99)]
    assert p99 < 0.5, f"p99 {p99 * 1000:.0f} ms beside the hog (bench/hostile_bench.py measures it properly)"
    assert held < 40, f"{held:.0f} MiB held for a client that reads nothing (its fetches are 320 MiB)"
    assert 2.5 < closed_after < 10, closed_after


def _drained_to_close(client: RawClient, timeout: float) -> bool:
    """Read whatever the kernel still holds, until the broker's close (EOF or reset) or ``timeout``."""
    client.sock.settimeout(timeout)
    try:
        while client.sock.recv(1 << 20):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
