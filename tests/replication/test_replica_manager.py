"""ReplicaManager reads over real logs: size limits and the last-fetched-epoch check, as Kafka answers them."""

from __future__ import annotations

import asyncio
import uuid

from replication.partition import PartitionError
from replication.replica_manager import FetchPartition, ReplicaManager
from storage import LogConfig, LogManager
from wire import ErrorCode, build_simple_batch

TOPIC = "rm"
TOPIC_ID = uuid.UUID(int=5)


def leader(tmp_path, partitions: int = 2) -> ReplicaManager:
    manager = LogManager([str(tmp_path / "logs")], default_config=LogConfig(), log_cleaner_enable=False)
    manager.startup(lambda _topic: LogConfig())
    rm = ReplicaManager(manager, node_id=1)
    for p in range(partitions):
        rm.become_leader(TOPIC, p, TOPIC_ID, 0, [1], [1], LogConfig())
    return rm


def append(rm: ReplicaManager, partition: int, count: int, size: int = 100) -> None:
    batch = build_simple_batch([b"x" * size] * count, timestamp=1_700_000_000_000)
    result = asyncio.run(rm.append_records({(TOPIC, partition): batch}, 1, 1000))
    assert result[(TOPIC, partition)].error_code == ErrorCode.NONE


def sizes(fetched) -> list[tuple[int, int]]:
    return [(f.error_code, f.size) for f in fetched]


def test_a_first_batch_that_does_not_fit_is_not_sent_in_part(tmp_path):
    rm = leader(tmp_path)
    append(rm, 0, 5)
    append(rm, 1, 5)
    one_byte = [FetchPartition(TOPIC, p, 0, max_bytes=1) for p in (0, 1)]
    fetched = rm.read_partitions(one_byte, max_bytes=1 << 20, read_committed=False)
    # The first partition gets its whole first batch anyway; the second nothing rather than one byte of it.
    assert sizes(fetched)[1] == (ErrorCode.NONE, 0) and sizes(fetched)[0][1] > 100


def test_the_last_fetched_epoch_is_checked_against_the_leader_epochs(tmp_path):
    rm = leader(tmp_path, partitions=1)
    append(rm, 0, 3)  # offsets 0-2 in epoch 0
    rm.become_leader(TOPIC, 0, TOPIC_ID, 2, [1], [1], LogConfig())
    append(rm, 0, 2)  # offsets 3-4 in epoch 2

    def read(offset: int, last_epoch: int):
        (f,) = rm.read_partitions([FetchPartition(TOPIC, 0, offset, 1 << 20, -1, last_epoch)], 1 << 20, False)
        return f.error_code, None if f.read is None else f.read.diverging_epoch

    assert read(3, 0) == (ErrorCode.NONE, None)  # epoch 0 ended at 3: consistent
    assert read(4, 0) == (ErrorCode.NONE, (0, 3))  # the fetcher has epoch-0 data past where epoch 0 ended
    assert read(5, 2) == (ErrorCode.NONE, None)
    assert read(5, 1) == (ErrorCode.NONE, (0, 3))  # an epoch this log never had: the one before it
    assert read(5, 7) == (ErrorCode.OFFSET_OUT_OF_RANGE, None)  # an epoch from the future


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000

    def __call__(self) -> int:
        return self.ms


def replicated_leader(tmp_path, replicas: list[int], isr: list[int], clock: Clock) -> ReplicaManager:
    manager = LogManager([str(tmp_path / "logs")], default_config=LogConfig(), log_cleaner_enable=False)
    manager.startup(lambda _topic: LogConfig())
    rm = ReplicaManager(manager, node_id=1, replica_lag_time_max_ms=10_000, time_ms=clock)
    rm.become_leader(TOPIC, 0, TOPIC_ID, 0, replicas, isr, LogConfig())
    return rm


def test_acks_all_completes_when_the_in_sync_follower_fetches_past_the_batch(tmp_path):
    async def scenario() -> None:
        rm = replicated_leader(tmp_path, [1, 2], [1, 2], Clock())
        produce = asyncio.create_task(rm.append_records({(TOPIC, 0): build_simple_batch([b"a", b"b"], timestamp=1_700_000_000_000)}, -1, 5000))
        await asyncio.sleep(0.01)
        assert not produce.done()  # broker 2 has not fetched yet
        (fetched,) = await rm.fetch([FetchPartition(TOPIC, 0, 0, 1 << 20)], max_wait_ms=0, min_bytes=1,
                                    max_bytes=1 << 20, read_committed=False, replica_id=2)
        assert fetched.size > 0 and fetched.read.high_watermark == 0  # a follower reads past the high watermark
        await asyncio.sleep(0.01)
        assert not produce.done()  # fetching offset 0 does not say the follower has offsets 0-1
        await rm.fetch([FetchPartition(TOPIC, 0, 2, 1 << 20)], max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                       read_committed=False, replica_id=2)
        result = (await asyncio.wait_for(produce, 30))[(TOPIC, 0)]
        assert result.error_code == ErrorCode.NONE and result.base_offset == 0
        assert rm.get_partition(TOPIC, 0).log.high_watermark == 2
        await rm.close()

    asyncio.run(scenario())


