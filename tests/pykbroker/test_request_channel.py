"""queued.max.request.bytes and queued.max.requests: the pool and the queue alone, then a real broker
flooded with maximum-size frames."""

from __future__ import annotations

import struct
import time

import pytest

from pykbroker.config import Config, ConfigError
from pykbroker.request_channel import MemoryPool, RequestChannel
from pykbroker.testing import BrokerProcess, RawClient
from tests.pykbroker.test_connection_quotas import _answers_within, _rss_mb
from wire import ErrorCode, FrameReader
from wire.messages import ApiVersionsRequest, MetadataRequest


def test_memory_pool_is_non_strict_like_kafkas():
    """SimpleMemoryPool(strict=false): an allocation succeeds while anything is left, then nothing does."""
    pool = MemoryPool(100)
    assert pool.try_allocate(60) and pool.try_allocate(60)  # over by at most one request
    assert pool.available == -20 and not pool.try_allocate(1)
    woken = []
    pool.wait(lambda: woken.append(pool.try_allocate(10)))
    pool.release(10)  # still nothing left: nobody woken
    assert woken == []
    pool.release(60)
    assert woken == [True] and pool.used == 60 and pool.peak_used == 120


def test_request_channel_wakes_readers_in_order_when_room_frees():
    channel = RequestChannel(2, -1)
    channel.enqueue()
    channel.enqueue()
    assert channel.full
    woken = []
    channel.wait(lambda: woken.append("a"))
    channel.wait(lambda: woken.append("b"))
    channel.dequeue()
    assert woken == ["a", "b"] and not channel.full


def test_frame_reader_asks_the_pool_before_allocating():
    pool = MemoryPool(9000)
    reader = FrameReader(1 << 20, pool.try_allocate)
    reader.feed(struct.pack(">i", 9000) + b"x" * 100)
    assert reader.next_frame() is None and pool.used == 9000 and reader.held_bytes() == 9000
    reader.feed(b"x" * 8900 + struct.pack(">i", 8000) + b"y" * 10)
    assert len(reader.next_frame()) == 9000
    assert reader.next_frame() is None and reader.waiting_for_memory  # nothing left after 9000
    pool.release(9000)
    assert reader.next_frame() is None and not reader.waiting_for_memory and pool.used == 8000


def test_queued_max_request_bytes_must_cover_one_request():
    with pytest.raises(ConfigError, match="queued.max.request.bytes must be larger or equal to socket.request.max"):
        Config({"queued.max.request.bytes": "1000", "socket.request.max.bytes": "2000"})
    assert Config({"queued.max.request.bytes": "2000", "socket.request.max.bytes": "2000"})


def test_a_flood_of_maximum_size_frames_is_held_to_the_memory_pool(tmp_path):
    """16 clients each start a 16 MiB frame (socket.request.max.bytes) and send its body slowly; the pool
    (32 MiB) lets two (and at most one more) be allocated, the others wait unallocated, so the broker's
    resident memory stays near the pool; a small request waits too (memory pressure mutes every read, as
    in Kafka) and is answered once the big frames are dropped."""
    size = 16 << 20
    overrides = {"socket.request.max.bytes": str(size), "queued.max.request.bytes": str(2 * size)}
    with BrokerProcess(tmp_path, overrides=overrides) as b:
        base = _rss_mb(b.proc.pid)
        flood = [RawClient(b.bootstrap) for _ in range(16)]
        for c in flood:  # a Produce frame's header and the first 1 MiB of its body
            c.send_bytes(struct.pack(">ihhi", size, 0, 9, 1) + b"\x00" * (1 << 20))
        time.sleep(1.0)
        for c in flood:  # the rest of the bodies, as far as the broker reads them
            c.sock.setblocking(False)
            try:
                c.sock.send(b"\x00" * (8 << 20))
            except BlockingIOError:
                pass
        time.sleep(1.0)
        peak = _rss_mb(b.proc.pid) - base
        with RawClient(b.bootstrap) as small:
            assert not _answers_within(small, 1.0)
            for c in flood:
                c.close()
            small.sock.settimeout(10)
            small.recv_frame()
            assert small.request(MetadataRequest(topics=[]), 12).brokers
        assert b.alive
        assert peak < 3 * size / (1 << 20) + 40, f"{peak:.0f} MiB resident above idle for a 32 MiB pool"


def test_queued_max_requests_of_one_still_serves_pipelines_in_order(tmp_path):
    with BrokerProcess(tmp_path, overrides={"queued.max.requests": "1"}) as b:
        clients = [RawClient(b.bootstrap) for _ in range(4)]
        ids = {c: [c.send(ApiVersionsRequest(), 3) for _ in range(30)] for c in clients}
        for c, sent in ids.items():
            assert [struct.unpack_from(">i", c.recv_frame())[0] for _ in sent] == sent
            assert c.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
            c.close()
        assert b.alive
