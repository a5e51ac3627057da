"""Apache Kafka's own command-line tools (the Kafka 4.1 jars) against pykbroker, run as a user runs them.

Each test drives one tool the way its kafka-*.sh script does, ``java -cp <jars>/* <main class> ...``, and
checks what it prints: kafka-topics (TopicCommand), kafka-configs (ConfigCommand: topic,
quota and dynamic broker configs),
kafka-broker-api-versions, kafka-verifiable-producer/-consumer (also consumers through rebalances),
kafka-consumer-groups,
kafka-transactions and the TransactionalMessageCopier of Kafka's system tests (transactions end to end:
InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, markers, read_committed),
and kafka-dump-log (DumpLogSegments) over the files pykbroker wrote.

The jars come from compat_tests/jvm/fetch_jars.sh; the module is skipped when java or the jars are missing.
"""

from __future__ import annotations

import contextlib
import glob
import json
import re
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from compat_tests.jvm.kafka_broker import jars_dir
from pykbroker.testing import BrokerProcess, RawClient

if shutil.which("java") is None:
    pytest.skip("java is not installed: Kafka's command-line tools cannot run", allow_module_level=True)

# A tool runs for a second or two: the client compiler alone and a small serial heap start it fastest.
JAVA = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]
TOPICS = "org.apache.kafka.tools.TopicCommand"
CONFIGS = "org.apache.kafka.tools.ConfigCommand"
API_VERSIONS = "org.apache.kafka.tools.BrokerApiVersionsCommand"
GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
VERIFIABLE_PRODUCER = "org.apache.kafka.tools.VerifiableProducer"
VERIFIABLE_CONSUMER = "org.apache.kafka.tools.VerifiableConsumer"
COPIER = "org.apache.kafka.tools.TransactionalMessageCopier"
DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments"

OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    # the consumer protocol (KIP-848) hands out assignments on heartbeats: 5 s apart by default
    "group.consumer.heartbeat.interval.ms": "500",
    "transaction.state.log.num.partitions": "4",
}


@pytest.fixture(scope="module")
def jars() -> Path:
    found = jars_dir()
    if found is None:
        pytest.skip("Kafka's jars are missing and compat_tests/jvm/fetch_jars.sh could not fetch them (Maven?)")
    return found


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("java-tools"), overrides=OVERRIDES) as b:
        yield b
        assert b.alive, f"the broker died during the tests; its log:\n{b.log()}"


