"""One consumer-group member (confluent-kafka) as a process of its own, for ``workloads.GroupWorkload``.

A member thread stuck inside librdkafka (``commit(asynchronous=False)`` or ``close()`` after its group
coordinator was killed) can be neither interrupted nor killed; a process can. The member prints one JSON
line per event on stdout, flushed at once, so what it consumed survives it being killed:

    {"consumed": [topic, partition, offset, key, value, at]}
    {"committed": [[topic, partition, offset], ...], "at": at}

``at`` is ``time.monotonic()`` of this process (the same clock as its parent's on Linux), taken when the
record was returned or the commit acknowledged. SIGTERM asks for a last commit and ``close()``. A watchdog
(``compat_tests.eos_copier.Watchdog``) ends the process with ``STUCK_EXIT`` when a commit or the close
outlives its bound, so whoever runs the member can start it again or give up on it.

    python -m chaos.group_member --bootstrap HOST:PORT --topic t --group g --client-id c
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaException

from compat_tests.eos_copier import Watchdog

COMMIT_BOUND_S = 60.0  # a synchronous commit still blocked after this is stuck (the coordinator moved under it)
CLOSE_BOUND_S = 20.0  # the last commit and close() when asked to stop: the parent waits a little longer


def emit(event: dict) -> None:
    sys.stdout.write(json.dumps(event, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def commit(consumer: Consumer, watchdog: Watchdog, bound: float) -> None:
    """Commit the positions synchronously; print what the coordinator acknowledged."""
    try:
        with watchdog.guard(bound, "commit(asynchronous=False)"):
            committed = consumer.commit(asynchronous=False)
    except KafkaException:
        return  # not acknowledged (coordinator moving, rebalance): nothing to report
    at = time.monotonic()
    offsets = [[tp.topic, tp.partition, tp.offset] for tp in committed or [] if tp.error is None and tp.offset >= 0]
    if offsets:
        emit({"committed": offsets, "at": at})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos.group_member", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--commit-every", type=int, default=100, help="records between commits (or 1 s)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    consumer = Consumer({"bootstrap.servers": args.bootstrap, "log_level": 2, "group.id": args.group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", "session.timeout.ms": 10_000,
                         "client.id": args.client_id})
    watchdog = Watchdog()
    consumer.subscribe([args.topic])
    since, last_commit = 0, time.monotonic()
    while not stop.is_set():
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            key, value = m.key(), m.value()
            emit({"consumed": [m.topic(), m.partition(), m.offset(), key.decode() if key else None,
                               value.decode() if value is not None else "", time.monotonic()]})
            since += 1
        if since >= args.commit_every or (since and time.monotonic() - last_commit > 1.0):
            commit(consumer, watchdog, COMMIT_BOUND_S)
            since, last_commit = 0, time.monotonic()
    commit(consumer, watchdog, CLOSE_BOUND_S)
    with watchdog.guard(CLOSE_BOUND_S, "close()"):
        consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
