"""Coordinator benchmark: offset commits on a three-broker pykbroker cluster against a three-node Kafka 4.4 cluster.

    python -m bench coordinator      # BENCH_SECONDS=5 per figure after BENCH_WARMUP=3; BENCH_ONLY=pykbroker|kafka

Each figure: ``N`` connections to a group's coordinator, each committing one offset of its own simple group
(generation -1) synchronously (one OffsetCommit v8 in flight per connection, as a consumer's commitSync) for
BENCH_SECONDS; the figure is commits per second and the p50/p99 latency of one commit.
- "same partition": every group hashes to one __consumer_offsets partition (one coordinator shard: what
  pipelining the shard's appends is about);
- "spread": the groups hash to N different partitions led by the same broker.
``__consumer_offsets`` has three replicas (both clusters' defaults), so each commit is replicated before it is
answered. The client is one thread with a selector (its cost is small next to a broker's). Each figure also gives
the brokers' CPU time per commit (all three processes, user + system), steadier than rates on a busy machine.
BENCH_FIGURES=one,same,spread,txn picks figures; "txn": 8 confluent-kafka transactional producers, each committing
its own group's offset (groups of one partition) in a transaction of its own, back to back (transactions/s).
"""

from __future__ import annotations

import os
import selectors
import socket
import statistics
import struct
import tempfile
import time
from pathlib import Path

from compat_tests.jvm.kafka_broker import KafkaCluster, jars_dir
from coordinator.group.partitioner import partition_for as group_partition_for
from pykbroker.testing import ClusterProcesses, RawClient

SECONDS = float(os.environ.get("BENCH_SECONDS", "5"))
WARMUP = float(os.environ.get("BENCH_WARMUP", "3"))
TOPIC = "bench-offsets"
OFFSETS_PARTITIONS = 50


def partition_for(group: str) -> int:
    return group_partition_for(group, OFFSETS_PARTITIONS)


def coordinator_of(bootstrap: str, group: str) -> str:
    from wire.messages import FindCoordinatorRequest
    deadline = time.monotonic() + 60
    with RawClient(bootstrap.split(",")[0]) as c:
        while True:
            r = c.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4)
            found = r.coordinators[0]
            if found.error_code == 0:
                return f"{found.host}:{found.port}"
            if time.monotonic() > deadline:
                raise TimeoutError(f"no coordinator for {group}: {found}")
            time.sleep(0.2)


def groups_on(partitions: list[int], prefix: str) -> list[str]:
    """One group id per entry of ``partitions`` (repeats allowed), hashing to that partition."""
    out: list[str] = []
    used: set[str] = set()
    i = 0
    for p in partitions:
        while True:
            g = f"{prefix}-{i}"
            i += 1
            if partition_for(g) == p and g not in used:
                used.add(g)
                out.append(g)
                break
    return out


def commit_frame(group: str, offset: int, correlation_id: int) -> bytes:
    from wire.messages import OffsetCommitRequest
    from wire.messages.offset_commit_request import OffsetCommitRequestPartition, OffsetCommitRequestTopic
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequestTopic(name=TOPIC, partitions=[OffsetCommitRequestPartition(
            partition_index=0, committed_offset=offset, committed_metadata="")])])
    c = RawClient.__new__(RawClient)
    c.client_id = "coordinator-bench"
    return c.frame(req, 8, correlation_id)


def drive(address: str, groups: list[str], seconds: float) -> tuple[float, list[float], int]:
    """(commits per second, latencies in ms, errors) of one connection per group committing back to back."""
    from wire import Reader, decode_response_header
    from wire.messages import OffsetCommitResponse
    host, port = address.rsplit(":", 1)
    sel = selectors.DefaultSelector()
    state: dict[socket.socket, list] = {}
    for g in groups:
        s = socket.create_connection((host, int(port)))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        state[s] = [g, 0, 0.0, b""]  # group, next offset, sent at, buffer
        sel.register(s, selectors.EVENT_READ)
    latencies: list[float] = []
    errors = 0

    def send(s: socket.socket) -> None:
        st = state[s]
        st[1] += 1
        st[2] = time.perf_counter()
        s.sendall(commit_frame(st[0], st[1], st[1]))

    for s in state:
        send(s)
    started = time.perf_counter()
    end = started + seconds
    warm = started + min(1.0, seconds / 5)
    counted_from = None
    count = 0
    while True:
        now = time.perf_counter()
        if now >= end:
            break
        for key, _ in sel.select(end - now):
            s = key.fileobj
            st = state[s]
            st[3] += s.recv(65536)
            while len(st[3]) >= 4:
                size = struct.unpack(">i", st[3][:4])[0]
                if len(st[3]) < 4 + size:
                    break
                body, st[3] = st[3][4:4 + size], st[3][4 + size:]
                t = time.perf_counter()
                if t >= warm:
                    if counted_from is None:
                        counted_from = t
                    latencies.append((t - st[2]) * 1000)
                    count += 1
                r = Reader(body)
                decode_response_header(r, 1)
                resp = OffsetCommitResponse.decode(r.buf[r.pos:], 8)
                if any(p.error_code for tp in resp.topics for p in tp.partitions):
                    errors += 1
                send(s)
    for s in state:
        sel.unregister(s)
        s.close()
    elapsed = time.perf_counter() - (counted_from or started)
    return count / elapsed if elapsed > 0 else 0.0, latencies, errors


