"""Client telemetry (KIP-714) judged by Apache Kafka 4.4: what a broker answers without a telemetry plugin.

Kafka answers GetTelemetrySubscriptions and PushTelemetry with or without a ClientTelemetry plugin (ApiVersions
lists them only with one: the kafka44 module compares that) and keeps CLIENT_METRICS subscriptions either way. The
same scenario against the session's Kafka 4.4 and a pykbroker: subscriptions (ids for a fixed instance id, metric
lists in Kafka's order, also of a large subscription whose names collide, intervals, matching), the throttling and
error sequence of gets and pushes, and the subscriptions through IncrementalAlterConfigs, AlterConfigs,
DescribeConfigs and ListConfigResources, with Kafka's errors and messages for bad ones; and many subscriptions
with colliding names, made, deleted and made again one at a time, whose order (Kafka's ConcurrentHashMap's) shows
in a matching client's metrics. Subscriptions are deleted at the end: the judge is shared.

Cluster mode (make differential-cluster): the same scenarios against 3 pykbroker brokers receiving client metrics
and a 3-node Kafka 4.4 with the telemetry plugin on every node; the many subscriptions' client asks every broker;
ApiVersions v0-v5 with a receiver (below) and a real push, through broker 1 of each.
A Kafka broker applies a subscription to its ClientMetricsManager a moment after DescribeConfigs shows it, so a
scenario waits for each change in the manager of every broker it asks (ListConfigResources v0 lists the
manager's subscriptions; an altered one is awaited in a new client's metrics) before judging.

With a receiver (PYKBROKER_TELEMETRY_SLOW=1, make test-telemetry-slow: a Kafka of its own): ApiVersions v0-v5 of
a Kafka 4.4 whose metric.reporters has a telemetry plugin (compat_tests/jvm/telemetry) and of a pykbroker with
metrics.client.telemetry.enable, byte for byte as the kafka44 module compares them, and a real OTLP push
accepted by both.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from compat_tests.conftest import (
    assert_same_observations,
    differential_params,
    kafka_cluster,
    observe_both,
    pykbroker_cluster,
)
from compat_tests.jvm.kafka_broker import KafkaBroker, jars_dir
from compat_tests.test_differential_kafka44 import api_versions_bytes
from pykbroker.testing import BrokerProcess, RawClient, free_port
from wire import ErrorCode, compress
from wire.messages import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    GetTelemetrySubscriptionsRequest,
    IncrementalAlterConfigsRequest,
    ListConfigResourcesRequest,
    MetadataRequest,
    PushTelemetryRequest,
)
from wire.messages import alter_configs_request as legacy
from wire.messages.describe_configs_request import DescribeConfigsResource
from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource

CLIENT_METRICS = 16
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
FIXED = [uuid.UUID(int=(0x5EED << 64) | n) for n in range(1, 8)]
LARGE = uuid.UUID(int=(0x5EED << 64) | 8)
Observations = dict[str, object]


def _get(c: RawClient, instance: uuid.UUID) -> tuple:
    r = c.request(GetTelemetrySubscriptionsRequest(client_instance_id=instance), 0)
    return (r.error_code, r.client_instance_id == instance, r.subscription_id, r.accepted_compression_types,
            r.push_interval_ms, r.telemetry_max_bytes, r.delta_temporality, r.requested_metrics, r.throttle_time_ms)


def _get_after_reconnect(bootstrap: str, instance: uuid.UUID) -> int:
    """A get right after one on a connection that closed since: the instance was forgotten with its connection, so
    it is served afresh. Kafka forgets it when its network thread sees the close: asked until then (10 s)."""
    with RawClient(bootstrap, timeout=30) as first:
        _get(first, instance)
    deadline = time.monotonic() + 10
    while True:
        with RawClient(bootstrap, timeout=30) as again:
            code = _get(again, instance)[0]
        if code == ErrorCode.NONE or time.monotonic() > deadline:
            return code
        time.sleep(0.1)


def _push(c: RawClient, instance: uuid.UUID, subscription: int, metrics: bytes = b"", terminating: bool = False,
          compression: int = 0) -> int:
    return c.request(PushTelemetryRequest(client_instance_id=instance, subscription_id=subscription,
                                          terminating=terminating, compression_type=compression, metrics=metrics),
                     0).error_code


def _otlp() -> bytes:
    """A small OpenTelemetry MetricsData payload, as clients push."""
    from opentelemetry.proto.metrics.v1 import metrics_pb2
    data = metrics_pb2.MetricsData()
    data.resource_metrics.add().scope_metrics.add().metrics.add(name="org.apache.kafka.x").gauge.data_points.add(
        as_double=1.0)
    return data.SerializeToString()


def _alter(c: RawClient, name: str, *ops: tuple[str, int, str | None]) -> tuple:
    r = c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=CLIENT_METRICS, resource_name=name,
        configs=[AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])]), 1)
    return r.responses[0].error_code, r.responses[0].error_message


def _describe(c: RawClient, name: str) -> tuple:
    r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(resource_type=CLIENT_METRICS,
                                                                            resource_name=name)],
                                         include_synonyms=True, include_documentation=True), 4)
    result = r.results[0]
    return (result.error_code, result.error_message, [
        (e.name, e.value, e.read_only, e.config_source, e.is_sensitive, e.config_type, e.documentation,
         [(s.name, s.value, s.source) for s in e.synonyms]) for e in result.configs])


def _applied(c: RawClient, name: str, expected: dict[str, str]) -> None:
    """Wait until this broker describes ``name`` with ``expected`` as its own configs: Kafka answers an alter once
    its controller committed it, and its broker's metadata (and client metrics manager) follow a moment later."""
    deadline = time.monotonic() + 15
    while True:
        own = {e[0]: e[1] for e in _describe(c, name)[2] if e[3] == 7}  # 7: CLIENT_METRICS_CONFIG
        if own == expected or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def _listed(c: RawClient) -> tuple:
    """v0 and v1's lists, once they agree: Kafka answers v0 from its ClientMetricsManager, which applies a change
    a moment after the metadata image v1 reads."""
    deadline = time.monotonic() + 15
    while True:
        v0 = c.request(ListConfigResourcesRequest(), 0)
        v1 = c.request(ListConfigResourcesRequest(resource_types=[CLIENT_METRICS]), 1)
        listed = ((v0.error_code, sorted((x.resource_name, x.resource_type) for x in v0.config_resources)),
                  (v1.error_code, [(x.resource_name, x.resource_type) for x in v1.config_resources]))
        if listed[0][1] == listed[1][1] or time.monotonic() > deadline:
            return listed
        time.sleep(0.05)


