"""BrokerMetadataPublisher: image A then image B gives exactly the expected actions, as Kafka's publisher tests
check (BrokerMetadataPublisherTest). The replica manager, logs, pending logs and fetch sessions are the real
ones on a temporary dir; the replica fetchers and the coordinators record what they are told."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from pykbroker.metadata_publisher import SYNC_NEW_LOGS, BrokerMetadataPublisher
from replication.fetch_session import FetchSessionCache
from replication.metadata.image import MetadataImage, PartitionState, TopicState
from replication.pending_logs import PendingLogs
from replication.replica_manager import ReplicaManager
from storage import LogConfig, LogManager
from wire import build_simple_batch

NODE = 1
OFFSETS = "__consumer_offsets"


class RecordingFetchers:
    def __init__(self, actions: list) -> None:
        self.actions = actions

    def follow(self, topic: str, partition: int, leader_id: int) -> None:
        self.actions.append(("follow", topic, partition, leader_id))

    def unfollow(self, topic: str, partition: int) -> None:
        self.actions.append(("unfollow", topic, partition))


class RecordingCoordinators:
    def __init__(self, actions: list) -> None:
        self.actions = actions

    def elected(self, topic: str, partition: int) -> None:
        self.actions.append(("elected", topic, partition))

    def resigned(self, topic: str, partition: int) -> None:
        self.actions.append(("resigned", topic, partition))

    def leadership_changed(self, topic_id: uuid.UUID, partition: int) -> None:
        self.actions.append(("leadership_changed", topic_id, partition))

    async def topic_deleted(self, topic: TopicState) -> None:
        self.actions.append(("topic_deleted", topic.name, topic.topic_id))


def topic(name: str, *partitions: tuple[int, tuple[int, ...]], topic_id: uuid.UUID | None = None,
          leader_epoch: int = 0, configs: dict[str, str] | None = None) -> TopicState:
    """A topic whose partitions are (leader, replicas), every replica in sync."""
    return TopicState(name, topic_id or uuid.uuid4(), tuple(
        PartitionState(i, leader, leader_epoch, replicas, replicas, leader_epoch)
        for i, (leader, replicas) in enumerate(partitions)), configs or {})


def image(*topics: TopicState, broker_configs: dict | None = None) -> MetadataImage:
    """An image of ``topics``; its broker configs are the shared empty default unless given (a store keeps the
    same mapping while broker configs do not change)."""
    extra = {"broker_configs": broker_configs} if broker_configs is not None else {}
    return MetadataImage("cluster", topics={t.name: t for t in topics}, topics_by_id={t.topic_id: t for t in topics},
                         **extra)


class Harness:
    """A publisher of broker NODE over real storage; ``actions`` lists what fetchers and coordinators heard."""

    def __init__(self, log_manager: LogManager, defer_log_work: bool = False, sync_new_logs: int | None = None) -> None:
        self.actions: list = []
        self.renamed_all = 0  # times the publisher said every deleted log so far is renamed
        self.broker_configs: list[MetadataImage] = []
        self.configs_changed: list[str] = []
        self.log_manager = log_manager
        self.replica_manager = ReplicaManager(log_manager, NODE)
        self.fetch_sessions = FetchSessionCache(10)
        self.current = image()
        self.pending_logs = PendingLogs(log_manager, lambda created, failed: self.publisher.logs_created(
            created, failed, self.current), slice_seconds=0.0)
        self.publisher = BrokerMetadataPublisher(
            NODE, replica_manager=self.replica_manager, replica_fetchers=RecordingFetchers(self.actions),
            log_manager=log_manager, pending_logs=self.pending_logs, fetch_sessions=self.fetch_sessions,
            coordinators=RecordingCoordinators(self.actions), log_config_for_topic=lambda name: LogConfig(),
            apply_broker_configs=self.broker_configs.append,
            spawn=lambda coro: asyncio.get_running_loop().create_task(coro),
            topic_configs_changed=self.configs_changed.append, defer_log_work=defer_log_work,
            sync_new_logs=sync_new_logs, deleted_logs_renamed=self._renamed_all)

    def _renamed_all(self) -> None:
        assert self.log_manager.renames_pending == 0
        self.renamed_all += 1

    async def publish(self, new: MetadataImage) -> list:
        """Publish ``new`` after the current image; the actions it caused (deletions included)."""
        self.actions.clear()
        old, self.current = self.current, new
        self.publisher.publish(old, new)
        await self.publisher.deletions_done()
        return list(self.actions)

    def hosted(self) -> dict[tuple[str, int], str]:
        return {tp: "leader" if p.is_leader else "follower" for tp, p in self.replica_manager.partitions.items()}


@pytest.fixture
def log_manager(tmp_path) -> Iterator[LogManager]:
    m = LogManager([str(tmp_path / "logs")], log_cleaner_enable=False)
    m.startup()
    yield m
    m.shutdown()


def run(test) -> None:
    asyncio.run(test())


def test_a_new_topic_is_led_and_followed_as_assigned_and_nothing_else_is_touched(log_manager):
    async def test() -> None:
        h = Harness(log_manager)
        t = topic("orders", (1, (1, 2)), (2, (2, 1)), (3, (3, 4)))
        actions = await h.publish(image(t))
        assert actions == [("unfollow", "orders", 0), ("elected", "orders", 0),
                           ("leadership_changed", t.topic_id, 0), ("follow", "orders", 1, 2)]
        assert h.hosted() == {("orders", 0): "leader", ("orders", 1): "follower"}  # partition 2 is not ours
        assert h.broker_configs == [] and h.configs_changed == []

    run(test)


def test_an_unchanged_image_does_nothing_and_a_new_leader_epoch_moves_leadership(log_manager):
    async def test() -> None:
        h = Harness(log_manager)
        t = topic("orders", (1, (1, 2)))
        await h.publish(image(t))
        assert await h.publish(image(t)) == []
        moved = topic("orders", (2, (1, 2)), topic_id=t.topic_id, leader_epoch=1)
        assert await h.publish(image(moved)) == [("follow", "orders", 0, 2), ("resigned", "orders", 0),
                                                  ("leadership_changed", t.topic_id, 0)]
        back = topic("orders", (1, (1, 2)), topic_id=t.topic_id, leader_epoch=2)
        assert await h.publish(image(back)) == [("unfollow", "orders", 0), ("elected", "orders", 0),
                                                 ("leadership_changed", t.topic_id, 0)]

    run(test)


def test_a_coordinator_partition_led_here_is_elected_and_resigned(log_manager):
    async def test() -> None:
        h = Harness(log_manager)
        offsets = topic(OFFSETS, (1, (1,)), (2, (2, 1)))
        assert ("elected", OFFSETS, 0) in await h.publish(image(offsets))
        elsewhere = topic(OFFSETS, (2, (1, 2)), (2, (2, 1)), topic_id=offsets.topic_id, leader_epoch=1)
        actions = await h.publish(image(elsewhere))
        assert ("resigned", OFFSETS, 0) in actions and ("follow", OFFSETS, 0, 2) in actions
        assert not any(a[0] == "elected" for a in actions)

    run(test)


def test_a_deleted_topic_is_dropped_and_the_coordinators_drop_its_offsets_and_share_state(log_manager):
    async def test() -> None:
        h = Harness(log_manager)
        t = topic("orders", (1, (1, 2)), (2, (2, 1)))
        other = topic("payments", (1, (1,)))
        await h.publish(image(t, other))
        h.fetch_sessions.remove_topic("orders")  # a real method the publisher calls: it must exist
        actions = await h.publish(image(other))
        assert actions == [("unfollow", "orders", 0), ("unfollow", "orders", 1),
                           ("topic_deleted", "orders", t.topic_id)]
        assert h.hosted() == {("payments", 0): "leader"}
        assert log_manager.get_log("orders", 0) is None and log_manager.get_log("orders", 1) is None

    run(test)


def test_a_topic_deleted_and_created_again_between_two_images_is_dropped_then_hosted_anew(log_manager):
    async def test() -> None:
        h = Harness(log_manager)
        old = topic("orders", (1, (1,)))
        await h.publish(image(old))
        new = topic("orders", (1, (1,)))
        actions = await h.publish(image(new))
        assert actions[0] == ("unfollow", "orders", 0)
        assert ("topic_deleted", "orders", old.topic_id) in actions
        assert ("elected", "orders", 0) in actions and ("leadership_changed", new.topic_id, 0) in actions
        assert log_manager.get_log("orders", 0).topic_id == new.topic_id

    run(test)


def test_a_partition_reassigned_away_is_stopped_and_its_log_deleted(log_manager):
    async def test() -> None:
        h = Harness(log_manager)
        t = topic("orders", (2, (2, 1)))
        await h.publish(image(t))
        away = topic("orders", (2, (2, 3)), topic_id=t.topic_id, leader_epoch=1)
        assert await h.publish(image(away)) == [("unfollow", "orders", 0)]
        assert h.hosted() == {} and log_manager.get_log("orders", 0) is None

    run(test)


def test_config_changes_reach_the_logs_the_controller_and_the_dynamic_broker_config(log_manager):
    async def test() -> None:
        h = Harness(log_manager)
        t = topic("orders", (1, (1,)))
        await h.publish(image(t))
        changed = TopicState("orders", t.topic_id, t.partitions, {"retention.ms": "1000"})
        assert await h.publish(image(changed)) == []  # the partitions' state did not change
        assert h.configs_changed == ["orders"]
        configs = image(changed, broker_configs={"": {"log.retention.ms": "5"}})
        await h.publish(configs)
        assert h.broker_configs == [configs]

    run(test)


def test_partitions_beyond_the_sync_budget_are_hosted_once_pending_logs_created_theirs(log_manager):
    async def test() -> None:
        h = Harness(log_manager)
        big = topic("big", *[(1, (1,)) for _ in range(SYNC_NEW_LOGS + 3)])
        await h.publish(image(big))
        assert len(h.hosted()) == SYNC_NEW_LOGS and len(h.pending_logs) == 3
        await h.pending_logs.wait_for([("big", p) for p in range(SYNC_NEW_LOGS, SYNC_NEW_LOGS + 3)], timeout=30)
        assert len(h.hosted()) == SYNC_NEW_LOGS + 3
        assert all(state == "leader" for state in h.hosted().values())
        await h.pending_logs.close()

    run(test)


def test_in_a_cluster_logs_are_created_and_renamed_after_the_image_is_applied(log_manager, tmp_path):
    """defer_log_work (a cluster): applying an image creates and renames no log (the broker that handled the
    CreateTopics or DeleteTopics answers as soon as its image shows the change); the logs follow, and a topic
    created again under a deleted one's name gets a new, empty log (the old dir renamed first)."""
    async def test() -> None:
        h = Harness(log_manager, defer_log_work=True)
        t = topic("orders", (1, (1, 2)), (2, (2, 1)))
        await h.publish(image(t))
        assert h.hosted() == {} and len(h.pending_logs) == 2 and log_manager.get_log("orders", 0) is None
        await h.pending_logs.wait_for([("orders", 0), ("orders", 1)], timeout=30)
        assert h.hosted() == {("orders", 0): "leader", ("orders", 1): "follower"}
        log_manager.get_log("orders", 0).append_as_leader(build_simple_batch([b"before"], timestamp=0), leader_epoch=0)
        dirs = tmp_path / "logs"

        await h.publish(image())  # deleted: gone from the replica manager and the log manager at once ...
        assert h.hosted() == {} and log_manager.get_log("orders", 0) is None
        assert (dirs / "orders-0").exists() and log_manager.renames_pending == 2  # ... its dirs renamed later
        assert h.renamed_all == 0
        again = topic("orders", (1, (1, 2)))
        await h.publish(image(again))
        await h.pending_logs.wait_for([("orders", 0)], timeout=30)
        assert h.hosted() == {("orders", 0): "leader"}
        recreated = log_manager.get_log("orders", 0)
        assert recreated.topic_id == again.topic_id and recreated.log_end_offset == 0
        for _ in range(200):
            if log_manager.renames_pending == 0:
                break
            await asyncio.sleep(0.05)
        assert log_manager.renames_pending == 0 and not (dirs / "orders-1").exists()
        assert len([d for d in dirs.iterdir() if d.name.endswith("-delete")]) == 2
        for _ in range(200):  # then the store may forget the deleted topics (a single node's)
            if h.renamed_all:
                break
            await asyncio.sleep(0.05)
        assert h.renamed_all == 1
        await h.pending_logs.close()

    run(test)


def test_a_single_node_creates_a_few_new_logs_while_applying_an_image_and_the_rest_after(log_manager):
    """defer_log_work with sync_new_logs (a single node): a small topic is hosted as soon as its image is applied,
    the logs beyond the budget follow in the background and their partitions are hosted then."""
    async def test() -> None:
        h = Harness(log_manager, defer_log_work=True, sync_new_logs=2)
        small = topic("small", (1, (1,)), (1, (1,)))
        await h.publish(image(small))
        assert h.hosted() == {("small", 0): "leader", ("small", 1): "leader"} and len(h.pending_logs) == 0
        big = topic("big", *[(1, (1,)) for _ in range(5)])
        await h.publish(image(small, big))
        assert len(h.hosted()) == 4 and len(h.pending_logs) == 3
        await h.pending_logs.wait_for([("big", p) for p in range(5)], timeout=30)
        assert len(h.hosted()) == 7 and all(state == "leader" for state in h.hosted().values())
        await h.pending_logs.close()

    run(test)
