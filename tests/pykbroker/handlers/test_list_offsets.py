"""ListOffsets on a real 3-broker cluster after a leader election (KIP-207): the new leader, whose high
watermark is still below the start of its leader epoch, answers a client's latest offset with
OFFSET_NOT_AVAILABLE (LEADER_NOT_AVAILABLE before v5) until its followers caught up, then the offset."""

from __future__ import annotations

import shutil
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from chaos.cluster import ProxiedCluster, node_name
from pykbroker.testing import RawClient
from wire import ErrorCode
from wire.messages import DescribeLogDirsRequest, ListOffsetsRequest
from wire.messages.describe_log_dirs_request import DescribableLogDirTopic
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")

LATEST, EARLIEST = -1, -2


def list_offset(bootstrap: str, topic: str, timestamp: int, version: int) -> tuple[int, int]:
    with RawClient(bootstrap) as c:
        request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(
            name=topic, partitions=[ListOffsetsPartition(partition_index=0, timestamp=timestamp)])])
        answer = c.request(request, version).topics[0].partitions[0]
        return answer.error_code, answer.offset


def log_size(bootstrap: str, topic: str) -> int:
    """The bytes of ``topic``-0's log on the broker at ``bootstrap`` (-1: not hosted there)."""
    with RawClient(bootstrap) as c:
        results = c.request(DescribeLogDirsRequest(topics=[DescribableLogDirTopic(topic=topic, partitions=[0])]),
                            4).results
    return max((p.partition_size for r in results for t in r.topics for p in t.partitions), default=-1)


def wait_until(condition, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError(f"no {what} after {timeout}s")


@pytest.mark.timeout(240)
def test_a_new_leader_answers_offset_not_available_until_its_high_watermark_reaches_its_epoch_start(tmp_path):
    with ProxiedCluster(tmp_path, size=3, overrides={"replica.lag.time.max.ms": "120000"}) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("kip207", 1, replica_assignment=[[1, 2, 3]])])["kip207"].result(30)
        wait_until(lambda: admin.list_topics("kip207", timeout=5).topics["kip207"].partitions[0].leader == 1,
                   what="leader 1")
        wait_until(lambda: len(admin.list_topics("kip207", timeout=5).topics["kip207"].partitions[0].isrs) == 3,
                   what="a full ISR")
        # Broker 3 stays in the ISR (registered, within the lag time) but cannot fetch: broker 2 gets the
        # records, the high watermark stays at 0 on both.
        cluster.network.isolate(node_name(3), [node_name(1), node_name(2)])
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": 1})
        for i in range(5):
            producer.produce("kip207", f"r{i}".encode(), partition=0)
        assert producer.flush(30) == 0
        leader2 = cluster.broker(2).bootstrap
        wait_until(lambda: list_offset(cluster.broker(1).bootstrap, "kip207", LATEST, 7) == (ErrorCode.NONE, 0),
                   what="a high watermark of 0 on broker 1")
        leader_bytes = log_size(cluster.broker(1).bootstrap, "kip207")
        wait_until(lambda: log_size(leader2, "kip207") == leader_bytes > 0, what="broker 2 holding the five records")
        cluster.broker(1).kill()
        wait_until(lambda: list_offset(leader2, "kip207", EARLIEST, 7)[0] == ErrorCode.NONE, what="broker 2 leading")
        assert list_offset(leader2, "kip207", LATEST, 7) == (ErrorCode.OFFSET_NOT_AVAILABLE, -1)
        assert list_offset(leader2, "kip207", LATEST, 5) == (ErrorCode.OFFSET_NOT_AVAILABLE, -1)
        assert list_offset(leader2, "kip207", LATEST, 4) == (ErrorCode.LEADER_NOT_AVAILABLE, -1)
        assert list_offset(leader2, "kip207", 0, 7) == (ErrorCode.OFFSET_NOT_AVAILABLE, -1)  # a timestamp search
        assert list_offset(leader2, "kip207", EARLIEST, 7) == (ErrorCode.NONE, 0)
        cluster.network.heal()  # broker 3 fetches from broker 2 up to its epoch start: the high watermark is known
        wait_until(lambda: list_offset(leader2, "kip207", LATEST, 7) == (ErrorCode.NONE, 5), what="latest offset 5")
        assert list_offset(leader2, "kip207", 0, 7) == (ErrorCode.NONE, 0)