def test_acks_all_times_out_with_request_timed_out_when_a_follower_never_fetches(tmp_path):
    async def scenario() -> None:
        rm = replicated_leader(tmp_path, [1, 2], [1, 2], Clock())
        result = await rm.append_records({(TOPIC, 0): build_simple_batch([b"a"], timestamp=1_700_000_000_000)}, -1, 50)
        assert result[(TOPIC, 0)].error_code == ErrorCode.REQUEST_TIMED_OUT
        # acks=1 is answered by the leader's append alone.
        result = await rm.append_records({(TOPIC, 0): build_simple_batch([b"b"], timestamp=1_700_000_000_000)}, 1, 50)
        assert result[(TOPIC, 0)].error_code == ErrorCode.NONE and result[(TOPIC, 0)].base_offset == 1
        await rm.close()

    asyncio.run(scenario())


def test_a_waiting_acks_all_produce_learns_that_leadership_moved(tmp_path):
    async def scenario() -> None:
        rm = replicated_leader(tmp_path, [1, 2], [1, 2], Clock())
        produce = asyncio.create_task(rm.append_records({(TOPIC, 0): build_simple_batch([b"a"], timestamp=1_700_000_000_000)}, -1, 5000))
        await asyncio.sleep(0.01)
        rm.become_follower(TOPIC, 0, TOPIC_ID, 2, 1, [1, 2], [1, 2], LogConfig())
        result = (await asyncio.wait_for(produce, 30))[(TOPIC, 0)]
        assert result.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        (fetched,) = rm.read_partitions([FetchPartition(TOPIC, 0, 0, 1 << 20)], 1 << 20, False)
        assert fetched.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        await rm.close()

    asyncio.run(scenario())


def test_a_waiting_acks_all_produce_whose_topic_is_deleted_answers_unknown_topic(tmp_path):
    """Kafka 4.4's DelayedProduce asks getPartitionOrError: a partition no longer hosted is NOT_LEADER_OR_FOLLOWER
    only while the metadata still has it; deleted, UNKNOWN_TOPIC_OR_PARTITION (seen on 3 brokers: a produce
    waiting for its followers when the DeleteTopics landed answered NOT_LEADER_OR_FOLLOWER)."""
    async def scenario() -> None:
        rm = replicated_leader(tmp_path, [1, 2], [1, 2], Clock())
        produce = asyncio.create_task(rm.append_records({(TOPIC, 0): build_simple_batch([b"a"], timestamp=1_700_000_000_000)}, -1, 5000))
        await asyncio.sleep(0.01)
        rm.in_metadata = lambda _topic, _partition: False  # the topic left the image, then its partitions go
        rm.delete_partitions(TOPIC)
        result = (await asyncio.wait_for(produce, 30))[(TOPIC, 0)]
        assert result.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        await rm.close()

    asyncio.run(scenario())


def test_the_isr_expands_when_a_follower_catches_up_and_shrinks_when_it_lags(tmp_path):
    async def scenario() -> None:
        clock = Clock()
        rm = replicated_leader(tmp_path, [1, 2], [1], clock)
        p = rm.get_partition(TOPIC, 0)
        await rm.append_records({(TOPIC, 0): build_simple_batch([b"a", b"b", b"c"], timestamp=1_700_000_000_000)}, -1, 1000)
        assert p.log.high_watermark == 3  # alone in the ISR
        rm.read_partitions([FetchPartition(TOPIC, 0, 3, 1 << 20)], 1 << 20, False, replica_id=2)
        for _ in range(10):
            await asyncio.sleep(0)
        assert p.isr == [1, 2] and p.partition_epoch == 1  # committed by the (local) ISR updater
        clock.ms += 4_000
        assert rm.shrink_lagging_isrs() == 0
        await rm.append_records({(TOPIC, 0): build_simple_batch([b"d"], timestamp=1_700_000_000_000)}, 1, 1000)
        clock.ms += 10_001  # broker 2 has not fetched offset 4 for longer than replica.lag.time.max.ms
        assert rm.shrink_lagging_isrs() == 1
        for _ in range(10):
            await asyncio.sleep(0)
        assert p.isr == [1] and p.partition_epoch == 2 and p.log.high_watermark == 4
        await rm.close()

    asyncio.run(scenario())


