"""Workloads with stock clients (librdkafka through confluent-kafka), each a thread recording into a History.

- ``ProducerWorkload``: an idempotent acks=all producer writing numbered (optionally keyed) records.
- ``GroupWorkload``: members of a consumer group (``chaos.group_member`` processes) reading and committing
  offsets synchronously.
- ``TransactionWorkload``: a transactional producer committing and aborting transactions at random.
- ``CopierWorkload``: compat_tests/eos_copier as a process (read_committed, offsets in the transaction),
  restarted whenever it dies, until its input is drained.
- ``WatermarkSampler``: high watermarks asked of partition leaders (ListOffsets) over time.
``read_back`` reads a partition from its start after the run (read_uncommitted or read_committed).
"""

from __future__ import annotations

import json
import random
import signal
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


def child_event(line: str, log) -> dict | None:
    """A line a workload's process printed, as its JSON event; None after copying a line that is not one
    (a warning, a traceback) to ``log``."""
    try:
        return json.loads(line)
    except ValueError:
        log.write(line)
        log.flush()
        return None


class Workload:
    """A daemon thread running ``_run`` until ``stop()``; errors it cannot handle land in ``errors``.
    ``request_stop()`` only asks, so that several workloads wind down at once before each is waited for."""

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

    def request_stop(self) -> None:
        self._stop.set()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 150.0) -> None:
        self.request_stop()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self.errors.append(f"{self.name}: did not stop within {timeout}s")


