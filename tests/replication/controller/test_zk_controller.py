"""The ZooKeeper controller over a real ZooKeeper: partition states of new topics, leader election when a
broker's session ends (in-sync replicas first, unclean only when the topic allows it), leadership back to
a returning broker of an offline partition, and topic deletion."""

from __future__ import annotations

import asyncio

import pytest

from replication.controller.zk_controller import ZkController
from replication.metadata.zk.client import CreateOp, ZooKeeperClient
from replication.metadata.zk.controller_election import ControllerElection, ControllerMovedError
from replication.metadata.zk.controller_store import ZkControllerStore
from replication.metadata.zk.znodes import (
    BrokerIdZNode,
    ConfigEntityZNode,
    DeleteTopicsTopicZNode,
    Endpoint,
    ReassignPartitionsZNode,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicZNode,
)
from tests.replication.metadata.zk.zk_helpers import run
from wire import ErrorCode


async def until(predicate, timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await predicate():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


class Cluster:
    """Broker registrations as separate sessions (closing one is a broker dying) and one controller."""

    def __init__(self, connect: str) -> None:
        self.connect = connect
        self.sessions: dict[int, ZooKeeperClient] = {}

    async def __aenter__(self) -> Cluster:
        self.admin = ZooKeeperClient(self.connect, session_timeout_ms=6000)
        await self.admin.start()
        for path in ("/brokers/ids", "/brokers/topics", "/admin/delete_topics", "/config/topics"):
            await self.admin.ensure_path(path)
        self.controller_zk = ZooKeeperClient(self.connect, session_timeout_ms=6000)
        await self.controller_zk.start()
        self.election = ControllerElection(self.controller_zk, 100)
        self.controller = ZkController(ZkControllerStore(self.controller_zk, self.election), 100)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.controller.close()
        await self.election.close()
        for zk in [*self.sessions.values(), self.controller_zk, self.admin]:
            await zk.close()

    async def start_broker(self, broker_id: int) -> None:
        zk = ZooKeeperClient(self.connect, session_timeout_ms=6000)
        await zk.start()
        await zk.create(BrokerIdZNode.path(broker_id), BrokerIdZNode.encode(
            broker_id, [Endpoint("PLAINTEXT", "localhost", 9000 + broker_id, "PLAINTEXT")], timestamp_ms=0),
            ephemeral=True)
        self.sessions[broker_id] = zk

    async def stop_broker(self, broker_id: int) -> None:
        await self.sessions.pop(broker_id).close()

    async def create_topic(self, name: str, assignment: dict[int, list[int]], configs: dict | None = None) -> None:
        await self.admin.create(ConfigEntityZNode.path("topics", name), ConfigEntityZNode.encode(configs or {}))
        await self.admin.create(TopicZNode.path(name), TopicZNode.encode(assignment, "AAAAAAAAAAAAAAAAAAAAAQ"))

    async def state(self, topic: str, partition: int) -> tuple[int, int, list[int]] | None:
        found = await self.admin.get(TopicPartitionStateZNode.path(topic, partition))
        if found is None:
            return None
        s = TopicPartitionStateZNode.decode(found[0], found[1].version)
        return s.leader, s.leader_epoch, s.isr

    def has_state(self, topic: str, partition: int, expected) -> object:
        async def check() -> bool:
            return await self.state(topic, partition) == expected
        return check


def test_new_topics_get_leaders_and_a_dead_leader_is_replaced_from_the_isr(zk_server, chroot):
    async def main() -> None:
        async with Cluster(f"{zk_server.connect}{chroot}") as c:
            for b in (1, 2, 3):
                await c.start_broker(b)
            await c.election.start()
            assert c.election.is_active
            await c.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1]})
            await until(c.has_state("t", 0, (1, 0, [1, 2, 3])))
            await until(c.has_state("t", 1, (2, 0, [2, 3, 1])))
            await c.stop_broker(2)
            await until(c.has_state("t", 1, (3, 1, [3, 1])))  # leader 2 died: the next live ISR replica leads
            await until(c.has_state("t", 0, (1, 1, [1, 3])))  # a dead follower leaves the ISR
            await c.start_broker(2)
            await c.controller.idle()
            assert await c.state("t", 1) == (3, 1, [3, 1])  # a returning follower rejoins through its leader
    run(main())


