"""Workloads with stock clients (librdkafka through confluent-kafka), each a thread recording into a History.

- ``ProducerWorkload``: an idempotent acks=all producer writing numbered (optionally keyed) records.
- ``GroupWorkload``: members of a consumer group reading and committing offsets synchronously.
- ``TransactionWorkload``: a transactional producer committing and aborting transactions at random.
- ``CopierWorkload``: compat_tests/eos_copier as a process (read_committed, offsets in the transaction),
  restarted whenever it dies, until its input is drained.
- ``WatermarkSampler``: high watermarks asked of partition leaders (ListOffsets) over time.
``read_back`` reads a partition from its start after the run (read_uncommitted or read_committed).
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from chaos.history import Commit, Consumed, History, Produced, Watermark
from compat_tests.eos_copier import STUCK_EXIT

Clock = Callable[[], float]
REPO = Path(__file__).resolve().parent.parent


def consumed(m: Message, reader: str, at: float) -> Consumed:
    """The history entry of a message a consumer returned (a record: it has a topic, partition, offset, value)."""
    topic, partition, offset, value, key = m.topic(), m.partition(), m.offset(), m.value(), m.key()
    assert topic is not None and partition is not None and offset is not None and value is not None
    return Consumed(topic, partition, offset, key.decode() if key else None, value.decode(), reader, at)


class Workload:
    """A daemon thread running ``_run`` until ``stop()``; errors it cannot handle land in ``errors``."""

    def __init__(self, name: str, history: History, clock: Clock) -> None:
        self.name = name
        self.history = history
        self.clock = clock
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._guarded, name=name, daemon=True)

    def _guarded(self) -> None:
        try:
            self._run()
        except Exception as exc:  # noqa: BLE001 - reported in the verdict, never silently lost
            self.errors.append(f"{self.name}: {exc!r}")

    def _run(self) -> None:
        raise NotImplementedError

    def start(self) -> Workload:
        self._thread.start()
        return self

    def stop(self, timeout: float = 150.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self.errors.append(f"{self.name}: did not stop within {timeout}s")


class ProducerWorkload(Workload):
    """Idempotent acks=all writes of ``<name>-<seq>`` round-robin over ``partitions`` at about ``rate``
    records/s; with ``keys`` each record has key ``k<seq % keys>`` (keyed updates of a compacted topic)."""

    def __init__(self, name: str, history: History, clock: Clock, bootstrap: str, topic: str, partitions: int,
                 rate: float = 150.0, keys: int = 0) -> None:
        super().__init__(name, history, clock)
        self.topic, self.partitions, self.rate, self.keys = topic, partitions, rate, keys
        self.producer = Producer({"bootstrap.servers": bootstrap, "log_level": 2, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5, "message.timeout.ms": 120_000, "retry.backoff.ms": 50,
                                  "client.id": name})

    def _callback(self, partition: int, key: str | None, value: str, seq: int, sent: float):
        def delivered(err, msg) -> None:
            now = self.clock()
            if err is None:
                offset = msg.offset()  # None: acknowledged without an offset (see checker._known)
                self.history.add(Produced(self.topic, partition, key, value, True, -1 if offset is None else offset,
                                          sent=sent,
                                          acked=now, producer=self.name, seq=seq))
            else:
                self.history.add(Produced(self.topic, partition, key, value, False, -1, str(err), sent=sent,
                                          acked=now, producer=self.name, seq=seq))
        return delivered

    def _run(self) -> None:
        seq = 0
        interval = 1.0 / self.rate
        next_at = time.monotonic()
        while not self._stop.is_set():
            key = f"k{seq % self.keys}" if self.keys else None
            partition = (seq % self.keys if self.keys else seq) % self.partitions  # a key lives in one partition
            value = f"{self.name}-{seq}"
            try:
                self.producer.produce(self.topic, value.encode(), key.encode() if key else None, partition=partition,
                                      on_delivery=self._callback(partition, key, value, seq, self.clock()))
                seq += 1
            except BufferError:
                self.producer.poll(0.05)
            next_at += interval
            while (wait := next_at - time.monotonic()) > 0:
                self.producer.poll(wait)  # returns early when it served a delivery callback
            if time.monotonic() - next_at > 1.0:
                next_at = time.monotonic()  # behind (the cluster stalled): do not burst to catch up
        self.producer.flush(130)


class GroupWorkload(Workload):
    """``members`` consumers of ``group`` on ``topic``, each committing its position synchronously every
    ``commit_every`` records or second; what they read and what the coordinator acknowledged is recorded."""

    def __init__(self, name: str, history: History, clock: Clock, bootstrap: str, topic: str, group: str,
                 members: int = 2, commit_every: int = 100) -> None:
        super().__init__(name, history, clock)
        self.bootstrap, self.topic, self.group, self.commit_every = bootstrap, topic, group, commit_every
        self.members = [threading.Thread(target=self._member, args=(i,), daemon=True) for i in range(members)]

    def _run(self) -> None:
        for t in self.members:
            t.start()
        for t in self.members:
            t.join()

    def _member(self, index: int) -> None:
        reader = f"group:{self.group}:m{index}"
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "log_level": 2, "group.id": self.group, "enable.auto.commit": False,
                             "auto.offset.reset": "earliest", "session.timeout.ms": 10_000,
                             "client.id": f"{self.name}-m{index}"})
        consumer.subscribe([self.topic])
        since, last_commit = 0, time.monotonic()
        try:
            while not self._stop.is_set():
                m = consumer.poll(0.2)
                if m is not None and m.error() is None:
                    self.history.add(consumed(m, reader, self.clock()))
                    since += 1
                if since >= self.commit_every or (since and time.monotonic() - last_commit > 1.0):
                    self._commit(consumer)
                    since, last_commit = 0, time.monotonic()
            self._commit(consumer)
        finally:
            consumer.close()

    def _commit(self, consumer: Consumer) -> None:
        try:
            committed = consumer.commit(asynchronous=False)
        except KafkaException:
            return  # not acknowledged (coordinator moving, rebalance): nothing to record
        now = self.clock()
        for tp in committed or []:
            if tp.error is None and tp.offset >= 0:
                self.history.add(Commit(self.group, tp.topic, tp.partition, tp.offset, now))


class TransactionWorkload(Workload):
    """A transactional producer writing batches of ``<name>-<txn>-<i>`` to ``topic``, committing or
    (one in three) aborting each; records are recorded once their transaction's outcome is known."""

    def __init__(self, name: str, history: History, clock: Clock, bootstrap: str, topic: str, partitions: int,
                 seed: int) -> None:
        super().__init__(name, history, clock)
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.rng = random.Random(seed)
        self.outcomes = {"committed": 0, "aborted": 0, "unknown": 0}

    def _producer(self) -> Producer:
        p = Producer({"bootstrap.servers": self.bootstrap, "log_level": 2, "transactional.id": self.name, "linger.ms": 5,
                      "transaction.timeout.ms": 30_000, "client.id": self.name})
        deadline = time.monotonic() + 300
        while True:  # a timeout is retriable ("retry call to resume"): the coordinator is still moving or loading
            try:
                p.init_transactions(60)
                return p
            except KafkaException as exc:
                if not exc.args[0].retriable() or time.monotonic() > deadline:
                    raise

    def _run(self) -> None:
        producer = self._producer()
        txn = 0
        while not self._stop.is_set():
            txn += 1
            pending: list[Produced] = []

            def delivered(err, msg, _pending=pending) -> None:
                value = msg.value().decode()
                _pending.append(Produced(self.topic, msg.partition(), None, value, err is None,
                                         msg.offset() if err is None and msg.offset() is not None else -1,
                                         "" if err is None else str(err),
                                         acked=self.clock(), producer=self.name, seq=len(_pending)))
            outcome = "unknown"
            try:
                producer.begin_transaction()
                for i in range(self.rng.randint(1, 10)):
                    producer.produce(self.topic, f"{self.name}-{txn}-{i}".encode(), partition=i % self.partitions,
                                     on_delivery=delivered)
                if self.rng.random() < 1 / 3:
                    producer.abort_transaction(60)
                    outcome = "aborted"
                else:
                    commit(producer)
                    outcome = "committed"
            except KafkaException as exc:
                error = exc.args[0]
                try:
                    if error.txn_requires_abort():
                        producer.abort_transaction(60)
                        outcome = "aborted"
                    elif error.fatal():
                        producer = self._producer()  # fenced or fatal: a new producer aborts the old transaction
                        outcome = "aborted"
                except KafkaException:
                    producer = self._producer()
                    outcome = "aborted"
            producer.flush(10)
            self.outcomes[outcome] += 1
            for p in pending:
                if outcome == "committed" and not p.ok:
                    p.ok = True  # a commit succeeded, so every record of the transaction is in it
                p.txn = outcome if outcome != "unknown" else ""
                if outcome != "unknown":
                    self.history.add(p)
            time.sleep(0.05)


