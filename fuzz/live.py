"""Live-socket fuzzing: mutated real client sessions against a running broker, beside a normal producer and
consumer. ``python -m fuzz.live [--seconds 60] [--connections 32] [--seed N]``

Sessions are the captured request frames of fuzz/corpus/requests, grouped by client and put in the order
a client sends them (ApiVersions, Metadata, then the rest). Each attacking connection replays one session
with mutations (bit flips, bytes inserted, deleted or overwritten with boundary values, frames truncated
or spliced, size prefixes that lie, writes cut at random points), reads whatever comes back, and closes
or abandons the connection. Meanwhile an idempotent producer sends numbered records with acks=all and a
consumer reads them back.

Findings: the broker process dies; a normal record is lost, duplicated, reordered or altered; the broker
logs an unhandled error (a traceback: a handler or the connection failed on input it should have refused
cleanly). Exit code 0 only without findings.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import struct
import sys
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path

from pykbroker.testing import BrokerProcess

CORPUS = Path(__file__).parent / "corpus" / "requests"
_BOUNDARY = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff",
             b"\x80\x00\x00\x00", b"\xff\xff"]
_FIRST = {18: 0, 3: 1}  # ApiVersions, Metadata first, as clients do


def sessions() -> list[list[bytes]]:
    by_client: dict[str, list[tuple[int, bytes]]] = defaultdict(list)
    for path in sorted(CORPUS.glob("*.bin")):
        body = path.read_bytes()
        (api_key,) = struct.unpack_from(">h", body)
        by_client[path.name.split("-")[0]].append((_FIRST.get(api_key, 2), body))
    return [[b for _, b in sorted(frames, key=lambda f: f[0])] for frames in by_client.values()]


def mutate(body: bytes, rng: random.Random) -> bytes:
    data = bytearray(body)
    for _ in range(rng.choice((0, 1, 1, 2, 3, 8))):
        op = rng.randrange(6)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:
            data[min(pos, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            data[pos:pos] = rng.randbytes(rng.randrange(1, 9))
        elif op == 2:
            del data[pos:pos + rng.randrange(1, 17)]
        elif op == 3:
            b = rng.choice(_BOUNDARY)
            data[pos:pos + len(b)] = b
        elif op == 4:
            del data[pos:]
        else:
            data += rng.randbytes(rng.randrange(1, 64))
    return bytes(data)


def frame(body: bytes, rng: random.Random) -> bytes:
    size = len(body)
    roll = rng.random()
    if roll < 0.03:
        size = rng.choice((-1, 0, 1 << 30, 0x7FFFFFFF, size + rng.randrange(1, 100)))
    elif roll < 0.06:
        size = max(0, size - rng.randrange(1, 10))
    return struct.pack(">i", size) + body


async def attack(host: str, port: int, session: list[bytes], rng: random.Random, stats: dict) -> None:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 5)
    except (TimeoutError, OSError):
        stats["connect_failed"] += 1
        return
    try:
        frames = [frame(mutate(b, rng) if rng.random() < 0.7 else b, rng) for b in session]
        if rng.random() < 0.3:
            rng.shuffle(frames)
        data = b"".join(frames[:rng.randrange(1, len(frames) + 1)])
        while data:
            cut = rng.randrange(1, len(data) + 1) if rng.random() < 0.5 else len(data)
            writer.write(data[:cut])
            await writer.drain()
            data = data[cut:]
        stats["frames"] += len(frames)
        try:
            while await asyncio.wait_for(reader.read(65536), 0.2 if rng.random() < 0.8 else 2):
                stats["responses"] += 1
        except TimeoutError:
            stats["open_after"] += 1
        else:
            stats["closed_by_broker"] += 1
    except (ConnectionError, OSError):
        stats["closed_by_broker"] += 1
    finally:
        writer.close()
        stats["connections"] += 1


async def attackers(host: str, port: int, seconds: float, concurrency: int, seed: int, stats: dict) -> None:
    rng = random.Random(seed)
    pool = sessions()
    deadline = time.monotonic() + seconds

    async def worker(n: int) -> None:
        wrng = random.Random(rng.randrange(1 << 30) + n)
        while time.monotonic() < deadline:
            await attack(host, port, wrng.choice(pool), wrng, stats)

    await asyncio.gather(*(worker(n) for n in range(concurrency)))


def normal_clients(bootstrap: str, stop: threading.Event, result: dict) -> None:
    """An idempotent producer (acks=all) of numbered records and a consumer that checks them."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = "live-normal-" + uuid.uuid4().hex[:6]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    acked: list[int] = []
    n = 0
    while not stop.is_set():
        producer.produce(topic, value=f"record-{n}".encode(),
                         on_delivery=lambda err, msg: acked.append(int(msg.value()[7:])) if err is None else None)
        n += 1
        producer.poll(0)
        time.sleep(0.002)
    producer.flush(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[int] = []
    deadline = time.monotonic() + 60
    while len(got) < len(acked) and time.monotonic() < deadline:
        for m in consumer.consume(1000, 0.5):
            if m.error() is None:
                got.append(int(m.value()[7:]))
    consumer.close()
    result.update(sent=n, acked=len(acked), consumed=len(got),
                  intact=got == sorted(acked) == list(range(len(acked))))


def run(bootstrap: str, seconds: float, concurrency: int, seed: int) -> dict:
    host, port = bootstrap.rsplit(":", 1)
    stats: dict = defaultdict(int)
    normal: dict = {}
    stop = threading.Event()
    t = threading.Thread(target=normal_clients, args=(bootstrap, stop, normal))
    t.start()
    try:
        asyncio.run(attackers(host, int(port), seconds, concurrency, seed, stats))
    finally:
        stop.set()
        t.join(120)
    return {**stats, **{f"normal_{k}": v for k, v in normal.items()}}


# Errors logged with a traceback that Kafka 4.1 logs too, for the same input and with the same answer
# (judged against a real Kafka): not findings.
KAFKA_ALSO_LOGS = {
    "Invalid max size": "a Fetch with a negative max_bytes or partition_max_bytes: Kafka's LocalLog.read throws "
                        "IllegalArgumentException, logged at ERROR, answered UNKNOWN_SERVER_ERROR for the partition",
}


def findings(broker: BrokerProcess, result: dict) -> list[str]:
    found = []
    if not broker.alive:
        found.append("the broker died")
    if not result.get("normal_intact"):
        found.append(f"normal records not intact: {result}")
    # One log event is its first line and the traceback lines after it (up to the next timestamped line).
    events = re.split(r"\n(?=\[\d{4}-)", broker.log())
    for event in events:
        if re.search(r"unexpected error|error handling|Traceback", event) and not any(
                known in event for known in KAFKA_ALSO_LOGS):
            found.append(f"broker log: {event[:2000]}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--connections", type=int, default=32, help="attacking connections open at once")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with BrokerProcess(overrides={"group.initial.rebalance.delay.ms": "0"}) as broker:
        result = run(broker.bootstrap, args.seconds, args.connections, args.seed)
        found = findings(broker, result)
        print(" ".join(f"{k}={v}" for k, v in sorted(result.items())))
        for f in found:
            print("FINDING:", f)
        if found:
            print(f"broker log: {broker.log_path}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
