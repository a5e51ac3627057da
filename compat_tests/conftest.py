"""Fixtures shared by the client tests: Apache Kafka itself, as the judge of correct behaviour."""

from __future__ import annotations

import contextlib
import os
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


def judge_jars(version: str):
    """Kafka ``version``'s jars (fetched once); the test is skipped on a machine without java."""
    if shutil.which("java") is None:
        pytest.skip(f"java is not installed: these tests need Apache Kafka {version} from the Maven jars")
    jars = jars_dir(version)
    assert jars is not None, f"compat_tests/jvm/fetch_jars.sh {version} could not fetch Kafka's jars"
    return jars


def _one_node_judge(version: str):
    """A started single Kafka ``version`` node for a session fixture to yield (closed after)."""
    kafka = KafkaBroker(judge_jars(version))
    took = kafka.start()
    print(f"Apache Kafka {version} started in {took:.1f} s")
    try:
        yield kafka
    finally:
        kafka.close()


@pytest.fixture(scope="session")
def kafka_share_judge():
    """A real Apache Kafka 4.2, where share groups are released (and on by default): their judge."""
    yield from _one_node_judge(SHARE_GROUPS_JUDGE)


@pytest.fixture(scope="session")
def kafka44_judge(request):
    """A real Apache Kafka 4.4 node: ``kafka_judge`` itself when the pom's judge is 4.4, else one of its own."""
    if _pom_kafka_version() == KAFKA_44:
        yield request.getfixturevalue("kafka_judge")
        return
    yield from _one_node_judge(KAFKA_44)


def kafka_cluster(jars, root, overrides: dict[str, str] | None = None, **options):
    """A started 3-node Kafka KRaft cluster of ``jars`` for a fixture to yield (killed after); ``options``:
    KafkaCluster's (``node_overrides``, ``jvm_args``, ``classpath`` of plugins, ``heap``...). ``started_kafka_cluster`` is its ``with`` form."""
    from compat_tests.jvm.kafka_broker import KafkaCluster
    cluster = KafkaCluster(jars, root, overrides=overrides, **options)
    took = cluster.start()
    print(f"Apache Kafka cluster of 3 ({jars.name}) started in {took:.1f} s")
    try:
        yield cluster
    finally:
        for node in cluster.nodes:  # a judge keeps nothing: no minute of controlled shutdowns losing their quorum
            node.kill()
        cluster.close()


started_kafka_cluster = contextlib.contextmanager(kafka_cluster)

# The mark of a differential's cluster mode outside differential_params (make differential-cluster).
CLUSTER_MODE = pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_DIFFERENTIAL") != "1",
                                  reason="3-node clusters: make differential-cluster (PYKBROKER_SLOW_DIFFERENTIAL=1)")


@pytest.fixture(scope="session")
def kafka44_cluster_judge(tmp_path_factory):
    """A real 3-node Apache Kafka 4.4 KRaft cluster: the judge of the differential scenarios' cluster mode."""
    yield from kafka_cluster(judge_jars(KAFKA_44), tmp_path_factory.mktemp("kafka44-cluster"))


@pytest.fixture(scope="session")
def judged_cluster(tmp_path_factory):
    """A 3-broker pykbroker cluster with Kafka's defaults: what the cluster mode of the differential judges."""
    yield from pykbroker_cluster(tmp_path_factory.mktemp("judged-cluster"))


def pykbroker_cluster(root, overrides: dict[str, str] | None = None):
    """A started 3-broker pykbroker cluster with ``overrides`` for a fixture to yield (stopped after)."""
    from pykbroker.testing import ClusterProcesses
    if shutil.which("java") is None:
        pytest.skip("java is not installed: ZooKeeper runs on it")
    with ClusterProcesses(root, size=3, overrides=overrides) as cluster:
        yield cluster


def differential_targets(request, mode: str, single_judge: str, single_judged: str,
                         cluster_judge: str = "kafka44_cluster_judge",
                         cluster_judged: str = "judged_cluster") -> tuple[str, str]:
    """(Kafka's bootstrap, pykbroker's bootstrap) of a differential scenario in ``mode``: "single" (one node
    each, the given fixtures) or "cluster" (a 3-node Kafka KRaft cluster against 3 pykbroker brokers, the given
    fixtures: by default Kafka 4.4 and brokers with Kafka's defaults; both asked through their broker 1)."""
    if mode == "cluster":
        return (request.getfixturevalue(cluster_judge).node(1).bootstrap,
                request.getfixturevalue(cluster_judged).broker(1).bootstrap)
    return request.getfixturevalue(single_judge).bootstrap, request.getfixturevalue(single_judged).bootstrap


def observe_both(request, mode: str, scenario, single_judge: str, single_judged: str, **cluster: str) -> tuple[dict, dict]:
    """(Kafka's observations, pykbroker's) of one scenario function run on each target of ``mode``
    (``cluster``: the cluster fixtures' names, see ``differential_targets``)."""
    kafka, pykbroker = differential_targets(request, mode, single_judge, single_judged, **cluster)
    with differential_client(mode, kafka) as c:
        expected = scenario(c)
    with differential_client(mode, pykbroker) as c:
        got = scenario(c)
    return expected, got


def assert_same_observations(mode: str, scenario: str, expected: dict, got: dict) -> None:
    """Fail on every observation that differs between Kafka and pykbroker and is not in the allow-list."""
    from compat_tests.differential_allowlist import allowed
    differences = {key: (expected.get(key), got.get(key)) for key in sorted(set(expected) | set(got))
                   if expected.get(key) != got.get(key) and not allowed(mode, scenario, key)}
    assert not differences, "\n".join(f"{mode} {scenario} / {k}:\n  kafka={e!r}\n  pykbroker={g!r}"
                                      for k, (e, g) in differences.items())


def differential_client(mode: str, bootstrap: str):
    """The scenario client of ``mode``: on a cluster, one that routes each request as a Kafka client does
    (compat_tests/routing_client.py); on one node, the plain RawClient."""
    from compat_tests.routing_client import RoutingClient
    from pykbroker.testing import RawClient
    return RoutingClient(bootstrap, timeout=30) if mode == "cluster" else RawClient(bootstrap, timeout=30)


def differential_params(scenarios: list[str], cluster_short: tuple[str, ...], cluster_all: tuple[str, ...],
                        single_slow: tuple[str, ...] = ()) -> list:
    """``(mode, scenario)`` parameters: every scenario on one node (but ``single_slow``, scenarios of a minute or
    more, with PYKBROKER_SLOW_DIFFERENTIAL=1 only); on a cluster, ``cluster_short`` in ``make test`` and the rest
    of ``cluster_all`` with PYKBROKER_SLOW_DIFFERENTIAL=1 (``make differential-cluster``). A cluster scenario
    costs ``make test`` a 3-node Kafka start (about 45 s on this machine's load)."""
    import os
    slow = pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_DIFFERENTIAL") != "1",
                              reason="slow scenario: make differential-cluster (PYKBROKER_SLOW_DIFFERENTIAL=1)")
    params = [pytest.param("single", s, id=s, marks=slow if s in single_slow else ()) for s in scenarios]
    params += [pytest.param("cluster", s, id=f"cluster-{s}", marks=() if s in cluster_short else slow)
               for s in cluster_all]
    return params
