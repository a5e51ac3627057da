"""UpdateFeatures over a socket: levels change, survive kill -9, and turn the protocols they gate on and off."""

from __future__ import annotations

from pykbroker.testing import RawClient
from wire import ErrorCode
from wire.messages import (
    ApiVersionsRequest,
    ConsumerGroupHeartbeatRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    UpdateFeaturesRequest,
)
from wire.messages.describe_configs_request import DescribeConfigsResource
from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource
from wire.messages.update_features_request import FeatureUpdateKey


def features(c: RawClient) -> tuple[int, dict[str, int]]:
    r = c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4)
    return r.finalized_features_epoch, {f.name: f.max_version_level for f in r.finalized_features}


def update(c: RawClient, name: str, level: int, upgrade_type: int, version: int = 1, validate_only: bool = False):
    return c.request(UpdateFeaturesRequest(feature_updates=[FeatureUpdateKey(
        feature=name, max_version_level=level, upgrade_type=upgrade_type)], validate_only=validate_only), version)


def heartbeat(c: RawClient) -> int:
    return c.request(ConsumerGroupHeartbeatRequest(group_id="uf-g", member_id="m" * 22, member_epoch=0,
                                                   rebalance_timeout_ms=30_000, subscribed_topic_names=["uf"],
                                                   topic_partitions=[]), 1).error_code


def test_group_version_downgrade_turns_kip_848_off_and_survives_kill_9(fresh_broker):
    with RawClient(fresh_broker.bootstrap) as c:
        epoch, levels = features(c)
        assert levels == {"eligible.leader.replicas.version": 1, "group.version": 1, "metadata.version": 33,
                          "share.version": 2, "streams.version": 1,
                          "transaction.version": 2}
        assert heartbeat(c) == ErrorCode.NONE
        r = update(c, "group.version", 0, 2, validate_only=True)
        assert (r.error_code, features(c)) == (ErrorCode.NONE, (epoch, levels))
        r = update(c, "group.version", 0, 2, version=2)
        assert (r.error_code, r.results) == (ErrorCode.NONE, [])
        new_epoch, levels = features(c)
        assert new_epoch > epoch and "group.version" not in levels
        assert heartbeat(c) == ErrorCode.UNSUPPORTED_VERSION
    fresh_broker.restart(hard=True)
    with RawClient(fresh_broker.bootstrap) as c:
        assert features(c) == (new_epoch, {"eligible.leader.replicas.version": 1, "metadata.version": 33,
                                               "share.version": 2, "streams.version": 1,
                          "transaction.version": 2})
        assert heartbeat(c) == ErrorCode.UNSUPPORTED_VERSION
        r = update(c, "group.version", 1, 1)
        assert [(x.feature, x.error_code, x.error_message) for x in r.results] == [("group.version", 0, "NONE")]
        assert heartbeat(c) == ErrorCode.NONE


def test_a_refused_update_changes_nothing(fresh_broker):
    with RawClient(fresh_broker.bootstrap) as c:
        before = features(c)
        r = update(c, "transaction.version", 3, 1)
        assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION
        assert r.error_message == ("The update failed for all features since the following feature had an error: "
                                   "Invalid update version 3 for feature transaction.version. Local controller 1 "
                                   "only supports versions 0-2")
        assert features(c) == before


def test_enabling_elr_writes_the_cluster_wide_min_insync_replicas(fresh_broker):
    """As Kafka's controller does when eligible leader replicas (KIP-966) get enabled."""
    def cluster_default(c: RawClient) -> list:
        r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
            resource_type=4, resource_name="", configuration_keys=None)]), 4)
        return [(x.name, x.value) for x in r.results[0].configs if x.name == "min.insync.replicas"]

    with RawClient(fresh_broker.bootstrap) as c:
        assert update(c, "eligible.leader.replicas.version", 0, 2).error_code == ErrorCode.NONE
        removed = c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=4, resource_name="", configs=[AlterableConfig(name="min.insync.replicas",
                                                                        config_operation=1)])]), 1)
        assert removed.responses[0].error_code == ErrorCode.NONE  # allowed while ELR is off
        assert cluster_default(c) == []
        assert update(c, "eligible.leader.replicas.version", 1, 1).error_code == ErrorCode.NONE
        assert cluster_default(c) == [("min.insync.replicas", "1")]
