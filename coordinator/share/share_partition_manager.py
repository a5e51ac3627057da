"""The broker side of share groups: share-partitions, their log reads, acknowledgements and persistence.

Kafka's SharePartitionManager. A ``SharePartition`` is loaded on the first ShareFetch of a group for a
topic partition from its persisted state at the share coordinator, which the group coordinator initialized
(InitializeShareGroupState, when a member subscribed) or AlterShareGroupOffsets wrote. State initialized
without a start offset (-1) starts where the group's ``share.auto.offset.reset`` (latest by default) says, and
that offset is written with the share-partition's next state write, as Kafka 4.4 does. A share-partition
without state is not served and none is created for it: as Kafka 4.4 answers it (its share coordinator refuses
to read uninitialized state, which its SharePartition turns into UNKNOWN_SERVER_ERROR), the partition's error is
UNKNOWN_SERVER_ERROR once the fetch completes without records (at ``max_wait_ms``), and the partition is left
out of an answer that carries records of others. A ShareFetch acquires records for the member from the first available offset (released
records before new ones), reading the log as a consumer would (read_committed per the group's
``share.isolation.level``: up to the last stable offset, records of aborted transactions archived, in memory
until the next write). As Kafka 4.4, a fetch of adjacent batches acquires them as one range, transaction markers
included (clients acknowledge those as gaps). An
acknowledgement (and a lock expiry) changes the in-memory state at once and is answered only once the
changed state batches are written to __share_group_state, so an acknowledged record survives ``kill -9``.
Writes of one share-partition are serialized and each carries the state as of its start, so a later write
never carries older state than an earlier one.

In a cluster the state lives with the share coordinator of the share-partition's __share_group_state
partition, reached through the ``SharePersister`` (the local coordinator or its RPCs). A share-partition is
served by the leader of its topic partition only: its reads and writes carry the leader epoch it was loaded
at, which fences an earlier leader's writes at the coordinator. When this broker stops leading the partition
(or leads it at a new epoch) the in-memory share-partition is dropped — acquired records it held are
available again as persisted — and the next leader loads the persisted state.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from coordinator.runtime.clock import Clock
from coordinator.runtime.errors import ApiError
from coordinator.share.persister import SharePersister
from coordinator.share.share_partition import (
    AcquiredRecords,
    InvalidRecordStateError,
    SharePartition,
    SharePartitionConfig,
)
from replication.partition import read_bytes
from replication.replica_manager import FetchedPartition, FetchPartition
from wire import CONTROL_FLAG_MASK, TRANSACTIONAL_FLAG_MASK, ErrorCode, iter_batch_headers

__all__ = ["ShareFetchResult", "SharePartitionManager", "ShareGroupSettings"]

log = logging.getLogger("pykbroker.coordinator.share")

UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."  # Errors.UNKNOWN_TOPIC_OR_PARTITION

SharePartitionKey = tuple[str, uuid.UUID, int]
# (group id, topic, partition, first offset, last offset, delivery count, cause, called once written) -> taken
DeadLetterSink = Callable[[str, str, int, int, int, int, str, Callable[[], None]], bool]


@dataclass(frozen=True)
class ShareGroupSettings:
    """The settings of one share group (broker defaults overlaid with its group configs)."""

    auto_offset_reset: str = "latest"
    read_committed: bool = False
    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_record_locks: int = 2_000
    renew_enabled: bool = True  # share.renew.acknowledge.enable


@dataclass
class ShareFetchResult:
    error_code: int = ErrorCode.NONE
    records: bytes = b""
    acquired: list[AcquiredRecords] | None = None
    acknowledge_error_code: int = ErrorCode.NONE
    uninitialized: bool = False  # no persisted state: an error only once the fetch has nothing else to answer
    omitted: bool = False  # left out of the answer (uninitialized, and other partitions returned records; loading)
    loading: bool = False  # its state was still being read from the share coordinator: not read, left out


class _Entry:
    """A share-partition with its initialization and its serialized writes."""

    def __init__(self) -> None:
        self.partition: SharePartition | None = None
        self.ready: asyncio.Future | None = None
        self.write_lock = asyncio.Lock()
        self.leader_epoch = -1  # the topic partition's leader epoch when the share-partition was loaded
        # records given up on (first, last, delivery count, cause), ARCHIVING: handed to the dead-letter queue once
        # the state write carrying that is done, as Kafka's SharePartition starts its DLQ write after the state write
        self.dead_letters: list[tuple[int, int, int, str]] = []


class SharePartitionManager:
    def __init__(self, replica_manager, persister: SharePersister, topic_name: Callable[[uuid.UUID], str | None],
                 settings: Callable[[str], ShareGroupSettings], clock: Clock,
                 dead_letters: DeadLetterSink | None = None,
                 dead_letters_enabled: Callable[[str], bool] = lambda group_id: True) -> None:
        """``dead_letters(group, topic, partition, first, last, delivery count, cause, done)``: where records a group
        gives up on go (the broker's share-group dead-letter queue, KIP-1191), None for nowhere;
        ``dead_letters_enabled(group)``: whether the group has one (its records are then ARCHIVING until written)."""
        self._rm = replica_manager
        self._dead_letters = dead_letters
        self._dead_letters_enabled = dead_letters_enabled
        self.persister = persister
        self._topic_name = topic_name
        self._settings = settings
        self.clock = clock
        self._entries: dict[SharePartitionKey, _Entry] = {}

    # -- share-partitions ---------------------------------------------------------------------------------
    def _leader_epoch(self, key: SharePartitionKey) -> int | None:
        """The leader epoch of the topic partition if this broker leads it, else None."""
        topic = self._topic_name(key[1])
        partition = self._rm.get_partition(topic, key[2]) if topic is not None else None
        if partition is None or not partition.is_leader:
            return None
        return partition.leader_epoch

    def _is_loaded(self, key: SharePartitionKey) -> bool:
        entry = self._entries.get(key)
        return entry is not None and entry.partition is not None

    def _drop(self, key: SharePartitionKey, why: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None and entry.partition is not None:
            entry.partition.close()
            log.info("share group %s %s-%d: share-partition dropped (%s)", key[0], entry.partition.topic, key[2], why)

    def on_leadership_changed(self, topic_id: uuid.UUID, partition: int) -> None:
        """The broker stopped leading ``topic_id-partition`` or leads it at a new epoch: its share-partitions
        are loaded again from the persisted state by whoever leads it next."""
        for key in [k for k in self._entries if k[1] == topic_id and k[2] == partition]:
            if self._leader_epoch(key) != self._entries[key].leader_epoch:
                self._drop(key, "leadership changed")

    def _entry_for(self, key: SharePartitionKey) -> _Entry:
        """The entry of ``key``, loading if not loaded yet (the loading started now if needed); _PartitionError at once
        when this broker does not lead the partition."""
        entry = self._entries.get(key)
        epoch = self._leader_epoch(key)
        if entry is not None and entry.partition is not None and entry.leader_epoch != epoch:
            self._drop(key, "leadership changed")
            entry = None
        if epoch is None:
            raise _PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER
                                  if self._topic_name(key[1]) is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if entry is None:
            entry = self._entries[key] = _Entry()
        if entry.partition is None and entry.ready is None:
            entry.ready = asyncio.ensure_future(self._initialize(key, entry))
        return entry

    async def share_partition(self, key: SharePartitionKey) -> SharePartition:
        entry = self._entry_for(key)
        if entry.partition is not None:
            return entry.partition
        assert entry.ready is not None
        try:
            await asyncio.shield(entry.ready)
        except Exception:
            entry.ready = None
            if self._entries.get(key) is entry and entry.partition is None:
                del self._entries[key]
            raise
        assert entry.partition is not None
        return entry.partition

    async def _initialize(self, key: SharePartitionKey, entry: _Entry) -> None:
        group_id, topic_id, index = key
        topic = self._topic_name(topic_id)
        partition = self._rm.get_partition(topic, index) if topic is not None else None
        if topic is None or partition is None:
            raise _PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if not partition.is_leader:
            raise _PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        leader_epoch = partition.leader_epoch
        settings = self._settings(group_id)
        sp = SharePartition(group_id, topic, topic_id, index, SharePartitionConfig(
            settings.record_lock_duration_ms, settings.delivery_count_limit, settings.max_record_locks),
            self.clock, on_release=lambda: self._on_release(key), dead_letter=self._dead_letter_of(key, topic))
        state = await self.persister.read_state(key, leader_epoch)
        if state is None:
            sp.close()
            raise _PartitionError(ErrorCode.UNKNOWN_SERVER_ERROR, uninitialized=True)
        if state.start_offset < 0:
            # Initialized by the group without an offset: share.auto.offset.reset decides now, and the offset is
            # written with the next state write (Kafka's SharePartition writes nothing on loading).
            start = self._reset_offset(partition, settings.auto_offset_reset)
            sp.load(start, [], state.state_epoch)
            log.info("share group %s %s-%d: share-partition starts at offset %d (share.auto.offset.reset=%s)",
                     group_id, topic, index, start, settings.auto_offset_reset)
        else:
            sp.load(state.start_offset, state.state_batches, state.state_epoch)
            log.info("share group %s %s-%d: share-partition loaded: start offset %d, %d in flight", group_id, topic,
                     index, sp.start_offset, sp.in_flight)
        log_start = partition.log.log_start_offset
        if sp.start_offset < log_start:
            sp.move_start(log_start)
        if self._leader_epoch(key) != leader_epoch:  # leadership moved while the state was read
            sp.close()
            raise _PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        sp.resume_dead_letters()  # ARCHIVING records a previous leader had not written to the DLQ yet
        entry.leader_epoch = leader_epoch
        entry.partition = sp
        self._rm.notify(topic, index)  # the fetches waiting for it (Kafka completes its delayed share fetches)
        letters, entry.dead_letters = entry.dead_letters, []
        self._hand_over(key, entry, letters)  # those are persisted as ARCHIVING already
        if sp.has_dirty():
            asyncio.ensure_future(self._persist_logged(key))
        if state.start_offset < 0:
            sp.force_start_write()  # after the check above: the offset goes with the next write, not its own

    def _dead_letter_of(self, key: SharePartitionKey, topic: str) -> Callable[[int, int, int, str], bool] | None:
        """A share-partition's ``dead_letter``: whether the group's dead-letter queue takes the records; those it
        takes are handed to it once their ARCHIVING state is written (``_hand_over``), and once written there
        they are ARCHIVED and that is persisted."""
        if self._dead_letters is None:
            return None

        def take(first: int, last: int, count: int, cause: str) -> bool:
            entry = self._entries.get(key)
            if entry is None or not self._dead_letters_enabled(key[0]):
                return False
            entry.dead_letters.append((first, last, count, cause))
            return True
        return take

    def _hand_over(self, key: SharePartitionKey, entry: _Entry, letters: list[tuple[int, int, int, str]]) -> None:
        """Give the dead-letter queue ``letters``, records ``entry`` took for it whose ARCHIVING state is written;
        those it no longer takes (the group's queue went meanwhile) are archived at once."""
        sink = self._dead_letters
        if sink is None or entry.partition is None:
            return
        for first, last, count, cause in letters:
            def done(first: int = first, last: int = last) -> None:
                self._dead_letters_written(key, first, last)
            if not sink(key[0], entry.partition.topic, key[2], first, last, count, cause, done):
                done()

    def _dead_letters_written(self, key: SharePartitionKey, first: int, last: int) -> None:
        entry = self._entries.get(key)
        if entry is not None and entry.partition is not None and entry.partition.dead_letters_written(first, last):
            self._on_release(key)

    async def initialize_uninitialized(self, key: SharePartitionKey, state_epoch: int, start_offset: int = -1) -> None:
        """A share-partition the group coordinator initializes at ``state_epoch`` (the group epoch, as Kafka 4.4):
        state starting at ``start_offset`` (-1: not yet known, share.auto.offset.reset decides at the first fetch)
        unless it has state already."""
        entry = self._entries.get(key)
        if (entry is not None and entry.partition is not None) or await self.persister.read_summary(key) is not None:
            return
        try:
            await self.persister.initialize_state(key, state_epoch, start_offset)
        except ApiError as exc:
            if exc.error_code != ErrorCode.FENCED_STATE_EPOCH:  # else initialized meanwhile: fine
                raise

    @staticmethod
    def _reset_offset(partition, strategy: str) -> int:
        if strategy == "earliest":
            return partition.log.log_start_offset
        if strategy.startswith("by_duration:"):
            # the first offset at or after now - duration; without a time index lookup here, the log start
            log.warning("share.auto.offset.reset=%s is served as earliest", strategy)
            return partition.log.log_start_offset
        return partition.log.high_watermark

    def _on_release(self, key: SharePartitionKey) -> None:
        entry = self._entries.get(key)
        if entry is None or entry.partition is None:
            return
        self._rm.notify(entry.partition.topic, entry.partition.partition)
        asyncio.ensure_future(self._persist_logged(key))

    async def _persist_logged(self, key: SharePartitionKey) -> None:
        try:
            await self.persist(key)
        except Exception as exc:
            log.warning("share group %s topic %s partition %d: writing state failed: %s", key[0], key[1], key[2], exc)

    async def persist(self, key: SharePartitionKey) -> None:
        """Write the dirty state of ``key`` to the share coordinator (serialized per share-partition)."""
        entry = self._entries.get(key)
        if entry is None or entry.partition is None:
            return
        async with entry.write_lock:
            sp = entry.partition
            if not sp.has_dirty():
                return
            start, batches = sp.take_dirty()
            letters, entry.dead_letters = entry.dead_letters, []
            try:
                await self.persister.write_state(key, sp.state_epoch, entry.leader_epoch, start, batches,
                                                 sp.delivery_complete_count(start))
            except ApiError as exc:
                entry.dead_letters[:0] = letters  # with the next write that succeeds
                if exc.error_code in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.FENCED_STATE_EPOCH):
                    self._drop(key, f"its state write was fenced: {ErrorCode(exc.error_code).name}")
                raise
            except BaseException:
                entry.dead_letters[:0] = letters
                raise
            self._hand_over(key, entry, letters)

    # -- fetch -------------------------------------------------------------------------------------------
    async def fetch(self, group_id: str, member_id: str, keys: list[SharePartitionKey], *, max_wait_ms: int,
                    min_bytes: int, max_bytes: int, max_records: int, record_limit: bool,
                    batch_size: int = 0, session_epoch: int = 0) -> dict[SharePartitionKey, ShareFetchResult]:
        """Acquire records of ``keys`` (the session's partitions in its order) for the member, as Kafka 4.4's
        fetchMessages: the order is rotated by ``session_epoch`` (round robin, from epoch 1 on) so that no
        partition starves the others when ``max_records`` or ``max_bytes`` binds."""
        keys = _rotated(keys, session_epoch)
        deadline = time.monotonic() + max(0, max_wait_ms) / 1000
        held: dict[SharePartitionKey, ShareFetchResult] = {}  # acquired by earlier passes: answered with the rest
        while True:
            got, taken = _sizes(held)
            results = _merged(held, await self._fetch_once(group_id, member_id, keys, max_bytes - got,
                                                           max_records - taken, record_limit, batch_size))
            got, taken = _sizes(results)
            if got >= max(1, min_bytes) or got >= max_bytes or taken >= max_records \
                    or any(r.error_code and not r.uninitialized for r in results.values()) or not keys:
                return _answered(results)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _answered(results)
            held = {k: r for k, r in results.items() if r.acquired}
            if any(r.loading and self._is_loaded(k) for k, r in results.items()):
                continue  # loaded while this pass ran (its wake-up came before this wait): served at once
            watch = [(self._topic_name(k[1]), k[2]) for k in keys if self._topic_name(k[1]) is not None]
            if not await self._rm.wait_for(watch, remaining):
                return _answered(_merged(held, await self._fetch_once(
                    group_id, member_id, keys, max_bytes - got, max_records - taken, record_limit, batch_size)))

    async def _fetch_once(self, group_id: str, member_id: str, keys: list[SharePartitionKey], max_bytes: int,
                          max_records: int, record_limit: bool,
                          batch_size: int = 0) -> dict[SharePartitionKey, ShareFetchResult]:
        """One read and acquisition, as Kafka 4.4's DelayedShareFetch: every share-partition that can acquire gets
        an equal share of ``max_bytes`` (the remainder to the first); those whose next fetch offset moved since
        their last read are read first (one pass over the log: the first with data may pass its share by a
        batch), the others in a second pass, and records are acquired (up to ``max_records`` in all) from the
        second pass's partitions first, then the first's: a partition that just answered records comes after
        the rest."""
        out: dict[SharePartitionKey, ShareFetchResult] = {}
        ready: list[tuple[SharePartitionKey, SharePartition]] = []
        for key, loaded in (await self._loaded(keys)).items():
            if isinstance(loaded, ShareFetchResult):
                out[key] = loaded
                continue
            if isinstance(loaded, _PartitionError):
                out[key] = ShareFetchResult(loaded.code, uninitialized=loaded.uninitialized)
                continue
            if not isinstance(loaded, SharePartition):
                log.warning("share group %s: share-partition %s-%d unavailable: %s", group_id, key[1], key[2], loaded)
                out[key] = ShareFetchResult(getattr(loaded, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR))
                continue
            out[key] = ShareFetchResult()
            if loaded.can_acquire():
                ready.append((key, loaded))
        if not ready or max_bytes <= 0 or max_records <= 0:
            return out
        share, extra = divmod(max_bytes, len(ready))
        offsets = {key: sp.next_fetch_offset() for key, sp in ready}
        moved = [(key, sp) for key, sp in ready if sp.read_offset != offsets[key]]
        settled = [(key, sp) for key, sp in ready if sp.read_offset == offsets[key]]
        reads: dict[SharePartitionKey, FetchedPartition] = {}
        for part in (moved, settled):
            wanted = [FetchPartition(sp.topic, sp.partition, offsets[key], share + (extra if key == ready[0][0] else 0))
                      for key, sp in part]
            for (key, sp), fetched in zip(part, self._rm.read_partitions(wanted, max_bytes, self._settings(
                    group_id).read_committed), strict=True):
                if part is moved and fetched.error_code == ErrorCode.NONE:
                    sp.read_offset = offsets[key]
                reads[key] = fetched
        records_left = max_records
        for key, sp in settled + moved:
            if records_left > 0 or reads[key].error_code != ErrorCode.NONE:
                out[key] = result = self._acquire(sp, member_id, offsets[key], reads[key], records_left,
                                                  record_limit, batch_size)
                records_left -= sum(a.last_offset - a.first_offset + 1 for a in result.acquired or [])
        return out

    async def _loaded(self, keys: list[SharePartitionKey]) -> dict[SharePartitionKey, _Loaded]:
        """Each of ``keys`` (in order) with its share-partition if loaded, the error its loading raised, or a
        ``loading`` result while it is still being loaded. As Kafka 4.4's DelayedShareFetch, which acquires only
        share-partitions already initialized (their state read from the share coordinator) and is completed as
        soon as one of them finishes initializing: share-partitions still loading are left to load in the
        background (each wakes the fetches waiting on its partition once loaded, see ``_initialize``); when none
        is loaded yet, the first to finish loading is waited for and is the only one served, so a member's first
        fetch of several new share-partitions answers the first loaded (on Kafka usually one of them) and the
        others come with its next fetches."""
        found: dict[SharePartitionKey, _Loaded] = {}
        loading: dict[SharePartitionKey, tuple[_Entry, asyncio.Future]] = {}
        for key in keys:
            try:
                entry = self._entry_for(key)
            except _PartitionError as exc:
                found[key] = exc
                continue
            if entry.partition is not None:
                found[key] = entry.partition
                continue
            assert entry.ready is not None
            loading[key] = (entry, entry.ready)
            # share_partition forgets a loading that failed, so that the next fetch tries again
            asyncio.ensure_future(self.share_partition(key)).add_done_callback(_retrieved)
        if loading and not found:
            first: asyncio.Future[SharePartitionKey] = asyncio.get_running_loop().create_future()

            def done(key: SharePartitionKey) -> Callable[[asyncio.Future], None]:
                def call(_: asyncio.Future) -> None:
                    if not first.done():
                        first.set_result(key)
                return call
            for key, (_, ready) in loading.items():
                ready.add_done_callback(done(key))
            only = await first
            entry, ready = loading.pop(only)
            found[only] = _failure(ready) or entry.partition or ShareFetchResult(loading=True, omitted=True)
        for key, (_, ready) in loading.items():  # still loading, or loaded after the first (a later pass serves it)
            found[key] = _failure(ready) or ShareFetchResult(loading=True, omitted=True)
        return {key: found[key] for key in keys}

    def _acquire(self, sp: SharePartition, member_id: str, offset: int, fetched: FetchedPartition, max_records: int,
                 record_limit: bool, batch_size: int = 0) -> ShareFetchResult:
        """Acquire what ``fetched`` (the log read from ``offset``) holds for the member."""
        settings = self._settings(sp.group_id)
        if fetched.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            partition = self._rm.get_partition(sp.topic, sp.partition)
            if partition is not None and offset < partition.log.log_start_offset:
                sp.move_start(partition.log.log_start_offset)
            return ShareFetchResult()
        if fetched.error_code != ErrorCode.NONE:
            return ShareFetchResult(fetched.error_code)
        read = fetched.read
        data = read_bytes(read.records) if read is not None else b""
        if read is None or not data:
            return ShareFetchResult()
        # read_committed: per producer, the first offsets of its aborted transactions in this read, in order;
        # a transaction runs from its first offset to the producer's next control batch (the ABORT marker)
        aborted: dict[int, list[int]] = {}
        if settings.read_committed:
            for a in sorted(read.aborted_transactions or [], key=lambda a: a.first_offset):
                aborted.setdefault(a.producer_id, []).append(a.first_offset)
        ranges: list[tuple[int, int]] = []
        spans: list[tuple[int, int, int, int]] = []  # first, last, byte start, byte end
        skip: set[int] = set()
        for pos, header in iter_batch_headers(data):
            end = pos + header.total_size
            if end > len(data):
                break
            first, last = header.base_offset, header.last_offset
            if last < offset:
                continue
            ranges.append((first, last))
            spans.append((first, last, pos, end))
            starts = aborted.get(header.producer_id)
            if header.attributes & CONTROL_FLAG_MASK:  # a marker is acquired like a record (the client acks a GAP)
                if starts and starts[0] <= first:
                    starts.pop(0)  # this producer's aborted transaction ends here
            elif header.attributes & TRANSACTIONAL_FLAG_MASK and starts and starts[0] <= first:
                skip.update(range(first, last + 1))
        # aborted records are archived in memory only: written with the next acknowledgement, as Kafka 4.4 does
        acquired = sp.acquire(member_id, ranges, max_records, record_limit, batch_size=batch_size,
                              archive=(lambda off: off in skip) if skip else None)
        if not acquired:
            return ShareFetchResult()
        lo, hi = acquired[0].first_offset, acquired[-1].last_offset
        start = next(p for f, last, p, _ in spans if last >= lo)
        stop = max(e for f, _, _, e in spans if f <= hi)
        return ShareFetchResult(records=data[start:stop], acquired=acquired)

    # -- acknowledge -------------------------------------------------------------------------------------
    async def acknowledge(self, group_id: str, member_id: str,
                          acks: dict[SharePartitionKey, list[tuple[int, int, list[int]]]],
                          ) -> dict[SharePartitionKey, tuple[int, str | None]]:
        """Apply each partition's acknowledgement batches; the error code per partition once persisted. A
        share-partition not loaded here (never fetched, or no longer led here) is UNKNOWN_TOPIC_OR_PARTITION, as
        Kafka 4.4's SharePartitionManager answers a partition missing from its cache, with the error's message; a
        refused batch answers its SharePartition message, a RENEW of records the member holds while the group's
        share.renew.acknowledge.enable is false refuses the partition's acknowledgements (INVALID_RECORD_STATE). A
        partition's batches apply all or none. (code, message) per partition."""
        out: dict[SharePartitionKey, tuple[int, str | None]] = {}
        touched = []
        for key, batches in acks.items():
            entry = self._entries.get(key)
            epoch = self._leader_epoch(key)
            if entry is not None and entry.partition is not None and entry.leader_epoch != epoch:
                self._drop(key, "leadership changed")
                entry = None
            if entry is None or entry.partition is None:  # not loaded here (Kafka's partition cache)
                out[key] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE)
                continue
            sp = entry.partition
            out[key] = (ErrorCode.NONE, None)
            if not batches:
                continue
            try:  # all or none, as Kafka's SharePartition
                sp.acknowledge_batches(member_id, batches, self._settings(group_id).renew_enabled)
            except InvalidRecordStateError as exc:
                log.info("share group %s member %s %s-%d: acknowledgement refused: %s", group_id, member_id,
                         sp.topic, sp.partition, exc)
                out[key] = (ErrorCode.INVALID_REQUEST if exc.invalid_request else ErrorCode.INVALID_RECORD_STATE,
                            str(exc))
                continue  # nothing changed, nothing written (a start offset not yet persisted waits too)
            touched.append(key)
        for key in touched:
            try:
                await self.persist(key)
            except Exception as exc:
                log.warning("share group %s: writing the state of %s-%d failed: %s", group_id, key[1], key[2], exc)
                if out[key][0] == ErrorCode.NONE:
                    out[key] = (getattr(exc, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR), None)
        return out

    async def release_member(self, group_id: str, member_id: str, keys: list[SharePartitionKey] | None = None) -> None:
        """Release what ``member_id`` holds (its share session closed, or it left or expired) in every share-partition
        of ``keys`` (the session's, in its order; None: all of the group's) at once, then write their states. As Kafka
        4.4's releaseSession, which starts every partition's release before any write completes: a fetch of another
        member waiting on them gets the records of all of them (seen against a 4.4 node: both partitions of a closed
        session in one answer; releasing and writing one partition after the other answered one, then the other)."""
        if keys is None:
            keys = [key for key in self._entries if key[0] == group_id]
        released = []
        for key in keys:
            entry = self._entries.get(key)
            if entry is not None and entry.partition is not None and entry.partition.release_member(member_id):
                released.append(key)
        if released:
            await asyncio.gather(*(self._persist_logged(key) for key in released))

    async def revalidate(self, keys: list[SharePartitionKey]) -> None:
        """A new share session names ``keys``: a cached share-partition holding no acquired records is dropped if
        its persisted state moved to another state epoch meanwhile (AlterShareGroupOffsets on the group's
        coordinator, another broker in a cluster, while this leader kept it), so the next fetch loads the reset
        state instead of serving the old start offset."""
        for key in keys:
            entry = self._entries.get(key)
            sp = entry.partition if entry is not None else None
            if sp is None or sp.acquired_count():
                continue
            try:
                persisted = await self.persister.read_summary(key)
            except Exception as exc:  # the fetch reports the coordinator's trouble if it lasts
                log.info("share group %s: state epoch of %s-%d not checked: %s", key[0], key[1], key[2], exc)
                continue
            current = self._entries.get(key)
            if persisted is not None and current is entry and persisted.state_epoch != sp.state_epoch:
                self._drop(key, f"state epoch {sp.state_epoch} -> {persisted.state_epoch}: offsets were reset")

    def drop_topic(self, topic_id: uuid.UUID) -> None:
        """The topic was deleted: its share-partitions go (their state is deleted by its share coordinator)."""
        for key in [k for k in self._entries if k[1] == topic_id]:
            self._drop(key, "topic deleted")

    # -- admin -------------------------------------------------------------------------------------------
    def loaded(self, group_id: str) -> dict[SharePartitionKey, SharePartition]:
        return {k: e.partition for k, e in self._entries.items() if k[0] == group_id and e.partition is not None}

    async def reset(self, key: SharePartitionKey, offset: int, state_epoch: int) -> None:
        """AlterShareGroupOffsets: state starting at ``offset``, at the group's epoch ``state_epoch`` (Kafka 4.4
        initializes it at the group epoch, the same epoch again when the group did not move in between)."""
        entry = self._entries.pop(key, None)
        if entry is not None and entry.partition is not None:
            entry.partition.close()
        await self.persister.initialize_state(key, state_epoch, offset)

    async def delete(self, key: SharePartitionKey) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None and entry.partition is not None:
            entry.partition.close()
        await self.persister.delete_state(key)

    def close(self) -> None:
        for entry in self._entries.values():
            if entry.partition is not None:
                entry.partition.close()
        self._entries.clear()


