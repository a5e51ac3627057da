"""LeadershipHandOver on a single node, over a real embedded metadata store and real logs: a failed log dir
leaves its partitions without a leader (a new leader epoch), the other dir's keep theirs, and once the dir is
back at start its partitions are led here again; lost replicas are named as Kafka's metadata names them."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator

import pytest

from replication.controller.hand_over import LeadershipHandOver
from replication.metadata.embedded_store import EmbeddedMetadataStore
from replication.metadata.image import NO_LEADER, BrokerImage
from replication.replica_manager import ReplicaManager
from storage import LogConfig, LogManager

NODE = 1


@pytest.fixture
def dirs(tmp_path) -> Iterator[tuple[str, str]]:
    yield str(tmp_path / "a"), str(tmp_path / "b")


def hand_over(store: EmbeddedMetadataStore, log_manager: LogManager) -> LeadershipHandOver:
    rm = ReplicaManager(log_manager, NODE)
    return LeadershipHandOver(NODE, store, rm, log_manager, replica_fetchers=None, cluster_mode=False,
                              elr_enabled=lambda: False, min_insync_replicas=lambda topic: 1,
                              spawn=lambda coro: asyncio.get_running_loop().create_task(coro))


def test_a_failed_dir_leaves_its_partitions_leaderless_and_they_are_led_again_once_it_is_back(tmp_path, dirs):
    async def test() -> None:
        (tmp_path / "meta").mkdir()
        store = EmbeddedMetadataStore(tmp_path / "meta", NODE, "cluster")
        await store.register_broker(BrokerImage(NODE, ()))
        await store.create_topic("t", [[NODE], [NODE]], {})
        log_manager = LogManager(list(dirs), log_cleaner_enable=False)
        log_manager.startup()
        try:
            h = hand_over(store, log_manager)
            topic_id = store.image.topics["t"].topic_id
            logs = [log_manager.get_or_create_log("t", p, topic_id, LogConfig()) for p in (0, 1)]
            failed = logs[0].parent_dir
            in_failed = {p for p in (0, 1) if logs[p].parent_dir == failed}
            assert in_failed and len(in_failed) < 2  # one partition per dir: the fewest-logs rule spreads them

            await h.directory_offline(lambda t, p: p in in_failed, failed)
            for p in (0, 1):
                state = store.image.partition("t", p)
                if p in in_failed:
                    assert (state.leader, state.leader_epoch, state.partition_epoch) == (NO_LEADER, 1, 1)
                    assert state.isr == (NODE,)  # without ELR the last member stays: the one to wait for
                else:
                    assert (state.leader, state.leader_epoch) == (NODE, 0)

            # The dir is back at start: its partitions are led here again, in a new epoch.
            await h.elect_recovered_replicas()
            for p in in_failed:
                state = store.image.partition("t", p)
                assert (state.leader, state.leader_epoch, state.isr) == (NODE, 2, (NODE,))
        finally:
            log_manager.shutdown()

    asyncio.run(test())


def test_a_single_node_names_its_replica_lost_only_while_its_partition_is_offline(tmp_path, dirs):
    async def test() -> None:
        (tmp_path / "meta").mkdir()
        store = EmbeddedMetadataStore(tmp_path / "meta", NODE, "cluster")
        await store.create_topic("t", [[NODE]], {})
        log_manager = LogManager(list(dirs), log_cleaner_enable=False)
        log_manager.startup()
        try:
            h = hand_over(store, log_manager)
            assert not h.any_lost_replicas() and h.lost_replicas("t", 0) == ()
            h.replica_manager.mark_offline("t", 0)  # its dir was offline at start
            assert h.any_lost_replicas() and h.lost_replicas("t", 0) == (NODE,)
            await h.controlled_shutdown()  # a single node hands nothing over
            assert not h.shutting_down
        finally:
            log_manager.shutdown()

    asyncio.run(test())


def test_stray_logs_are_renamed_and_kept_and_logs_of_replicas_moved_away_are_deleted_at_start(tmp_path, dirs):
    """A broker killed before it renamed a deleted topic's logs (they are renamed after the image is applied),
    or down while a topic was deleted, or created again under the same name, finds their logs at its next start:
    as Kafka 4.4's (isStrayKraftReplica) a log whose topic id the metadata does not have (a topic gone, or created
    again) or that has no topic id (none was written: no records were) is renamed -stray and kept, never served;
    one moved away is deleted; the current topic's logs stay."""
    async def test() -> None:
        (tmp_path / "meta").mkdir()
        store = EmbeddedMetadataStore(tmp_path / "meta", NODE, "cluster")
        await store.register_broker(BrokerImage(NODE, ()))
        await store.create_topic("kept", [[NODE]], {})
        await store.create_topic("again", [[NODE], [NODE]], {})
        await store.create_topic("moved", [[2]], {})
        log_manager = LogManager([dirs[0]], log_cleaner_enable=False)
        log_manager.startup()
        try:
            image = store.image
            log_manager.get_or_create_log("kept", 0, image.topics["kept"].topic_id, LogConfig())
            log_manager.get_or_create_log("again", 0, uuid.uuid4(), LogConfig())  # an earlier topic of that name
            log_manager.get_or_create_log("again", 1, None, LogConfig())  # killed before its topic id was written
            log_manager.get_or_create_log("gone", 0, uuid.uuid4(), LogConfig())  # deleted meanwhile
            log_manager.get_or_create_log("moved", 0, image.topics["moved"].topic_id, LogConfig())
            log_manager.get_or_create_log("no-id", 0, None, LogConfig())
            hand_over(store, log_manager).delete_stray_logs()
            assert sorted(lg.name for lg in log_manager.all_logs()) == ["kept-0"]
            kept = sorted(n.rsplit(".", 1)[0] for n in os.listdir(dirs[0]) if n.endswith("-stray"))
            assert kept == ["again-0", "again-1", "gone-0", "no-id-0"]
            assert [n.rsplit(".", 1)[0] for n in os.listdir(dirs[0]) if n.startswith("moved-")] == ["moved-0"]
            assert [n for n in os.listdir(dirs[0]) if n.startswith("moved-")][0].endswith("-delete")
        finally:
            log_manager.shutdown()

    asyncio.run(test())


