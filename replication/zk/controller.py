"""The cluster controller on ZooKeeper: what the broker holding ``/controller`` does (Kafka's KafkaController).

While elected (``ControllerElection``), it watches the broker registrations, the topic list, each topic's
assignment and the pending deletions, and keeps every partition's state znode right:
- a new topic (or partitions added to one) gets its state znodes: leader = the first live replica, ISR =
  the live replicas, leader epoch 0 (``initial_leader_and_isr``);
- a broker that dies leaves every ISR it was in; partitions it led get a new leader from the live ISR,
  in one pass over all its partitions; with no live ISR replica the partition stays offline unless
  ``unclean.leader.election.enable`` (the topic's, else the broker default) allows a live replica outside
  the ISR (``offline_partition_election``);
- a broker that comes back leads the offline partitions whose ISR it is in;
- ``/admin/delete_topics/<t>`` deletes the topic's znodes and configs, then the request.
Every write goes through ``ControllerElection.fenced_multi``, so a deposed controller changes nothing, and
is conditional on the state znode's version (the partition epoch): a leader's concurrent ISR change makes
the write fail, and the controller rereads and decides again. Decisions read the current state znodes
first, so ISR changes made by leaders are always taken into account.

Events are handled one at a time by a single task (Kafka's ControllerEventManager); ZooKeeper watches only
enqueue. Brokers learn of the results by watching the same znodes (their metadata store), not by requests
from the controller.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from replication.elections import (
    NO_LEADER,
    LeaderAndIsr,
    imbalanced_brokers,
    initial_leader_and_isr,
    offline_partition_election,
    preferred_replica_election,
    remove_replica_from_isr,
)
from replication.zk.client import (
    BadVersionError,
    CreateOp,
    DeleteOp,
    NoNodeError,
    SetDataOp,
    ZooKeeperClient,
    ZooKeeperMultiError,
)
from replication.zk.controller_election import ControllerElection, ControllerMovedError
from replication.zk.znodes import (
    BrokerIdsZNode,
    ConfigEntityZNode,
    DeleteTopicsTopicZNode,
    DeleteTopicsZNode,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicsZNode,
    TopicZNode,
    ZNodeDecodeError,
)
from wire import ErrorCode

log = logging.getLogger("pykbroker.controller")

__all__ = ["ZkController"]

TopicPartition = tuple[str, int]


@dataclass
class _Context:
    """What the controller knows (Kafka's ControllerContext): live brokers and assignments."""

    live: set[int] = field(default_factory=set)
    # Broker epochs: the creation zxid of each live broker's registration (a new one means it restarted).
    epochs: dict[int, int] = field(default_factory=dict)
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)


