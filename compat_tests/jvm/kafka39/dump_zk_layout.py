"""Dump the znodes that a real Apache Kafka 3.9.1 cluster in ZooKeeper mode writes, as a golden fixture.

    /work/main/.venv/bin/python -m compat_tests.jvm.kafka39.dump_zk_layout [OUT.json]

Starts a ZooKeeper (pykbroker.testing.ZooKeeperProcess) and three Kafka 3.9.1 brokers (jars from
compat_tests/jvm/kafka39/fetch_jars.sh) under the chroot ``/kafka``, does what an operator does (topics with
configs, several partitions and replicas, more partitions, topic/broker/client/user/ip configs and quotas,
SCRAM credentials, ACLs, an idempotent producer that makes the controller allocate producer ids, a topic
deletion, a controller failover, a topic deletion left pending and a reassignment left in flight because a
replica is offline), then writes
every znode under the chroot with its data, version and ephemeral-ness to
``tests/replication/metadata/zk/golden/kafka_3_9_1_znodes.json`` (default).

Znodes that 3.9.1 only reads (a reassignment or preferred-replica election written by ZooKeeper-era tools,
ISR-change and log-dir-event notifications from older brokers) are written with the bytes Kafka's own
encoders produce and recorded under ``written_and_consumed`` once the 3.9.1 controller has acted on them
(and deleted them). ``controller_failover`` holds /controller and /controller_epoch before and after the
controller's broker stops. Cluster-specific values (ports,
timestamps, topic ids, the cluster id) are replaced so the fixture is stable: broker N's port by 9090+N,
timestamps by 1700000000000, ids by ``<placeholders>``; the data otherwise is byte for byte what Kafka wrote.

Every step prints one line; the whole run takes about a minute on two cores.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient

from compat_tests.jvm.kafka39.broker import Kafka39, jars_dir, java
from pykbroker.testing import ZooKeeperProcess

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
GOLDEN = REPO / "tests" / "replication" / "zk" / "golden" / "kafka_3_9_1_znodes.json"
CHROOT = "/kafka"
FIXED_TIMESTAMP = 1700000000000  # replaces every timestamp in the fixture


def step(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run_tool(jar_dir: Path, *args: str) -> str:
    out = subprocess.run(java(jar_dir, *args), capture_output=True, text=True, timeout=180)
    if out.returncode != 0:
        raise RuntimeError(f"{args[0]} failed: {out.stdout}\n{out.stderr}")
    return out.stdout


def wait_for(predicate, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.1)


def operate(jar_dir: Path, brokers: list[Kafka39], zk: KazooClient) -> dict:
    """What an operator does to a cluster, each through Kafka's own path (AdminClient or Kafka's tools)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    bootstrap = ",".join(f"127.0.0.1:{b.port}" for b in brokers)
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def done(futures) -> None:
        for f in futures.values():
            f.result(60)

    step("create topics: orders (3 partitions, RF 2, compacted, configs), events (2 partitions, explicit assignment), gone")
    done(admin.create_topics([
        NewTopic("orders", 3, 2, config={"cleanup.policy": "compact", "min.insync.replicas": "2",
                                         "retention.ms": "86400000"}),
        NewTopic("events", 2, replica_assignment=[[1, 2, 3], [2, 3, 1]]),
        NewTopic("gone", 1, replica_assignment=[[1]]),
        # 24 partitions: Kafka's partition map is a Scala hash map, whose order is not numeric past 10
        NewTopic("wide", 24, 1),
        # 13 configs: a java.util.Properties that outgrows its first table
        NewTopic("tuned", 1, 1, config={
            "cleanup.policy": "delete", "compression.type": "lz4", "delete.retention.ms": "1000",
            "file.delete.delay.ms": "2000", "flush.messages": "100", "flush.ms": "3000",
            "max.message.bytes": "2000000", "min.insync.replicas": "1", "retention.bytes": "5000000",
            "retention.ms": "600000", "segment.bytes": "10000000", "segment.ms": "700000",
            "unclean.leader.election.enable": "true"}),
    ]))
    step("add partitions: orders 3 -> 5")
    done(admin.create_partitions([NewPartitions("orders", 5)]))
    step("alter configs: topic events, broker 1")
    done(admin.incremental_alter_configs([
        ConfigResource("topic", "events", incremental_configs=[
            ConfigEntry("retention.bytes", "1048576", incremental_operation=AlterConfigOpType.SET)]),
        ConfigResource("broker", "1", incremental_configs=[
            ConfigEntry("log.cleaner.threads", "2", incremental_operation=AlterConfigOpType.SET)]),
    ]))
    step("remove one topic config again (a deletion is a config change too)")
    done(admin.incremental_alter_configs([
        ConfigResource("topic", "orders", incremental_configs=[
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])]))

    step("quotas through kafka-configs: client, user, user+client, defaults, ip")
    configs = ("kafka.admin.ConfigCommand", "--bootstrap-server", bootstrap, "--alter")
    step("default broker config through kafka-configs (librdkafka cannot name the default broker)")
    run_tool(jar_dir, *configs, "--entity-type", "brokers", "--entity-default",
             "--add-config", "log.retention.bytes=1073741824")
    run_tool(jar_dir, *configs, "--entity-type", "clients", "--entity-name", "client-a",
             "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048")
    run_tool(jar_dir, *configs, "--entity-type", "users", "--entity-name", "alice",
             "--add-config", "request_percentage=50")
    run_tool(jar_dir, *configs, "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
             "--entity-name", "client-a", "--add-config", "producer_byte_rate=4096")
    run_tool(jar_dir, *configs, "--entity-type", "users", "--entity-default", "--entity-type", "clients",
             "--entity-default", "--add-config", "consumer_byte_rate=8192")
    run_tool(jar_dir, *configs, "--entity-type", "clients", "--entity-default",
             "--add-config", "producer_byte_rate=16384")
    run_tool(jar_dir, *configs, "--entity-type", "ips", "--entity-name", "127.0.0.2",
             "--add-config", "connection_creation_rate=10")

    step("SCRAM credentials: alice (SHA-256 and SHA-512), bob (SHA-512)")
    done(admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"alice-secret"),
        UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"alice-secret"),
        UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"bob-secret"),
    ]))

    step("ACLs: literal topic, prefixed topic, group, cluster")
    for f in admin.create_acls([
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:bob", "10.0.0.1",
                   AclOperation.WRITE, AclPermissionType.DENY),
        AclBinding(ResourceType.TOPIC, "logs-", ResourcePatternType.PREFIXED, "User:alice", "*",
                   AclOperation.WRITE, AclPermissionType.ALLOW),
        AclBinding(ResourceType.GROUP, "g1", ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.DESCRIBE, AclPermissionType.ALLOW),
    ]).values():
        f.result(60)

    step("idempotent producer: the controller allocates a producer-id block")
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    producer.produce("events", b"v", b"k")
    if producer.flush(60) != 0:
        raise RuntimeError("produce did not complete")
    wait_for(lambda: zk.exists(f"{CHROOT}/latest_producer_id_block") is not None, "latest_producer_id_block")

    step("delete topic 'gone' while every replica is online: all its znodes go")
    done(admin.delete_topics(["gone"]))
    gone = ("/brokers/topics/gone", "/config/topics/gone", "/admin/delete_topics/gone")
    wait_for(lambda: all(zk.exists(CHROOT + p) is None for p in gone), "topic gone deleted")

    # Znodes that only a ZooKeeper-era tool or a broker of an older protocol writes: written here with the
    # bytes Kafka's own encoders produce, and kept in the fixture once the 3.9.1 controller has acted on them.
    step("reassignment through the /admin/reassign_partitions znode (the legacy path the controller still watches)")
    written: list[dict] = []

    def write_and_wait(path: str, data: bytes, sequential: bool = False, done_when=None) -> None:
        real = zk.create(CHROOT + path, data, sequence=sequential)
        wait_for(done_when or (lambda: zk.exists(real) is None), f"{path} consumed")
        written.append({"path": real[len(CHROOT):], "data": data.decode(), "consumed": True})

    write_and_wait("/admin/reassign_partitions",
                   b'{"version":1,"partitions":[{"topic":"events","partition":1,"replicas":[3,1,2]}]}')
    assignment = json.loads(zk.get(f"{CHROOT}/brokers/topics/events")[0])
    assert assignment["partitions"]["1"] == [3, 1, 2], assignment
    step("preferred replica election through /admin/preferred_replica_election")
    write_and_wait("/admin/preferred_replica_election", b'{"version":1,"partitions":[{"topic":"events","partition":1}]}')
    wait_for(lambda: json.loads(zk.get(f"{CHROOT}/brokers/topics/events/partitions/1/state")[0])["leader"] == 3,
             "preferred leader 3 elected")
    step("an ISR change notification and a log dir event notification (what pre-2.7 brokers wrote)")
    write_and_wait("/isr_change_notification/isr_change_",
                   b'{"version":1,"partitions":[{"topic":"events","partition":0}]}', sequential=True)
    write_and_wait("/log_dir_event_notification/log_dir_event_", b'{"version":1,"broker":2,"event":1}',
                   sequential=True)
    history: list[dict] = []

    def controller() -> dict:
        data, stat = zk.get(f"{CHROOT}/controller")
        epoch, epoch_stat = zk.get(f"{CHROOT}/controller_epoch")
        return {"controller": data.decode(), "controller_epoch": epoch.decode(),
                "controller_epoch_zk_version": epoch_stat.version}

    history.append(controller())
    old_controller = json.loads(history[0]["controller"])["brokerid"]
    other = next(b.broker_id for b in brokers if b.broker_id != old_controller)
    step(f"create 'doomed' on the controller {old_controller} and broker {other}")
    done(admin.create_topics([NewTopic("doomed", 1, replica_assignment=[[old_controller, other]])]))
    wait_for(lambda: zk.exists(f"{CHROOT}/brokers/topics/doomed/partitions/0/state") is not None, "doomed created")

    step(f"stop the controller {old_controller} (controlled shutdown); another takes over")
    victim = next(b for b in brokers if b.broker_id == old_controller)
    victim.stop()
    wait_for(lambda: zk.exists(f"{CHROOT}/brokers/ids/{old_controller}") is None, "controller deregistered")

    def new_controller() -> bool:
        try:
            return json.loads(zk.get(f"{CHROOT}/controller")[0])["brokerid"] != old_controller
        except Exception:  # noqa: BLE001 - not there yet
            return False

    wait_for(new_controller, "new controller")
    history.append(controller())
    step("delete 'doomed', whose replica on the stopped broker is offline: the deletion stays pending")
    alive = [b for b in brokers if b.proc is not None]
    admin = AdminClient({"bootstrap.servers": ",".join(f"127.0.0.1:{b.port}" for b in alive)})
    for f in admin.delete_topics(["doomed"], operation_timeout=1).values():
        try:
            f.result(30)
        except Exception as exc:  # noqa: BLE001 - the deletion cannot finish with a replica offline
            step(f"delete_topics answered {exc}")
    wait_for(lambda: zk.exists(f"{CHROOT}/admin/delete_topics/doomed") is not None, "deletion pending")

    # a partition of 'wide' (one replica r, not on the stopped broker v) moves to [o, v], o the third broker:
    # adding [o, v], removing [r]; it cannot finish while v is down
    wide = json.loads(zk.get(f"{CHROOT}/brokers/topics/wide")[0])["partitions"]
    partition, (r,) = next((int(p), rs) for p, rs in sorted(wide.items(), key=lambda e: int(e[0]))
                           if rs != [old_controller])
    o = next(b for b in (1, 2, 3) if b not in (r, old_controller))
    step(f"reassign 'wide' partition {partition} from [{r}] to [{o}, {old_controller}] (stopped): it stays in flight")
    request = json.dumps({"version": 1, "partitions": [{"topic": "wide", "partition": partition,
                                                        "replicas": [o, old_controller]}]}, separators=(",", ":"))
    zk.create(f"{CHROOT}/admin/reassign_partitions", request.encode())
    wait_for(lambda: json.loads(zk.get(f"{CHROOT}/brokers/topics/wide")[0])["removing_replicas"], "reassignment begun")
    # let the controller finish reacting to the broker's loss (partition states with a shrunk ISR)
    time.sleep(2)
    return {"written_and_consumed": written, "controller_failover": history}


