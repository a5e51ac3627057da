"""One share-partition: the in-flight records a share group holds on one topic partition (Kafka's SharePartition).

State, for offsets ``start_offset .. end_offset - 1`` (the in-flight window; everything below
``start_offset`` is done, everything from ``end_offset`` on has never been delivered):

- ``_states``: a bytearray of ``RecordState`` per offset; ``_counts``: the delivery count per offset;
- ``_tokens``: per offset, the acquisition that holds it (0 = none). An ``Acquisition`` is one ShareFetch's
  lock for one member: its timer returns the offsets it still holds to AVAILABLE (or ARCHIVED at the
  delivery count limit) when ``record_lock_duration_ms`` passes.

- ``_in_flight``: Kafka's in-flight batches over the window (the new offsets each fetch acquired, or the persisted
  state batches after a load), each tracked whole or per offset as Kafka's SharePartition tracks it. They decide
  how a refused acknowledgement is worded (per batch or per offset), nothing else.

So an in-flight record costs 11 bytes plus its share of one Acquisition. The window only grows by
acquiring records at ``end_offset`` and only while it holds fewer than ``max_record_locks`` offsets; it
shrinks at the front when the first records reach a terminal state (the start offset moves on).

Records delivered half the delivery count limit times or more are redelivered fewer at a time and a record on
its last delivery alone (``_acquire_throttled``: Kafka 4.4's isolation of a poison record).

A record given up on — REJECTed, or released (acknowledgement, lock expiry, member gone) at the delivery count
limit — is passed to ``dead_letter`` (first, last, delivery count, cause) when set: when the share group's
dead-letter queue (KIP-1191) takes it (True), it stays ARCHIVING (holding the start offset, persisted as such)
until ``dead_letters_written``; else it is ARCHIVED at once. A share-partition loaded with ARCHIVING records
hands them over again (``resume_dead_letters``), as Kafka's. GAPs, aborted records and records below a moved
start are never dead letters.

Every change is marked dirty; ``take_dirty`` turns the dirty offsets into state batches for the share
coordinator (acquired records are written as available, as Kafka persists them). The object does no I/O:
``SharePartitionManager`` reads the log, persists, and answers. One event loop, no locks.
"""

from __future__ import annotations

import logging
import uuid
from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import groupby, pairwise

from coordinator.runtime.clock import Clock, TimerHandle
from coordinator.share.record_state import AcknowledgeType, RecordState
from coordinator.share.state_batch import StateBatch, combine

__all__ = ["CLIENT_REJECT", "DELIVERY_COUNT_EXCEEDED", "AcquiredRecords", "InvalidRecordStateError", "SharePartition",
           "SharePartitionConfig"]

log = logging.getLogger("pykbroker.coordinator.share")

_AVAILABLE, _ACQUIRED, _ACKNOWLEDGED, _ARCHIVING, _ARCHIVED = (int(s) for s in RecordState)
_ACQUIRED_BYTE = bytes((_ACQUIRED,))
# Kafka's ShareGroupDLQManager causes, the __dlq.errors.message header of a dead letter
CLIENT_REJECT = "Offset rejected by client."
DELIVERY_COUNT_EXCEEDED = "Offset delivery count exceeded the threshold."


class InvalidRecordStateError(Exception):
    """An acknowledgement of records the member does not hold (INVALID_RECORD_STATE), or (``invalid_request``)
    of offsets past the records in flight (INVALID_REQUEST); the message is Kafka 4.4's SharePartition's."""

    def __init__(self, message: str, invalid_request: bool = False) -> None:
        super().__init__(message)
        self.invalid_request = invalid_request


# Kafka 4.4's SharePartition messages for acknowledgements it refuses (the partition's error message)
NOT_IN_CACHE = "Batch record not found. The request batch offsets are not found in the cache."
FIRST_PAST_ACQUIRED = "Batch record not found. The first offset in request is past acquired records."
LAST_PAST_ACQUIRED = "Batch record not found. The last offset in request is past acquired records."
BATCH_NOT_ACQUIRED = "The batch cannot be acknowledged. The batch is not in the acquired state."
BATCH_NOT_OWNED = "Member is not the owner of batch record"
OFFSET_NOT_ACQUIRED = "The offset cannot be acknowledged. The offset is not acquired."
OFFSET_NOT_OWNED = "Member is not the owner of offset"
RENEW_DISABLED = "Renewing acquisition locks is not enabled for the group."  # share.renew.acknowledge.enable=false


def _first_of(batch: _InFlightBatch) -> int:
    return batch.first


