"""Moving a replica between log dirs over real logs: the copy follows appends and truncations of the current
log, never stalls the event loop for the bulk of it, and the swap loses nothing."""

from __future__ import annotations

import asyncio
import os
import time
import uuid

from replication.replica_alter_log_dirs import _Truncations, copy_to_future
from replication.replica_manager import ReplicaManager
from storage import LogConfig, LogManager
from wire import ErrorCode, build_simple_batch, decode_records, iter_batch_headers

TOPIC = "mv"
TOPIC_ID = uuid.UUID(int=7)


def two_dirs(tmp_path, **props) -> tuple[ReplicaManager, str]:
    """A replica manager leading mv-0 over two log dirs; returns it and the dir mv-0 is not in."""
    config = LogConfig.from_properties({"segment.bytes": str(1 << 20), "file.delete.delay.ms": "0", **props})
    dirs = [str(tmp_path / "d1"), str(tmp_path / "d2")]
    manager = LogManager(dirs, default_config=config, log_cleaner_enable=False)
    manager.startup(lambda _topic: config)
    rm = ReplicaManager(manager, node_id=1, in_metadata=lambda t, p: t == TOPIC)
    p = rm.become_leader(TOPIC, 0, TOPIC_ID, 0, [1], [1], config)
    return rm, dirs[1] if p.log.parent_dir == dirs[0] else dirs[0]


async def produce(rm: ReplicaManager, n: int, size: int = 1000, tag: bytes = b"v") -> None:
    for i in range(n):
        batch = build_simple_batch([tag + b"%d-" % i + b"x" * size] * 10, timestamp=int(time.time() * 1000))
        result = await rm.append_records({(TOPIC, 0): batch}, -1, 5000)
        assert result[(TOPIC, 0)].error_code == ErrorCode.NONE


def values(log) -> list[bytes]:
    out: list[bytes] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        info = log.read(offset, 1 << 20, min_one_message=True)
        data = info.records.read_bytes()
        info.records.release()
        for pos, header in iter_batch_headers(data):
            out.extend(r.value for r in decode_records(data, pos)[1])
            offset = header.base_offset + header.last_offset_delta + 1
    return out


def test_a_replica_moves_to_another_dir_while_produce_continues(tmp_path):
    async def run() -> None:
        rm, other = two_dirs(tmp_path)
        await produce(rm, 300)
        p = rm.get_partition(TOPIC, 0)
        before = p.log
        assert rm.alter_replica_log_dirs({(TOPIC, 0): other}) == {(TOPIC, 0): ErrorCode.NONE}
        # Meanwhile DescribeLogDirs shows the future replica in the destination, with its lag.
        described = {d.log_dir: d.replicas for d in rm.describe_log_dirs()}
        assert [r.is_future for r in described[other]] == [True] and described[other][0].offset_lag >= 0
        assert [(r.is_future, r.offset_lag) for r in described[before.parent_dir]] == [(False, 0)]
        produced = 300
        deadline = time.monotonic() + 60
        while rm.alter_log_dirs.is_moving(TOPIC, 0):  # producing all along
            await produce(rm, 5, tag=b"during")
            produced += 5
            await asyncio.sleep(0.001)  # an append answered at once never yields to the loop; a client's does
            assert time.monotonic() < deadline
        assert p.log is not before and p.log.parent_dir == other and not p.log.is_future
        assert len(values(p.log)) == produced * 10 and p.log.high_watermark == p.log.log_end_offset
        await produce(rm, 5, tag=b"after")
        assert values(p.log)[-1].startswith(b"after4-")
        assert not os.path.exists(os.path.join(before.parent_dir, "mv-0")) and before.dir.endswith("-delete")
        assert [(d.log_dir, [r.is_future for r in d.replicas]) for d in rm.describe_log_dirs()] == [
            (d, [False] if d == other else []) for d in rm.log_manager.log_dirs]
        await rm.close()
        rm.log_manager.shutdown()

    asyncio.run(run())