def commit(producer: Producer) -> None:
    """Commit, retrying what the client says is retriable (the coordinator moving to another broker)."""
    deadline = time.monotonic() + 90
    while True:
        try:
            producer.commit_transaction(30)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


class CopierWorkload(Workload):
    """compat_tests/eos_copier copying ``source`` to ``sink`` exactly once; run again whenever it exits
    (killed broker under a commit, or idle) until ``stop()`` and a final run that drains the input."""

    def __init__(self, name: str, history: History, clock: Clock, bootstrap: str, source: str, sink: str,
                 log_path: Path) -> None:
        super().__init__(name, history, clock)
        self.bootstrap, self.source, self.sink, self.log_path = bootstrap, source, sink, log_path
        self.runs = 0
        self.failed_runs = 0
        self.stuck_runs = 0  # ended by the copier's watchdog (librdkafka#5456), counted among the failed ones
        self.proc: subprocess.Popen | None = None

    def kill(self) -> None:
        """Kill the running copier process (the campaign is being torn down)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    def _run(self) -> None:
        draining = False
        with open(self.log_path, "a") as log:
            while True:
                draining = self._stop.is_set()
                self.proc = proc = subprocess.Popen([sys.executable, "-m", "compat_tests.eos_copier", "--bootstrap", self.bootstrap,
                                         "--input", self.source, "--output", self.sink, "--group", f"{self.name}-g",
                                         "--txn-id", self.name], cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
                self.runs += 1
                while proc.poll() is None:
                    time.sleep(0.2)
                if proc.returncode != 0:
                    self.failed_runs += 1
                    self.stuck_runs += proc.returncode == STUCK_EXIT
                elif draining:
                    return
                log.write(f"--- copier exited with {proc.returncode} at {self.clock():.1f}s; running it again\n")
                log.flush()


class WatermarkSampler(Workload):
    """Asks each partition's leader for its high watermark every ``interval`` seconds."""

    def __init__(self, name: str, history: History, clock: Clock, bootstrap: str, topics: dict[str, int],
                 interval: float = 0.5) -> None:
        super().__init__(name, history, clock)
        self.topics, self.interval = topics, interval
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "log_level": 2, "group.id": f"{name}-unused",
                                  "client.id": name})

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                for topic, partitions in self.topics.items():
                    for p in range(partitions):
                        at = self.clock()
                        try:
                            _, high = self.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=2,
                                                                          cached=False)
                        except KafkaException:
                            continue  # no leader answering now: nothing seen
                        if high >= 0:
                            self.history.add(Watermark(topic, p, high, at))
        finally:
            self.consumer.close()


def read_back(bootstrap: str, topic: str, partition: int, history: History, clock: Clock, *,
              committed: bool = False, timeout: float = 120.0) -> int:
    """Read ``topic-partition`` from its start to its end (the high watermark, or the last stable offset
    with ``committed``) into ``history`` as reader ``final`` / ``final-committed``; returns the count."""
    reader = "final-committed" if committed else "final"
    consumer = Consumer({"bootstrap.servers": bootstrap, "log_level": 2, "group.id": f"chaos-read-{topic}-{partition}",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": "read_committed" if committed else "read_uncommitted"})
    try:
        tp = TopicPartition(topic, partition)
        _, high = consumer.get_watermark_offsets(tp, timeout=30)
        consumer.assign([TopicPartition(topic, partition, 0)])
        count, last = 0, -1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                continue
            error = m.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(error)
                position = consumer.position([TopicPartition(topic, partition)])[0].offset
                if committed or position >= high or high == 0:  # compacted: offsets have gaps
                    return count
                continue
            record = consumed(m, reader, clock())
            history.add(record)
            count, last = count + 1, record.offset
        raise TimeoutError(f"read back of {topic}-{partition} stopped at {last} (high watermark {high})")
    finally:
        consumer.close()
