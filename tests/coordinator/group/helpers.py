"""A coordinator on a fake clock and in-memory logs, with helpers to drive and inspect it."""

from __future__ import annotations

import asyncio
import functools
import itertools
import uuid
from dataclasses import replace

from coordinator.group import (
    FakeClock,
    GroupCoordinator,
    GroupCoordinatorConfig,
    InMemoryCoordinatorLogs,
    RequestInfo,
    StaticTopics,
    TopicInfo,
)
from coordinator.group import records as rec
from wire.messages import JoinGroupRequest, SyncGroupRequest
from wire.messages.join_group_request import JoinGroupRequestProtocol
from wire.messages.sync_group_request import SyncGroupRequestAssignment

TOPIC_A = TopicInfo("a", uuid.UUID(int=0xA), 4)
TOPIC_B = TopicInfo("b", uuid.UUID(int=0xB), 2)
TOPIC_C = TopicInfo("c", uuid.UUID(int=0xC), 3)

# Assignments computed at once (consumer.assignment.interval.ms 0, as Kafka's own coordinator tests do);
# test_consumer_protocol's interval tests set the default of 1 s.
CONFIG = GroupCoordinatorConfig(offsets_topic_num_partitions=5, group_initial_rebalance_delay_ms=0,
                                consumer_group_assignment_interval_ms=0,
                                streams_group_initial_rebalance_delay_ms=0, streams_group_assignment_interval_ms=0)


def run(test):
    """Run an async test function on a fresh event loop."""
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))
    return wrapper


def info(version: int, client_id: str = "client") -> RequestInfo:
    return RequestInfo(api_version=version, client_id=client_id, client_host="/127.0.0.1")


def subscription(*topics: str, version: int = 0, owned: dict[str, list[int]] | None = None) -> bytes:
    from wire import Writer
    from wire.messages import ConsumerProtocolSubscription
    from wire.messages.consumer_protocol_subscription import TopicPartition
    w = Writer()
    w.int16(version)
    ConsumerProtocolSubscription(
        topics=list(topics),
        owned_partitions=[TopicPartition(topic=t, partitions=p) for t, p in (owned or {}).items()],
    ).encode_into(w, version)
    return w.getvalue()


def assignment(partitions: dict[str, list[int]], version: int = 0) -> bytes:
    from wire import Writer
    from wire.messages import ConsumerProtocolAssignment
    from wire.messages.consumer_protocol_assignment import TopicPartition
    w = Writer()
    w.int16(version)
    ConsumerProtocolAssignment(assigned_partitions=[TopicPartition(topic=t, partitions=p)
                                                    for t, p in partitions.items()]).encode_into(w, version)
    return w.getvalue()


def join_request(group_id: str, member_id: str = "", protocols=(("range", None),), *, instance_id=None,
                 session_timeout_ms: int = 10_000, rebalance_timeout_ms: int = 30_000, topics=("a",),
                 protocol_type: str = "consumer") -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group_id, session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=rebalance_timeout_ms,
        member_id=member_id, group_instance_id=instance_id, protocol_type=protocol_type,
        protocols=[JoinGroupRequestProtocol(name=n, metadata=m if m is not None else subscription(*topics))
                   for n, m in protocols])


def sync_request(group_id: str, member_id: str, generation: int, assignments: dict[str, bytes] | None = None, *,
                 instance_id=None, protocol_type=None, protocol_name=None) -> SyncGroupRequest:
    return SyncGroupRequest(group_id=group_id, generation_id=generation, member_id=member_id,
                            group_instance_id=instance_id, protocol_type=protocol_type, protocol_name=protocol_name,
                            assignments=[SyncGroupRequestAssignment(member_id=m, assignment=a)
                                         for m, a in (assignments or {}).items()])


class Harness:
    def __init__(self, config: GroupCoordinatorConfig = CONFIG, topics=(TOPIC_A, TOPIC_B, TOPIC_C),
                 logs: InMemoryCoordinatorLogs | None = None, clock: FakeClock | None = None) -> None:
        self.config = config
        self.clock = clock or FakeClock()
        self.logs = logs or InMemoryCoordinatorLogs()
        self.topics = StaticTopics(topics)
        counter = itertools.count(1)
        self.coordinator = GroupCoordinator(config, node_id=1, topics=self.topics, log_factory=self.logs,
                                            clock=self.clock, new_uuid=lambda: uuid.UUID(int=next(counter)))

    @property
    def runtime(self):
        return self.coordinator.runtime

    async def settle(self) -> None:
        if not self.coordinator._started:
            self.coordinator.load_all()
        await self.runtime.settle()

    async def advance(self, ms: int) -> None:
        """Move the clock ``ms`` forward, one due timeout at a time, letting the shards process each."""
        await self.settle()
        target = self.clock.now_ms() + ms
        while (deadline := self.clock.next_deadline()) is not None and deadline <= target:
            self.clock.advance(deadline - self.clock.now_ms())
            await self.settle()
        self.clock.advance(target - self.clock.now_ms())
        await self.settle()

    def shard(self, group_id: str):
        return self.runtime.shard(self.coordinator.partition_for(group_id))

    def group(self, group_id: str):
        return self.shard(group_id).groups.groups.get(group_id)

    def records(self, group_id: str, since: int = 0) -> list[rec.CoordinatorRecord]:
        """Records written to the group's partition (from entry ``since``), decoded."""
        log = self.logs(self.coordinator.partition_for(group_id))
        return [rec.decode_record(k, v) for _, k, v in log.entries[since:]]

    def log_end(self, group_id: str) -> int:
        return self.logs(self.coordinator.partition_for(group_id)).log_end_offset

    def snapshot(self) -> dict:
        return {p: self.runtime.shard(p).snapshot() for p in self.runtime.loaded_partitions()}

    async def replayed(self) -> Harness:
        """A fresh coordinator loaded from this one's logs."""
        other = Harness(self.config, tuple(self.topics.all()), self.logs, FakeClock(self.clock.now_ms()))
        other.coordinator.load_all()
        await other.runtime.settle()
        return other

    async def assert_replay_matches(self) -> None:
        await self.settle()
        other = await self.replayed()
        assert other.snapshot() == self.snapshot()
        await other.coordinator.close()

    def spawn(self, coro) -> asyncio.Task:
        return asyncio.get_running_loop().create_task(coro)


def types(records) -> list[str]:
    names = []
    for r in records:
        name = type(r.key).__name__.removesuffix("Key")
        names.append(name + ("-" if r.value is None else ""))
    return names


__all__ = ["CONFIG", "Harness", "TOPIC_A", "TOPIC_B", "TOPIC_C", "assignment", "info", "join_request", "replace",
           "run", "subscription", "sync_request", "types"]
