"""streams_topology: the topics a topology names and the order Kafka lists missing internal topics in."""

from __future__ import annotations

from coordinator.group.streams_topology import hash_map_order, topology_topics
from wire.messages import streams_group_heartbeat_request as req


def test_missing_internal_topics_come_in_kafka_hash_map_order():
    # Kafka 4.4 answered "Internal topics are missing: sg-a-store-changelog, sg-a-b-changelog, sg-a-agg-changelog"
    # for a topology naming them store, agg, b (compat_tests/test_differential_authorization.py).
    names = ["sg-a-store-changelog", "sg-a-agg-changelog", "sg-a-b-changelog"]
    assert hash_map_order(names) == ["sg-a-store-changelog", "sg-a-b-changelog", "sg-a-agg-changelog"]
    assert hash_map_order(names + names) == hash_map_order(names)


def test_topology_topics_are_every_name_once_in_order():
    topology = req.Topology(epoch=1, subtopologies=[
        req.Subtopology(subtopology_id="0", source_topics=["in"], repartition_sink_topics=["app-r"],
                        state_changelog_topics=[req.TopicInfo(name="app-c")]),
        req.Subtopology(subtopology_id="1", source_topic_regex=["x.*"],
                        repartition_source_topics=[req.TopicInfo(name="app-r")], source_topics=["in"])])
    assert topology_topics(topology) == ["in", "app-r", "app-c"]
