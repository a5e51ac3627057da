"""Kafka 4.2's Java KafkaShareConsumer under ACLs, over SASL PLAIN (``jvm/ShareConsumerDriver.java``): without READ
on its group it gets GroupAuthorizationException and no record; with READ on the group but only DESCRIBE on the
topic, TopicAuthorizationException and no record; with READ on both it reads everything."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from compat_tests.jvm.kafka_broker import SHARE_GROUPS_JUDGE, jars_dir
from compat_tests.jvm.single_file import run_args
from compat_tests.test_share_groups import produce
from pykbroker.testing import BrokerProcess, RawClient, free_port
from wire import ErrorCode
from wire.messages import AlterShareGroupOffsetsRequest, CreateAclsRequest, CreateTopicsRequest
from wire.messages.alter_share_group_offsets_request import (
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from wire.messages.create_acls_request import AclCreation
from wire.messages.create_topics_request import CreatableTopic

if shutil.which("java") is None:
    pytest.skip("java is not installed: the share consumer is Kafka 4.2's Java client", allow_module_level=True)

DRIVER = Path(__file__).resolve().parent / "jvm" / "ShareConsumerDriver.java"
JAVA = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
USERS = ("alice", "bob", "carol")
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{u}="{u}-secret"' for u in USERS) + ";")
TOPIC_RT, GROUP_RT = 2, 3
READ, DESCRIBE = 3, 8
COUNT = 50


def acl(resource_type: int, name: str, user: str, operation: int) -> AclCreation:
    return AclCreation(resource_type=resource_type, resource_name=name, resource_pattern_type=3,
                       principal=f"User:{user}", host="*", operation=operation, permission_type=3)


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """(SASL address, topic, {user: group}): alice may READ her group and the topic, carol READ her group and only
    DESCRIBE the topic, bob nothing. Each group starts at offset 0 (an offsets reset by the super user)."""
    found = jars_dir(SHARE_GROUPS_JUDGE)
    if found is None:
        pytest.skip(f"Kafka {SHARE_GROUPS_JUDGE}'s jars are missing and fetch_jars.sh could not fetch them")
    port, sasl_port = free_port(), free_port()
    overrides = {"listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
                 "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
                 "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users": "User:ANONYMOUS", "group.share.enable": "true"}
    topic = f"share-{uuid.uuid4().hex[:8]}"
    groups = {u: f"{u}-{uuid.uuid4().hex[:6]}" for u in USERS}
    with BrokerProcess(tmp_path_factory.mktemp("share-authz"), port=port, overrides=overrides) as b:
        with RawClient(b.bootstrap, timeout=30) as c:
            r = c.request(CreateTopicsRequest(timeout_ms=30_000, topics=[
                CreatableTopic(name=topic, num_partitions=1, replication_factor=1)]), 7)
            assert r.topics[0].error_code == ErrorCode.NONE, r
            c.wait_for_topics(topic, timeout=30)
            r = c.request(CreateAclsRequest(creations=[
                acl(GROUP_RT, groups["alice"], "alice", READ), acl(TOPIC_RT, topic, "alice", READ),
                acl(GROUP_RT, groups["carol"], "carol", READ), acl(TOPIC_RT, topic, "carol", DESCRIBE)]), 3)
            assert all(x.error_code == 0 for x in r.results), r
            for group in groups.values():
                r = c.request(AlterShareGroupOffsetsRequest(group_id=group, topics=[AlterShareGroupOffsetsRequestTopic(
                    topic_name=topic, partitions=[AlterShareGroupOffsetsRequestPartition(partition_index=0,
                                                                                         start_offset=0)])]), 0)
                assert r.error_code == ErrorCode.NONE, r
        produce(b.bootstrap, topic, COUNT)
        yield found, f"127.0.0.1:{sasl_port}", topic, groups
        assert b.alive, b.log()


def consume_as(secured, user: str, seconds: int, *extra: str) -> list[str]:
    jars, address, topic, groups = secured
    done = subprocess.run([*JAVA, *run_args(DRIVER, jars), address, groups[user], topic, str(COUNT),
                           str(seconds), "0", "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN",
                           "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                           f'username="{user}" password="{user}-secret";', *extra],
                          capture_output=True, text=True, timeout=seconds + 90, stdin=subprocess.DEVNULL)
    return done.stdout.splitlines()


def test_without_group_read_the_java_share_consumer_gets_group_authorization_exception(secured):
    lines = consume_as(secured, "bob", 60, "driver.stop.on=GroupAuthorizationException")
    assert not [line for line in lines if line.startswith("GOT")], lines[:5]
    assert any("GroupAuthorizationException" in line for line in lines), lines[:5]


def test_without_topic_read_the_java_share_consumer_gets_topic_authorization_exception(secured):
    lines = consume_as(secured, "carol", 60, "driver.stop.on=TopicAuthorizationException")
    assert not [line for line in lines if line.startswith("GOT")], lines[:5]
    assert any("TopicAuthorizationException" in line for line in lines), lines[:5]


def test_with_group_and_topic_read_the_java_share_consumer_reads_everything(secured):
    lines = consume_as(secured, "alice", 60)
    assert sorted(line.split()[2] for line in lines if line.startswith("ACK")) == sorted(str(i) for i in range(COUNT))
