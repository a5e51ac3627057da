"""Share groups (KIP-932) with stock clients, judged by Apache Kafka 4.2.

Every scenario runs against Kafka 4.2 (``kafka_share_judge``, where share groups are released and on by
default) and against pykbroker (share.version finalized with UpdateFeatures, as ``kafka-features upgrade``
does); each returns observations that must be equal. On one node, and with PYKBROKER_SLOW_DIFFERENTIAL=1
(``make differential-cluster``) on 3 pykbroker brokers judged by a 3-node Kafka 4.2 KRaft cluster; the one-node
runs of the release, delivery-limit and Java consumer scenarios (a minute together; in make test the raw-protocol
tests of tests/pykbroker/handlers/test_share_groups.py cover release and the delivery count limit,
test_share_groups_cluster the Java KafkaShareConsumer) with PYKBROKER_SHARE_SLOW=1 (``make test-share-slow``). Clients: confluent-kafka's ShareConsumer (librdkafka)
and Kafka 4.2's own tools (``kafka-share-groups``, i.e. ShareGroupCommand, and the console share consumer,
both on the Java KafkaShareConsumer / Admin client). Group configs are set with IncrementalAlterConfigs on
GROUP resources, as ``kafka-configs --entity-type groups`` does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

from compat_tests.conftest import (
    differential_params,
    differential_targets,
    judge_jars,
    kafka_cluster,
    pykbroker_cluster,
)
from compat_tests.jvm.kafka_broker import SHARE_GROUPS_JUDGE, jars_dir
from compat_tests.routing_client import RoutingClient
from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode
from wire.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeShareGroupOffsetsRequest,
    IncrementalAlterConfigsRequest,
    ShareGroupDescribeRequest,
    UpdateFeaturesRequest,
)
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.describe_share_group_offsets_request import DescribeShareGroupOffsetsRequestGroup
from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource
from wire.messages.update_features_request import FeatureUpdateKey

if shutil.which("java") is None:
    pytest.skip("java is not installed: share groups are judged by Apache Kafka 4.2", allow_module_level=True)

GROUP = 32  # ConfigResource.Type.GROUP
JAVA = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
LOCK_MS = 15_000  # the smallest share.record.lock.duration.ms Kafka allows by default
share_slow = pytest.mark.skipif(os.environ.get("PYKBROKER_SHARE_SLOW") != "1",
                                reason="one node's share scenario beyond make test: make test-share-slow "
                                       "(PYKBROKER_SHARE_SLOW=1)")


def share_slow_on_one_node(params: list, names: tuple[str, ...]) -> list:
    """``differential_params``' parameters, those of ``names`` on one node run by make test-share-slow only."""
    return [pytest.param(*p.values, id=p.id, marks=[*p.marks, share_slow]) if p.values == ("single", p.id)
            and p.id in names else p for p in params]


# -- set-up, the same on both brokers ----------------------------------------------------------------------
def enable_share_groups(bootstrap: str) -> None:
    """share.version 1 unless already finalized (Kafka 4.2 and pykbroker finalize 1 and 2 on a new cluster)."""
    with RawClient(bootstrap, timeout=30) as c:
        versions = c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4)
        if any(f.name == "share.version" and f.max_version_level >= 1 for f in versions.finalized_features):
            return
        r = c.request(UpdateFeaturesRequest(timeout_ms=30_000, feature_updates=[
            FeatureUpdateKey(feature="share.version", max_version_level=1, upgrade_type=1)]), 1)
        assert r.error_code == ErrorCode.NONE, r


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    with RawClient(bootstrap, timeout=30) as c:
        r = c.request(CreateTopicsRequest(timeout_ms=30_000, topics=[
            CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)]), 7)
        assert r.topics[0].error_code == ErrorCode.NONE, r
        c.wait_for_topics(name, timeout=30)


def set_group_configs(bootstrap: str, group: str, **configs: str) -> None:
    with RawClient(bootstrap, timeout=30) as c:
        r = c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=GROUP, resource_name=group, configs=[
                AlterableConfig(name=k.replace("_", "."), config_operation=0, value=v) for k, v in configs.items()])]), 1)
        assert r.responses[0].error_code == ErrorCode.NONE, r


