"""The embedded metadata store: every committed change publishes a new immutable image, durably."""

from __future__ import annotations

import asyncio

import pytest

from replication.metadata.embedded_store import EmbeddedMetadataStore
from replication.metadata.image import BrokerImage, Endpoint, MetadataImage, PartitionState


def run(coro):
    return asyncio.run(coro)


def test_each_change_publishes_a_new_image_sharing_what_did_not_change(tmp_path):
    store = EmbeddedMetadataStore(tmp_path, node_id=1, cluster_id="c1")
    seen: list[tuple[MetadataImage, MetadataImage]] = []
    store.subscribe(lambda old, new: seen.append((old, new)))
    a = run(store.create_topic("a", [[1], [1]], {"retention.ms": "1000"}))
    run(store.create_topic("b", [[1]], {}))
    assert [new.offset for _, new in seen] == [1, 2]
    old, new = seen[-1]
    assert "b" not in old.topics and new.topics["a"] is a  # untouched topics are shared, not copied
    assert new.topics_by_id[a.topic_id] is a and new.cluster_id == "c1" and new.controller_id == 1
    grown = run(store.add_partitions("a", [[1]]))
    assert [p.partition for p in grown.partitions] == [0, 1, 2] and len(a.partitions) == 2  # a is unchanged
    run(store.delete_topic("b"))
    assert set(store.image.topics) == {"a"} and seen[-1][0].topics.keys() == {"a", "b"}


def test_images_cannot_be_changed_in_place(tmp_path):
    store = EmbeddedMetadataStore(tmp_path, node_id=1)
    topic = run(store.create_topic("a", [[1]], {"k": "v"}))
    with pytest.raises(TypeError):
        store.image.topics["b"] = topic  # type: ignore[index]
    with pytest.raises(TypeError):
        topic.configs["k"] = "w"  # type: ignore[index]
    with pytest.raises(AttributeError):
        topic.partitions[0].leader = 2  # type: ignore[misc]


def test_the_image_survives_a_reopen(tmp_path):
    store = EmbeddedMetadataStore(tmp_path, node_id=1)
    topic = run(store.create_topic("a", [[1], [1]], {"cleanup.policy": "compact"}))
    run(store.set_broker_configs({"": {"log.retention.ms": "5"}}))
    run(store.alter_client_quotas([(frozenset({("user", "u")}), {"producer_byte_rate": 10.0})]))
    run(store.alter_scram_credentials([], [("u", 1, 4096, b"salt", b"pw")]))
    run(store.set_finalized_features({"metadata.version": 33}))
    image = EmbeddedMetadataStore(tmp_path, node_id=1).image
    assert image.offset == store.image.offset == 5 and image.features_epoch == 5
    assert image.topics["a"] == topic and image.topics_by_id[topic.topic_id].name == "a"
    assert dict(image.broker_configs[""]) == {"log.retention.ms": "5"}
    assert dict(image.client_quotas[frozenset({("user", "u")})]) == {"producer_byte_rate": 10.0}
    assert image.scram_credentials["u"][1] == (4096, b"salt".hex(), b"pw".hex())
    assert dict(image.finalized_features) == {"metadata.version": 33}


def test_a_commit_encodes_only_the_topics_it_changed_and_the_file_stays_true(tmp_path, monkeypatch):
    """Every commit rewrites the whole file: re-encoding every topic each time made creating or deleting many
    topics quadratic (100 topics beside 300 others took 3-4 s on a single node)."""
    import replication.metadata.embedded_store as embedded_store
    store = EmbeddedMetadataStore(tmp_path, node_id=1)
    for i in range(20):
        run(store.create_topic(f"t{i}", [[1], [1]], {"retention.ms": str(i)}))
    encoded: list[str] = []
    real_dumps = embedded_store.json.dumps

    def counting_dumps(obj, **kwargs):
        encoded.append(obj.get("name", "<doc>"))
        return real_dumps(obj, **kwargs)
    monkeypatch.setattr(embedded_store.json, "dumps", counting_dumps)
    run(store.create_topic("new", [[1]], {}))
    run(store.set_topic_configs("t3", {"retention.ms": "33"}))
    run(store.alter_partition("t5", 1, PartitionState(1, 1, 1, (1,), (1,), partition_epoch=1)))
    run(store.delete_topic("t7"))
    monkeypatch.undo()
    assert encoded == ["new", "<doc>", "t3", "<doc>", "t5", "<doc>", "<doc>"]
    image = EmbeddedMetadataStore(tmp_path, node_id=1).image
    assert image.topics == store.image.topics and image.offset == store.image.offset == 24
    assert "t7" not in image.topics and dict(image.topics["t3"].configs) == {"retention.ms": "33"}
    assert image.partition("t5", 1).leader_epoch == 1 and image.topics_by_id == store.image.topics_by_id


