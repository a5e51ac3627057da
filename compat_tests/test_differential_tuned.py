"""Differential scenarios that need brokers configured away from Kafka's defaults (the same on both sides).

Like test_differential.py, each scenario returns what a client observes, run against Apache Kafka and
against pykbroker, and every difference not in ``differential_allowlist.ALLOWED`` fails; on one node, and
with PYKBROKER_SLOW_DIFFERENTIAL=1 (``make differential-cluster``) on 3 pykbroker brokers against a 3-node
Kafka 4.4 KRaft cluster, both tuned alike. Both brokers run
with the settings of ``TUNED``: retention checked every 500 ms from the start, the first rebalance of a
group not delayed — what a user sets to see these behaviours within seconds — and group configs' broker
defaults set in the properties (their described sources).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from compat_tests.conftest import (
    KAFKA_44,
    assert_same_observations,
    differential_params,
    judge_jars,
    kafka_cluster,
    observe_both,
    pykbroker_cluster,
)
from compat_tests.test_differential import Observations, batch, create, produce, topic
from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode
from wire.messages import DeleteRecordsRequest, DescribeConfigsRequest, FetchRequest, ListOffsetsRequest
from wire.messages.create_topics_request import CreatableTopicConfig
from wire.messages.delete_records_request import DeleteRecordsPartition, DeleteRecordsTopic
from wire.messages.describe_configs_request import DescribeConfigsResource
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic

TUNED = {"log.retention.check.interval.ms": "500", "log.initial.task.delay.ms": "0",
         "group.initial.rebalance.delay.ms": "0",
         # broker defaults of group configs (group_config_sources), one of each protocol's
         "group.share.record.lock.duration.ms": "20000", "group.share.delivery.count.limit": "4",
         "group.consumer.heartbeat.interval.ms": "6000", "group.streams.num.standby.replicas": "1"}


def configs(**kv: str) -> list[CreatableTopicConfig]:
    return [CreatableTopicConfig(name=k.replace("_", "."), value=v) for k, v in kv.items()]


def offsets(c: RawClient, name: str) -> tuple[int, int]:
    """(earliest, latest) offsets of partition 0."""
    out = []
    for ts in (-2, -1):
        r = c.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(
            name=name, partitions=[ListOffsetsPartition(partition_index=0, timestamp=ts)])]), 7)
        out.append(r.topics[0].partitions[0].offset)
    return out[0], out[1]


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


# -- scenarios ---------------------------------------------------------------------------------------------
def retention(c: RawClient) -> Observations:
    """A quiet topic's data expires: the active segment counts (UnifiedLog.deleteOldSegments rolls first)."""
    hour = str(3_600_000)
    topics = {
        "rt-ms": configs(retention_ms="1500"),
        "rt-bytes-zero": configs(retention_bytes="0"),
        "rt-bytes-large": configs(retention_bytes="1000000"),
        "rt-compact": configs(cleanup_policy="compact", retention_ms="1500"),
        "rt-compact-delete": configs(cleanup_policy="compact,delete", retention_ms="1500"),
        "rt-deleted-records": configs(retention_ms=hour),
        "rt-all-deleted-records": configs(retention_ms=hour),
    }
    create(c, *(topic(name, configs=cfg) for name, cfg in topics.items()))
    c.wait_for_topics(*topics)
    out: Observations = {}
    for name in topics:
        for _ in range(5):  # 5 batches of 100 records, produced once, then nothing
            produce(c, name, batch(100))
    for name, offset in (("rt-deleted-records", 250), ("rt-all-deleted-records", 500)):
        r = c.request(DeleteRecordsRequest(topics=[DeleteRecordsTopic(name=name, partitions=[
            DeleteRecordsPartition(partition_index=0, offset=offset)])], timeout_ms=5000), 2)
        out[f"{name} delete records"] = r.topics[0].partitions[0].error_code
    for name in ("rt-ms", "rt-bytes-zero", "rt-compact-delete"):
        out[f"{name} expired"] = wait_until(lambda n=name: offsets(c, n)[0] == 500, 20)
    time.sleep(1.5)  # three more retention checks for the topics that keep their data
    for name in topics:
        out[f"{name} offsets"] = offsets(c, name)
    # After expiry the log goes on from where it was: fetching old offsets is out of range, new ones append.
    request = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[FetchTopic(topic="rt-ms", partitions=[
        FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
    p = c.request(request, 12).responses[0].partitions[0]
    out["rt-ms fetch 0"] = (p.error_code, p.high_watermark, p.log_start_offset)
    out["rt-ms produce after expiry"] = produce(c, "rt-ms", batch(1))
    out["rt-ms offsets after produce"] = offsets(c, "rt-ms")
    assert out["rt-ms fetch 0"][0] in (ErrorCode.OFFSET_OUT_OF_RANGE, ErrorCode.NONE)
    return out


def broker_config_definitions(c: RawClient) -> Observations:
    """Every broker property described (names, types, read-only, sensitive): Kafka's whole list is served."""
    r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
        resource_type=4, resource_name="1", configuration_keys=None)], include_synonyms=False), 4).results[0]
    out: Observations = {"error": r.error_code}
    out.update({e.name: (e.read_only, e.is_sensitive, e.config_type) for e in r.configs})
    return out


