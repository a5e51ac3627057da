"""Stock clients meet pykbroker's ACLs as they meet Kafka's: confluent-kafka, kafka-python, aiokafka and the Java
tools are allowed what the ACLs grant and get their own authorization errors for the rest (a producer without
WRITE its TopicAuthorizationException, a consumer without READ on its group its GroupAuthorizationException),
over SASL (PLAIN) and mutual TLS (the certificate's DN is the principal). Kafka's kafka-acls tool adds, lists
and removes ACLs, which take effect at once; kafka-delegation-tokens creates, describes, renews and expires
tokens, and a Java producer authenticates with a token (SCRAM, tokenauth) as the token's owner.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from pykbroker.security.certs import CertificateAuthority
from pykbroker.testing import BrokerProcess, RawClient
from wire.messages import ConsumerGroupDescribeRequest, CreateAclsRequest, CreateTopicsRequest
from wire.messages.create_acls_request import AclCreation
from wire.messages.create_topics_request import CreatableTopic

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_alice="alice-secret" user_bob="bob-secret" user_admin="admin-secret";')
PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}
WRITER_DN = "O=pykbroker,CN=writer"  # RFC 2253: the last RDN of the subject first, as Java prints it
JAVA = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]
ACLS = [  # (resource type, name, pattern, principal, operation, permission)
    (2, "granted", 3, "User:alice", 4, 3), (2, "granted", 3, "User:alice", 3, 3),
    (3, "alice-group", 3, "User:alice", 3, 3), (3, "alice-regex", 3, "User:alice", 3, 3),
    (2, "granted", 3, "User:bob", 3, 3),
    (2, "granted", 3, f"User:{WRITER_DN}", 4, 3),
]


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """(broker, {listener: address}, CA file, client cert file): ANONYMOUS on PLAINTEXT and admin are super users."""
    d = tmp_path_factory.mktemp("authz-clients")
    ca = CertificateAuthority()
    ca_file = d / "ca.pem"
    ca_file.write_text(ca.pem)
    client = ca.issue(server=False, CN="writer", O="pykbroker")
    (d / "client.key").write_text(client.key_pem)
    (d / "client.pem").write_text(client.chain_pem)
    names = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL")
    overrides = {"listeners": ",".join(f"{p}://127.0.0.1:0" for p in names),  # bound by the broker
                 "ssl.keystore.type": "PEM",
                 "ssl.keystore.location": str(ca.issue(CN="localhost").write_pem(d / "server.pem")),
                 "ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca_file),
                 "listener.name.ssl.ssl.client.auth": "required",
                 "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
                 "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
                 "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
                     "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                 "delegation.token.secret.key": "clients-token-secret",
                 "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users": "User:ANONYMOUS;User:admin",
                 "group.initial.rebalance.delay.ms": "0"}
    with BrokerProcess(d / "data", port=0, overrides=overrides) as b:
        with RawClient(b.bootstrap) as c:
            c.request(CreateTopicsRequest(topics=[CreatableTopic(name=n, num_partitions=1, replication_factor=1)
                                                  for n in ("granted", "denied")], timeout_ms=10_000), 7)
            r = c.request(CreateAclsRequest(creations=[AclCreation(
                resource_type=t, resource_name=n, resource_pattern_type=p, principal=u, host="*", operation=o,
                permission_type=perm) for t, n, p, u, o, perm in ACLS]), 3)
            assert all(x.error_code == 0 for x in r.results)
        yield b, {p: b.address(p) for p in names}, ca_file, d
        assert b.alive, b.log()


def sasl(addresses, user: str) -> dict:
    return {"bootstrap.servers": addresses["SASL_PLAINTEXT"], "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": PASSWORDS[user]}


# -- confluent-kafka (librdkafka) ---------------------------------------------------------------------------------
def confluent_deliveries(config: dict, topic: str) -> list:
    from confluent_kafka import Producer

    results: list = []
    producer = Producer({**config, "message.timeout.ms": 10000})
    producer.produce(topic, value=b"v", on_delivery=lambda err, msg: results.append(err))
    producer.flush(20)
    return results


def test_confluent_producer_allowed_and_denied(secured):
    from confluent_kafka import KafkaError

    _, addresses, _, _ = secured
    assert confluent_deliveries(sasl(addresses, "alice"), "granted") == [None]
    denied = confluent_deliveries(sasl(addresses, "alice"), "denied")
    assert len(denied) == 1 and denied[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, denied


def test_confluent_consumer_without_group_read(secured):
    from confluent_kafka import Consumer, KafkaError

    _, addresses, _, _ = secured
    consumer = Consumer({**sasl(addresses, "bob"), "group.id": "bob-group", "auto.offset.reset": "earliest"})
    consumer.subscribe(["granted"])
    errors = []
    try:
        for _ in range(40):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is not None:
                errors.append(msg.error())
                break
    finally:
        consumer.close()
    assert errors and errors[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED, errors


def test_confluent_consumer_allowed(secured):
    from confluent_kafka import Consumer

    _, addresses, _, _ = secured
    assert confluent_deliveries(sasl(addresses, "alice"), "granted") == [None]
    consumer = Consumer({**sasl(addresses, "alice"), "group.id": "alice-group", "auto.offset.reset": "earliest"})
    consumer.subscribe(["granted"])
    got = []  # other tests write to "granted" too, before or after this one
    try:
        deadline = time.monotonic() + 60
        while b"v" not in got and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                got.append(msg.value())
    finally:
        consumer.close()
    assert b"v" in got, got


def test_confluent_regex_consumer_is_assigned_only_topics_it_may_describe(secured):
    """KIP-848 (group.protocol=consumer): librdkafka sends a regex subscription to the broker, which resolves it
    to the matching topics the member may DESCRIBE (Kafka 4.1's GroupMetadataManager filters through the
    authorizer): alice matches "granted" and "denied" but is assigned only "granted", silently."""
    from confluent_kafka import Consumer, Producer

    _, addresses, _, _ = secured
    admin = Producer({"bootstrap.servers": addresses["PLAINTEXT"]})  # ANONYMOUS is a super user
    for topic in ("granted", "denied"):
        admin.produce(topic, value=topic.encode())
    assert admin.flush(20) == 0
    consumer = Consumer({**sasl(addresses, "alice"), "group.id": "alice-regex", "group.protocol": "consumer",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["^(granted|denied)$"])
    seen: set[str] = set()
    errors = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "granted" not in seen:
            msg = consumer.poll(0.5)
            if msg is not None:
                if msg.error() is None:
                    seen.add(msg.topic())
                else:
                    errors.append(msg.error())
        for _ in range(4):  # a moment more: nothing from "denied" either
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.add(msg.topic())
        assignment = sorted(tp.topic for tp in consumer.assignment())
        with RawClient(addresses["PLAINTEXT"]) as c:  # the broker resolved a regex (the client sent no names)
            members = c.request(ConsumerGroupDescribeRequest(group_ids=["alice-regex"]), 1).groups[0].members
    finally:
        consumer.close()
    assert seen == {"granted"} and assignment == ["granted"], (seen, assignment, errors)
    # librdkafka sends its regexes (each in parentheses), and the broker assigns "granted" alone: librdkafka
    # would also leave out a topic its Metadata does not show, so the broker's own view is what tells.
    assert [(m.subscribed_topic_names, m.subscribed_topic_regex, sorted(t.topic_name for t in m.assignment.topic_partitions),
             sorted(t.topic_name for t in m.target_assignment.topic_partitions)) for m in members] == [
        ([], "(^(granted|denied)$)", ["granted"], ["granted"])]


def test_mutual_tls_principal_is_the_certificate_dn(secured):
    from confluent_kafka import KafkaError

    _, addresses, ca_file, d = secured
    config = {"bootstrap.servers": addresses["SSL"], "security.protocol": "SSL", "ssl.ca.location": str(ca_file),
              "ssl.certificate.location": str(d / "client.pem"), "ssl.key.location": str(d / "client.key")}
    assert confluent_deliveries(config, "granted") == [None]
    denied = confluent_deliveries(config, "denied")
    assert len(denied) == 1 and denied[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, denied


# -- kafka-python --------------------------------------------------------------------------------------------------
def kafka_python(addresses, user: str) -> dict:
    return {"bootstrap_servers": addresses["SASL_PLAINTEXT"], "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN", "sasl_plain_username": user, "sasl_plain_password": PASSWORDS[user]}


def test_kafka_python_producer_denied(secured):
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError

    _, addresses, _, _ = secured
    producer = KafkaProducer(**kafka_python(addresses, "alice"), max_block_ms=10000)
    try:
        producer.send("granted", b"v").get(timeout=30)
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("denied", b"v").get(timeout=30)
    finally:
        producer.close()


def test_kafka_python_consumer_without_group_read(secured):
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError

    _, addresses, _, _ = secured
    consumer = KafkaConsumer("granted", group_id="bob-group", **kafka_python(addresses, "bob"))
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            consumer.poll(timeout_ms=10000)
            consumer.poll(timeout_ms=10000)
    finally:
        consumer.close(autocommit=False)


# -- aiokafka --------------------------------------------------------------------------------------------------------
def test_aiokafka_producer_denied_and_consumer_without_group_read(secured):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

    _, addresses, _, _ = secured

    def config(user: str) -> dict:
        return {"bootstrap_servers": addresses["SASL_PLAINTEXT"], "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "PLAIN", "sasl_plain_username": user, "sasl_plain_password": PASSWORDS[user]}

    async def run() -> None:
        producer = AIOKafkaProducer(**config("alice"), request_timeout_ms=10000)
        await producer.start()
        try:
            await producer.send_and_wait("granted", b"v")
            with pytest.raises(TopicAuthorizationFailedError):
                await producer.send_and_wait("denied", b"v")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer("granted", group_id="bob-group", **config("bob"))
        try:
            with pytest.raises(GroupAuthorizationFailedError):  # joining the group, on start
                await consumer.start()
                await asyncio.wait_for(consumer.getone(), 20)
        finally:
            await consumer.stop()

    asyncio.run(run())


# -- Java ------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def jars():
    from compat_tests.jvm.kafka_broker import jars_dir

    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    found = jars_dir()
    if found is None:
        pytest.skip("Kafka's jars are missing and compat_tests/jvm/fetch_jars.sh could not fetch them")
    return found


def java_tool(jars, main_class: str, *args: str, input_text: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*JAVA, "-cp", f"{jars}/*", main_class, *args], capture_output=True, text=True,
                          input=input_text, timeout=180)


def client_config(path: Path, user: str) -> Path:
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                    f'username="{user}" password="{PASSWORDS[user]}";\n')
    return path


def test_java_console_producer_denied_then_allowed_by_kafka_acls(jars, secured, tmp_path):
    broker, addresses, _, _ = secured
    topic = f"acl-java-{uuid.uuid4().hex[:8]}"
    alice = client_config(tmp_path / "alice.properties", "alice")
    admin = client_config(tmp_path / "admin.properties", "admin")
    produce = ["org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", addresses["SASL_PLAINTEXT"],
               "--topic", topic, "--command-config", str(alice), "--command-property", "max.block.ms=10000"]
    denied = java_tool(jars, *produce, input_text="one\n")
    assert "TopicAuthorizationException" in denied.stdout + denied.stderr, denied.stdout + denied.stderr

    acls = ["org.apache.kafka.tools.AclCommand", "--bootstrap-server", addresses["SASL_PLAINTEXT"],
            "--command-config", str(admin)]
    added = java_tool(jars, *acls, "--add", "--allow-principal", "User:alice", "--producer", "--topic", topic)
    assert added.returncode == 0, added.stdout + added.stderr
    listed = java_tool(jars, *acls, "--list", "--topic", topic)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    for operation in ("WRITE", "DESCRIBE", "CREATE"):
        assert f"principal=User:alice, host=*, operation={operation}, permissionType=ALLOW" in listed.stdout, \
            listed.stdout
    allowed = java_tool(jars, *produce, input_text="one\ntwo\n")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr

    removed = java_tool(jars, *acls, "--remove", "--force", "--allow-principal", "User:alice", "--producer",
                        "--topic", topic)
    assert removed.returncode == 0, removed.stdout + removed.stderr
    listed = java_tool(jars, *acls, "--list", "--topic", topic)
    assert "User:alice" not in listed.stdout, listed.stdout
    denied_again = java_tool(jars, *produce, input_text="three\n")
    assert "TopicAuthorizationException" in denied_again.stdout + denied_again.stderr


def test_java_acl_tool_is_refused_to_a_non_super_user(jars, secured, tmp_path):
    _, addresses, _, _ = secured
    alice = client_config(tmp_path / "alice.properties", "alice")
    done = java_tool(jars, "org.apache.kafka.tools.AclCommand", "--bootstrap-server", addresses["SASL_PLAINTEXT"],
                     "--command-config", str(alice), "--list")
    assert "ClusterAuthorizationException" in done.stdout + done.stderr, done.stdout + done.stderr


def test_denials_are_logged_in_kafkas_words(secured):
    broker, addresses, _, _ = secured
    assert len(confluent_deliveries(sasl(addresses, "alice"), "denied")) == 1  # denied (the producer test checks how)
    deadline = time.monotonic() + 30
    # Clients learn of the denial from Metadata, before they produce.
    pattern = ("Principal = User:alice is Denied operation = DESCRIBE from host = 127.0.0.1 on resource = "
               "Topic:LITERAL:denied for request = Metadata with resourceRefCount = 1 based on rule DefaultDeny")
    while pattern not in broker.log() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert pattern in broker.log()


def test_java_delegation_tokens_tool_and_token_authentication(jars, secured, tmp_path):
    _, addresses, _, _ = secured
    alice = client_config(tmp_path / "alice.properties", "alice")
    tokens = ["org.apache.kafka.tools.DelegationTokenCommand", "--bootstrap-server", addresses["SASL_PLAINTEXT"],
              "--command-config", str(alice)]
    created = java_tool(jars, *tokens, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
    assert created.returncode == 0, created.stdout + created.stderr
    assert "Created delegation token with tokenId" in created.stdout, created.stdout
    row = created.stdout.strip().splitlines()[-1].split()
    token_id, hmac = row[0], row[1]
    assert row[2] == "User:alice" and "User:bob" in created.stdout
    # Without --owner-principal the tool asks for an empty owner list, which Kafka 4.1 answers with no tokens.
    described = java_tool(jars, *tokens, "--describe", "--owner-principal", "User:alice")
    assert described.returncode == 0 and token_id in described.stdout, described.stdout + described.stderr

    token_config = tmp_path / "token.properties"
    token_config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                            f'username="{token_id}" password="{hmac}" tokenauth="true";\n')
    produced = java_tool(jars, "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server",
                         addresses["SASL_PLAINTEXT"], "--topic", "granted", "--command-config", str(token_config),
                         input_text="by-token\n")
    assert produced.returncode == 0, produced.stdout + produced.stderr  # as alice, who may write to "granted"

    renewed = java_tool(jars, *tokens, "--renew", "--hmac", hmac, "--renew-time-period", "-1")
    assert renewed.returncode == 0 and "Completed renew operation" in renewed.stdout, renewed.stdout + renewed.stderr
    expired = java_tool(jars, *tokens, "--expire", "--hmac", hmac, "--expiry-time-period", "-1")
    assert expired.returncode == 0 and "Completed expire operation" in expired.stdout, expired.stdout + expired.stderr
    described = java_tool(jars, *tokens, "--describe", "--owner-principal", "User:alice")
    assert described.returncode == 0 and token_id not in described.stdout, described.stdout
    refused = java_tool(jars, "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server",
                        addresses["SASL_PLAINTEXT"], "--topic", "granted", "--command-config", str(token_config),
                        "--command-property", "max.block.ms=10000", input_text="late\n")
    assert "SaslAuthenticationException" in refused.stdout + refused.stderr