def start_offsets(bootstrap: str, group: str) -> dict[int, int]:
    """Partition -> share-partition start offset, as DescribeShareGroupOffsets reports it (asked of the
    group's coordinator, as the admin client does)."""
    with RoutingClient(bootstrap, timeout=30) as c:
        r = c.request(DescribeShareGroupOffsetsRequest(groups=[DescribeShareGroupOffsetsRequestGroup(
            group_id=group, topics=None)]), 0)
        return {p.partition_index: p.start_offset for g in r.groups for t in g.topics for p in t.partitions}


def produce(bootstrap: str, topic: str, count: int, partitions: int = 1) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        p.produce(topic, b"record-%d" % i, partition=i % partitions)
    assert p.flush(30) == 0


def consumer(bootstrap: str, group: str, explicit: bool = False) -> ShareConsumer:
    conf = {"bootstrap.servers": bootstrap, "group.id": group}
    if explicit:
        conf["share.acknowledgement.mode"] = "explicit"
    return ShareConsumer(conf)


def records(messages) -> list:
    out = []
    for m in messages:
        assert m.error() is None, m.error()
        out.append(m)
    return out


def prepared(bootstrap: str, partitions: int = 1, **configs: str) -> tuple[str, str]:
    topic, group = f"share-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, partitions)
    set_group_configs(bootstrap, group, share_auto_offset_reset="earliest", **configs)
    return topic, group


