"""Apache Flink 2.2's Kafka connector (5.0.0-2.2) as a real application, judged by Kafka 4.4 running the same job.

FlinkKafkaJob (compat_tests/jvm/flink, compiled here against the jars fetch_jars.sh caches; a local MiniCluster in
one JVM, parallelism 2) reads ``in-*`` with KafkaSource (the committed offsets, else the earliest; read_committed;
partition discovery every second), upper-cases each value and writes ``out-*`` with KafkaSink, keyed as its input,
checkpointing every second. Each scenario (the sink EXACTLY_ONCE with either transaction naming, or AT_LEAST_ONCE),
on one node and on 3 brokers (pykbroker's cluster kit against a 3-node Kafka 4.4 KRaft cluster), one side at a time:

1. 120 records on the input's 2 partitions; the job starts;
2. a partition is added to the input and records are produced to all 3 while the job runs; once the new
   partition's records reach the output (discovery worked), the JVM is killed (kill -9) with its transaction open;
3. the job restarts from its last retained checkpoint, so the sink must commit or abort the transactions it left
   (EXACTLY_ONCE: the connector's default naming, which aborts by probing transactional ids, and POOLING, which
   finds them with ListTransactions and DescribeTransactions); on 3 brokers a broker is killed (kill -9) while more
   records are produced, and stays dead: the leader of the output's partition 0 (default naming, and
   AT_LEAST_ONCE: its producer retries the batches the dead leader did not acknowledge) or the coordinator of an
   ongoing transaction of the sink (POOLING);
4. once the output holds every record and the group has committed the input's end, another producer leaves a
   transaction open on the output, and a bounded (batch-mode) KafkaSource job reads the output (read_committed)
   from the earliest to the latest offsets and prints it: it prints every committed record, then waits at the open
   transaction (its stopping offsets are the ends, past the last stable offsets) and ends once it is aborted.

Judged, equal on both: the output read with read_committed (EXACTLY_ONCE: every record once, in per-key order;
AT_LEAST_ONCE: every record, first occurrences in per-key order, duplicates allowed), the consumer group's committed
offsets, the bounded read, and the ERROR lines the job logged. Each side is also judged against the expected
records itself. Minutes of JVM work: PYKBROKER_FLINK_SLOW=1 (``make test-flink-slow``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from compat_tests.conftest import KAFKA_44, judge_jars, pykbroker_cluster, started_kafka_cluster
from compat_tests.jvm.kafka_broker import KafkaBroker
from pykbroker.testing import BrokerProcess, RawClient, free_port
from wire.messages import ListTransactionsRequest

SLOW = os.environ.get("PYKBROKER_FLINK_SLOW") == "1"
pytestmark = pytest.mark.skipif(not SLOW, reason="set PYKBROKER_FLINK_SLOW=1 (make test-flink-slow)")
HERE = Path(__file__).resolve().parent / "jvm" / "flink"
KAFKA_HEAP = "-Xmx320m"
FIRST, SECOND, THIRD = 120, 240, 120  # records produced before the job, around its kill -9, after its restart
KEYS_PER_PARTITION = 4
DEADLINE = 240.0


@pytest.fixture(scope="module")
def job_classes(tmp_path_factory) -> tuple[Path, Path]:
    """(Flink's jars, the compiled job's class directory)."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip("java is not installed: Flink runs on it")
    fetched = subprocess.run(["bash", str(HERE / "fetch_jars.sh")], capture_output=True, text=True, timeout=1200)
    assert fetched.returncode == 0, f"compat_tests/jvm/flink/fetch_jars.sh failed (is Maven installed?):\n{fetched.stderr}"
    jars = Path(fetched.stdout.strip().splitlines()[-1])
    classes = tmp_path_factory.mktemp("flink-job")
    subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", f"{jars}/*", str(HERE / "FlinkKafkaJob.java")],
                   check=True, capture_output=True, timeout=300)
    return jars, classes


class FlinkJob:
    """One FlinkKafkaJob JVM; its stdout (and log) goes to ``log``."""

    def __init__(self, job: tuple[Path, Path], log: Path, **args: str) -> None:
        jars, classes = job
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                ["java", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                 f"-Dlog4j2.configurationFile={HERE / 'log4j2.properties'}", "-cp", f"{jars}/*:{classes}",
                 "FlinkKafkaJob", *(f"{k}={v}" for k, v in args.items())],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def kill(self) -> None:
        """kill -9, as a crash."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)


@dataclass
class Target:
    """A broker or cluster under test: its bootstrap, and (3 brokers) how to kill -9 one of them by node id."""

    bootstrap: str
    replication: int
    kill: Callable[[int], None] | None = None
    nodes: dict[int, str] = field(default_factory=dict)  # 3 brokers: node id -> its address
    requests: Callable[[], dict[str, float]] = dict  # pykbroker's one node: requests served, by API


def requests_served(port: int) -> dict[str, float]:
    """kafka.network RequestsPerSec by API (all versions), from a pykbroker's Prometheus page."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    counts: dict[str, float] = {}
    for m in re.finditer(r'^kafka_network_requestmetrics_requestspersec\S*request="(\w+)"\S* (\S+)$', text, re.M):
        counts[m.group(1)] = counts.get(m.group(1), 0.0) + float(m.group(2))
    return counts


@contextlib.contextmanager
def kafka_target(mode: str, root: Path) -> Iterator[Target]:
    if mode == "cluster":
        with started_kafka_cluster(judge_jars(KAFKA_44), root, heap=KAFKA_HEAP) as cluster:
            yield Target(cluster.bootstrap, 3, lambda node: cluster.node(node).kill(),
                         {n.node_id: n.bootstrap for n in cluster.nodes})
        return
    node = KafkaBroker(judge_jars(KAFKA_44), root, heap=KAFKA_HEAP)
    try:
        node.start()
        yield Target(node.bootstrap, 1)
    finally:
        node.kill()
        node.close()


@contextlib.contextmanager
def pykbroker_target(mode: str, root: Path) -> Iterator[Target]:
    if mode == "cluster":
        with contextlib.contextmanager(pykbroker_cluster)(root) as cluster:
            yield Target(cluster.bootstrap, 3, lambda node: cluster.broker(node).kill(),
                         {n: b.bootstrap for n, b in cluster.brokers.items()})
        return
    port = free_port()
    with BrokerProcess(root / "broker", {"metrics.port": str(port)}) as broker:
        yield Target(broker.bootstrap, 1, requests=lambda: requests_served(port))


def key_of(partition: int, i: int) -> str:
    """Keys stay on their input partition (produced to it explicitly), so per-key order is the partition's."""
    return f"p{partition}-k{i % KEYS_PER_PARTITION}"


class Records:
    """Produces the input: record n of partition p is (key_of(p, n), "p<p>-v<n>"), remembered per key in order."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
        self.sent: dict[str, list[str]] = {}
        self.next: dict[int, int] = {}

    def produce(self, count: int, partitions: int, pace: float = 0.0) -> None:
        deadline = time.monotonic() + 60
        while len(self.producer.list_topics(self.topic, 10).topics[self.topic].partitions) < partitions:
            assert time.monotonic() < deadline, f"the producer does not see {partitions} partitions of {self.topic}"
            time.sleep(0.5)  # (the producer's metadata learns of an added partition)
        for n in range(count):
            p = n % partitions
            i = self.next.get(p, 0)
            self.next[p] = i + 1
            key, value = key_of(p, i), f"p{p}-v{i}"
            self.producer.produce(self.topic, key=key, value=value, partition=p)
            self.sent.setdefault(key, []).append(value.upper())
            if pace and n % 10 == 9:
                self.producer.flush(30)
                time.sleep(pace)
        assert self.producer.flush(60) == 0, "the input was not all produced"

    def total(self) -> int:
        return sum(map(len, self.sent.values()))


class Background(threading.Thread):
    """``call(*args)`` in a thread; ``join()`` raises what it raised."""

    def __init__(self, call: Callable[..., None], *args: object) -> None:
        super().__init__(daemon=True)
        self.call, self.args_ = call, args
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.call(*self.args_)
        except BaseException as e:  # noqa: BLE001 - handed to join()
            self.error = e

    def join(self, timeout: float | None = None) -> None:
        super().join(timeout)
        if self.error is not None:
            raise self.error


class Output:
    """The output topic read with read_committed, accumulated per key in offset order."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-assigned-manually",
                                  "isolation.level": "read_committed", "enable.auto.commit": False})
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self.by_key: dict[str, list[str]] = {}
        self.partition_of: dict[str, int] = {}

    def poll(self, seconds: float = 0.5) -> None:
        for m in self.consumer.consume(500, seconds):
            if m.error() is None:
                key = (m.key() or b"").decode()
                self.by_key.setdefault(key, []).append((m.value() or b"").decode())
                self.partition_of[key] = m.partition() or 0

    def count(self) -> int:
        return sum(map(len, self.by_key.values()))

    def wait(self, done: Callable[[], bool], timeout: float, what: str, job: FlinkJob | None = None) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if job is not None and job.proc.poll() is not None:
                raise AssertionError(f"{what}: the job ended ({job.proc.returncode}); see {job.log}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {timeout:.0f} s (output has {self.count()} records)")
            self.poll()

    def close(self) -> None:
        self.consumer.close()


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return {tp.partition: tp.offset
                for tp in consumer.committed([TopicPartition(topic, p) for p in range(partitions)], 30)}
    finally:
        consumer.close()


def leader_of(bootstrap: str, topic: str, partition: int) -> int:
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30)
    return metadata.topics[topic].partitions[partition].leader


def transaction_coordinator(target: Target, prefix: str) -> int:
    """The broker coordinating an ongoing transaction of the sink (asked with ListTransactions, each broker
    listing those it coordinates); the lowest such node id."""
    deadline = time.monotonic() + 60
    while True:
        for node, address in sorted(target.nodes.items()):
            with RawClient(address) as client:
                answer = client.request(ListTransactionsRequest(state_filters=["Ongoing"], producer_id_filters=[],
                                                                duration_filter=-1), 1)
            if any(t.transactional_id.startswith(prefix) for t in answer.transaction_states):
                return node
        assert time.monotonic() < deadline, f"no broker lists an ongoing transaction of {prefix}"
        time.sleep(0.2)


def last_checkpoint(root: Path) -> Path:
    """The newest completed checkpoint (a chk-N directory with its _metadata) the job retained under ``root``."""
    done = sorted(root.glob("*/chk-*/_metadata"), key=lambda p: p.stat().st_mtime)
    assert done, f"the job retained no completed checkpoint under {root}"
    return done[-1].parent


