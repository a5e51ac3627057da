"""Scale benchmark: cost per partition, per connection, per group and per core, pykbroker against Apache
Kafka 4.1 (single node, KRaft combined mode, from the Maven jars) on this machine, in one run.

    python -m bench scale                     # or: make bench-scale
    SCALE_PARTITIONS=10000 python -m bench scale
    SCALE_SECTIONS=partitions,connections,groups,cores  SCALE_BROKERS=pykbroker,kafka

Sections (each figure for both brokers and the ratio pykbroker / Kafka):
- partitions: CreateTopics of SCALE_PARTITIONS partitions (default 2,000, sized for a 2-core machine
  shared with other work; the issue's 10,000 with SCALE_PARTITIONS=10000, as topics of 5,000: Kafka refuses
  one request of 10,000), timed until the metadata shows a leader for every partition and until every
  partition has acknowledged a record (Kafka's metadata shows leaders before its logs exist); then one record produced to every partition (acks=all,
  librdkafka); the broker's resident memory and open file descriptors per partition (growth over the
  idle broker, divided by the partition count); then a clean restart (SIGTERM) and a ``kill -9``
  restart, each timed from the launch of the process until a record produced to every partition is
  acknowledged again, and a check that every acknowledged record is still there after the kill.
- connections: SCALE_IDLE idle connections (default 1,000; each sent one ApiVersions, then stays open)
  held by two load-generator processes, plus SCALE_ACTIVE active clients (default 100: 50 librdkafka
  producers, acks=1, SCALE_RATE records/s each (default 10), and 50 consumers, each reading the partition of
  one producer) in processes of 10 pairs, for SCALE_ACTIVE_SECONDS (20) after SCALE_WARMUP_SECONDS (10) of the
  same load that is not measured (Kafka's JVM compiles its hot paths then); each value carries its send time,
  so latency is measured end to end by the consumer as well as to the producer's acknowledgement (p50, p99).
  The load is rate-limited so that on a 2-core machine the brokers, not the generators, set the latency: the
  generators report their worst lateness against the send schedule and their CPU, printed beside the figures.
  Also the broker's memory per idle connection and its CPU during the active load.
- groups: SCALE_GROUPS groups (default 500) each committing offsets for 4 partitions SCALE_COMMITS times
  (default 4) through OffsetCommit (AdminClient.alter_consumer_group_offsets, many in flight), from two
  processes: commits per second and the p99 of one commit. Then SCALE_MEMBERS consumers (default 100, from
  four processes) join one group on a topic with as many partitions: seconds until each holds one.
- cores: the same produce load (SCALE_GENERATORS librdkafka producer processes, acks=1, 100-byte records,
  SCALE_CORES_SECONDS long, 8 partitions) against Kafka's single node (its threads use every core) and
  against a pykbroker cluster of 1 and of 2 processes on this machine (ZooKeeper mode, partitions spread
  over the processes): records per second, and records per second of broker CPU time (the work a core
  does, which the load generators sharing the 2 cores do not distort); see the report for the model
  beyond 2 cores.

The load generators run in their own processes (``multiprocessing`` spawn) so that the client side is not
one Python interpreter's bottleneck. Results go to bench/results/scale-*.json (git-ignored).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.broker_bench import RESULTS_DIR, Results, cpu_seconds, jars_dir, print_table, rss_mb
from compat_tests.jvm.kafka_broker import KafkaBroker
from pykbroker.testing import BrokerProcess, ClusterProcesses

TOPIC = "scale"
# Partitions per topic of the partitions section: Kafka's controller refuses a CreateTopics request that
# would write more than 10,000 metadata records (a topic of 10,000 partitions is 10,001), so larger counts
# are several topics, each created by a request of its own.
TOPIC_PARTITIONS = 5000
Topics = list[tuple[str, int]]  # (topic, partitions)


def scale_topics(partitions: int) -> Topics:
    return [(f"{TOPIC}-{i}", min(TOPIC_PARTITIONS, partitions - start))
            for i, start in enumerate(range(0, partitions, TOPIC_PARTITIONS))]
JAVA_HEAP = "-Xmx1g"


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# -- brokers -------------------------------------------------------------------------------------------------
class Broker:
    """One single-node broker the bench can start, stop cleanly, kill -9 and restart on the same data."""

    name = "?"
    bootstrap = ""

    def start(self) -> float:
        """Start the broker; seconds from the launch of its process to its first ApiVersions answer (Kafka's
        separate ``kafka-storage format`` run before it is not counted)."""
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def kill(self) -> None:
        raise NotImplementedError

    def pid(self) -> int:
        raise NotImplementedError

    def close(self) -> None:
        self.stop()


class Pykbroker(Broker):
    name = "pykbroker"

    def __init__(self, root: Path) -> None:
        self.process = BrokerProcess(root / "pykbroker", {"group.initial.rebalance.delay.ms": "0"})
        self.bootstrap = self.process.bootstrap

    def start(self) -> float:
        started = time.perf_counter()
        self.process.start(timeout=600)
        return time.perf_counter() - started

    def stop(self) -> None:
        self.process.stop(timeout=600)

    def kill(self) -> None:
        self.process.kill()

    def pid(self) -> int:
        assert self.process.proc is not None
        return self.process.proc.pid


class Kafka(Broker):
    name = "kafka"

    def __init__(self, root: Path, jars: Path) -> None:
        self.kafka = KafkaBroker(jars, root / "kafka", heap=JAVA_HEAP, quick_start=False,
                                 overrides={"group.initial.rebalance.delay.ms": "0"})
        self.bootstrap = self.kafka.bootstrap

    def start(self) -> float:
        return self.kafka.start(timeout=600)

    def stop(self) -> None:
        self.kafka.stop(timeout=600)

    def kill(self) -> None:
        self.kafka.kill()

    def pid(self) -> int:
        return self.kafka.pid()


# -- partitions ----------------------------------------------------------------------------------------------
def leaders_ready(bootstrap: str, topic: str, partitions: int, timeout: float) -> None:
    """Until the metadata shows ``partitions`` partitions of ``topic``, each with a leader."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while True:
        try:
            md = admin.list_topics(topic, timeout=30).topics.get(topic)
            if md is not None and md.error is None and len(md.partitions) >= partitions and all(
                    p.leader >= 0 for p in md.partitions.values()):
                return
        except Exception:  # noqa: BLE001 - not there yet
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: not every one of {partitions} partitions has a leader after {timeout}s")
        time.sleep(0.05)