# -- scenarios ---------------------------------------------------------------------------------------------
def shared_by(n_consumers: int, partitions: int):
    """``n_consumers`` consume one topic together: every record reaches exactly one of them, once."""
    def scenario(bootstrap: str) -> dict:
        topic, group = prepared(bootstrap, partitions)
        total = 600
        produce(bootstrap, topic, total, partitions)
        got: list[tuple[int, int, int, int]] = []
        lock = threading.Lock()
        done = threading.Event()

        def run(index: int) -> None:
            c = consumer(bootstrap, group)
            c.subscribe([topic])
            deadline = time.monotonic() + 90
            try:
                while not done.is_set() and time.monotonic() < deadline:
                    batch = records(c.poll(0.5))
                    if batch:
                        # accept now: librdkafka's close() ends the share session without the implicit
                        # acknowledgement of the last poll, which would release those records to the others
                        c.commit_sync()
                    with lock:
                        got.extend((m.partition(), m.offset(), m.delivery_count(), index) for m in batch)
                        if len({(p, o) for p, o, _, _ in got}) >= total:
                            done.set()
            finally:
                c.close()

        threads = [threading.Thread(target=run, args=(i,)) for i in range(n_consumers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        distinct = {(p, o) for p, o, _, _ in got}
        return {"distinct records": len(distinct), "deliveries": len(got),
                "delivery counts": sorted({d for _, _, d, _ in got})}
    return scenario


def release_redelivers(bootstrap: str) -> dict:
    topic, group = prepared(bootstrap)
    produce(bootstrap, topic, 5)
    c = consumer(bootstrap, group, explicit=True)
    c.subscribe([topic])
    seen: list[tuple[int, int]] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(o == 2 and d == 2 for o, d in seen):
            for m in records(c.poll(0.5)):
                seen.append((m.offset(), m.delivery_count()))
                first_time = m.offset() == 2 and m.delivery_count() == 1
                c.acknowledge(m, AcknowledgeType.RELEASE if first_time else AcknowledgeType.ACCEPT)
            c.commit_sync()
    finally:
        c.close()
    return {"deliveries": sorted(seen), "start offsets": start_offsets(bootstrap, group)}


def reject_archives(bootstrap: str) -> dict:
    topic, group = prepared(bootstrap)
    produce(bootstrap, topic, 5)
    c = consumer(bootstrap, group, explicit=True)
    c.subscribe([topic])
    seen: list[tuple[int, int]] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(seen) < 5:
            for m in records(c.poll(0.5)):
                seen.append((m.offset(), m.delivery_count()))
                c.acknowledge(m, AcknowledgeType.REJECT if m.offset() == 1 else AcknowledgeType.ACCEPT)
            c.commit_sync()
        quiet_until = time.monotonic() + 3  # nothing comes back
        while time.monotonic() < quiet_until:
            for m in records(c.poll(0.5)):
                seen.append((m.offset(), m.delivery_count()))
                c.acknowledge(m)
    finally:
        c.close()
    return {"deliveries": sorted(seen), "start offsets": start_offsets(bootstrap, group)}


def delivery_limit_archives_a_poison_record(bootstrap: str) -> dict:
    topic, group = prepared(bootstrap)
    produce(bootstrap, topic, 1)
    c = consumer(bootstrap, group, explicit=True)
    c.subscribe([topic])
    counts: list[int] = []
    try:
        last = time.monotonic() + 30  # the first delivery may take a while (joining)
        while time.monotonic() - last < 4 and len(counts) < 10:
            for m in records(c.poll(0.5)):
                counts.append(m.delivery_count())
                c.acknowledge(m, AcknowledgeType.RELEASE)
                last = time.monotonic()
            c.commit_sync()
    finally:
        c.close()
    return {"delivery counts": counts, "start offsets": start_offsets(bootstrap, group)}


def stalled_consumer_loses_its_locks(bootstrap: str) -> dict:
    topic, group = prepared(bootstrap, share_record_lock_duration_ms=str(LOCK_MS))
    produce(bootstrap, topic, 10)
    stalled = consumer(bootstrap, group, explicit=True)
    stalled.subscribe([topic])
    other = consumer(bootstrap, group)
    try:
        held: list[int] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(held) < 10:
            held.extend(m.offset() for m in records(stalled.poll(0.5)))
        stalled_at = time.monotonic()  # it stops polling and acknowledging here
        other.subscribe([topic])
        got: list[tuple[int, int]] = []
        first_at = None
        while time.monotonic() < stalled_at + LOCK_MS / 1000 + 30 and len(got) < 10:
            for m in records(other.poll(0.5)):
                first_at = first_at or time.monotonic()
                got.append((m.offset(), m.delivery_count()))
        waited = (first_at or time.monotonic()) - stalled_at
    finally:
        other.close()
        stalled.close()
    return {"held": sorted(held), "taken over": sorted(got),
            "after the lock duration": waited >= LOCK_MS / 1000 - 1.5}


def read_committed_skips_aborted_records(bootstrap: str) -> dict:
    """share.isolation.level=read_committed: committed records only; aborted ones and markers never delivered."""
    topic, group = prepared(bootstrap, share_isolation_level="read_committed")
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:6]}"})
    producer.init_transactions(30)
    for label, commit in (("a", True), ("b", False), ("c", True)):
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic, f"{label}{i}".encode())
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    c = consumer(bootstrap, group)
    c.subscribe([topic])
    values: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(values) < 6:
            batch = records(c.poll(0.5))
            values.extend(m.value().decode() for m in batch)
            if batch:
                c.commit_sync()
        quiet_until = time.monotonic() + 2
        while time.monotonic() < quiet_until:
            batch = records(c.poll(0.5))
            values.extend(m.value().decode() for m in batch)
    finally:
        c.close()
    return {"values": sorted(values)}


def recreated_topic_is_consumed(bootstrap: str) -> dict:
    """A member stays subscribed while its topic is deleted and created again under the same name (a new topic
    id): the new topic's records reach it (librdkafka's 0184_share_consumer_topic_recreate). pykbroker bumped
    the group epoch for a changed topic only when the subscribed topics' hash had not been 0, so a topic
    created after the old one's deletion (hash 0 in between) was never assigned."""
    topic, group = prepared(bootstrap)
    produce(bootstrap, topic, 3)
    c = consumer(bootstrap, group)
    c.subscribe([topic])

    def consume(count: int) -> list[str]:
        values: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(values) < count:
            values.extend(m.value().decode() for m in records(c.poll(0.5)))
        return values

    try:
        before = consume(3)
        epoch = group_epoch(bootstrap, group)
        with RawClient(bootstrap, timeout=30) as raw:
            r = raw.request(DeleteTopicsRequest(topic_names=[topic], timeout_ms=30_000), 5)
            assert r.responses[0].error_code == ErrorCode.NONE, r
            bumped = epoch_bumped(bootstrap, group, epoch)
            deadline = time.monotonic() + 60  # Kafka deletes asynchronously: TOPIC_ALREADY_EXISTS meanwhile
            while True:
                r = raw.request(CreateTopicsRequest(timeout_ms=30_000, topics=[
                    CreatableTopic(name=topic, num_partitions=1, replication_factor=1)]), 7)
                if r.topics[0].error_code != ErrorCode.TOPIC_ALREADY_EXISTS or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert r.topics[0].error_code == ErrorCode.NONE, r
            raw.wait_for_topics(topic, timeout=30)
        produce(bootstrap, topic, 3)
        after = consume(3)
    finally:
        c.close()
    return {"before": sorted(before), "a heartbeat saw the deletion": bumped,
            "after recreation": sorted(after)}


