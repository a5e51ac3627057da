"""Cluster-wide admin APIs against pykbroker and Apache Kafka 4.4: the same requests, the same answers, on one
node and on a cluster (3 pykbroker brokers against a 3-node Kafka 4.4 KRaft cluster, with
PYKBROKER_SLOW_DIFFERENTIAL=1: ``make differential-cluster``).

UpdateFeatures (KIP-584) and ListConfigResources (KIP-1142). A separate module from test_differential.py
because these touch cluster-wide state: every scenario leaves it as it found it, since the Kafka judge is
shared by the whole session, and observes only what it created itself.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from compat_tests.conftest import (
    assert_same_observations,
    differential_params,
    observe_both,
)
from pykbroker.testing import BrokerProcess, RawClient
from wire.messages import (
    ApiVersionsRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    CreateTopicsRequest,
    ListConfigResourcesRequest,
    MetadataRequest,
    UpdateFeaturesRequest,
)
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.update_features_request import FeatureUpdateKey

UPGRADE, SAFE, UNSAFE = 1, 2, 3
# Features pykbroker does not finalize at Kafka 4.4's level (see the api_versions entries of the allowlist).
NOT_AT_KAFKAS_LEVEL: tuple[str, ...] = ()


def finalized(c: RawClient, **expected: int) -> dict[str, int]:
    """Finalized levels, less the features whose levels differ by design (``NOT_AT_KAFKAS_LEVEL``). Not the
    epoch: a KRaft broker's is its metadata offset, which moves all the time.

    On a cluster a change reaches the brokers after UpdateFeatures answers (Kafka's replay the metadata log,
    pykbroker's watch ZooKeeper), so this waits (30 s at most) until every broker's ApiVersions shows the
    ``expected`` levels (feature name with "." as "_"; 0: not finalized) and returns what the broker asked
    shows. A side that never gets there is then observed as it is and fails the comparison."""
    want = {name.replace("_", "."): level for name, level in expected.items()}

    def read(broker: RawClient) -> dict[str, int]:
        r = broker.request(ApiVersionsRequest(client_software_name="diff", client_software_version="1"), 4)
        return {f.name: f.max_version_level for f in r.finalized_features if f.name not in NOT_AT_KAFKAS_LEVEL}

    def settled(levels: dict[str, int]) -> bool:
        return all(levels.get(name, 0) == level for name, level in want.items())

    brokers = c.request(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12).brokers
    deadline = time.monotonic() + 30
    for b in brokers:
        with RawClient(f"{b.host}:{b.port}", timeout=10) as broker:
            while not settled(read(broker)) and time.monotonic() < deadline:
                time.sleep(0.1)
    return read(c)


def update(c: RawClient, version: int, *updates: tuple[str, int, int], validate_only: bool = False,
           allow_downgrade: bool = False) -> tuple:
    keys = [FeatureUpdateKey(feature=name, max_version_level=level, upgrade_type=kind, allow_downgrade=allow_downgrade)
            for name, level, kind in updates]
    r = c.request(UpdateFeaturesRequest(timeout_ms=10_000, feature_updates=keys, validate_only=validate_only), version)
    return r.error_code, r.error_message, sorted((x.feature, x.error_code, x.error_message) for x in r.results)


def update_features(c: RawClient) -> dict[str, object]:
    # Kafka 4.4's levels on a new cluster, which every step leaves or puts back.
    out: dict[str, object] = {"initial": finalized(c, group_version=1, transaction_version=2)}
    out["same level"] = update(c, 1, ("group.version", 1, UPGRADE))
    out["empty"] = update(c, 1)
    out["downgrade typed as upgrade"] = update(c, 1, ("group.version", 0, UPGRADE))
    out["upgrade typed as downgrade"] = update(c, 1, ("transaction.version", 2, SAFE))
    out["safe downgrade, validate only"] = update(c, 1, ("group.version", 0, SAFE), validate_only=True)
    out["after validate only"] = finalized(c, group_version=1)
    out["above the supported range"] = update(c, 1, ("group.version", 2, UPGRADE))
    out["negative"] = update(c, 1, ("group.version", -1, SAFE))
    out["unknown upgrade type"] = update(c, 1, ("group.version", 1, 0))
    out["unknown upgrade type 9"] = update(c, 2, ("group.version", 1, 9))
    out["unknown feature"] = update(c, 1, ("no.such.version", 1, UPGRADE))
    out["unknown feature at 0"] = update(c, 1, ("no.such.version", 0, UPGRADE))
    out["v0 allow_downgrade"] = update(c, 0, ("group.version", 0, UPGRADE), allow_downgrade=True)
    out["several bad"] = update(c, 1, ("transaction.version", 7, UPGRADE), ("group.version", 5, UPGRADE),
                                ("metadata.version", 99, UPGRADE))
    out["one bad spoils all"] = update(c, 1, ("transaction.version", 1, SAFE), ("group.version", 9, UPGRADE))
    out["after one bad"] = finalized(c, group_version=1, transaction_version=2)
    # metadata.version: 33 is 4.4-IV2, which changed the metadata: no downgrade is lossless.
    out["mv unsupported"] = update(c, 1, ("metadata.version", 34, UPGRADE))
    out["mv unknown"] = update(c, 1, ("metadata.version", 6, SAFE))
    out["mv same"] = update(c, 1, ("metadata.version", 33, UPGRADE))
    out["mv lossy downgrade"] = update(c, 1, ("metadata.version", 32, SAFE), validate_only=True)
    out["mv lossy unsafe"] = update(c, 1, ("metadata.version", 14, UNSAFE), validate_only=True)
    out["mv far lossy downgrade"] = update(c, 1, ("metadata.version", 22, SAFE), validate_only=True)
    out["test.feature.version"] = update(c, 1, ("test.feature.version", 1, UPGRADE))
    out["kraft same"] = update(c, 1, ("kraft.version", 0, UPGRADE))
    out["kraft upgrade"] = update(c, 1, ("kraft.version", 1, UPGRADE), validate_only=True)
    # group.version 0 turns the consumer group protocol (KIP-848) off.
    out["group.version 0"] = update(c, 2, ("group.version", 0, SAFE))
    out["finalized without group.version"] = finalized(c, group_version=0)
    hb = c.request(ConsumerGroupHeartbeatRequest(group_id="features-g", member_id="m" * 22, member_epoch=0,
                                                 rebalance_timeout_ms=30_000, subscribed_topic_names=["t"],
                                                 topic_partitions=[]), 1)
    out["heartbeat without group.version"] = hb.error_code
    described = c.request(ConsumerGroupDescribeRequest(group_ids=["features-g"]), 1)
    out["describe without group.version"] = [g.error_code for g in described.groups]
    out["group.version back"] = update(c, 1, ("group.version", 1, UPGRADE))
    # transaction.version down to 1 and back, both in one request with an unchanged feature.
    out["transaction.version 1"] = update(c, 0, ("transaction.version", 1, UPGRADE))
    out["transaction.version 1 safe"] = update(c, 1, ("transaction.version", 1, SAFE), ("group.version", 1, UPGRADE))
    out["finalized with transaction.version 1"] = finalized(c, group_version=1, transaction_version=1)
    out["transaction.version back"] = update(c, 1, ("transaction.version", 2, UPGRADE))
    # share.version 2 (KIP-1191 dead-letter queues) is a new 4.4 cluster's; 3 is past it, 1 a downgrade.
    out["share.version 3"] = update(c, 1, ("share.version", 3, UPGRADE))
    out["share.version 1 typed as upgrade"] = update(c, 1, ("share.version", 1, UPGRADE))
    out["share.version 1 safe, validate only"] = update(c, 1, ("share.version", 1, SAFE), validate_only=True)
    out["final"] = finalized(c, group_version=1, transaction_version=2)
    return out


def list_config_resources(c: RawClient) -> dict[str, object]:
    c.request(CreateTopicsRequest(topics=[CreatableTopic(name=n, num_partitions=1, replication_factor=1)
                                          for n in ("lcr-a", "lcr-b")], timeout_ms=10_000), 7)
    c.wait_for_topics("lcr-a", "lcr-b")  # on a cluster, the broker asked learns of them after CreateTopics answers

    def listed(version: int, *types: int) -> tuple:
        r = c.request(ListConfigResourcesRequest(resource_types=list(types)), version)
        # Topics and groups of this scenario only: the Kafka judge is shared by every differential module, and
        # others leave topics and group configs (GROUP resources, type 32) behind.
        mine = [(x.resource_type, x.resource_name) for x in r.config_resources
                if x.resource_type not in (2, 32) or x.resource_name.startswith("lcr-")]
        return r.error_code, sorted(mine) if 2 in types or not types else mine

    return {"v0": listed(0), "v1 all": listed(1), "v1 topics": listed(1, 2), "v1 broker": listed(1, 4, 8),
            "v1 groups and metrics": listed(1, 16, 32), "v1 unknown type": listed(1, 2, 64), "v1 type 1": listed(1, 1)}


SCENARIOS = {"update_features": update_features, "list_config_resources": list_config_resources}


def _any_controller(value: Any) -> Any:
    """``value`` with "Local controller <id>" in every string made "Local controller N"."""
    if isinstance(value, str):
        return re.sub(r"Local controller \d+", "Local controller N", value)
    if isinstance(value, (list, tuple)):
        return type(value)(_any_controller(v) for v in value)
    if isinstance(value, dict):
        return {k: _any_controller(v) for k, v in value.items()}
    return value


@pytest.fixture(scope="module")
def judged_broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("differential-features")) as b:
        yield b


@pytest.mark.parametrize(("mode", "scenario"), differential_params(list(SCENARIOS), (), tuple(SCENARIOS)))
def test_pykbroker_answers_as_kafka(mode, scenario, request):
    expected, got = observe_both(request, mode, SCENARIOS[scenario], "kafka44_judge", "judged_broker")
    if mode == "cluster":  # which node is the active controller differs from run to run (test_cluster_surface checks it)
        expected, got = _any_controller(expected), _any_controller(got)
    if scenario == "update_features":
        assert expected["final"] == expected["initial"], "the scenario must leave Kafka's features as it found them"
    assert_same_observations(mode, scenario, expected, got)
