"""One partition replica on this broker: its log, leadership, ISR, epochs and high watermark.

A leader tracks every follower's fetch position (``ReplicaState``, Kafka's Replica) and moves the high
watermark to the smallest log end offset among the in-sync replicas (and followers caught up within
``replica.lag.time.max.ms``), never backwards. It proposes ISR changes (a follower caught up: expand;
one lagging too long: shrink) that the replica manager submits to the cluster's metadata; the change
applies here only once committed (``commit_isr``), and meanwhile the high watermark and ISR checks use
the larger of the two sets, as Kafka's maximal ISR. A follower appends what its fetcher brings and
takes the leader's high watermark. A single node is a cluster whose ISR is itself: its high watermark
follows its log end offset as soon as an append lands.
Event-loop only; the log serializes its own appends.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from storage import AppendOrigin, FileRegion, records_bytes, release_records
from wire import ErrorCode

log = logging.getLogger("replication.partition")

__all__ = ["Partition", "PartitionError", "ReadResult", "ReplicaState", "read_bytes"]


class PartitionError(Exception):
    """A per-partition error to answer with; ``code`` is the Kafka error code."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or ErrorCode(code).name)
        self.code = code
        self.message = message


@dataclass(slots=True)
class ReadResult:
    """What a fetch of one partition returns."""

    records: FileRegion | bytes  # a file region (sendfile-able; released by whoever drops or sends it) or bytes
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: list | None = None
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset) when the fetcher's log diverged
    size: int = field(init=False)  # the records' bytes: asked by the fetch's byte budget, its wait and its answer

    def __post_init__(self) -> None:
        r = self.records
        self.size = r.size if isinstance(r, FileRegion) else len(r)


@dataclass(slots=True)
class ReplicaState:
    """What a leader knows of one follower's replica (Kafka's Replica): its fetch position and lag."""

    broker_id: int
    log_end_offset: int = -1  # -1: not known yet (no fetch since this broker became leader)
    log_start_offset: int = -1
    last_caught_up_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = -1
    last_fetch_time_ms: int = 0

    def update_fetch_state(self, fetch_offset: int, log_start_offset: int, fetch_time_ms: int,
                           leader_end_offset: int) -> None:
        """A fetch at ``fetch_offset``: caught up if it reached the leader's end now, or at its last fetch."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, fetch_time_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_end_offset = fetch_offset
        self.log_start_offset = log_start_offset
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = fetch_time_ms

    def is_caught_up(self, leader_end_offset: int, now_ms: int, lag_time_max_ms: int) -> bool:
        return leader_end_offset == self.log_end_offset or self.last_caught_up_time_ms > now_ms - lag_time_max_ms


def read_bytes(records: FileRegion | bytes) -> bytes:
    """The bytes of a read's records (bytes, or a file region, which is released)."""
    return records_bytes(records)