def create_partitions(bootstrap: str, topics: Topics, timeout: float = 600) -> float:
    """Seconds from CreateTopics (one request per topic, all in flight) until every partition has a leader."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    started = time.perf_counter()
    futures = [admin.create_topics([NewTopic(topic, n, 1)], request_timeout=timeout)[topic] for topic, n in topics]
    for f in futures:
        f.result(timeout)
    for topic, n in topics:
        leaders_ready(bootstrap, topic, n, timeout)
    return time.perf_counter() - started


def produce_to_all(bootstrap: str, topics: Topics, tag: bytes, timeout: float = 600) -> int:
    """One acks=all record (value ``tag``) to every partition; retries until all are acknowledged (a broker
    still loading answers with retriable errors). Returns how many were acknowledged."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "log_level": 3,
                         "message.timeout.ms": int(timeout * 1000), "retry.backoff.ms": 20,
                         "topic.metadata.refresh.interval.ms": 1000})
    acked: list[int] = []
    failed: list[object] = []

    def done(err, msg) -> None:
        (failed if err is not None else acked).append(err or msg.partition())

    for topic, partitions in topics:
        for p in range(partitions):
            producer.produce(topic, tag, partition=p, on_delivery=done)
    producer.flush(timeout)
    if failed:
        raise RuntimeError(f"{len(failed)} records not acknowledged, first: {failed[0]}")
    return len(acked)


