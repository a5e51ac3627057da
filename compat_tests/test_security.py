"""Stock clients authenticate against pykbroker as against Kafka: confluent-kafka, kafka-python, aiokafka and
Kafka's own console producer and consumer (Java) produce and consume over SASL_PLAINTEXT with PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512, over SSL and over SASL_SSL; a wrong password fails with each client's
authentication error (logged; kafka-python and aiokafka then fail to bootstrap). SCRAM users are created with
AlterUserScramCredentials, and with kafka-configs for Java.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from pykbroker.security.certs import CertificateAuthority
from pykbroker.security.client import salted_password
from pykbroker.testing import BrokerProcess, RawClient
from tests.clients import read_kafka_python
from wire import ErrorCode
from wire.messages import AlterUserScramCredentialsRequest
from wire.messages.alter_user_scram_credentials_request import ScramCredentialUpsertion

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_alice="alice-secret" user_bob="bob-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_USERS = {"carol": "carol-scram"}
PASSWORDS = {"PLAIN": ("alice", "alice-secret"), "SCRAM-SHA-256": ("carol", "carol-scram"),
             "SCRAM-SHA-512": ("carol", "carol-scram")}
# (security protocol, SASL mechanism or None)
SETUPS = [("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
          ("SSL", None), ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN")]
IDS = [f"{p}-{m}" if m else p for p, m in SETUPS]


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """(broker, {protocol: address}, CA file) for a broker with one listener per security protocol."""
    d = tmp_path_factory.mktemp("security")
    ca = CertificateAuthority()
    ca_file = d / "ca.pem"
    ca_file.write_text(ca.pem)
    names = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
    overrides = {"listeners": ",".join(f"{p}://127.0.0.1:0" for p in names),  # bound by the broker
                 "ssl.keystore.type": "PEM",
                 "ssl.keystore.location": str(ca.issue(CN="localhost").write_pem(d / "server.pem")),
                 "sasl.enabled.mechanisms": ",".join(MECHANISMS),
                 "group.initial.rebalance.delay.ms": "0"}
    for listener in ("sasl_plaintext", "sasl_ssl"):
        overrides[f"listener.name.{listener}.plain.sasl.jaas.config"] = PLAIN_JAAS
        for m in MECHANISMS[1:]:
            overrides[f"listener.name.{listener}.{m.lower()}.sasl.jaas.config"] = SCRAM_JAAS
    with BrokerProcess(d / "data", port=0, overrides=overrides) as b:
        with RawClient(b.bootstrap) as c:
            for user, password in SCRAM_USERS.items():
                for mechanism, mtype in (("SCRAM-SHA-256", 1), ("SCRAM-SHA-512", 2)):
                    upsert = ScramCredentialUpsertion(name=user, mechanism=mtype, iterations=8192, salt=b"pepper",
                                                      salted_password=salted_password(mechanism, password, b"pepper",
                                                                                      8192))
                    result = c.request(AlterUserScramCredentialsRequest(deletions=[], upsertions=[upsert]), 0)
                    assert result.results[0].error_code == ErrorCode.NONE
        yield b, {p: b.address(p) for p in names}, ca_file
        assert b.alive, b.log()


def credentials(mechanism: str | None, wrong: bool) -> tuple[str, str]:
    user, password = PASSWORDS[mechanism or "PLAIN"]
    return user, password + "-wrong" if wrong else password


# -- confluent-kafka (librdkafka) ----------------------------------------------------------------------------
def confluent_config(addresses, ca_file: Path, protocol: str, mechanism: str | None, wrong: bool = False) -> dict:
    config = {"bootstrap.servers": addresses[protocol], "security.protocol": protocol}
    if mechanism:
        user, password = credentials(mechanism, wrong)
        config.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
    if protocol.endswith("SSL"):
        config["ssl.ca.location"] = str(ca_file)
    return config


@pytest.mark.parametrize(("protocol", "mechanism"), SETUPS, ids=IDS)
def test_confluent_kafka(secured, protocol, mechanism):
    from confluent_kafka import Consumer, Producer

    _, addresses, ca_file = secured
    topic = f"sec-ck-{uuid.uuid4().hex[:8]}"
    config = confluent_config(addresses, ca_file, protocol, mechanism)
    producer = Producer(config)
    for i in range(5):
        producer.produce(topic, value=f"m{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            if len(got) == 5:
                break
    finally:
        consumer.close()
    assert got == [f"m{i}".encode() for i in range(5)]


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_wrong_password(secured, protocol, mechanism):
    from confluent_kafka import KafkaError, Producer

    _, addresses, ca_file = secured
    errors: list = []
    producer = Producer({**confluent_config(addresses, ca_file, protocol, mechanism, wrong=True),
                         "error_cb": errors.append, "log_level": 0})
    for _ in range(40):
        producer.poll(0.25)
        if errors:
            break
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors
    assert "Authentication failed" in errors[0].str()


# -- kafka-python --------------------------------------------------------------------------------------------
def kafka_python_config(addresses, ca_file: Path, protocol: str, mechanism: str | None, wrong: bool = False) -> dict:
    config: dict = {"bootstrap_servers": addresses[protocol], "security_protocol": protocol}
    if mechanism:
        user, password = credentials(mechanism, wrong)
        config.update({"sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password})
    if protocol.endswith("SSL"):
        config["ssl_cafile"] = str(ca_file)
    return config


@pytest.mark.parametrize(("protocol", "mechanism"), SETUPS, ids=IDS)
def test_kafka_python(secured, protocol, mechanism):
    from kafka import KafkaConsumer, KafkaProducer

    _, addresses, ca_file = secured
    topic = f"sec-kp-{uuid.uuid4().hex[:8]}"
    config = kafka_python_config(addresses, ca_file, protocol, mechanism)
    producer = KafkaProducer(**config)
    for i in range(5):
        producer.send(topic, f"m{i}".encode()).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=topic, auto_offset_reset="earliest", **config)
    got = [m.value for m in read_kafka_python(consumer, 5)]
    consumer.close()
    assert got == [f"m{i}".encode() for i in range(5)]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_wrong_password(secured, mechanism):
    """As against Kafka 4.1, kafka-python 3 keeps retrying the node that refused it until bootstrap_timeout_ms
    runs out, then raises KafkaTimeoutError. What it logs per attempt is racy against Kafka too: the broker's
    SaslAuthenticationFailed error, or just "socket disconnected" when it notices the close first."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError

    _, addresses, ca_file = secured
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaProducer(**kafka_python_config(addresses, ca_file, "SASL_PLAINTEXT", mechanism, wrong=True),
                      bootstrap_timeout_ms=2000)


