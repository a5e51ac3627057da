"""pykbroker's ZooKeeper layout against Apache Kafka 3.9.1 itself, both ways round.

1. pykbroker's ZooKeeper code writes a cluster (cluster id, a topic with configs and partition states, a
   default broker config, a SCRAM credential); a Kafka 3.9.1 broker started on those znodes serves it: the
   topic with our topic id and configs, our cluster id, our broker default, and a SCRAM login with our stored
   credential.
2. Kafka writes (a topic created and a config altered through its AdminClient, its controller registration,
   a producer-id block): pykbroker's store and election follow, and our next producer-id block does not
   overlap Kafka's.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil

import pytest

from compat_tests.jvm.kafka39.broker import Kafka39, jars_dir
from pykbroker.testing import ZooKeeperProcess, free_port
from replication.metadata.zk.broker_registration import live_brokers
from replication.metadata.zk.client import ZooKeeperClient
from replication.metadata.zk.cluster_id import get_or_create_cluster_id
from replication.metadata.zk.controller_election import ControllerElection
from replication.metadata.zk.metadata_store import ZooKeeperMetadataStore
from replication.metadata.zk.producer_id_block import allocate_producer_id_block
from replication.metadata.zk.znodes import FeatureZNode, ProducerIdBlockZNode

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="Kafka 3.9.1 needs java")


async def eventually(predicate, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


def test_kafka_3_9_1_serves_our_znodes_and_we_follow_its_writes(tmp_path):
    from confluent_kafka import KafkaException, Producer, TopicCollection
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ScramMechanism,
    )

    jars = jars_dir()
    assert jars is not None, "compat_tests/jvm/kafka39/fetch_jars.sh could not fetch Kafka 3.9.1 (Maven needed)"

    async def main(server: ZooKeeperProcess) -> None:
        zk = ZooKeeperClient(f"{server.connect}/kafka", session_timeout_ms=6000)
        await zk.start()
        store = ZooKeeperMetadataStore(zk, 2, with_controller=False)  # we write the partition states too
        try:
            # -- 1. we write, Kafka serves ------------------------------------------------------------------
            cluster_id = await get_or_create_cluster_id(zk)
            await store.start()
            ours = await store.create_topic("ours", [[1], [1], [1]], {"cleanup.policy": "compact"})
            await store.set_broker_configs({"": {"log.retention.bytes": "1073741824"}})
            salt = os.urandom(16)
            await store.alter_scram_credentials([], [("alice", 1, 4096, salt,
                                                      hashlib.pbkdf2_hmac("sha256", b"alice-secret", salt, 4096))])

            # A Kafka 3.9.1 broker refuses the levels a Kafka 4.4 cluster finalizes (group.version,
            # transaction.version, ... are unknown to it), as it could never join a 4.4 cluster: /feature is set
            # as a 3.9.1 controller leaves it, and everything else stays as pykbroker wrote it.
            await zk.set(FeatureZNode.path, FeatureZNode.encode({}))
            sasl_port = free_port()
            kafka = Kafka39(jars, tmp_path, 1, f"{server.connect}/kafka", overrides={
                "listeners": f"PLAINTEXT://127.0.0.1:{{port}},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
                "sasl.enabled.mechanisms": "SCRAM-SHA-256",
                "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                "offsets.topic.replication.factor": 1, "transaction.state.log.replication.factor": 1,
                "transaction.state.log.min.isr": 1})
            kafka.props["listeners"] = str(kafka.props["listeners"]).replace("{port}", str(kafka.port))
            kafka.start()
            try:
                await asyncio.to_thread(kafka.wait)
                admin = AdminClient({"bootstrap.servers": kafka.bootstrap})

                def leaders() -> list[int]:
                    topic = admin.list_topics("ours", timeout=10).topics["ours"]
                    return [topic.partitions[p].leader for p in sorted(topic.partitions)]

                await eventually(lambda: leaders() == [1, 1, 1])
                described = admin.describe_cluster().result(30)
                assert described.cluster_id == cluster_id
                topic = admin.describe_topics(TopicCollection(["ours"]))["ours"].result(30)
                mask = (1 << 64) - 1  # (librdkafka prints ids in standard base64, Kafka in url-safe: compare bits)
                assert ((topic.topic_id.get_most_significant_bits() & mask) << 64
                        | topic.topic_id.get_least_significant_bits() & mask) == ours.topic_id.int
                topic_config = admin.describe_configs([ConfigResource("topic", "ours")])
                entries = next(iter(topic_config.values())).result(30)
                assert entries["cleanup.policy"].value == "compact"
                broker_config = next(iter(admin.describe_configs([ConfigResource("broker", "1")]).values())).result(30)
                assert broker_config["log.retention.bytes"].value == "1073741824"
                scram = admin.describe_user_scram_credentials(["alice"])["alice"].result(30)
                assert [(i.mechanism, i.iterations) for i in scram.scram_credential_infos] == \
                    [(ScramMechanism.SCRAM_SHA_256, 4096)]

                def produce(password: str) -> None:
                    producer = Producer({"bootstrap.servers": f"127.0.0.1:{sasl_port}",
                                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                                         "sasl.username": "alice", "sasl.password": password,
                                         "enable.idempotence": True, "message.timeout.ms": 15000,
                                         "error_cb": lambda e: errors.append(e)})
                    producer.produce("ours", b"v", b"k", callback=lambda err, _m: errors.append(err) if err else None)
                    producer.flush(20)

                errors: list = []
                await asyncio.to_thread(produce, "alice-secret")
                assert errors == []  # Kafka authenticated alice with the credential we stored
                await asyncio.to_thread(produce, "wrong")
                assert any("Authentication" in str(e) or "SASL" in str(e) for e in errors), errors

                # -- 2. Kafka writes, we follow ------------------------------------------------------------
                for f in admin.create_topics([NewTopic("theirs", 2, 1)]).values():
                    f.result(30)
                await eventually(lambda: "theirs" in store.topics
                                 and [p.leader for p in store.topics["theirs"].partitions] == [1, 1])
                for f in admin.incremental_alter_configs([ConfigResource("topic", "ours", incremental_configs=[
                        ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)])]).values():
                    f.result(30)
                await eventually(lambda: store.topics["ours"].configs == {"cleanup.policy": "compact",
                                                                          "retention.ms": "60000"})
                election = ControllerElection(zk, 2)
                await election.start()
                assert election.active_controller_id == 1 and not election.is_active
                brokers = await live_brokers(zk)
                assert list(brokers) == [1] and brokers[1][0].endpoints[0].port == kafka.port

                found = await zk.get("/latest_producer_id_block")
                kafkas_block = ProducerIdBlockZNode.decode(found[0])
                assert kafkas_block is not None and kafkas_block.broker_id == 1  # alice's idempotent producer
                ours_block = await allocate_producer_id_block(zk, 2)
                assert ours_block.first == kafkas_block.last + 1
            finally:
                await asyncio.to_thread(kafka.stop)
        except (AssertionError, KafkaException):
            print(kafka.log() if "kafka" in locals() else "")
            raise
        finally:
            await zk.close()

    with ZooKeeperProcess(tmp_path / "zk") as server:
        asyncio.run(asyncio.wait_for(main(server), 240))