def _in_effect(brokers: list[RawClient], name: str, present: bool = True) -> None:
    """Wait until each broker's client metrics manager holds subscription ``name`` (or, ``present`` False, no
    longer does): ListConfigResources v0 is answered from it, and Kafka's broker applies a config record to it a
    moment after DescribeConfigs shows the record."""
    for b in brokers:
        deadline = time.monotonic() + 15
        while True:
            listed = {x.resource_name for x in b.request(ListConfigResourcesRequest(), 0).config_resources}
            if (name in listed) == present or time.monotonic() > deadline:
                break
            time.sleep(0.02)


def _effective(c: RawClient, client_id: str, metrics: set[str]) -> bool:
    """Wait until a client ``client_id`` is given ``metrics`` (a new instance each time, so none is throttled):
    an altered subscription is in effect at the broker ``c`` sends telemetry requests to. Whether it was in 15 s."""
    deadline = time.monotonic() + 15
    with RawClient(c.bootstrap, timeout=30, client_id=client_id) as probe:
        while True:
            given = set(_get(probe, uuid.uuid4())[7]) == metrics
            if given or time.monotonic() > deadline:
                return given
            time.sleep(0.02)


def _brokers(c: RawClient) -> list[str]:
    """Every broker's address, by node id (one on a single node)."""
    meta = c.request(MetadataRequest(topics=[]), 12)
    return [f"{b.host}:{b.port}" for b in sorted(meta.brokers, key=lambda b: b.node_id)]