def test_leader_partition_answers_with_kafkas_codes(tmp_path):
    rm = leader(tmp_path, partitions=1)
    rm.in_metadata = lambda topic, partition: (topic, partition) == (TOPIC, 1)  # in the cluster, not hosted
    rm.become_follower(TOPIC, 2, TOPIC_ID, 2, 3, [2, 1], [2, 1], LogConfig())

    def code(partition: int, epoch: int) -> int:
        try:
            rm.leader_partition(TOPIC, partition, epoch)
        except PartitionError as exc:
            return exc.code
        return ErrorCode.NONE

    assert code(0, -1) == code(0, 0) == ErrorCode.NONE
    assert code(0, 1) == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert code(1, -1) == ErrorCode.NOT_LEADER_OR_FOLLOWER  # the cluster has it: this broker is not its leader
    assert code(9, -1) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert code(2, -1) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert code(2, 1) == ErrorCode.FENCED_LEADER_EPOCH  # the epoch is checked before leadership, as Kafka


def test_an_unexpected_refusal_is_logged_and_an_expected_one_is_not(tmp_path, caplog):
    manager = LogManager([str(tmp_path / "logs")], default_config=LogConfig(), log_cleaner_enable=False)
    manager.startup(lambda _topic: LogConfig())
    rm = ReplicaManager(manager, node_id=1)
    rm.become_leader(TOPIC, 0, TOPIC_ID, 0, [1], [1], LogConfig(cleanup_policy=("compact",)))
    rm.become_leader(TOPIC, 1, TOPIC_ID, 0, [1], [1], LogConfig(max_message_bytes=100))
    keyless = build_simple_batch([b"no key"], timestamp=1_700_000_000_000)
    too_large = build_simple_batch([b"x" * 500], timestamp=1_700_000_000_000)
    with caplog.at_level("INFO", logger="replication.replica_manager"):
        result = asyncio.run(rm.append_records({(TOPIC, 0): keyless, (TOPIC, 1): too_large}, 1, 1000))
    assert [result[(TOPIC, p)].error_code for p in (0, 1)] == [ErrorCode.INVALID_RECORD, ErrorCode.MESSAGE_TOO_LARGE]
    # As Kafka's ReplicaManager: an invalid record is an ERROR line naming the partition; a batch too large none.
    assert [(r.levelname, r.getMessage().split(":")[0]) for r in caplog.records] == \
        [("ERROR", f"Error processing append operation on partition {TOPIC}-0")]


def test_a_woken_long_poll_reads_the_appended_batch_kept_in_memory_then_it_is_dropped(tmp_path):
    """An append that wakes a long poll keeps its batch for it: the woken read gets those bytes (not a file region),
    the same as the file holds, and once the append's answer is built nothing is kept; with no one waiting, nothing
    is kept at all."""
    async def scenario() -> None:
        rm = leader(tmp_path, partitions=1)
        batch = build_simple_batch([b"x" * 100], timestamp=1_700_000_000_000)
        log_ = rm.get_partition(TOPIC, 0).log
        await rm.append_records({(TOPIC, 0): batch}, -1, 1000)  # nobody waits: nothing kept
        assert log_.local._tail is None
        waiting = asyncio.ensure_future(rm.fetch([FetchPartition(TOPIC, 0, 1, 1 << 20)], max_wait_ms=10_000,
                                                 min_bytes=1, max_bytes=1 << 20, read_committed=False))
        while rm.watchers.waiting((TOPIC, 0)) == 0:
            await asyncio.sleep(0)
        result = await rm.append_records({(TOPIC, 0): batch}, -1, 1000)
        assert result[(TOPIC, 0)].base_offset == 1 and waiting.done() and log_.local._tail is None
        (fetched,) = waiting.result()
        records = fetched.read.records
        assert isinstance(records, bytes) and records[:8] == (1).to_bytes(8, "big")
        from_file = log_.read(1, 1 << 20).records
        assert records == from_file.read_bytes()
        from_file.release()

    asyncio.run(scenario())


