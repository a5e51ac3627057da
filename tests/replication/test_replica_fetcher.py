"""Replica fetching over a real socket: a real broker (in this process) leads, a follower replica manager
fetches with the Fetch API, completes acks=all produces, takes the high watermark, and truncates a log
that diverged from the leader's (diverging epoch in the fetch answer) before copying the rest."""

from __future__ import annotations

import asyncio
import socket
import uuid

import pytest

from pykbroker.config import Config
from pykbroker.server import Server
from replication.metadata_image import PartitionState
from replication.replica_fetcher import FetcherConfig, ReplicaFetcherManager
from replication.replica_manager import ReplicaManager
from storage import LogConfig, LogManager
from wire import ErrorCode, build_simple_batch, decode_records, iter_batch_headers

TOPIC = "rep"


def batch(*values: bytes) -> bytes:
    return build_simple_batch(list(values), timestamp=1_700_000_000_000)


def records_of(log) -> list[tuple[int, int, bytes]]:
    """(offset, leader epoch, value) of every record in ``log``."""
    data = log.read(0, 1 << 24, max_offset=log.log_end_offset, min_one_message=True).records
    raw = data if isinstance(data, bytes) else data.read_bytes()
    out = []
    for pos, header in iter_batch_headers(raw):
        _, records = decode_records(raw, pos)
        out += [(header.base_offset + r.offset_delta, header.partition_leader_epoch, r.value) for r in records]
    return out


