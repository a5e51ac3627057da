"""``console.lag_history``: each group's total and per-partition lag over the last samples (the browser test
of its chart is in ``test_cluster_console.py``, ``make test-console-slow``), for every group type."""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import Producer

from pykbroker.console.lag_history import LagHistory
from pykbroker.metrics.state import GroupView
from pykbroker.testing import BrokerProcess, RawClient
from tests.pykbroker.console.test_api import call
from wire import ErrorCode
from wire.messages import OffsetCommitRequest, StreamsGroupHeartbeatRequest
from wire.messages import streams_group_heartbeat_request as shr
from wire.messages.offset_commit_request import OffsetCommitRequestPartition, OffsetCommitRequestTopic


def view(group_id: str, offsets: dict[tuple[str, int], tuple[int, int | None]]) -> GroupView:
    return GroupView(group_id, "classic", "Empty", "consumer", [], offsets)


def test_samples_keep_totals_and_partitions_with_gaps_as_none():
    history = LagHistory(samples=3)
    history.sample([view("g", {("t", 0): (5, 10)})], now=1.0)
    history.sample([view("g", {("t", 0): (8, 7), ("t", 1): (0, 4), ("u", 0): (0, None)})], now=2.0)
    history.sample([view("g", {("t", 1): (4, 0)}), view("h", {})], now=3.0)
    assert history.to_json("g") == {"times": [1.0, 2.0, 3.0], "lag": [10, 11, 0], "partitions": [
        ["t", 0, [10, 7, None]], ["t", 1, [None, 4, 0]], ["u", 0, [None, None, None]]]}
    assert history.to_json("h") == {"times": [3.0], "lag": [0], "partitions": []}
    history.sample([view("g", {("t", 1): (4, 2)})], now=4.0)  # the oldest sample goes; h is gone
    assert history.to_json("g")["lag"] == [11, 0, 2]  # type: ignore[index]
    assert history.to_json("h") is None and history.to_json("nope") is None


@pytest.mark.skipif(os.environ.get("PYKBROKER_CONSOLE_SLOW") != "1",
                    reason="up to 15 s of 6-s samples: make test-console-slow (PYKBROKER_CONSOLE_SLOW=1)")
def test_share_and_streams_groups_are_sampled_on_their_coordinator(tmp_path):
    """A share group's lag is DescribeShareGroupOffsets' (from its share-partition start offsets), a streams
    group's its committed offsets' against the high watermarks; both sampled into the lag history."""
    with BrokerProcess(tmp_path, overrides={
            "console.listener": "127.0.0.1:0", "group.share.enable": "true", "console.write.actions.enable": "true",
            "group.streams.initial.rebalance.delay.ms": "0", "group.streams.assignment.interval.ms": "0"}) as broker, \
            RawClient(broker.bootstrap) as client:
        broker.start()
        url = broker.console_url
        assert call(url, "api/topic/create", {"name": "in", "partitions": 2}) == (200, None)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(10):
            producer.produce("in", b"%d" % i, partition=i % 2)
        assert producer.flush(30) == 0
        # the share group starts at offset 2 of both partitions: 3 + 3 records to deliver
        assert call(url, "api/group/reset", {"group": "workers", "type": "share", "topic": "in", "to": "offset",
                                             "value": "2"})[0] == 200
        # a streams group's member commits 1 and 4: 4 + 1 records behind
        joined = client.request(StreamsGroupHeartbeatRequest(
            group_id="app", member_id="m1", member_epoch=0, rebalance_timeout_ms=30000, process_id="p1",
            topology=shr.Topology(epoch=1, subtopologies=[shr.Subtopology(subtopology_id="0", source_topics=["in"])]),
            active_tasks=[], standby_tasks=[], warmup_tasks=[]), 1)
        assert joined.error_code == ErrorCode.NONE, joined
        committed = client.request(OffsetCommitRequest(
            group_id="app", generation_id_or_member_epoch=joined.member_epoch, member_id="m1", topics=[
                OffsetCommitRequestTopic(name="in", partitions=[
                    OffsetCommitRequestPartition(partition_index=p, committed_offset=o) for p, o in ((0, 1), (1, 4))])]), 9)
        assert [p.error_code for p in committed.topics[0].partitions] == [0, 0], committed
        deadline = time.monotonic() + 60
        for group, kind, lags in (("workers", "share", [["in", 0, 3], ["in", 1, 3]]),
                                  ("app", "streams", [["in", 0, 4], ["in", 1, 1]])):
            while True:  # until a sample taken after the commits above
                status, g = call(url, f"api/group?id={group}&type={kind}")
                assert status == 200 and isinstance(g, dict), g
                history = g["history"]
                if (history and history["lag"] and history["lag"][-1] == sum(lag for *_, lag in lags)
                        and [[t, p, series[-1]] for t, p, series in history["partitions"]] == lags):
                    break
                assert time.monotonic() < deadline, (group, history)
                time.sleep(0.5)
