"""A read-process-write loop with confluent-kafka, exactly once: the test runs it as a process and kills it.

Reads ``--input`` (read_committed) in group ``--group``, writes each value upper-cased to ``--output``
and commits the consumed offsets inside the same transaction. ``--crash-after N`` commits N
transactions, then opens one more, writes into it and dies (``os._exit``) without ending it, as a crashed
process would. Without it, the loop stops once it has consumed everything up to the end of the input
and prints ``done <count>``.

librdkafka's ``send_offsets_to_transaction`` can block forever past its timeout when the group coordinator
goes away under it (confluentinc/librdkafka#5456, open; the chaos campaign hits it against Apache Kafka 4.1
as against pykbroker): a watchdog ends the process with exit code 5 when the call outlives its timeout by
30 s, so that whoever runs the copier starts it again, as a supervisor would.

    python -m compat_tests.eos_copier --bootstrap HOST:PORT --input in --output out --group g --txn-id t
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

BATCH = 20
STUCK_EXIT = 5


class Watchdog:
    """Exits the process (``STUCK_EXIT``) when a call made inside ``guard(seconds)`` runs past ``seconds``."""

    def __init__(self) -> None:
        self.deadline: float | None = None
        self.what = ""
        threading.Thread(target=self._watch, daemon=True).start()

    def guard(self, seconds: float, what: str) -> Watchdog:
        self.limit, self.what = seconds, what
        return self

    def __enter__(self) -> None:
        self.deadline = time.monotonic() + self.limit

    def __exit__(self, *exc: object) -> None:
        self.deadline = None

    def _watch(self) -> None:
        while True:
            time.sleep(1.0)
            deadline = self.deadline
            if deadline is not None and time.monotonic() > deadline:
                print(f"{self.what} blocked past its timeout (librdkafka#5456); exiting", flush=True)
                os._exit(STUCK_EXIT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--txn-id", required=True)
    parser.add_argument("--crash-after", type=int, default=-1, help="die inside transaction N+1")
    args = parser.parse_args(argv)

    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "session.timeout.ms": 6000})  # the crashed copier leaves the group quickly
    producer = Producer({"bootstrap.servers": args.bootstrap, "transactional.id": args.txn_id,
                         "transaction.timeout.ms": 60_000})
    producer.init_transactions(60)
    watchdog = Watchdog()
    consumer.subscribe([args.input])
    copied = transactions = 0
    idle_since = time.monotonic()
    while True:
        messages = [m for m in consumer.consume(BATCH, timeout=1.0) if m.error() is None]
        if not messages:
            if time.monotonic() - idle_since > 3 and at_end(consumer):
                break
            continue
        idle_since = time.monotonic()
        producer.begin_transaction()
        for m in messages:
            value, partition = m.value(), m.partition()
            assert value is not None and partition is not None  # the input's records all have values
            producer.produce(args.output, key=m.key(), value=value.upper(), partition=partition)
        if transactions == args.crash_after:
            producer.flush(30)  # the records are in the log, the transaction stays open
            print(f"crashing inside transaction {transactions + 1} after {copied} records", flush=True)
            os._exit(3)
        try:
            with watchdog.guard(60, "send_offsets_to_transaction"):
                producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                     consumer.consumer_group_metadata(), 30)
            commit(producer)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise
            # A broker failed under the transaction (as the cluster fault tests make them): abort it and
            # copy the same records again from the last committed offsets, as an exactly-once app does.
            print(f"aborting transaction {transactions + 1}: {exc.args[0]}", flush=True)
            producer.abort_transaction(60)
            rewind(consumer)
            continue
        copied += len(messages)
        transactions += 1
    print(f"done {copied} records in {transactions} transactions", flush=True)
    consumer.close()
    return 0


def commit(producer: Producer) -> None:
    """Commit, retrying what the client says is retriable (a coordinator moving to another broker)."""
    deadline = time.monotonic() + 120
    while True:
        try:
            producer.commit_transaction(30)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def rewind(consumer: Consumer) -> None:
    """Go back to the group's committed offsets (what the aborted transaction read is read again)."""
    assignment = consumer.assignment()
    for tp in consumer.committed(assignment, timeout=30):
        consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))


# ListOffsets answers a client sees while a partition's leadership moves (Kafka's retriable errors)
_MOVING = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.OFFSET_NOT_AVAILABLE,
           KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError.UNKNOWN_TOPIC_OR_PART}


def at_end(consumer: Consumer) -> bool:
    """Every assigned partition's position is at its (last stable) end."""
    assignment = consumer.assignment()
    if not assignment:
        return False
    positions = consumer.position(assignment)
    committed = {(tp.topic, tp.partition): tp.offset for tp in consumer.committed(assignment, timeout=10)}
    for tp in positions:
        try:
            _, high = consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=10)
        except KafkaException as exc:
            if exc.args[0].code() in _MOVING:  # a leader moving after a kill: ask again on the next idle poll
                return False
            raise
        # a partition nothing was read from since the assignment has no position: its committed offset is
        offset = tp.offset if tp.offset >= 0 else committed.get((tp.topic, tp.partition), -1)
        if offset < high and high > 0:
            return False
    return True


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KafkaException as exc:
        print(f"eos_copier failed: {exc}", file=sys.stderr)
        sys.exit(2)