def first_occurrences(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


# ERROR lines whose presence is timing, removed on both sides before they are compared
TIMING_ERRORS = {
    # after a restore the committer re-commits the restored checkpoint's transactions; when the killed JVM had
    # committed them already (it usually has: a commit follows the checkpoint by milliseconds), the resumed
    # producer's epoch is fenced (KIP-890 bumps it at each commit) and the connector logs this and goes on
    "already fenced": re.compile(r"KafkaCommitter: Unable to commit transaction .* because its producer is already fenced"),
}
ERROR_LINE = re.compile(r"^\S+ ERROR +\[[^\]]*\] (\S+): (.*)$")


def errors(log: Path) -> list[str]:
    """The job's ERROR lines as "logger: message", without numbers (ids, offsets, epochs, ports)."""
    found = set()
    for line in log.read_text(errors="replace").splitlines():
        m = ERROR_LINE.match(line)
        if m and not any(p.search(line) for p in TIMING_ERRORS.values()):
            found.add(re.sub(r"\d+", "N", f"{m.group(1)}: {m.group(2)}")[:300])
    return sorted(found)


def create_topics(admin: AdminClient, replication: int, *topics: tuple[str, int]) -> None:
    for name, f in admin.create_topics([NewTopic(t, n, replication) for t, n in topics]).items():
        deadline = time.monotonic() + 60
        while True:
            try:
                f.result()
                break
            except KafkaException as e:  # a cluster's brokers may not all be up in its metadata yet
                if not e.args[0].retriable() or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
                f = admin.create_topics([NewTopic(name, dict(topics)[name], replication)])[name]


def run_job(target: Target, compiled: tuple[Path, Path], root: Path, mode: str, naming: str = "DEFAULT") -> dict:
    """The scenario of the module docstring on ``target``; what it observed."""
    name = f"{mode}-{naming}".lower().replace("_", "-")
    source, sink, group = f"in-{name}", f"out-{name}", f"flink-{name}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    create_topics(admin, target.replication, (source, 2), (sink, 3))
    records = Records(target.bootstrap, source)
    records.produce(FIRST, 2)
    log = root / f"{name}.log"
    args = {"bootstrap": target.bootstrap, "input": source, "output": sink, "group": group, "mode": mode,
            "naming": naming, "prefix": f"tx-{name}", "checkpoints": str(root / f"checkpoints-{name}")}
    output = Output(target.bootstrap, sink, 3)
    job = FlinkJob(compiled, log, **args)
    try:
        output.wait(lambda: output.count() >= FIRST // 2, DEADLINE, "the job's first output", job)
        for f in admin.create_partitions([NewPartitions(source, 3)]).values():
            f.result()
        producing = Background(records.produce, SECOND, 3, 0.1)
        # the new partition's records in the output: the source discovered it
        output.wait(lambda: any(k.startswith("p2-") for k in output.by_key), DEADLINE, "the added partition's output", job)
        job.kill()
        producing.join()
        restarted_from = last_checkpoint(root / f"checkpoints-{name}")
        job = FlinkJob(compiled, log, **args, restore=str(restarted_from))
        if target.kill is not None:
            output.wait(lambda: output.count() > FIRST + SECOND // 2, DEADLINE, "the restarted job's output", job)
            producing = Background(records.produce, THIRD, 3, 0.1)
            # the default naming's run loses a leader of the output, POOLING's a transaction coordinator
            victim = (leader_of(target.bootstrap, sink, 0) if naming == "DEFAULT"
                      else transaction_coordinator(target, args["prefix"]))
            target.kill(victim)
            producing.join()
        else:
            records.produce(THIRD, 3)
        expected = records.sent
        if mode == "exactly_once":
            output.wait(lambda: output.count() >= records.total(), DEADLINE, "every record in the output", job)
        else:
            output.wait(lambda: {k: first_occurrences(v) for k, v in output.by_key.items()} == expected, DEADLINE,
                        "every record in the output", job)
        output.poll(3.0)  # anything more (a duplicate) that was going to arrive
        ends = {p: n for p, n in records.next.items()}
        deadline = time.monotonic() + DEADLINE
        while (offsets := committed(target.bootstrap, group, source, 3)) != ends and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        job.kill()
        output.close()
    # an open transaction on every output partition: the bounded read (read_committed) prints every committed
    # record, then waits at the last stable offsets (its stopping offsets are the ends) until the transaction ends
    lingering = Producer({"bootstrap.servers": target.bootstrap, "transactional.id": f"lingering-{name}",
                          "transaction.timeout.ms": 600000})  # open for as long as the bounded job may take
    lingering.init_transactions(60)
    lingering.begin_transaction()
    for p in range(3):
        lingering.produce(sink, key="lingering", value=f"open-{p}", partition=p)
    assert lingering.flush(60) == 0
    bounded = FlinkJob(compiled, root / f"{name}-bounded.log", bootstrap=target.bootstrap, input=sink,
                       output="-", group=f"{group}-bounded", mode="bounded")
    try:
        deadline = time.monotonic() + DEADLINE
        while bounded.log.read_text(errors="replace").count("RECORD ") < output.count():
            assert bounded.proc.poll() is None, f"the bounded job ended early: see {bounded.log}"
            assert time.monotonic() < deadline, f"the bounded job did not print every record: see {bounded.log}"
            time.sleep(0.5)
        time.sleep(5)  # (Kafka's waits as long as the transaction is open: this one must still be waiting)
        waited_for_transaction = bounded.proc.poll() is None
        lingering.abort_transaction(60)
        assert bounded.wait(DEADLINE) == 0, f"the bounded job failed: see {bounded.log}"
    finally:
        bounded.kill()
    read: dict[str, list[str]] = {}
    for line in bounded.log.read_text(errors="replace").splitlines():
        m = re.search(r"RECORD (\d+) (\S+) (\S+)$", line)
        if m:
            read.setdefault(m.group(2), []).append(m.group(3))
    got = output.by_key if mode == "exactly_once" else {k: first_occurrences(v) for k, v in output.by_key.items()}
    return {"output": got, "expected": expected, "duplicates": output.count() - records.total(),
            "partition_of": output.partition_of, "committed": offsets, "ends": ends,
            "bounded_same": read == output.by_key, "bounded_waited_for_transaction": waited_for_transaction, "errors": errors(log), "bounded_errors": errors(bounded.log),
            "requests": target.requests()}


def judge(expected: dict, got: dict) -> None:
    """Each side against the records it was sent, then pykbroker (``got``) against Kafka 4.4 (``expected``)."""
    for side, seen in (("Kafka 4.4", expected), ("pykbroker", got)):
        assert seen["output"] == seen["expected"], f"{side}: the output is not every record once in per-key order"
        assert seen["committed"] == seen["ends"], f"{side}: the group did not commit the input's end"
        assert seen["bounded_same"], f"{side}: the bounded read is not what the output holds"
    same = ("output", "partition_of", "committed", "errors", "bounded_errors", "bounded_waited_for_transaction")
    assert {k: got[k] for k in same} == {k: expected[k] for k in same}


def observe(side: Callable[[str, Path], contextlib.AbstractContextManager[Target]], topology: str, root: Path,
            compiled: tuple[Path, Path], mode: str, naming: str) -> dict:
    with side(topology, root) as target:
        seen = run_job(target, compiled, root, mode, naming)
    print(f"{root.name}: {sum(map(len, seen['output'].values()))} records, {seen['duplicates']} duplicates, "
          f"committed {seen['committed']}, errors {seen['errors']}, "
          f"bounded read waited for the open transaction: {seen['bounded_waited_for_transaction']}")
    return seen


@pytest.mark.timeout(1200)
@pytest.mark.parametrize(("mode", "naming"), [("exactly_once", "DEFAULT"), ("exactly_once", "POOLING"),
                                              ("at_least_once", "DEFAULT")])
def test_flink_job_on_one_node(job_classes, tmp_path, mode: str, naming: str) -> None:
    expected = observe(kafka_target, "single", tmp_path / "kafka", job_classes, mode, naming)
    got = observe(pykbroker_target, "single", tmp_path / "pykbroker", job_classes, mode, naming)
    judge(expected, got)
    if naming == "POOLING":  # what sets POOLING apart: it finds lingering transactions (the output's producers, listed)
        assert got["requests"].get("DescribeProducers", 0) > 0, got["requests"]
        assert got["requests"].get("ListTransactions", 0) > 0, got["requests"]


@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("mode", "naming"), [("exactly_once", "DEFAULT"), ("exactly_once", "POOLING"),
                                              ("at_least_once", "DEFAULT")])
def test_flink_job_through_a_broker_kill_on_three_brokers(job_classes, tmp_path, mode: str, naming: str) -> None:
    expected = observe(kafka_target, "cluster", tmp_path / "kafka", job_classes, mode, naming)
    got = observe(pykbroker_target, "cluster", tmp_path / "pykbroker", job_classes, mode, naming)
    judge(expected, got)