def _rotated(keys: list[SharePartitionKey], session_epoch: int) -> list[SharePartitionKey]:
    """Kafka's PartitionRotateStrategy (round robin): the session's partitions starting at ``session_epoch``
    modulo their number, from epoch 1 on."""
    if len(keys) < 2 or session_epoch < 1:
        return keys
    at = session_epoch % len(keys)
    return keys[at:] + keys[:at]
def _sizes(results: dict[SharePartitionKey, ShareFetchResult]) -> tuple[int, int]:
    """The bytes and the records ``results`` acquired."""
    acquired = [r for r in results.values() if r.acquired]
    return (sum(len(r.records) for r in acquired),
            sum(a.last_offset - a.first_offset + 1 for r in acquired for a in r.acquired or ()))


def _merged(held: dict[SharePartitionKey, ShareFetchResult],
            results: dict[SharePartitionKey, ShareFetchResult]) -> dict[SharePartitionKey, ShareFetchResult]:
    """``results`` of a fetch's later pass with what its earlier passes acquired (``held``) in front: records acquired
    stay the member's and must be answered, though the pass that acquired them did not reach min_bytes."""
    if not held:
        return results
    out = dict(results)
    for key, before in held.items():
        now = out.get(key)
        if now is None or not now.acquired:
            out[key] = before
        else:
            out[key] = ShareFetchResult(records=before.records + now.records,
                                        acquired=[*(before.acquired or ()), *now.acquired])
    return out


def _answered(results: dict[SharePartitionKey, ShareFetchResult]) -> dict[SharePartitionKey, ShareFetchResult]:
    """The results as answered: share-partitions without state are left out when others returned records."""
    if any(r.acquired for r in results.values()):
        for r in results.values():
            if r.uninitialized:
                r.omitted = True
    return results


def _failure(ready: asyncio.Future) -> BaseException | None:
    """Why a share-partition's loading failed, None while it runs or once it succeeded."""
    if not ready.done():
        return None
    return _PartitionError(ErrorCode.UNKNOWN_SERVER_ERROR) if ready.cancelled() else ready.exception()


def _retrieved(task: asyncio.Future) -> None:
    """A share-partition's loading left to run in the background: its error is the next fetch's (not logged here)."""
    if not task.cancelled():
        task.exception()


class _PartitionError(Exception):
    def __init__(self, code: int, *, uninitialized: bool = False) -> None:
        super().__init__(f"error {code}")
        self.code = code
        self.uninitialized = uninitialized


_Loaded = SharePartition | ShareFetchResult | BaseException  # a share-partition, its loading, or why it failed