def test_an_offline_partition_waits_for_its_isr_and_unclean_election_is_per_topic(zk_server, chroot):
    async def main() -> None:
        async with Cluster(f"{zk_server.connect}{chroot}") as c:
            for b in (1, 2):
                await c.start_broker(b)
            await c.election.start()
            await c.create_topic("clean", {0: [1, 2]})
            await c.create_topic("unclean", {0: [1, 2]}, {"unclean.leader.election.enable": "true"})
            await until(c.has_state("clean", 0, (1, 0, [1, 2])))
            await until(c.has_state("unclean", 0, (1, 0, [1, 2])))
            await c.stop_broker(2)
            await until(c.has_state("clean", 0, (1, 1, [1])))
            await until(c.has_state("unclean", 0, (1, 1, [1])))
            await c.stop_broker(1)  # the last in-sync replica dies: no leader, the ISR remembers it
            await until(c.has_state("clean", 0, (-1, 2, [1])))
            await until(c.has_state("unclean", 0, (-1, 2, [1])))
            await c.start_broker(2)  # out of sync: it may lead only where unclean election is allowed
            await until(c.has_state("unclean", 0, (2, 3, [2])))
            await c.controller.idle()
            assert await c.state("clean", 0) == (-1, 2, [1])
            # Allowing unclean election later (the topic's config changed) elects the waiting replica at once.
            await c.admin.set(ConfigEntityZNode.path("topics", "clean"),
                              ConfigEntityZNode.encode({"unclean.leader.election.enable": "true"}))
            c.controller.topic_configs_changed("clean")
            await until(c.has_state("clean", 0, (2, 3, [2])))
            await c.start_broker(1)
            await c.controller.idle()
            assert await c.state("clean", 0) == (2, 3, [2])  # the old ISR member now follows
    run(main())


def test_topic_deletion_removes_its_znodes_and_the_request(zk_server, chroot):
    async def main() -> None:
        async with Cluster(f"{zk_server.connect}{chroot}") as c:
            await c.start_broker(1)
            await c.election.start()
            await c.create_topic("gone", {0: [1], 1: [1]})
            await until(c.has_state("gone", 1, (1, 0, [1])))
            await c.admin.create(DeleteTopicsTopicZNode.path("gone"))

            async def deleted() -> bool:
                return all([await c.admin.exists(TopicZNode.path("gone")) is None,
                            await c.admin.exists(ConfigEntityZNode.path("topics", "gone")) is None,
                            await c.admin.exists(DeleteTopicsTopicZNode.path("gone")) is None])
            await until(deleted)
    run(main())


def test_a_new_controller_finishes_what_the_old_one_left(zk_server, chroot):
    async def main() -> None:
        async with Cluster(f"{zk_server.connect}{chroot}") as c:
            for b in (1, 2):
                await c.start_broker(b)
            # A topic created before any controller waits for one.
            await c.create_topic("early", {0: [2, 1]})
            await c.election.start()
            await until(c.has_state("early", 0, (2, 0, [2, 1])))
            standby_zk = ZooKeeperClient(c.connect, session_timeout_ms=6000)
            await standby_zk.start()
            standby_election = ControllerElection(standby_zk, 101)
            standby = ZkController(ZkControllerStore(standby_zk, standby_election), 101)
            try:
                await standby_election.start()
                assert not standby_election.is_active
                await c.controller.close()
                await c.election.close()  # the controller steps down, then broker 2 dies with no controller
                await c.stop_broker(2)
                await until(c.has_state("early", 0, (1, 1, [1])))  # the standby took over and elected broker 1
                assert standby_election.is_active
            finally:
                await standby.close()
                await standby_election.close()
                await standby_zk.close()
    run(main())


