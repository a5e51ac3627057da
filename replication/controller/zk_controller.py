"""The cluster controller on ZooKeeper: what the broker holding ``/controller`` does (Kafka's KafkaController).

While elected (``ControllerElection``), it watches the broker registrations, the topic list, each topic's
assignment and the pending deletions, and keeps every partition's state znode right:
- a new topic (or partitions added to one) gets its state znodes: leader = the first live replica, ISR =
  the live replicas, leader epoch 0 (``initial_leader_and_isr``);
- a broker that dies leaves every ISR it was in; partitions it led get a new leader from the live ISR,
  in one pass over all its partitions, up to 64 decided at once; with no live ISR replica the partition stays offline unless
  ``unclean.leader.election.enable`` (the topic's, else the broker default) allows a live replica outside
  the ISR (``offline_partition_election``);
- a broker that comes back leads the offline partitions whose ISR it is in;
- ``/admin/delete_topics/<t>`` deletes the topic's znodes and configs, then the request (the requests pending at
  once in one multi, as new topics found at once get their states in one: brokers list them all or none);
- partition reassignments (AlterPartitionReassignments, or the legacy ``/admin/reassign_partitions`` znode)
  run as Kafka's ``onPartitionReassignment`` (``replication.controller.reassignment``): the topic znode gets the full
  replica set with ``adding_replicas``/``removing_replicas``, the state znode of each moving partition is
  watched, and once every target replica is in the ISR one multi sets the assignment to the target and the
  state to ISR ∩ target with a new leader epoch. A new controller resumes every move the topic znodes show.
It reads and writes ZooKeeper only through ``ZkControllerStore`` (``replication.metadata.zk.controller_store``,
Kafka's KafkaZkClient): named operations, no paths or client here. Its writes of states, assignments and
requests are fenced on the controller epoch (``ControllerElection.fenced_multi``), so a deposed controller
changes none of them, and state writes are conditional on the state znode's version (the partition epoch): a leader's concurrent ISR change makes
the write fail, and the controller rereads and decides again. Decisions read the current state znodes
first, so ISR changes made by leaders are always taken into account.

Events are handled one at a time by a single task (Kafka's ControllerEventManager); ZooKeeper watches only
enqueue. Topic changes queued meanwhile make one event, their topics decided concurrently. Brokers learn of the results by watching the same znodes (their metadata store), not by requests
from the controller.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from replication.controller.elections import (
    NO_LEADER,
    LeaderAndIsr,
    imbalanced_brokers,
    initial_leader_and_isr,
    offline_partition_election,
    preferred_replica_election,
    remove_replica_from_isr,
)
from replication.controller.reassignment import (
    ReplicaAssignment,
    completion_state,
    reassignment_complete,
    revert_state,
)
from replication.metadata.zk.controller_election import ControllerMovedError
from replication.metadata.zk.controller_store import (
    REASSIGN_PARTITIONS_PATH,
    STATES_PER_MULTI,
    StaleWriteError,
    ZkControllerStore,
    ZNodeDecodeError,
)
from wire import ErrorCode

log = logging.getLogger("pykbroker.controller")

__all__ = ["ZkController"]

TopicPartition = tuple[str, int]
# Partitions whose states are read and written at once when many change (a broker died, the controller moved).
RECONCILE_IN_FLIGHT = 64


@dataclass
class _Context:
    """What the controller knows (Kafka's ControllerContext): live brokers and assignments."""

    live: set[int] = field(default_factory=set)
    # Broker epochs: the creation zxid of each live broker's registration (a new one means it restarted).
    epochs: dict[int, int] = field(default_factory=dict)
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    # Partitions being reassigned: their adding and removing replicas (the topic znode's).
    moving: dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=dict)


