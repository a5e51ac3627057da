"""Spring for Apache Kafka 4.1 (with the Java clients 4.4) as a real application on pykbroker, judged by Apache
Kafka 4.4 running the same application.

The application (compat_tests/jvm/spring/SpringKafkaApp.java, plain Spring: spring-context + spring-kafka) does
what Spring Kafka users rely on: KafkaAdmin creating NewTopic beans and raising partitions and changing configs of
one, KafkaTemplate sends (sync, async with headers, to partitions and keys), executeInTransaction and
@Transactional producer transactions (committed and rolled back) and a consumer-initiated read-process-write
transaction, @KafkaListener containers (concurrency 3 in a group, a batch listener, MANUAL_IMMEDIATE acks across a
container stop and restart, seekToTimestamp through ConsumerSeekAware, pause/resume), DefaultErrorHandler with a
DeadLetterPublishingRecoverer, @RetryableTopic with its retry and DLT topics, a poison record through
ErrorHandlingDeserializer, ReplyingKafkaTemplate request/reply, and on 3 brokers a kill -9 of the broker
coordinating a read-process-write listener's group while records flow (every output committed exactly once). What it observes (records per listener with partitions and
offsets, DLT records and their Spring headers but stack traces and timestamps, the topics and their configs,
committed offsets, replies, the exceptions logged at ERROR) must be the same on pykbroker as on Kafka 4.4, with
group.protocol=classic and with group.protocol=consumer (KIP-848).

Everything here is slow (a minute or more a run): ``PYKBROKER_SPRING_SLOW=1`` (``make test-spring-slow``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from compat_tests.spring_app import run_app, spring_classpath
from compat_tests.test_kafka_streams import group_coordinator, three_brokers
from pykbroker.testing import BrokerProcess

SLOW = os.environ.get("PYKBROKER_SPRING_SLOW") == "1"
pytestmark = pytest.mark.skipif(not SLOW, reason="set PYKBROKER_SPRING_SLOW=1 (make test-spring-slow)")
PROTOCOLS = ["classic", "consumer"]
# Keys of the report that may differ for a reason of timing, not of the broker: printed, not compared.
TIMING = {
    "admin.describeTopics.immediately":
        "a topic described right after KafkaAdmin raised its partitions: Kafka 4.4 answers from the broker's metadata"
        " image, which catches up with the controller's CreatePartitions a moment later (seen with 2 partitions"
        " still, then 4); pykbroker answers from the committed metadata at once. Compared once settled",
    "retried": "requests the client retried: a Produce answered CONCURRENT_TRANSACTIONS while the markers of the"
               " producer's previous transaction were being written (seen on both, or neither, run by run)",
}


@pytest.fixture(scope="module")
def classpath(tmp_path_factory) -> str:
    found = spring_classpath(tmp_path_factory.mktemp("spring-build"))
    if found is None:
        pytest.skip("java, javac or Maven is missing: the Spring application cannot run")
    return found


# On 3 brokers through a kill -9, the warnings logged (retries of requests the dead broker or a pending transaction
# answered) depend on when leaders moved and markers were written: printed, not compared.
CLUSTER_TIMING = {**TIMING, "warnings": "what the clients logged through a kill -9 depends on when leaders moved (a"
                                        " Produce answered NOT_LEADER_OR_FOLLOWER, a bootstrap broker disconnected)"}


def assert_same(expected: dict, got: dict, timing: dict[str, str] = TIMING) -> None:
    for key, reason in timing.items():
        if expected.get(key) != got.get(key):
            print(f"{key} differs ({reason}):\n  kafka={expected.get(key)!r}\n  pykbroker={got.get(key)!r}")
        expected.pop(key, None)
        got.pop(key, None)
    differences = {k: (expected.get(k), got.get(k)) for k in sorted(set(expected) | set(got))
                   if expected.get(k) != got.get(k)}
    assert not differences, "\n".join(f"{k}:\n  kafka={e!r}\n  pykbroker={g!r}" for k, (e, g) in differences.items())


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_spring_application_on_one_node(classpath, tmp_path, kafka44_judge, protocol):
    expected = run_app(classpath, kafka44_judge.bootstrap, tmp_path / "kafka", protocol=protocol)
    with BrokerProcess(tmp_path / "broker") as broker:
        got = run_app(classpath, broker.bootstrap, tmp_path / "pykbroker", protocol=protocol)
    assert not [k for k in expected if k.endswith(".failed")], expected
    assert_same(expected, got)


def run_on_three(classpath: str, root: Path, broker: str, protocol: str) -> dict:
    """The application on three ``broker`` ("pykbroker" or "kafka") with three replicas of every topic, two in sync
    (the Streams suite's clusters), the coordinator of its failover listener's group killed with -9 mid-run."""
    with three_brokers(root, broker) as (bootstrap, kill):
        def kill_the_coordinator() -> None:
            # the prefix is the application's: find the failover group by asking for its coordinator by name
            node = group_coordinator(bootstrap, failover_group(root / f"{broker}-app"))
            print(f"{broker}: killing broker {node}, the coordinator of the failover listener's group")
            kill(node)
        return run_app(classpath, bootstrap, root / f"{broker}-app", protocol=protocol, replication=3,
                       kill=kill_the_coordinator)


def failover_group(root: Path) -> str:
    """The failover listener's group of the application running under ``root`` (its prefix is in its log)."""
    for line in (root / "app.log").read_text().splitlines():
        if line.startswith("PREFIX "):
            return line.split()[1] + "failover-group"
    raise AssertionError(f"no PREFIX line in {root / 'app.log'}")


@pytest.mark.timeout(2400)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_spring_application_on_three_brokers_through_a_kill(classpath, tmp_path, protocol):
    expected = run_on_three(classpath, tmp_path, "kafka", protocol)
    got = run_on_three(classpath, tmp_path, "pykbroker", protocol)
    assert not [k for k in expected if k.endswith(".failed")], expected
    assert expected.get("failover.distinct") == 300, expected
    assert expected.get("failover.outputCommitted") == expected.get("failover.outputDistinct") == 300, expected
    assert_same(expected, got, CLUSTER_TIMING)
