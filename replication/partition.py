"""One partition replica on this broker: its log, leadership, ISR and epochs.

A single node is a cluster whose ISR is itself: the leader's high watermark follows its log end offset
as soon as an append lands. Followers and ISR changes extend this class when replication arrives.
Event-loop only; the log serializes its own appends.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from storage import AppendOrigin
from wire import ErrorCode

log = logging.getLogger("replication.partition")

__all__ = ["Partition", "PartitionError", "ReadResult"]


class PartitionError(Exception):
    """A per-partition error to answer with; ``code`` is the Kafka error code."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or ErrorCode(code).name)
        self.code = code
        self.message = message


@dataclass(slots=True)
class ReadResult:
    """What a fetch of one partition returns."""

    records: object  # bytes or a file region; empty bytes when nothing is available
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: list | None = None
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset) when the fetcher's log diverged

    @property
    def size(self) -> int:
        r = self.records
        return r.size if hasattr(r, "size") else len(r)  # type: ignore[arg-type]


class Partition:
    """A replica of ``topic-partition`` hosted here."""

    def __init__(self, topic: str, partition: int, topic_id: uuid.UUID, log, node_id: int) -> None:
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

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.partition}, leader={self.leader_id}, epoch={self.leader_epoch})"

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.node_id

    def make_leader(self, leader_epoch: int, replicas: list[int], isr: list[int], partition_epoch: int = 0) -> None:
        """Become leader for ``leader_epoch``: record it in the leader-epoch cache, start at the log end."""
        self.leader_id = self.node_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = list(replicas)
        self.isr = list(isr)
        self.log.assign_epoch_start_offset(leader_epoch, self.log.log_end_offset)
        self._maybe_advance_high_watermark()

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Kafka's fencing: a client's epoch older than ours is fenced, a newer one is unknown to us."""
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise PartitionError(ErrorCode.FENCED_LEADER_EPOCH)
        if current_leader_epoch > self.leader_epoch:
            raise PartitionError(ErrorCode.UNKNOWN_LEADER_EPOCH)

    def _require_leader(self) -> None:
        if not self.is_leader:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def _maybe_advance_high_watermark(self) -> bool:
        """The high watermark is the smallest log end offset in the ISR; alone, our own."""
        if self.isr == [self.node_id] or len(self.isr) <= 1:
            new_hw = self.log.log_end_offset
            if new_hw > self.log.high_watermark:
                self.log.high_watermark = new_hw
                return True
        return False

    def append_records_to_leader(self, records: bytes | bytearray | memoryview, required_acks: int,
                                 min_insync_replicas: int, *, origin: str = AppendOrigin.CLIENT):
        """Append as leader; returns the storage's append info. Raises PartitionError or storage errors."""
        self._require_leader()
        # As Kafka's effectiveMinIsr: min.insync.replicas above the replication factor counts as the
        # replication factor (a single replica with min.insync.replicas=2 takes acks=all produces).
        min_isr = min(min_insync_replicas, max(len(self.replicas), 1))
        if required_acks == -1 and len(self.isr) < min_isr:
            raise PartitionError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {len(self.isr)} is insufficient to satisfy the min.isr "
                f"requirement of {min_isr} for partition {self.topic}-{self.partition}",
            )
        info = self.log.append_as_leader(records, self.leader_epoch, origin=origin)
        self._maybe_advance_high_watermark()
        return info

    def read(self, fetch_offset: int, max_bytes: int, *, read_committed: bool, min_one_message: bool,
             current_leader_epoch: int = -1, last_fetched_epoch: int = -1) -> ReadResult:
        """Records from ``fetch_offset`` up to the high watermark (or last stable offset).

        ``last_fetched_epoch`` (Fetch v12+): the epoch of the fetcher's last batch. As Kafka's
        Partition.readRecords, an unknown epoch is OFFSET_OUT_OF_RANGE, and a log that diverged
        (that epoch ended here before ``fetch_offset``) is answered with no records and the epoch's end.
        """
        self._require_leader()
        self.check_leader_epoch(current_leader_epoch)
        log_ = self.log
        hw = log_.high_watermark
        lso = log_.last_stable_offset
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
        max_offset = lso if read_committed else hw
        info = log_.read(fetch_offset, max_bytes, max_offset=max_offset, min_one_message=min_one_message)
        records = info.records
        if info.first_entry_incomplete:
            # As Kafka: a first batch that does not fit is not sent in part; the consumer asks again
            # (with a larger limit, or this partition first) instead of failing on a truncated batch.
            if hasattr(records, "release"):
                records.release()
            records = b""
        aborted = None
        if read_committed:
            upper = info.next_offset_upper_bound if info.next_offset_upper_bound >= 0 else max_offset
            aborted = log_.collect_aborted_transactions(fetch_offset, upper)
        return ReadResult(records, hw, lso, log_.log_start_offset, aborted)