class ZkController:
    """The controller duties of one broker, active only while the store's election says it is the controller."""

    def __init__(self, store: ZkControllerStore, broker_id: int, *,
                 unclean_leader_election_default: Callable[[], bool] = lambda: False,
                 auto_leader_rebalance: bool = True, leader_imbalance_check_interval_s: float = 300.0,
                 leader_imbalance_per_broker_percentage: int = 10) -> None:
        """With ``auto_leader_rebalance`` (auto.leader.rebalance.enable) leadership goes back to preferred
        replicas every ``leader_imbalance_check_interval_s`` for brokers whose share of preferred partitions
        they do not lead exceeds ``leader_imbalance_per_broker_percentage``, as Kafka's controller does."""
        self.store = store
        self.election = store.election
        self.broker_id = broker_id
        self._unclean_default = unclean_leader_election_default
        # Leaders elected outside the ISR by this broker's controller (Kafka's UncleanLeaderElectionsPerSec).
        self.unclean_elections = 0
        self.auto_leader_rebalance = auto_leader_rebalance
        self.leader_imbalance_check_interval_s = leader_imbalance_check_interval_s
        self.leader_imbalance_per_broker_percentage = leader_imbalance_per_broker_percentage
        self._rebalance_task: asyncio.Task | None = None
        self._events: asyncio.Queue[tuple[int, str, Any]] = asyncio.Queue()
        self._generation = 0  # bumped on every election and resignation: older watch events are dropped
        self._task: asyncio.Task | None = None
        self.context = _Context()
        self._isr_watches: dict[TopicPartition, Callable[[Any], None]] = {}
        self._changed_topics: set[str] = set()  # topics whose change the queued "topic" event handles
        self._legacy: dict[TopicPartition, list[int]] = {}  # what /admin/reassign_partitions asks for
        store.election.listen(self.on_elected, self.on_resigned)

    # -- lifecycle (ControllerElection callbacks) -------------------------------------------------------
    async def on_elected(self, epoch: int, epoch_zk_version: int) -> None:
        self._generation += 1
        log.info("broker %d is the controller (epoch %d)", self.broker_id, epoch)
        self.context = _Context()
        self._isr_watches = {}
        self._changed_topics = set()
        self._enqueue("startup")
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="controller")
        if self.auto_leader_rebalance and self._rebalance_task is None:
            self._rebalance_task = asyncio.get_running_loop().create_task(self._rebalance_periodically(),
                                                                          name="leader-rebalance")

    async def on_resigned(self) -> None:
        self._generation += 1
        self.context = _Context()
        self._changed_topics = set()

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

    async def alter_partition_reassignments(self, reassignments: dict[TopicPartition, list[int] | None]
                                            ) -> dict[TopicPartition, tuple[int, str | None]]:
        """AlterPartitionReassignments: move each partition to its target replicas (None: cancel its move);
        (error code, message) of each, as Kafka's controller answers. NOT_CONTROLLER as ``elect_leaders``."""
        if not self.active:
            raise ControllerMovedError(f"broker {self.broker_id} is not the controller")
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._enqueue("reassign", (reassignments, future))
        return await future

    def ongoing_reassignments(self) -> dict[TopicPartition, ReplicaAssignment]:
        """Every move in progress as this controller has it (ListPartitionReassignments)."""
        if not self.active:
            raise ControllerMovedError(f"broker {self.broker_id} is not the controller")
        return {tp: self.reassignment(tp) for tp in sorted(self.context.moving)}

    def reassignment(self, tp: TopicPartition) -> ReplicaAssignment:
        """The controller's view of a partition's assignment (replicas, adding, removing)."""
        adding, removing = self.context.moving.get(tp, ((), ()))
        return ReplicaAssignment(tuple(self._replicas(tp)), adding, removing)

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
            self._topic_event(topic)

    def _topic_event(self, name: str) -> None:
        """A topic's assignment or configs changed: one queued event handles every topic changed until it runs
        (a CreatePartitions of many topics changes them all at once)."""
        if not self._changed_topics:
            self._enqueue("topic")
        self._changed_topics.add(name)

    def _topic_watch(self, name: str) -> Callable[[Any], None]:
        generation = self._generation

        def fire(_event: Any) -> None:
            if generation == self._generation:
                self._topic_event(name)
        return fire

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
                    "topic": self._changed_topics_event, "deletions": self._deletions_changed, "elect": self._elect,
                    "imbalance": self._check_leader_imbalance, "reassign": self._reassign,
                    "reassign_isr": self._reassignment_isr_changed, "reassign_znode": self._reassign_znode_changed}
        while True:
            generation, kind, arg = await self._events.get()
            try:
                if generation == self._generation and self.active:
                    await handlers[kind](arg)
                elif kind in ("elect", "reassign") and not arg[-1].done():
                    arg[-1].set_exception(ControllerMovedError(f"broker {self.broker_id} is not the controller"))
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
        await self.store.ensure_admin_paths()
        self.context.epochs = await self._read_live_brokers()
        self.context.live = set(self.context.epochs)
        names = await self.store.topic_names(watch=self._watch("topics"))
        await asyncio.gather(*(self._load_topic(name) for name in names))
        log.info("controller %d: %d live brokers %s, %d topics", self.broker_id, len(self.context.live),
                 sorted(self.context.live), len(self.context.assignments))
        await self._reconcile(self._all_partitions())
        await self._deletions_changed(None)
        # As Kafka's controller at failover: resume every move the topic znodes show, then the legacy requests.
        for tp in sorted(self.context.moving):
            await self._check_reassignment(tp)
        await self._reassign_znode_changed(None)

    async def _read_live_brokers(self) -> dict[int, int]:
        """Live brokers and their broker epochs (their registration's creation zxid), watching for changes."""
        return await self.store.live_broker_epochs(watch=self._watch("brokers"))

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
        names = set(await self.store.topic_names(watch=self._watch("topics")))
        for gone in set(self.context.assignments) - names:
            del self.context.assignments[gone]
            self._forget_moves(gone)
        added = names - set(self.context.assignments)
        await asyncio.gather(*(self._load_topic(name) for name in sorted(added)))
        await self._reconcile(await self._create_states([tp for tp in self._all_partitions() if tp[0] in added],
                                                        parents_exist=False))
        for tp in [tp for tp in sorted(self.context.moving) if tp[0] in added]:
            await self._check_reassignment(tp)

    async def _changed_topics_event(self, _arg: Any) -> None:
        """Every topic changed since the event was queued, decided concurrently (each topic its own writes); when
        one fails they are all decided again with the retried event."""
        names, self._changed_topics = self._changed_topics, set()
        try:
            async with asyncio.TaskGroup() as group:
                for name in sorted(names):
                    group.create_task(self._topic_changed(name))
        except BaseException as failed:
            self._changed_topics |= names
            if isinstance(failed, ExceptionGroup):
                raise failed.exceptions[0] from None
            raise

    async def _topic_changed(self, name: str) -> None:
        """The topic's assignment (or its configs) changed: new partitions get states, offline ones another
        chance at an election."""
        known = set(self.context.assignments.get(name, ()))
        if not await self._load_topic(name):
            return
        partitions = sorted(self.context.assignments[name])
        added = [(name, p) for p in partitions if p not in known]
        # Partitions added to a topic this controller knew have no znodes yet (their parent exists).
        created = set(added) - set(await self._create_states(added, parents_exist=True if known else None))
        await self._reconcile([(name, p) for p in partitions if (name, p) not in created])
        for tp in [tp for tp in sorted(self.context.moving) if tp[0] == name]:
            await self._check_reassignment(tp)  # a move another controller (or tool) wrote

    async def _load_topic(self, name: str) -> bool:
        try:
            assignment = await self.store.topic_assignment(name, watch=self._topic_watch(name))
        except ZNodeDecodeError as exc:
            log.error("controller %d: ignoring topic %s: %s", self.broker_id, name, exc)
            return False
        if assignment is None:
            self.context.assignments.pop(name, None)
            return False
        self.context.assignments[name] = {p: list(r) for p, r in assignment.partitions.items()}
        self._forget_moves(name)
        for p in assignment.partitions:
            adding, removing = assignment.adding_replicas.get(p, []), assignment.removing_replicas.get(p, [])
            if adding or removing:
                self.context.moving[(name, p)] = (tuple(adding), tuple(removing))
        return True

    async def _elect(self, arg: tuple[list[TopicPartition] | None, bool, asyncio.Future]) -> None:
        partitions, preferred, future = arg
        try:
            # The registrations as they are now (a broker that just came back may be ahead of the watch, whose
            # event will still reconcile what changed).
            live = await self.store.live_broker_ids()
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
                self.unclean_elections += int(new.unclean)
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
        pending = sorted(await self.store.topic_deletions(watch=self._watch("deletions")))
        if pending:  # together: every broker drops them in one image (Kafka 4.4 removes them in one batch)
            await self.store.delete_topics(pending)
        for name in pending:
            self.context.assignments.pop(name, None)
            self._forget_moves(name)
            log.info("controller %d: deleted topic %s", self.broker_id, name)

    # -- decisions -------------------------------------------------------------------------------------
    def _all_partitions(self) -> list[TopicPartition]:
        return [(t, p) for t, parts in self.context.assignments.items() for p in sorted(parts)]

    def _replicas(self, tp: TopicPartition) -> list[int]:
        return self.context.assignments.get(tp[0], {}).get(tp[1], [])

    async def _read_state(self, tp: TopicPartition) -> tuple[LeaderAndIsr, int] | None:
        state = await self.store.partition_state(tp)
        if state is None:
            return None
        return LeaderAndIsr(state.leader, state.leader_epoch, tuple(state.isr)), state.zk_version

    async def _unclean_allowed(self, topic: str) -> bool:
        value = (await self.store.topic_configs(topic)).get("unclean.leader.election.enable")
        if value is not None:
            return value.strip().lower() == "true"
        return self._unclean_default()

    async def _reconcile(self, partitions: list[TopicPartition]) -> None:
        """Bring each partition's state in line with the live brokers (create, shrink, elect); conditional
        writes that lose a race are decided again from the fresh state.

        Up to ``RECONCILE_IN_FLIGHT`` partitions are decided at once, their ZooKeeper reads and writes
        pipelined as Kafka's controller pipelines them: one at a time, a dead broker's 116 partitions took
        1.2 s of round trips before the last one had a leader again (issue 33)."""
        in_flight = asyncio.Semaphore(RECONCILE_IN_FLIGHT)

        async def reconcile(tp: TopicPartition) -> None:
            async with in_flight:
                for _attempt in range(5):
                    if await self._reconcile_one(tp):
                        break

        try:
            async with asyncio.TaskGroup() as group:
                for tp in partitions:
                    group.create_task(reconcile(tp))
        except ExceptionGroup as failed:  # the rest were cancelled; the event loop handles the first as before
            raise failed.exceptions[0] from None

    async def _create_states(self, partitions: list[TopicPartition],
                             parents_exist: bool | None = None) -> list[TopicPartition]:
        """New partitions' first states (``initial_leader_and_isr``), each topic's in one fenced write, as
        Kafka's controller creates a new topic's partition states at once; returns the partitions left to
        ``_reconcile`` (those that already had a state, had no live replica, or whose write raced).

        ``parents_exist`` known: the partitions are new, of topics created since this controller loaded its topics
        (False: an admin client writes only the topic znode) or added to topics it knew (True), and have no znodes
        yet; their states are written without reading first (a read per partition and per partition znode: 250
        reads before ten topics of 12 partitions had leaders), and a write that finds a znode there after all is
        decided again as a race."""
        states: dict[TopicPartition, tuple[LeaderAndIsr, int] | None] = \
            dict.fromkeys(partitions) if parents_exist is not None else await self._read_states(partitions)
        left: list[TopicPartition] = []
        by_topic: dict[str, dict[int, LeaderAndIsr]] = {}
        for tp in partitions:
            initial = initial_leader_and_isr(self._replicas(tp), self.context.live) if states[tp] is None else None
            if initial is None:
                left.append(tp)
            else:
                by_topic.setdefault(tp[0], {})[tp[1]] = initial

        async def create(topic: str, initial_states: dict[int, LeaderAndIsr]) -> None:
            try:
                await self.store.create_partition_states(topic, initial_states, parent_exists=parents_exist)
            except StaleWriteError as exc:
                if parents_exist is not None:  # znodes there after all (a controller killed mid-create): look first
                    left.extend(await self._create_states([(topic, p) for p in sorted(initial_states)]))
                    return
                log.info("controller %d: creating the states of %s raced (%s); deciding each again", self.broker_id,
                         topic, exc.reason)
                left.extend((topic, p) for p in sorted(initial_states))
                return
            self._log_online(topic, initial_states)

        if parents_exist is False and len(by_topic) > 1 and \
                sum(len(states) for states in by_topic.values()) <= STATES_PER_MULTI:
            try:  # topics created together (one CreateTopics) get their leaders together
                await self.store.create_new_topics_states(by_topic)
            except StaleWriteError:
                pass  # one of them raced: each topic alone
            else:
                for topic, initial_states in sorted(by_topic.items()):
                    self._log_online(topic, initial_states)
                return left
        await asyncio.gather(*(create(topic, states) for topic, states in by_topic.items()))  # topics at once
        return left

    def _log_online(self, topic: str, states: dict[int, LeaderAndIsr]) -> None:
        for p, state in sorted(states.items()):
            log.info("controller %d: %s-%d online, leader %d, isr %s, leader epoch %d", self.broker_id, topic, p,
                     state.leader, list(state.isr), state.leader_epoch)

    async def _read_states(self, partitions: list[TopicPartition]) -> dict[TopicPartition, tuple[LeaderAndIsr, int] | None]:
        """Every partition's state, up to ``RECONCILE_IN_FLIGHT`` reads pipelined at once."""
        in_flight = asyncio.Semaphore(RECONCILE_IN_FLIGHT)

        async def read(tp: TopicPartition) -> tuple[LeaderAndIsr, int] | None:
            async with in_flight:
                return await self._read_state(tp)

        return dict(zip(partitions, await asyncio.gather(*(read(tp) for tp in partitions)), strict=True))

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
        written = await self._write_state(tp, state, new, version)
        self.unclean_elections += int(written and new.unclean)
        return written

    async def _create_state(self, tp: TopicPartition, state: LeaderAndIsr) -> bool:
        topic, partition = tp
        try:
            await self.store.create_partition_state(tp, state)
        except StaleWriteError as exc:
            if exc.node_missing and not await self.store.topic_exists(topic):
                return True  # deleted meanwhile
            log.info("controller %d: creating the state of %s-%d raced (%s); deciding again", self.broker_id, topic,
                     partition, exc.reason)
            return False
        log.info("controller %d: %s-%d online, leader %d, isr %s, leader epoch %d", self.broker_id, topic, partition,
                 state.leader, list(state.isr), state.leader_epoch)
        return True

    async def _write_state(self, tp: TopicPartition, old: LeaderAndIsr, new: LeaderAndIsr, version: int) -> bool:
        try:
            await self.store.set_partition_state(tp, new, version)
        except StaleWriteError:
            return False  # a leader changed the ISR meanwhile, or the topic went: decide again
        log.info("controller %d: %s-%d leader %d -> %d, isr %s -> %s, leader epoch %d", self.broker_id, tp[0], tp[1],
                 old.leader, new.leader, list(old.isr), list(new.isr), new.leader_epoch)
        return True

    # -- reassignment (Kafka's onPartitionReassignment) ----------------------------------------------
    async def _reassign(self, arg: tuple[dict[TopicPartition, list[int] | None], asyncio.Future]) -> None:
        reassignments, future = arg
        try:
            results = {}
            for tp, target in reassignments.items():
                results[tp] = await (self._cancel_reassignment(tp) if target is None
                                     else self._start_reassignment(tp, target))
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)
            raise
        if not future.done():
            future.set_result(results)

    def _validate_target(self, tp: TopicPartition, target: list[int]) -> tuple[int, str | None]:
        """Kafka 4.4's checks of a manual assignment (its messages, as clients see them)."""
        if not self._replicas(tp):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        if not target:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
        seen: set[int] = set()
        for r in target:
            if r in seen:
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"The manual partition assignment includes the broker {r} more than once.")
            seen.add(r)
            if r not in self.context.live and r not in self._replicas(tp):
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"The manual partition assignment includes broker {r}, but no such broker is registered.")
        return ErrorCode.NONE, None

    async def _start_reassignment(self, tp: TopicPartition, target: list[int]) -> tuple[int, str | None]:
        """Phase A: the full replica set with adding and removing replicas in the topic znode (replicas a
        previous move was adding and this one drops leave the ISR in the same multi); then phase B at once if
        every target replica is already in sync."""
        code, message = self._validate_target(tp, target)
        if code != ErrorCode.NONE:
            return code, message
        for _attempt in range(5):
            current = self.reassignment(tp)
            new = current.reassign_to(target)
            state_ops: list[tuple[int, LeaderAndIsr, int]] = []
            found = await self._read_state(tp)
            if found is not None:
                state, version = found
                dropped = [r for r in state.isr if r not in new.replicas]
                if dropped or state.leader not in new.replicas:
                    shrunk = completion_state(state, ReplicaAssignment(new.replicas), self.context.live)
                    if shrunk is None:
                        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                f"No replica of {list(new.replicas)} is in sync to lead {tp[0]}-{tp[1]}")
                    state_ops.append((tp[1], shrunk, version))
            if await self._write_assignments(tp[0], {tp[1]: new}, state_ops):
                log.info("controller %d: reassigning %s-%d from %s to %s (adding %s, removing %s)", self.broker_id,
                         tp[0], tp[1], list(current.origin), list(target), list(new.adding), list(new.removing))
                await self._check_reassignment(tp)
                return ErrorCode.NONE, None
        return ErrorCode.UNKNOWN_SERVER_ERROR, f"{tp[0]}-{tp[1]} kept changing; try again"

    async def _cancel_reassignment(self, tp: TopicPartition) -> tuple[int, str | None]:
        if not self._replicas(tp):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        for _attempt in range(5):
            current = self.reassignment(tp)
            if not current.is_being_reassigned:
                return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
            state_ops: list[tuple[int, LeaderAndIsr, int]] = []
            found = await self._read_state(tp)
            if found is not None:
                state, version = found
                reverted = revert_state(state, current, self.context.live)
                if reverted is None:
                    return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            f"No original replica of {tp[0]}-{tp[1]} is in sync; the reassignment cannot be cancelled")
                if reverted != state:
                    state_ops.append((tp[1], reverted, version))
            if await self._write_assignments(tp[0], {tp[1]: current.revert()}, state_ops):
                log.info("controller %d: cancelled the reassignment of %s-%d; back to %s", self.broker_id, tp[0],
                         tp[1], list(current.origin))
                self._isr_watches.pop(tp, None)
                return ErrorCode.NONE, None
        return ErrorCode.UNKNOWN_SERVER_ERROR, f"{tp[0]}-{tp[1]} kept changing; try again"

    def _forget_moves(self, topic: str) -> None:
        for tp in [tp for tp in self.context.moving if tp[0] == topic]:
            del self.context.moving[tp]

    def _isr_watch(self, tp: TopicPartition) -> Callable[[Any], None]:
        """One watch callable per moving partition (Kafka's PartitionReassignmentIsrChangeHandler)."""
        watch = self._isr_watches.get(tp)
        if watch is None:
            watch = self._isr_watches[tp] = self._watch("reassign_isr", tp)
        return watch

    async def _reassignment_isr_changed(self, tp: TopicPartition) -> None:
        self._isr_watches.pop(tp, None)  # fired: the next look arms it again
        await self._check_reassignment(tp)

    async def _check_reassignment(self, tp: TopicPartition) -> None:
        """Phase B once every target replica is in the ISR; until then the state znode stays watched."""
        for _attempt in range(5):
            current = self.reassignment(tp)
            if not current.is_being_reassigned:
                await self._finish_legacy(tp)
                return
            s = await self.store.partition_state(tp, watch=self._isr_watch(tp))
            if s is None:
                return
            state = LeaderAndIsr(s.leader, s.leader_epoch, tuple(s.isr))
            if not reassignment_complete(current, state.isr):
                return
            new = completion_state(state, current, self.context.live)
            if new is None:
                log.info("controller %d: %s-%d has its target %s in sync but none can lead yet", self.broker_id,
                         tp[0], tp[1], list(current.target))
                return
            if await self._write_assignments(tp[0], {tp[1]: current.completed()},
                                             [(tp[1], new, s.zk_version)]):
                self._isr_watches.pop(tp, None)
                log.info("controller %d: reassignment of %s-%d completed: replicas %s, leader %d, isr %s, leader "
                         "epoch %d (removed %s)", self.broker_id, tp[0], tp[1], list(current.target), new.leader,
                         list(new.isr), new.leader_epoch, list(current.removing))
                await self._finish_legacy(tp)
                return

    async def _write_assignments(self, topic: str, changes: dict[int, ReplicaAssignment],
                                 state_ops: list[tuple[int, LeaderAndIsr, int]]) -> bool:
        """Rewrite the topic's assignment with ``changes`` and the partition states ``state_ops`` (partition,
        state, expected version) in one fenced, conditional write; False when a concurrent write won (the
        caller rereads and decides again)."""
        try:
            written = await self.store.set_topic_assignment(
                topic, {p: (a.replicas, a.adding, a.removing) for p, a in changes.items()}, state_ops)
        except StaleWriteError:
            await self._load_topic(topic)
            return False
        if not written:
            return True  # deleted meanwhile: nothing to move
        for p, a in changes.items():
            self.context.assignments.setdefault(topic, {})[p] = list(a.replicas)
            if a.is_being_reassigned:
                self.context.moving[(topic, p)] = (a.adding, a.removing)
            else:
                self.context.moving.pop((topic, p), None)
        return True

    async def _reassign_znode_changed(self, _arg: Any) -> None:
        """The legacy ``/admin/reassign_partitions`` request: start each valid move it lists (invalid ones are
        dropped from it, as Kafka's controller does); the znode goes once every listed move completed."""
        watch = self._watch("reassign_znode")
        try:
            wanted = await self.store.reassign_partitions_request(watch=watch)
        except ZNodeDecodeError as exc:
            log.error("controller %d: deleting unreadable %s: %s", self.broker_id, REASSIGN_PARTITIONS_PATH, exc)
            await self._write_legacy({})
            return
        if wanted is None:
            self._legacy = {}
            return
        fresh = {tp: t for tp, t in wanted.items() if self._legacy.get(tp) != t}
        self._legacy = dict(wanted)
        for tp, target in sorted(fresh.items()):
            code, message = await self._start_reassignment(tp, target)
            if code != ErrorCode.NONE:
                log.warning("controller %d: dropping the reassignment of %s-%d to %s from %s: %s %s", self.broker_id,
                            tp[0], tp[1], target, REASSIGN_PARTITIONS_PATH, ErrorCode(code).name, message or "")
                self._legacy.pop(tp, None)
        for tp in list(self._legacy):
            await self._finish_legacy(tp, write=False)
        if self._legacy != wanted:
            await self._write_legacy(self._legacy)

    async def _finish_legacy(self, tp: TopicPartition, write: bool = True) -> None:
        """A completed move leaves the legacy request; the znode is deleted when nothing is left in it."""
        target = self._legacy.get(tp)
        if target is None or self.reassignment(tp).is_being_reassigned:
            return
        del self._legacy[tp]
        if write:
            await self._write_legacy(self._legacy)

    async def _write_legacy(self, remaining: dict[TopicPartition, list[int]]) -> None:
        await self.store.set_reassign_partitions_request(remaining)