def test_a_partition_state_change_commits_only_from_the_epoch_it_was_made_from(tmp_path):
    store = EmbeddedMetadataStore(tmp_path, node_id=1)
    run(store.create_topic("a", [[1, 2]], {}))
    current = store.image.partition("a", 0)
    assert current == PartitionState(0, 1, 0, (1, 2), (1, 2), 0)
    shrunk = PartitionState(0, 1, 0, (1, 2), (1,), partition_epoch=1)
    assert run(store.alter_partition("a", 0, shrunk)) == shrunk
    assert run(store.alter_partition("a", 0, PartitionState(0, 1, 0, (1, 2), (1, 2), partition_epoch=1))) is None
    assert store.image.partition("a", 0) == shrunk
    assert store.image.partition("a", 1) is None and store.image.partition("nope", 0) is None


def test_a_registered_broker_is_in_the_image_but_not_on_disk(tmp_path):
    store = EmbeddedMetadataStore(tmp_path, node_id=3)
    run(store.register_broker(BrokerImage(3, (Endpoint("PLAINTEXT", "localhost", 9092),), rack="r1")))
    assert store.image.live_broker_ids() == [3]
    assert store.image.brokers[3].endpoint("PLAINTEXT").port == 9092
    run(store.create_topic("a", [[3]], {}))
    assert EmbeddedMetadataStore(tmp_path, node_id=3).image.brokers == {}


def test_a_restart_leads_every_partition_of_the_node_two_epochs_on_in_one_commit(tmp_path):
    store = EmbeddedMetadataStore(tmp_path, node_id=1, cluster_id="c1")
    run(store.create_topic("a", [[1], [1]], {}))
    leaderless = PartitionState(1, -1, 1, (1,), (1,), partition_epoch=1)
    assert run(store.alter_partition("a", 1, leaderless)) == leaderless  # an offline dir's partition
    reopened = EmbeddedMetadataStore(tmp_path, node_id=1, cluster_id="c1")
    offset = reopened.image.offset
    assert run(reopened.restart_leaderships()) == 1
    led, offline = reopened.image.topics["a"].partitions
    assert (led.leader, led.leader_epoch, led.partition_epoch) == (1, 2, 2)
    assert offline == leaderless  # left to the election of a recovered replica
    assert reopened.image.offset == offset + 1
    assert reopened.image.topics_by_id[reopened.image.topics["a"].topic_id].partitions[0] == led
    again = EmbeddedMetadataStore(tmp_path, node_id=1, cluster_id="c1")
    assert again.image.topics["a"].partitions[0].leader_epoch == 2  # durable