def test_a_single_nodes_deleted_topics_logs_are_deleted_at_start_even_under_a_topic_created_again(tmp_path, dirs):
    """A single node's store names the topics it deleted until their logs are renamed: their logs are deleted at
    start (not kept stray), also when a topic of the same name exists again (another id), whose partition then gets
    a new log; a log without a topic id is deleted by its name only while no topic has that name."""
    async def test() -> None:
        (tmp_path / "meta").mkdir()
        store = EmbeddedMetadataStore(tmp_path / "meta", NODE, "cluster")
        await store.register_broker(BrokerImage(NODE, ()))
        await store.create_topic("again", [[NODE], [NODE]], {})
        log_manager = LogManager([dirs[0]], log_cleaner_enable=False)
        log_manager.startup()
        try:
            old_again, old_gone = uuid.uuid4(), uuid.uuid4()
            log_manager.get_or_create_log("again", 0, old_again, LogConfig())
            log_manager.get_or_create_log("again", 1, None, LogConfig())
            log_manager.get_or_create_log("gone", 0, old_gone, LogConfig())
            log_manager.get_or_create_log("gone", 1, None, LogConfig())
            hand_over(store, log_manager).delete_stray_logs({old_again: "again", old_gone: "gone"})
            assert log_manager.all_logs() == []
            names = os.listdir(dirs[0])
            assert [n.rsplit(".", 1)[0] for n in names if n.endswith("-stray")] == ["again-1"]
            assert sorted(n.rsplit(".", 1)[0] for n in names if n.endswith("-delete")) == ["again-0", "gone-0", "gone-1"]
        finally:
            log_manager.shutdown()

    asyncio.run(test())
