"""ReplicaCoordinatorLog: the coordinator's records in a real __consumer_offsets log, through the replica manager."""

from __future__ import annotations

import uuid

from coordinator.group import GROUP_METADATA_TOPIC_NAME, FakeClock, GroupCoordinator, StaticTopics
from coordinator.runtime.errors import CoordinatorLogError
from coordinator.runtime.partition_log import ReplicaCoordinatorLog
from replication.replica_manager import ReplicaManager
from storage import LogConfig, LogManager
from tests.coordinator.group.helpers import CONFIG, TOPIC_A, info, run
from tests.coordinator.group.test_offsets import commit, fetched
from wire import ErrorCode, build_control_batch

TOPIC = "__consumer_offsets"


def replica_manager(tmp_path) -> ReplicaManager:
    manager = LogManager([str(tmp_path / "logs")], default_config=LogConfig(), log_cleaner_enable=False)
    manager.startup(lambda _topic: LogConfig())
    rm = ReplicaManager(manager, node_id=1)
    for p in range(CONFIG.offsets_topic_num_partitions):
        rm.become_leader(TOPIC, p, uuid.UUID(int=77), 0, [1], [1], LogConfig())
    return rm


def coordinator(rm: ReplicaManager, clock: FakeClock) -> GroupCoordinator:
    return GroupCoordinator(CONFIG, 1, StaticTopics([TOPIC_A]), lambda p: ReplicaCoordinatorLog(rm, p, clock, topic=GROUP_METADATA_TOPIC_NAME),
                            clock=clock)


@run
async def test_append_and_read_back(tmp_path):
    rm = replica_manager(tmp_path)
    log = ReplicaCoordinatorLog(rm, 3, FakeClock(), topic=GROUP_METADATA_TOPIC_NAME)
    assert list(log.read_all()) == []
    assert await log.append([(b"k1", b"v1"), (b"k2", None)]) == 1
    # A transaction marker (control batch) in between is read as (offset, None, None, producer id, commit).
    partition_log = rm.get_partition(TOPIC, 3).log
    partition_log.append_as_leader(build_control_batch(0, producer_id=5, producer_epoch=0, timestamp=1,
                                                       partition_leader_epoch=0, coordinator_epoch=0),
                                   0, origin="coordinator")
    partition_log.maybe_increment_high_watermark(partition_log.log_end_offset)
    assert await log.append([(b"k3", b"v3")]) == 3
    assert list(log.read_all()) == [(0, b"k1", b"v1"), (1, b"k2", None), (2, None, None, 5, False),
                                    (3, b"k3", b"v3")]


@run
async def test_transactional_records_and_markers_read_back_with_their_producer(tmp_path):
    rm = replica_manager(tmp_path)
    log = ReplicaCoordinatorLog(rm, 3, FakeClock(), topic=GROUP_METADATA_TOPIC_NAME)
    assert await log.append([(b"k1", b"v1")], producer_id=7, producer_epoch=2) == 0
    assert await log.append_marker(7, 2, 0, commit=True) == 1
    assert await log.append([(b"k2", b"v2")]) == 2
    assert list(log.read_all()) == [(0, b"k1", b"v1", 7), (1, None, None, 7, True), (2, b"k2", b"v2")]


@run
async def test_missing_partition_fails_the_load_with_not_leader(tmp_path):
    rm = replica_manager(tmp_path)
    log = ReplicaCoordinatorLog(rm, 99, FakeClock(), topic=GROUP_METADATA_TOPIC_NAME)
    try:
        list(log.read_all())
    except CoordinatorLogError as exc:
        assert exc.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    else:
        raise AssertionError("expected a CoordinatorLogError")


@run
async def test_committed_offsets_reload_from_the_log(tmp_path):
    rm = replica_manager(tmp_path)
    clock = FakeClock()
    first = coordinator(rm, clock)
    await first.commit_offsets(info(9), commit("durable", {("a", 0): 41, ("a", 1): 2}))
    await first.close()
    second = coordinator(rm, clock)

    class H:  # the fetched() helper only needs .coordinator
        coordinator = second
    assert await fetched(H, "durable") == {("a", 0): (41, 5, "meta", 0), ("a", 1): (2, 5, "meta", 0)}
    await second.close()
