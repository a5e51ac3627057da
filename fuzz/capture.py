"""Capture the fuzz seed corpus from real clients: ``python -m fuzz.capture [--java]``.

A recording proxy sits between each client and a real pykbroker (the broker advertises the proxy, so
every connection goes through it). Every request frame a client sends is saved under
``fuzz/corpus/requests/<client>-<api key>-v<version>-<hash>.bin`` (the frame body, without the size
prefix); the tokens inside SaslAuthenticate requests also go to ``fuzz/corpus/sasl/``. The clients:
confluent-kafka (librdkafka), kafka-python, aiokafka and, with ``--java``, Kafka's own Java tools
(the jars of compat_tests/jvm). Frames above MAX_SAVED_FRAME are not kept (the repository stays small).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import socket
import struct
import subprocess
import threading
import time
import uuid
from pathlib import Path

from pykbroker.security.client import salted_password
from pykbroker.testing import BrokerProcess, RawClient, free_port
from wire import Reader, decode_request_header
from wire.messages import AlterUserScramCredentialsRequest, SaslAuthenticateRequest
from wire.messages.alter_user_scram_credentials_request import ScramCredentialUpsertion

CORPUS = Path(__file__).parent / "corpus"
# Frames larger than this are not kept: the corpus is committed.
MAX_SAVED_FRAME = 32768
# Distinct frames kept per (client, api key, version): enough variety, a small repository.
PER_KIND = 6
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_alice="alice-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


class Recorder:
    """Saves request frames; ``client`` names whoever is talking now."""

    def __init__(self) -> None:
        self.client = "unknown"
        self.kinds: dict[tuple[str, int, int], int] = {}
        self.saved = 0

    def record(self, body: bytes) -> None:
        if len(body) < 8 or len(body) > MAX_SAVED_FRAME:
            return
        api_key, version = struct.unpack_from(">hh", body)
        kind = (self.client, api_key, version)
        if self.kinds.get(kind, 0) >= PER_KIND:
            return
        digest = hashlib.sha1(body).hexdigest()[:12]
        path = CORPUS / "requests" / f"{self.client}-{api_key}-v{version}-{digest}.bin"
        if path.exists():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self.saved += 1
        if api_key == 36:  # SaslAuthenticate: its token is the SASL parsers' input
            try:
                r = Reader(body)
                decode_request_header(r)
                token = SaslAuthenticateRequest.decode_from(r, version).auth_bytes
            except Exception:  # noqa: BLE001 - a capture tool: a frame we cannot read is just not a seed
                return
            sasl = CORPUS / "sasl" / f"{self.client}-{hashlib.sha1(token).hexdigest()[:12]}.bin"
            sasl.parent.mkdir(parents=True, exist_ok=True)
            sasl.write_bytes(token)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, recorder: Recorder | None) -> None:
    buf = b""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            if recorder is not None:
                buf += data
                while len(buf) >= 4:
                    (size,) = struct.unpack_from(">i", buf)
                    if len(buf) < 4 + size:
                        break
                    recorder.record(buf[4:4 + size])
                    buf = buf[4 + size:]
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


def start_proxy(listen_port: int, target_port: int, recorder: Recorder) -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            tr, tw = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            w.close()
            return
        await asyncio.gather(_pipe(r, tw, recorder), _pipe(tr, w, None))

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", listen_port)
        async with server:
            await server.serve_forever()

    threading.Thread(target=asyncio.run, args=(main(),), daemon=True).start()
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", listen_port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)


def confluent(plain: str, sasl: str) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    admin = AdminClient({"bootstrap.servers": plain})
    topic = "cf-" + uuid.uuid4().hex[:6]
    for f in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        f.result()
    admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])[
        ConfigResource(ConfigResource.Type.TOPIC, topic)].result()
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        p = Producer({"bootstrap.servers": plain, "compression.type": codec, "linger.ms": 5})
        for i in range(50):
            p.produce(topic, key=f"k{i}".encode(), value=f"{codec}-value-{i}".encode() * 3)
        p.flush()
    tp = Producer({"bootstrap.servers": plain, "transactional.id": "cf-txn-" + topic})
    tp.init_transactions()
    tp.begin_transaction()
    tp.produce(topic, b"txn")
    tp.commit_transaction()
    c = Consumer({"bootstrap.servers": plain, "group.id": topic, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 30
    while got < 100 and time.monotonic() < deadline:
        got += len(c.consume(100, 0.5))
    c.commit(asynchronous=False)
    c.close()
    for mechanism, user, password in (("PLAIN", "alice", "alice-secret"), ("SCRAM-SHA-256", "carol", "carol-scram"),
                                      ("SCRAM-SHA-512", "carol", "carol-scram")):
        p = Producer({"bootstrap.servers": sasl, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
                      "sasl.username": user, "sasl.password": password})
        p.produce(topic, b"sasl")
        p.flush(10)


def kafka_python(plain: str, sasl: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = "kp-" + uuid.uuid4().hex[:6]
    admin = KafkaAdminClient(bootstrap_servers=plain)
    admin.create_topics([NewTopic(topic, 2, 1)])
    admin.describe_topics([topic])
    admin.close()
    for codec in (None, "gzip", "lz4", "zstd", "snappy"):
        p = KafkaProducer(bootstrap_servers=plain, compression_type=codec, linger_ms=5)
        for i in range(30):
            p.send(topic, key=f"k{i}".encode(), value=f"value-{i}".encode())
        p.flush()
        p.close()
    c = KafkaConsumer(topic, bootstrap_servers=plain, group_id=topic, auto_offset_reset="earliest",
                      consumer_timeout_ms=5000)
    for n, _ in enumerate(c):
        if n >= 100:
            break
    c.commit()
    c.close()
    for mechanism, user, password in (("PLAIN", "alice", "alice-secret"), ("SCRAM-SHA-256", "carol", "carol-scram")):
        p = KafkaProducer(bootstrap_servers=sasl, security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
                          sasl_plain_username=user, sasl_plain_password=password)
        p.send(topic, b"sasl")
        p.flush()
        p.close()


def aiokafka(plain: str, sasl: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> None:
        topic = "ak-" + uuid.uuid4().hex[:6]
        for codec in (None, "gzip", "lz4"):
            p = AIOKafkaProducer(bootstrap_servers=plain, compression_type=codec, linger_ms=5)
            await p.start()
            for i in range(30):
                await p.send(topic, key=f"k{i}".encode(), value=f"value-{i}".encode())
            await p.stop()
        c = AIOKafkaConsumer(topic, bootstrap_servers=plain, group_id=topic, auto_offset_reset="earliest")
        await c.start()
        got = 0
        deadline = time.monotonic() + 30
        while got < 60 and time.monotonic() < deadline:
            batch = await c.getmany(timeout_ms=500)
            got += sum(len(v) for v in batch.values())
        await c.commit()
        await c.stop()
        p = AIOKafkaProducer(bootstrap_servers=sasl, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                             sasl_plain_username="alice", sasl_plain_password="alice-secret")
        await p.start()
        await p.send_and_wait(topic, b"sasl")
        await p.stop()

    asyncio.run(run())


def java(plain: str, sasl: str) -> None:
    from compat_tests.jvm.kafka_broker import jars_dir

    jars = jars_dir()
    if jars is None:
        print("java: no Kafka jars (compat_tests/jvm/fetch_jars.sh); skipped")
        return
    cmd = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", f"{jars}/*"]
    topic = "jv-" + uuid.uuid4().hex[:6]
    run = lambda *a: subprocess.run([*cmd, *a], capture_output=True, text=True, timeout=120,  # noqa: E731
                                    stdin=subprocess.DEVNULL)
    run("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", plain, "--create", "--topic", topic,
        "--partitions", "2")
    run("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", plain, "--describe", "--topic", topic)
    for codec in ("none", "gzip", "lz4", "zstd", "snappy"):
        run("org.apache.kafka.tools.VerifiableProducer", "--bootstrap-server", plain, "--topic", topic,
            "--max-messages", "40", "--producer.config", "/dev/null", "--command-config", "/dev/null")
        subprocess.run([*cmd, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", "200",
                        "--record-size", "100", "--throughput", "-1", "--producer-props", f"bootstrap.servers={plain}",
                        f"compression.type={codec}"], capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    run("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", plain, "--topic", topic,
        "--from-beginning", "--max-messages", "100", "--group", topic)
    run("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server", plain, "--describe",
        "--group", topic)
    config = Path("/tmp") / f"capture-{topic}.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config="
                      'org.apache.kafka.common.security.scram.ScramLoginModule required username="carol" '
                      'password="carol-scram";\n')
    run("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", sasl, "--command-config", str(config), "--list")
    config.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--java", action="store_true", help="also Kafka's Java tools (slow: JVM starts)")
    parser.add_argument("clients", nargs="*", default=["confluent", "kafka_python", "aiokafka"])
    args = parser.parse_args()
    clients = args.clients + (["java"] if args.java else [])
    recorder = Recorder()
    ports = {name: free_port() for name in ("PLAINTEXT", "SASL_PLAINTEXT")}
    proxies = {name: free_port() for name in ports}
    overrides = {
        "listeners": ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items()),
        "advertised.listeners": ",".join(f"{n}://127.0.0.1:{p}" for n, p in proxies.items()),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "group.initial.rebalance.delay.ms": "0",
        "transaction.state.log.num.partitions": "2",
    }
    with BrokerProcess(port=ports["PLAINTEXT"], overrides=overrides) as broker:
        with RawClient(broker.bootstrap) as c:
            for mechanism, mtype in (("SCRAM-SHA-256", 1), ("SCRAM-SHA-512", 2)):
                upsert = ScramCredentialUpsertion(name="carol", mechanism=mtype, iterations=4096, salt=b"salt",
                                                  salted_password=salted_password(mechanism, "carol-scram", b"salt",
                                                                                  4096))
                c.request(AlterUserScramCredentialsRequest(deletions=[], upsertions=[upsert]), 0)
        for name, port in ports.items():
            start_proxy(proxies[name], port, recorder)
        plain, sasl = (f"127.0.0.1:{proxies[n]}" for n in ("PLAINTEXT", "SASL_PLAINTEXT"))
        for client in clients:
            recorder.client = client.replace("_", "-")
            before = recorder.saved
            try:
                globals()[client](plain, sasl)
            except Exception as exc:  # noqa: BLE001 - keep what was captured from the other clients
                print(f"{client}: failed part-way: {exc!r}")
            print(f"{client}: {recorder.saved - before} frames saved")


if __name__ == "__main__":
    main()