def _batch_size_cuts(batches: list[tuple[int, int]], first: int, last: int, batch_size: int) -> list[int]:
    """Where Kafka's createBatches cuts new offsets ``first..last`` into ranges of at least ``batch_size``: at each
    log batch start that many past the current range's first offset (none when they are not more than that)."""
    if batch_size <= 0 or last - first + 1 <= batch_size:
        return []
    cuts, current = [], first
    for base, _ in batches:
        if base > last:
            break
        if base - current >= batch_size:
            cuts.append(base)
            current = base
    return cuts


def _cut(acquired: list[AcquiredRecords], cuts: list[int]) -> list[AcquiredRecords]:
    """``acquired`` with every range holding one of ``cuts`` (but as its first offset) split there."""
    out = []
    for a in acquired:
        first = a.first_offset
        for cut in cuts:
            if first < cut <= a.last_offset:
                out.append(AcquiredRecords(first, cut - 1, a.delivery_count))
                first = cut
        out.append(AcquiredRecords(first, a.last_offset, a.delivery_count))
    return out


@dataclass(frozen=True)
class SharePartitionConfig:
    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_record_locks: int = 2_000


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(slots=True)
class Acquisition:
    member_id: str
    handle: TimerHandle | None = None
    held: int = 0  # offsets still held; the acquisition is dropped at 0


_NOBODY = Acquisition("")


@dataclass(slots=True)
class _InFlightBatch:
    """One of Kafka's in-flight batches (a SharePartition cachedState entry): the range of new offsets one fetch
    acquired, or a persisted state batch after a load. Kafka tracks it whole (one state and one member for all its
    offsets) until an acquisition or acknowledgement of part of it makes it track it per offset, for good; which of
    the two decides how a refused acknowledgement is worded. Only the bounds and that flag live here."""

    first: int
    last: int
    per_offset: bool = False


@dataclass
class _Dirty:
    low: int | None = None
    high: int = -1
    start_moved: bool = False

    def mark(self, first: int, last: int) -> None:
        self.low = first if self.low is None else min(self.low, first)
        self.high = max(self.high, last)


