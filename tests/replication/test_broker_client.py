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
        assert client._idle_timer is not None
        first_close = client._idle_timer.when()
        await asyncio.sleep(0.1)
        r = await client.request(ApiVersionsRequest(), 0, ApiVersionsResponse)  # use rearms the idle timer
        # the close moves to 0.3 s after this use; read from the timer, as "still connected 0.2 s later" is not
        # deterministic: a loop stalled past both the sleep's end and the close runs the close first
        assert client._idle_timer is not None and client.connected
        assert client._idle_timer.when() >= client.last_used + 0.3 and client._idle_timer.when() > first_close
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


def test_a_channel_has_its_own_connection_so_its_requests_never_queue_behind_another_channels(broker):
    """As Kafka's inter-broker senders have a NetworkClient each: a transaction check to a broker does not wait
    for a WriteTxnMarkers in flight to it (which waits for acks=all appends)."""
    host, port = broker.bootstrap.rsplit(":", 1)

    async def scenario() -> None:
        pool = BrokerClientPool(9, lambda node: (host, int(port)))
        markers = pool.get(1, "txn-markers")
        await markers.request(ApiVersionsRequest(), 0, ApiVersionsResponse)
        async with markers._lock:  # as if a WriteTxnMarkers to broker 1 were in flight
            async with asyncio.timeout(10):
                r = await pool.get(1, "txn-verification").request(ApiVersionsRequest(), 0, ApiVersionsResponse)
        assert r.error_code == ErrorCode.NONE
        assert pool.get(1, "txn-markers") is markers and pool.get(1) is not markers
        assert pool.open_connections() == [1, 1]
        await _wait_for(lambda: _established_to(broker) == 2)
        pool.close()

    asyncio.run(scenario())


def _served_by(peer: dict[int, tuple[int, int]]):
    """A peer speaking Kafka's wire protocol that serves the given (api key -> version range) alone: it answers
    ApiVersions and WriteTxnMarkers (no partition of its own: every partition UNKNOWN_TOPIC_OR_PARTITION), and
    records every (api key, version) it receives."""
    from wire import Reader, Writer, decode_request_header, encode_response_header, response_header_version
    from wire.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
    from wire.messages.api_versions_response import ApiVersion
    from wire.messages.write_txn_markers_response import (
        WritableTxnMarkerPartitionResult,
        WritableTxnMarkerResult,
        WritableTxnMarkerTopicResult,
    )

    received: list[tuple[int, int]] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = int.from_bytes(await reader.readexactly(4), "big")
                r = Reader(await reader.readexactly(size))
                header = decode_request_header(r)
                received.append((header.request_api_key, header.request_api_version))
                body = r.buf[r.pos:]
                if header.request_api_key == ApiVersionsRequest.API_KEY:
                    response = ApiVersionsResponse(error_code=0, throttle_time_ms=0, api_keys=[
                        ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in peer.items()])
                else:
                    request = WriteTxnMarkersRequest.decode(body, header.request_api_version)
                    response = WriteTxnMarkersResponse(markers=[WritableTxnMarkerResult(
                        producer_id=m.producer_id, topics=[WritableTxnMarkerTopicResult(name=t.name, partitions=[
                            WritableTxnMarkerPartitionResult(partition_index=p, error_code=3)
                            for p in t.partition_indexes]) for t in m.topics]) for m in request.markers])
                w = Writer()
                encode_response_header(w, header.correlation_id,
                                       response_header_version(header.request_api_key, header.request_api_version))
                response.encode_into(w, header.request_api_version)
                frame = w.getvalue()
                writer.write(len(frame).to_bytes(4, "big") + frame)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    return serve, received


def test_a_request_goes_at_the_highest_version_both_brokers_serve(broker):
    """Kafka's NetworkClient negotiation: WriteTxnMarkers v2 (KIP-1228) to a broker serving it, v1 to one that
    serves only v1 (Kafka before 4.3), the peer's ApiVersions asked once per connection; no common version is
    UnsupportedVersionError."""
    from replication.broker_client import UnsupportedVersionError
    from wire.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
    from wire.messages.write_txn_markers_request import WritableTxnMarker, WritableTxnMarkerTopic

    host, port = broker.bootstrap.rsplit(":", 1)
    marker = WriteTxnMarkersRequest(markers=[WritableTxnMarker(
        producer_id=7, producer_epoch=1, transaction_result=True, coordinator_epoch=0, transaction_version=2,
        topics=[WritableTxnMarkerTopic(name="none", partition_indexes=[0])])])

    async def scenario() -> None:
        client = BrokerClient(1, host, int(port), client_id="broker-9")
        assert await client.usable_version(WriteTxnMarkersRequest) == 2
        client.close()
        for served, expected in (((1, 1), 1), ((1, 2), 2), ((1, 5), 2)):
            serve, received = _served_by({18: (0, 4), 27: served})
            server = await asyncio.start_server(serve, "127.0.0.1", 0)
            peer_port = server.sockets[0].getsockname()[1]
            client = BrokerClient(2, "127.0.0.1", peer_port, client_id="broker-9")
            for _ in range(2):
                version = await client.usable_version(WriteTxnMarkersRequest)
                answer = await client.request(marker, version, WriteTxnMarkersResponse)
                assert answer.markers[0].topics[0].partitions[0].error_code == 3
            assert received == [(18, 3), (27, expected), (27, expected)], served
            client.close()
            server.close()
        serve, _ = _served_by({18: (0, 4)})
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        client = BrokerClient(3, "127.0.0.1", server.sockets[0].getsockname()[1], client_id="broker-9")
        try:
            await client.usable_version(WriteTxnMarkersRequest)
            raise AssertionError("a peer without WriteTxnMarkers was given a version")
        except UnsupportedVersionError as exc:
            assert "serves WriteTxnMarkersRequest at no version" in str(exc)
        client.close()
        server.close()

    asyncio.run(scenario())
