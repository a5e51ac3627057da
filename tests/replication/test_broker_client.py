"""Connections from this broker to others, against a real broker process: requests answered in order, an
idle connection closed after connections.max.idle.ms and reopened on the next request, and the pool's bound
on open connections closing the least recently used idle one."""

from __future__ import annotations

import asyncio

from replication.broker_client import BrokerClient, BrokerClientPool
from wire import ErrorCode
from wire.messages import ApiVersionsRequest, ApiVersionsResponse


def _established_to(broker) -> int:
    """Established TCP connections to the broker's port (as the kernel lists them)."""
    port = int(broker.bootstrap.rsplit(":", 1)[1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in list(f)[1:]:
                fields = line.split()
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                if local_port == port and fields[3] == "01":  # ESTABLISHED, as seen from the broker's side
                    count += 1
    return count


async def _wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition never met"
        await asyncio.sleep(0.02)


def test_an_idle_connection_is_closed_and_reopened_on_the_next_request(broker):
    host, port = broker.bootstrap.rsplit(":", 1)

    async def scenario() -> None:
        client = BrokerClient(1, host, int(port), client_id="broker-9", max_idle_ms=300)
        r = await client.request(ApiVersionsRequest(), 0, ApiVersionsResponse)
        assert r.error_code == ErrorCode.NONE and client.connected
        await asyncio.sleep(0.1)
        r = await client.request(ApiVersionsRequest(), 0, ApiVersionsResponse)  # use rearms the idle timer
        await asyncio.sleep(0.2)
        assert client.connected  # 0.2 s after its last use: not idle long enough yet
        await _wait_for(lambda: not client.connected)
        await _wait_for(lambda: _established_to(broker) == 0)  # the broker saw the close
        r = await client.request(ApiVersionsRequest(), 0, ApiVersionsResponse)
        assert r.error_code == ErrorCode.NONE and client.connected
        client.close()

    asyncio.run(scenario())


def test_the_pool_closes_its_least_recently_used_connection_past_its_bound(broker):
    host, port = broker.bootstrap.rsplit(":", 1)

    async def scenario() -> None:
        pool = BrokerClientPool(9, lambda node: (host, int(port)), max_connections=2)
        for node in (1, 2):
            await pool.get(node).request(ApiVersionsRequest(), 0, ApiVersionsResponse)
        await pool.get(1).request(ApiVersionsRequest(), 0, ApiVersionsResponse)  # 2 is now the least recent
        assert pool.open_connections() == [2, 1]
        await pool.get(3).request(ApiVersionsRequest(), 0, ApiVersionsResponse)
        assert pool.open_connections() == [1, 3]
        await _wait_for(lambda: _established_to(broker) == 2)
        # A connection with a request in flight is never the one closed.
        slow = pool.get(1)
        async with slow._lock:  # as if a request to broker 1 were in flight
            await pool.get(4).request(ApiVersionsRequest(), 0, ApiVersionsResponse)
        assert pool.open_connections() == [1, 4]
        pool.close()

    asyncio.run(scenario())