def create_topic(bootstrap: str) -> None:
    from wire.messages import CreateTopicsRequest
    from wire.messages.create_topics_request import CreatableTopic
    with RawClient(bootstrap.split(",")[0]) as c:
        c.request(CreateTopicsRequest(topics=[CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=3)],
                                      timeout_ms=30000), 5)
        c.wait_for_topics(TOPIC, timeout=60)


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes ``pids`` (the brokers) have used."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def figures(name: str, bootstrap: str, pids: list[int]) -> list[tuple[str, str, float, float, float, int]]:
    create_topic(bootstrap)
    rows = []
    # The partition of a probe group, and its coordinator: every figure talks to that broker.
    probe = groups_on([7], "probe")[0]
    address = coordinator_of(bootstrap, probe)
    # Partitions led by that broker, for the spread figure.
    led = [p for p in range(OFFSETS_PARTITIONS)
           if coordinator_of(bootstrap, groups_on([p], f"lead{p}")[0]) == address]
    wanted = os.environ.get("BENCH_FIGURES", "one,same,spread,txn").split(",")
    for label, groups in [
        ("1 conn, 1 group", groups_on([7], "one") if "one" in wanted else []),
        ("16 conns, same partition", groups_on([7] * 16, "same") if "same" in wanted else []),
        ("16 conns, spread", groups_on((led * 16)[:16], "spread") if "spread" in wanted else []),
    ]:
        if not groups:
            continue
        for g in groups:
            coordinator_of(bootstrap, g)  # loads nothing new for same-partition groups; finds each
        drive(address, groups, WARMUP)  # loads the groups, warms a JIT
        cpu_before = cpu_seconds(pids)
        rate, lat, errors = drive(address, groups, SECONDS)
        cpu_ms = (cpu_seconds(pids) - cpu_before) * 1000 / max(len(lat), 1)
        lat.sort()
        p50 = statistics.median(lat) if lat else 0.0
        p99 = lat[int(len(lat) * 0.99) - 1] if lat else 0.0
        rows.append((name, label, rate, p50, p99, errors))
        print(f"{name:9} {label:26} {rate:8.0f} commits/s  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  "
              f"brokers' CPU {cpu_ms:5.2f} ms/commit  errors {errors}", flush=True)
    if "txn" in wanted:
        transactions(name, bootstrap, pids, groups_on([7] * TXN_PRODUCERS, "txn"))
    return rows


TXN_PRODUCERS = 8


def transactions(name: str, bootstrap: str, pids: list[int], groups: list[str]) -> None:
    """``TXN_PRODUCERS`` confluent-kafka producers, each committing its group's offset in a transaction of its own
    (AddOffsetsToTxn, TxnOffsetCommit, EndTxn and a marker on the groups' one __consumer_offsets partition), back to
    back; transactions per second."""
    import threading

    from confluent_kafka import Consumer, Producer, TopicPartition

    done = [0] * len(groups)
    stop = threading.Event()
    counting = threading.Event()

    def loop(i: int, group: str) -> None:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{group}-txn"})
        producer.init_transactions(60)
        offset = 0
        while not stop.is_set():
            offset += 1
            producer.begin_transaction()
            producer.send_offsets_to_transaction([TopicPartition(TOPIC, 0, offset)],
                                                 consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
            if counting.is_set():
                done[i] += 1
        producer.flush(5)
        consumer.close()

    threads = [threading.Thread(target=loop, args=(i, g), daemon=True) for i, g in enumerate(groups)]
    for t in threads:
        t.start()
    time.sleep(WARMUP + 2)  # the producers' ids and the coordinators' loads
    counting.set()
    cpu_before = cpu_seconds(pids)
    started = time.perf_counter()
    time.sleep(SECONDS)
    count, elapsed = sum(done), time.perf_counter() - started
    cpu_ms = (cpu_seconds(pids) - cpu_before) * 1000 / max(count, 1)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    print(f"{name:9} {f'{TXN_PRODUCERS} txn producers, offsets':26} {count / elapsed:8.0f} txns/s     "
          f"brokers' CPU {cpu_ms:5.2f} ms/txn", flush=True)


def main() -> None:
    only = os.environ.get("BENCH_ONLY")
    with tempfile.TemporaryDirectory(prefix="coordinator-bench-") as tmp:
        root = Path(tmp)
        if only in (None, "pykbroker"):
            with ClusterProcesses(root / "pykbroker", size=3) as cluster:
                figures("pykbroker", cluster.bootstrap,
                        [b.proc.pid for b in cluster.brokers.values() if b.proc is not None])
        if only in (None, "kafka"):
            jars = jars_dir("4.4.0")
            if jars is None:
                print("Kafka 4.4's jars are not available")
                return
            kafka = KafkaCluster(jars, root / "kafka", heap="-Xmx1g", quick_start=False)
            kafka.start()
            try:
                figures("kafka", kafka.bootstrap, [n.pid() for n in kafka.nodes])
            finally:
                for n in kafka.nodes:
                    n.kill()
                kafka.close()


if __name__ == "__main__":
    main()
