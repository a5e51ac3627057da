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
from replication.broker_client import BrokerClient
from replication.metadata import embedded_store as metadata_store
from replication.metadata.image import PartitionState
from replication.replica_fetcher_manager import FetcherConfig, ReplicaFetcherManager
from replication.replica_manager import ReplicaManager
from storage import LogConfig, LogManager
from wire import ErrorCode, build_simple_batch, decode_records, iter_batch_headers
from wire.messages import FetchRequest, FetchResponse
from wire.messages.fetch_request import FetchPartition as FetchRequestPartition
from wire.messages.fetch_request import FetchTopic, ForgottenTopic, ReplicaState

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

    def __init__(self, tmp_path, backoff_ms: int = 50) -> None:
        self.tmp_path = tmp_path
        self.backoff_ms = backoff_ms

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
                                              FetcherConfig(max_wait_ms=100, backoff_ms=self.backoff_ms))
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


def test_a_follower_ahead_of_its_leaders_epoch_fetches_again_soon_after_the_leader_learns_it(tmp_path):
    """Issue 33: after a leader change the follower may learn the new epoch first (UNKNOWN_LEADER_EPOCH); it asks
    again soon, not after replica.fetch.backoff.ms, which held every acks=all write up to a second."""
    async def scenario() -> None:
        async with Pair(tmp_path, backoff_ms=30_000) as pair:
            leader_rm = pair.leader.replica_manager
            await leader_rm.append_records({(TOPIC, 0): batch(b"a")}, 1, 1000)
            pair.follow(leader_epoch=1)  # the leader is still at epoch 0
            await asyncio.sleep(0.3)  # answered UNKNOWN_LEADER_EPOCH at least once
            assert pair.follower_log().log_end_offset == 0
            state = pair.leader.metadata.image.partition(TOPIC, 0)
            assert await pair.leader.metadata.alter_partition(TOPIC, 0, PartitionState(
                0, 1, 1, state.replicas, state.isr, state.partition_epoch + 1))
            await until(lambda: pair.follower_log().log_end_offset == 1, timeout=10.0)

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


def _fetch(session_id: int, epoch: int, named: dict[uuid.UUID, int], forgotten: dict[uuid.UUID, int] | None = None):
    """A replica's Fetch v17 naming partition ``named[id]`` of each topic id at offset 0."""
    return FetchRequest(replica_state=ReplicaState(replica_id=2, replica_epoch=-1), max_wait_ms=100, min_bytes=1,
                        max_bytes=1 << 20, isolation_level=0, session_id=session_id, session_epoch=epoch,
                        topics=[FetchTopic(topic_id=t, partitions=[FetchRequestPartition(
                            partition=i, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                            log_start_offset=-1, partition_max_bytes=1 << 20)]) for t, i in named.items()],
                        forgotten_topics_data=[ForgottenTopic(topic_id=t, partitions=[i])
                                               for t, i in (forgotten or {}).items()])


def _answers(response) -> dict[uuid.UUID, list[tuple[int, int]]]:
    return {t.topic_id: [(p.partition_index, p.error_code) for p in t.partitions] for t in response.responses}


def test_a_topic_id_the_leader_learns_later_stays_in_the_fetch_session(tmp_path, monkeypatch):
    """As Kafka's FetchSession: a partition of a topic id the leader does not know yet enters the session, is
    answered UNKNOWN_TOPIC_ID on every fetch while unknown and fetched once the leader learns the topic, though
    the follower (its position unchanged) never names it again. Before, the leader kept nothing of it: a follower
    that had sent it once never fetched it again, left the ISR and acks=all stalled (rolling-restart bench)."""
    late_id = uuid.uuid4()

    async def scenario() -> None:
        async with Pair(tmp_path) as pair:
            port = pair.leader.bound_listeners["PLAINTEXT"].port
            client = BrokerClient(1, "127.0.0.1", port, client_id="test-fetcher")
            try:
                first = await client.request(_fetch(0, 0, {pair.topic.topic_id: 0, late_id: 0}), 17, FetchResponse)
                assert first.error_code == ErrorCode.NONE and first.session_id
                assert _answers(first)[late_id] == [(0, ErrorCode.UNKNOWN_TOPIC_ID)]
                again = await client.request(_fetch(first.session_id, 1, {}), 17, FetchResponse)
                assert _answers(again) == {late_id: [(0, ErrorCode.UNKNOWN_TOPIC_ID)]}
                # The leader learns the topic (the controller's metadata arrives) and gets records for it.
                monkeypatch.setattr(metadata_store, "new_uuid", lambda: late_id)
                await pair.leader.metadata.create_topic("late", [[1, 2]], {})
                await until(lambda: pair.leader.replica_manager.get_partition("late", 0) is not None)
                await pair.leader.replica_manager.append_records({("late", 0): batch(b"x")}, 1, 1000)
                resolved = await client.request(_fetch(first.session_id, 2, {}), 17, FetchResponse)
                [(index, code)] = _answers(resolved)[late_id]
                assert (index, code) == (0, ErrorCode.NONE)
                data = next(t for t in resolved.responses if t.topic_id == late_id).partitions[0]
                assert data.records is not None and len(data.records) > 0
                # Forgotten by its id, it leaves the session.
                gone = await client.request(_fetch(first.session_id, 3, {}, {late_id: 0}), 17, FetchResponse)
                assert late_id not in _answers(gone)
            finally:
                client.close()

    asyncio.run(scenario())


def test_a_follower_whose_topic_id_changes_forgets_the_old_one_and_fetches_with_the_new(tmp_path, monkeypatch):
    """As Kafka's FetchSessionHandler: a partition whose topic id changed under the follower (a topic deleted and
    created again) is forgotten under its old id and named under its new one in the next incremental fetch, though
    its position did not move. Before, the follower never named it again and acks=all on the new topic stalled."""
    new_id = uuid.uuid4()

    async def scenario() -> None:
        async with Pair(tmp_path) as pair:
            leader_rm = pair.leader.replica_manager
            pair.follow(leader_epoch=0)  # an empty rep-0: the follower fetches from offset 0
            await until(lambda: pair.fetchers.fetchers[1]._session_epoch > 2)  # an incremental session is open
            await pair.leader.admin.delete_topic(TOPIC)
            await until(lambda: leader_rm.get_partition(TOPIC, 0) is None)
            monkeypatch.setattr(metadata_store, "new_uuid", lambda: new_id)
            await pair.leader.metadata.create_topic(TOPIC, [[1, 2]], {})
            await until(lambda: leader_rm.get_partition(TOPIC, 0) is not None)
            # The follower drops the deleted topic (as Broker._drop_topic) and follows the new one, at offset 0 again.
            pair.fetchers.unfollow(TOPIC, 0)
            pair.follower.delete_partitions(TOPIC)
            pair.follower.become_follower(TOPIC, 0, new_id, 1, 0, [1, 2], [1, 2], LogConfig())
            pair.fetchers.follow(TOPIC, 0, 1)
            acked = await leader_rm.append_records({(TOPIC, 0): batch(b"a")}, -1, 10_000)
            assert acked[(TOPIC, 0)].error_code == ErrorCode.NONE
            await until(lambda: pair.follower_log().high_watermark == 1)

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
