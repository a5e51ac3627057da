"""ReplicaManager reads over real logs: size limits and the last-fetched-epoch check, as Kafka answers them."""

from __future__ import annotations

import uuid

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
    assert rm.append_records({(TOPIC, partition): batch}, 1)[(TOPIC, partition)].error_code == ErrorCode.NONE


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