# -- aiokafka -------------------------------------------------------------------------------------------------
def aiokafka_config(addresses, ca_file: Path, protocol: str, mechanism: str | None, wrong: bool = False) -> dict:
    from aiokafka.helpers import create_ssl_context

    config: dict = {"bootstrap_servers": addresses[protocol], "security_protocol": protocol}
    if mechanism:
        user, password = credentials(mechanism, wrong)
        config.update({"sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password})
    if protocol.endswith("SSL"):
        config["ssl_context"] = create_ssl_context(cafile=str(ca_file))
    return config


@pytest.mark.parametrize(("protocol", "mechanism"), SETUPS, ids=IDS)
def test_aiokafka(secured, protocol, mechanism):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    _, addresses, ca_file = secured
    topic = f"sec-aio-{uuid.uuid4().hex[:8]}"

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**aiokafka_config(addresses, ca_file, protocol, mechanism))
        await producer.start()
        try:
            for i in range(5):
                await producer.send_and_wait(topic, f"m{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, group_id=topic, auto_offset_reset="earliest",
                                    **aiokafka_config(addresses, ca_file, protocol, mechanism))
        await consumer.start()
        got: list[bytes] = []
        try:
            while len(got) < 5:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 30)
                got += [m.value for records in batch.values() for m in records]
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == [f"m{i}".encode() for i in range(5)]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_wrong_password(secured, mechanism, caplog):
    """aiokafka logs the broker's SASL error and, as against Kafka 4.1, raises KafkaConnectionError("Unable to
    bootstrap from ...") from start()."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError

    _, addresses, ca_file = secured

    async def run() -> None:
        producer = AIOKafkaProducer(**aiokafka_config(addresses, ca_file, "SASL_PLAINTEXT", mechanism, wrong=True))
        try:
            await producer.start()
        finally:
            await producer.stop()

    with caplog.at_level(logging.ERROR, logger="aiokafka"), pytest.raises(KafkaConnectionError,
                                                                          match="Unable to bootstrap"):
        asyncio.run(run())
    assert any("SaslAuthenticationFailed: Authentication failed" in r.getMessage() for r in caplog.records), caplog.text


# -- Kafka's Java console tools --------------------------------------------------------------------------------
JAVA = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]


@pytest.fixture(scope="module")
def jars():
    from compat_tests.jvm.kafka_broker import jars_dir

    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    found = jars_dir()
    if found is None:
        pytest.skip("Kafka's jars are missing and compat_tests/jvm/fetch_jars.sh could not fetch them")
    return found


def java_tool(jars, main_class: str, *args: str, input_text: str | None = None,
              timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*JAVA, "-cp", f"{jars}/*", main_class, *args], capture_output=True, text=True,
                          input=input_text, timeout=timeout)


def command_config(path: Path, ca_file: Path, protocol: str, mechanism: str | None, user: str, password: str) -> Path:
    lines = [f"security.protocol={protocol}"]
    if mechanism:
        module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
        lines += [f"sasl.mechanism={mechanism}",
                  f'sasl.jaas.config=org.apache.kafka.common.security.{module} required username="{user}" '
                  f'password="{password}";']
    if protocol.endswith("SSL"):
        lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={ca_file}"]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def java_scram_user(jars, secured):
    """dave, created with kafka-configs over the PLAINTEXT listener, one SCRAM mechanism per command.

    Both mechanisms in one --add-config (the form Kafka's security docs show) send two upsertions for one user
    in one AlterUserScramCredentials request, which Kafka 4.1's controller refuses with DUPLICATE_RESOURCE
    (its check is per user); so does pykbroker.
    """
    broker = secured[0]

    def configs(add: str) -> subprocess.CompletedProcess:
        return java_tool(jars, "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", broker.bootstrap, "--alter",
                         "--add-config", add, "--entity-type", "users", "--entity-name", "dave")

    both = configs("SCRAM-SHA-256=[iterations=4096,password=dave-scram],SCRAM-SHA-512=[password=dave-scram]")
    assert both.returncode != 0
    assert ("DuplicateResourceException: A user credential cannot be altered twice in the same request"
            in both.stdout + both.stderr)
    for add in ("SCRAM-SHA-256=[iterations=4096,password=dave-scram]", "SCRAM-SHA-512=[password=dave-scram]"):
        done = configs(add)
        assert done.returncode == 0, done.stdout + done.stderr
    return "dave", "dave-scram"


@pytest.mark.parametrize(("protocol", "mechanism"), SETUPS, ids=IDS)
def test_java_console_producer_and_consumer(jars, secured, java_scram_user, tmp_path, protocol, mechanism):
    _, addresses, ca_file = secured
    user, password = java_scram_user if mechanism and mechanism.startswith("SCRAM") else PASSWORDS["PLAIN"]
    config = command_config(tmp_path / "client.properties", ca_file, protocol, mechanism, user, password)
    topic = f"sec-java-{uuid.uuid4().hex[:8]}"
    produced = java_tool(jars, "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", addresses[protocol],
                         "--topic", topic, "--command-config", str(config), input_text="one\ntwo\nthree\n")
    assert produced.returncode == 0, produced.stdout + produced.stderr
    consumed = java_tool(jars, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
                         addresses[protocol], "--topic", topic, "--from-beginning", "--max-messages", "3",
                         "--timeout-ms", "30000", "--command-config", str(config))
    assert consumed.returncode == 0, consumed.stdout + consumed.stderr
    assert consumed.stdout.split() == ["one", "two", "three"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_java_wrong_password(jars, secured, java_scram_user, tmp_path, mechanism):
    _, addresses, ca_file = secured
    user = java_scram_user[0] if mechanism.startswith("SCRAM") else "alice"
    config = command_config(tmp_path / "client.properties", ca_file, "SASL_PLAINTEXT", mechanism, user, "wrong")
    done = java_tool(jars, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", addresses["SASL_PLAINTEXT"],
                     "--list", "--command-config", str(config), timeout=120)
    assert done.returncode != 0
    assert "SaslAuthenticationException" in done.stdout + done.stderr