class ZkController:
    """The controller duties of one broker, active only while ``election`` says it is the controller."""

    def __init__(self, zk: ZooKeeperClient, election: ControllerElection, broker_id: int, *,
                 unclean_leader_election_default: Callable[[], bool] = lambda: False,
                 auto_leader_rebalance: bool = True, leader_imbalance_check_interval_s: float = 300.0,
                 leader_imbalance_per_broker_percentage: int = 10) -> None:
        """With ``auto_leader_rebalance`` (auto.leader.rebalance.enable) leadership goes back to preferred
        replicas every ``leader_imbalance_check_interval_s`` for brokers whose share of preferred partitions
        they do not lead exceeds ``leader_imbalance_per_broker_percentage``, as Kafka's controller does."""
        self.zk = zk
        self.election = election
        self.broker_id = broker_id
        self._unclean_default = unclean_leader_election_default
        self.auto_leader_rebalance = auto_leader_rebalance
        self.leader_imbalance_check_interval_s = leader_imbalance_check_interval_s
        self.leader_imbalance_per_broker_percentage = leader_imbalance_per_broker_percentage
        self._rebalance_task: asyncio.Task | None = None
        self._events: asyncio.Queue[tuple[int, str, Any]] = asyncio.Queue()
        self._generation = 0  # bumped on every election and resignation: older watch events are dropped
        self._task: asyncio.Task | None = None
        self.context = _Context()

    # -- lifecycle (ControllerElection callbacks) -------------------------------------------------------
    async def on_elected(self, epoch: int, epoch_zk_version: int) -> None:
        self._generation += 1
        log.info("broker %d is the controller (epoch %d)", self.broker_id, epoch)
        self.context = _Context()
        self._enqueue("startup")
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="controller")
        if self.auto_leader_rebalance and self._rebalance_task is None:
            self._rebalance_task = asyncio.get_running_loop().create_task(self._rebalance_periodically(),
                                                                          name="leader-rebalance")

    async def on_resigned(self) -> None:
        self._generation += 1
        self.context = _Context()

    async def close(self) -> None:
        self._generation += 1
        for task in (self._task, self._rebalance_task):
            if task is not None:
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, Exception):  # noqa: BLE001
                    pass
        self._task = self._rebalance_task = None

    async def elect_leaders(self, partitions: list[TopicPartition] | None,
                            preferred: bool) -> dict[TopicPartition, int]:
        """ElectLeaders: a preferred (or unclean) election of each partition (every partition for None); the
        error code of each: NONE, ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
        ELIGIBLE_LEADERS_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION. NOT_CONTROLLER if this broker is not
        (or stops being) the controller."""
        if not self.active:
            raise ControllerMovedError(f"broker {self.broker_id} is not the controller")
        future: asyncio.Future[dict[TopicPartition, int]] = asyncio.get_running_loop().create_future()
        self._enqueue("elect", (partitions, preferred, future))
        return await future

    async def _rebalance_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.leader_imbalance_check_interval_s)
            if self.active:
                self._enqueue("imbalance")

    @property
    def active(self) -> bool:
        return self.election.is_active

    def topic_configs_changed(self, topic: str) -> None:
        """A topic's configs changed (unclean.leader.election.enable may now allow electing its offline
        partitions, as Kafka's controller reacts to that config): decide its partitions again."""
        if self.active:
            self._enqueue("topic", topic)

    def _enqueue(self, kind: str, arg: Any = None) -> None:
        self._events.put_nowait((self._generation, kind, arg))

    def _watch(self, kind: str, arg: Any = None) -> Callable[[Any], None]:
        generation = self._generation

        def fire(_event: Any) -> None:
            if generation == self._generation:
                self._enqueue(kind, arg)
        return fire

    async def idle(self) -> None:
        """Wait until every queued event has been handled (for tests and orderly shutdown)."""
        await self._events.join()

    async def _run(self) -> None:
        handlers: dict[str, Callable[[Any], Awaitable[None]]] = {"startup": self._startup, "brokers": self._brokers_changed, "topics": self._topics_changed,
                    "topic": self._topic_changed, "deletions": self._deletions_changed, "elect": self._elect,
                    "imbalance": self._check_leader_imbalance}
        while True:
            generation, kind, arg = await self._events.get()
            try:
                if generation == self._generation and self.active:
                    await handlers[kind](arg)
                elif kind == "elect" and not arg[2].done():
                    arg[2].set_exception(ControllerMovedError(f"broker {self.broker_id} is not the controller"))
            except ControllerMovedError:
                log.info("broker %d: controller event %s dropped, another broker is the controller", self.broker_id,
                         kind)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("controller event %s %s failed; retrying in 1 s", kind, arg or "")
                asyncio.get_running_loop().call_later(1.0, self._requeue, generation, kind, arg)
            finally:
                self._events.task_done()

    def _requeue(self, generation: int, kind: str, arg: Any) -> None:
        if generation == self._generation:
            self._events.put_nowait((generation, kind, arg))

    # -- events ----------------------------------------------------------------------------------------
    async def _startup(self, _arg: Any) -> None:
        await self.zk.ensure_path(DeleteTopicsZNode.path)
        self.context.epochs = await self._read_live_brokers()
        self.context.live = set(self.context.epochs)
        names = await self.zk.get_children(TopicsZNode.path, watch=self._watch("topics")) or []
        for name in names:
            await self._load_topic(name)
        log.info("controller %d: %d live brokers %s, %d topics", self.broker_id, len(self.context.live),
                 sorted(self.context.live), len(self.context.assignments))
        await self._reconcile(self._all_partitions())
        await self._deletions_changed(None)

    async def _read_live_brokers(self) -> dict[int, int]:
        """Live brokers and their broker epochs (their registration's creation zxid), watching for changes."""
        children = await self.zk.get_children(BrokerIdsZNode.path, watch=self._watch("brokers")) or []
        epochs = {}
        for child in children:
            if child.lstrip("-").isdigit():
                stat = await self.zk.exists(f"{BrokerIdsZNode.path}/{child}")
                if stat is not None:
                    epochs[int(child)] = stat.czxid
        return epochs

    async def _brokers_changed(self, _arg: Any) -> None:
        epochs = await self._read_live_brokers()
        live = set(epochs)
        dead, born = self.context.live - live, live - self.context.live
        # As Kafka's controller: a broker registered again with a new broker epoch restarted between two
        # looks (its old registration expired and a new one appeared); it fails over, then starts again,
        # so it does not come back leading with its old epoch and a stale high watermark.
        bounced = {b for b in live & self.context.live if epochs[b] != self.context.epochs.get(b)}
        if dead:
            log.info("controller %d: brokers %s failed", self.broker_id, sorted(dead))
        if bounced:
            log.info("controller %d: brokers %s restarted (new broker epochs)", self.broker_id, sorted(bounced))
            self.context.live = live - bounced
            await self._reconcile([tp for tp in self._all_partitions()
                                   if any(r in bounced for r in self._replicas(tp))])
        if born:
            log.info("controller %d: brokers %s started", self.broker_id, sorted(born))
        self.context.live, self.context.epochs = live, epochs
        changed = dead | born | bounced
        await self._reconcile([tp for tp in self._all_partitions() if any(r in changed for r in self._replicas(tp))])

    async def _topics_changed(self, _arg: Any) -> None:
        names = set(await self.zk.get_children(TopicsZNode.path, watch=self._watch("topics")) or [])
        for gone in set(self.context.assignments) - names:
            del self.context.assignments[gone]
        added = names - set(self.context.assignments)
        for name in sorted(added):
            await self._load_topic(name)
        await self._reconcile([tp for tp in self._all_partitions() if tp[0] in added])

    async def _topic_changed(self, name: str) -> None:
        """The topic's assignment (or its configs) changed: new partitions get states, offline ones another
        chance at an election."""
        if not await self._load_topic(name):
            return
        await self._reconcile([(name, p) for p in sorted(self.context.assignments[name])])

    async def _load_topic(self, name: str) -> bool:
        found = await self.zk.get(TopicZNode.path(name), watch=self._watch("topic", name))
        if found is None:
            self.context.assignments.pop(name, None)
            return False
        try:
            assignment = TopicZNode.decode(name, found[0])
        except ZNodeDecodeError as exc:
            log.error("controller %d: ignoring topic %s: %s", self.broker_id, name, exc)
            return False
        self.context.assignments[name] = {p: list(r) for p, r in assignment.partitions.items()}
        return True

    async def _elect(self, arg: tuple[list[TopicPartition] | None, bool, asyncio.Future]) -> None:
        partitions, preferred, future = arg
        try:
            # The registrations as they are now (a broker that just came back may be ahead of the watch, whose
            # event will still reconcile what changed).
            children = await self.zk.get_children(BrokerIdsZNode.path) or []
            live = {int(c) for c in children if c.lstrip("-").isdigit()}
            wanted = self._all_partitions() if partitions is None else partitions
            results = {tp: await self._elect_one(tp, preferred, live) for tp in wanted}
        except Exception as exc:  # the caller answers it; the controller goes on
            if not future.done():
                future.set_exception(exc)
            raise
        if not future.done():
            future.set_result(results)

    async def _elect_one(self, tp: TopicPartition, preferred: bool, live: set[int] | None = None) -> int:
        assignment = self._replicas(tp)
        if not assignment:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        for _attempt in range(5):
            current = await self._read_state(tp)
            if current is None:
                return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE if preferred else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
            state, version = current
            live = self.context.live if live is None else live
            if preferred:
                if state.leader == assignment[0]:
                    return ErrorCode.ELECTION_NOT_NEEDED
                new = preferred_replica_election(state, assignment, live)
                if new is None:
                    return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
            else:
                if state.leader != NO_LEADER and state.leader in live:
                    return ErrorCode.ELECTION_NOT_NEEDED
                new = offline_partition_election(state, assignment, live, unclean_allowed=True)
                if new is None:
                    return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
            if await self._write_state(tp, state, new, version):
                return ErrorCode.NONE
        return ErrorCode.UNKNOWN_SERVER_ERROR

    async def _check_leader_imbalance(self, _arg: Any) -> None:
        """Kafka's auto leader rebalance: preferred elections for brokers leading too few of their partitions."""
        partitions = self._all_partitions()
        leaders: dict[TopicPartition, int] = {}
        for tp in partitions:
            current = await self._read_state(tp)
            if current is not None:
                leaders[tp] = current[0].leader
        imbalanced = imbalanced_brokers(leaders, {tp: self._replicas(tp) for tp in partitions},
                                        self.leader_imbalance_per_broker_percentage)
        for broker, tps in sorted(imbalanced.items()):
            if broker not in self.context.live:
                continue
            log.info("controller %d: broker %d leads too few of its preferred partitions; moving %d back", self.broker_id,
                     broker, len(tps))
            for tp in tps:
                await self._elect_one(tp, preferred=True)

    async def _deletions_changed(self, _arg: Any) -> None:
        pending = await self.zk.get_children(DeleteTopicsZNode.path, watch=self._watch("deletions")) or []
        for name in sorted(pending):
            await self._delete_topic(name)

    # -- decisions -------------------------------------------------------------------------------------
    def _all_partitions(self) -> list[TopicPartition]:
        return [(t, p) for t, parts in self.context.assignments.items() for p in sorted(parts)]

    def _replicas(self, tp: TopicPartition) -> list[int]:
        return self.context.assignments.get(tp[0], {}).get(tp[1], [])

    async def _read_state(self, tp: TopicPartition) -> tuple[LeaderAndIsr, int] | None:
        found = await self.zk.get(TopicPartitionStateZNode.path(*tp))
        if found is None:
            return None
        state = TopicPartitionStateZNode.decode(found[0], found[1].version)
        return LeaderAndIsr(state.leader, state.leader_epoch, tuple(state.isr)), found[1].version

    async def _unclean_allowed(self, topic: str) -> bool:
        found = await self.zk.get(ConfigEntityZNode.path("topics", topic))
        if found is not None:
            try:
                value = ConfigEntityZNode.decode(found[0]).get("unclean.leader.election.enable")
            except ZNodeDecodeError:
                value = None
            if value is not None:
                return value.strip().lower() == "true"
        return self._unclean_default()

    async def _reconcile(self, partitions: list[TopicPartition]) -> None:
        """Bring each partition's state in line with the live brokers (create, shrink, elect); conditional
        writes that lose a race are decided again from the fresh state."""
        for tp in partitions:
            for _attempt in range(5):
                if await self._reconcile_one(tp):
                    break

    async def _reconcile_one(self, tp: TopicPartition) -> bool:
        assignment = self._replicas(tp)
        if not assignment:
            return True
        live = self.context.live
        current = await self._read_state(tp)
        if current is None:
            initial = initial_leader_and_isr(assignment, live)
            if initial is None:
                log.warning("controller %d: %s-%d has no live replica among %s; it stays offline", self.broker_id,
                            tp[0], tp[1], assignment)
                return True
            return await self._create_state(tp, initial)
        state, version = current
        new = state
        for r in assignment:
            if r not in live and (r in new.isr or r == new.leader):
                removed = remove_replica_from_isr(new, r)
                if removed is not None and (removed.leader, removed.isr) != (new.leader, new.isr):
                    new = LeaderAndIsr(removed.leader, state.leader_epoch + 1, removed.isr)
        if new.leader == NO_LEADER or new.leader not in live:
            elected = offline_partition_election(LeaderAndIsr(NO_LEADER, state.leader_epoch, new.isr), assignment,
                                                 live, await self._unclean_allowed(tp[0]))
            if elected is not None:
                new = elected
                if elected.unclean:
                    log.warning("controller %d: unclean leader election for %s-%d: broker %d leads outside the "
                                "ISR %s; records only the old ISR had may be lost", self.broker_id, tp[0], tp[1],
                                elected.leader, list(state.isr))
            elif new.leader != NO_LEADER:
                new = LeaderAndIsr(NO_LEADER, state.leader_epoch + 1, new.isr)
        if new == state:
            return True
        return await self._write_state(tp, state, new, version)

    async def _create_state(self, tp: TopicPartition, state: LeaderAndIsr) -> bool:
        topic, partition = tp
        ops = []
        if await self.zk.exists(TopicPartitionsZNode.path(topic)) is None:
            ops.append(CreateOp(TopicPartitionsZNode.path(topic)))
        if await self.zk.exists(TopicPartitionZNode.path(topic, partition)) is None:
            ops.append(CreateOp(TopicPartitionZNode.path(topic, partition)))
        ops.append(CreateOp(TopicPartitionStateZNode.path(topic, partition), TopicPartitionStateZNode.encode(
            state.leader, state.leader_epoch, state.isr, self.election.epoch)))
        try:
            await self.election.fenced_multi(ops)
        except ZooKeeperMultiError as exc:
            if isinstance(exc.error, NoNodeError) and await self.zk.exists(TopicZNode.path(topic)) is None:
                return True  # deleted meanwhile
            log.info("controller %d: creating the state of %s-%d raced (%s); deciding again", self.broker_id, topic,
                     partition, type(exc.error).__name__)
            return False
        log.info("controller %d: %s-%d online, leader %d, isr %s, leader epoch %d", self.broker_id, topic, partition,
                 state.leader, list(state.isr), state.leader_epoch)
        return True

    async def _write_state(self, tp: TopicPartition, old: LeaderAndIsr, new: LeaderAndIsr, version: int) -> bool:
        data = TopicPartitionStateZNode.encode(new.leader, new.leader_epoch, new.isr, self.election.epoch,
                                               1 if new.unclean else 0)
        try:
            await self.election.fenced_multi([SetDataOp(TopicPartitionStateZNode.path(*tp), data, version)])
        except ZooKeeperMultiError as exc:
            if isinstance(exc.error, (BadVersionError, NoNodeError)):
                return False  # a leader changed the ISR meanwhile, or the topic went: decide again
            raise
        log.info("controller %d: %s-%d leader %d -> %d, isr %s -> %s, leader epoch %d", self.broker_id, tp[0], tp[1],
                 old.leader, new.leader, list(old.isr), list(new.isr), new.leader_epoch)
        return True

    async def _delete_topic(self, name: str) -> None:
        if await self.zk.exists(TopicZNode.path(name)) is not None:
            await self.zk.delete(TopicZNode.path(name), recursive=True)
        self.context.assignments.pop(name, None)
        try:
            await self.zk.delete(ConfigEntityZNode.path("topics", name))
        except NoNodeError:
            pass
        try:
            await self.election.fenced_multi([DeleteOp(DeleteTopicsTopicZNode.path(name))])
        except ZooKeeperMultiError as exc:
            if not isinstance(exc.error, NoNodeError):
                raise
        log.info("controller %d: deleted topic %s", self.broker_id, name)