def test_a_caught_up_followers_fetch_reads_no_log_and_tries_the_high_watermark_only_when_its_end_moved(
        tmp_path, monkeypatch):
    """A replica fetch session names every partition a follower follows from this leader (a third of the 150
    internal-topic partitions), and each write to any of them wakes it: the caught-up rest must cost little."""
    clock = Clock()
    rm = replicated_leader(tmp_path, [1, 2], [1, 2], clock)
    p = rm.get_partition(TOPIC, 0)
    append(rm, 0, 3)  # offsets 0-2 in epoch 0 (acks=1)
    log_reads: list[int] = []
    tries: list[int] = []
    read, advance = p.log.read, p.maybe_advance_high_watermark
    monkeypatch.setattr(p.log, "read", lambda offset, *a, **kw: log_reads.append(offset) or read(offset, *a, **kw))
    monkeypatch.setattr(p, "maybe_advance_high_watermark",
                        lambda *a, **kw: tries.append(p.log.high_watermark) or advance(*a, **kw))

    def follower_fetch(offset: int, last_epoch: int = 0):
        (f,) = rm.read_partitions([FetchPartition(TOPIC, 0, offset, 1 << 20, -1, last_epoch)], 1 << 20, False,
                                  replica_id=2)
        return f

    assert follower_fetch(0, -1).size > 0 and log_reads == [0] and tries == [0]
    caught_up = follower_fetch(3)
    assert caught_up.error_code == ErrorCode.NONE and caught_up.size == 0 and p.log.high_watermark == 3
    assert log_reads == [0] and tries == [0, 0]  # no read at the log end; the follower's end moved: HW tried, moved
    for _ in range(3):
        assert follower_fetch(3).read.high_watermark == 3
    assert log_reads == [0] and tries == [0, 0]  # nothing moved: neither read nor tried again

    rm.become_leader(TOPIC, 0, TOPIC_ID, 2, [1, 2], [1, 2], LogConfig())
    append(rm, 0, 2)  # offsets 3-4 in epoch 2
    # At the log end with an older epoch than the latest: still checked, and found diverged (epoch 0 ended at 3).
    diverged = follower_fetch(5, last_epoch=0)
    assert diverged.error_code == ErrorCode.NONE and diverged.read.diverging_epoch == (0, 3)


def test_a_followers_parked_fetch_is_woken_by_new_data_not_by_the_high_watermark(tmp_path, monkeypatch):
    """As Kafka's delayed follower fetch: a follower parked at the log end is not woken (and does not read its
    session's partitions again) when another follower moves the high watermark; a consumer waiting for the high
    watermark is, and an append wakes the follower."""
    async def scenario() -> None:
        rm = replicated_leader(tmp_path, [1, 2, 3], [1, 2, 3], Clock())
        append_task = asyncio.create_task(rm.append_records(
            {(TOPIC, 0): build_simple_batch([b"a", b"b"], timestamp=1_700_000_000_000)}, -1, 5000))
        await asyncio.sleep(0)
        for follower in (2, 3):  # both fetch the batch
            await rm.fetch([FetchPartition(TOPIC, 0, 0, 1 << 20)], max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                           read_committed=False, replica_id=follower)
        reads: list[int] = []
        read_partitions = rm.read_partitions
        monkeypatch.setattr(rm, "read_partitions",
                            lambda wanted, *a, **kw: reads.append(kw.get("replica_id", a[2] if len(a) > 2 else -1))
                            or read_partitions(wanted, *a, **kw))
        parked = asyncio.create_task(rm.fetch([FetchPartition(TOPIC, 0, 2, 1 << 20)], max_wait_ms=10_000,
                                              min_bytes=1, max_bytes=1 << 20, read_committed=False, replica_id=2))
        consumer = asyncio.create_task(rm.fetch([FetchPartition(TOPIC, 0, 0, 1 << 20)], max_wait_ms=10_000,
                                                min_bytes=1, max_bytes=1 << 20, read_committed=False))
        while rm.watchers.waiting((TOPIC, 0)) < 2:
            await asyncio.sleep(0)
        reads.clear()
        # broker 3 fetches past the batch: the high watermark moves to 2 (broker 2 is there already)
        await rm.fetch([FetchPartition(TOPIC, 0, 2, 1 << 20)], max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                       read_committed=False, replica_id=3)
        assert rm.get_partition(TOPIC, 0).log.high_watermark == 2
        assert (await asyncio.wait_for(append_task, 30))[(TOPIC, 0)].error_code == ErrorCode.NONE
        (fetched,) = await asyncio.wait_for(consumer, 30)
        assert fetched.size > 0
        for _ in range(3):
            await asyncio.sleep(0)
        assert not parked.done() and reads == [3, -1]  # broker 3's fetch, the consumer's woken read; not broker 2's
        await rm.append_records({(TOPIC, 0): build_simple_batch([b"c"], timestamp=1_700_000_000_000)}, 1, 5000)
        (fetched,) = await asyncio.wait_for(parked, 30)
        assert fetched.size > 0
        await rm.close()

    asyncio.run(scenario())