def group_config_sources(c: RawClient) -> Observations:
    """A group's configs when the broker's properties set their group.* defaults (TUNED): each described with the
    broker's value and source (STATIC_BROKER_CONFIG) and its synonyms (the property as set, then its default), for a
    group without configs and after the group sets one of them (GROUP_CONFIG first). Kafka 4.4 does not take these
    properties dynamically: refused as a cluster default."""
    from wire.messages import IncrementalAlterConfigsRequest
    from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource

    def alter(resource_type: int, name: str, config: str, value: str):
        r = c.request(IncrementalAlterConfigsRequest(validate_only=False, resources=[AlterConfigsResource(
            resource_type=resource_type, resource_name=name, configs=[AlterableConfig(
                name=config, config_operation=0, value=value)])]), 1)
        return r.responses[0].error_code, r.responses[0].error_message

    def describe(until: Callable[[list], bool] = lambda got: True):
        deadline = time.monotonic() + 10
        while True:
            r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
                resource_type=32, resource_name="gcs-group", configuration_keys=None)], include_synonyms=True), 4)
            got = sorted((e.name, e.value, e.config_source, [(s.name, s.value, s.source) for s in e.synonyms])
                         for e in r.results[0].configs)
            if until(got) or time.monotonic() > deadline:
                return got
            time.sleep(0.1)
    out: Observations = {"described": describe()}
    out["set as a cluster default"] = alter(4, "", "group.share.record.lock.duration.ms", "25000")
    out["set by the group"] = alter(32, "gcs-group", "share.record.lock.duration.ms", "25000")
    out["described with the group's"] = describe(lambda got: any(e[2] == 8 for e in got))
    return out


SCENARIOS: dict[str, Callable[[RawClient], Observations]] = {
    "retention": retention, "broker_config_definitions": broker_config_definitions,
    "group_config_sources": group_config_sources,
}


@pytest.fixture(scope="module")
def tuned_kafka():
    """Apache Kafka with ``TUNED`` (its own process: the session's judge keeps Kafka's defaults)."""
    import shutil

    from compat_tests.jvm.kafka_broker import KafkaBroker, jars_dir
    if shutil.which("java") is None:
        pytest.skip("java is not installed: the differential tests need Apache Kafka from the Maven jars")
    jars = jars_dir()
    assert jars is not None, "compat_tests/jvm/fetch_jars.sh could not fetch Kafka's jars (is Maven installed?)"
    with KafkaBroker(jars, overrides=TUNED) as kafka:
        yield kafka


@pytest.fixture(scope="module")
def tuned_broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("tuned"), overrides=TUNED) as b:
        yield b


@pytest.fixture(scope="module")
def tuned_kafka_cluster(tmp_path_factory):
    """A 3-node Apache Kafka 4.4 KRaft cluster with ``TUNED``: the cluster mode's judge."""
    yield from kafka_cluster(judge_jars(KAFKA_44), tmp_path_factory.mktemp("tuned-kafka-cluster"), TUNED)


@pytest.fixture(scope="module")
def tuned_cluster(tmp_path_factory):
    yield from pykbroker_cluster(tmp_path_factory.mktemp("tuned-cluster"), TUNED)


@pytest.mark.parametrize(("mode", "scenario"), differential_params(list(SCENARIOS), (), tuple(SCENARIOS),
                                                                 single_slow=("retention",)))
def test_pykbroker_observes_what_kafka_observes(mode, scenario, request):
    expected, got = observe_both(request, mode, SCENARIOS[scenario], "tuned_kafka", "tuned_broker",
                                 cluster_judge="tuned_kafka_cluster", cluster_judged="tuned_cluster")
    assert_same_observations(mode, scenario, expected, got)
