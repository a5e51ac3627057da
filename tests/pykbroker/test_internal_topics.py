"""Brokers of a cluster racing to create a coordinator topic on first use: every broker asked FindCoordinator at
the same moment tries to create __consumer_offsets (and __transaction_state); all but one find it created by
another meanwhile. As Kafka's AutoTopicCreationManager lets TopicExistsException go, that is no error: the
client hears COORDINATOR_NOT_AVAILABLE (retriable) until the topic has leaders, and no broker logs a failure."""

from __future__ import annotations

import os
import re
import shutil
import threading
import time

import pytest

from pykbroker.testing import ClusterProcesses, RawClient
from wire import ErrorCode
from wire.messages import FindCoordinatorRequest

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")


def find(bootstrap: str, key_type: int, barrier: threading.Barrier, answers: list[int]) -> None:
    with RawClient(bootstrap, timeout=30) as c:
        barrier.wait()
        deadline = time.monotonic() + 60
        while True:
            r = c.request(FindCoordinatorRequest(key_type=key_type, coordinator_keys=["k"]), 4)
            code = r.coordinators[0].error_code
            answers.append(code)
            if code == ErrorCode.NONE or time.monotonic() > deadline:
                return
            time.sleep(0.1)


def test_brokers_racing_to_create_a_coordinator_topic_all_succeed_quietly(tmp_path):
    overrides = {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3"}
    with ClusterProcesses(tmp_path, size=3, overrides=overrides) as cluster:
        for key_type in (0, 1):  # a group's coordinator, then a transactional id's
            barrier = threading.Barrier(3)
            answers: dict[int, list[int]] = {i: [] for i in cluster.brokers}
            threads = [threading.Thread(target=find, args=(b.bootstrap, key_type, barrier, answers[i]))
                       for i, b in cluster.brokers.items()]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for i, codes in answers.items():
                assert codes[-1] == ErrorCode.NONE, (key_type, i, codes)
                assert set(codes) <= {ErrorCode.NONE, ErrorCode.COORDINATOR_NOT_AVAILABLE}, (key_type, i, codes)
        for i, broker in cluster.brokers.items():
            text = broker.log()
            assert not re.search(r"creating __\S+ failed", text), f"broker {i}:\n{text[-3000:]}"
            assert "KeyError" not in text, f"broker {i}:\n{text[-3000:]}"


@pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_CLUSTER") != "1",
                    reason="a 3-broker cluster and a kill -9, ~30 s: make test-cluster-slow (PYKBROKER_SLOW_CLUSTER=1)")
def test_first_transactional_producer_after_a_broker_died(tmp_path):
    """A 3-broker cluster loses a broker (kill -9) before anything transactional ran: Kafka 4.4 still creates
    __transaction_state with replication factor 3 (the dead broker, registered but fenced, holds the third replica;
    leaders and ISR live ones), so the first transactional producer gets going. Found by Flink's AT_LEAST_ONCE job
    through a broker kill (compat_tests/test_flink.py), whose bounded read's transactional producer timed out."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    with ClusterProcesses(tmp_path, size=3, overrides={"transaction.state.log.num.partitions": "6"}) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("t", 3, 3)])["t"].result(30)  # every broker holds replicas
        cluster.broker(3).kill()
        deadline = time.monotonic() + 60
        while 3 in {b.id for b in admin.list_topics(timeout=10).brokers.values()}:  # its registration expired
            assert time.monotonic() < deadline, "broker 3 still registered a minute after its kill -9"
            time.sleep(0.5)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "first"})
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.produce("t", b"v", partition=0)
        producer.commit_transaction(60)
        topic = admin.list_topics("__transaction_state", timeout=10).topics["__transaction_state"]
        assert {len(p.replicas) for p in topic.partitions.values()} == {3}
        assert all(3 in p.replicas and p.leader != 3 and 3 not in p.isrs for p in topic.partitions.values())