def count_tagged(bootstrap: str, topics: Topics, tags: set[bytes], timeout: float = 300) -> tuple[int, int]:
    """(distinct (partition, value) pairs with a value in ``tags``, records with such a value), read from offset 0
    of each partition. Distinct pairs count what was kept; the rest are duplicates (a producer's retry of a
    record whose acknowledgement a restart lost; the bench's producer is not idempotent), which are not loss."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "scale-check", "enable.auto.commit": False,
                         "log_level": 3,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, 0) for topic, n in topics for p in range(n)])
    partitions = sum(n for _, n in topics)
    found: set[tuple[str, int, bytes]] = set()
    records = eof = 0
    deadline = time.monotonic() + timeout
    while eof < partitions and time.monotonic() < deadline:
        for msg in consumer.consume(10_000, 1.0):
            error = msg.error()
            if error is None:
                value = msg.value() or b""
                if value in tags:
                    records += 1
                    found.add((msg.topic() or "", msg.partition() or 0, value))
            elif error.code() == -191:  # _PARTITION_EOF
                eof += 1
    consumer.close()
    return len(found), records


def restart_to_serving(broker: Broker, topics: Topics, hard: bool, tag: bytes) -> tuple[float, float]:
    """Stop (or kill -9) the broker and start it; seconds from the launch until its first ApiVersions answer
    and until a record was acknowledged by every partition again."""
    if hard:
        broker.kill()
    else:
        broker.stop()
    os.sync()
    answering = broker.start()
    started = time.perf_counter()
    produce_to_all(broker.bootstrap, topics, tag)
    return answering, answering + time.perf_counter() - started


def partitions_section(brokers: list[Broker], results: Results, partitions: int) -> None:
    lost: list[str] = []
    topics = scale_topics(partitions)
    for b in brokers:
        os.sync()
        rss0, fds0 = rss_mb(b.pid()), open_fds(b.pid())
        led = create_partitions(b.bootstrap, topics)
        results.put(f"create {partitions} partitions, until all led s", b.name, led, False)
        started = time.perf_counter()
        produce_to_all(b.bootstrap, topics, b"first")
        produced = time.perf_counter() - started
        results.put("then 1 record acknowledged by each partition s", b.name, produced, False)
        # Kafka's metadata shows leaders before the broker has created the logs; serving is the fair end.
        results.put(f"create {partitions} partitions, until all serve s", b.name, led + produced, False)
        time.sleep(1.0)  # let the broker settle (its first checkpoints) before reading its size
        results.put("memory per partition KB", b.name, (rss_mb(b.pid()) - rss0) * 1024 / partitions, False)
        results.put("open files per partition", b.name, (open_fds(b.pid()) - fds0) / partitions, False)
        for how, hard, tag in (("clean", False, b"after-clean"), ("kill -9", True, b"after-kill")):
            answering, serving = restart_to_serving(b, topics, hard, tag)
            results.put(f"{how} restart: first ApiVersions s", b.name, answering, False)
            results.put(f"{how} restart: all {partitions} partitions serve s", b.name, serving, False)
        kept, records = count_tagged(b.bootstrap, topics, {b"first", b"after-clean", b"after-kill"})
        results.put("acknowledged records kept after kill -9 %", b.name, 100.0 * kept / (3 * partitions))
        results.put("duplicates (retried records, not idempotent)", b.name, records - kept, False)
        if kept != 3 * partitions:
            lost.append(f"{b.name}: {kept} of {3 * partitions} acknowledged records are left after kill -9")
    if lost:
        raise RuntimeError("; ".join(lost))


# -- connections ---------------------------------------------------------------------------------------------
def hold_idle_connections(bootstrap: str, count: int, ready, release) -> None:
    """Load generator: ``count`` connections, each answered one ApiVersions, held until ``release``."""
    import socket
    import struct

    host, port = bootstrap.split(":")
    request = struct.pack(">hhih", 18, 0, 1, -1)
    sockets = []
    for _ in range(count):
        s = socket.create_connection((host, int(port)), timeout=60)
        s.sendall(struct.pack(">i", len(request)) + request)
        sockets.append(s)
    for s in sockets:
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        s.recv(size, socket.MSG_WAITALL)
    ready.set()
    release.wait(3600)
    for s in sockets:
        s.close()


def active_clients(bootstrap: str, topic: str, first: int, pairs: int, rate: float, seconds: float, warmup: float,
                   out) -> None:
    """Load generator: ``pairs`` librdkafka producers and as many consumers; producer i sends ``rate`` records/s
    (acks=1) to partition ``first + i``, which consumer i reads (assigned, no group: no rebalance in the window).
    Each value carries its send time, so a consumer measures the end-to-end latency itself. The first
    ``warmup`` seconds of the same load are not measured (a JVM compiles its hot paths then). Puts on ``out``:
    acknowledgement and end-to-end latencies (ms), records sent and read, how late the generator sent against
    its schedule (worst, and the share of sends over 10 ms late), and the CPU it used (share of one core) --
    the evidence that it was not the bottleneck."""
    import resource
    import struct
    import threading

    from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition

    acks: list[float] = []
    e2e: list[float] = []
    stop = threading.Event()
    started_reading = threading.Barrier(pairs + 1)

    def consume(i: int) -> None:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"e2e-{os.getpid()}", "log_level": 3,
                      "enable.auto.commit": False})
        c.assign([TopicPartition(topic, first + i, OFFSET_END)])
        c.poll(1.0)  # connected and positioned at the end before anything is sent
        started_reading.wait(60)
        while not stop.is_set():
            msg = c.poll(0.1)
            if msg is not None and msg.error() is None:
                sent_at = struct.unpack(">d", msg.value()[:8])[0]
                if sent_at >= measure_from_wall:
                    e2e.append((time.time() - sent_at) * 1000)
        c.close()

    readers = [threading.Thread(target=consume, args=(i,), daemon=True) for i in range(pairs)]
    for r in readers:
        r.start()
    producers = [Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0, "log_level": 3})
                 for _ in range(pairs)]
    for p in producers:
        p.list_topics(topic, timeout=30)
    started_reading.wait(60)
    wall0 = time.perf_counter()
    measure_from = wall0 + 0.5 + warmup
    measure_from_wall = time.time() + 0.5 + warmup
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)

    def delivered(err, _msg, sent: float) -> None:
        if err is None and sent >= measure_from:
            acks.append((time.perf_counter() - sent) * 1000)

    interval = 1.0 / rate
    # Producer i's sends are spread over the interval, so that the load is even, not a burst per tick.
    due = [wall0 + 0.5 + interval * i / pairs for i in range(pairs)]
    end = measure_from + seconds
    lag_max = 0.0
    sent = late = 0
    padding = b"x" * 92  # 100-byte values
    while (now := time.perf_counter()) < end:
        i = min(range(pairs), key=due.__getitem__)
        if due[i] > now:
            for p in producers:
                p.poll(0)
            time.sleep(min(due[i] - now, 0.001))
            continue
        if now >= measure_from:
            lag_max = max(lag_max, now - due[i])
            late += now - due[i] > 0.010
            sent += 1
        due[i] += interval
        t = time.perf_counter()
        producers[i].produce(topic, struct.pack(">d", time.time()) + padding, partition=first + i,
                             on_delivery=lambda e, m, t=t: delivered(e, m, t))
        producers[i].poll(0)
    for p in producers:
        p.flush(30)
    time.sleep(1.0)  # the last records reach the consumers
    stop.set()
    for r in readers:
        r.join(10)
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter() - wall0
    out.put({"acks": acks, "e2e": e2e, "sent": sent, "read": len(e2e), "lag_max_ms": lag_max * 1000,
             "late": late,
             "cpu": (cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime) / wall})


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))] if ordered else float("nan")


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})  # held until the future is done
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
    leaders_ready(bootstrap, topic, partitions, 60)
    produce_to_all(bootstrap, [(topic, partitions)], b"ready", 300)  # serving, not only led (Kafka's logs come later)


def connections_section(brokers: list[Broker], results: Results, idle: int, active: int, rate: float,
                        seconds: float, warmup: float) -> None:
    """``idle`` idle connections (two processes), then ``active`` clients -- half producers, half consumers, in
    processes of 10 pairs -- at ``rate`` records/s per producer beside them. Sized for a shared 2-core machine:
    the active load is rate-limited, so that the brokers, not the generators, set the latency; the generators
    report how late they sent against their schedule and the CPU they used, and the bench prints both."""
    ctx = multiprocessing.get_context("spawn")
    pairs = max(1, active // 2)
    per_process = 10
    for b in brokers:
        topic = "connections"
        create_topic(b.bootstrap, topic, pairs)
        rss0 = rss_mb(b.pid())
        release = ctx.Event()
        holders, ready = [], []
        for _ in range(2):
            r = ctx.Event()
            p = ctx.Process(target=hold_idle_connections, args=(b.bootstrap, idle // 2, r, release))
            p.start()
            holders.append(p)
            ready.append(r)
        try:
            for r in ready:
                if not r.wait(300):
                    raise TimeoutError("idle connections not established")
            time.sleep(1.0)
            rss_idle = rss_mb(b.pid())
            results.put(f"memory per idle connection KB ({idle} idle)", b.name, (rss_idle - rss0) * 1024 / idle, False)
            out = ctx.Queue()
            cpu0 = cpu_seconds(b.pid())
            procs = [ctx.Process(target=active_clients, args=(b.bootstrap, topic, first, min(per_process, pairs - first),
                                                               rate, seconds, warmup, out))
                     for first in range(0, pairs, per_process)]
            for p in procs:
                p.start()
            parts = [out.get(timeout=warmup + seconds + 300) for _ in procs]
            for p in procs:
                p.join(60)
            label = f"{2 * pairs} active clients ({pairs * rate:.0f} records/s) beside {idle} idle"
            acks = [x for part in parts for x in part["acks"]]
            e2e = [x for part in parts for x in part["e2e"]]
            results.put(f"{label}: produce ack p50 ms", b.name, percentile(acks, 0.5), False)
            results.put(f"{label}: produce ack p99 ms", b.name, percentile(acks, 0.99), False)
            results.put(f"{label}: end-to-end p50 ms", b.name, percentile(e2e, 0.5), False)
            results.put(f"{label}: end-to-end p99 ms", b.name, percentile(e2e, 0.99), False)
            results.put(f"{label}: records read of sent %", b.name,
                        100.0 * sum(p["read"] for p in parts) / max(1, sum(p["sent"] for p in parts)))
            results.put(f"{label}: broker CPU cores busy", b.name, (cpu_seconds(b.pid()) - cpu0) / (warmup + seconds + 2), False)
            results.put(f"{label}: generator worst send lag ms", b.name, max(p["lag_max_ms"] for p in parts), False)
            results.put(f"{label}: generator sends over 10 ms late %", b.name,
                        100.0 * sum(p["late"] for p in parts) / max(1, sum(p["sent"] for p in parts)), False)
            results.put(f"{label}: generator CPU per process (cores)", b.name, max(p["cpu"] for p in parts), False)
            results.put(f"broker memory with {idle} idle + {2 * pairs} active MB", b.name, rss_mb(b.pid()), False)
        finally:
            release.set()
            for p in holders:
                p.join(60)


# -- groups --------------------------------------------------------------------------------------------------
def commit_offsets(bootstrap: str, topic: str, groups: list[str], commits: int, out) -> None:
    """Load generator: every group commits offsets for 4 partitions ``commits`` times, all groups in flight
    at once (one OffsetCommit per group per round); puts (seconds, latencies in ms) on ``out``."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    latencies: list[float] = []
    started = time.perf_counter()
    for round_ in range(commits):
        sent = time.perf_counter()
        futures = []
        for g in groups:
            offsets = [TopicPartition(topic, p, round_ * 10 + 1) for p in range(4)]
            futures += admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, offsets)]).values()
        pending = set(futures)
        for f in futures:
            f.add_done_callback(lambda f, sent=sent: latencies.append((time.perf_counter() - sent) * 1000))
        for f in pending:
            f.result(120)
    out.put((time.perf_counter() - started, latencies))


