"""The broker's side of its coordinators, on a real two-broker cluster: a transaction's markers reach the
partition leader that is not the transaction coordinator as WriteTxnMarkers v2 (KIP-1228), the highest version
both brokers serve (replication/broker_client negotiates it; test_broker_client covers a v1-only peer). About 15 s
of ZooKeeper and two brokers: with PYKBROKER_SLOW_CLUSTER=1 (``make test-cluster-slow``)."""

from __future__ import annotations

import os
import re
import time
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer

from pykbroker.testing import ClusterProcesses, RawClient, free_port
from wire.messages import CreateTopicsRequest
from wire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic


def _write_txn_markers_by_version(port: int) -> dict[str, float]:
    """kafka.network RequestsPerSec of WriteTxnMarkers by request version, from the broker's Prometheus page."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    counts: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("kafka_network_requestmetrics_requestspersec") and 'request="WriteTxnMarkers"' in line:
            version = re.search(r'version="(\d+)"', line)
            if version:
                counts[version.group(1)] = counts.get(version.group(1), 0.0) + float(line.rsplit(" ", 1)[1])
    return counts


@pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_CLUSTER") != "1",
                    reason="ZooKeeper and two brokers, 15 s: make test-cluster-slow (PYKBROKER_SLOW_CLUSTER=1)")
@pytest.mark.timeout(120)
def test_markers_go_to_the_other_broker_as_write_txn_markers_v2(tmp_path):
    ports = {1: free_port(), 2: free_port()}
    with ClusterProcesses(tmp_path, size=0, overrides={"offsets.topic.replication.factor": "1",
                                                       "transaction.state.log.replication.factor": "1",
                                                       "transaction.state.log.min.isr": "1"}) as cluster:
        for node_id, port in ports.items():
            cluster.add_broker(node_id, {"metrics.port": str(port)})
        cluster.wait_for_brokers(2)
        # One partition on each broker: whichever coordinates the transaction, the other leads a partition.
        with RawClient(cluster.broker(1).bootstrap) as c:
            c.request(CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
                name="txm", num_partitions=-1, replication_factor=-1, assignments=[
                    CreatableReplicaAssignment(partition_index=i, broker_ids=[i + 1]) for i in (0, 1)])]), 7)
            c.wait_for_topics("txm")
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "txm-tx"})
        producer.init_transactions(30)
        producer.begin_transaction()
        for partition in (0, 1):
            producer.produce("txm", b"v%d" % partition, partition=partition)
        producer.commit_transaction(30)
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "txm-g",
                             "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
        consumer.subscribe(["txm"])
        got: set[bytes] = set()
        deadline = time.monotonic() + 30
        while len(got) < 2 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.add(message.value())
        consumer.close()
        assert got == {b"v0", b"v1"}  # committed on both brokers
        by_version: dict[str, float] = {}
        for port in ports.values():
            for version, count in _write_txn_markers_by_version(port).items():
                by_version[version] = by_version.get(version, 0.0) + count
        assert by_version.get("2", 0) >= 1 and not by_version.get("1"), by_version