def test_alter_replica_log_dirs_answers_as_kafka(tmp_path):
    async def run() -> None:
        rm, other = two_dirs(tmp_path)
        here = rm.get_partition(TOPIC, 0).log.parent_dir
        codes = rm.alter_replica_log_dirs({
            (TOPIC, 0): here,  # already there: nothing to do
            (TOPIC, 1): other,  # not hosted yet: the dir is remembered
            ("nope", 0): other,
            ("elsewhere", 0): str(tmp_path / "not-a-log-dir"),
        })
        assert codes == {(TOPIC, 0): ErrorCode.NONE, (TOPIC, 1): ErrorCode.REPLICA_NOT_AVAILABLE,
                         ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         ("elsewhere", 0): ErrorCode.LOG_DIR_NOT_FOUND}
        assert not rm.alter_log_dirs.is_moving(TOPIC, 0)
        created = rm.become_leader(TOPIC, 1, TOPIC_ID, 0, [1], [1], LogConfig())
        assert created.log.parent_dir == other  # created where it was asked to be
        rm.mark_offline(TOPIC, 5)  # in a dir offline since the start: not hosted, as Kafka 4.1 answers it
        assert rm.alter_replica_log_dirs({(TOPIC, 5): here}) == {(TOPIC, 5): ErrorCode.REPLICA_NOT_AVAILABLE}
        rm.log_manager.failure_channel.maybe_add_offline_log_dir(other, "test: disk gone")
        assert rm.alter_replica_log_dirs({(TOPIC, 0): other}) == {(TOPIC, 0): ErrorCode.KAFKA_STORAGE_ERROR}
        described = {d.log_dir: d for d in rm.describe_log_dirs()}
        assert described[other].error_code == ErrorCode.KAFKA_STORAGE_ERROR and described[other].total_bytes == -1
        assert described[here].error_code == ErrorCode.NONE and described[here].total_bytes > 0
        await rm.close()
        rm.log_manager.shutdown()

    asyncio.run(run())


def test_a_move_redirected_to_another_dir_drops_the_first_future_log(tmp_path):
    async def run() -> None:
        config = LogConfig.from_properties({"file.delete.delay.ms": "0"})
        dirs = [str(tmp_path / f"d{i}") for i in range(3)]
        manager = LogManager(dirs, default_config=config, log_cleaner_enable=False)
        manager.startup(lambda _topic: config)
        rm = ReplicaManager(manager, node_id=1)
        p = rm.become_leader(TOPIC, 0, TOPIC_ID, 0, [1], [1], config)
        first, second = [d for d in dirs if d != p.log.parent_dir]
        manager.create_future_log(TOPIC, 0, first)  # a move in progress (its copy not started)
        assert rm.alter_replica_log_dirs({(TOPIC, 0): second}) == {(TOPIC, 0): ErrorCode.NONE}
        assert manager.get_log(TOPIC, 0, is_future=True).parent_dir == second
        while rm.alter_log_dirs.is_moving(TOPIC, 0):
            await asyncio.sleep(0.01)
        assert p.log.parent_dir == second
        await rm.close()
        manager.shutdown()

    asyncio.run(run())


def test_the_copy_repeats_truncations_of_the_current_log(tmp_path):
    rm, other = two_dirs(tmp_path)
    asyncio.run(produce(rm, 50))
    current = rm.get_partition(TOPIC, 0).log
    future = rm.log_manager.create_future_log(TOPIC, 0, other)
    truncations = _Truncations()
    current.truncation_listener = truncations.record
    assert copy_to_future(current, future, truncations, 1 << 30)
    assert future.high_watermark == current.high_watermark == current.log_end_offset
    current.truncate_to(205)  # a follower that diverged: offsets from 205 on are replaced
    asyncio.run(produce(rm, 3, tag=b"new"))
    assert copy_to_future(current, future, truncations, 1 << 30)
    assert values(future) == values(current) and future.log_end_offset == current.log_end_offset
    current.truncate_fully_and_start_at(1000)  # far behind the leader's start
    assert copy_to_future(current, future, truncations, 1 << 30)
    assert (future.log_start_offset, future.log_end_offset) == (1000, 1000)
    rm.log_manager.shutdown()
