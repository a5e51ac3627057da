"""Fixtures shared by the client tests: Apache Kafka itself, as the judge of correct behaviour."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from compat_tests.jvm.kafka_broker import SHARE_GROUPS_JUDGE, KafkaBroker, jars_dir

# The judge of the features table and of every scenario that runs on a cluster too (replication.metadata.features).
KAFKA_44 = "4.4.0"


def _pom_kafka_version() -> str:
    pom = (Path(__file__).parent / "jvm" / "pom.xml").read_text()
    found = re.search(r"<kafka.version>(.*?)</kafka.version>", pom)
    return found.group(1) if found else ""


@pytest.fixture(scope="session")
def kafka_judge():
    """A real Apache Kafka 4.4 (one per test session); skipped only on a machine without java."""
    if shutil.which("java") is None:
        pytest.skip("java is not installed: the differential tests need Apache Kafka from the Maven jars")
    jars = jars_dir()
    assert jars is not None, "compat_tests/jvm/fetch_jars.sh could not fetch Kafka's jars (is Maven installed?)"
    kafka = KafkaBroker(jars)
    took = kafka.start()
    print(f"Apache Kafka started in {took:.1f} s")
    try:
        yield kafka
    finally:
        kafka.close()


@pytest.fixture(scope="session")
def kafka_share_judge():
    """A real Apache Kafka 4.2, where share groups are released (and on by default): their judge."""
    if shutil.which("java") is None:
        pytest.skip("java is not installed: the share-group differential tests need Apache Kafka 4.2")
    jars = jars_dir(SHARE_GROUPS_JUDGE)
    assert jars is not None, f"compat_tests/jvm/fetch_jars.sh {SHARE_GROUPS_JUDGE} could not fetch Kafka's jars"
    kafka = KafkaBroker(jars)
    took = kafka.start()
    print(f"Apache Kafka {SHARE_GROUPS_JUDGE} started in {took:.1f} s")
    try:
        yield kafka
    finally:
        kafka.close()


@pytest.fixture(scope="session")
def kafka44_judge(request):
    """A real Apache Kafka 4.4 node: ``kafka_judge`` itself when the pom's judge is 4.4, else one of its own."""
    if _pom_kafka_version() == KAFKA_44:
        yield request.getfixturevalue("kafka_judge")
        return
    if shutil.which("java") is None:
        pytest.skip("java is not installed: the differential tests need Apache Kafka from the Maven jars")
    jars = jars_dir(KAFKA_44)
    assert jars is not None, f"compat_tests/jvm/fetch_jars.sh {KAFKA_44} could not fetch Kafka's jars"
    kafka = KafkaBroker(jars)
    took = kafka.start()
    print(f"Apache Kafka {KAFKA_44} started in {took:.1f} s")
    try:
        yield kafka
    finally:
        kafka.close()