def group_epoch(bootstrap: str, group: str) -> int:
    with RoutingClient(bootstrap, timeout=30) as c:
        return c.request(ShareGroupDescribeRequest(group_ids=[group]), 1).groups[0].group_epoch


def epoch_bumped(bootstrap: str, group: str, epoch: int) -> bool:
    """Whether the group's epoch passes ``epoch`` within a minute (a member's heartbeat saw a metadata change)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if group_epoch(bootstrap, group) > epoch:
            return True
        time.sleep(0.5)
    return False


SCENARIOS = {
    "two consumers, one partition": shared_by(2, 1),
    "three consumers, two partitions": shared_by(3, 2),
    "release redelivers": release_redelivers,
    "reject archives": reject_archives,
    "delivery limit": delivery_limit_archives_a_poison_record,
    "stalled consumer": stalled_consumer_loses_its_locks,
    "read_committed": read_committed_skips_aborted_records,
    "recreated topic": recreated_topic_is_consumed,
}


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("share-groups")) as b:
        enable_share_groups(b.bootstrap)
        yield b
        assert b.alive, f"the broker died; its log:\n{b.log()}"


@pytest.fixture(scope="module")
def kafka_share_cluster_judge(tmp_path_factory):
    """A 3-node Kafka 4.2 KRaft cluster: the judge of the share-group scenarios' cluster mode."""
    yield from kafka_cluster(judge_jars(SHARE_GROUPS_JUDGE), tmp_path_factory.mktemp("kafka42-cluster"))


@pytest.fixture(scope="module")
def share_cluster(tmp_path_factory):
    """3 pykbroker brokers with share groups on (share.version 1, as on a new Kafka 4.2 cluster)."""
    for cluster in pykbroker_cluster(tmp_path_factory.mktemp("share-cluster")):
        enable_share_groups(cluster.broker(1).bootstrap)
        yield cluster
        dead = [n for n, b in cluster.brokers.items() if not b.alive]
        assert not dead, f"brokers {dead} died; the first one's log:\n{cluster.broker(dead[0]).log() if dead else ''}"


def share_targets(request, mode: str) -> tuple[str, str]:
    """(Kafka 4.2's bootstrap, pykbroker's) in ``mode`` ("single" or "cluster"), share groups on at both."""
    kafka, pykbroker = differential_targets(request, mode, "kafka_share_judge", "share_broker",
                                            cluster_judge="kafka_share_cluster_judge", cluster_judged="share_cluster")
    enable_share_groups(kafka)  # on by default in 4.2; an upgrade to the same level is a no-op
    return kafka, pykbroker


@pytest.mark.parametrize(("mode", "name"), share_slow_on_one_node(differential_params(
    list(SCENARIOS), (), tuple(SCENARIOS), single_slow=("stalled consumer", "recreated topic",
                                                        "three consumers, two partitions", "reject archives")),
    ("release redelivers", "delivery limit")))
def test_share_scenario_as_kafka_4_2(mode, name, request):
    run = SCENARIOS[name]
    kafka, pykbroker = share_targets(request, mode)
    expected = run(kafka)
    got = run(pykbroker)
    assert got == expected, f"{mode} {name}: kafka={expected!r} pykbroker={got!r}"


# -- Kafka's own tools ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def jars() -> Path:
    found = jars_dir(SHARE_GROUPS_JUDGE)
    if found is None:
        pytest.skip(f"Kafka {SHARE_GROUPS_JUDGE}'s jars are missing and fetch_jars.sh could not fetch them")
    return found


