"""A single pykbroker process with two log dirs: a replica killed (kill -9) in the middle of its move to the
other dir restarts with its original log intact and the move resumed from where the copy was; the move
then finishes, and every acknowledged record is read back."""

from __future__ import annotations

from compat_tests.test_differential_log_dirs import (
    THROTTLE,
    _alter,
    _count_records,
    _describe,
    _produce,
    _wait,
)
from pykbroker.testing import BrokerProcess, RawClient
from wire.messages import CreateTopicsRequest, IncrementalAlterConfigsRequest, MetadataRequest
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource


def _throttle(c: RawClient, rate: int | None) -> None:
    node = c.request(MetadataRequest(topics=[]), 12).brokers[0].node_id
    response = c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=4, resource_name=str(node), configs=[AlterableConfig(
            name=THROTTLE, config_operation=0 if rate is not None else 1,
            value=str(rate) if rate is not None else None)])]), 1)
    assert response.responses[0].error_code == 0


def test_a_move_killed_mid_copy_resumes_and_loses_nothing(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    names = {str(a): "a", str(b): "b"}
    broker = BrokerProcess(tmp_path / "broker", overrides={"log.dirs": f"{a},{b}", "log.segment.bytes": str(1 << 20)})
    with broker:
        with RawClient(broker.bootstrap, timeout=30) as c:
            c.request(CreateTopicsRequest(topics=[CreatableTopic(name="t", num_partitions=1, replication_factor=1)],
                                          timeout_ms=10000), 5)
            c.wait_for_topics("t")
            acked = _produce(c, "t", 0, 200)  # about 2 MB
            home = "a" if (a / "t-0").is_dir() else "b"
            other = str(b) if home == "a" else str(a)
            size = _describe(c, names)[home].topics[0].partitions[0].partition_size
            _throttle(c, 200_000)  # 200 kB/s: the copy takes seconds, time enough to kill it midway
            assert _alter(c, [(other, "t", [0])]) == [("t", 0, 0)]

            def future_size() -> int:
                r = _describe(c, names, {"t": [0]})[names[other]]
                return next((p.partition_size for t in r.topics for p in t.partitions if p.is_future_key), 0)

            assert _wait(lambda: future_size() > 100_000, 30)
        broker.kill()
        broker.start()
        with RawClient(broker.bootstrap, timeout=30) as c:
            described = _describe(c, names, {"t": [0]})
            current = described[home].topics[0].partitions[0]
            assert (current.partition_size, current.is_future_key) == (size, False)  # the original log, intact
            resumed = [p for t in described[names[other]].topics for p in t.partitions]
            assert [p.is_future_key for p in resumed] == [True] and 0 < resumed[0].partition_size <= size
            _throttle(c, None)

            def moved() -> bool:
                nonlocal acked
                acked += _produce(c, "t", 0, 2)  # producing all along
                r = _describe(c, names, {"t": [0]})
                return not r[home].topics and [p.is_future_key for t in r[names[other]].topics
                                               for p in t.partitions] == [False]

            assert _wait(moved, 60)
            assert _count_records(c, "t", 0) == acked
        broker.kill()  # and once more right after the move: the moved log is the one loaded
        broker.start()
        with RawClient(broker.bootstrap, timeout=30) as c:
            assert _count_records(c, "t", 0) == acked
            assert [p.is_future_key for t in _describe(c, names)[names[other]].topics for p in t.partitions] == [False]