def group_members(bootstrap: str, topic: str, group: str, first: int, count: int, assigned, release) -> None:
    """Load generator: ``count`` consumers (threads) in ``group``; member ``first + i`` keeps the number of
    partitions it holds in ``assigned[first + i]`` (shared memory) until ``release``."""
    import threading

    from confluent_kafka import Consumer

    stop = threading.Event()

    def member(i: int) -> None:
        def on_assign(_c, partitions) -> None:
            assigned[first + i] = len(partitions)

        def on_revoke(_c, _partitions) -> None:
            assigned[first + i] = 0

        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3,
                      "partition.assignment.strategy": "range", "session.timeout.ms": 45000})
        c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        while not stop.is_set():
            c.poll(0.1)
        c.close()

    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(count)]
    for t in threads:
        t.start()
    release.wait(900)
    stop.set()
    for t in threads:
        t.join(60)


def rebalance_seconds(bootstrap: str, members: int, processes: int = 4) -> float:
    """``members`` consumers join one group (from ``processes`` processes) on a topic of ``members``
    partitions; seconds until each of them holds exactly one partition (the final assignment)."""
    ctx = multiprocessing.get_context("spawn")
    topic = f"rebalance-{members}"
    create_topic(bootstrap, topic, members)
    assigned = ctx.Array("i", members, lock=False)
    release = ctx.Event()
    per = members // processes
    procs = [ctx.Process(target=group_members, args=(bootstrap, topic, "one-big-group", i * per,
                                                      per if i < processes - 1 else members - i * per, assigned,
                                                      release)) for i in range(processes)]
    started = time.perf_counter()
    for p in procs:
        p.start()
    try:
        deadline = time.monotonic() + 900
        while any(n != 1 for n in assigned):
            if time.monotonic() > deadline or not all(p.is_alive() for p in procs):
                raise RuntimeError(f"{sum(n == 1 for n in assigned)} of {members} members hold one partition")
            time.sleep(0.05)
        return time.perf_counter() - started
    finally:
        release.set()
        for p in procs:
            p.join(120)