def telemetry(c: RawClient) -> Observations:
    out: Observations = {}
    first = _get(c, FIXED[0])
    out["get without subscriptions"] = first
    out["get again at once"] = _get(c, FIXED[0])
    out["push with another subscription id"] = _push(c, FIXED[0], first[2] + 1)
    out["get after an unknown subscription id"] = _get(c, FIXED[0])
    out["push"] = _push(c, FIXED[0], first[2], _otlp())  # real metrics: a receiver or plugin takes them
    out["push again at once"] = _push(c, FIXED[0], first[2])
    out["push with unknown compression"] = _push(c, FIXED[1], _get(c, FIXED[1])[2], compression=9)
    out["push from the zero instance id"] = _push(c, uuid.UUID(int=0), 0)
    out["push from instance id 1"] = _push(c, uuid.UUID(int=1), 0)
    sub = _get(c, FIXED[2])[2]
    out["terminating push"] = _push(c, FIXED[2], sub, terminating=True)
    out["push after terminating"] = _push(c, FIXED[2], sub, terminating=True)
    out["push of an instance never seen"] = _push(c, FIXED[3], 12345)
    out["get again after reconnecting"] = _get_after_reconnect(c.bootstrap, uuid.UUID(int=(0x5EED << 64) | 99))

    # subscriptions
    out["create"] = _alter(c, "diff-sub", ("metrics", SET, "org.apache.kafka.producer., org.apache.kafka.consumer."),
                           ("interval.ms", SET, "1000"), ("match", SET, "client_id=telemetry-.*"))
    out["create another"] = _alter(c, "diff-all", ("metrics", SET, "*"), ("interval.ms", SET, "2000"),
                                   ("match", SET, "client_id=telemetry-all"))
    _applied(c, "diff-sub", {"metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.", "interval.ms": "1000",
                             "match": "client_id=telemetry-.*"})
    _applied(c, "diff-all", {"metrics": "*", "interval.ms": "2000", "match": "client_id=telemetry-all"})
    _in_effect([c], "diff-sub")
    _in_effect([c], "diff-all")
    out["append"] = _alter(c, "diff-sub", ("metrics", APPEND, "org.apache.kafka.client.,org.apache.kafka.producer."))
    out["subtract"] = _alter(c, "diff-sub", ("metrics", SUBTRACT, "org.apache.kafka.consumer."))
    for name, op in (("interval too small", ("interval.ms", SET, "50")),
                     ("interval too large", ("interval.ms", SET, "3600001")),
                     ("interval not a number", ("interval.ms", SET, "soon")),
                     ("unknown config", ("color", SET, "blue")),
                     ("bad match attribute", ("match", SET, "client_color=blue")),
                     ("match without value", ("match", SET, "client_id")),
                     ("bad match regex", ("match", SET, "client_id=(")),
                     ("append to an int", ("interval.ms", APPEND, "5")),
                     ("null value", ("metrics", SET, None))):
        out[f"refused: {name}"] = _alter(c, "diff-sub", op)
    out["refused: empty name"] = _alter(c, "", ("metrics", SET, "a."))
    out["described"] = _describe(c, "diff-sub")
    out["described, unknown"] = _describe(c, "diff-none")
    out["described, empty name"] = _describe(c, "")
    out["listed"] = _listed(c)
    # the metrics diff-sub is described with (Kafka 4.4 refuses APPEND and SUBTRACT: its metrics are no LIST), in
    # effect for a matching client (the set awaited before assumed them applied and ran out its 15 s on both)
    metrics = {e[0]: e[1] for e in out["described"][2] if e[3] == 7}.get("metrics") or ""
    out["diff-sub in effect"] = _effective(c, "telemetry-app", {m.strip() for m in metrics.split(",") if m.strip()})
    with RawClient(c.bootstrap, timeout=30, client_id="telemetry-app") as app:
        out["get of a matching client"] = _get(app, FIXED[4])
    with RawClient(c.bootstrap, timeout=30, client_id="telemetry-all") as everything:
        out["get of a client matching two"] = _get(everything, FIXED[5])
    with RawClient(c.bootstrap, timeout=30, client_id="other") as other:
        out["get of a client matching none"] = _get(other, FIXED[6])
    # A large subscription (Java's HashSet resizes) with 64 names of one String.hashCode ("Aa" and "BB" hash alike:
    # its bucket becomes a red-black tree): a client matching it and diff-sub gets Kafka's order and id.
    large = [f"org.apache.kafka.{''.join(p)}." for p in itertools.product(["Aa", "BB"], repeat=6)] + \
        [f"org.apache.kafka.consumer.m{i}." for i in range(300)]
    out["create large"] = _alter(c, "diff-large", ("metrics", SET, ",".join(large)), ("interval.ms", SET, "4000"),
                                 ("match", SET, "client_id=telemetry-large"))
    _applied(c, "diff-large", {"metrics": ",".join(large), "interval.ms": "4000", "match": "client_id=telemetry-large"})
    _in_effect([c], "diff-large")
    with RawClient(c.bootstrap, timeout=30, client_id="telemetry-large") as big:
        out["get of a client matching the large one"] = _get(big, LARGE)
    out["delete the large one"] = _alter(c, "diff-large", ("metrics", DELETE, None), ("interval.ms", DELETE, None),
                                         ("match", DELETE, None))
    r = c.request(AlterConfigsRequest(resources=[legacy.AlterConfigsResource(
        resource_type=CLIENT_METRICS, resource_name="diff-all",
        configs=[legacy.AlterableConfig(name="interval.ms", value="3000")])]), 2)
    out["legacy alter"] = (r.responses[0].error_code, r.responses[0].error_message)
    _applied(c, "diff-all", {"interval.ms": "3000"})
    out["described after legacy alter"] = _describe(c, "diff-all")
    out["delete all of one"] = _alter(c, "diff-sub", ("metrics", DELETE, None), ("interval.ms", DELETE, None),
                                      ("match", DELETE, None))
    out["delete all of the other"] = _alter(c, "diff-all", ("metrics", DELETE, None), ("interval.ms", DELETE, None),
                                            ("match", DELETE, None))
    out["listed after deleting"] = _listed(c)
    return out


