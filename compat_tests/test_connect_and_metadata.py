"""Every stock client connects, negotiates versions and reads cluster metadata."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import subprocess

import pytest


def test_kafka_python_admin(broker):
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="compat-kafka-python")
    try:
        cluster = admin.describe_cluster()
        assert cluster["controller_id"] == 1
        assert [(b["broker_id"], b["port"]) for b in cluster["brokers"]] == [(1, broker.port)]
        assert isinstance(admin.list_topics(), list)
        # kafka-python infers the broker version from our advertised ranges
        assert admin._client.check_version() >= (1, 0)
    finally:
        admin.close()


def test_kafka_python_consumer_metadata(broker):
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, client_id="compat-kafka-python-consumer")
    try:
        assert isinstance(consumer.topics(), set)
    finally:
        consumer.close()


def test_confluent_kafka_list_topics_and_describe_cluster(broker):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "client.id": "compat-librdkafka"})
    md = admin.list_topics(timeout=10)
    assert md.cluster_id
    assert md.controller_id == 1
    assert {b.id: (b.host, b.port) for b in md.brokers.values()} == {1: ("127.0.0.1", broker.port)}
    cluster = admin.describe_cluster(request_timeout=10).result(timeout=10)
    assert cluster.cluster_id == md.cluster_id
    assert [n.id for n in cluster.nodes] == [1]
    assert cluster.controller.id == 1


def test_confluent_kafka_api_version_negotiation(broker):
    """librdkafka asks ApiVersions v3 (or v4) first and must not fall back to v0."""
    from confluent_kafka import Producer

    logs: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logs.append(record.getMessage())

    logger = logging.getLogger("compat.librdkafka")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(Capture())
    p = Producer({"bootstrap.servers": broker.bootstrap, "debug": "protocol,broker", "logger": logger})
    md = p.list_topics(timeout=10)
    assert md.brokers
    p.poll(0)
    text = "\n".join(logs)
    assert "ApiVersionRequest failed" not in text
    assert "Received ApiVersionResponse (v3" in text or "Received ApiVersionResponse (v4" in text, text[-3000:]
    assert "Received MetadataResponse (v13" in text


def test_aiokafka_bootstrap_and_metadata(broker):
    from aiokafka import AIOKafkaClient

    async def main():
        client = AIOKafkaClient(bootstrap_servers=broker.bootstrap, client_id="compat-aiokafka")
        await client.bootstrap()
        try:
            brokers = client.cluster.brokers()
            assert [(b.nodeId, b.port) for b in brokers] == [(1, broker.port)]
            md = await client.fetch_all_metadata()
            assert md.controller is not None or md.controller is None  # controller id is optional pre-v1
            return sorted(b.nodeId for b in md.brokers())
        finally:
            await client.close()

    assert asyncio.run(main()) == [1]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by `make test` (tools/install_system_deps.sh)")
def test_kcat_metadata_json(broker):
    out = subprocess.run(["kcat", "-b", broker.bootstrap, "-L", "-J"], capture_output=True, text=True,
                         timeout=30, check=True).stdout
    md = json.loads(out)
    assert md["controllerid"] == 1
    assert [(b["id"], b["name"]) for b in md["brokers"]] == [(1, f"127.0.0.1:{broker.port}")]