def groups_section(brokers: list[Broker], results: Results, groups: int, commits: int) -> None:
    ctx = multiprocessing.get_context("spawn")
    for b in brokers:
        topic = "groups"
        create_topic(b.bootstrap, topic, 4)
        names = [f"group-{i}" for i in range(groups)]
        # The first commit of a group loads its __consumer_offsets partition: warm every coordinator first.
        commit_offsets_local = ctx.Queue()
        warm = ctx.Process(target=commit_offsets, args=(b.bootstrap, topic, names, 1, commit_offsets_local))
        warm.start()
        commit_offsets_local.get(timeout=600)
        warm.join(60)
        out = ctx.Queue()
        procs = [ctx.Process(target=commit_offsets, args=(b.bootstrap, topic, names[i::2], commits, out))
                 for i in range(2)]
        started = time.perf_counter()
        for p in procs:
            p.start()
        parts = [out.get(timeout=600) for _ in procs]
        elapsed = time.perf_counter() - started
        for p in procs:
            p.join(60)
        latencies = sorted(x for _, lat in parts for x in lat)
        results.put(f"{groups} groups x {commits} offset commits: commits/s", b.name, groups * commits / elapsed)
        results.put(f"{groups} groups x {commits} offset commits: p99 ms", b.name,
                    latencies[int(0.99 * (len(latencies) - 1))], False)
        results.put(f"broker memory after {groups} groups MB", b.name, rss_mb(b.pid()), False)
        members = env_int("SCALE_MEMBERS", 100)
        results.put(f"{members} members join one group, until each holds a partition s", b.name,
                    rebalance_seconds(b.bootstrap, members), False)