@dataclass
class SharePartition:
    group_id: str
    topic: str
    topic_id: uuid.UUID
    partition: int
    config: SharePartitionConfig
    clock: Clock
    on_release: Callable[[], None] = lambda: None  # records became available again (wake long polls)
    dead_letter: Callable[[int, int, int, str], bool] | None = None  # (first, last, delivery count, cause)
    start_offset: int = 0
    state_epoch: int = 0
    _states: bytearray = field(default_factory=bytearray)
    _counts: array = field(default_factory=lambda: array("h"))
    _tokens: array = field(default_factory=lambda: array("q"))
    _acquisitions: dict[int, Acquisition] = field(default_factory=dict)
    _next_token: int = 1
    _dirty: _Dirty = field(default_factory=_Dirty)
    _start_to_write: int = 0
    _trimmed: list[StateBatch] = field(default_factory=list)  # terminal records that left the window, unwritten
    _in_flight: list[_InFlightBatch] = field(default_factory=list)  # Kafka's in-flight batches, by first offset
    read_offset: int = -1  # the fetch offset of its last first-pass read (Kafka's fetchOffsetMetadata)

    # -- load --------------------------------------------------------------------------------------------
    def load(self, start_offset: int, batches: list[StateBatch], state_epoch: int = 0) -> None:
        """Rebuild from persisted state: offsets a batch does not cover (below its end) are available, count 0."""
        self.start_offset = start_offset
        self.state_epoch = state_epoch
        end = max([b.last_offset + 1 for b in batches] + [start_offset])
        n = end - start_offset
        self._states = bytearray(n)
        self._counts = array("h", bytes(2 * n))
        self._tokens = array("q", bytes(8 * n))
        for b in batches:
            for off in range(max(b.first_offset, start_offset), b.last_offset + 1):
                i = off - start_offset
                self._states[i] = _AVAILABLE if b.delivery_state == _ACQUIRED else b.delivery_state
                self._counts[i] = b.delivery_count
        self._in_flight = [_InFlightBatch(b.first_offset, b.last_offset)
                           for b in sorted(batches, key=lambda b: b.first_offset) if b.last_offset >= start_offset]
        self._advance_start()
        self._dirty = _Dirty()
        self._trimmed = []
        self._start_to_write = self.start_offset

    def force_start_write(self) -> None:
        """The start offset is not persisted yet: the next write must carry it even with no state change."""
        self._dirty.start_moved = True

    @property
    def end_offset(self) -> int:
        return self.start_offset + len(self._states)

    @property
    def in_flight(self) -> int:
        return len(self._states)

    def state_of(self, offset: int) -> tuple[RecordState, int] | None:
        """(state, delivery count) of an in-flight offset (tests and describe)."""
        i = offset - self.start_offset
        if 0 <= i < len(self._states):
            return RecordState(self._states[i]), self._counts[i]
        return None

    # -- fetch -------------------------------------------------------------------------------------------
    def next_fetch_offset(self) -> int:
        """The first available in-flight offset (redelivery first, as Kafka), else the end offset."""
        i = self._states.find(_AVAILABLE)
        return self.start_offset + i if i >= 0 else self.end_offset

    def can_acquire(self) -> bool:
        return self._states.find(_AVAILABLE) >= 0 or len(self._states) < self.config.max_record_locks

    def acquire(self, member_id: str, batches: list[tuple[int, int]], max_records: int,
                record_limit: bool = False, archive: Callable[[int], bool] | None = None,
                batch_size: int = 0) -> list[AcquiredRecords]:
        """Acquire for ``member_id`` the available offsets of ``batches`` ((first, last) of each log batch read
        from ``next_fetch_offset``, control batches included), at most ``max_records`` — whole batches unless
        ``record_limit`` (Kafka's batch-optimized mode may pass the limit to end at a batch boundary).
        ``archive(offset)`` says which fresh offsets are archived rather than delivered (aborted transactions under
        read_committed). Acquired offsets with one delivery count form one range across adjacent batches, as
        Kafka 4.4 answers a fetch of several batches with one AcquiredRecords (its in-flight batch spans them),
        offsets compacted away between them included (the client acknowledges those as gaps); new offsets past
        ``batch_size`` of them (batch-optimized) are cut into ranges of at least that many at log batch boundaries,
        each an in-flight batch of its own, as Kafka 4.4's createBatches."""
        token = self._next_token
        self._next_token += 1
        if batches and self._redelivery_throttled(batches[0][0], batches[-1][1]):
            return self._acquire_throttled(member_id, token, batches[0][0], batches[-1][1], max_records, record_limit)
        acquired: list[AcquiredRecords] = []
        taken = 0
        cut_at = self._in_flight_starts()
        run_first = run_count = acquired_end = -1  # the open range: it runs on over adjacent batches, as Kafka's in-flight batch
        previous_last = -1
        new_first = -1  # the first new offset (past the end offset) read: Kafka's in-flight batch of this fetch
        for first, last in batches:
            if taken >= max_records:
                break
            if 0 <= previous_last < first - 1:
                first = previous_last + 1  # offsets compacted away between two batches are acquired with them
            previous_last = last
            if run_first >= 0 and first != acquired_end:
                acquired.append(AcquiredRecords(run_first, acquired_end - 1, run_count))
                run_first = -1
            if last >= self.end_offset:
                if len(self._states) >= self.config.max_record_locks and first >= self.end_offset:
                    break
                gap = self.end_offset
                if new_first < 0:
                    new_first = max(first, gap)
                self._grow(last + 1)
                if first > gap:  # offsets without a record before the first batch read (compacted away, or
                    # before the log start): archived
                    for off in range(gap, first):
                        self._states[off - self.start_offset] = _ARCHIVED
                    self._dirty.mark(gap, first - 1)
            lo = max(first, self.start_offset)
            for off in range(lo, last + 1):
                i = off - self.start_offset
                ok = self._states[i] == _AVAILABLE and (not record_limit or taken < max_records)
                if ok and archive is not None and self._counts[i] == 0 and archive(off):
                    self._states[i] = _ARCHIVED
                    self._dirty.mark(off, off)
                    ok = False
                if ok:
                    count = self._counts[i] + 1
                    self._states[i] = _ACQUIRED
                    self._counts[i] = count
                    self._tokens[i] = token
                    taken += 1
                    if run_first >= 0 and count == run_count and off not in cut_at:
                        continue
                    if run_first >= 0:
                        acquired.append(AcquiredRecords(run_first, off - 1, run_count))
                    run_first, run_count = off, count
                elif run_first >= 0:
                    acquired.append(AcquiredRecords(run_first, off - 1, run_count))
                    run_first = -1
            acquired_end = last + 1
        if run_first >= 0:
            acquired.append(AcquiredRecords(run_first, acquired_end - 1, run_count))
        if new_first >= 0:
            cuts = [] if record_limit else _batch_size_cuts(batches, new_first, self.end_offset - 1, batch_size)
            bounds = [new_first, *cuts, self.end_offset]
            self._in_flight.extend(_InFlightBatch(lo, hi - 1) for lo, hi in pairwise(bounds))
            if cuts:
                acquired = _cut(acquired, cuts)
        if taken:
            acquisition = Acquisition(member_id, held=taken)
            acquisition.handle = self.clock.call_later(self.config.record_lock_duration_ms,
                                                       lambda: self._lock_expired(token))
            self._acquisitions[token] = acquisition
            self._track_partly_acquired(token, acquired[0].first_offset, acquired[-1].last_offset)
        self._advance_start()
        return acquired

    # -- redelivery of records delivered often (Kafka 4.4 isolates a poison record) ----------------------------------
    def _throttle_limit(self) -> int:
        """Kafka's throttleRecordsDeliveryLimit: records delivered this often are redelivered fewer at a time."""
        return max(2, -(-self.config.delivery_count_limit // 2))

    def _redelivery_throttled(self, first: int, last: int) -> bool:
        """Whether an available offset of ``first..last`` in the window was delivered the throttle limit or more."""
        lo, hi = max(first, self.start_offset) - self.start_offset, min(last + 1, self.end_offset) - self.start_offset
        limit = self._throttle_limit()
        return any(self._states[i] == _AVAILABLE and self._counts[i] >= limit for i in range(lo, hi))

    def _acquire_throttled(self, member_id: str, token: int, first: int, last: int, max_records: int,
                           record_limit: bool) -> list[AcquiredRecords]:
        """Kafka 4.4's acquisition over its in-flight batches when one of ``first..last`` (the batches read) holds
        available records delivered the throttle limit (half the delivery count limit, at least 2) or more times:
        in-flight batches before it as usual; that one, only if nothing was acquired before it, tracked per offset
        and at most its size halved for each delivery past the limit (at least 1), a record on its last delivery
        but one only first and a record on its last delivery alone; then nothing more (no new records)."""
        limit, most = self._throttle_limit(), self.config.delivery_count_limit
        start, states, counts = self.start_offset, self._states, self._counts
        taken: list[int] = []  # window indexes acquired, in order
        for batch in self._in_flight_between(max(first, start), min(last, self.end_offset - 1)):
            if len(taken) >= max_records:
                break
            lo, hi = max(batch.first, first, start) - start, min(batch.last, last) - start
            available = [i for i in range(lo, hi + 1) if states[i] == _AVAILABLE]
            whole_lo = max(batch.first, start) - start
            if batch.per_offset:
                throttle = any(counts[i] >= limit for i in available)
            else:
                throttle = counts[whole_lo] >= limit
            if throttle and taken:
                break
            size = batch.last - batch.first + 1
            whole = batch.first >= first and batch.last <= last
            if not whole or batch.per_offset or throttle or (record_limit and size > max_records - len(taken)):
                if not batch.per_offset and len(available) != batch.last + 1 - start - whole_lo:
                    continue  # a batch tracked whole that is not available as a whole
                batch.per_offset = True
                got, cap = 0, -1
                for i in available:
                    count = counts[i]
                    if most > 2 and count == most - 1 and got:
                        break  # on its last delivery but one: first in a fetch of its own
                    if count >= limit and cap < 0:
                        cap = max(1, size >> (count - limit + 1))
                    taken.append(i)
                    got += 1
                    if (most > 2 and count + 1 == most) or (record_limit and len(taken) >= max_records) \
                            or got == cap:
                        break
                if throttle and got:
                    break
            elif len(available) == hi - lo + 1:
                taken.extend(range(lo, hi + 1))
        acquired: list[AcquiredRecords] = []
        cut_at = self._in_flight_starts()
        for i in taken:
            count = counts[i] + 1
            states[i], counts[i], self._tokens[i] = _ACQUIRED, count, token
            off = start + i
            if acquired and acquired[-1].last_offset == off - 1 and acquired[-1].delivery_count == count \
                    and off not in cut_at:
                acquired[-1] = AcquiredRecords(acquired[-1].first_offset, off, count)
            else:
                acquired.append(AcquiredRecords(off, off, count))
        if taken:
            acquisition = Acquisition(member_id, held=len(taken))
            acquisition.handle = self.clock.call_later(self.config.record_lock_duration_ms,
                                                       lambda: self._lock_expired(token))
            self._acquisitions[token] = acquisition
            self._track_partly_acquired(token, acquired[0].first_offset, acquired[-1].last_offset)
        return acquired

    def _in_flight_starts(self) -> set[int]:
        """Where an acquired range ends before the next one starts, as Kafka answers one range per in-flight batch
        it redelivers: the first offset of every in-flight batch, and the end offset (new records)."""
        return {b.first for b in self._in_flight} | {self.end_offset}

    def _track_partly_acquired(self, token: int, first: int, last: int) -> None:
        """Kafka acquires a whole in-flight batch as one, or part of one per offset, which it then tracks per offset:
        every in-flight batch among ``first..last`` that acquisition ``token`` took only part of."""
        tokens, start = self._tokens, self.start_offset
        for batch in self._in_flight_between(first, last):
            if not batch.per_offset and any(
                    t != token for t in tokens[max(batch.first, start) - start:batch.last + 1 - start]):
                batch.per_offset = True

    def _in_flight_between(self, first: int, last: int) -> list[_InFlightBatch]:
        """The in-flight batches holding any of ``first..last``, from the one holding ``first`` (its floor) on."""
        batches = self._in_flight
        i = max(bisect_right(batches, first, key=_first_of) - 1, 0)
        j = bisect_right(batches, last, key=_first_of)
        return [b for b in batches[i:j] if b.last >= first]

    def _grow(self, end: int) -> None:
        extra = end - self.end_offset
        if extra > 0:
            self._states.extend(bytes(extra))
            self._counts.extend(array("h", bytes(2 * extra)))
            self._tokens.extend(array("q", bytes(8 * extra)))

    # -- acknowledge -------------------------------------------------------------------------------------
    def acknowledge(self, member_id: str, first: int, last: int, types: list[int]) -> None:
        """One acknowledgement batch: ``acknowledge_batches`` of it alone."""
        self.acknowledge_batches(member_id, [(first, last, types)])

    def acknowledge_batches(self, member_id: str, batches: list[tuple[int, int, list[int]]],
                            renew_enabled: bool = True) -> None:
        """Apply a request's acknowledgement batches of this share-partition (one type for a batch's range, or one
        per offset), all or none, as Kafka 4.4's SharePartition: each is checked in order against the state before
        the request, offsets an earlier batch acknowledged counting as no longer acquired, and the first refusal
        raises InvalidRecordStateError with nothing applied (in-flight batches the checks made Kafka track per offset
        stay so). A RENEW while the group's share.renew.acknowledge.enable is false (``renew_enabled``) is refused
        where Kafka meets it: after the checks that the member holds its records. A batch wholly below the start
        offset is done already and is skipped without an error, as are the offsets of a batch below it."""
        touched: set[int] = set()
        for first, last, types in batches:
            if last < first or (len(types) != 1 and len(types) != last - first + 1):
                raise InvalidRecordStateError(f"bad acknowledgement batch {first}-{last} with {len(types)} types",
                                              invalid_request=True)
            if last >= self.start_offset:
                self._check_acquired(member_id, first, last, types, touched, renew_enabled)
        for first, last, types in batches:
            self._apply(member_id, first, last, types)

    def _apply(self, member_id: str, first: int, last: int, types: list[int]) -> None:
        """One checked acknowledgement batch: its offsets in the window the member holds change state."""
        if last < self.start_offset:
            log.debug("share group %s %s-%d: acknowledgement of %d-%d below the start offset %d skipped",
                      self.group_id, self.topic, self.partition, first, last, self.start_offset)
            return
        lo = max(first, self.start_offset) - self.start_offset
        hi = last + 1 - self.start_offset
        n = hi - lo
        if len(types) == 1 and types[0] in (AcknowledgeType.ACCEPT, AcknowledgeType.REJECT, AcknowledgeType.GAP) \
                and self._states.count(_ACQUIRED_BYTE, lo, hi) == n:
            # the common case, in slices: one state for the whole range
            self._drop_holds(lo, hi)
            state = _ACKNOWLEDGED if types[0] == AcknowledgeType.ACCEPT else _ARCHIVED
            self._states[lo:hi] = bytes((state,)) * n
            if types[0] == AcknowledgeType.REJECT:
                self._dead_letters(lo, hi, CLIENT_REJECT)
        else:
            for i in range(lo, hi):
                if self._states[i] != _ACQUIRED:  # an offset no in-flight batch holds (a gap): nothing to do
                    continue
                kind = types[0] if len(types) == 1 else types[i + self.start_offset - first]
                if kind == AcknowledgeType.RENEW:
                    self._renew(i, member_id)
                elif kind == AcknowledgeType.ACCEPT:
                    self._finish(i, _ACKNOWLEDGED)
                elif kind == AcknowledgeType.RELEASE:
                    if self._release(i):
                        self._dead_letters(i, i + 1, DELIVERY_COUNT_EXCEEDED)
                else:  # REJECT, GAP
                    self._finish(i, _ARCHIVED)
                    if kind == AcknowledgeType.REJECT:
                        self._dead_letters(i, i + 1, CLIENT_REJECT)
        self._dirty.mark(max(first, self.start_offset), last)
        self._advance_start()

    def _check_acquired(self, member_id: str, first: int, last: int, types: list[int], touched: set[int],
                        renew_enabled: bool = True) -> None:
        """Raise InvalidRecordStateError unless ``member_id`` holds every offset of ``first..last`` at or above the
        start offset that Kafka's in-flight batches hold, none of them in ``touched`` (acknowledged by an earlier
        batch of the request; the offsets this one acknowledges are added). Kafka 4.4's checks and words: offsets
        past the in-flight batches are an invalid request; an in-flight batch tracked whole is refused whole (not
        acquired, or another member's: worded per batch), one tracked per offset (or acknowledged in part, or per
        offset, or straddling the start offset: then tracked per offset from now on) by its first offset refused."""
        batches, start = self._in_flight, self.start_offset
        i = bisect_right(batches, first, key=_first_of) - 1
        if i < 0 and first < start <= last:
            i = bisect_right(batches, start, key=_first_of) - 1
        if i < 0:
            raise InvalidRecordStateError(NOT_IN_CACHE)
        sub = batches[i:bisect_right(batches, last, key=_first_of)]
        if sub[-1].last < first:
            raise InvalidRecordStateError(FIRST_PAST_ACQUIRED, invalid_request=True)
        if last > sub[-1].last:
            raise InvalidRecordStateError(LAST_PAST_ACQUIRED, invalid_request=True)
        for batch in sub:
            if batch.last < start:
                continue
            if not batch.per_offset:
                holder = self._batch_member(batch, touched)
                if holder is None:
                    batch.per_offset = True  # its offsets went separate ways: checked one by one
                elif holder == "":
                    raise InvalidRecordStateError(BATCH_NOT_ACQUIRED)
                elif holder != member_id:
                    raise InvalidRecordStateError(BATCH_NOT_OWNED)
            whole = batch.first >= first and batch.last <= last
            if not whole or batch.per_offset or len(types) > 1 or batch.first < start:
                batch.per_offset = True
                for off in range(max(first, batch.first, start), min(last, batch.last) + 1):
                    k = off - start
                    if self._states[k] != _ACQUIRED or off in touched:
                        raise InvalidRecordStateError(OFFSET_NOT_ACQUIRED)
                    if self._acquisitions.get(self._tokens[k], _NOBODY).member_id != member_id:
                        raise InvalidRecordStateError(OFFSET_NOT_OWNED)
                    if (types[0] if len(types) == 1 else types[off - first]) != AcknowledgeType.RENEW:
                        touched.add(off)
                    elif not renew_enabled:
                        raise InvalidRecordStateError(RENEW_DISABLED)
            elif types[0] != AcknowledgeType.RENEW:
                touched.update(range(batch.first, batch.last + 1))
            elif not renew_enabled:
                raise InvalidRecordStateError(RENEW_DISABLED)

    def _batch_member(self, batch: _InFlightBatch, touched: set[int]) -> str | None:
        """The member holding a whole in-flight batch ("" when it is not acquired, or acknowledged earlier in the
        request), or None when its offsets are in different hands (then Kafka would track it per offset)."""
        start = self.start_offset
        lo, hi = max(batch.first, start) - start, batch.last + 1 - start
        if touched and not touched.isdisjoint(range(lo + start, hi + start)):
            return ""
        acquired = self._states.count(_ACQUIRED_BYTE, lo, hi)
        if acquired == 0:
            return ""
        if acquired != hi - lo:
            return None
        tokens = self._tokens[lo:hi]
        if tokens.count(tokens[0]) == len(tokens):
            return self._acquisitions.get(tokens[0], _NOBODY).member_id
        members = {self._acquisitions.get(t, _NOBODY).member_id for t in set(tokens)}
        return members.pop() if len(members) == 1 else None

    def _drop_holds(self, lo: int, hi: int) -> None:
        """``_drop_hold`` for every index in ``lo..hi-1`` at once."""
        for token, held in Counter(self._tokens[lo:hi]).items():
            acquisition = self._acquisitions.get(token)
            if acquisition is not None:
                acquisition.held -= held
                if acquisition.held <= 0:
                    del self._acquisitions[token]
                    if acquisition.handle is not None:
                        acquisition.handle.cancel()
        self._tokens[lo:hi] = array("q", bytes(8 * (hi - lo)))

    def _renew(self, i: int, member_id: str) -> None:
        """Restart the lock of one held offset (RENEW, ShareFetch/ShareAcknowledge v2)."""
        self._drop_hold(i)
        token = self._next_token
        self._next_token += 1
        acquisition = Acquisition(member_id, held=1)
        acquisition.handle = self.clock.call_later(self.config.record_lock_duration_ms,
                                                   lambda: self._lock_expired(token))
        self._acquisitions[token] = acquisition
        self._tokens[i] = token

    def _drop_hold(self, i: int) -> None:
        token = self._tokens[i]
        self._tokens[i] = 0
        acquisition = self._acquisitions.get(token)
        if acquisition is not None:
            acquisition.held -= 1
            if acquisition.held <= 0:
                del self._acquisitions[token]
                if acquisition.handle is not None:
                    acquisition.handle.cancel()

    def _finish(self, i: int, state: int) -> None:
        self._drop_hold(i)
        self._states[i] = state

    def _release(self, i: int) -> bool:
        """ACQUIRED -> AVAILABLE, or ARCHIVED once the delivery count has reached the limit (then True)."""
        self._drop_hold(i)
        exhausted = self._counts[i] >= self.config.delivery_count_limit
        self._states[i] = _ARCHIVED if exhausted else _AVAILABLE
        return exhausted

    def _dead_letters(self, lo: int, hi: int, cause: str) -> None:
        """Hand window indexes ``lo..hi-1`` (just archived) to ``dead_letter``, a call per run of equal delivery
        counts; a run it takes is ARCHIVING until written."""
        if self.dead_letter is None:
            return
        start = lo
        for i in range(lo + 1, hi + 1):
            if i == hi or self._counts[i] != self._counts[start]:
                if self.dead_letter(self.start_offset + start, self.start_offset + i - 1, self._counts[start], cause):
                    self._states[start:i] = bytes((_ARCHIVING,)) * (i - start)
                start = i

    def dead_letters_written(self, first: int, last: int) -> bool:
        """The dead-letter queue wrote (or gave up on) ``first..last``: ARCHIVING -> ARCHIVED. Whether it changed."""
        lo, hi = max(first - self.start_offset, 0), min(last + 1 - self.start_offset, len(self._states))
        changed = False
        for i in range(lo, hi):
            if self._states[i] == _ARCHIVING:
                self._states[i] = _ARCHIVED
                changed = True
        if changed:
            self._dirty.mark(self.start_offset + lo, self.start_offset + hi - 1)
            self._advance_start()
        return changed

    def resume_dead_letters(self) -> None:
        """After a load: ARCHIVING records go to the dead-letter queue again (Kafka's maybeResumeDlqArchiving: the
        cause by their delivery count), or are ARCHIVED when it no longer takes them."""
        i, n = 0, len(self._states)
        while i < n:
            if self._states[i] != _ARCHIVING:
                i += 1
                continue
            j = i
            while j < n and self._states[j] == _ARCHIVING and self._counts[j] == self._counts[i]:
                j += 1
            self._states[i:j] = bytes((_ARCHIVED,)) * (j - i)
            self._dirty.mark(self.start_offset + i, self.start_offset + j - 1)
            cause = DELIVERY_COUNT_EXCEEDED if self._counts[i] >= self.config.delivery_count_limit else CLIENT_REJECT
            self._dead_letters(i, j, cause)
            i = j
        self._advance_start()

    def release_member(self, member_id: str) -> int:
        """Release every record ``member_id`` holds (its share session ended or it left the group)."""
        tokens = {t for t, a in self._acquisitions.items() if a.member_id == member_id}
        return self._release_tokens(tokens)

    def _lock_expired(self, token: int) -> None:
        released = self._release_tokens({token})
        if released:
            log.info("share group %s %s-%d: acquisition lock expired, %d records released", self.group_id,
                     self.topic, self.partition, released)

    def _release_tokens(self, tokens: set[int]) -> int:
        if not tokens:
            return 0
        released = 0
        low, high = None, -1
        for i, t in enumerate(self._tokens):
            if t in tokens and self._states[i] == _ACQUIRED:
                if self._release(i):
                    self._dead_letters(i, i + 1, DELIVERY_COUNT_EXCEEDED)
                released += 1
                off = self.start_offset + i
                low = off if low is None else low
                high = off
        for t in tokens:
            a = self._acquisitions.pop(t, None)
            if a is not None and a.handle is not None:
                a.handle.cancel()
        if released and low is not None:
            self._dirty.mark(low, high)
            self._advance_start()
            self.on_release()
        return released

    # -- start offset ------------------------------------------------------------------------------------
    def _advance_start(self) -> None:
        n = 0
        states = self._states
        while n < len(states) and states[n] in (_ACKNOWLEDGED, _ARCHIVED):
            n += 1
        if n:
            self._remember_trimmed(n)
            del self._states[:n]
            del self._counts[:n]
            del self._tokens[:n]
            self.start_offset += n
            self._dirty.start_moved = True
            self._forget_in_flight_below()

    def _forget_in_flight_below(self) -> None:
        """In-flight batches wholly below the start offset are done (one straddling it stays, as Kafka's)."""
        batches = self._in_flight
        n = 0
        while n < len(batches) and batches[n].last < self.start_offset:
            n += 1
        if n:
            del batches[:n]

    def move_start(self, offset: int) -> None:
        """Records below ``offset`` are gone (log start moved, or offsets were reset): archive them."""
        if offset <= self.start_offset:
            return
        n = min(offset - self.start_offset, len(self._states))
        for i in range(n):
            self._drop_hold(i)
            self._states[i] = _ARCHIVED
        self._remember_trimmed(n, written_too=True)
        del self._states[:n]
        del self._counts[:n]
        del self._tokens[:n]
        self.start_offset = offset
        self._dirty.start_moved = True
        self._forget_in_flight_below()
        self._advance_start()

    def _remember_trimmed(self, n: int, written_too: bool = False) -> None:
        """The first ``n`` (terminal) offsets leave the window: keep the states of those not written yet (changed
        since the last write; ``written_too``: all) for the next write, which carries what changed only, as Kafka's
        writes carry the batches of the change they persist."""
        lo, hi = 0, n
        if not written_too:
            if self._dirty.low is None:
                return
            lo = max(0, self._dirty.low - self.start_offset)
            hi = min(n, self._dirty.high + 1 - self.start_offset)
        if lo < hi:
            self._trimmed.extend(self._runs(lo, hi))
        if len(self._trimmed) > 64:
            self._trimmed = combine(self._trimmed)

    def _runs(self, lo: int, hi: int) -> list[StateBatch]:
        """State batches of window indexes ``lo..hi-1`` (acquired written as available), equal neighbours joined."""
        out: list[StateBatch] = []
        offset = self.start_offset + lo
        for (state, count), run in groupby(zip(self._states[lo:hi], self._counts[lo:hi], strict=True)):
            length = sum(1 for _ in run)
            out.append(StateBatch(offset, offset + length - 1, _AVAILABLE if state == _ACQUIRED else state, count))
            offset += length
        return out

    def reset(self, offset: int) -> None:
        """AlterShareGroupOffsets: forget everything in flight and start at ``offset``."""
        for a in self._acquisitions.values():
            if a.handle is not None:
                a.handle.cancel()
        self._acquisitions.clear()
        self.load(offset, [], self.state_epoch + 1)
        self._dirty.start_moved = True

    # -- persistence -------------------------------------------------------------------------------------
    def has_dirty(self) -> bool:
        return self._dirty.low is not None or self._dirty.start_moved or bool(self._trimmed)

    def take_dirty(self) -> tuple[int, list[StateBatch]]:
        """(start offset, state batches of the dirty in-flight offsets) to write; clears the dirty marks.

        The start offset written is the one the partition had at the previous write, as Kafka's SharePartition
        writes the start offset it had before applying the acknowledgements being persisted (it moves the
        start offset once the write succeeds): the persisted start offset, which DescribeShareGroupOffsets and
        ``kafka-share-groups`` report, lags by one write. Nothing is lost by it: the acknowledged and archived
        batches above the written start offset are in the state, and loading moves past them.
        """
        dirty, self._dirty = self._dirty, _Dirty()
        start, self._start_to_write = self._start_to_write, self.start_offset
        batches: list[StateBatch] = [b for b in self._trimmed if b.last_offset >= start]
        self._trimmed = []
        if dirty.low is not None:
            lo = max(dirty.low, self.start_offset) - self.start_offset
            hi = min(dirty.high, self.end_offset - 1) - self.start_offset
            if hi >= lo:
                batches.extend(self._runs(lo, hi + 1))
        return start, combine(batches)

    def delivery_complete_count(self, start: int) -> int:
        """Records at or above ``start`` (the start offset a write carries) whose delivery is complete, acknowledged
        or archived, as Kafka's SharePartition counts them for WriteShareGroupState: the offsets between ``start``
        and the window's start (all done) and the done ones in the window."""
        done = self._states.count(_ACKNOWLEDGED) + self._states.count(_ARCHIVED)
        return max(0, self.start_offset - start) + done

    def acquired_count(self) -> int:
        return sum(1 for s in self._states if s == _ACQUIRED)

    def close(self) -> None:
        for a in self._acquisitions.values():
            if a.handle is not None:
                a.handle.cancel()
        self._acquisitions.clear()