def dump(zk: KazooClient, root: str) -> list[dict]:
    """Every znode under ``root`` (paths relative to it), depth first, children sorted."""
    out = []

    def walk(path: str) -> None:
        data, stat = zk.get(path)
        rel = path[len(root):] or "/"
        out.append({"path": rel, "data": None if data is None else data.decode("utf-8", "replace"),
                    "version": stat.version, "ephemeral": stat.ephemeralOwner != 0})
        for child in sorted(zk.get_children(path)):
            walk(f"{path.rstrip('/')}/{child}")

    walk(root)
    return out


def stabilise(nodes: list[dict], brokers: list[Kafka39], key: str = "data") -> list[dict]:
    """Replace the values that differ from run to run by placeholders; keep everything else verbatim."""
    ports = {str(b.port): str(9090 + b.broker_id) for b in brokers}
    cluster_id = None
    topic_ids: dict[str, str] = {}
    for n in nodes:
        if n.get("path") == "/cluster/id":
            cluster_id = json.loads(n["data"])["id"]
        m = re.fullmatch(r"/brokers/topics/([^/]+)", n.get("path", ""))
        if m and n["data"]:
            topic_ids[json.loads(n["data"]).get("topic_id", "")] = f"<topic_id:{m.group(1)}>"
    for n in nodes:
        d = n[key]
        if d is None:
            continue
        d = re.sub(r'"timestamp":"\d+"', f'"timestamp":"{FIXED_TIMESTAMP}"', d)
        for port, fixed in ports.items():
            d = d.replace(f":{port}", f":{fixed}")
        if cluster_id:
            d = d.replace(cluster_id, "<cluster_id>")
        for tid, name in topic_ids.items():
            if tid:
                d = d.replace(tid, name)
        n[key] = d
    return nodes