# -- cores ---------------------------------------------------------------------------------------------------
def produce_load(bootstrap: str, topic: str, partitions: list[int], seconds: float, out) -> None:
    """Load generator: one librdkafka producer, acks=1, 100-byte records as fast as it can to ``partitions``
    for ``seconds``; puts the acknowledged record count on ``out``."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5, "batch.size": 65536,
                         "queue.buffering.max.messages": 200_000})
    producer.list_topics(topic, timeout=30)
    acked = [0]

    def done(err, _msg) -> None:
        acked[0] += err is None

    value = b"v" * 100
    end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < end:
        try:
            producer.produce(topic, value, partition=partitions[i % len(partitions)], on_delivery=done)
            i += 1
        except BufferError:
            producer.poll(0.005)
        if i % 1000 == 0:
            producer.poll(0)
    producer.flush(60)
    out.put(acked[0])


def produce_throughput(bootstrap: str, topic: str, partitions: int, generators: int, seconds: float) -> float:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=produce_load, args=(bootstrap, topic, list(range(i, partitions, generators)),
                                                    seconds, out)) for i in range(generators)]
    for p in procs:
        p.start()
    total = sum(out.get(timeout=seconds + 300) for _ in procs)
    for p in procs:
        p.join(60)
    return total / seconds


def cores_section(root: Path, kafka: Broker | None, results: Results, seconds: float, generators: int) -> None:
    """Throughput and the brokers' CPU time for the same load: records per second, and records per second of
    broker CPU (a core's worth of work), which does not depend on the load generators sharing the cores."""
    partitions = 8

    def measure(label: str, name: str, bootstrap: str, pids: list[int]) -> None:
        create_topic(bootstrap, "cores", partitions)
        before = sum(cpu_seconds(pid) for pid in pids)
        rate = produce_throughput(bootstrap, "cores", partitions, generators, seconds)
        cpu = sum(cpu_seconds(pid) for pid in pids) - before
        results.put(f"produce records/s, {label}", name, rate)
        results.put(f"produce records per broker CPU second, {label}", name, rate * seconds / max(cpu, 1e-9))
        results.put(f"broker CPU cores busy, {label}", name, cpu / seconds, False)

    if kafka is not None:
        measure("1 process", "kafka", kafka.bootstrap, [kafka.pid()])
    for size in (1, 2):
        with ClusterProcesses(root / f"cluster-{size}", size=size) as cluster:
            pids = [b.proc.pid for b in cluster.brokers.values() if b.proc is not None]
            measure("1 process" if size == 1 else f"{size} processes (pykbroker cluster; Kafka: 1)", "pykbroker",
                    cluster.bootstrap, pids)


# -- the run -------------------------------------------------------------------------------------------------
def main() -> None:
    partitions = env_int("SCALE_PARTITIONS", 2000)
    sections = os.environ.get("SCALE_SECTIONS", "partitions,connections,groups,cores").split(",")
    wanted = os.environ.get("SCALE_BROKERS", "pykbroker,kafka").split(",")
    jars = jars_dir() if "kafka" in wanted else None
    results = Results()
    failures: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="scale-bench-"))
    factories: dict[str, Callable[[], Broker]] = {"pykbroker": lambda: Pykbroker(root)}
    if jars is not None:
        factories["kafka"] = lambda: Kafka(root, jars)
    names = [n for n in wanted if n in factories]
    print(f"machine: {os.cpu_count()} cores, {platform.platform()}; {partitions} partitions; sections "
          f"{', '.join(sections)}", flush=True)
    brokers: list[Broker] = []
    try:
        for name in names:
            b = factories[name]()
            brokers.append(b)
            b.start()
        runs: list[tuple[str, Callable[[], None]]] = [
            ("partitions", lambda: partitions_section(brokers, results, partitions)),
            ("connections", lambda: connections_section(brokers, results, env_int("SCALE_IDLE", 1000),
                                                        env_int("SCALE_ACTIVE", 100), float(env_int("SCALE_RATE", 10)),
                                                        float(env_int("SCALE_ACTIVE_SECONDS", 20)),
                                                        float(env_int("SCALE_WARMUP_SECONDS", 10)))),
            ("groups", lambda: groups_section(brokers, results, env_int("SCALE_GROUPS", 500),
                                              env_int("SCALE_COMMITS", 4))),
            ("cores", lambda: cores_section(root, next((b for b in brokers if b.name == "kafka"), None), results,
                                            float(env_int("SCALE_CORES_SECONDS", 15)),
                                            env_int("SCALE_GENERATORS", 2))),
        ]
        for section, run in runs:
            if section not in sections:
                continue
            print(f"== scale: {section} ==", flush=True)
            try:
                run()
            except Exception as exc:  # one broken section must not hide the others' figures
                failures.append(f"{section}: {exc}")
                print(f"  {section}: FAILED: {str(exc)[:500]}", flush=True)
    finally:
        for b in brokers:
            try:
                b.close()
            except Exception:  # noqa: BLE001 - the rest still get stopped
                pass
        print_table(results, names)
        for failure in failures:
            print(f"FAILED {failure}")
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        out = RESULTS_DIR / time.strftime("scale-%Y%m%d-%H%M%S.json")
        out.write_text(json.dumps({"cores": os.cpu_count(), "platform": platform.platform(), "partitions": partitions,
                                   "results": results.values, "failures": failures}, indent=2))
        print(f"results written to {out}")
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
