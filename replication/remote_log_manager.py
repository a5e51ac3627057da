"""The RemoteLogManager: copies a tiered partition's closed segments to remote storage, expires them, and reads
them back (Kafka's RemoteLogManager, KIP-405).

Every ``remote.log.manager.task.interval.ms`` one task goes over the hosted partitions of tiered topics:

* **every replica** replays ``__remote_log_metadata`` and tells its log what is remote: the highest copied
  offset (local retention deletes only copied segments, on followers too) and, once, where the remote data
  starts (the log start offset, below the local segments);
* **the leader** copies, once it has replayed the metadata partition up to the high watermark of that partition's
  leader (asked once per leader epoch, so a predecessor's finished copy is never copied again): first it finishes what a previous leader left half done (segments in
  COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED are deleted from the store, so no orphan is counted), then each
  closed segment past the highest copied offset whose end is below the last stable offset (and past
  remote.copy.lag.ms / .bytes), one at a time: record COPY_SEGMENT_STARTED, upload the segment with its indexes,
  producer snapshot and leader-epoch checkpoint, record COPY_SEGMENT_FINISHED. Then it expires: remote
  segments below the log start offset (DeleteRecords), past retention.ms, or beyond retention.bytes of the
  whole log (remote plus not yet copied local data), oldest first, each DELETE_SEGMENT_STARTED, objects
  deleted, DELETE_SEGMENT_FINISHED; the log start offset follows. A topic whose remote storage was disabled
  with remote.log.delete.on.disable=true loses all its remote segments the same way.

An unreachable object store stops the round (the segment is retried next round; nothing local is deleted
before it is copied): ``copy_failures`` counts it and one warning per outage names the error. Uploads and
remote reads run in threads; the task runs on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from replication.remote_log_metadata import RemoteLogMetadataError, TopicBasedRemoteLogMetadataManager
from replication.rlm_quota import RLMQuotaManager, ThrottleTimeSensor
from storage.remote import lineage
from storage.remote.metadata import (
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionMetadata,
    encode_segment,
    encode_update,
)
from storage.remote.object_store import ObjectStoreError
from storage.remote.reader import RemoteLogReader
from storage.remote.storage_manager import LogSegmentData, RemoteStorageManager

log = logging.getLogger("replication.remote_log_manager")

__all__ = ["RemoteLogManager"]

_S = RemoteLogSegmentState


class RemoteLogManager:
    """Copy, expiration and remote reads of tiered partitions (see the module docstring)."""

    def __init__(self, replica_manager: Any, node_id: int, rsm: RemoteStorageManager, reader: RemoteLogReader,
                 metadata: TopicBasedRemoteLogMetadataManager, *, task_interval_ms: int,
                 time_ms: Callable[[], int], copy_quota: RLMQuotaManager | None = None,
                 ensure_metadata_topic: Callable[[], Awaitable[bool]] | None = None,
                 topic_exists: Callable[[uuid.UUID], bool] | None = None) -> None:
        self._rm = replica_manager
        self.node_id = node_id
        self.rsm = rsm
        self.reader = reader
        self.metadata = metadata
        self.task_interval_ms = task_interval_ms
        self.time_ms = time_ms
        # remote.log.manager.copy.max.bytes.per.second over its windows: a segment's copy waits while the rate of
        # the segments copied before is above it (Kafka's RLMCopyTask); None: unbounded. The wait does not hold
        # the round up (expiration, followers, other partitions): the partition's copying goes on in a round run
        # when the quota allows it again (``_next_round_s``: at most a second away, Kafka's quotaTimeout).
        self.copy_quota = copy_quota
        self._next_round_s: float | None = None
        # remote.log.manager.fetch.max.bytes.per.second (Kafka's RLMQuotaManager: is_quota_exceeded, record);
        # None: unbounded. While exceeded, a fetch of remote data answers with no records (ReplicaManager).
        self.fetch_quota: RLMQuotaManager | None = None
        # Kafka's remote-copy-throttle-time and remote-fetch-throttle-time (avg, max) of RemoteLogManager.
        self.copy_throttle_time = ThrottleTimeSensor()
        self.fetch_throttle_time = ThrottleTimeSensor()
        # Creates __remote_log_metadata when missing (False: not possible yet); None when it is made elsewhere.
        self.ensure_metadata_topic = ensure_metadata_topic
        # Whether a topic id is still in the metadata image (None: never delete remote data of deleted topics).
        self.topic_exists = topic_exists
        self._task: asyncio.Task | None = None
        self._wake = asyncio.Event()
        self._started_from_remote: set[int] = set()  # id() of logs whose start offset came from remote storage
        # Counters (metrics): bytes and segments copied, fetched, deleted; failed copies; store outage state.
        self.copy_bytes = 0
        self.copy_segments = 0
        self.copy_failures = 0
        self.fetch_bytes = 0
        self.fetch_requests = 0
        self.fetch_failures = 0
        self.deleted_segments = 0
        self.aux_state_builds = 0  # BuildRemoteLogAuxStateRequestsPerSec: followers that started below remote data
        self.aux_state_failures = 0  # BuildRemoteLogAuxStateErrorsPerSec
        self.store_unavailable = False

    # -- lifecycle ---------------------------------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="remote-log-manager")

    def wake(self) -> None:
        """Run a round now (tests, a config change)."""
        self._wake.set()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the task must outlive one bad round
                log.exception("remote log manager round failed")
            self._wake.clear()
            interval_s = self.task_interval_ms / 1000
            if self._next_round_s is not None:
                interval_s, self._next_round_s = min(interval_s, self._next_round_s), None
            try:
                async with asyncio.timeout(interval_s):
                    await self._wake.wait()
            except TimeoutError:
                pass

    # -- one round ---------------------------------------------------------------------------------------------
    async def run_once(self) -> None:
        if self.ensure_metadata_topic is not None and not await self.ensure_metadata_topic():
            return
        self.metadata.poll()
        for p in list(self._rm.partitions.values()):
            log_ = p.log
            if log_ is None or p.topic.startswith("__") or log_.is_offline:
                continue
            meta = self.metadata.partition_metadata(p.topic_id, p.partition)
            if not log_.remote_log_enabled:
                if meta.segments and p.is_leader and log_.config.remote_log_delete_on_disable \
                        and await self.metadata.ensure_ready(p.topic_id, p.partition, p.leader_epoch):
                    await self._delete_all(p, meta)
                continue
            self.sync_log(log_, meta, self.metadata.is_caught_up(p.topic_id, p.partition))
            if not p.is_leader or not self.metadata.is_ready(p.topic_id, p.partition) \
                    or not await self.metadata.ensure_ready(p.topic_id, p.partition, p.leader_epoch):
                continue
            try:
                await self._clean_unfinished(p, meta)
                if not log_.config.remote_log_copy_disable:
                    await self._copy(p, meta)
                await self._expire(p, meta)
            except (ObjectStoreError, OSError) as exc:
                self.copy_failures += 1
                if not self.store_unavailable:
                    log.warning("remote storage unavailable while working on %s-%d: %s; copying waits and local "
                                "data stays until it is back", p.topic, p.partition, exc)
                self.store_unavailable = True
                return
            except RemoteLogMetadataError as exc:
                log.info("%s-%d: remote log metadata not written (%s); retrying next round", p.topic, p.partition, exc)
                continue
        await self._delete_deleted_topics()
        if self.store_unavailable:
            log.info("remote storage is reachable again")
        self.store_unavailable = False

    async def _delete_deleted_topics(self) -> None:
        """A deleted topic's remote segments go too, deleted by the broker leading the metadata partition that
        records them (exactly one broker does it, and it goes on after a restart or failover)."""
        if self.topic_exists is None:
            return
        for (topic_id, partition), meta in list(self.metadata.partitions.items()):
            if not meta.segments or self.topic_exists(topic_id) or not self.metadata.leads(topic_id, partition):
                continue
            if not await self._delete_every_segment(meta, f"topic {topic_id} deleted"):
                return

    @staticmethod
    def _lineage(log_: Any) -> tuple[list[tuple[int, int]], int]:
        """The log's leader-epoch cache (its lineage: what remote segments must match) and its log end offset."""
        with log_.lock:
            return log_.leader_epoch_cache.entries(), log_.log_end_offset

    def valid_segments(self, log_: Any, meta: RemotePartitionMetadata) -> list[RemoteLogSegmentMetadata]:
        """The copied segments on the log's leader-epoch lineage (Kafka's isRemoteSegmentWithinLeaderEpochs): those
        counted; a diverged lineage's (an unclean election's) are not."""
        cache, log_end = self._lineage(log_)
        epochs = lineage.filtered_epochs(cache)
        return [m for m in meta.copied() if lineage.is_within_leader_epochs(m, log_end, epochs)]

    def highest_remote_offset(self, log_: Any, meta: RemotePartitionMetadata) -> int:
        """The highest copied offset on the log's lineage (Kafka's findHighestRemoteOffset)."""
        cache, log_end = self._lineage(log_)
        return lineage.highest_remote_offset(meta.copied(), cache, log_end)[0]

    def sync_log(self, log_: Any, meta: RemotePartitionMetadata, replayed: bool = True) -> None:
        """Tell the log what is remote on its lineage: its highest copied offset, and (once per log) the leader
        epochs its cache lost below its earliest (a log written before they were kept across restarts) and where
        remote data starts, once this broker has ``replayed`` every record its replica of the metadata partition
        holds (a restarted broker's first rounds know only part of it)."""
        cache, log_end = self._lineage(log_)
        copied = meta.copied()
        floor = getattr(log_, "checkpointed_log_start_offset", 0)
        first = replayed and id(log_) not in self._started_from_remote
        if first:
            early = lineage.early_epochs(copied, cache, floor)
            if early and log_.restore_early_epochs(early):
                log.info("%s: leader epochs %s below its earliest restored from the remote log metadata", log_.name,
                         early)
                cache, log_end = self._lineage(log_)
        log_.highest_offset_in_remote_storage = lineage.highest_remote_offset(copied, cache, log_end)[0]
        start = lineage.log_start_offset(copied, cache)
        if start is not None and first:
            self._started_from_remote.add(id(log_))
            log_.set_log_start_offset_from_remote(max(start, floor))

    async def _update(self, m: RemoteLogSegmentMetadata, state: RemoteLogSegmentState) -> None:
        await self.metadata.write(m.topic_id, m.partition, encode_update(m, state, self.node_id, self.time_ms()))

    async def _clean_unfinished(self, p: Any, meta: RemotePartitionMetadata) -> None:
        """Copies a dead leader left in COPY_SEGMENT_STARTED (or deletions in DELETE_SEGMENT_STARTED): removed."""
        for m in meta.unfinished():
            log.info("%s-%d: deleting remote segment %s [%d, %d] left in %s", p.topic, p.partition, m.segment_id,
                     m.start_offset, m.end_offset, m.state.name)
            if m.state is _S.COPY_SEGMENT_STARTED:
                await self._update(m, _S.DELETE_SEGMENT_STARTED)
            await asyncio.to_thread(self.rsm.delete_log_segment_data, m)
            await self._update(m, _S.DELETE_SEGMENT_FINISHED)
            self.reader.cache.invalidate(m.segment_id)

    def _candidates(self, log_: Any, from_offset: int) -> list[tuple[Any, int]]:
        """Closed segments holding offsets >= ``from_offset`` that end below the last stable offset, with their
        next segment's base offset, stopping at the first one within remote.copy.lag.ms / .bytes (KIP-1241)."""
        with log_.lock:
            segments = log_.segments.snapshot()
            lso = log_.last_stable_offset
            total = log_.size_in_bytes
        lag_ms, lag_bytes = log_.config.remote_copy_lag_ms_effective, log_.config.remote_copy_lag_bytes_effective
        immediate = lag_ms == 0 or lag_bytes == 0
        now = self.time_ms()
        out = []
        seen = 0
        for segment, nxt in zip(segments, segments[1:], strict=False):
            seen += segment.size
            if nxt.base_offset <= from_offset:
                continue
            if nxt.base_offset > lso:
                break
            if not immediate:
                try:
                    age = now - segment.largest_timestamp()
                except OSError:
                    age = lag_ms
                old_enough = lag_ms > 0 and (age >= lag_ms or age < 0)
                far_enough = lag_bytes > 0 and total - seen >= lag_bytes
                if not (old_enough or far_enough):
                    break
            out.append((segment, nxt.base_offset))
        return out

    async def _copy(self, p: Any, meta: RemotePartitionMetadata) -> None:
        log_ = p.log
        highest = self.highest_remote_offset(log_, meta)
        from_offset = highest + 1 if highest >= 0 else log_.log_start_offset
        for segment, next_base in self._candidates(log_, from_offset):
            if p.log is not log_ or not p.is_leader or self._copy_throttled(p):
                return
            if self.copy_quota is not None:
                self.copy_quota.record(segment.size)
            end_offset = next_base - 1
            with log_.lock:
                epochs = [(e, o) for e, o in log_.leader_epoch_cache.entries() if o <= end_offset]
                snapshot = log_.producer_state.snapshots.get(next_base)
            in_segment = [(e, o) for e, o in epochs if o > segment.base_offset]
            first_epoch = [(e, segment.base_offset) for e, o in epochs if o <= segment.base_offset][-1:]
            m = RemoteLogSegmentMetadata(
                topic_id=p.topic_id, topic=p.topic, partition=p.partition, segment_id=uuid.uuid4(),
                start_offset=segment.base_offset, end_offset=end_offset,
                max_timestamp_ms=segment.max_timestamp_so_far, broker_id=self.node_id,
                event_timestamp_ms=self.time_ms(), segment_size_in_bytes=segment.size,
                segment_leader_epochs=tuple(first_epoch + in_segment),
                txn_index_empty=not os.path.exists(segment.txn_index.path)
                or os.path.getsize(segment.txn_index.path) == 0)
            checkpoint = f"0\n{len(epochs)}\n" + "".join(f"{e} {o}\n" for e, o in epochs)
            data = LogSegmentData(segment.log.path, segment.offset_index.path, segment.time_index.path,
                                  segment.txn_index.path, snapshot, checkpoint.encode())
            await self.metadata.write(m.topic_id, m.partition, encode_segment(m))
            log.info("%s-%d: copying segment [%d, %d] (%d bytes) to remote storage as %s", p.topic, p.partition,
                     m.start_offset, m.end_offset, m.segment_size_in_bytes, m.segment_id)
            try:
                await asyncio.to_thread(self.rsm.copy_log_segment_data, m, data)
            except FileNotFoundError:
                log.info("%s-%d: segment %d was deleted locally before it was copied", p.topic, p.partition,
                         segment.base_offset)
                return  # its COPY_SEGMENT_STARTED record is cleaned up next round
            if self.topic_exists is not None and not self.topic_exists(m.topic_id):
                # Deleted while it was uploaded: the partition's deletion may have missed these objects.
                await self._delete(m, "its topic was deleted while it was copied")
                return
            await self._update(m, _S.COPY_SEGMENT_FINISHED)
            self.copy_bytes += m.segment_size_in_bytes
            self.copy_segments += 1
            log_.highest_offset_in_remote_storage = max(log_.highest_offset_in_remote_storage, end_offset)
            log.info("%s-%d: copied segment [%d, %d] to remote storage", p.topic, p.partition, m.start_offset,
                     m.end_offset)

    def _copy_throttled(self, p: Any) -> bool:
        """Whether the copy quota is exceeded: its throttle time is recorded and the next round comes when it
        has passed, at most a second away (Kafka's copier checks the quota again every quotaTimeout)."""
        quota = self.copy_quota
        throttle_ms = quota.throttle_time_ms() if quota is not None else 0
        if throttle_ms <= 0 or quota is None:
            return False
        quota.throttled += 1
        self.copy_throttle_time.record(throttle_ms)
        wait_s = min(throttle_ms, 1000) / 1000
        self._next_round_s = wait_s if self._next_round_s is None else min(self._next_round_s, wait_s)
        log.debug("%s-%d: remote copy quota exceeded; copying goes on in %d ms", p.topic, p.partition, throttle_ms)
        return True

    async def _delete(self, m: RemoteLogSegmentMetadata, reason: str) -> None:
        await self._update(m, _S.DELETE_SEGMENT_STARTED)
        await asyncio.to_thread(self.rsm.delete_log_segment_data, m)
        await self._update(m, _S.DELETE_SEGMENT_FINISHED)
        self.reader.cache.invalidate(m.segment_id)
        self.deleted_segments += 1
        log.info("%s-%d: deleted remote segment [%d, %d] (%s)", m.topic, m.partition, m.start_offset, m.end_offset,
                 reason)

    async def _delete_every_segment(self, meta: RemotePartitionMetadata, reason: str) -> bool:
        """Delete all of a partition's remote segments (half-done ones too) in Kafka's order
        (RemoteLogManager.deleteRemoteLogPartition): DELETE_SEGMENT_STARTED for every segment, then their objects,
        then DELETE_SEGMENT_FINISHED for every one. Kafka 4.4 writes no RemotePartitionDeleteMetadataRecord, and
        neither does this. A round cut short (a crash, the store or the metadata topic failing: False) leaves
        segments in DELETE_SEGMENT_STARTED, which the next round (after a restart too) finishes."""
        segments = sorted(meta.segments.values(), key=lambda m: (m.start_offset, m.end_offset))
        try:
            for m in segments:
                if m.state is not _S.DELETE_SEGMENT_STARTED:
                    await self._update(m, _S.DELETE_SEGMENT_STARTED)
            log.info("deleting the %d remote segments of %s partition %d (%s)", len(segments), meta.topic_id,
                     meta.partition, reason)
            for m in segments:
                await asyncio.to_thread(self.rsm.delete_log_segment_data, m)
                self.reader.cache.invalidate(m.segment_id)
            for m in segments:
                await self._update(m, _S.DELETE_SEGMENT_FINISHED)
                self.deleted_segments += 1
            log.info("deleted the %d remote segments of %s partition %d (%s)", len(segments), meta.topic_id,
                     meta.partition, reason)
        except (ObjectStoreError, OSError, RemoteLogMetadataError) as exc:
            log.warning("deleting the remote segments of %s partition %d (%s): %s; retrying", meta.topic_id,
                        meta.partition, reason, exc)
            return False
        return True

    async def _expire(self, p: Any, meta: RemotePartitionMetadata) -> None:
        """Kafka's RLMExpirationTask: oldest first, a segment wholly below the log start offset (all its epochs at
        or before the lineage's first) goes; a segment on the lineage goes past retention.ms or beyond
        retention.bytes (counting only the lineage's remote segments and the local data not yet copied), and the
        first one kept stops the walk; a segment off the lineage is skipped. Then segments whose epochs all
        precede the lineage's earliest (a diverged lineage once retention has moved past it) are deleted."""
        log_ = p.log
        config = log_.config
        copied = meta.copied()
        if not copied:
            return
        now = self.time_ms()
        cache, log_end = self._lineage(log_)
        epochs = lineage.filtered_epochs(cache)
        valid = [m for m in copied if lineage.is_within_leader_epochs(m, log_end, epochs)]
        highest = lineage.highest_remote_offset(copied, cache, log_end)[0]
        with log_.lock:
            local_only = sum(s.size for s in log_.segments.snapshot() if s.base_offset > highest)
            log_start = log_.log_start_offset
        remaining = sum(m.segment_size_in_bytes for m in valid) + local_only
        first_epoch = epochs[0][0] if epochs else None
        for m in copied:
            on_lineage = m in valid
            if first_epoch is not None and m.end_offset < log_start \
                    and all(e <= first_epoch for e, _ in m.segment_leader_epochs):
                reason = f"below the log start offset {log_start}"
            elif not on_lineage:
                continue
            elif config.retention_ms >= 0 and now - m.max_timestamp_ms > config.retention_ms:
                reason = f"retention time {config.retention_ms}ms breach"
            elif 0 <= config.retention_bytes <= remaining - m.segment_size_in_bytes:
                reason = f"retention size {config.retention_bytes} breach, log size {remaining}"
            else:
                break
            await self._delete(m, reason)
            if on_lineage:
                remaining -= m.segment_size_in_bytes
            following = lineage.log_start_offset(meta.copied(), cache)
            new_start = following if following is not None else m.end_offset + 1
            log_.maybe_increment_log_start_offset(min(max(new_start, m.end_offset + 1), log_.high_watermark),
                                                  "remote segment deletion")
        cache, _ = self._lineage(log_)
        if not cache or cache[0][1] > log_.log_start_offset:
            return  # the cache does not reach back to the log start (lost early epochs): nothing is unreferenced
        for m in meta.copied():
            if lineage.is_below_earliest_epoch(m, cache):
                await self._delete(m, f"its leader epochs precede the earliest epoch {cache[0][0]} of the partition's "
                                      "leader-epoch lineage")

    async def _delete_all(self, p: Any, meta: RemotePartitionMetadata) -> None:
        """remote.storage.enable=false with remote.log.delete.on.disable=true: every remote segment goes."""
        if not await self._delete_every_segment(meta, "remote storage disabled"):
            return
        log_ = p.log
        log_.highest_offset_in_remote_storage = -1
        log_.maybe_increment_log_start_offset(log_.local_log_start_offset, "remote storage disabled")
        log.info("%s-%d: remote storage disabled; its remote data is deleted", p.topic, p.partition)

    # -- reads -------------------------------------------------------------------------------------------------
    def read(self, p: Any, fetch_offset: int, max_bytes: int, max_offset: int, min_one_message: bool,
             read_committed: bool = False) -> tuple[bytes | memoryview, list | None]:
        """Records at ``fetch_offset`` from remote storage (blocking: call in a thread), b"" when none is there,
        and for ``read_committed`` the aborted transactions they overlap (remote transaction indexes first, then
        the local ones, as Kafka's RemoteLogManager.collectAbortedTransactions)."""
        meta = self.metadata.partition_metadata(p.topic_id, p.partition)
        cache, log_end = self._lineage(p.log)
        copied = meta.copied()
        m = lineage.segment_for_offset(copied, cache, fetch_offset) \
            or lineage.next_segment_after(copied, cache, fetch_offset)
        if m is None:
            return b"", [] if read_committed else None
        self.fetch_requests += 1
        # Never past the end of the offset's epoch on the lineage: a segment copied by a leader whose log diverged
        # later (an unclean election) holds other records there.
        from_offset = max(fetch_offset, m.start_offset)
        max_offset = min(max_offset, lineage.epoch_end(cache, from_offset, log_end))
        try:
            read = self.reader.read(m, from_offset, max_bytes, max_offset, min_one_message)
            aborted = None
            if read_committed:
                upper = read.next_offset if read.records else max_offset
                found = self.reader.aborted_transactions(meta.copied(), fetch_offset, upper)
                aborted = list(found.aborted_transactions)
                if not found.is_complete:
                    aborted += p.log.collect_aborted_transactions(fetch_offset, upper)
        except Exception:
            self.fetch_failures += 1
            raise
        self.fetch_bytes += len(read.records)
        return read.records, aborted

    async def build_remote_log_aux_state(self, p: Any, local_start: int) -> None:
        """A follower starting at the leader's local log start offset (KIP-405) takes the leader epochs and the
        producer state of the data below from the remote segment that ends just before it."""
        self.aux_state_builds += 1
        try:
            await self._build_remote_log_aux_state(p, local_start)
        except Exception:
            self.aux_state_failures += 1
            raise

    async def _build_remote_log_aux_state(self, p: Any, local_start: int) -> None:
        self.metadata.poll()
        meta = self.metadata.partition_metadata(p.topic_id, p.partition)
        # The newest lineage's: after an unclean election a predecessor's diverged copy may hold the offset too.
        holding = [m for m in meta.copied() if m.start_offset <= local_start - 1 <= m.end_offset]
        m = max(holding, key=lambda m: (m.highest_epoch, m.start_offset), default=None)
        if m is None:
            log.info("%s-%d: no remote segment ends at %d yet; the replica starts without its aux state", p.topic,
                     p.partition, local_start - 1)
            return

        def fetch() -> tuple[bytes, bytes | None]:
            checkpoint = self.rsm.fetch_index(m, "leader_epoch_checkpoint")
            try:
                snapshot: bytes | None = self.rsm.fetch_index(m, "snapshot")
            except ObjectStoreError:
                snapshot = None
            return checkpoint, snapshot

        checkpoint, snapshot = await asyncio.to_thread(fetch)
        lines = checkpoint.decode().split("\n")
        epochs = [(int(e), int(o)) for e, o in (line.split() for line in lines[2:] if line.strip())]
        p.log.build_remote_log_aux_state(epochs, snapshot if m.end_offset == local_start - 1 else None, local_start)
        log.info("%s-%d: leader epochs%s restored from remote segment [%d, %d]", p.topic, p.partition,
                 " and producer state" if snapshot is not None else "", m.start_offset, m.end_offset)

    def find_offset_by_timestamp(self, p: Any, timestamp: int) -> Any:
        """ListOffsets of a timestamp >= 0 in the remote segments (blocking: call in a thread): the first record
        at or after the log start offset with a timestamp >= ``timestamp``, None when no remote segment has one
        (then the local segments are searched, as Kafka's RemoteLogManager.findOffsetByTimestamp)."""
        start = p.log.log_start_offset
        for m in self.valid_segments(p.log, self.metadata.partition_metadata(p.topic_id, p.partition)):
            if m.end_offset < start or m.max_timestamp_ms < timestamp:
                continue
            found = self.reader.find_offset_by_timestamp(m, timestamp, start)
            if found is not None:
                return found
        return None

    def remote_size(self, topic_id: uuid.UUID, partition: int, log_: Any = None) -> int:
        """Bytes of the partition's copied segments; with its log, only those on its leader-epoch lineage."""
        meta = self.metadata.partition_metadata(topic_id, partition)
        if log_ is None:
            return meta.size_in_bytes
        return sum(m.segment_size_in_bytes for m in self.valid_segments(log_, meta))
