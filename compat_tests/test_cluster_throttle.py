"""Throttle precision (slow: ``make test-cluster-slow``, skipped in ``make test``): a reassignment throttled with
Kafka 4.1's kafka-reassign-partitions --throttle copies at the throttle, within 20 %.

Kafka's replication quota is a rate over 11 one-second windows, so a copy of a few seconds measures the windows'
start-up (about ten seconds' worth passes at once), not the rate: this copies 75 MB at 1 MB/s, over a minute,
and measures the new replica's log as it grows on disk: over the whole copy, and from 15 % to 95 % of it (past
the first burst, and before the move's completion, which waits for the ISR change).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.test_cluster_reassignment import (
    REASSIGN,
    jars,  # noqa: F401  (a fixture)
    ongoing,
    partitions,
    plan_file,
    tool,
    unique,
    wait_for,
)
from pykbroker.testing import ClusterProcesses

pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper and Kafka's tools need java"),
    pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_CLUSTER") != "1",
                       reason="minutes long: run by make test-cluster-slow (PYKBROKER_SLOW_CLUSTER=1)"),
]

RATE = 1_000_000  # B/s
SIZE = 75_000_000  # B: about 65 s at RATE once the first ten seconds' worth has passed


def log_bytes(data_dir: str, topic: str) -> int:
    """Bytes of ``topic-0``'s segments in a broker's log directory."""
    directory = Path(data_dir) / "logs" / f"{topic}-0"
    try:
        return sum(f.stat().st_size for f in directory.glob("*.log"))
    except FileNotFoundError:
        return 0


def test_a_throttled_move_copies_within_20_percent_of_the_throttle(jars, tmp_path):  # noqa: F811
    with ClusterProcesses(tmp_path / "cluster", size=2) as cluster:
        topic = unique("throttle-precision")
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1]])])[topic].result(30)
        wait_for(lambda: partitions(admin, topic)[0][0] == 1, "a leader")
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 20})
        for i in range(SIZE // 10_000):
            producer.produce(topic, os.urandom(10_000), key=str(i).encode())
            producer.poll(0)
        assert producer.flush(300) == 0
        total = log_bytes(cluster.broker(1).data_dir, topic)
        assert total >= SIZE

        plan = plan_file(tmp_path, {(topic, 0): [1, 2]})
        tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--execute", "--reassignment-json-file",
             str(plan), "--throttle", str(RATE))
        follower_dir = cluster.broker(2).data_dir
        samples: list[tuple[float, int]] = []
        deadline = time.monotonic() + 4 * SIZE / RATE
        while ongoing(cluster):
            samples.append((time.monotonic(), log_bytes(follower_dir, topic)))
            assert time.monotonic() < deadline, f"the copy took over {4 * SIZE / RATE:.0f} s: {samples[-1]}"
            time.sleep(0.5)
        samples.append((time.monotonic(), log_bytes(follower_dir, topic)))
        started = next(t for t, size in samples if size > 0)
        took = samples[-1][0] - started
        low = next((t, s) for t, s in samples if s >= 0.15 * total)
        high = next((t, s) for t, s in samples if s >= 0.95 * total)
        steady = (high[1] - low[1]) / (high[0] - low[0])
        whole = total / took  # from the first byte on the new replica to the end of the move
        print(f"copied {total} B in {took:.1f} s under a {RATE} B/s throttle: {steady:.0f} B/s from 15 % to 95 %, "
              f"{whole:.0f} B/s over the whole copy, {(total - 10 * RATE) / took:.0f} B/s less 10 s worth")
        assert abs(steady - RATE) <= 0.2 * RATE, f"{steady:.0f} B/s from 15 % to 95 % under a {RATE} B/s throttle"
        assert abs(whole - RATE) <= 0.2 * RATE, f"{whole:.0f} B/s over the copy under a {RATE} B/s throttle"
