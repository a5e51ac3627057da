"""Fixtures shared by the client tests: Apache Kafka itself, as the judge of correct behaviour."""

from __future__ import annotations

import shutil

import pytest

from compat_tests.jvm.kafka_broker import SHARE_GROUPS_JUDGE, KafkaBroker, jars_dir


@pytest.fixture(scope="session")
def kafka_judge():
    """A real Apache Kafka 4.1 (one per test session); skipped only on a machine without java."""
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