class ProducerWorkload(Workload):
    """Idempotent acks=all writes of ``<name>-<seq>`` round-robin over ``partitions`` at about ``rate``
    records/s; with ``keys`` each record has key ``k<seq % keys>`` (keyed updates of a compacted topic)."""

    def __init__(self, name: str, history: History, clock: Clock, bootstrap: str, topic: str, partitions: int,
                 rate: float = 150.0, keys: int = 0, *, first_seq: int = 0, instance: str = "",
                 on_sent: Callable[[Produced], None] | None = None) -> None:
        """``first_seq``/``instance``: a producer started again after its process died goes on with the
        sequence (values stay unique) under a new instance name (send order holds per producer instance);
        ``on_sent`` hears of each record as it is handed to the client, before any acknowledgement."""
        super().__init__(name, history, clock)
        self.topic, self.partitions, self.rate, self.keys = topic, partitions, rate, keys
        self.first_seq, self.instance, self.on_sent = first_seq, instance or name, on_sent
        self.producer = Producer({"bootstrap.servers": bootstrap, "log_level": 2, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5, "message.timeout.ms": 120_000, "retry.backoff.ms": 50,
                                  "client.id": self.instance})

    def _callback(self, partition: int, key: str | None, value: str, seq: int, sent: float):
        def delivered(err, msg) -> None:
            now = self.clock()
            if err is None:
                offset = msg.offset()  # None: acknowledged without an offset (see checker._known)
                self.history.add(Produced(self.topic, partition, key, value, True, -1 if offset is None else offset,
                                          sent=sent,
                                          acked=now, producer=self.instance, seq=seq))
            else:
                self.history.add(Produced(self.topic, partition, key, value, False, -1, str(err), sent=sent,
                                          acked=now, producer=self.instance, seq=seq))
        return delivered

    def _run(self) -> None:
        seq = self.first_seq
        interval = 1.0 / self.rate
        next_at = time.monotonic()
        while not self._stop.is_set():
            key = f"k{seq % self.keys}" if self.keys else None
            partition = (seq % self.keys if self.keys else seq) % self.partitions  # a key lives in one partition
            value = f"{self.name}-{seq}"
            sent = self.clock()
            if self.on_sent is not None:
                self.on_sent(Produced(self.topic, partition, key, value, False, sent=sent, producer=self.instance,
                                      seq=seq))
            try:
                self.producer.produce(self.topic, value.encode(), key.encode() if key else None, partition=partition,
                                      on_delivery=self._callback(partition, key, value, seq, sent))
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
    """``members`` consumers of ``group`` on ``topic`` (``chaos.group_member`` processes), each committing its
    position synchronously every ``commit_every`` records or second; what they read and what the coordinator
    acknowledged is recorded as they print it. A member that exits stuck (its watchdog) while the run goes on
    is started again (``stuck_runs``); one that does not end within ``stop``'s bound is killed and named in
    ``abandoned``; what it printed before is in the history and checked like the rest."""

    def __init__(self, name: str, history: History, clock: Clock, bootstrap: str, topic: str, group: str,
                 log_path: Path, members: int = 2, commit_every: int = 100) -> None:
        super().__init__(name, history, clock)
        self.bootstrap, self.topic, self.group, self.commit_every = bootstrap, topic, group, commit_every
        self.log_path = log_path
        self.count = members
        self.procs: dict[int, subprocess.Popen] = {}
        self.runs = 0
        self.stuck_runs = 0
        self.abandoned: list[str] = []
        self._lock = threading.Lock()  # starting a member vs. stop() signalling them

    def _run(self) -> None:
        threads = [threading.Thread(target=self._supervise, args=(i,), name=f"{self.name}-m{i}", daemon=True)
                   for i in range(self.count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def _supervise(self, index: int) -> None:
        reader = f"group:{self.group}:m{index}"
        offset = self.clock() - time.monotonic()  # a member's monotonic times -> this run's clock
        with open(self.log_path, "a") as log:
            while True:
                with self._lock:
                    if self._stop.is_set():
                        return
                    proc = self.procs[index] = subprocess.Popen(
                        [sys.executable, "-m", "chaos.group_member", "--bootstrap", self.bootstrap, "--topic", self.topic,
                         "--group", self.group, "--client-id", f"{self.name}-m{index}",
                         "--commit-every", str(self.commit_every)],
                        cwd=REPO, stdout=subprocess.PIPE, stderr=log, text=True)
                    self.runs += 1
                assert proc.stdout is not None
                for line in proc.stdout:
                    self._record(line, reader, offset, log)
                proc.wait()
                if self._stop.is_set():
                    return
                if proc.returncode == STUCK_EXIT:
                    self.stuck_runs += 1
                else:
                    self.errors.append(f"{self.name}: member m{index} exited with {proc.returncode} while the run "
                                       f"went on; see {self.log_path}")
                log.write(f"--- member m{index} exited with {proc.returncode} at {self.clock():.1f}s; starting it again\n")
                log.flush()

    def _record(self, line: str, reader: str, offset: float, log) -> None:
        event = child_event(line, log)  # None: the watchdog's words, a traceback
        if event is None:
            return
        if "consumed" in event:
            topic, partition, off, key, value, at = event["consumed"]
            self.history.add(Consumed(topic, partition, off, key, value, reader, round(at + offset, 3)))
        elif "committed" in event:
            at = round(event["at"] + offset, 3)
            for topic, partition, off in event["committed"]:
                self.history.add(Commit(self.group, topic, partition, off, at))

    def request_stop(self) -> None:
        with self._lock:
            self._stop.set()
            for proc in self.procs.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 45.0) -> None:
        """Ask every member for its last commit and close; kill (and name in ``abandoned``) any member still
        running after ``timeout`` seconds, which a member's own watchdog should have ended already."""
        self.request_stop()
        deadline = time.monotonic() + timeout
        for index, proc in sorted(self.procs.items()):
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                self.abandoned.append(f"m{index}")
        self._thread.join(10)  # the readers end once the killed members' pipes are drained
        if self._thread.is_alive():
            self.errors.append(f"{self.name}: did not stop within {timeout}s")

    def kill(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()


class TransactionWorkload(Workload):
    """A transactional producer writing batches of ``<name>-<txn>-<i>`` to ``topic``, committing or
    (one in three) aborting each; records are recorded once their transaction's outcome is known, or with
    ``txn="unknown"`` (every record of it) when the client could not tell."""

    def __init__(self, name: str, history: History, clock: Clock, bootstrap: str, topic: str, partitions: int,
                 seed: int, *, transactional_id: str = "",
                 on_pending: Callable[[list[Produced]], None] | None = None) -> None:
        """``transactional_id`` (default ``name``): a producer started again after its process died keeps
        the id, which fences its predecessor, under a new ``name`` (values stay unique); ``on_pending`` hears
        of each transaction's records before its commit or abort is asked for, and ``[]`` once its outcome is
        recorded."""
        super().__init__(name, history, clock)
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.transactional_id, self.on_pending = transactional_id or name, on_pending
        self.rng = random.Random(seed)
        self.outcomes = {"committed": 0, "aborted": 0, "unknown": 0}

    def _producer(self) -> Producer:
        p = Producer({"bootstrap.servers": self.bootstrap, "log_level": 2, "transactional.id": self.transactional_id,
                      "linger.ms": 5, "transaction.timeout.ms": 30_000, "client.id": self.name})
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
            count = self.rng.randint(1, 10)
            opened = [Produced(self.topic, i % self.partitions, None, f"{self.name}-{txn}-{i}", False,
                               producer=self.name, seq=i, txn="unknown") for i in range(count)]
            try:
                producer.begin_transaction()
                if self.on_pending is not None:
                    self.on_pending(opened)
                for i in range(count):
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
            if outcome == "unknown":  # committed or aborted, whole either way (checker): every record named
                for p in opened:
                    p.acked = self.clock()
                    self.history.add(p)
            for p in pending if outcome != "unknown" else ():
                if outcome == "committed" and not p.ok:
                    p.ok = True  # a commit succeeded, so every record of the transaction is in it
                p.txn = outcome
                self.history.add(p)
            if self.on_pending is not None:
                self.on_pending([])
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
        """Kill the running copier process and run it no more (the campaign is being torn down)."""
        self._killed = True
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    def stop(self, timeout: float = 150.0) -> None:
        """A last run drains the input; one that cannot within ``timeout`` is killed (its output then
        misses inputs, which the copy check reports)."""
        super().stop(timeout)
        if self._thread.is_alive():
            self.kill()
            self._thread.join(10)

    _killed = False

    def _run(self) -> None:
        draining = False
        with open(self.log_path, "a") as log:
            while not self._killed:
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
