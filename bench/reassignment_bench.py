"""Reassignment benchmark: the time to move one partition holding BENCH_REASSIGN_MB megabytes to a broker
that has none of it, with no throttle, on a three-broker pykbroker cluster (ZooKeeper) and a three-node
Apache Kafka 4.1 KRaft cluster, same machine, same run, same client.

    python -m bench.reassignment_bench          # BENCH_REASSIGN_MB=256; 1024 for the issue's 1 GiB figure

The partition is created on broker 1 alone and filled by confluent-kafka (acks=all, 100 KB records,
incompressible); AlterPartitionReassignments then moves it to broker 2. The figure is the time from the
request to the first ListPartitionReassignments that lists no move (the new replica caught up, joined the
ISR, leads, and broker 1 was removed). What ListPartitionReassignments answered during the move is printed
for both, as clients see it.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from bench.broker_bench import confluent_produce, jars_dir
from bench.cluster_bench import KafkaClusterTarget, PykbrokerCluster, wait_until
from pykbroker.testing import RawClient
from wire.messages import (
    AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequest,
    MetadataRequest,
)
from wire.messages.alter_partition_reassignments_request import ReassignablePartition, ReassignableTopic

RECORD = 100_000


def _controller(bootstrap: str) -> str:
    """The address AlterPartitionReassignments goes to: the controller Metadata names (any broker of Kafka 4.1
    forwards it; a ZooKeeper-mode cluster answers NOT_CONTROLLER elsewhere)."""
    with RawClient(bootstrap.split(",")[0]) as c:
        md = c.request(MetadataRequest(topics=[]), 9)
    node = next((b for b in md.brokers if b.node_id == md.controller_id), md.brokers[0])
    return f"{node.host}:{node.port}"


def ongoing(bootstrap: str) -> list:
    with RawClient(_controller(bootstrap)) as c:
        r = c.request(ListPartitionReassignmentsRequest(timeout_ms=10_000, topics=None), 0)
    return [(t.name, p.partition_index, list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in r.topics for p in t.partitions]


def move_seconds(bootstrap: str, topic: str, megabytes: int) -> tuple[float, list]:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1]])])[topic].result(60)
    wait_until(lambda: admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader == 1, "a leader", 60)
    confluent_produce(bootstrap, topic, megabytes * 1_000_000 // RECORD, RECORD, "all", "none")
    started = time.perf_counter()
    with RawClient(_controller(bootstrap)) as c:
        r = c.request(AlterPartitionReassignmentsRequest(timeout_ms=30_000, topics=[ReassignableTopic(
            name=topic, partitions=[ReassignablePartition(partition_index=0, replicas=[2])])]), 0)
    assert r.error_code == 0 and r.responses[0].partitions[0].error_code == 0, r
    seen = []
    while True:
        now = ongoing(bootstrap)
        if not now:
            break
        if now not in seen:
            seen.append(now)
        time.sleep(0.05)
    took = time.perf_counter() - started
    wait_until(lambda: list(admin.list_topics(topic, timeout=10).topics[topic].partitions[0].replicas) == [2],
               "replicas [2] in Metadata", 60)
    return took, seen


def main() -> None:
    megabytes = int(os.environ.get("BENCH_REASSIGN_MB", "256"))
    jars = jars_dir()
    with tempfile.TemporaryDirectory(prefix="reassign-bench-") as root:
        targets = [PykbrokerCluster(Path(root))]
        if jars is not None:
            targets.append(KafkaClusterTarget(Path(root), jars))
        for target in targets:
            target.start()
            try:
                took, seen = move_seconds(target.bootstrap, "moved", megabytes)
                print(f"{target.name}: moved one partition of {megabytes} MB to a new broker in {took:.2f} s "
                      f"({megabytes / took:.0f} MB/s); ListPartitionReassignments during the move: {seen}")
            finally:
                target.stop()


if __name__ == "__main__":
    main()