async def until(condition, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


class Pair:
    """Broker 1 (a real server) leading ``rep-0`` with replicas [1, 2]; broker 2 a follower replica manager."""

    def __init__(self, tmp_path) -> None:
        self.tmp_path = tmp_path

    async def __aenter__(self) -> Pair:
        self.server = Server(Config({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1",
                                     "log.dirs": str(self.tmp_path / "leader")}))
        await self.server.start()
        self.leader = self.server.broker
        port = self.leader.bound_listeners["PLAINTEXT"].port
        self.topic = await self.leader.metadata.create_topic(TOPIC, [[1, 2]], {})
        manager = LogManager([str(self.tmp_path / "follower")], default_config=LogConfig(), log_cleaner_enable=False)
        manager.startup(lambda _topic: LogConfig())
        self.follower = ReplicaManager(manager, 2)
        self.fetchers = ReplicaFetcherManager(2, self.follower.get_partition, lambda node: ("127.0.0.1", port),
                                              FetcherConfig(max_wait_ms=100, backoff_ms=50))
        return self

    async def __aexit__(self, *exc) -> None:
        await self.fetchers.close()
        await self.follower.close()
        self.follower.log_manager.shutdown()
        await self.server.stop()

    def leader_log(self):
        return self.leader.replica_manager.get_partition(TOPIC, 0).log

    def follower_log(self):
        return self.follower.get_partition(TOPIC, 0).log

    def follow(self, leader_epoch: int) -> None:
        self.follower.become_follower(TOPIC, 0, self.topic.topic_id, 1, leader_epoch, [1, 2], [1, 2], LogConfig())
        self.fetchers.follow(TOPIC, 0, 1)


def test_a_follower_copies_the_log_and_acks_all_waits_for_it(tmp_path):
    async def scenario() -> None:
        async with Pair(tmp_path) as pair:
            leader_rm = pair.leader.replica_manager
            first = await leader_rm.append_records({(TOPIC, 0): batch(b"a", b"b")}, 1, 1000)
            assert first[(TOPIC, 0)].error_code == ErrorCode.NONE
            assert pair.leader_log().high_watermark == 0  # broker 2 is in the ISR and has fetched nothing
            pair.follow(leader_epoch=0)
            acked = await leader_rm.append_records({(TOPIC, 0): batch(b"c")}, -1, 5000)
            assert acked[(TOPIC, 0)].error_code == ErrorCode.NONE and acked[(TOPIC, 0)].base_offset == 2
            assert pair.leader_log().high_watermark == 3
            await until(lambda: pair.follower_log().high_watermark == 3)
            assert records_of(pair.follower_log()) == records_of(pair.leader_log()) == [
                (0, 0, b"a"), (1, 0, b"b"), (2, 0, b"c")]

    asyncio.run(scenario())


def test_a_diverged_follower_truncates_to_the_leaders_epoch_end_then_copies(tmp_path):
    async def scenario() -> None:
        async with Pair(tmp_path) as pair:
            leader_rm = pair.leader.replica_manager
            # Broker 2 led epoch 0 and wrote x0-x4 in two batches; broker 1 had copied the first when it took over
            # (an epoch always ends on a batch boundary: followers copy the leader's batches as they are).
            await leader_rm.append_records({(TOPIC, 0): batch(b"x0", b"x1", b"x2")}, 1, 1000)
            pair.follower.become_leader(TOPIC, 0, pair.topic.topic_id, 0, [2], [2], LogConfig())
            await pair.follower.append_records({(TOPIC, 0): batch(b"x0", b"x1", b"x2")}, 1, 1000)
            await pair.follower.append_records({(TOPIC, 0): batch(b"x3", b"x4")}, 1, 1000)
            # Broker 1 leads epoch 1 from offset 3 and writes d, e there.
            state = pair.leader.metadata.image.partition(TOPIC, 0)
            assert await pair.leader.metadata.alter_partition(TOPIC, 0, PartitionState(
                0, 1, 1, state.replicas, state.isr, state.partition_epoch + 1))
            await leader_rm.append_records({(TOPIC, 0): batch(b"d", b"e")}, 1, 1000)
            pair.follow(leader_epoch=1)  # broker 2 comes back as a follower: x3 and x4 must go
            expected = [(0, 0, b"x0"), (1, 0, b"x1"), (2, 0, b"x2"), (3, 1, b"d"), (4, 1, b"e")]
            await until(lambda: records_of(pair.follower_log()) == expected)
            assert records_of(pair.leader_log()) == expected
            await until(lambda: pair.leader_log().high_watermark == 5 and pair.follower_log().high_watermark == 5)

    asyncio.run(scenario())


def test_a_fetcher_closed_just_as_its_partitions_change_stops(tmp_path):
    """The broker closes its fetchers at shutdown right after controlled shutdown changed what they follow: the
    cancel must not be lost to the wake-up (Python 3.11's wait_for swallowed it, and close() never returned)."""
    async def scenario() -> None:
        manager = LogManager([str(tmp_path / "follower")], default_config=LogConfig(), log_cleaner_enable=False)
        manager.startup(lambda _topic: LogConfig())
        follower = ReplicaManager(manager, 2)
        with socket.socket() as closed:  # a leader nobody listens for: every fetch fails and backs off
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]
        fetchers = ReplicaFetcherManager(2, follower.get_partition, lambda node: ("127.0.0.1", port),
                                         FetcherConfig(backoff_ms=30_000))
        try:
            for partition in (0, 1):
                follower.become_follower(TOPIC, partition, uuid.uuid4(), 1, 0, [1, 2], [1, 2], LogConfig())
                fetchers.follow(TOPIC, partition, 1)
            fetcher = fetchers.fetchers[1]
            await until(lambda: fetcher._failures >= 1)  # now waiting out the backoff
            await asyncio.sleep(0.05)
            fetchers.unfollow(TOPIC, 1)  # wakes the fetcher ...
            closing = asyncio.ensure_future(fetchers.close())  # ... as it is cancelled
            done, _ = await asyncio.wait([closing], timeout=5)
            assert done, "the fetcher ran on after it was cancelled"
        finally:
            await follower.close()
            manager.shutdown()

    asyncio.run(scenario())



def test_a_caller_cancelled_while_closing_a_fetcher_stays_cancelled(tmp_path):
    """close() waits for the fetcher's task; a cancel aimed at close()'s own caller meanwhile is passed on, not
    swallowed with the task's."""
    async def scenario() -> None:
        manager = LogManager([str(tmp_path / "follower")], default_config=LogConfig(), log_cleaner_enable=False)
        manager.startup(lambda _topic: LogConfig())
        follower = ReplicaManager(manager, 2)
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]
        fetchers = ReplicaFetcherManager(2, follower.get_partition, lambda node: ("127.0.0.1", port),
                                         FetcherConfig(backoff_ms=30_000))
        try:
            follower.become_follower(TOPIC, 0, uuid.uuid4(), 1, 0, [1, 2], [1, 2], LogConfig())
            fetchers.follow(TOPIC, 0, 1)
            fetcher = fetchers.fetchers[1]
            await until(lambda: fetcher._failures >= 1)
            closing = asyncio.ensure_future(fetcher.close())
            await asyncio.sleep(0)  # close() has cancelled the task and awaits it
            closing.cancel()
            with pytest.raises(asyncio.CancelledError):
                await closing
            assert fetcher._task is None
        finally:
            await follower.close()
            manager.shutdown()

    asyncio.run(scenario())
