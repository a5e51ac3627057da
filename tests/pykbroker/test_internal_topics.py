"""Brokers of a cluster racing to create a coordinator topic on first use: every broker asked FindCoordinator at
the same moment tries to create __consumer_offsets (and __transaction_state); all but one find it created by
another meanwhile. As Kafka's AutoTopicCreationManager lets TopicExistsException go, that is no error: the
client hears COORDINATOR_NOT_AVAILABLE (retriable) until the topic has leaders, and no broker logs a failure."""

from __future__ import annotations

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