@pytest.fixture(scope="module")
def tool(jars, broker):
    """``tool(main_class, *args, ok=True)``: run one tool to completion; with ``ok`` it must exit 0."""
    def run(main_class: str, *args: str, ok: bool = True, timeout: float = 90) -> subprocess.CompletedProcess:
        done = subprocess.run([*JAVA, "-cp", f"{jars}/*", main_class, *args], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
        if ok:
            assert done.returncode == 0, (f"{main_class} {' '.join(args)} exited {done.returncode}\n"
                                          f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}")
        return done
    return run


@contextlib.contextmanager
def background_tool(jars: Path, out: Path, main_class: str, *args: str):
    """A long-running tool (stdout to ``out``), stopped with SIGTERM (as Ctrl-C would) when the block ends."""
    with open(out, "wb") as sink:
        proc = subprocess.Popen([*JAVA, "-cp", f"{jars}/*", main_class, *args], stdout=sink,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def events(text: str) -> list[dict]:
    """The JSON objects a verifiable tool prints, one a line (anything else on stdout is skipped)."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def wait_for(predicate, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} within {timeout} s")
        time.sleep(0.2)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def table(text: str, first_column: str) -> list[dict[str, str]]:
    """Rows of the table whose header starts with ``first_column``, as kafka-* print them: cells apart by
    whitespace, except that a coordinator is ``host:port  (id)`` under ``COORDINATOR (ID)``."""
    def cells(line: str) -> list[str]:
        out: list[str] = []
        for cell in line.split():
            if re.fullmatch(r"\((ID|\d+)\)", cell) and out:
                out[-1] += " " + cell
            else:
                out.append(cell)
        return out

    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    for line in text.splitlines():
        row = cells(line)
        if row[:1] == [first_column]:
            header = row
        elif header and row:
            rows.append(dict(zip(header, row, strict=False)))
        elif not row:
            header = None
    return rows


def produce(broker: BrokerProcess, topic: str, values: list[str], keyed: bool = True) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i, value in enumerate(values):
        producer.produce(topic, value=value.encode(), key=f"k{i % 17}".encode() if keyed else None)
    assert producer.flush(30) == 0


def read_values(broker: BrokerProcess, topic: str, partitions: int, isolation: str, timeout: float = 20) -> list[str]:
    """Every value of ``topic`` up to the end of each partition, as a consumer with ``isolation`` reads it."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique("reader"),
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[str] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"{topic} not read to its end within {timeout} s"
            m = consumer.poll(0.2)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == -191, m.error()  # _PARTITION_EOF
                at_end.add(m.partition())
                continue
            at_end.discard(m.partition())
            values.append(m.value().decode())
    finally:
        consumer.close()
    return values


# Kafka's TransactionState ids, as __transaction_state records them
EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT = range(6)
_STATE_NUMBERS = {"Empty": EMPTY, "Ongoing": ONGOING, "PrepareCommit": PREPARE_COMMIT, "PrepareAbort": PREPARE_ABORT,
                  "CompleteCommit": COMPLETE_COMMIT, "CompleteAbort": COMPLETE_ABORT}


def transaction_states(tool, broker: BrokerProcess, txn_id: str) -> list[int]:
    """The states ``txn_id`` went through, from __transaction_state as kafka-dump-log decodes it."""
    files = [f for f in glob.glob(str(broker.data_dir / "logs" / "__transaction_state-*" / "*.log"))
             if Path(f).stat().st_size]
    decoded = tool(DUMP_LOG, "--transaction-log-decoder", "--files", ",".join(sorted(files))).stdout
    # Kafka 4.4's decoder names the states (4.1 printed their numbers)
    return [_STATE_NUMBERS.get(status, status) for status in (
        json.loads(line.split(" payload: ", 1)[1])["data"]["transactionStatus"]
        for line in decoded.splitlines() if f'"transactionalId":"{txn_id}"' in line)]


# --- kafka-topics ---------------------------------------------------------------------------------------

def test_kafka_topics_create_list_describe_alter_delete(tool, broker):
    b = ("--bootstrap-server", broker.bootstrap)
    topic = unique("tc")
    created = tool(TOPICS, *b, "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1",
                   "--config", "retention.ms=123456", "--config", "cleanup.policy=compact")
    assert created.stdout.strip() == f"Created topic {topic}."
    again = tool(TOPICS, *b, "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1",
                 ok=False)
    assert again.returncode != 0 and f"Topic '{topic}' already exists." in again.stdout
    assert topic in tool(TOPICS, *b, "--list").stdout.split()

    described = tool(TOPICS, *b, "--describe", "--topic", topic).stdout
    head, *partitions = described.strip().splitlines()
    assert re.match(rf"Topic: {topic}\tTopicId: [\w-]{{22}}\tPartitionCount: 2\tReplicationFactor: 1\t"
                    r"Configs: (.*)$", head), described
    # Kafka 4.1's own line, in its order: a new cluster holds min.insync.replicas as a cluster default (ELR).
    assert head.split("Configs: ")[1].split(",") == ["min.insync.replicas=1", "cleanup.policy=compact",
                                                      "retention.ms=123456"]
    assert [p.split("\t")[1:5] for p in partitions] == [
        ["Topic: " + topic, f"Partition: {i}", "Leader: 1", "Replicas: 1"] for i in range(2)]
    assert all("\tIsr: 1\t" in p for p in partitions)

    shrink = tool(TOPICS, *b, "--alter", "--topic", topic, "--partitions", "1", ok=False)
    assert shrink.returncode != 0
    assert f"The topic {topic} currently has 2 partition(s); 1 would not be an increase." in shrink.stdout
    tool(TOPICS, *b, "--alter", "--topic", topic, "--partitions", "5")
    described = tool(TOPICS, *b, "--describe", "--topic", topic).stdout
    assert "PartitionCount: 5" in described
    assert [re.search(r"Partition: (\d+)\tLeader: (\d+)", line).groups()
            for line in described.splitlines()[1:]] == [(str(i), "1") for i in range(5)]

    tool(TOPICS, *b, "--delete", "--topic", topic)
    wait_for(lambda: topic not in tool(TOPICS, *b, "--list").stdout.split(), f"{topic} still listed", 20)
    missing = tool(TOPICS, *b, "--describe", "--topic", topic, ok=False)
    assert missing.returncode != 0 and f"Topic '{topic}' does not exist as expected" in missing.stdout


# --- kafka-configs --------------------------------------------------------------------------------------

def test_kafka_configs_add_delete_and_describe_topic_configs(tool, broker):
    b = ("--bootstrap-server", broker.bootstrap)
    topic = unique("cfg")
    tool(TOPICS, *b, "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
    entity = ("--entity-type", "topics", "--entity-name", topic)

    added = tool(CONFIGS, *b, "--alter", *entity,
                 "--add-config", "retention.ms=777,max.message.bytes=2048,cleanup.policy=[compact,delete]")
    assert added.stdout.strip() == f"Completed updating config for topic {topic}."
    assert tool(CONFIGS, *b, "--describe", *entity).stdout.splitlines() == [
        f"Dynamic configs for topic {topic} are:",
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy="
        "compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  max.message.bytes=2048 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:max.message.bytes=2048, "
        "DEFAULT_CONFIG:message.max.bytes=1048588}",
        "  retention.ms=777 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=777}"]

    tool(CONFIGS, *b, "--alter", *entity, "--delete-config", "retention.ms,cleanup.policy")
    assert tool(CONFIGS, *b, "--describe", *entity).stdout.splitlines() == [
        f"Dynamic configs for topic {topic} are:",
        "  max.message.bytes=2048 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:max.message.bytes=2048, "
        "DEFAULT_CONFIG:message.max.bytes=1048588}"]
    every = tool(CONFIGS, *b, "--describe", *entity, "--all").stdout
    assert "  retention.ms=604800000 sensitive=false synonyms={}" in every.splitlines()
    assert "  cleanup.policy=delete sensitive=false synonyms={DEFAULT_CONFIG:log.cleanup.policy=delete}" \
        in every.splitlines()

    # what kafka-configs says about mistakes is what it says against Kafka 4.4 (which, unlike 4.1's, deletes a
    # config that is not set without a word)
    unset = tool(CONFIGS, *b, "--alter", *entity, "--delete-config", "segment.ms", ok=False)
    assert unset.returncode == 0 and "Completed updating config for topic" in unset.stdout
    unknown = tool(CONFIGS, *b, "--alter", *entity, "--add-config", "no.such.config=1", ok=False)
    assert unknown.returncode != 0
    assert "InvalidConfigurationException: Unknown topic config name: no.such.config" in unknown.stderr
    missing = tool(CONFIGS, *b, "--alter", "--entity-type", "topics", "--entity-name", unique("nosuch"),
                   "--add-config", "retention.ms=1", ok=False)
    assert missing.returncode != 0
    assert "UnknownTopicOrPartitionException: The topic '" in missing.stderr


def test_kafka_configs_client_and_user_quotas(tool, broker):
    b = ("--bootstrap-server", broker.bootstrap)
    client = ("--entity-type", "clients", "--entity-name", unique("qc"))
    added = tool(CONFIGS, *b, "--alter", *client, "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048")
    assert added.stdout.strip() == f"Completed updating config for client {client[-1]}."
    assert tool(CONFIGS, *b, "--describe", *client).stdout.strip() == \
        f"Quota configs for client-id '{client[-1]}' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0"
    tool(CONFIGS, *b, "--alter", *client, "--delete-config", "consumer_byte_rate")
    assert "consumer_byte_rate" not in tool(CONFIGS, *b, "--describe", *client).stdout
    tool(CONFIGS, *b, "--alter", "--entity-type", "users", "--entity-default", "--add-config",
         "request_percentage=50")
    assert "request_percentage=50.0" in tool(CONFIGS, *b, "--describe", "--entity-type", "users",
                                             "--entity-default").stdout
    bad = tool(CONFIGS, *b, "--alter", *client, "--add-config", "producer_byte_rate=1.5", ok=False)
    assert bad.returncode != 0 and "producer_byte_rate cannot be a fractional value." in bad.stdout + bad.stderr


def test_kafka_configs_alters_and_describes_dynamic_broker_configs(tool, broker):
    b = ("--bootstrap-server", broker.bootstrap)
    default = ("--entity-type", "brokers", "--entity-default")
    one = ("--entity-type", "brokers", "--entity-name", "1")
    assert tool(CONFIGS, *b, *default, "--alter", "--add-config", "log.retention.ms=86400000").stdout.strip() == \
        "Completed updating default config for brokers in the cluster."
    assert tool(CONFIGS, *b, *one, "--alter", "--add-config", "log.cleaner.threads=2").stdout.strip() == \
        "Completed updating config for broker 1."
    try:
        # what follows is what kafka-configs prints against Kafka 4.1
        assert tool(CONFIGS, *b, *default, "--describe").stdout.splitlines() == [
            "Default configs for brokers in the cluster are:",
            "  log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms"
            "=86400000}",
            "  min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1}"]
        assert tool(CONFIGS, *b, *one, "--describe").stdout.splitlines() == [
            "Dynamic configs for broker 1 are:",
            "  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, "
            "DEFAULT_CONFIG:log.cleaner.threads=1}"]
        every = tool(CONFIGS, *b, *one, "--describe", "--all").stdout.splitlines()
        assert every[0] == "All configs for broker 1 are:"
        for line in [
            "  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, "
            "DEFAULT_CONFIG:log.cleaner.threads=1}",
            "  log.retention.minutes=null sensitive=false synonyms={}",
            "  log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms"
            "=86400000, DEFAULT_CONFIG:log.retention.hours=168}",
            "  min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1, "
            "DEFAULT_CONFIG:min.insync.replicas=1}",
            "  num.partitions=1 sensitive=false synonyms={DEFAULT_CONFIG:num.partitions=1}",
        ]:
            assert line in every
        static = tool(CONFIGS, *b, *default, "--alter", "--add-config", "num.partitions=3", ok=False)
        assert static.returncode != 0
        assert "InvalidRequestException: Cannot update these configs dynamically: [num.partitions]" in static.stderr
    finally:
        tool(CONFIGS, *b, *default, "--alter", "--delete-config", "log.retention.ms")
        tool(CONFIGS, *b, *one, "--alter", "--delete-config", "log.cleaner.threads")


# --- kafka-broker-api-versions --------------------------------------------------------------------------

def test_kafka_broker_api_versions_prints_what_the_broker_advertises(tool, broker):
    from wire.messages import ApiVersionsRequest
    with RawClient(broker.bootstrap) as client:
        advertised = {k.api_key: (k.min_version, k.max_version)
                      for k in client.request(ApiVersionsRequest(), 0).api_keys}
    out = tool(API_VERSIONS, "--bootstrap-server", broker.bootstrap).stdout
    assert out.startswith(f"{broker.bootstrap} (id: 1 rack: null isFenced: false) -> (\n"), out
    printed = {int(key): ranges for key, ranges in re.findall(r"^\t\w+\((\d+)\): (.*?),?$", out, re.M)}
    assert {key for key, ranges in printed.items() if ranges != "UNSUPPORTED"} == set(advertised)
    # The tool's client (kafka-clients 4.4) knows every version pykbroker serves: all are usable.
    for key, (low, high) in advertised.items():
        span = f"{low}" if low == high else f"{low} to {high}"
        assert printed[key] == f"{span} [usable: {high}]", (key, printed[key])
    for name in ("Produce(0)", "Fetch(1)", "Metadata(3)", "ApiVersions(18)", "InitProducerId(22)", "EndTxn(26)"):
        assert f"\t{name}: " in out


# --- kafka-verifiable-producer / kafka-verifiable-consumer -----------------------------------------------

@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_verifiable_producer_then_verifiable_consumer_reads_every_message(tool, broker, group_protocol, tmp_path):
    b = ("--bootstrap-server", broker.bootstrap)
    topic, group, n = unique("vp"), unique("vc"), 300
    tool(TOPICS, *b, "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1")
    # acks=all and idempotent: kafka-clients 4.1 producers are idempotent by default, but the verifiable
    # producer sets retries=0, which turns that off unless asked for (then with retries, or it refuses)
    config = tmp_path / "producer.properties"
    config.write_text("enable.idempotence=true\nretries=2147483647\n")
    produced = events(tool(VERIFIABLE_PRODUCER, *b, "--topic", topic, "--max-messages", str(n), "--acks", "-1",
                           "--repeating-keys", "50", "--producer.config", str(config)).stdout)
    sent = [e for e in produced if e["name"] == "producer_send_success"]
    assert [e for e in produced if e["name"] == "producer_send_error"] == []
    assert sorted(int(e["value"]) for e in sent) == list(range(n))
    assert produced[-1]["name"] == "tool_data" and (produced[-1]["sent"], produced[-1]["acked"]) == (n, n)
    end_offsets = {p: 1 + max(e["offset"] for e in sent if e["partition"] == p) for p in range(3)}
    assert sum(end_offsets.values()) == n, "offsets must be dense: 0, 1, ... in each partition"
    for p, end in end_offsets.items():
        producers = table(tool(TRANSACTIONS, *b, "describe-producers", "--topic", topic, "--partition", str(p)).stdout,
                          "ProducerId")
        # one idempotent producer, its sequence numbers counted from 0 in each partition
        assert [(r["ProducerEpoch"], r["LastSequence"]) for r in producers] == [("0", str(end - 1))], producers

    extra = ["--session-timeout", "6000"] if group_protocol == "classic" else []
    consumed = events(tool(VERIFIABLE_CONSUMER, *b, "--topic", topic, "--group-id", group, "--group-protocol",
                           group_protocol, "--max-messages", str(n), *extra).stdout)
    names = [e["name"] for e in consumed]
    # Kafka 4.4's tool reports the shutdown request after the shutdown completes
    assert names[0] == "startup_complete" and "shutdown_complete" in names[-2:], names
    assigned = {p["partition"] for e in consumed if e["name"] == "partitions_assigned" for p in e["partitions"]}
    assert assigned == {0, 1, 2}
    got: dict[int, list[tuple[int, int]]] = {0: [], 1: [], 2: []}
    for e in consumed:
        if e["name"] == "records_consumed":
            for p in e["partitions"]:
                got[p["partition"]].append((p["minOffset"], p["maxOffset"]))
    for p, ranges in got.items():
        covered = sorted(o for low, high in ranges for o in range(low, high + 1))
        assert covered == list(range(end_offsets[p])), f"partition {p}: {ranges}"
    commits = [e for e in consumed if e["name"] == "offsets_committed"]
    assert commits and all(e["success"] for e in commits)
    last_commit = {}
    for e in commits:
        last_commit.update({o["partition"]: o["offset"] for o in e["offsets"]})
    assert last_commit == {p: end for p, end in end_offsets.items() if end}


def test_verifiable_consumers_share_a_group_through_rebalances(tool, broker, jars, tmp_path):
    """A second consumer joins and leaves, the first leaves, a third finishes: every record is consumed and
    the group's commits reach the end of every partition."""
    b = ("--bootstrap-server", broker.bootstrap)
    topic, group, n = unique("vr"), unique("vrg"), 2000
    tool(TOPICS, *b, "--create", "--topic", topic, "--partitions", "4", "--replication-factor", "1")
    consumer = (VERIFIABLE_CONSUMER, *b, "--topic", topic, "--group-id", group, "--session-timeout", "6000",
                "--reset-policy", "earliest")
    first_out, second_out = tmp_path / "first.jsonl", tmp_path / "second.jsonl"

    def read(path: Path) -> list[dict]:
        return events(path.read_text(errors="replace")) if path.exists() else []

    def assigned(path: Path) -> set[int]:
        """The partitions the consumer holds after its last assignment (eager: a revoke drops all)."""
        held: set[int] = set()
        for e in read(path):
            if e["name"] == "partitions_revoked":
                held -= {p["partition"] for p in e["partitions"]}
            elif e["name"] == "partitions_assigned":
                held |= {p["partition"] for p in e["partitions"]}
        return held

    with background_tool(jars, first_out, *consumer):
        wait_for(lambda: assigned(first_out) == {0, 1, 2, 3}, "the first consumer owning every partition")
        with background_tool(jars, tmp_path / "producer.jsonl", VERIFIABLE_PRODUCER, *b, "--topic", topic,
                             "--max-messages", str(n), "--throughput", "500", "--acks", "-1",
                             "--repeating-keys", "100") as producer:
            with background_tool(jars, second_out, *consumer):
                wait_for(lambda: assigned(second_out) and assigned(first_out)
                         and assigned(first_out) | assigned(second_out) == {0, 1, 2, 3}, "the group split", 40)
            # the second consumer left (SIGTERM): the first takes every partition back
            wait_for(lambda: assigned(first_out) == {0, 1, 2, 3}, "the first consumer owning everything again", 40)
            wait_for(lambda: producer.poll() is not None, "the producer finishing")
    # Both have left: a third member picks up from the group's commits and reads to the end.
    produced = [e for e in events((tmp_path / "producer.jsonl").read_text()) if e["name"] == "producer_send_success"]
    assert len(produced) == n
    ends = {p: 1 + max((e["offset"] for e in produced if e["partition"] == p), default=-1) for p in range(4)}
    assert all(ends.values()), ends
    last_out = tmp_path / "last.jsonl"
    with background_tool(jars, last_out, *consumer):
        def committed_to_end() -> bool:
            """The group's commits, replayed in time order across the three members, reach every end."""
            commits = sorted((e["timestamp"], n, i, e) for n, path in enumerate((first_out, second_out, last_out))
                             for i, e in enumerate(read(path)) if e["name"] == "offsets_committed" and e["success"])
            done: dict[int, int] = {}
            for *_, e in commits:
                done.update({o["partition"]: o["offset"] for o in e["offsets"]})
            return done == ends
        wait_for(committed_to_end, "commits reaching the end of every partition", 60)
    consumed: dict[int, set[int]] = {p: set() for p in range(4)}
    for path in (first_out, second_out, last_out):
        for e in read(path):
            if e["name"] == "records_consumed":
                for p in e["partitions"]:
                    consumed[p["partition"]] |= set(range(p["minOffset"], p["maxOffset"] + 1))
    assert all(consumed[p] == set(range(ends[p])) for p in range(4)), "every record consumed at least once"
    revokes = [e for path in (first_out, second_out) for e in read(path) if e["name"] == "partitions_revoked"]
    assert revokes, "the join of the second consumer rebalanced the group"


# --- kafka-consumer-groups ------------------------------------------------------------------------------

def test_kafka_consumer_groups_list_describe_and_reset_offsets(tool, broker, jars, tmp_path):
    b = ("--bootstrap-server", broker.bootstrap)
    topic, group = unique("cg"), unique("cg-group")
    tool(TOPICS, *b, "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1")
    produce(broker, topic, [f"v{i}" for i in range(90)])

    out = tmp_path / "consumer.out"
    with background_tool(jars, out, VERIFIABLE_CONSUMER, *b, "--topic", topic, "--group-id", group,
                         "--session-timeout", "6000") as consumer:
        def committed() -> int:
            done = {}
            for e in events(out.read_text(errors="replace")):
                if e["name"] == "offsets_committed" and e["success"]:
                    done.update({o["partition"]: o["offset"] for o in e["offsets"]})
            return sum(done.values()) == 90
        wait_for(committed, "the consumer did not commit all 90 offsets")
        assert group in tool(GROUPS, *b, "--list").stdout.split()

        active = table(tool(GROUPS, *b, "--describe", "--group", group).stdout, "GROUP")
        assert sorted(r["PARTITION"] for r in active) == ["0", "1", "2"]
        assert sum(int(r["CURRENT-OFFSET"]) for r in active) == 90 and {r["LAG"] for r in active} == {"0"}
        assert {r["CONSUMER-ID"].startswith(f"consumer-{group}-") for r in active} == {True}
        assert {(r["HOST"], r["CLIENT-ID"]) for r in active} == {("/127.0.0.1", f"consumer-{group}-1")}
        state = table(tool(GROUPS, *b, "--describe", "--group", group, "--state").stdout, "GROUP")
        assert [(s["ASSIGNMENT-STRATEGY"], s["STATE"], s["#MEMBERS"]) for s in state] == [("range", "Stable", "1")]
        refused = tool(GROUPS, *b, "--reset-offsets", "--to-earliest", "--group", group, "--topic", topic,
                       "--execute", ok=False)
        assert (f"Assignments can only be reset if the group '{group}' is inactive, but the current state is "
                "Stable.") in refused.stdout + refused.stderr
        assert consumer.poll() is None, "the consumer must still be running"

    # stopped: it left the group, which is now empty and keeps its offsets
    produce(broker, topic, [f"w{i}" for i in range(30)])
    idle = table(tool(GROUPS, *b, "--describe", "--group", group).stdout, "GROUP")
    assert sum(int(r["LAG"]) for r in idle) == 30 and {r["CONSUMER-ID"] for r in idle} == {"-"}
    state = table(tool(GROUPS, *b, "--describe", "--group", group, "--state").stdout, "GROUP")
    assert [(s["STATE"], s["#MEMBERS"]) for s in state] == [("Empty", "0")]

    preview = table(tool(GROUPS, *b, "--reset-offsets", "--to-earliest", "--group", group, "--topic", topic,
                         "--dry-run").stdout, "GROUP")
    assert sorted((r["PARTITION"], r["NEW-OFFSET"]) for r in preview) == [("0", "0"), ("1", "0"), ("2", "0")]
    assert sum(int(r["CURRENT-OFFSET"]) for r in table(
        tool(GROUPS, *b, "--describe", "--group", group).stdout, "GROUP")) == 90, "a dry run changes nothing"
    reset = table(tool(GROUPS, *b, "--reset-offsets", "--to-earliest", "--group", group, "--topic", topic,
                       "--execute").stdout, "GROUP")
    assert sorted((r["PARTITION"], r["NEW-OFFSET"]) for r in reset) == [("0", "0"), ("1", "0"), ("2", "0")]
    rewound = table(tool(GROUPS, *b, "--describe", "--group", group).stdout, "GROUP")
    assert {r["CURRENT-OFFSET"] for r in rewound} == {"0"} and sum(int(r["LAG"]) for r in rewound) == 120
    ends = {r["PARTITION"]: r["LOG-END-OFFSET"] for r in rewound}
    # by timestamp (ListOffsets): nothing is that recent, so each partition's end; then relative moves
    future = table(tool(GROUPS, *b, "--reset-offsets", "--to-datetime", "2999-01-01T00:00:00.000", "--group", group,
                        "--topic", topic, "--dry-run").stdout, "GROUP")
    assert {r["PARTITION"]: r["NEW-OFFSET"] for r in future} == ends
    shifted = table(tool(GROUPS, *b, "--reset-offsets", "--shift-by", "2", "--group", group, "--topic", topic,
                         "--execute").stdout, "GROUP")
    assert {r["NEW-OFFSET"] for r in shifted} == {"2"}

    deleted = tool(GROUPS, *b, "--delete", "--group", group)
    assert f"Deletion of requested consumer groups ('{group}') was successful." in deleted.stdout
    assert group not in tool(GROUPS, *b, "--list").stdout.split()


# --- TransactionalMessageCopier (Kafka's system tests) ---------------------------------------------------

def test_transactional_message_copier_copies_each_message_exactly_once(tool, broker):
    from confluent_kafka import Consumer, TopicPartition
    b = ("--bootstrap-server", broker.bootstrap)
    source, sink, group, txn_id, n = unique("in"), unique("out"), unique("copier"), unique("copier-txn"), 400
    tool(TOPICS, *b, "--create", "--topic", source, "--partitions", "1", "--replication-factor", "1")
    tool(TOPICS, *b, "--create", "--topic", sink, "--partitions", "2", "--replication-factor", "1")
    values = [f"m{i}" for i in range(n)]
    produce(broker, source, values, keyed=False)

    # 10 messages a transaction and a third of them aborted at random: some 60 transactions, ~20 aborted
    copied = tool(COPIER, "--broker-list", broker.bootstrap, "--input-topic", source, "--input-partition", "0",
                  "--output-topic", sink, "--transactional-id", txn_id, "--consumer-group", group,
                  "--transaction-size", "10", "--enable-random-aborts", "--use-group-metadata", timeout=120)
    progress = events(copied.stdout)
    assert progress[-1]["stage"] == "ShutdownComplete", copied.stdout[-2000:]
    assert (progress[-1]["totalProcessed"], progress[-1]["remaining"]) == (n, 0)

    # the last commit's markers may still be on their way: until they are written, its records are unstable
    def read_committed() -> list[str] | None:
        got = read_values(broker, sink, 2, "read_committed")
        return got if len(got) >= n else None
    committed = wait_for(read_committed, "read_committed did not see every copied message")
    assert sorted(committed) == sorted(values), "read_committed must see each input value exactly once"
    # an abort usually drops its records before they are sent (Kafka's copier behaves so too), but those
    # that went out stay in the log, visible to read_uncommitted only
    everything = read_values(broker, sink, 2, "read_uncommitted")
    assert len(everything) >= n and set(everything) == set(values)

    offsets = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        [position] = offsets.committed([TopicPartition(source, 0)], timeout=10)
    finally:
        offsets.close()
    assert position.offset == n, "the consumed offsets commit with the transactions (TxnOffsetCommit)"

    listed = table(tool(TRANSACTIONS, *b, "list").stdout, "TransactionalId")
    assert (txn_id, "CompleteCommit") in {(t["TransactionalId"], t["TransactionState"]) for t in listed}
    [described] = table(tool(TRANSACTIONS, *b, "describe", "--transactional-id", txn_id).stdout, "CoordinatorId")
    assert (described["TransactionState"], described["TransactionTimeoutMs"]) == ("CompleteCommit", "60000")

    states = transaction_states(tool, broker, txn_id)
    assert states.count(COMPLETE_COMMIT) >= n // 10, "a commit for every poll of at most 10 messages"
    assert states.count(COMPLETE_ABORT) >= 1, "no transaction aborted at random (a 1 in 10^7 chance)"
    assert states.count(PREPARE_ABORT) == states.count(COMPLETE_ABORT)


# --- kafka-dump-log -------------------------------------------------------------------------------------

def test_kafka_dump_log_reads_the_segments_pykbroker_wrote(tool, broker):
    from confluent_kafka import Producer
    topic, txn_id = unique("dump"), unique("dump-txn")
    tool(TOPICS, "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic, "--partitions", "1",
         "--replication-factor", "1")
    plain = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20})
    for i in range(5):
        plain.produce(topic, key=f"key-{i}".encode(), value=f"plain-{i}".encode(), headers=[("h", b"x")])
    assert plain.flush(10) == 0
    zipped = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20, "compression.type": "gzip"})
    for i in range(5):
        zipped.produce(topic, value=f"gzipped-{i}".encode())
    assert zipped.flush(10) == 0
    txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce(topic, value=b"in-a-transaction")
    txn.commit_transaction(30)

    # once read_committed sees the transaction, its COMMIT marker is on disk
    wait_for(lambda: len(read_values(broker, topic, 1, "read_committed")) == 11, "the transaction is not visible")

    logs = broker.data_dir / "logs"
    segment = logs / f"{topic}-0" / "00000000000000000000.log"
    dumped = tool(DUMP_LOG, "--files", str(segment), "--print-data-log")
    assert not [line for line in dumped.stderr.splitlines() if line.strip() and not line.startswith("SLF4J")], \
        dumped.stderr
    lines = dumped.stdout.splitlines()
    assert lines[:2] == [f"Dumping {segment}", "Log starting offset: 0"]
    batches = [line for line in lines if line.startswith("baseOffset: ")]
    assert batches and all("isvalid: true" in line and "magic: 2" in line for line in batches)
    assert {re.search(r"compresscodec: (\w+)", line).group(1) for line in batches} == {"none", "gzip"}
    records = [line for line in lines if line.startswith("| offset: ")]
    assert [int(re.match(r"\| offset: (\d+)", line).group(1)) for line in records] == list(range(12))
    for i in range(5):
        assert f"headerKeys: [h] key: key-{i} payload: plain-{i}" in records[i]
        assert records[5 + i].endswith(f"payload: gzipped-{i}")
    assert records[10].endswith("payload: in-a-transaction")
    assert "endTxnMarker: COMMIT" in records[11]
    assert "isTransactional: true isControl: true" in batches[-1]

    # the coordinator's own log, decoded as Kafka decodes its __transaction_state
    # the last state is written once the markers are
    assert wait_for(lambda: (got := transaction_states(tool, broker, txn_id))[-1:] == [COMPLETE_COMMIT] and got,
                    "no CompleteCommit in __transaction_state", 20) == [EMPTY, ONGOING, PREPARE_COMMIT, COMPLETE_COMMIT]