def test_leadership_returns_to_preferred_replicas_by_request_and_by_the_imbalance_check(zk_server, chroot):
    async def main() -> None:
        async with Cluster(f"{zk_server.connect}{chroot}") as c:
            c.controller.leader_imbalance_check_interval_s = 0.5
            for b in (1, 2):
                await c.start_broker(b)
            await c.election.start()
            await c.create_topic("pref", {0: [1, 2], 1: [2, 1]})
            await until(c.has_state("pref", 0, (1, 0, [1, 2])))
            await c.stop_broker(1)
            await until(c.has_state("pref", 0, (2, 1, [2])))
            assert await c.controller.elect_leaders([("pref", 0)], preferred=True) == {
                ("pref", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE}
            await c.start_broker(1)
            assert await c.controller.elect_leaders([("pref", 0), ("pref", 1)], preferred=True) == {
                ("pref", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,  # broker 1 is not back in the ISR yet
                ("pref", 1): ErrorCode.ELECTION_NOT_NEEDED}
            # Broker 1's leader lets it back into the ISR (as a leader's conditional write does)...
            found = await c.admin.get(TopicPartitionStateZNode.path("pref", 0))
            await c.admin.set(TopicPartitionStateZNode.path("pref", 0),
                              TopicPartitionStateZNode.encode(2, 1, [2, 1], 1), found[1].version)
            # ...and the periodic imbalance check (no request) gives it its preferred partition back.
            await until(c.has_state("pref", 0, (1, 2, [2, 1])))
            assert await c.controller.elect_leaders(None, preferred=True) == {
                ("pref", 0): ErrorCode.ELECTION_NOT_NEEDED, ("pref", 1): ErrorCode.ELECTION_NOT_NEEDED}
    run(main())


def test_a_broker_that_restarted_between_two_looks_fails_over_like_a_dead_one(zk_server, chroot):
    """Broker 2's registration is replaced by a new session's (a restart quicker than the controller's
    watch): the new broker epoch tells the controller it restarted, so its leaderships move, as in Kafka."""
    async def main() -> None:
        async with Cluster(f"{zk_server.connect}{chroot}") as c:
            for b in (1, 2):
                await c.start_broker(b)
            await c.election.start()
            await c.create_topic("bounce", {0: [2, 1]})
            await until(c.has_state("bounce", 0, (2, 0, [2, 1])))
            old = c.sessions.pop(2)
            replacement = ZooKeeperClient(c.connect, session_timeout_ms=6000)
            await replacement.start()
            await old.close()  # the old registration goes...
            await replacement.create(BrokerIdZNode.path(2), BrokerIdZNode.encode(
                2, [Endpoint("PLAINTEXT", "localhost", 9002, "PLAINTEXT")], timestamp_ms=0), ephemeral=True)
            c.sessions[2] = replacement  # ...and a new one with a new broker epoch takes its place at once
            await until(c.has_state("bounce", 0, (1, 1, [1])))
    run(main())


async def assignment(c: Cluster, topic: str) -> tuple[dict, dict, dict]:
    found = await c.admin.get(TopicZNode.path(topic))
    a = TopicZNode.decode(topic, found[0])
    return dict(a.partitions), dict(a.adding_replicas), dict(a.removing_replicas)


async def join_isr(c: Cluster, topic: str, partition: int, isr: list[int]) -> None:
    """What a leader does when its followers catch up: the state znode with a bigger ISR, same leader epoch."""
    found = await c.admin.get(TopicPartitionStateZNode.path(topic, partition))
    s = TopicPartitionStateZNode.decode(found[0], found[1].version)
    await c.admin.set(TopicPartitionStateZNode.path(topic, partition), TopicPartitionStateZNode.encode(
        s.leader, s.leader_epoch, isr, s.controller_epoch), found[1].version)


def test_a_reassignment_adds_replicas_waits_for_them_to_be_in_sync_then_removes_the_old_ones(zk_server, chroot):
    async def main() -> None:
        async with Cluster(f"{zk_server.connect}{chroot}") as c:
            for b in (1, 2, 3):
                await c.start_broker(b)
            await c.election.start()
            await c.create_topic("t", {0: [1, 2], 1: [2, 1]})
            await until(c.has_state("t", 0, (1, 0, [1, 2])))
            await until(c.has_state("t", 1, (2, 0, [2, 1])))
            results = await c.controller.alter_partition_reassignments({("t", 0): [2, 3], ("t", 1): [1, 2],
                                                                        ("t", 7): [1], ("nope", 0): [1]})
            assert results == {("t", 0): (ErrorCode.NONE, None), ("t", 1): (ErrorCode.NONE, None),
                               ("t", 7): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None),
                               ("nope", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)}
            # Phase A: the target first, then the rest of the original replicas; 3 joins, 1 leaves. A reorder of
            # replicas already in sync completes at once, keeping its leader and leader epoch.
            assert await assignment(c, "t") == ({0: [2, 3, 1], 1: [1, 2]}, {0: [3]}, {0: [1]})
            assert await c.state("t", 0) == (1, 0, [1, 2])
            assert await c.state("t", 1) == (2, 0, [2, 1])
            await join_isr(c, "t", 0, [1, 2, 3])  # the new replica caught up
            # Phase B: leader 1 leaves, so the first in-sync target replica leads, with a new leader epoch.
            await until(c.has_state("t", 0, (2, 1, [2, 3])))
            assert await assignment(c, "t") == ({0: [2, 3], 1: [1, 2]}, {}, {})
            bad = await c.controller.alter_partition_reassignments({("t", 0): [2, 2], ("t", 1): [4], ("t", 2): None})
            assert bad[("t", 0)][0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
            assert bad[("t", 1)] == (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes "
                                     "broker 4, but no such broker is registered.")
            assert bad[("t", 2)] == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
    run(main())


def test_a_cancelled_reassignment_goes_back_to_the_original_replicas(zk_server, chroot):
    async def main() -> None:
        async with Cluster(f"{zk_server.connect}{chroot}") as c:
            for b in (1, 2, 3):
                await c.start_broker(b)
            await c.election.start()
            await c.create_topic("t", {0: [1, 2]})
            await until(c.has_state("t", 0, (1, 0, [1, 2])))
            assert await c.controller.alter_partition_reassignments({("t", 0): [3, 2]}) == {
                ("t", 0): (ErrorCode.NONE, None)}
            assert await assignment(c, "t") == ({0: [3, 2, 1]}, {0: [3]}, {0: [1]})
            assert await c.controller.alter_partition_reassignments({("t", 0): None}) == {
                ("t", 0): (ErrorCode.NONE, None)}
            # As Kafka (ORS = RS - AR), the original replicas come back in the order the move had them.
            assert await assignment(c, "t") == ({0: [2, 1]}, {}, {})
            assert await c.controller.alter_partition_reassignments({("t", 0): None}) == {
                ("t", 0): (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)}
    run(main())


def test_a_new_controller_resumes_a_move_and_the_legacy_znode_is_served_and_removed(zk_server, chroot):
    async def main() -> None:
        async with Cluster(f"{zk_server.connect}{chroot}") as c:
            for b in (1, 2, 3):
                await c.start_broker(b)
            await c.create_topic("t", {0: [1, 2], 1: [1, 2]})
            for p in (0, 1):  # the states a previous controller wrote
                await c.admin.create(TopicPartitionStateZNode.path("t", p), TopicPartitionStateZNode.encode(
                    1, 0, [1, 2], 1), make_parents=True)
            # A move in flight as another controller left it, and a legacy request for the other partition.
            await c.admin.set(TopicZNode.path("t"), TopicZNode.encode({0: [3, 2, 1], 1: [1, 2]}, "AAAAAAAAAAAAAAAAAAAAAQ",
                                                                      adding_replicas={0: [3]},
                                                                      removing_replicas={0: [1]}))
            await c.admin.create(ReassignPartitionsZNode.path, ReassignPartitionsZNode.encode({("t", 1): [2, 3]}))
            await c.election.start()
            await until(c.has_state("t", 0, (1, 0, [1, 2])))
            await until(c.has_state("t", 1, (1, 0, [1, 2])))

            async def moving() -> bool:
                return (await assignment(c, "t"))[1] == {0: [3], 1: [3]}
            await until(moving)
            await join_isr(c, "t", 0, [1, 2, 3])
            await join_isr(c, "t", 1, [1, 2, 3])

            async def done() -> bool:
                return (await assignment(c, "t") == ({0: [3, 2], 1: [2, 3]}, {}, {})
                        and await c.admin.exists(ReassignPartitionsZNode.path) is None)
            await until(done)
            assert await c.state("t", 0) == (3, 1, [2, 3])
            assert await c.state("t", 1) == (2, 1, [2, 3])
    run(main())


def test_a_dead_brokers_partitions_are_decided_concurrently(zk_server, chroot):
    """Issue 33: one partition at a time, the ZooKeeper round trips of a dead broker's partitions added up (1.2 s
    for 116) before the last had a leader; the controller pipelines them, as Kafka's does."""
    async def main() -> None:
        async with Cluster(f"{zk_server.connect}{chroot}") as c:
            for b in (1, 2, 3):
                await c.start_broker(b)
            await c.election.start()
            partitions = 60
            await c.create_topic("many", {p: [2, 1, 3] for p in range(partitions)})
            for p in range(partitions):
                await until(c.has_state("many", p, (2, 0, [2, 1, 3])))
            store = c.controller.store
            write = store.set_partition_state
            in_flight, most = 0, 0

            async def counting(*args, **kwargs):
                nonlocal in_flight, most
                in_flight += 1
                most = max(most, in_flight)
                try:
                    return await write(*args, **kwargs)
                finally:
                    in_flight -= 1
            store.set_partition_state = counting  # type: ignore[method-assign]
            await c.stop_broker(2)
            for p in range(partitions):
                await until(c.has_state("many", p, (1, 1, [1, 3])))
            assert most > 1, "the controller wrote the partition states one at a time"
    run(main())


def test_a_deposed_controller_deciding_many_partitions_stops_with_controller_moved(zk_server, chroot):
    """The concurrent decisions end as the serial ones did: a fenced write raises ControllerMovedError itself (the
    event is dropped), not a group of errors the event loop would retry."""
    async def main() -> None:
        async with Cluster(f"{zk_server.connect}{chroot}") as c:
            for b in (1, 2, 3):
                await c.start_broker(b)
            await c.election.start()
            await c.create_topic("moved", {p: [2, 1, 3] for p in range(8)})
            for p in range(8):
                await until(c.has_state("moved", p, (2, 0, [2, 1, 3])))
            await c.controller.idle()

            async def fenced(*_args, **_kwargs):
                raise ControllerMovedError("another broker is the controller")
            c.controller.store.set_partition_state = fenced  # type: ignore[method-assign]
            c.controller.context.live.discard(2)
            with pytest.raises(ControllerMovedError):
                await c.controller._reconcile([("moved", p) for p in range(8)])
    run(main())


def test_a_new_topics_states_are_written_in_one_write_and_its_deletion_in_another(zk_server, chroot):
    """Issue 32: one fenced write per partition raced on the topic's ``partitions`` parent and cost a round trip
    each; the controller writes a new topic's states together (a state written before is kept), and deletes a
    topic's znodes together, so every broker sees the topic appear and go whole."""
    async def main() -> None:
        async with Cluster(f"{zk_server.connect}{chroot}") as c:
            for b in (1, 2, 3):
                await c.start_broker(b)
            await c.election.start()
            await c.controller.idle()
            multi = c.controller_zk.multi
            writes: list[int] = []

            async def counting(ops):
                writes.append(len(ops))
                return await multi(ops)
            c.controller_zk.multi = counting  # type: ignore[method-assign]
            partitions = 40
            # A state already there (as a controller killed mid-create leaves it) stays as it is.
            await c.admin.multi([
                CreateOp(TopicZNode.path("batch"), TopicZNode.encode(
                    {p: [1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3] for p in range(partitions)}, "AAAAAAAAAAAAAAAAAAAAAQ")),
                CreateOp(TopicPartitionsZNode.path("batch")), CreateOp(TopicPartitionZNode.path("batch", 7)),
                CreateOp(TopicPartitionStateZNode.path("batch", 7), TopicPartitionStateZNode.encode(3, 4, [3, 1], 1))])
            for p in range(partitions):
                expected = (3, 4, [3, 1]) if p == 7 else (1 + p % 3, 0, [1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3])
                await until(c.has_state("batch", p, expected))
            await c.controller.idle()
            # A new topic's states are first written without looking (its parent and partition znodes created too),
            # which fails here; then the fence, the state and its partition znode of each new partition (the parent
            # existed), in one write.
            assert writes == [2 + 2 * partitions, 1 + 2 * (partitions - 1)]
            writes.clear()
            await c.admin.create(DeleteTopicsTopicZNode.path("batch"))

            async def deleted() -> bool:
                return await c.admin.exists(DeleteTopicsTopicZNode.path("batch")) is None
            await until(deleted)
            assert await c.admin.exists(TopicZNode.path("batch")) is None
            # the topic's tree and the request in one fenced delete (the fence, state and partition znode of each,
            # parent, topic, request)
            assert writes == [1 + 2 * partitions + 3]
    run(main())


def test_a_topic_of_more_partitions_than_one_write_takes_is_created_and_deleted_in_several(zk_server, chroot,
                                                                                        monkeypatch):
    """ZooKeeper refuses a request over 1 MB (jute.maxbuffer): the writes of a large topic's states and of its
    deletion are split, STATES_PER_MULTI partitions each, the topic znode deleted last."""
    from replication.metadata.zk import controller_store
    monkeypatch.setattr(controller_store, "STATES_PER_MULTI", 16)

    async def main() -> None:
        async with Cluster(f"{zk_server.connect}{chroot}") as c:
            await c.start_broker(1)
            await c.election.start()
            await c.controller.idle()
            multi = c.controller_zk.multi
            writes: list[list] = []

            async def recording(ops):
                writes.append(list(ops))
                return await multi(ops)
            c.controller_zk.multi = recording  # type: ignore[method-assign]
            await c.create_topic("large", {p: [1] for p in range(40)})
            for p in range(40):
                await until(c.has_state("large", p, (1, 0, [1])))
            await c.controller.idle()
            assert [len(ops) for ops in writes] == [1 + 1 + 2 * 16, 1 + 2 * 16, 1 + 2 * 8]  # fence, parent, znodes
            writes.clear()
            await c.admin.create(DeleteTopicsTopicZNode.path("large"))

            async def deleted() -> bool:
                return await c.admin.exists(DeleteTopicsTopicZNode.path("large")) is None
            await until(deleted)
            assert await c.admin.exists(TopicZNode.path("large")) is None
            assert [len(ops) for ops in writes] == [2 * 16, 2 * 16, 1 + 2 * 8 + 4]
            # the topic znode in the last (fenced), with its config and the request: nothing left behind
            assert [op.path for op in writes[2][-3:]] == [TopicZNode.path("large"), ConfigEntityZNode.path("topics", "large"),
                                                          DeleteTopicsTopicZNode.path("large")]
    run(main())