# Many subscriptions, names chosen to collide: 24 of one String.hashCode (one bucket of Kafka's ConcurrentHashMap,
# so the table grows to 128 and the bucket becomes a tree) and 16 others, made in a shuffled order; each gives the
# client one metric, all metrics of one hash, so the order of the client's metrics is the order its subscriptions
# were evaluated in. Then 12 deleted (the tree shrinks) and 5 made again (a tree puts them first).
MANY_NAMES = [f"diff-many-{''.join(p)}" for p in itertools.product(["Aa", "BB"], repeat=6)][:24] + \
    [f"diff-many-{i}" for i in range(16)]
MANY_METRICS = [f"org.apache.kafka.m{''.join(p)}." for p in itertools.product(["Aa", "BB"], repeat=7)]
MANY = uuid.UUID(int=(0x5EED << 64) | 9)


def many_subscriptions(c: RawClient) -> Observations:
    names = list(MANY_NAMES)
    rng = random.Random(714)
    rng.shuffle(names)
    metric = dict(zip(names, MANY_METRICS, strict=False))
    deleted = rng.sample(names, 12)
    out: Observations = {"created": [], "deleted": []}
    with contextlib.ExitStack() as stack:
        brokers = [stack.enter_context(RawClient(a, timeout=30)) for a in _brokers(c)]
        apps = [stack.enter_context(RawClient(b.bootstrap, timeout=30, client_id="telemetry-many")) for b in brokers]

        def create(name: str) -> None:
            out["created"].append(_alter(c, name, ("metrics", SET, metric[name]), ("interval.ms", SET, "5000"),
                                         ("match", SET, "client_id=telemetry-many")))
            _in_effect(brokers, name)  # one at a time: each change is its own put into Kafka's map

        def delete(name: str, wait: bool = True) -> None:
            out["deleted"].append(_alter(c, name, ("metrics", DELETE, None), ("interval.ms", DELETE, None),
                                         ("match", DELETE, None)))
            if wait:
                _in_effect(brokers, name, present=False)

        def gets(phase: str) -> None:
            for node, app in enumerate(apps, 1):
                out[f"{phase}: get at broker {node}"] = _get(app, MANY)

        for name in names:
            create(name)
        gets("all made")
        for name in deleted:
            delete(name)
        gets("12 deleted")
        for name in deleted[:5]:
            create(name)
        gets("5 made again")
        for name in names:
            if name not in deleted[5:]:
                delete(name, wait=False)  # the judge is shared: clean up
        out["listed after deleting"] = _listed(c)
    return out


SCENARIOS = {"telemetry": telemetry, "many_subscriptions": many_subscriptions}


@pytest.fixture(scope="module")
def telemetry_broker(tmp_path_factory):
    """A pykbroker with Kafka's defaults (no telemetry receiver), fresh for this module."""
    from pykbroker.testing import BrokerProcess
    with BrokerProcess(tmp_path_factory.mktemp("differential-telemetry")) as b:
        yield b


@pytest.mark.parametrize(("mode", "scenario"), differential_params(
    list(SCENARIOS), cluster_short=(), cluster_all=tuple(SCENARIOS)))
