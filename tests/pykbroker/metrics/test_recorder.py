"""The Recorder's counts as the replica manager feeds them: appends, failures, ISR changes, deleted topics."""

from __future__ import annotations

import asyncio

from pykbroker.metrics.recorder import REQUEST_TIMES, Recorder
from replication.replica_manager import FetchPartition
from tests.replication.test_replica_manager import TOPIC, Clock, replicated_leader
from wire import build_simple_batch


def test_appends_failures_and_isr_changes_are_counted(tmp_path):
    async def scenario() -> None:
        clock = Clock()
        rm = replicated_leader(tmp_path, [1, 2], [1], clock)
        rec = rm.metrics = Recorder()
        first = build_simple_batch([b"a", b"b", b"c"], timestamp=1_700_000_000_000)
        await rm.append_records({(TOPIC, 0): first}, -1, 1000)
        assert (rec.topics[TOPIC].bytes_in, rec.topics[TOPIC].messages_in, rec.topics[TOPIC].total_produce) == \
            (len(first), 3, 1)
        await rm.append_records({(TOPIC, 7): first}, 1, 1000)  # not hosted here: a refusal Kafka expects
        assert (rec.topics[TOPIC].failed_produce, rec.topics[TOPIC].total_produce) == (0, 2)
        rm.read_partitions([FetchPartition(TOPIC, 0, 3, 1 << 20)], 1 << 20, False, replica_id=2)
        for _ in range(10):
            await asyncio.sleep(0)
        assert (rec.isr_expands, rec.isr_shrinks) == (1, 0)
        await rm.append_records({(TOPIC, 0): build_simple_batch([b"d"], timestamp=1_700_000_000_000)}, 1, 1000)
        clock.ms += 10_001
        assert rm.shrink_lagging_isrs() == 1
        for _ in range(10):
            await asyncio.sleep(0)
        assert (rec.isr_expands, rec.isr_shrinks) == (1, 1)
        total = rec.all_topics.bytes_in
        rm.delete_partitions(TOPIC)
        assert TOPIC not in rec.topics  # its series go, as Kafka removes a deleted topic's metrics
        assert rec.all_topics.bytes_in == total  # the all-topics count keeps what it counted
        await rm.close()

    asyncio.run(scenario())


def test_request_times_are_split_as_kafkas_request_metrics():
    rec = Recorder()
    # read at 1.000 s, handler 1.002-1.010 s of which 3 ms worked, response handed over at 1.011, sent 1.012
    rec.request(0, 11, 2048, 1.000, 1.002, 0.003, 1.010, 1.011, 1.012, 5)
    rec.request(0, 9, 100, 0.0, 2.0, 0.001, 2.001, 2.001, 2.002, 0)  # not read before (arrived 0): no queue time
    stats = rec.requests[0]
    assert stats.name == "Produce" and stats.count == 2 and stats.versions() == {9: 1, 11: 1}
    first, second = stats.times_ms()
    split = dict(zip(REQUEST_TIMES, first, strict=True))
    expected = {"RequestQueueTimeMs": 2.0, "LocalTimeMs": 3.0, "RemoteTimeMs": 5.0, "ThrottleTimeMs": 5.0,
                "ResponseQueueTimeMs": 1.0, "ResponseSendTimeMs": 1.0, "TotalTimeMs": 12.0}
    assert {k: round(v, 6) for k, v in split.items()} == expected
    assert second[0] == 0.0 and stats.sizes() == [2048, 100]