def share_groups_tool(jars: Path, bootstrap: str, *args: str) -> str:
    done = subprocess.run([*JAVA, "-cp", f"{jars}/*", "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
                           "--bootstrap-server", bootstrap, *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"kafka-share-groups {' '.join(args)}: {done.stdout}\n{done.stderr}"
    return done.stdout


def tool_scenario(jars: Path, bootstrap: str) -> dict:
    """kafka-share-groups --list, --describe (--offsets, --members), --reset-offsets, --delete."""
    topic, group = prepared(bootstrap, 2)
    produce(bootstrap, topic, 20, 2)
    c = consumer(bootstrap, group)
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 60
    while got < 20 and time.monotonic() < deadline:
        got += len(records(c.poll(0.5)))
    c.commit_sync()

    def rows(text: str) -> list[list[str]]:
        return [line.split() for line in text.strip().splitlines() if line.strip()]

    listed = group in share_groups_tool(jars, bootstrap, "--list").split()
    members = rows(share_groups_tool(jars, bootstrap, "--describe", "--group", group, "--members"))
    c.close()
    described = rows(share_groups_tool(jars, bootstrap, "--describe", "--group", group, "--offsets"))
    reset = rows(share_groups_tool(jars, bootstrap, "--reset-offsets", "--group", group, "--topic", topic,
                                   "--to-earliest", "--execute"))
    after_reset = start_offsets(bootstrap, group)
    deleted = share_groups_tool(jars, bootstrap, "--delete", "--group", group)
    return {"listed": listed, "members header": members[0], "member rows": len(members) - 1,
            "offsets header": described[0], "offsets": sorted(r[2:] for r in described[1:]),
            "reset header": reset[0], "reset": sorted(r[2:] for r in reset[1:]), "after reset": after_reset,
            "deleted": deleted.replace(group, "<group>").strip(),
            "gone": group not in share_groups_tool(jars, bootstrap, "--list").split()}


@pytest.mark.parametrize(("mode", "name"), differential_params(["tool"], (), ("tool",), single_slow=("tool",)))
def test_kafka_share_groups_tool_as_kafka_4_2(mode, name, jars, request):
    kafka, pykbroker = share_targets(request, mode)
    expected = tool_scenario(jars, kafka)
    got = tool_scenario(jars, pykbroker)
    assert got == expected, f"{mode}: kafka={expected!r}\npykbroker={got!r}"


# -- kill -9 -------------------------------------------------------------------------------------------------
def test_kill_9_during_share_consumption_loses_and_repeats_nothing_acknowledged(tmp_path):
    """Acknowledged records never come back after a crash; unacknowledged ones are all delivered again."""
    b = BrokerProcess(tmp_path / "broker").start()
    try:
        enable_share_groups(b.bootstrap)
        topic, group = prepared(b.bootstrap, 2)
        total = 2000
        produce(b.bootstrap, topic, total, 2)
        accepted: set[tuple[int, int]] = set()
        c = consumer(b.bootstrap, group, explicit=True)
        c.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(accepted) < total // 2 and time.monotonic() < deadline:
            batch = records(c.poll(0.5))
            for m in batch:
                c.acknowledge(m)
            result = c.commit_sync()
            if all(err is None for err in result.values()):  # the broker confirmed these acknowledgements
                accepted.update((m.partition(), m.offset()) for m in batch)
        # one more batch is taken but never acknowledged, then the broker dies
        pending = {(m.partition(), m.offset()) for m in records(c.poll(2.0))}
        b.kill()
        c.close()
        b.start()
        after: list[tuple[int, int]] = []
        c = consumer(b.bootstrap, group)
        c.subscribe([topic])
        deadline = time.monotonic() + 90
        while len(set(after) | accepted) < total and time.monotonic() < deadline:
            after.extend((m.partition(), m.offset()) for m in records(c.poll(0.5)))
        c.close()
        everything = {(p, o) for p in range(2) for o in range(total // 2)}
        assert not accepted & set(after), "acknowledged records were delivered again"
        assert accepted | set(after) == everything, "records were lost"
        assert pending <= set(after)
    finally:
        b.close()


# -- the Java KafkaShareConsumer -----------------------------------------------------------------------------
def java_share_consumers(jars: Path, bootstrap: str) -> dict:
    """Kafka 4.2's console share consumer (KafkaShareConsumer) reads 200 records, then with --reject a
    second group rejects them all; ShareConsumerPerformance with two consumers reads 1000."""
    topic, group = prepared(bootstrap, 2)
    produce(bootstrap, topic, 200, 2)

    def console(group_id: str, *extra: str) -> list[str]:
        done = subprocess.run([*JAVA, "-cp", f"{jars}/*", "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
                               "--bootstrap-server", bootstrap, "--topic", topic, "--group", group_id,
                               "--max-messages", "200", "--timeout-ms", "60000", *extra],
                              capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-3000:]
        return sorted(done.stdout.split())

    read = console(group)
    rejecting = f"{group}-reject"
    set_group_configs(bootstrap, rejecting, share_auto_offset_reset="earliest")
    rejected = console(rejecting, "--reject")
    perf_topic, perf_group = prepared(bootstrap, 2)
    produce(bootstrap, perf_topic, 1000, 2)
    perf = subprocess.run([*JAVA, "-cp", f"{jars}/*", "org.apache.kafka.tools.ShareConsumerPerformance",
                           "--bootstrap-server", bootstrap, "--topic", perf_topic, "--group", perf_group,
                           "--num-records", "1000", "--threads", "2", "--timeout", "60000", "--hide-header"],
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert perf.returncode == 0, perf.stderr[-3000:]
    return {"read": read == sorted(f"record-{i}" for i in range(200)), "rejected": rejected == read,
            "start offsets after reject": start_offsets(bootstrap, rejecting),
            # start.time, end.time, data.consumed.in.MB, MB.sec, nMsg.sec, data.consumed.in.nMsg, fetch.time.ms
            "perf records": [f.strip() for f in perf.stdout.strip().splitlines()[-1].split(",")][5]}


@pytest.mark.parametrize(("mode", "name"), share_slow_on_one_node(differential_params(["java"], (), ("java",)),
                                                                 ("java",)))
def test_java_share_consumer_as_kafka_4_2(mode, name, jars, request):
    kafka, pykbroker = share_targets(request, mode)
    expected = java_share_consumers(jars, kafka)
    got = java_share_consumers(jars, pykbroker)
    assert expected["read"] and got == expected, f"{mode}: kafka={expected!r}\npykbroker={got!r}"


# -- the records of __share_group_state --------------------------------------------------------------------
def test_kafka_reads_the_share_group_state_records(jars, tmp_path):
    """Kafka 4.2's kafka-dump-log --share-group-state-decoder decodes what pykbroker writes."""
    import json

    b = BrokerProcess(tmp_path / "broker").start()
    try:
        enable_share_groups(b.bootstrap)
        topic, group = prepared(b.bootstrap)
        produce(b.bootstrap, topic, 4)
        c = consumer(b.bootstrap, group, explicit=True)
        c.subscribe([topic])
        got = 0
        deadline = time.monotonic() + 60
        while got < 4 and time.monotonic() < deadline:
            for m in records(c.poll(0.5)):
                c.acknowledge(m, AcknowledgeType.REJECT if m.offset() == 1 else AcknowledgeType.ACCEPT)
                got += 1
        c.commit_sync()
        c.close()
    finally:
        b.stop()
    decoded = []
    for segment in sorted((tmp_path / "broker" / "logs").glob("__share_group_state-*/*.log")):
        if segment.stat().st_size == 0:
            continue
        done = subprocess.run([*JAVA, "-cp", f"{jars}/*", "kafka.tools.DumpLogSegments", "--files", str(segment),
                               "--share-group-state-decoder", "--print-data-log"], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        for line in done.stdout.splitlines():
            if " key: " in line:
                key, payload = line.split(" key: ", 1)[1].split(" payload: ", 1)
                decoded.append((json.loads(key), json.loads(payload)))
    assert decoded, "no __share_group_state records"
    assert {k["data"]["groupId"] for k, _ in decoded} == {group}
    assert decoded[0][0]["type"] == "0"  # the first record is a ShareSnapshot
    batches = [b for _, p in decoded for b in p["data"]["stateBatches"]]
    assert {"firstOffset": 1, "lastOffset": 1, "deliveryState": 4, "deliveryCount": 1} in batches  # rejected