def test_telemetry_answers_as_kafka_44(request, mode, scenario):
    expected, got = observe_both(request, mode, SCENARIOS[scenario], "kafka44_judge", "telemetry_broker",
                                 cluster_judge="kafka44_telemetry_cluster", cluster_judged="telemetry_cluster")
    if scenario == "telemetry":
        assert expected["get without subscriptions"][0] == ErrorCode.NONE  # the judge really served it
        assert expected["diff-sub in effect"], "Kafka never gave a matching client diff-sub's metrics: the wait is wrong"
    else:
        assert len(expected["all made: get at broker 1"][7]) == len(MANY_NAMES)
    assert_same_observations(mode, scenario, expected, got)


PLUGIN = Path(__file__).resolve().parent / "jvm" / "telemetry" / "NoopTelemetryExporter.java"
RECEIVER = {"metric.reporters": "NoopTelemetryExporter"}
slow = pytest.mark.skipif(os.environ.get("PYKBROKER_TELEMETRY_SLOW") != "1",
                          reason="a Kafka of its own: make test-telemetry-slow (PYKBROKER_TELEMETRY_SLOW=1)")


def _plugin_classes(tmp_path_factory) -> tuple[Path, Path]:
    """(Kafka 4.4's jars, the compiled telemetry plugin's classes)."""
    if shutil.which("javac") is None:
        pytest.skip("javac is not installed: the telemetry plugin cannot be compiled")
    jars = jars_dir()
    assert jars is not None, "compat_tests/jvm/fetch_jars.sh could not fetch Kafka's jars (is Maven installed?)"
    classes = tmp_path_factory.mktemp("telemetry-plugin")
    subprocess.run(["javac", "-cp", f"{jars}/*", "-d", str(classes), str(PLUGIN)], check=True, timeout=120)
    return jars, classes


@pytest.fixture(scope="module")
def kafka_with_receiver(tmp_path_factory):
    """Kafka 4.4 with a client telemetry plugin in metric.reporters."""
    jars, classes = _plugin_classes(tmp_path_factory)
    with KafkaBroker(jars, overrides=RECEIVER, classpath=(classes,)) as kafka:
        yield kafka


@pytest.fixture(scope="module")
def kafka44_telemetry_cluster(tmp_path_factory):
    """A 3-node Kafka 4.4 KRaft cluster with the telemetry plugin on every node: the cluster mode's judge."""
    jars, classes = _plugin_classes(tmp_path_factory)
    yield from kafka_cluster(jars, tmp_path_factory.mktemp("kafka44-telemetry-cluster"), RECEIVER, classpath=(classes,))


@pytest.fixture(scope="module")
def telemetry_cluster(tmp_path_factory):
    """3 pykbroker brokers receiving client metrics, as the judge's nodes do."""
    yield from pykbroker_cluster(tmp_path_factory.mktemp("telemetry-cluster"), {
        "metrics.port": "0", "metrics.client.telemetry.enable": "true"})


@pytest.fixture(scope="module")
def pykbroker_with_receiver(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("telemetry-receiver"), overrides={
            "metrics.port": str(free_port()), "metrics.client.telemetry.enable": "true"}) as b:
        b.start()
        yield b


def with_receiver(c: RawClient) -> Observations:
    out = api_versions_bytes(c)
    sub = _get(c, FIXED[0])
    out["push of a real payload"] = _push(c, FIXED[0], sub[2], compress(4, _otlp()), compression=4)
    return out


@pytest.mark.parametrize("mode", [pytest.param("single", marks=slow, id="single"), *(
    pytest.param("cluster", marks=p.marks, id=p.id) for p in differential_params([], (), ("with_receiver",)))])
def test_with_a_receiver_api_versions_and_pushes_are_kafka_44s(request, mode):
    """On one node (make test-telemetry-slow) and, as a broker of a cluster answers them, through broker 1 of the
    clusters whose nodes all have a receiver (make differential-cluster)."""
    expected, got = observe_both(request, mode, with_receiver, "kafka_with_receiver", "pykbroker_with_receiver",
                                 cluster_judge="kafka44_telemetry_cluster", cluster_judged="telemetry_cluster")
    assert "4800" in expected["v3"] and "4800" in got["v3"]  # key 72 (0x48), v0-0: both advertise telemetry
    # judged as the kafka44 module's ApiVersions scenario (its allow-list: the features' order)
    assert_same_observations(mode, "api_versions_bytes", expected, got)
