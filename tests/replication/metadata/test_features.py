"""Feature levels and UpdateFeatures validation (replication.metadata.features), against facts checked on Kafka 4.4.0
(``kafka-features describe / upgrade / downgrade`` on a new Kafka 4.4 node)."""

from __future__ import annotations

import pytest

from replication.metadata.features import (
    BOOTSTRAP_FINALIZED,
    SAFE_DOWNGRADE,
    UNSAFE_DOWNGRADE,
    UPGRADE,
    FeatureUpdate,
    FeatureUpdateError,
    apply_updates,
    finalized_features,
    supported_features,
    upgraded_levels,
)
from wire import ErrorCode


def refusal(*updates: FeatureUpdate, current: dict[str, int] = BOOTSTRAP_FINALIZED, controller_id: int = 1) -> str:
    with pytest.raises(FeatureUpdateError) as caught:
        apply_updates(dict(current), list(updates), controller_id)
    assert caught.value.code == ErrorCode.INVALID_UPDATE_VERSION
    return str(caught.value)


def test_downgrades_need_a_downgrade_type_and_upgrades_must_not_have_one():
    assert apply_updates(BOOTSTRAP_FINALIZED, [FeatureUpdate("group.version", 0, SAFE_DOWNGRADE)]) == {
        "eligible.leader.replicas.version": 1, "metadata.version": 33, "share.version": 2, "streams.version": 1,
        "transaction.version": 2}
    assert refusal(FeatureUpdate("group.version", 0, UPGRADE)) == (
        "Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without "
        "setting the upgrade type to either safe or unsafe downgrade.")
    current = {"metadata.version": 27, "transaction.version": 1}
    assert refusal(FeatureUpdate("transaction.version", 2, SAFE_DOWNGRADE), current=current) == (
        "Invalid update version 2 for feature transaction.version. Can't downgrade to a newer version.")
    assert apply_updates(current, [FeatureUpdate("transaction.version", 2, UPGRADE)]) == {
        "metadata.version": 27, "transaction.version": 2}


def test_levels_outside_the_supported_range_and_unknown_features_are_refused():
    assert refusal(FeatureUpdate("group.version", 2, UPGRADE)).endswith("Local controller 1 only supports versions 0-1")
    assert refusal(FeatureUpdate("streams.version", 2, UPGRADE)).endswith("Local controller 1 only supports versions 0-1")
    assert refusal(FeatureUpdate("share.version", 3, UPGRADE)).endswith("Local controller 1 only supports versions 0-2")
    assert refusal(FeatureUpdate("test.feature.version", 1, UPGRADE), FeatureUpdate("group.version", 1, UPGRADE)) == (
        "Invalid update version 1 for feature test.feature.version. Local controller 1 does not support this feature.")
    assert refusal(FeatureUpdate("foo", 1, UPGRADE), controller_id=3).endswith(
        "Local controller 3 does not support this feature.")
    assert refusal(FeatureUpdate("no.such", 0, UPGRADE)).endswith("Feature no.such not found.")
    assert refusal(FeatureUpdate("group.version", 1, 0)).endswith("The controller does not support the given upgrade type.")
    assert refusal(FeatureUpdate("group.version", -1, SAFE_DOWNGRADE)).endswith("A feature version cannot be less than 0.")


def test_metadata_version_refuses_a_downgrade_across_a_metadata_change():
    # 4.4-IV2 (33) changed the metadata: no downgrade from a new cluster; from 4.1-IV1 (27) to 4.0-IV1 (23) is
    # fine, to 22 crosses 23, which changed it.
    assert refusal(FeatureUpdate("metadata.version", 32, SAFE_DOWNGRADE)) == (
        "Unsupported metadata.version downgrade from 33 to 32. Refusing to perform the requested downgrade because it "
        "might delete metadata information.")
    assert refusal(FeatureUpdate("metadata.version", 31, UNSAFE_DOWNGRADE)) == (
        "Unsupported metadata.version downgrade from 33 to 31. Unsafe metadata downgrade is not supported in this "
        "version.")
    old = {"metadata.version": 27}
    assert apply_updates(old, [FeatureUpdate("metadata.version", 23, SAFE_DOWNGRADE)])["metadata.version"] == 23
    assert refusal(FeatureUpdate("metadata.version", 22, SAFE_DOWNGRADE), current=old).startswith(
        "Unsupported metadata.version downgrade from 27 to 22.")
    for level in (5, 34, 99):
        assert refusal(FeatureUpdate("metadata.version", level, UPGRADE)) == (
            f"Invalid update version {level} for feature metadata.version. Local controller 1 only supports "
            "versions 7-33")


def test_one_bad_update_fails_all_and_the_first_reported_follows_kafkas_hash_map_order():
    # Kafka's controller visits updates in its HashMap's order: group.version before transaction.version.
    message = refusal(FeatureUpdate("transaction.version", 7, UPGRADE), FeatureUpdate("group.version", 5, UPGRADE))
    assert "feature group.version" in message
    before = dict(BOOTSTRAP_FINALIZED)
    refusal(FeatureUpdate("transaction.version", 1, SAFE_DOWNGRADE), FeatureUpdate("group.version", 9, UPGRADE))
    assert before == BOOTSTRAP_FINALIZED


def test_kraft_version_moves_up_only():
    assert apply_updates(BOOTSTRAP_FINALIZED, [FeatureUpdate("kraft.version", 1, UPGRADE)])["kraft.version"] == 1
    assert refusal(FeatureUpdate("kraft.version", 0, SAFE_DOWNGRADE),
                   current={**BOOTSTRAP_FINALIZED, "kraft.version": 1}).endswith("Can't downgrade the version of this feature.")


def test_api_versions_lists_levels_above_zero_and_v3_supports_only_metadata_version():
    assert [f.name for f in finalized_features({"group.version": 0, "metadata.version": 33})] == ["metadata.version"]
    assert [(f.name, f.min_version, f.max_version) for f in supported_features(3)] == [("metadata.version", 7, 33)]
    assert [f.name for f in supported_features(3)] == ["metadata.version"]
    assert [f.name for f in supported_features(4)] == ["eligible.leader.replicas.version", "group.version",
                                                       "kraft.version", "metadata.version", "share.version",
                                                       "streams.version", "transaction.version"]


def test_a_new_cluster_has_kafka_4_4_levels_and_an_earlier_pykbrokers_is_moved_up_to_them():
    assert BOOTSTRAP_FINALIZED == {"eligible.leader.replicas.version": 1, "group.version": 1, "metadata.version": 33,
                                   "share.version": 2, "streams.version": 1, "transaction.version": 2}
    assert upgraded_levels(BOOTSTRAP_FINALIZED) is None
    assert upgraded_levels({**BOOTSTRAP_FINALIZED, "transaction.version": 0}) is None  # a choice made on 4.4 levels
    assert upgraded_levels({}) == BOOTSTRAP_FINALIZED  # an earlier pykbroker's ZooKeeper cluster: no /feature levels
    assert upgraded_levels({"metadata.version": 27, "transaction.version": 1, "kraft.version": 1}) == {
        **BOOTSTRAP_FINALIZED, "kraft.version": 1}
