"""Log-dir move benchmark: the time to move one replica holding BENCH_LOG_DIRS_MB megabytes to the other log
dir of its broker (AlterReplicaLogDirs) while a producer keeps writing to it, on a single pykbroker and a
single Apache Kafka 4.1 node, each with two log dirs; same machine, same run, same client.

    python -m bench.log_dirs_bench              # BENCH_LOG_DIRS_MB=200

The partition is filled by confluent-kafka (acks=all, 100 KB incompressible records); then a second producer
writes 1 KB records at about 1 MB/s (acks=all) and AlterReplicaLogDirs moves the replica. The figure is the
time from the request to the first DescribeLogDirs that shows the replica in the other dir and no future
replica; also printed: the longest gap between two acknowledgements during the move and the records lost
(acknowledged but not read back: must be 0).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

from bench.broker_bench import confluent_produce, jars_dir
from pykbroker.testing import BrokerProcess, RawClient
from wire.messages import AlterReplicaLogDirsRequest, CreateTopicsRequest, DescribeLogDirsRequest
from wire.messages.alter_replica_log_dirs_request import AlterReplicaLogDir, AlterReplicaLogDirTopic
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.describe_log_dirs_request import DescribableLogDirTopic

RECORD = 100_000
TOPIC = "moving"


class _Load:
    """1 KB records at about 1 MB/s (acks=all) until stopped; the longest gap between acknowledgements."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Producer
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                                  "enable.idempotence": True})
        self.acked = 0
        self.failed = 0
        self.last_ack = time.perf_counter()
        self.max_gap = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err, _msg) -> None:
        now = time.perf_counter()
        if err is not None:
            self.failed += 1
            return
        if self.acked:  # from the first acknowledgement on (not the producer's start-up)
            self.max_gap = max(self.max_gap, now - self.last_ack)
        self.acked += 1
        self.last_ack = now

    def _run(self) -> None:
        value = os.urandom(1000)
        while not self._stop.is_set():
            for _ in range(100):
                self.producer.produce(TOPIC, value, on_delivery=self._delivered)
            self.producer.poll(0.1)
        self.producer.flush(60)

    def start(self) -> _Load:
        self.last_ack = time.perf_counter()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)


def _placement(bootstrap: str, names: dict[str, str]) -> list[tuple[str, bool]]:
    with RawClient(bootstrap, timeout=30) as c:
        r = c.request(DescribeLogDirsRequest(topics=[DescribableLogDirTopic(topic=TOPIC, partitions=[0])]), 4)
    return sorted((names.get(d.log_dir, d.log_dir), p.is_future_key) for d in r.results for t in d.topics
                  for p in t.partitions)


def _records(bootstrap: str) -> int:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-check"})
    low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30)
    consumer.close()
    return high - low


def move_seconds(bootstrap: str, a: Path, b: Path, megabytes: int) -> dict[str, float]:
    names = {str(a): "a", str(b): "b"}
    with RawClient(bootstrap, timeout=30) as c:
        c.request(CreateTopicsRequest(topics=[CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1)],
                                      timeout_ms=30_000), 5)
        c.wait_for_topics(TOPIC, timeout=30)
    confluent_produce(bootstrap, TOPIC, megabytes * 1_000_000 // RECORD, RECORD, "all", "none")
    filled = _records(bootstrap)
    home = _placement(bootstrap, names)[0][0]
    target = str(b) if home == "a" else str(a)
    load = _Load(bootstrap).start()
    time.sleep(1)
    started = time.perf_counter()
    with RawClient(bootstrap, timeout=30) as c:
        r = c.request(AlterReplicaLogDirsRequest(dirs=[AlterReplicaLogDir(path=target, topics=[
            AlterReplicaLogDirTopic(name=TOPIC, partitions=[0])])]), 2)
    assert r.results[0].partitions[0].error_code == 0, r
    while _placement(bootstrap, names) != [(names[target], False)]:
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    time.sleep(1)
    load.stop()
    lost = filled + load.acked - _records(bootstrap)
    return {"seconds": seconds, "max_ack_gap_s": load.max_gap, "lost": lost, "failed": load.failed}


def main() -> None:
    megabytes = int(os.environ.get("BENCH_LOG_DIRS_MB", "200"))
    print(f"moving one replica of {megabytes} MB to the other log dir of its broker, under a producer")
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-log-dirs-") as tmp:
        root = Path(tmp)
        for name in ("pykbroker", "kafka"):
            a, b = root / name / "a", root / name / "b"
            a.mkdir(parents=True)
            b.mkdir()
            overrides = {"log.dirs": f"{a},{b}"}
            if name == "pykbroker":
                with BrokerProcess(root / name / "broker", overrides=overrides) as broker:
                    results[name] = move_seconds(broker.bootstrap, a, b, megabytes)
            else:
                jars = jars_dir()
                if jars is None:
                    continue
                from compat_tests.jvm.kafka_broker import KafkaBroker
                with KafkaBroker(jars, root / name / "kafka", overrides=overrides, heap="-Xmx1g",
                                 quick_start=False) as k:
                    results[name] = move_seconds(k.bootstrap, a, b, megabytes)
            r = results[name]
            print(f"{name:10s} moved in {r['seconds']:6.2f} s; longest gap between acks {r['max_ack_gap_s']:.3f} s; "
                  f"lost {r['lost']:.0f}, failed deliveries {r['failed']:.0f}", flush=True)
    if "kafka" in results:
        print(f"ratio pykbroker/kafka: {results['pykbroker']['seconds'] / results['kafka']['seconds']:.2f}")


if __name__ == "__main__":
    main()