def test_the_writes_of_one_loop_pass_are_one_file_write_and_one_image(tmp_path, monkeypatch):
    """A CreateTopics of ten topics writes each topic concurrently: one fsynced write and one published image for
    all of them (as Kafka's controller commits a request's records in one batch), not ten."""
    import replication.metadata.embedded_store as embedded_store
    store = EmbeddedMetadataStore(tmp_path, node_id=1)
    run(store.create_topic("old", [[1]], {}))
    seen: list[tuple[MetadataImage, MetadataImage]] = []
    store.subscribe(lambda old, new: seen.append((old, new)))
    writes: list[str] = []
    real_write = embedded_store.atomic_write
    monkeypatch.setattr(embedded_store, "atomic_write", lambda path, data: (writes.append(path), real_write(path, data)))

    async def request() -> list:
        return await asyncio.gather(*(store.create_topic(f"t{i}", [[1]] * 3, {}) for i in range(10)),
                                    store.delete_topic("old"), store.set_broker_configs({"": {"k": "v"}}))
    created = run(request())
    assert len(writes) == 1 and len(seen) == 1
    old, new = seen[0]
    assert "old" in old.topics and set(new.topics) == {f"t{i}" for i in range(10)}
    assert new.offset == old.offset + 12 and store.image is new and dict(new.broker_configs[""]) == {"k": "v"}
    assert [new.topics[f"t{i}"] for i in range(10)] == created[:10]
    reopened = EmbeddedMetadataStore(tmp_path, node_id=1).image
    assert reopened.topics == new.topics and reopened.offset == new.offset
    # Writes in later passes are later commits, each built on the one before.
    run(store.add_partitions("t0", [[1]]))
    run(store.add_partitions("t0", [[1]]))
    assert len(writes) == 3 and len(store.image.topics["t0"].partitions) == 5


def test_a_write_that_cannot_be_persisted_fails_every_write_of_its_batch_and_publishes_nothing(tmp_path, monkeypatch):
    import replication.metadata.embedded_store as embedded_store
    store = EmbeddedMetadataStore(tmp_path, node_id=1)
    seen: list[MetadataImage] = []
    store.subscribe(lambda old, new: seen.append(new))

    def full_disk(path, data):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(embedded_store, "atomic_write", full_disk)

    async def request() -> list:
        return await asyncio.gather(store.create_topic("a", [[1]], {}), store.create_topic("b", [[1]], {}),
                                    return_exceptions=True)
    results = run(request())
    assert all(isinstance(r, OSError) for r in results) and not seen and store.image.topics == {}
    monkeypatch.undo()
    run(store.create_topic("a", [[1]], {}))  # the failed batch left nothing behind: "a" is new
    assert set(store.image.topics) == {"a"} and store.image.offset == 1
    assert set(EmbeddedMetadataStore(tmp_path, node_id=1).image.topics) == {"a"}


def test_a_listener_that_fails_fails_the_write_after_it_is_committed(tmp_path):
    store = EmbeddedMetadataStore(tmp_path, node_id=1)

    def broken(old, new):
        raise RuntimeError("cannot apply")
    store.subscribe(broken)
    with pytest.raises(RuntimeError, match="cannot apply"):
        run(store.create_topic("a", [[1]], {}))
    assert "a" in store.image.topics and "a" in EmbeddedMetadataStore(tmp_path, node_id=1).image.topics


def test_a_deleted_topic_is_named_in_the_file_until_its_logs_are_renamed(tmp_path, monkeypatch):
    """The DeleteTopics' own write names the deleted topic (a start after kill -9 deletes its logs rather than keep
    them stray); once the broker renamed them the next write no longer does; a delete that failed names nothing."""
    store = EmbeddedMetadataStore(tmp_path, node_id=1)
    gone = run(store.create_topic("gone", [[1]], {}))
    kept = run(store.create_topic("kept", [[1]], {}))
    run(store.delete_topic("gone"))
    assert dict(EmbeddedMetadataStore(tmp_path, node_id=1).deleted_topics) == {gone.topic_id: "gone"}
    store.forget_deleted_topics()
    assert dict(store.deleted_topics) == {}
    run(store.create_topic("other", [[1]], {}))
    assert dict(EmbeddedMetadataStore(tmp_path, node_id=1).deleted_topics) == {}

    import replication.metadata.embedded_store as embedded_store

    def full_disk(path, data):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(embedded_store, "atomic_write", full_disk)
    with pytest.raises(OSError):
        run(store.delete_topic("kept"))
    monkeypatch.undo()
    assert dict(store.deleted_topics) == {} and store.image.topics["kept"] == kept