class Partition:
    """A replica of ``topic-partition`` hosted here, as leader, as follower, or neither (-1 leader)."""

    def __init__(self, topic: str, partition: int, topic_id: uuid.UUID, log, node_id: int,
                 on_high_watermark_changed: Callable[[Partition], None] | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.topic_id = topic_id
        self.log = log
        self.node_id = node_id
        self.leader_id = -1
        self.leader_epoch = -1
        self.partition_epoch = 0
        self.replicas: list[int] = []
        self.isr: list[int] = []
        # An ISR change submitted and not yet committed (Kafka's PendingExpandIsr / PendingShrinkIsr).
        self.pending_isr: list[int] | None = None
        self.remote_replicas: dict[int, ReplicaState] = {}
        # The offset this broker's leadership started at (the leader epoch's start offset).
        self.leader_epoch_start_offset = -1
        self._on_high_watermark_changed = on_high_watermark_changed

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.partition}, leader={self.leader_id}, epoch={self.leader_epoch})"

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.node_id

    @property
    def is_follower(self) -> bool:
        return self.leader_id >= 0 and self.leader_id != self.node_id

    @property
    def maximal_isr(self) -> list[int]:
        """The ISR with a pending expansion counted in (a pending shrink still counts the old members)."""
        if self.pending_isr is None:
            return self.isr
        return self.isr + [r for r in self.pending_isr if r not in self.isr]

    # -- leadership changes --------------------------------------------------------------------------
    def make_leader(self, leader_epoch: int, replicas: list[int], isr: list[int], partition_epoch: int = 0,
                    now_ms: int = 0) -> bool:
        """Lead ``leader_epoch``: record it in the leader-epoch cache; True if this is a new leadership.

        Followers in the ISR count as caught up now (as Kafka's resetReplicaState); their log end
        offsets are unknown until they fetch, so the high watermark waits for them.
        """
        new_leader = not self.is_leader or leader_epoch != self.leader_epoch
        if not new_leader and partition_epoch < self.partition_epoch:
            # An older state of this leadership (metadata read before this leader's own ISR change landed): its
            # ISR would bring back a smaller one and let the high watermark pass a member's log end offset, as
            # Kafka's leader ignores a stale partition epoch.
            return False
        self.leader_id = self.node_id
        self.partition_epoch = partition_epoch
        self.replicas = list(replicas)
        self.isr = list(isr)
        if new_leader or self.pending_isr == self.isr:
            self.pending_isr = None  # else this leader's own change is still in flight: its members keep counting
        if new_leader:
            self.leader_epoch = leader_epoch
            self.leader_epoch_start_offset = self.log.log_end_offset
            self.log.assign_epoch_start_offset(leader_epoch, self.log.log_end_offset)
            self.remote_replicas = {r: ReplicaState(r, last_caught_up_time_ms=now_ms if r in isr else 0)
                                    for r in replicas if r != self.node_id}
        else:
            for r in replicas:
                if r != self.node_id and r not in self.remote_replicas:
                    self.remote_replicas[r] = ReplicaState(r)
            for r in [r for r in self.remote_replicas if r not in replicas]:
                del self.remote_replicas[r]
        self.maybe_advance_high_watermark(now_ms)
        return new_leader

    def make_follower(self, leader_id: int, leader_epoch: int, replicas: list[int], isr: list[int],
                      partition_epoch: int = 0) -> bool:
        """Follow ``leader_id`` in ``leader_epoch``; True if the leader or epoch changed (the fetcher restarts)."""
        changed = leader_id != self.leader_id or leader_epoch != self.leader_epoch
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = list(replicas)
        self.isr = list(isr)
        self.pending_isr = None
        self.remote_replicas = {}
        self.leader_epoch_start_offset = -1
        return changed

    @property
    def high_watermark_behind_epoch_start(self) -> bool:
        """Leader: the high watermark is still below the offset this leadership started at (KIP-207). After
        an election the new leader learns the high watermark only as its followers fetch; until then a
        client must not be told a latest offset below data it may already have seen elsewhere."""
        return self.is_leader and self.leader_epoch_start_offset > self.log.high_watermark

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Kafka's fencing: a client's epoch older than ours is fenced, a newer one is unknown to us."""
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise PartitionError(ErrorCode.FENCED_LEADER_EPOCH)
        if current_leader_epoch > self.leader_epoch:
            raise PartitionError(ErrorCode.UNKNOWN_LEADER_EPOCH)

    def check_online(self) -> None:
        """As Kafka's getPartitionOrException: a partition whose log dir is offline answers KAFKA_STORAGE_ERROR
        whoever leads it, before any epoch or leadership check."""
        if self.log.is_offline:
            raise PartitionError(ErrorCode.KAFKA_STORAGE_ERROR,
                                 f"Partition {self.topic}-{self.partition} is in an offline log directory")

    def require_leader(self) -> None:
        """The offline check, then: a replica that does not lead answers NOT_LEADER_OR_FOLLOWER."""
        self.check_online()
        if not self.is_leader:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    # -- high watermark ------------------------------------------------------------------------------
    def maybe_advance_high_watermark(self, now_ms: int, lag_time_max_ms: int = 0) -> bool:
        """Leader: move the high watermark to the smallest log end offset among the (maximal) ISR and the
        followers caught up within ``lag_time_max_ms``; never backwards. True if it moved."""
        if self.leader_id != self.node_id:  # not is_leader: this runs on every append
            return False
        new_hw = self.log.log_end_offset
        if self.remote_replicas:
            isr = self.maximal_isr
            for replica in self.remote_replicas.values():
                if replica.log_end_offset < new_hw and (
                        replica.broker_id in isr
                        or (lag_time_max_ms > 0 and replica.log_end_offset >= 0
                            and replica.is_caught_up(self.log.log_end_offset, now_ms, lag_time_max_ms))):
                    new_hw = replica.log_end_offset
        if new_hw < 0 or not self.log.maybe_increment_high_watermark(new_hw):
            return False
        if self._on_high_watermark_changed is not None:
            self._on_high_watermark_changed(self)
        return True

    # -- followers seen from the leader ---------------------------------------------------------------
    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int, log_start_offset: int,
                                    now_ms: int, lag_time_max_ms: int) -> list[int] | None:
        """A follower fetched at ``fetch_offset``; returns the expanded ISR to propose, if it caught up.

        As Kafka: a follower joins the ISR once its log end offset reaches the high watermark and the
        start of this leader's epoch.
        """
        replica = self.remote_replicas.get(replica_id)
        if replica is None:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                 f"Replica {replica_id} is not a replica of {self.topic}-{self.partition}")
        moved = replica.log_end_offset != fetch_offset
        replica.update_fetch_state(fetch_offset, log_start_offset, now_ms, self.log.log_end_offset)
        if moved:  # as Kafka's updateFollowerFetchState: the high watermark can only move if the follower's end did
            self.maybe_advance_high_watermark(now_ms, lag_time_max_ms)
        if (self.pending_isr is None and replica_id not in self.isr and replica_id in self.replicas
                and fetch_offset >= self.log.high_watermark and fetch_offset >= self.leader_epoch_start_offset):
            return self.isr + [replica_id]
        return None

    def out_of_sync_replicas(self, now_ms: int, lag_time_max_ms: int) -> list[int]:
        """ISR members (the leader aside) that have not caught up within ``lag_time_max_ms``."""
        if not self.is_leader or self.pending_isr is not None:
            return []
        end = self.log.log_end_offset
        return [r for r in self.isr if r != self.node_id and r in self.remote_replicas
                and not self.remote_replicas[r].is_caught_up(end, now_ms, lag_time_max_ms)]

    def commit_isr(self, isr: list[int], partition_epoch: int, now_ms: int) -> None:
        """An ISR change was committed to the cluster's metadata: apply it, then maybe move the high watermark.
        A commit learned late (the metadata already showed it, and this leader proposed the next change since)
        changes nothing: the newer state stands and the newer proposal stays pending, its members counted."""
        if partition_epoch < self.partition_epoch or (partition_epoch == self.partition_epoch and self.isr == list(isr)):
            if self.pending_isr == list(isr):
                self.pending_isr = None
            return
        self.isr = list(isr)
        self.partition_epoch = partition_epoch
        if self.pending_isr == self.isr:
            self.pending_isr = None
        self.maybe_advance_high_watermark(now_ms)

    # -- appends -------------------------------------------------------------------------------------
    def append_records_to_leader(self, records: bytes | bytearray | memoryview, required_acks: int,
                                 min_insync_replicas: int, *, origin: str = AppendOrigin.CLIENT, now_ms: int = 0,
                                 keep_tail: bool = False):
        """Append as leader; returns the storage's append info. Raises PartitionError or storage errors.
        ``keep_tail``: reads wait at the log end (storage.Log.append_as_leader)."""
        log_ = self.log
        if self.leader_id != self.node_id or log_.is_offline:
            self.require_leader()  # raises (the offline check first)
        # As Kafka's effectiveMinIsr: min.insync.replicas above the replication factor counts as the
        # replication factor (a single replica with min.insync.replicas=2 takes acks=all produces).
        if required_acks == -1 and len(self.isr) < min_insync_replicas \
                and len(self.isr) < (min_isr := self.effective_min_isr(min_insync_replicas)):
            raise PartitionError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {len(self.isr)} is insufficient to satisfy the min.isr "
                f"requirement of {min_isr} for partition {self.topic}-{self.partition}",
            )
        info = log_.append_as_leader(records, self.leader_epoch, origin=origin, keep_tail=keep_tail)
        self.maybe_advance_high_watermark(now_ms)
        return info

    def effective_min_isr(self, min_insync_replicas: int) -> int:
        return min(min_insync_replicas, max(len(self.replicas), 1))

    def acks_all_error(self, required_offset: int, min_insync_replicas: int) -> int | None:
        """For an acks=all produce waiting for ``required_offset``: its answer once settled, None meanwhile.

        As Kafka's checkEnoughReplicasReachOffset: reached by the high watermark is NONE, unless the ISR
        has meanwhile shrunk below min.insync.replicas (NOT_ENOUGH_REPLICAS_AFTER_APPEND); leadership
        lost is NOT_LEADER_OR_FOLLOWER.
        """
        if self.leader_id != self.node_id:  # not is_leader: this runs on every acks=all append
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.log.high_watermark < required_offset:
            return None
        if len(self.isr) < min_insync_replicas and len(self.isr) < self.effective_min_isr(min_insync_replicas):
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    def append_records_as_follower(self, records: bytes | bytearray | memoryview, leader_high_watermark: int):
        """Append what the fetcher brought from the leader, then take the leader's high watermark."""
        info = self.log.append_as_follower(records)
        self.update_follower_high_watermark(leader_high_watermark)
        return info

    def update_follower_high_watermark(self, leader_high_watermark: int) -> None:
        before = self.log.high_watermark
        if self.log.update_high_watermark(leader_high_watermark) != before and self._on_high_watermark_changed:
            self._on_high_watermark_changed(self)

    def read(self, fetch_offset: int, max_bytes: int, *, read_committed: bool, min_one_message: bool,
             current_leader_epoch: int = -1, last_fetched_epoch: int = -1, from_follower: bool = False,
             allow_follower_read: bool = False) -> ReadResult:
        """Records from ``fetch_offset`` up to the high watermark (or last stable offset); a follower's
        fetch (``from_follower``) reads up to the log end offset.

        ``last_fetched_epoch`` (Fetch v12+): the epoch of the fetcher's last batch. As Kafka's
        Partition.readRecords, an unknown epoch is OFFSET_OUT_OF_RANGE, and a log that diverged
        (that epoch ended here before ``fetch_offset``) is answered with no records and the epoch's end.
        ``allow_follower_read``: a consumer's fetch that a follower may serve (KIP-392), up to its high watermark.
        """
        if from_follower or not allow_follower_read or not self.is_follower:
            self.require_leader()
        self.check_leader_epoch(current_leader_epoch)
        log_ = self.log
        hw = log_.high_watermark
        lso = log_.last_stable_offset
        if from_follower and fetch_offset == log_.log_end_offset and last_fetched_epoch in (-1, log_.latest_epoch):
            # A caught-up follower (most of a replica fetch session, each time any partition of it is written):
            # nothing to read, and its last epoch is the latest, which ends at the log end, so no divergence.
            return ReadResult(b"", hw, lso, log_.log_start_offset, [] if read_committed else None)
        if last_fetched_epoch >= 0:
            epoch, end_offset = log_.end_offset_for_epoch(last_fetched_epoch)
            if epoch < 0 or end_offset < 0:
                raise PartitionError(ErrorCode.OFFSET_OUT_OF_RANGE,
                                     f"Could not determine the end offset of the last fetched epoch {last_fetched_epoch}")
            if fetch_offset < log_.log_start_offset:
                raise PartitionError(ErrorCode.OFFSET_OUT_OF_RANGE,
                                     f"Received request for offset {fetch_offset} for partition {self.topic}-"
                                     f"{self.partition}, but the log starts at {log_.log_start_offset}")
            if epoch < last_fetched_epoch or end_offset < fetch_offset:
                return ReadResult(b"", hw, lso, log_.log_start_offset, [] if read_committed else None,
                                  diverging_epoch=(epoch, end_offset))
        max_offset = log_.log_end_offset if from_follower else lso if read_committed else hw
        info = log_.read(fetch_offset, max_bytes, max_offset=max_offset, min_one_message=min_one_message)
        records = info.records
        if info.first_entry_incomplete:
            # As Kafka: a first batch that does not fit is not sent in part; the consumer asks again
            # (with a larger limit, or this partition first) instead of failing on a truncated batch.
            release_records(records)
            records = b""
        aborted = None
        if read_committed:
            if fetch_offset >= max_offset:  # nothing to read (a long poll at the last stable offset): Kafka's
                aborted = []  # emptyFetchDataInfo answers no aborted transactions, without a search
            else:
                upper = info.next_offset_upper_bound if info.next_offset_upper_bound >= 0 else max_offset
                aborted = log_.collect_aborted_transactions(fetch_offset, upper)
        return ReadResult(records, hw, lso, log_.log_start_offset, aborted)