def main() -> None:
    out_path = Path(sys.argv[1]) if len(sys.argv) > 1 else GOLDEN
    if shutil.which("java") is None:
        raise SystemExit("java is required")
    jar_dir = jars_dir()
    if jar_dir is None:
        raise SystemExit("compat_tests/jvm/kafka39/fetch_jars.sh failed (java and Maven are needed)")
    root = Path(tempfile.mkdtemp(prefix="kafka39-zk-"))
    zk_server = ZooKeeperProcess(root / "zk").start()
    acl_authorizer = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                      "allow.everyone.if.no.acl.found": "true", "super.users": "User:ANONYMOUS"}
    brokers = [Kafka39(jar_dir, root, i, f"{zk_server.connect}{CHROOT}", f"rack-{'abc'[i - 1]}", acl_authorizer)
               for i in (1, 2, 3)]
    zk = KazooClient(hosts=zk_server.connect)
    zk.start(timeout=30)
    try:
        step(f"ZooKeeper on {zk_server.connect}; starting Kafka 3.9.1 brokers 1-3 under chroot {CHROOT}")
        for b in brokers:
            b.start()
        for b in brokers:
            b.wait()
        wait_for(lambda: len(zk.get_children(f"{CHROOT}/brokers/ids")) == 3, "3 brokers registered")
        extra = operate(jar_dir, brokers, zk)
        nodes = stabilise(dump(zk, CHROOT), brokers)
        stabilise(extra["controller_failover"], brokers, key="controller")
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps({"kafka": "3.9.1", "chroot": CHROOT, "znodes": nodes, **extra}, indent=1) + "\n")
        step(f"wrote {len(nodes)} znodes to {out_path}")
    except BaseException:
        for b in brokers:
            print(f"--- broker {b.broker_id} log tail ---", file=sys.stderr)
            print(b.log(30), file=sys.stderr)
        raise
    finally:
        zk.stop()
        zk.close()
        for b in brokers:
            b.stop()
        zk_server.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
